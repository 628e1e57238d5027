"""A source text is read one way (issue 99): the loader, `scrapy list`, the source editor's guard, a
backup's export and a restore all parse its exact bytes with ``source_data``, and a text that one
reader would split into lines otherwise than another is refused, never passed on."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from searchcrawl.config.source import SourceError, SourceFile, SourceTextError, load_source, source_data
from searchcrawl.web.source_editor import GUARDED_KEYS, guarded_change

# a files source over a server folder: what a page administrator saved with lone-CR line ends
FILES_SOURCE = ['type = "files"', "[files]", 'roots = ["/etc/ssh"]', "[access]", "public = true"]
WEB_SOURCE = ["# the intranet", 'seeds = ["https://intranet.example/"]', "max_depth = 3"]

# every line end and encoding trick: what goes between lines, or where the text is odd
TRICKS = {
    "lone CR": "\r",
    "NEL": "\x85",
    "U+2028": "\u2028",
    "U+2029": "\u2029",
    "form feed": "\x0c",
    "vertical tab": "\x0b",
    "file separator": "\x1c",
    "NUL": "\x00",
}


def loaded(tmp_path: Path, raw: bytes) -> object:
    path = tmp_path / "s.toml"
    path.write_bytes(raw)
    return load_source(SourceFile("s", "s.toml", path))


@pytest.mark.parametrize("end", TRICKS.values(), ids=TRICKS.keys())
def test_a_line_end_other_than_lf_or_crlf_is_refused_by_the_loader_and_the_guard(tmp_path: Path, end: str) -> None:
    """On the old code a lone-CR text was no TOML to the editor's guard ("the loader's to refuse")
    and, read by the loader through universal newlines, a files source over /etc/ssh."""
    text = end.join(FILES_SOURCE) + end
    with pytest.raises(SourceError, match="s.toml: line 1: "):
        loaded(tmp_path, text.encode("utf-8"))
    assert "line 1: " in guarded_change("", text)
    assert "line 1: " in guarded_change("\n".join(FILES_SOURCE) + "\n", text)  # the saved text its own


@pytest.mark.parametrize("end", TRICKS.values(), ids=TRICKS.keys())
def test_an_odd_character_in_a_string_or_a_comment_is_refused_too(tmp_path: Path, end: str) -> None:
    """A comment that a line-based reader (a diff, str.splitlines) splits in two hides a key from
    tomllib: ``# note<NEL>seeds = [...]`` is a comment to one reader and a key to another."""
    for text in (
        f"# note{end}spider_class = 'x'\n" + "\n".join(WEB_SOURCE) + "\n",
        f'title = "a{end}b"\n' + "\n".join(WEB_SOURCE),
    ):
        with pytest.raises(SourceTextError):
            source_data(text)
        assert guarded_change("", text) != ""


def test_lf_and_crlf_read_alike_and_mixed_ends_with_a_lone_cr_do_not() -> None:
    lf, crlf = "\n".join(WEB_SOURCE) + "\n", "\r\n".join(WEB_SOURCE) + "\r\n"
    assert (
        source_data(lf)
        == source_data(crlf)
        == source_data(crlf.encode())
        == {"seeds": ["https://intranet.example/"], "max_depth": 3}
    )
    with pytest.raises(SourceTextError, match="line 2: a lone carriage return"):
        source_data(f"{WEB_SOURCE[0]}\r\n{WEB_SOURCE[1]}\r{WEB_SOURCE[2]}\n")


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("\ufeff".encode() + b'seeds = ["https://a.example/"]\n', "line 1: the character U+FEFF"),
        ('seeds = ["https://a.example/"]\n'.encode("utf-16"), "not UTF-8 text (byte 0)"),
        ('seeds = ["https://a.example/"]\n'.encode("utf-16-le"), "line 1: the character U+0000"),
        (b'seeds = ["https://a.example/\xff"]\n', "not UTF-8 text (byte 28)"),
    ],
)
def test_a_byte_order_mark_utf16_or_bytes_that_are_not_utf8_are_refused(tmp_path: Path, raw: bytes, said: str) -> None:
    with pytest.raises(SourceError, match=re.escape(f"s.toml: {said}")):
        loaded(tmp_path, raw)


def test_the_guard_never_passes_a_text_the_loader_reads_with_a_guarded_key(tmp_path: Path) -> None:
    """Seeded texts made of a source's lines and a guarded key's, joined by any line end or trick:
    whatever the guard lets through, the loader reads without a guarded key (it reads the same
    bytes the same way), and whatever the loader refuses as text, the guard refused."""
    rng = random.Random(99)
    ends = ["\n", "\r\n", *TRICKS.values()]
    lines = [*WEB_SOURCE, 'spider_class = "example"', 'log_file = "/etc/cron.d/x"', *FILES_SOURCE, "\ufeff# c"]
    for _ in range(400):
        chosen = rng.sample(lines, rng.randint(2, len(lines)))
        text = "".join(line + rng.choice(ends) for line in chosen)
        refused = guarded_change("", text)
        try:
            data = source_data(text.encode("utf-8"))
        except SourceTextError as exc:
            assert refused == str(exc), repr(text)
            continue
        if not refused:
            assert not [key for key in GUARDED_KEYS if key in data], repr(text)
