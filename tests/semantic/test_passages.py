"""Passages (semantic/passages.py): heading-aware, bounded, no word in two of them."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from searchcrawl.semantic.passages import MAX_PASSAGES, MIN_WORDS, PASSAGE_WORDS, sections, split_passages


def words(n: int, word: str = "word") -> str:
    return " ".join(f"{word}{i}." if i % 12 == 11 else f"{word}{i}" for i in range(n))


def test_a_passage_begins_at_each_heading_and_never_crosses_one() -> None:
    text = f"Intro {words(40, 'intro')} Install {words(60, 'inst')} Upgrade {words(60, 'up')}"
    passages = split_passages(text, "Guide", ["Install", "Upgrade"])
    assert [p.heading for p in passages] == ["", "Install", "Upgrade"]
    assert all(not ("inst" in p.text and "up1 " in p.text) for p in passages)
    assert passages[1].embedded.startswith("Guide — Install\n") and passages[0].embedded.startswith("Guide\n")


def test_a_heading_not_found_in_order_is_passed_over() -> None:
    assert [h for h, _ in sections("a b Install c d", ["Missing", "Install"])] == ["", "Install"]
    assert [h for h, _ in sections("Two One more", ["One", "Two"])] == ["", "One"]  # "Two" is before "One"


def test_short_sections_join_the_next_and_long_ones_are_cut_between_sentences() -> None:
    text = f"Title {words(5, 'tiny')} Body {words(300, 'body')}"
    passages = split_passages(text, "", ["Title", "Body"])
    assert all(len(p.text.split()) <= PASSAGE_WORDS for p in passages)
    assert passages[0].text.startswith("tiny0")  # the tiny section joined the body's first passage
    assert all(p.text.endswith(".") for p in passages[:-1])  # cut after a sentence


def test_a_very_long_document_keeps_its_first_passages() -> None:
    assert len(split_passages(words(PASSAGE_WORDS * (MAX_PASSAGES + 50)))) == MAX_PASSAGES


def test_the_checksum_is_of_the_model_and_the_embedded_text() -> None:
    (one,) = split_passages(words(40), "T")
    assert one.checksum("m1") == split_passages(words(40), "T")[0].checksum("m1")
    assert one.checksum("m1") != one.checksum("m2") != split_passages(words(40), "U")[0].checksum("m2")


@given(st.integers(min_value=0, max_value=2000), st.integers(min_value=0, max_value=10**6))
def test_every_word_is_in_exactly_one_passage_in_order(count: int, seed: int) -> None:
    rng = random.Random(seed)
    vocabulary = ["alpha", "beta.", "gamma!", "delta?", "epsilon", "Heading"]
    text = " ".join(rng.choice(vocabulary) + str(i) for i in range(count))
    headings = [w for w in text.split() if w.startswith("Heading")][:5]
    passages = split_passages(text, "t", headings)
    joined = [w for p in passages for w in p.text.split()]
    expected = [w for w in text.split() if w not in headings] if count else []
    # every word once, in order (a heading is the passage's heading, not its text)
    assert joined == [w for w in expected if w in joined] and len(joined) >= len(expected) - len(headings)
    assert [p.ordinal for p in passages] == list(range(len(passages)))
    assert all(0 < len(p.text.split()) <= PASSAGE_WORDS for p in passages)
    assert sum(1 for p in passages if len(p.text.split()) < MIN_WORDS) <= max(1, len(headings) + 1)
