"""Text as Solr may take it: surrogates, control characters and immense single terms."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from searchcrawl.content.clean_text import MAX_TERM_BYTES, clean_fields, clean_text, cut_term, is_term_field


def test_a_surrogate_pair_becomes_its_character_and_a_lone_one_the_replacement_character() -> None:
    assert clean_text("smile \ud83d\ude00 here") == "smile \U0001f600 here"
    assert clean_text("lone \ud83d there \ude00") == "lone \ufffd there \ufffd"


def test_control_characters_are_removed_and_line_breaks_and_tabs_kept() -> None:
    assert clean_text("a\x00b\x07c\x1bd\x7fe\x85f\ufffeg\uffffh") == "abcdefgh"
    assert clean_text("one\ttwo\nthree\r\n") == "one\ttwo\nthree\r\n"


def test_single_terms_are_cut_on_a_character_boundary() -> None:
    assert cut_term("short") == "short"
    cut = cut_term("é" * MAX_TERM_BYTES)  # two bytes each: the cut falls between characters
    assert cut == "é" * (MAX_TERM_BYTES // 2)
    assert len(cut_term("x€" * 1000, limit=10).encode("utf-8")) <= 10


def test_only_the_schemas_single_term_fields_are_cut() -> None:
    long = "A" * 40_000
    fields = clean_fields(
        {"author": long, "department_s": long, "tags_ss": [long, "b\x00"], "content": long, "title": "t\ud800", "size_i": 3}
    )
    assert len(fields["author"]) == len(fields["department_s"]) == len(fields["tags_ss"][0]) == MAX_TERM_BYTES
    assert fields["tags_ss"][1] == "b" and fields["content"] == long and fields["title"] == "t\ufffd"
    assert fields["size_i"] == 3
    assert is_term_field("language") and not is_term_field("subject") and not is_term_field("content")


@given(st.text(alphabet=st.characters(exclude_categories=())))  # surrogates (Cs) included
def test_any_text_comes_out_encodable_without_controls_and_the_same_when_cleaned_again(text: str) -> None:
    cleaned = clean_text(text)
    cleaned.encode("utf-8")  # never raises
    assert not any(ord(ch) < 32 and ch not in "\t\n\r" for ch in cleaned)
    assert clean_text(cleaned) == cleaned
    assert len(cut_term(cleaned).encode("utf-8")) <= MAX_TERM_BYTES


def test_the_search_pages_highlight_marks_are_removed_so_a_page_cannot_fake_one() -> None:
    """A hostile review: text holding U+E000 ... U+E001 was shown as a highlight (<mark>)."""
    from searchcrawl.search.results import MARK_CLOSE, MARK_OPEN

    assert clean_text(f"{MARK_OPEN}VERIFIED BY IT{MARK_CLOSE} for real") == "VERIFIED BY IT for real"
