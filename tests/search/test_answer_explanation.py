"""explain-answer's decisions on the passages nearest a question that the answer did not consider
(search/answer_explanation.py ``nearest_verdict``): plain logic, no Solr."""

from __future__ import annotations

from searchcrawl.access.decision import Principals
from searchcrawl.access.tokens import Access, Grant
from searchcrawl.search.answer_explanation import GAINED, REFUSED, explained_with, nearest_verdict
from searchcrawl.search.answers import AnswerConfig
from searchcrawl.search.extractive import with_extract

PUBLIC = Access.public("t")
FINANCE = Access.of([Grant.of("group:finance", "t")])
VISITOR = Principals.anonymous()


def test_a_page_just_gained_is_listed_as_readable_now_until_its_passages_are_updated() -> None:
    """Issue 91 (review of point 17): the document grants the visitor now, its passage's copy of
    the access (stale until the next pass) still refuses, so the answer could not find it: listed,
    not dropped as granted."""
    verdict = nearest_verdict(PUBLIC, FINANCE, VISITOR)
    assert verdict is not None and verdict[0] == GAINED and "public" in verdict[1]
    assert nearest_verdict(PUBLIC, None, VISITOR) == (GAINED, verdict[1])  # a copy without access fields refuses too


def test_a_page_refused_by_its_document_is_not_permitted_whatever_its_passages_say() -> None:
    assert nearest_verdict(FINANCE, PUBLIC, VISITOR) == (REFUSED, nearest_verdict(FINANCE, FINANCE, VISITOR)[1])  # type: ignore[index]
    assert nearest_verdict(None, PUBLIC, VISITOR) == (REFUSED, "no access fields")


def test_a_page_both_grant_was_passed_over_for_its_rank_and_is_not_listed() -> None:
    assert nearest_verdict(PUBLIC, PUBLIC, VISITOR) is None


def test_an_extract_without_a_model_server_is_explained_and_only_both_off_refuse() -> None:
    """Review of issue 93: explain-answer refused an installation without a model server, whose
    page shows extracts. It explains what the page answers: the model led by the extract, the
    model alone, the extract alone; nothing only when both are off."""
    model, extract = AnswerConfig(url="http://127.0.0.1:9/v1", model="m"), AnswerConfig(url="", model="")
    assert explained_with(model, extract) == (model, with_extract)
    assert explained_with(model, None) == (model, None)
    assert explained_with(None, extract) == (extract, with_extract)
    assert explained_with(None, None) is None
