"""searchcrawl.content.convert: text quality on the textract test corpus and kind detection, in
the test process (the worker pool, processes of its own: tests/e2e/test_convert_workers.py)."""

from __future__ import annotations

import io
import os
import re
import time
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from searchcrawl.content.convert import ConversionError, convert, detect_kind
from tests.conftest import unpack

FORMATS = ["pdf", "docx", "doc", "xlsx", "xls", "pptx", "odt", "ods", "rtf", "txt"]
SENTENCE = "the quick brown fox jumps over the lazy dog"


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return unpack("textract-tests.tar.xz", tmp_path_factory.mktemp("textract")) / "textract-tests" / "tests"


# --- 1. quality on real documents -----------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_raw_text_words_found(corpus, fmt):
    """>= 95% of the expected words are found, comparing lower-cased word *multisets* (a word
    expected 3 times counts as found 3 times only if we produce it 3 times)."""
    folder = corpus / fmt
    result = convert((folder / f"raw_text.{fmt}").read_bytes(), None, f"raw_text.{fmt}")
    assert result.kind == fmt
    expected = Counter(words((folder / "raw_text.txt").read_text(encoding="utf-8")))
    got = Counter(words(result.text))
    found = sum(min(n, got[w]) for w, n in expected.items())
    ratio = found / sum(expected.values())
    print(f"\n{fmt}: {ratio:.1%} of {sum(expected.values())} expected words found; metadata {result.metadata}")
    assert ratio >= 0.95, (expected - got).most_common(20)


@pytest.mark.parametrize("fmt", FORMATS)
def test_standardized_sentence_in_order(corpus, fmt):
    folder = corpus / fmt
    name = "standardized_text.txt" if fmt == "txt" else f"standardized_text.{fmt}"
    result = convert((folder / name).read_bytes(), None, name)
    assert SENTENCE in " ".join(words(result.text)), result.text[:300]


def test_metadata_is_read(corpus):
    meta = convert((corpus / "xlsx" / "raw_text.xlsx").read_bytes()).metadata
    assert meta["author"] == "John Walkenbach"
    assert meta["subject"] == "Excel 2007 Bible"
    assert isinstance(meta["keywords"], list) and meta["keywords"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["created"])
    assert convert((corpus / "pptx" / "raw_text.pptx").read_bytes()).metadata["title"] == ("I love PowerPoint. A lot.")
    assert convert((corpus / "odt" / "raw_text.odt").read_bytes()).metadata["author"] == "evan"
    assert convert((corpus / "pdf" / "raw_text.pdf").read_bytes()).metadata["title"] == "i_heart_word"


def _odf(mimetype: str, body: str, encrypted: bool = False) -> bytes:
    ns = (
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
        'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
        'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/"'
    )
    enc = "<manifest:encryption-data/>" if encrypted else ""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), mimetype)
        zf.writestr(
            "META-INF/manifest.xml",
            '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
            f'<manifest:file-entry manifest:full-path="content.xml">{enc}</manifest:file-entry>'
            "</manifest:manifest>",
        )
        zf.writestr(
            "content.xml",
            f"<office:document-content {ns}><office:body>{body}</office:body></office:document-content>",
        )
        zf.writestr(
            "meta.xml",
            f"<office:document-meta {ns}><office:meta><dc:title>Deck</dc:title><dc:creator>Ann</dc:creator>"
            "<meta:keyword>alpha</meta:keyword><meta:keyword>beta</meta:keyword>"
            "<meta:creation-date>2024-05-06T07:08:09.123</meta:creation-date><dc:language>en-GB</dc:language>"
            "</office:meta></office:document-meta>",
        )
    return buf.getvalue()


def test_generated_odp_and_docx_metadata(tmp_path):
    """ODP has no corpus sample: a generated one, plus DOCX metadata written by python-docx."""
    body = (
        '<office:presentation><draw:page><draw:frame><draw:text-box><text:p>Hello<text:s text:c="2"/>'
        "slides</text:p></draw:text-box></draw:frame></draw:page></office:presentation>"
    )
    odp = _odf("application/vnd.oasis.opendocument.presentation", body)
    result = convert(odp)
    assert (result.kind, result.text) == ("odp", "Hello slides")
    assert result.metadata == {
        "title": "Deck",
        "author": "Ann",
        "keywords": ["alpha", "beta"],
        "created": "2024-05-06T07:08:09Z",
        "language": "en-GB",
    }
    with pytest.raises(ConversionError) as err:
        convert(_odf("application/vnd.oasis.opendocument.presentation", body, encrypted=True))
    assert err.value.status == "encrypted"

    import datetime

    import docx

    document = docx.Document()
    document.add_paragraph("Hello docx")
    props = document.core_properties
    props.title, props.author, props.keywords = "T", "A", "one; two"
    props.created = datetime.datetime(2020, 1, 2, 3, 4, 5)
    document.save(tmp_path / "m.docx")
    result = convert((tmp_path / "m.docx").read_bytes())
    assert result.text == "Hello docx"
    assert result.metadata["keywords"] == ["one", "two"]
    assert (result.metadata["title"], result.metadata["created"]) == ("T", "2020-01-02T03:04:05Z")


