"""Extractive answers' plain logic (search/extractive.py, issue 93): what counts as a question, which
sentences of a passage answer, which passage is chosen, and how the answer leads the model's prompt
and the JSON API."""

from __future__ import annotations

import pytest

from searchcrawl.search.answers import (
    Answer,
    AnswerSource,
    answer_config,
    answer_json,
    messages,
    retrieval_config,
    split_sentences,
)
from searchcrawl.search.evaluation import read_queries
from searchcrawl.search.extractive import Extract, asked_words, best_extract, is_question, marked_sentences
from tests.conftest import ROOT

JUDGED = ROOT / "tests" / "search" / "judged"
LEAVE = (
    "The HR portal lists your balance. Annual leave is booked online in the HR portal, two weeks ahead. "
    "Your manager approves it. Sick leave is reported by phone."
)


def source(number: int, text: str, score: float, title: str = "Leave", heading: str = "") -> AnswerSource:
    return AnswerSource(number, f"doc{number}", f"https://h.test/{number}", title, heading, text, score)


def judged_queries() -> list[tuple[str, str]]:
    found = []
    for name in ("scipy-lectures", "nutch"):
        found += [(q.kind, q.text) for q in read_queries((JUDGED / name / "queries.tsv").read_text(encoding="utf-8"))]
    return found


def test_every_judged_question_is_a_question_and_no_keyword_query_is() -> None:
    queries = judged_queries()
    assert [text for kind, text in queries if kind == "question" and not is_question(text)] == []
    assert [text for kind, text in queries if kind == "keyword" and is_question(text)] == []


@pytest.mark.parametrize(
    "query",
    [
        "how do I book leave",
        "Where is the gate office?",
        "pdb?",
        "wie beantrage ich Urlaub",
        "remove noise from a photo",
        "limit how many pages per site are fetched",
        "休暇はどう申請しますか",
    ],
)
def test_questions_and_requests_in_a_users_words(query: str) -> None:
    assert is_question(query)


@pytest.mark.parametrize(
    "query",
    [
        "",
        "numpy broadcasting",
        "csr sparse matrix",
        "what",  # a question word alone
        "sparse matrices chapter",
        "ValueError: operands could not be broadcast together with shapes (4,) (2,)",
        "my figure window does not show up after plt.plot",
        "ParserNotFound no parser for content type",
        "java.lang.NullPointerException at org.apache.nutch.fetcher.Fetcher",
    ],
)
def test_keywords_and_error_messages_are_not_questions(query: str) -> None:
    assert not is_question(query)


def test_the_sentence_that_says_most_of_the_question_is_marked_with_its_neighbours() -> None:
    sentences, said = marked_sentences("how do I book annual leave", LEAVE)
    assert said == 3  # book, annual, leave
    assert sentences == [
        ("The HR portal lists your balance.", False),
        ("Annual leave is booked online in the HR portal, two weeks ahead.", True),
        ("Your manager approves it.", False),
    ]


def test_two_sentences_that_say_as_much_are_both_marked() -> None:
    sentences, said = marked_sentences("report leave", "Leave is reported online. Intro. Sick leave is reported by phone.")
    assert said == 2
    assert [text for text, marked in sentences if marked] == ["Leave is reported online.", "Sick leave is reported by phone."]


def test_a_passage_that_says_nothing_of_the_question_marks_nothing() -> None:
    sentences, said = marked_sentences("parking permits", LEAVE)
    assert said == 0
    assert not any(marked for _text, marked in sentences)


def test_the_passages_sentences_end_where_the_answers_do() -> None:
    assert split_sentences("Use e.g. the portal.  It works! 休暇。申請") == [
        "Use e.g. the portal.",
        "It works!",
        "休暇。",
        "申請",
    ]


def test_the_first_passage_in_the_rankings_order_that_speaks_of_the_question_is_chosen() -> None:
    sources = [
        source(1, "Parking permits are free at the gate office.", 0.9, "Parking"),  # nearest, says nothing asked
        source(2, LEAVE, 0.8),
        source(3, "Leave is booked online.", 0.7),
    ]
    extract = best_extract("how do I book annual leave", sources)
    assert extract is not None
    assert extract.source.number == 2
    assert extract.marked == ["Annual leave is booked online in the HR portal, two weeks ahead."]
    assert extract.score == 0.8


