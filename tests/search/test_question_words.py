"""A question's words query (search/query.py ``words_text``, issue 100 point 4): the scaffolding of a
question-shaped query dropped or weighed down in the forms measured, nothing else ever changed, and
the question as typed in the form shipped (the others did not hold out)."""

from __future__ import annotations

import pytest

from searchcrawl.search.query import QUESTION_FORM, words_text

QUESTION = "how do I stop my program hanging forever when a server never answers"


def test_the_form_shipped_is_the_question_as_typed() -> None:
    assert QUESTION_FORM == "typed"
    assert words_text(QUESTION) == QUESTION


def test_dropped_leaves_the_scaffolding_out_of_the_words_query() -> None:
    assert words_text(QUESTION, "dropped") == "stop program hanging forever a server never answers"
    assert words_text("why does adding 0.1 and 0.2 give me a weird long number", "dropped") == (
        "adding 0.1 and 0.2 give a weird long number"
    )


def test_lowered_weighs_the_scaffolding_a_tenth_and_keeps_it() -> None:
    assert words_text("how can I plot two curves?", "lowered") == "how^0.1 can^0.1 I^0.1 plot two curves?"


@pytest.mark.parametrize(
    "query",
    [
        "item pipeline",  # keywords
        "URLFilterException",  # a name
        "ValueError: operands could not be broadcast",  # an error message
        "how do I",  # nothing of its own left
        'how do I "quote" this',  # query syntax: as typed
        "how do I title:spider",
        "how do I -exclude this",
        "what is foo AND bar",
    ],
)
@pytest.mark.parametrize("form", ["dropped", "lowered"])
def test_anything_but_a_plain_question_goes_as_typed(query: str, form: str) -> None:
    assert words_text(query, form) == query
