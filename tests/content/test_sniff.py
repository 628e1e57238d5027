"""What a response really is: document kinds by magic bytes (sniff_kind), binary garbage served as
text (looks_binary), and the UTF-8 rule of choose_encoding. Plain functions, real files."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

import pytest
from w3lib.encoding import html_to_unicode

from searchcrawl.content.charsets import SAMPLE_BYTES, choose_encoding, declared_encoding, looks_binary
from searchcrawl.content.convert import detect_kind, sniff_kind
from searchcrawl.content.convert.core import ZIP_SNIFF_GAP
from tests.conftest import unpack

ODT_MIMETYPE = b"application/vnd.oasis.opendocument.text"


@pytest.fixture(scope="module")
def textract(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The textract test corpus (skips, saying why, when ../shared/corpora is absent)."""
    return unpack("textract-tests.tar.xz", tmp_path_factory.mktemp("textract")) / "textract-tests" / "tests"


# -- sniff_kind -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("pdf/raw_text.pdf", "pdf"),
        ("pdf/two_column.pdf", "pdf"),
        ("docx/raw_text.docx", "docx"),
        ("docx/paragraphs_and_tables.docx", "docx"),
        ("xlsx/raw_text.xlsx", "xlsx"),
        ("pptx/raw_text.pptx", "pptx"),
        ("pptx/standardized_text.pptx", "pptx"),
        ("odt/raw_text.odt", "odt"),
        ("ods/raw_text.ods", "ods"),
        ("doc/raw_text.doc", "doc"),
        ("xls/raw_text.xls", "xls"),
        ("rtf/raw_text.rtf", "rtf"),
        ("no_ext/pdf_standardized_text", "pdf"),
        ("no_ext/docx_paragraphs_and_tables", "docx"),
    ],
)
def test_documents_are_sniffed_from_bytes_alone(textract: Path, path: str, kind: str) -> None:
    body = (textract / path).read_bytes()
    assert sniff_kind(body) == kind
    # Served as text/html under a page's name: the bytes win.
    assert detect_kind(body, "text/html; charset=utf-8", "index.html") == kind


@pytest.mark.parametrize(
    "path",
    [
        "epub/raw_text.epub",  # a zip, but no kind of ours
        "msg/raw_text.msg",  # an OLE file, but an Outlook message
        "no_ext/msg_standardized_text",
        "html/raw_text.html",
        "txt/raw_text.txt",
        "png/raw_text.png",
        "jpg/raw_text.jpg",
        "csv/raw_text.csv",
    ],
)
def test_other_files_are_not_documents(textract: Path, path: str) -> None:
    assert sniff_kind((textract / path).read_bytes()) is None


def test_a_truncated_download_is_still_sniffed(textract: Path) -> None:
    """The kind comes from the zip's first local headers, not its central directory (at the end)."""
    for path, kind in (("docx/raw_text.docx", "docx"), ("odt/raw_text.odt", "odt"), ("pdf/raw_text.pdf", "pdf")):
        assert sniff_kind((textract / path).read_bytes()[:4096]) == kind


