"""Answers' plain logic (search/answers.py): which passages are sent, the prompt, and the check of
the model's citations."""

from __future__ import annotations

from searchcrawl.search.answers import AnswerConfig, anchored, checked_answer, messages, select_sources

CONFIG = AnswerConfig(url="http://127.0.0.1:1/v1", model="m", passages=2, passage_chars=50, budget_chars=80, threshold=0.6)


def passage(text: str, score: float, heading: str = "") -> dict:
    return {"passage_text": text, "score": score, "passage_heading": heading}


def test_only_readable_similar_passages_within_the_budget_are_sent_numbered() -> None:
    nearest = [
        ("a", passage("Leave is booked in the HR portal. " * 3, 0.9, "Booking leave")),
        ("gone", passage("withheld text", 0.95)),  # not among the readable documents: never named
        ("b", passage("Parking permits are free.", 0.8)),
        ("c", passage("Unrelated.", 0.4)),
        ("d", passage("Third good passage.", 0.7)),
    ]
    documents = {key: {"id": key, "url": f"https://h.test/{key}", "title": key.upper()} for key in "abcd"}
    sources, considered = select_sources(nearest, documents, CONFIG)
    assert [(s.number, s.document) for s in sources] == [(1, "a"), (2, "b")]
    assert len(sources[0].text) == 50 and sources[0].url == "https://h.test/a#:~:text=Booking%20leave"
    assert [(c.document, c.verdict) for c in considered] == [
        ("a", "sent as [1]"),
        ("b", "sent as [2]"),
        ("c", "below the threshold"),
        ("d", "over the budget"),
    ]
    assert all("withheld" not in str(item) for item in (*sources, *considered))


def test_the_prompt_numbers_the_sources_and_asks_for_citations() -> None:
    sources, _ = select_sources(
        [("a", passage("Text A.", 0.9))], {"a": {"id": "a", "url": "https://h.test/a", "title": "A"}}, CONFIG
    )
    chat = messages("what?", sources)
    assert chat[0]["role"] == "system" and "[1]" in chat[0]["content"]
    assert chat[1]["content"] == "Sources:\n\n[1] A\nText A.\n\nQuestion: what?"


def test_a_sentence_keeps_its_place_only_with_a_citation_of_a_source_sent() -> None:
    kept, refused = checked_answer("Leave is booked online [1]. It is great. Permits are free [2][1].", 2)
    assert refused == "" and kept == [("Leave is booked online.", (1,)), ("Permits are free.", (2, 1))]


def test_a_citation_of_a_source_never_sent_refuses_the_whole_answer() -> None:
    assert checked_answer("Leave is booked online [1]. Salaries are secret [7].", 2) == (
        [],
        "the model cited a source it was not given",
    )
    assert checked_answer("Nothing cited here.", 2)[1] == "the model's answer cited none of the sources"
    assert checked_answer("I cannot answer this from the sources [1].", 2)[1] == "the model's answer cited none of the sources"


def test_a_cited_sentence_without_a_word_is_no_answer() -> None:
    """A small model's junk seen in the answers benchmark (stop 88): numbers and citations alone."""
    assert checked_answer("[1] 2. [2] 3. [3] 4. 5.", 3) == ([], "the model's answer holds no words, only numbers and citations")
    assert checked_answer("4.2 [1]. Leave is booked online [1].", 1) == ([("Leave is booked online.", (1,))], "")
    assert checked_answer("休暇はオンラインで予約します [1]。", 1)[0] == [("休暇はオンラインで予約します 。", (1,))]


def test_the_models_markup_stays_text_and_anchors_only_where_they_can_be() -> None:
    kept, _ = checked_answer("<script>alert(1)</script> is what [1] says.", 1)
    assert kept == [("<script>alert(1)</script> is what says.", (1,))]  # escaped where it is shown
    assert anchored("https://h.test/a#top", "X") == "https://h.test/a#top"
    assert anchored("smb://share/a.doc", "X") == ""  # as the hits: no link of a scheme a browser is not given
    assert anchored("javascript:alert(1)", "X") == ""
    assert anchored("https://h.test/a", "Re-install " + "x" * 90).endswith("#:~:text=Re%2Dinstall")


def test_a_citation_in_a_form_the_check_cannot_read_refuses_the_answer() -> None:
    for odd in ("Leave is booked [1]. Pay is secret [7 ].", "Booked [1]. Also [7,8].", "Booked [1] and ［7］."):
        assert checked_answer(odd, 2) == ([], "the model cited in a form the check cannot read"), odd
