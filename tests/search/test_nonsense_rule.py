"""The nonsense rule (issue 100; search/query.py ``coordination_filter``, ``unanswered``;
search/results.py ``answered``): a query whose words query found pages by one word of it
("what do ball pythons eat" finds Python's manual by "python") has no hit when no document
holds the required share of its asked words and the model found nothing about it; without Solr."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from searchcrawl.search.hybrid import SemanticModel, SemanticSearch
from searchcrawl.search.query import (
    ASKED_MM_PARAM,
    ASKED_PARAM,
    COORDINATION,
    Coordination,
    asked_text,
    coordination_filter,
    unanswered,
)
from searchcrawl.search.request import SearchRequest
from searchcrawl.search.results import run_search
from tests.search.test_search_command import Model, doc


def test_the_asked_words_leave_the_scaffolding_the_function_words_and_punctuation_out() -> None:
    assert asked_text("what do ball pythons eat?") == "ball pythons eat"
    assert asked_text("how to get red wine out of a carpet") == "get red wine out carpet"
    assert asked_text("How do I?") == ""
    assert asked_text("numpy broadcasting") == "numpy broadcasting"


def test_the_filter_reads_the_asked_words_and_the_requirement_from_parameters_of_their_own() -> None:
    """The text is never spliced into query syntax: a local parameter names the request's (and
    a text with query syntax has no filter at all: below)."""
    query, params = coordination_filter("What do ball pythons eat?", "2<-1 4<60%") or ("", {})
    assert query == f"{{!edismax cache=false sow=true uf=-* mm=${ASKED_MM_PARAM} v=${ASKED_PARAM}}}"
    assert params == {ASKED_PARAM: "ball pythons eat", ASKED_MM_PARAM: "2<-1 4<60%"}


SPEC = "2<-1 4<60%"  # the words requirement an installation opts in to (settings.py: off by default)


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("what do ball pythons eat", ""),  # no requirement: the rule is off
        ("what do ball pythons eat", "  "),
        ('"ball pythons" eat', SPEC),  # query syntax: asked as typed
        ("title:python eat", SPEC),
        ("ball -python", SPEC),
        ("how do I", SPEC),  # no asked word
        ("harbour", SPEC),  # one word and nothing else: every hit holds it
        ("harbour?", SPEC),
    ],
)
def test_no_filter_where_the_rule_cannot_or_need_not_apply(text: str, spec: str) -> None:
    assert coordination_filter(text, spec) is None


def test_one_asked_word_among_scaffolding_is_required() -> None:
    """ "how do I harbour": a page may be found by "how" alone."""
    assert coordination_filter("how do I harbour", SPEC) is not None


RULE = Coordination(words="2<-1", hybrid="100%")  # not the defaults: told apart


def decide(words_hits: int, verdict: int | None, holds: set[str], coordination: Coordination = RULE) -> tuple[bool, list[str]]:
    """``unanswered`` with a model whose verdict is ``verdict`` and documents holding the asked
    words as required by the requirements of ``holds``; and what was asked, in order."""
    asked: list[str] = []

    def nearest() -> int | None:
        asked.append("model")
        return verdict

    def coordinated(required: str) -> bool:
        asked.append(required)
        return required in holds

    return unanswered(words_hits, nearest, coordinated, coordination), asked


def test_the_model_finding_something_keeps_the_hits_unasked_of_the_words() -> None:
    assert decide(3, 2, set()) == (False, ["model"])


def test_the_model_finding_nothing_asks_the_hybrid_requirement() -> None:
    assert decide(3, 0, set()) == (True, ["model", "100%"])
    assert decide(3, 0, {"100%"}) == (False, ["model", "100%"])
    assert decide(3, 0, {"2<-1"}) == (True, ["model", "100%"])  # the words' requirement is not the one asked


def test_without_a_verdict_semantic_search_off_or_failing_the_words_requirement() -> None:
    assert decide(3, None, set()) == (True, ["model", "2<-1"])
    assert decide(3, None, {"2<-1"}) == (False, ["model", "2<-1"])


def test_an_empty_requirement_keeps_the_hits_and_nothing_found_asks_nothing() -> None:
    assert decide(3, None, set(), Coordination("", "100%")) == (False, ["model"])
    assert decide(3, 0, set(), Coordination("2<-1", "")) == (False, ["model"])
    assert decide(0, 0, set()) == (False, [])  # nothing found: nothing to silence


class Counting:
    """A TrimmedIndex whose words query finds ``words``, whose nonsense rule's count finds
    ``coordinated`` documents and whose kNN query finds ``meaning``; what it is asked, recorded."""

    def __init__(self, words: list[str], coordinated: int, meaning: list[str] = ()) -> None:  # type: ignore[assignment]
        self.words, self.coordinated, self.meaning = words, coordinated, list(meaning)
        self.asked: list[str] = []

    def nearest(self, field: str, vector: list[float], top_k: int, params: dict[str, Any]) -> SimpleNamespace:
        self.asked.append("knn")
        return SimpleNamespace(docs=[{"id": f"{p}#0", "parent_id": p, "score": 0.9} for p in self.meaning])

    def search(self, query: str, params: dict[str, Any], boosts: Any = None) -> SimpleNamespace:
        chosen = next((f for f in params["fq"] if f.startswith("{!terms f=id")), None)
        if any(f.startswith("{!edismax cache=false") for f in params["fq"]):
            self.asked.append(f"count {params[ASKED_PARAM]} {params[ASKED_MM_PARAM]} rows={params['rows']}")
            return SimpleNamespace(hits=self.coordinated, docs=[], highlighting={}, facets={})
        if chosen is None:
            self.asked.append("words")
            return SimpleNamespace(hits=len(self.words), docs=[doc(i) for i in self.words], highlighting={}, facets={})
        self.asked.append("page")
        return SimpleNamespace(docs=[doc(i) for i in chosen.split("}", 1)[1].split()], highlighting={})


NONSENSE = SearchRequest(q="what do ball pythons eat")
OPTED = Coordination(words=SPEC, hybrid=COORDINATION.hybrid)  # the defaults, the words requirement opted in


def semantic(floor: float | None = 0.5) -> SemanticSearch:
    return SemanticSearch(SemanticModel(Model(), floor))  # type: ignore[arg-type]


def test_words_alone_a_query_no_document_speaks_of_enough_has_no_hit() -> None:
    index = Counting(["math", "logging"], coordinated=0)
    page = run_search(index, NONSENSE, spellcheck=False, coordination=OPTED)  # type: ignore[arg-type]
    assert (page.total, page.hits) == (0, [])
    assert index.asked == ["words", f"count ball pythons eat {OPTED.words} rows=0"]


def test_words_alone_a_query_some_document_speaks_of_keeps_its_hits() -> None:
    index = Counting(["math", "logging"], coordinated=1)
    page = run_search(index, NONSENSE, spellcheck=False, coordination=OPTED)  # type: ignore[arg-type]
    assert page.total == 2 and [hit.title for hit in page.hits] == ["Math", "Logging"]


def test_by_default_words_alone_the_hits_stand_unasked() -> None:
    """Without the model's verdict the rule is opt-in (settings.py): a page holding one word of a
    two-word query is often the one wanted."""
    index = Counting(["math"], coordinated=0)
    assert run_search(index, NONSENSE, spellcheck=False).total == 1 and index.asked == ["words"]  # type: ignore[arg-type]


def test_without_a_requirement_the_words_hits_stand_unasked() -> None:
    index = Counting(["math"], coordinated=0)
    page = run_search(index, NONSENSE, spellcheck=False, coordination=Coordination("", ""))  # type: ignore[arg-type]
    assert page.total == 1 and index.asked == ["words"]


def test_hybrid_a_passage_above_the_floor_keeps_the_hits_and_the_count_is_not_asked() -> None:
    """The fused page asked the kNN query already: its verdict is free."""
    index = Counting(["math"], coordinated=0, meaning=["ballpython"])
    page = run_search(index, NONSENSE, spellcheck=False, semantic=semantic())  # type: ignore[arg-type]
    assert page.total == 2 and "count" not in " ".join(index.asked)


def test_hybrid_nothing_above_the_floor_asks_the_hybrid_requirement() -> None:
    index = Counting(["math"], coordinated=0, meaning=[])
    page = run_search(index, NONSENSE, spellcheck=False, semantic=semantic())  # type: ignore[arg-type]
    assert (page.total, page.hits) == (0, [])
    assert index.asked[-1] == f"count ball pythons eat {COORDINATION.hybrid} rows=0"
    index = Counting(["math"], coordinated=1, meaning=[])
    assert run_search(index, NONSENSE, spellcheck=False, semantic=semantic()).total == 1  # type: ignore[arg-type]


def test_a_model_without_a_floor_gives_no_verdict_the_words_requirement_applies() -> None:
    index = Counting(["math"], coordinated=0, meaning=["ballpython"])
    page = run_search(index, NONSENSE, spellcheck=False, semantic=semantic(None), coordination=OPTED)  # type: ignore[arg-type]
    assert page.total == 0 and "knn" not in index.asked
    assert index.asked[-1] == f"count ball pythons eat {OPTED.words} rows=0"


def test_a_failing_model_gives_no_verdict_the_words_requirement_applies() -> None:
    class Failing(Counting):
        def nearest(self, *args: Any) -> SimpleNamespace:
            raise OSError("the model server is down")

    index = Failing(["math"], coordinated=0)
    assert run_search(index, NONSENSE, spellcheck=False, semantic=semantic(), coordination=OPTED).total == 0  # type: ignore[arg-type]
    assert index.asked[-1] == f"count ball pythons eat {OPTED.words} rows=0"


def test_a_page_the_kNN_query_does_not_order_asks_the_model_for_its_verdict() -> None:
    """Sorted by date the page is the words query's own; the verdict is the same as the fused page's."""
    by_date = SearchRequest(q=NONSENSE.q, sort="date")
    index = Counting(["math"], coordinated=0, meaning=["ballpython"])
    assert run_search(index, by_date, spellcheck=False, semantic=semantic()).total == 1  # type: ignore[arg-type]
    assert "knn" in index.asked and "count" not in " ".join(index.asked)
    index = Counting(["math"], coordinated=0, meaning=[])
    assert run_search(index, by_date, spellcheck=False, semantic=semantic()).total == 0  # type: ignore[arg-type]
    assert index.asked[-1] == f"count ball pythons eat {COORDINATION.hybrid} rows=0"