def test_docx_headers_and_footers_are_read(tmp_path):
    """Issue 53: the Python DOCX converter dropped headers and footers (Tika's testWORD_various.docx:
    "This is the header", "This is the footer text"). Headers first, then the body, then footers;
    a section linked to the previous one adds nothing twice; a first-page header is read too."""
    from docx import Document
    from docx.enum.section import WD_SECTION

    document = Document()
    first = document.sections[0]
    first.header.paragraphs[0].text = "This is the header"
    first.footer.paragraphs[0].text = "This is the footer text"
    first.different_first_page_header_footer = True
    first.first_page_header.paragraphs[0].text = "Cover letterhead"
    document.add_paragraph("Body of the first section.")
    second = document.add_section(WD_SECTION.NEW_PAGE)  # linked to the first: no header of its own
    assert second.header.is_linked_to_previous
    document.add_paragraph("Body of the second section.")
    document.save(tmp_path / "hf.docx")
    text = convert((tmp_path / "hf.docx").read_bytes()).text
    assert [line for line in text.split("\n") if line] == [
        "This is the header",
        "Cover letterhead",
        "Body of the first section.",
        "Body of the second section.",
        "This is the footer text",
    ], text


def test_scanned_pdf_has_no_text_but_its_metadata(corpus):
    """OCR needs Tika; without it a scan is a document without text (the pipeline decides)."""
    result = convert((corpus / "pdf" / "ocr_text.pdf").read_bytes())
    assert (result.kind, result.text, result.metadata["title"]) == ("pdf", "", "00463065.tif")


def test_unsupported():
    with pytest.raises(ConversionError) as err:
        convert(b"\x89PNG\r\n\x1a\n....", "image/png", "x.png")
    assert err.value.status == "unsupported"


# --- 2. robustness through worker processes -------------------------------------------------


def _hook(body: bytes, mimetype, filename):
    """Runs in the worker instead of convert() (Converter(_target=...)), to misbehave on demand."""
    if filename == "hang":
        while True:
            time.sleep(1)
    if filename == "hog":
        return bytearray(4 * 2**30)  # over the memory limit: MemoryError in the worker
    if filename == "die":
        os._exit(3)
    return convert(body, mimetype, filename)


# --- 3. detect_kind by magic bytes ---------------------------------------------------------


@pytest.mark.parametrize("fmt", ["pdf", "docx", "doc", "xlsx", "xls", "pptx", "odt", "ods", "rtf"])
def test_detect_kind_by_magic(corpus, fmt):
    body = (corpus / fmt / f"raw_text.{fmt}").read_bytes()
    # Magic bytes win over a wrong MIME type and extension.
    assert detect_kind(body, "text/plain", "file.bin") == fmt
    assert detect_kind(body, None, None) == fmt


def test_detect_kind_generated():
    """Kinds without a corpus sample: ODP and PPT-style OLE, plain text."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("mimetype", "application/vnd.oasis.opendocument.presentation")
        zf.writestr("content.xml", "<x/>")
    assert detect_kind(buf.getvalue(), None, None) == "odp"
    assert detect_kind(b"\xef\xbb\xbfhello", None, None) == "txt"
    assert detect_kind(b"hello", "text/plain; charset=utf-8", None) == "txt"
    assert detect_kind(b"hello", None, "https://x/a/notes.TXT?x=1") == "txt"
    assert detect_kind(b"hello", None, "x.ppt") == "ppt"
    assert detect_kind(b"hello", None, None) is None
    assert detect_kind(b"PK\x03\x04 broken", None, "a.docx") == "docx"


def test_a_text_identifies_a_document_from_ten_letters_or_digits():
    """Issue 53: fewer than MIN_TEXT_CHARS letters or digits (any script) name no document."""
    from searchcrawl.content.convert.core import MIN_TEXT_CHARS, identifies

    assert MIN_TEXT_CHARS == 10
    for text in ("", " \u00a0\t\n", "1", "Figure 1", "\u2022 \u2022 \u2022", "a_b_c_d_e_f_g_h_i", "\u2039#\u203a 1 2 3"):
        assert not identifies(text), text
    for text in (
        "Budget 2025",
        "Meeting notes",
        "\u4f1a\u8bae\u8bb0\u5f55\u4f1a\u8bae\u8bb0\u5f55\u4f1a\u8bae",
        "x" * 10_000_000,
    ):
        assert identifies(text), text[:20]


def test_a_text_without_a_letter_or_digit_is_no_text():
    """Issue 72 point 12: what a search can find is a letter or a digit: whitespace and stray
    bullets are no text (a document without text), "1" and "Test" are."""
    from searchcrawl.content.convert.core import has_words

    for text in ("", " \u00a0\t\n", "\u2022 \u2022 \u2022", "\u2039#\u203a", "-- _ --"):
        assert not has_words(text), text
    for text in ("1", "Test", "\u00dcbersicht", "\u4f1a", "\u2039#\u203a 1"):
        assert has_words(text), text


def test_garbled_text_is_not_text():
    """Issue 53: text that is mostly U+FFFD is binary data read as text: status 'not_text', by the
    same rule (core.garbled) as Tika's answers; a few replaced characters in real text are kept."""
    from searchcrawl.content.convert.core import garbled

    assert garbled("\ufffd\ufffd \n x") and not garbled("\ufffd x") and not garbled("") and not garbled("plain words")
    # a "text file" of unpaired UTF-16 surrogates: every character decoded as U+FFFD
    with pytest.raises(ConversionError) as err:
        convert(b"\xff\xfe" + b"\x00\xd8" * 5000, "text/plain", "units.txt")
    assert err.value.status == "not_text"
    assert convert(b"\xff\xfe" + "caf\u00e9 ".encode("utf-16-le") + b"\x00\xd8", "text/plain", "a.txt").text == "caf\u00e9 \ufffd"
