"""The nonsense rule (issue 100; search/query.py ``coordination_filter``, ``unanswered``;
search/results.py ``answered``): a query whose words query found pages by one word of it
("what do ball pythons eat" finds Python's manual by "python") has no hit when no document
holds the required share of its asked words and the model found nothing about it; without Solr."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from searchcrawl.search.hybrid import SemanticModel, SemanticSearch
from searchcrawl.search.query import ASKED_MM_PARAM, ASKED_PARAM, COORDINATION, asked_text, coordination_filter, unanswered
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


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("what do ball pythons eat", ""),  # no requirement: the rule is off
        ("what do ball pythons eat", "  "),
        ('"ball pythons" eat', COORDINATION),  # query syntax: asked as typed
        ("title:python eat", COORDINATION),
        ("ball -python", COORDINATION),
        ("how do I", COORDINATION),  # no asked word
        ("harbour", COORDINATION),  # one word and nothing else: every hit holds it
        ("harbour?", COORDINATION),
    ],
)
def test_no_filter_where_the_rule_cannot_or_need_not_apply(text: str, spec: str) -> None:
    assert coordination_filter(text, spec) is None


def test_one_asked_word_among_scaffolding_is_required() -> None:
    """ "how do I harbour": a page may be found by "how" alone."""
    assert coordination_filter("how do I harbour", COORDINATION) is not None


def test_unanswered_only_where_the_words_found_something_and_no_answer_says_otherwise() -> None:
    asked: list[str] = []

    def answer(name: str, says: bool) -> Any:
        return lambda: asked.append(name) or says

    assert unanswered(3, [answer("meaning", False), answer("words", False)]) and asked == ["meaning", "words"]
    asked.clear()
    assert not unanswered(3, [answer("meaning", True), answer("words", False)]) and asked == ["meaning"]  # the cheapest first
    asked.clear()
    assert not unanswered(3, [answer("meaning", False), answer("words", True)])
    assert not unanswered(0, [answer("never", False)]) and "never" not in asked  # nothing found: nothing to silence


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


def test_words_alone_a_query_no_document_speaks_of_enough_has_no_hit() -> None:
    index = Counting(["math", "logging"], coordinated=0)
    page = run_search(index, NONSENSE, spellcheck=False)  # type: ignore[arg-type]
    assert (page.total, page.hits) == (0, [])
    assert index.asked == ["words", f"count ball pythons eat {COORDINATION} rows=0"]


def test_words_alone_a_query_some_document_speaks_of_keeps_its_hits() -> None:
    index = Counting(["math", "logging"], coordinated=1)
    page = run_search(index, NONSENSE, spellcheck=False)  # type: ignore[arg-type]
    assert page.total == 2 and [hit.title for hit in page.hits] == ["Math", "Logging"]


def test_without_a_requirement_the_words_hits_stand_unasked() -> None:
    index = Counting(["math"], coordinated=0)
    page = run_search(index, NONSENSE, spellcheck=False, coordination="")  # type: ignore[arg-type]
    assert page.total == 1 and index.asked == ["words"]


def test_hybrid_the_models_verdict_is_asked_first_and_a_passage_above_the_floor_keeps_the_hits() -> None:
    """The fused page asked the kNN query already: its answer is free, the count is not asked."""
    index = Counting(["math"], coordinated=0, meaning=["ballpython"])
    semantic = SemanticSearch(SemanticModel(Model(), 0.5))  # type: ignore[arg-type]
    page = run_search(index, NONSENSE, spellcheck=False, semantic=semantic)  # type: ignore[arg-type]
    assert page.total == 2 and "count" not in " ".join(index.asked)


def test_hybrid_nothing_above_the_floor_and_no_document_speaking_of_it_is_no_hit() -> None:
    index = Counting(["math"], coordinated=0, meaning=[])
    semantic = SemanticSearch(SemanticModel(Model(), 0.5))  # type: ignore[arg-type]
    page = run_search(index, NONSENSE, spellcheck=False, semantic=semantic)  # type: ignore[arg-type]
    assert (page.total, page.hits) == (0, [])


def test_a_page_the_kNN_query_does_not_order_asks_the_model_only_when_the_words_fall_short() -> None:
    """Sorted by date the page is the words query's own; the verdict is the same as the fused page's."""
    semantic = SemanticSearch(SemanticModel(Model(), 0.5))  # type: ignore[arg-type]
    by_date = SearchRequest(q=NONSENSE.q, sort="date")
    index = Counting(["math"], coordinated=0, meaning=["ballpython"])
    assert run_search(index, by_date, spellcheck=False, semantic=semantic).total == 1  # type: ignore[arg-type]
    assert "knn" in index.asked
    index = Counting(["math"], coordinated=0, meaning=[])
    assert run_search(index, by_date, spellcheck=False, semantic=semantic).total == 0  # type: ignore[arg-type]
    index = Counting(["math"], coordinated=3, meaning=[])
    assert run_search(index, by_date, spellcheck=False, semantic=semantic).total == 1  # type: ignore[arg-type]
    assert "knn" not in index.asked