def test_a_rerankers_scores_order_the_passages_instead_of_the_knn_score() -> None:
    sources = [source(1, LEAVE, 0.9), source(2, "Leave is booked online in the HR portal.", 0.7)]
    extract = best_extract("book leave", sources, rerank=lambda _question, passages: [0.1, 0.5][: len(passages)])
    assert extract is not None and extract.source.number == 2 and extract.score == 0.5


def test_no_passage_that_speaks_of_the_question_is_no_answer() -> None:
    assert best_extract("parking permits", [source(1, LEAVE, 0.9)]) is None
    assert best_extract("how do I book leave", []) is None
    assert best_extract("pdb?", [source(1, LEAVE, 0.9)]) is None  # no content word: nothing to mark


def test_the_words_a_question_asks_leave_its_scaffolding_and_function_words_out() -> None:
    assert asked_words("What does the fetcher do with robots rules?") == {"fetch", "robot", "rules"}
    assert asked_words("how do I") == set()


def test_a_passage_that_says_only_the_questions_scaffolding_is_no_answer() -> None:
    # issue 100, point 5: "what" and "does" counted as the question's words, so the first passage
    # was the answer for saying them; it says nothing of the fetcher or robots rules
    question = "what does the fetcher do with robots rules"
    sources = [
        source(1, "Here is what it does, in short. Read on from here.", 0.9),
        source(2, "The fetcher obeys the robots rules of every host.", 0.8),
    ]
    extract = best_extract(question, sources)
    assert extract is not None and extract.source.number == 2
    assert best_extract(question, sources[:1]) is None
    assert best_extract("what do ball pythons eat", [source(1, "Here is what you do with a file.", 0.9)]) is None


def test_the_choices_measured_but_not_shipped() -> None:
    question = "book annual leave online"
    sources = [source(1, "Leave is booked by your manager.", 0.9), source(2, "Annual leave is booked online in the portal.", 0.8)]
    chosen = {choice: best_extract(question, sources, choice=choice) for choice in ("knn", "said", "covered")}
    assert [extract.source.number if extract else None for extract in chosen.values()] == [1, 2, 2]
    assert best_extract(question, sources[:1], choice="covered") is not None  # 2 of its 4 words: half
    assert best_extract(question, [source(1, "Leave is granted.", 0.9)], choice="covered") is None  # 1 of 4
    assert best_extract("book annual leave online early", sources[:1], choice="covered") is None  # 2 of 5


def test_a_long_sentence_is_cut_when_shown() -> None:
    sentences, _said = marked_sentences("leave", "Leave " + "x " * 400)
    assert len(sentences[0][0]) <= 402


def extract_of_leave() -> Extract:
    extract = best_extract("how do I book annual leave", [source(1, LEAVE, 0.8, heading="Booking")])
    assert extract is not None
    return extract


def test_the_model_is_led_to_the_answering_sentence() -> None:
    sources = [source(1, LEAVE, 0.8)]
    chat = messages("how do I book annual leave", sources, extract_of_leave())
    assert (
        "Most likely answering, in source [1]: Annual leave is booked online in the HR portal, two weeks ahead."
        in chat[1]["content"]
    )
    assert "Most likely" not in messages("how do I book annual leave", sources)[1]["content"]


def test_the_json_api_gives_the_extract_with_its_citation() -> None:
    result = Answer("how do I book annual leave", extract=extract_of_leave())
    given = answer_json(result)["extract"]
    assert given["source"] == {"number": 1, "title": "Leave", "url": "https://h.test/1"}
    assert given["heading"] == "Booking"
    assert [s for s in given["sentences"] if s["answering"]] == [
        {"text": "Annual leave is booked online in the HR portal, two weeks ahead.", "answering": True}
    ]
    assert answer_json(Answer("q"))["extract"] is None


def test_the_extracts_configuration_never_names_the_model() -> None:
    """The page's extract, shown without a click, must not ask the model (seconds, a slot): its
    configuration is the answers' passages alone, whatever SEARCHCRAWL_ANSWERS_URL says."""
    settings = {"SEARCHCRAWL_ANSWERS_URL": "http://127.0.0.1:1/v1", "SEARCHCRAWL_ANSWERS_THRESHOLD": "0.7"}
    extract = retrieval_config(settings.get)
    assert extract.url == "" and extract.model == "" and extract.threshold == 0.7
    model = answer_config(settings.get, "key")
    assert model is not None and model.url == "http://127.0.0.1:1/v1" and model.threshold == 0.7 and model.api_key == "key"
