"""The answer's run (search/answer_run.py, issue 101 point 5): which answer is asked, the model's
or the extractive one, and its fallbacks, with a fake answerer standing in for the passages'
retrieval and the model (no Solr, no model server)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from searchcrawl.index.solr_client import IndexingError
from searchcrawl.search.answer_parts import Answer, AnswerSource, Extract
from searchcrawl.search.answer_run import ModelSlots, run_answer
from searchcrawl.search.answers import AnswerConfig, AnswerFailed
from searchcrawl.search.extractive import with_extract

MODEL = AnswerConfig(url="http://127.0.0.1:1/v1", model="m")
PASSAGES = AnswerConfig(url="", model="")
INDEX: Any = object()  # the searcher's index: the fake answerer only hands it on
SOURCE = AnswerSource(1, "d", "https://h.example/leave", "Leave", "", "Annual leave is booked online.", 0.9)
EXTRACT = Extract(SOURCE, (("Annual leave is booked online.", True),), 0.9)


class Semantic:
    """A semantic search whose model is ``model`` (``SemanticSearch.active``)."""

    model: Any = "the active model"

    def active(self) -> Any:
        return self.model


class Answerer:
    """answers.py ``answer``'s stand-in: records each call, then answers as ``does`` says."""

    def __init__(self, does: Callable[[AnswerConfig], Answer] | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.does = does or (lambda config: Answer("q", model=config.model, asked_model=bool(config.url)))

    def __call__(
        self, index: Any, model: Any, question: str, config: AnswerConfig, filters: Any, params: Any, lead: Any
    ) -> Answer:
        self.calls.append({"index": index, "model": model, "config": config, "filters": filters, "params": params, "lead": lead})
        return self.does(config)


def failing(error: Exception) -> Callable[[AnswerConfig], Answer]:
    def does(config: AnswerConfig) -> Answer:
        raise error

    return does


def ask(answerer: Answerer, generative: AnswerConfig | None, extractive: AnswerConfig | None, **given: Any) -> Any:
    arguments: dict[str, Any] = {"semantic": Semantic(), "question": "how is leave booked?", "slots": ModelSlots(4)}
    arguments.update(given)
    return run_answer(
        INDEX,
        arguments.pop("semantic"),
        arguments.pop("question"),
        ["fq"],
        {"p": 1},
        generative,
        extractive,
        answerer=answerer,
        **arguments,
    )


def test_the_model_is_asked_with_the_extract_as_its_lead_where_both_are_on() -> None:
    answerer = Answerer()
    run = ask(answerer, MODEL, PASSAGES)
    assert run.answer is not None and run.answer.asked_model and run.failed == ""
    (call,) = answerer.calls
    assert call == {
        "index": INDEX,
        "model": "the active model",
        "config": MODEL,
        "filters": ["fq"],
        "params": {"p": 1},
        "lead": with_extract,
    }


def test_the_model_alone_without_the_extractive_answer() -> None:
    answerer = Answerer()
    assert ask(answerer, MODEL, None).answer is not None
    assert answerer.calls[0]["lead"] is None and answerer.calls[0]["config"] is MODEL


def test_without_the_model_the_extractive_answer_alone_and_with_neither_none() -> None:
    answerer = Answerer()
    run = ask(answerer, None, PASSAGES)
    assert run.answer is not None and not run.answer.asked_model
    assert answerer.calls[0]["config"] is PASSAGES and answerer.calls[0]["lead"] is with_extract
    answerer = Answerer()
    assert ask(answerer, None, None).answer is None and answerer.calls == []


@pytest.mark.parametrize("given", [{"semantic": None}, {"question": " \t "}])
def test_no_semantic_search_or_no_question_is_no_answer_and_asks_nothing(given: dict[str, Any]) -> None:
    answerer = Answerer()
    run = ask(answerer, MODEL, PASSAGES, **given)
    assert run.answer is None and run.failed == "" and answerer.calls == []


def test_a_model_that_fails_leaves_its_extract_and_says_why() -> None:
    failed = AnswerFailed("the chat server took too long")
    failed.gathered = Answer("q", extract=EXTRACT, asked_model=True)
    run = ask(Answerer(failing(failed)), MODEL, PASSAGES)
    assert run.answer is failed.gathered
    assert run.failed == "No answer (the hits are shown alone): AnswerFailed"


def test_a_model_that_fails_without_an_extract_leaves_the_hits_alone() -> None:
    without = AnswerFailed("junk")
    without.gathered = Answer("q", asked_model=True)
    assert ask(Answerer(failing(without)), MODEL, PASSAGES).answer is None
    before_anything = AnswerFailed("unreachable")  # nothing gathered
    run = ask(Answerer(failing(before_anything)), MODEL, None)
    assert run.answer is None and run.failed == "No answer (the hits are shown alone): AnswerFailed"


@pytest.mark.parametrize("generative", [MODEL, None])
def test_solr_failing_is_no_answer_and_says_why_never_the_question(generative: AnswerConfig | None) -> None:
    run = ask(Answerer(failing(IndexingError("solr down: how is leave booked?"))), generative, PASSAGES)
    assert run.answer is None
    assert run.failed == ("No answer" if generative else "No extractive answer") + " (the hits are shown alone): IndexingError"
    assert "leave" not in run.failed


def test_answers_over_the_slots_get_none_at_once_and_each_slot_is_given_back() -> None:
    slots = ModelSlots(1)
    inside: list[Any] = []

    def does(config: AnswerConfig) -> Answer:
        inside.append(ask(Answerer(), MODEL, PASSAGES, slots=slots))  # asked while the first waits on the model
        return Answer("q", asked_model=True)

    assert ask(Answerer(does), MODEL, PASSAGES, slots=slots).answer is not None
    assert inside[0].answer is None and inside[0].failed == "No answer: 1 answers are waiting for the model already"
    assert ask(Answerer(), MODEL, PASSAGES, slots=slots).answer is not None  # given back
    ask(Answerer(failing(IndexingError("down"))), MODEL, PASSAGES, slots=slots)
    ask(Answerer(failing(AnswerFailed("junk"))), MODEL, PASSAGES, slots=slots)
    assert ask(Answerer(), MODEL, PASSAGES, slots=slots).answer is not None  # given back after a failure too


def test_the_extractive_answer_takes_no_slot_of_the_model() -> None:
    slots = ModelSlots(1)
    with slots.taken() as free:
        assert free
        assert ask(Answerer(), None, PASSAGES, slots=slots).answer is not None
        assert ask(Answerer(), MODEL, PASSAGES, slots=slots).answer is None
