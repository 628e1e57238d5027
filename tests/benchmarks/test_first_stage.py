"""The first-stage benchmark's own logic (tests/benchmarks/first_stage.py): the question's words
dropped, which queries a form applies to, the rank of the first answering page."""

from __future__ import annotations

from tests.benchmarks.first_stage import (
    QUESTIONS,
    VARIANTS,
    Variant,
    first_good,
    weighed,
    without_opening,
    without_question_words,
)


def test_the_opening_words_of_a_question_are_dropped() -> None:
    assert without_opening("how do I save a numpy array to a file") == "save a numpy array to a file"
    assert without_opening("What is the difference between a list and a tuple") == "the difference between a list and a tuple"
    assert without_opening("remove noise from a photo") == "remove noise from a photo"  # nothing to drop
    assert without_opening("how do I") == "how do I"  # nothing would be left: as it is


def test_every_question_word_is_dropped() -> None:
    assert without_question_words("see how many urls have been fetched") == "see many urls have been fetched"
    assert without_question_words("why does 3/2 give 1") == "3/2 give 1"
    assert without_question_words("how can I") == "how can I"


def test_a_form_applies_to_the_shapes_it_names() -> None:
    questions = Variant({"tie": "0.3"}, shapes=QUESTIONS)
    assert questions.applies("how do I make my loops over arrays faster")
    assert not questions.applies("URLFilterException")  # a name
    assert not questions.applies("fetch schedule")  # keywords
    assert Variant({"tie": "0.3"}).applies("fetch schedule")  # no shape named: every query
    assert VARIANTS["today"].params == {} and VARIANTS["today"].text("how do I") == "how do I"


def test_the_handlers_fields_with_other_weights() -> None:
    assert weighed() == "title^1.0 content^1.0 description subject url_words^0.6"
    assert weighed(title=0.8) == "title^0.8 content^1.0 description subject url_words^0.6"


def test_the_first_answering_page_by_its_path() -> None:
    ranked = ["nutch!http://127.0.0.1:1/a.html", "http://127.0.0.1:2/b.html", "nutch!http://127.0.0.1:1/c.html"]
    assert first_good(ranked, {"/b.html", "/c.html"}) == 2  # an id or a URL, any host and port
    assert first_good(ranked, {"/d.html"}) is None