def zip_bytes(entries: list[tuple[str, bytes]], *, streamed: bool = False, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A zip; ``streamed``: written to an unseekable stream, so sizes follow the data."""

    class Unseekable(io.RawIOBase):
        def __init__(self) -> None:
            self.data = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, chunk) -> int:  # type: ignore[no-untyped-def]
            self.data += chunk
            return len(chunk)

    target: io.BytesIO | Unseekable = Unseekable() if streamed else io.BytesIO()
    with zipfile.ZipFile(target, "w", compression) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return bytes(target.data) if isinstance(target, Unseekable) else target.getvalue()


def test_zip_kinds() -> None:
    random_bytes = random.Random(1).randbytes(200_000)  # incompressible: a big first entry
    ooxml = [("[Content_Types].xml", b"<Types/>"), ("_rels/.rels", b"<Relationships/>")]
    assert sniff_kind(zip_bytes([*ooxml, ("xl/workbook.xml", b"<workbook/>")])) == "xlsx"
    # Entries whose sizes are only after their data (streaming writers): found by their signature.
    assert sniff_kind(zip_bytes([*ooxml, ("ppt/presentation.xml", b"<p/>")], streamed=True)) == "pptx"
    # A big entry first is jumped over by its size, without reading it.
    assert (
        sniff_kind(
            zip_bytes(
                [*ooxml, ("docProps/thumbnail.jpeg", random_bytes), ("word/document.xml", b"<w/>")],
                compression=zipfile.ZIP_STORED,
            )
        )
        == "docx"
    )
    # ... unless its size is not in its header and the next entry is too far to look for.
    assert len(random_bytes) > ZIP_SNIFF_GAP
    assert (
        sniff_kind(
            zip_bytes(
                [*ooxml, ("a.bin", random_bytes), ("word/document.xml", b"<w/>")], streamed=True, compression=zipfile.ZIP_STORED
            )
        )
        is None
    )
    # OOXML needs its [Content_Types].xml; ODF its mimetype (even deflated, against the spec).
    assert sniff_kind(zip_bytes([("word/document.xml", b"<w/>")])) is None
    assert sniff_kind(zip_bytes([("mimetype", ODT_MIMETYPE)], compression=zipfile.ZIP_DEFLATED)) == "odt"
    assert sniff_kind(zip_bytes([("mimetype", b"application/epub+zip")])) is None
    assert sniff_kind(zip_bytes([("notes.txt", b"hello")])) is None


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "pdf"),
        (b"<br />\n<b>Warning</b>: session_start() failed\n%PDF-1.4\n", "pdf"),  # a script's warning first
        (b"\xef\xbb\xbf%PDF-1.4\n", "pdf"),
        (b"<html><body><p>Every PDF starts with %PDF-1.4, then objects.</p>", None),  # mentions it
        (b"%PDF", None),
        (b"  {\\rtf1\\ansi hello}", "rtf"),
        (b"{\\rt", None),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1 too short for OLE", None),  # not taken for a file name
        (b"PK\x03\x04", None),
        (b"PK\x03\x04" + b"\xff" * 26 + b"x" * 100, None),
        (b"\xef\xbb\xbfhello", None),  # a text BOM is not a document kind (detect_kind says 'txt')
        (b"", None),
    ],
)
def test_sniff_kind_on_small_bodies(body: bytes, kind: str | None) -> None:
    assert sniff_kind(body) == kind


def test_detect_kind_keeps_text_boms_and_names() -> None:
    assert detect_kind(b"\xef\xbb\xbfhello", None, None) == "txt"
    assert detect_kind(b"\xff\xfeh\x00", "text/html", None) == "txt"
    assert detect_kind(b"<html></html>", "text/html", "index.html") is None


# -- looks_binary ------------------------------------------------------------------------------------------


def test_random_bytes_look_binary() -> None:
    rng = random.Random(20240501)
    for size in (256, 4096, 100_000):
        assert looks_binary(rng.randbytes(size))


def test_images_look_binary_and_pages_do_not(textract: Path) -> None:
    for path in ("png/raw_text.png", "jpg/raw_text.jpg", "gif/raw_text.gif", "mp3/raw_text.mp3"):
        assert looks_binary((textract / path).read_bytes()), path
    for path in ("html/raw_text.html", "html/tables.html", "txt/raw_text.txt", "csv/raw_text.csv", "json/raw_text.json"):
        assert not looks_binary((textract / path).read_bytes()), path


@pytest.mark.parametrize(
    ("body", "binary"),
    [
        (b"", False),
        ("<p>Grüße, 東京 — \t\f\r\n</p>".encode(), False),
        ("<p>Grüße</p>".encode("cp1252"), False),
        ("\ufeff<p>UTF-16 text</p>".encode("utf-16-le"), False),  # with its BOM
        ("\ufeff<p>UTF-16 text</p>".encode("utf-16-be"), False),
        ("<p>UTF-16 text, no BOM</p>".encode("utf-16-le"), True),  # a NUL every other byte
        (b"\xef\xbb\xbf" + b"<p>text</p>" * 20, False),
        ("<p>日本語のテキスト</p>".encode("iso-2022-jp") * 20, False),  # ESC sequences are text
        (b"<html>" + b"x" * 4000 + b"\x00" + b"</html>", False),  # one stray NUL: damage, not binary
        (b"\x00" * 10, True),
        (b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4, True),  # gzip bytes served as text
        (b"\x01\x02\x03 abc", True),
    ],
)
def test_looks_binary(body: bytes, binary: bool) -> None:
    assert looks_binary(body) is binary


def test_looks_binary_reads_a_bounded_prefix() -> None:
    assert not looks_binary(b"<p>text</p>\n" * 1000 + b"\x00" * 1_000_000)


# -- choose_encoding: one invalid byte does not make a UTF-8 page mojibake ----------------------------------


def decoded(content_type: str | None, body: bytes, default: str | None = None) -> str:
    """The page's text as Scrapy gets it, after choose_encoding."""
    encoding = choose_encoding(content_type, body, default) or declared_encoding(content_type, body)
    return html_to_unicode(f"charset={encoding}" if encoding else content_type, body)[1]


PAGE = "<html><head><title>Café</title></head><body><p>Crème brûlée — {}</p></body></html>"


@pytest.mark.parametrize("content_type", ["text/html; charset=utf-8", "text/html", "text/html; charset=iso-8859-1"])
def test_a_page_with_one_0xff_byte_decodes_as_utf8(content_type: str) -> None:
    body = PAGE.format("x").encode("utf-8").replace(b"x", b"\xff")
    assert choose_encoding(content_type, body, None) in (None, "utf-8")
    text = decoded(content_type, body)
    assert "Café" in text and "Crème brûlée —" in text
    assert text.count("\ufffd") == 1


def test_a_page_with_one_0xff_byte_and_a_meta_charset() -> None:
    body = PAGE.format("x").replace("<head>", '<head><meta charset="utf-8">').encode("utf-8").replace(b"x", b"\xff")
    assert "Crème brûlée" in decoded("text/html", body, "windows-1252")


@pytest.mark.parametrize("stray", [b"", b"\xff"])
def test_undeclared_utf8_wins_over_default_charset(stray: bytes) -> None:
    """Issue 53: an undeclared page of valid UTF-8 was decoded with default_charset ("FranÃ§ais"),
    and so was one with a stray invalid byte. UTF-8 when at most one invalid sequence per valid
    character; the default for the others (windows-1252 bytes are invalid UTF-8)."""
    body = PAGE.format("Français x").encode("utf-8").replace(b"x", stray)
    assert choose_encoding("text/html", body, "windows-1252") == "utf-8"
    text = decoded("text/html", body, "windows-1252")
    assert "Crème brûlée — Français" in text and text.count("\ufffd") == len(stray)
    latin = PAGE.format("Français").encode("cp1252")
    assert choose_encoding("text/html", latin, "windows-1252") == "cp1252"
    assert choose_encoding("text/html", b"<p>ascii only</p>", "windows-1252") == "cp1252"
    # more invalid sequences than valid characters: the default's page, with one UTF-8 sign in it
    assert choose_encoding("text/html", latin + "©".encode(), "windows-1252") == "cp1252"


def test_windows_1252_labelled_utf8_is_still_windows_1252() -> None:
    body = PAGE.format("déjà vu").encode("cp1252")
    assert choose_encoding("text/html; charset=utf-8", body, None) == "cp1252"
    assert choose_encoding("text/html; charset=utf-8", body, "iso-8859-15") == "iso8859-15"
    assert "Crème brûlée — déjà vu" in decoded("text/html; charset=utf-8", body)
    # A fallback that cannot decode it either is no better than UTF-8 with replacement.
    assert choose_encoding("text/html; charset=utf-8", b"<p>\xff\xfe\xfd</p>", "euc-jp") is None


def test_mostly_windows_1252_with_a_utf8_footer() -> None:
    """Whichever reading damages fewer characters wins: here the windows-1252 body text."""
    body = PAGE.format("déjà vu").encode("cp1252") + "<footer>© 2024</footer>".encode()
    assert choose_encoding("text/html; charset=utf-8", body, None) == "cp1252"


def test_the_sample_starts_at_the_first_non_ascii_byte() -> None:
    """An all-ASCII head (inline scripts, styles) longer than the sample does not hide the text."""
    head = b"<script>" + b"var x = 1;\n" * (SAMPLE_BYTES // 10) + b"</script>"
    assert choose_encoding("text/html; charset=utf-8", head + PAGE.format("déjà").encode("cp1252"), None) == "cp1252"
    assert choose_encoding("text/html", head + PAGE.format("x").encode("utf-8").replace(b"x", b"\xff"), None) == "utf-8"
    assert choose_encoding("text/html", head + PAGE.format("ok").encode("utf-8"), None) is None  # Scrapy detects it


def test_a_character_cut_by_the_sample_is_not_invalid() -> None:
    body = "é".encode() * SAMPLE_BYTES  # the sample ends in the middle of a character
    assert choose_encoding("text/html", body, None) == "utf-8"
    assert choose_encoding("text/html; charset=utf-8", body, None) is None
