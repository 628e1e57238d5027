"""The Searcher trims (search/trimmed_index.py): every request a TrimmedIndex sends carries the
searcher's trimming, which no parameter of the caller's replaces."""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import pytest

from searchcrawl.access.decision import Principal, Principals, solr_trimming
from searchcrawl.index.solr_client import DOCUMENTS, PASSAGES
from searchcrawl.search.trimmed_index import TrimmedIndex

ALICE = Principals.of("alice", [Principal("group:finance", "test")])


class Recording:
    """A SolrIndex that records what it is asked."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    def search(self, query: str, **params: Any) -> SimpleNamespace:
        self.asked.append({"q": query, **params})
        return SimpleNamespace(hits=0, docs=[])


def test_every_request_carries_the_trimming_first_and_whole() -> None:
    solr = Recording()
    index = TrimmedIndex(solr, ALICE)  # type: ignore[arg-type]
    index.search("harbour", {"fq": "source:docs", "rows": 5})
    index.search("*:*", {})
    filters, params = solr_trimming(ALICE)
    (first, second) = solr.asked
    # the trimming, then documents only (semantic search's passages are documents of the core too)
    assert first["fq"] == [*filters, DOCUMENTS, "source:docs"] and first["rows"] == 5 and params.items() <= first.items()
    assert second["fq"] == [*filters, DOCUMENTS] and params.items() <= second.items()


def test_a_knn_query_of_passages_is_the_main_query_and_trimmed_first() -> None:
    """Issue 76: the trimming pre-filters a kNN query only as the request's main query."""
    solr = Recording()
    TrimmedIndex(solr, ALICE).nearest("m0123456789_v3", [0.5, -0.25, 1.0], 30, {"fq": ["x:y"], "rows": 30})  # type: ignore[arg-type]
    filters, params = solr_trimming(ALICE)
    asked = solr.asked[0]
    assert asked["q"] == "{!knn f=m0123456789_v3 topK=30}[0.5,-0.25,1]" and asked["defType"] == "lucene"
    assert asked["fq"] == [*filters, PASSAGES, "x:y"] and params.items() <= asked.items()
    with pytest.raises(ValueError):  # a field name is never spliced into the query unchecked
        TrimmedIndex(solr, ALICE).nearest("content} OR {!", [0.5], 1, {})  # type: ignore[arg-type]


def test_no_parameter_of_the_callers_replaces_the_trimming() -> None:
    """A caller's ``access_tokens`` (another searcher's principals) or ``expandMacros`` (macros
    on: ``${...}`` in a principal's name read as parameters) never reaches Solr."""
    solr = Recording()
    hostile = {"access_tokens": "group:board", "expandMacros": "true", "access_denied": "*:*"}
    TrimmedIndex(solr, ALICE).search("harbour", hostile, {"access_separator": ","})  # type: ignore[arg-type]
    _filters, params = solr_trimming(ALICE)
    asked = solr.asked[0]
    assert {name: asked[name] for name in params} == params


def test_a_refused_boost_is_asked_again_without_it_and_still_trimmed() -> None:
    from searchcrawl.index.solr_client import IndexingError

    class Refusing(Recording):
        def search(self, query: str, **params: Any) -> SimpleNamespace:
            answer = super().search(query, **params)
            if "boost" in params:
                raise IndexingError("refused", refused=True, status=400)
            return answer

    solr = Refusing()
    TrimmedIndex(solr, Principals.anonymous()).search("harbour", {"rows": 1}, {"boost": ["x"]})  # type: ignore[arg-type]
    filters, _params = solr_trimming(Principals.anonymous())
    assert [("boost" in asked, asked["fq"]) for asked in solr.asked] == [
        (True, [*filters, DOCUMENTS]),
        (False, [*filters, DOCUMENTS]),
    ]


def test_a_trimmed_index_cannot_be_untrimmed() -> None:
    """Review R, 3(d): neither the index nor a copy of it can be loosened (its trimming emptied)
    or report other principals than its trimming's."""
    solr = Recording()
    index = TrimmedIndex(solr, ALICE)  # type: ignore[arg-type]
    for name, value in (("_filters", []), ("_params", {}), ("principals", Principals.anonymous()), ("_index", None)):
        with pytest.raises(AttributeError):
            setattr(index, name, value)
        with pytest.raises(AttributeError):
            setattr(copy.copy(index), name, value)
        with pytest.raises(AttributeError):
            delattr(copy.deepcopy(index), name)
    with pytest.raises(AttributeError):  # no attribute of its own to add either
        index.__dict__  # noqa: B018
    with pytest.raises((AttributeError, TypeError)):  # its trimming held read-only, not a list or dict to empty
        index._filters.clear()  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        index._params["access_tokens"] = "group:board"  # type: ignore[attr-defined]
    index.search("harbour", {})
    filters, params = solr_trimming(ALICE)
    assert solr.asked[0]["fq"] == [*filters, DOCUMENTS] and params.items() <= solr.asked[0].items()
    assert index.principals is ALICE
