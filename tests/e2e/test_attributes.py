"""AttributesPipeline alone: a fetched document becomes its Solr document's fields.

Built as Scrapy builds it (``build_from_crawler``) on a crawler of ``tests.components``; items are
what the spider yields, made from public Scrapy responses."""

from __future__ import annotations

import asyncio
import io

import docx
import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler

from searchcrawl.content.clean_text import MAX_TERM_BYTES
from searchcrawl.crawl.exceptions import NotIndexed
from searchcrawl.crawl.items import CrawledDocument, Fetched
from searchcrawl.crawl.pipelines.attributes import AttributesPipeline, page_count
from searchcrawl.crawl.pipelines.checksum import text_checksum
from searchcrawl.rules.lifecycle import Event
from searchcrawl.rules.status_codes import Status
from tests.content.test_convert import _odf
from tests.crawl.conftest import crawler_of  # noqa: F401 - the fixture
from tests.e2e.test_tika_client import fake_tika, zip_of  # noqa: F401,F811 - a fixture

SOURCE = 'seeds = ["http://h.test/"]\n'
PAGE = b"""<html lang="en"><head><title> Cats  and dogs </title>
<meta name="keywords" content="cats, dogs">
<meta name="author" content="Ann Writer">
<meta name="revision" content="7">
</head><body><header><nav><a href="/">Home</a> <a href="/about.html">About us</a></nav></header>
<main><article><h1>Cats</h1>
<p>Cats and dogs have lived with people for thousands of years, and they still do today. Many families love them.</p>
<p>A second paragraph tells how cats and dogs came to live in houses, long ago, near the first farms.</p>
</article></main><footer><p>Page generated on 2024-05-01 12:00 by the CMS</p></footer></body></html>"""
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def page(url: str, body: bytes = PAGE, **headers: str) -> CrawledDocument:
    """The spider's item of an HTML page: its parsed tree (shared with link extraction)."""
    response = HtmlResponse(url, body=body, headers={"Content-Type": "text/html", **headers}, request=Request(url))
    return CrawledDocument(
        "unit", url, 2, Fetched({"content-type": "text/html"}, tree=response.selector.root), record={"etag": '"e1"'}
    )


def run(pipeline: AttributesPipeline, item: CrawledDocument) -> CrawledDocument:
    return asyncio.run(pipeline.process_item(item))


def test_an_html_page_becomes_a_solr_document(crawler_of) -> None:
    pipeline = build_from_crawler(AttributesPipeline, crawler_of())
    item = run(pipeline, page("http://h.test/pets.html"))
    fields = item.converted.fields
    assert fields["id"] == "unit!http://h.test/pets.html"
    assert (fields["url"], fields["display_url"], fields["source"], fields["host"]) == (
        "http://h.test/pets.html",
        "http://h.test/pets.html",
        "unit",
        "h.test",
    )
    assert (fields["mimetype"], fields["title"], fields["author"], fields["language"]) == (
        "text/html",
        "Cats and dogs",
        "Ann Writer",
        "en",
    )
    assert fields["subject"] == ["cats", "dogs"]
    assert "thousands of years" in fields["content"] and "crawled_at" in fields
    assert "description" not in fields  # no description fallback unless the source asks for it
    assert "revision_s" not in fields  # not in the source's attribute mapping
    # what the checksum is taken over: title and text; the tree is let go
    assert item.converted.checksum_basis == f"Cats and dogs\n{fields['content']}"
    assert item.fetched == Fetched({"content-type": "text/html"})  # its content let go once read, its headers kept


def test_the_sources_attribute_mapping_description_fallback_and_display_urls(crawler_of) -> None:
    source = (
        'seeds = ["http://h.test/"]\n'
        'attributes = { revision = "version" }\n'
        'search_attributes = { version = "int" }\n'
        "description_fallback = true\n"
        "detect_language = false\n"
        'display_urls = [{ prefix = "http://h.test/", replace = "https://www.h.test/" }]\n'
    )
    pipeline = build_from_crawler(AttributesPipeline, crawler_of(source))
    body = PAGE.replace(b' lang="en"', b"")
    fields = run(pipeline, page("http://h.test/pets.html", body)).converted.fields
    assert fields["version_i"] == 7
    # the text's first 300 characters, cut at a word
    assert fields["content"].startswith(fields["description"]) and 200 < len(fields["description"]) <= 300
    assert "language" not in fields  # none declared, and detection is off
    assert fields["display_url"] == "https://www.h.test/pets.html" and fields["url"] == "http://h.test/pets.html"


def test_main_text_is_the_checksum_basis_when_the_source_says_so(crawler_of) -> None:
    pipeline = build_from_crawler(AttributesPipeline, crawler_of(SOURCE + 'checksum_of = "main_text"\n'))
    item = run(pipeline, page("http://h.test/pets.html"))
    assert item.converted.checksum_basis.startswith("Cats and dogs\n")
    # navigation and footer (a generation date) are not what a change is judged on ...
    assert "About us" not in item.converted.checksum_basis and "2024-05-01" not in item.converted.checksum_basis
    assert "thousands of years" in item.converted.checksum_basis
    # ... while the indexed text is the page less its landmarks (main_text = false: the regions')
    assert "About us" not in item.converted.fields["content"] and "thousands of years" in item.converted.fields["content"]
    whole = build_from_crawler(
        AttributesPipeline, crawler_of(SOURCE + 'checksum_of = "main_text"\n[regions]\nlandmarks = false\n')
    )
    item = run(whole, page("http://h.test/pets.html"))
    assert "About us" in item.converted.fields["content"] and "2024-05-01" in item.converted.fields["content"]


def test_a_plain_text_document(crawler_of) -> None:
    pipeline = build_from_crawler(AttributesPipeline, crawler_of())
    item = CrawledDocument(
        "unit",
        "http://h.test/notes/readme.txt",
        1,
        Fetched({"content-type": "text/plain", "content-language": "DE"}, text="  Hallo Welt  "),
    )
    item = run(pipeline, item)
    assert (item.converted.fields["title"], item.converted.fields["content"], item.converted.fields["language"]) == (
        "readme.txt",
        "Hallo Welt",
        "de",
    )
    assert item.fetched.text is None and item.converted.checksum_basis == "readme.txt\nHallo Welt"


def test_a_page_without_text_or_title_is_not_indexed_with_its_outcome(crawler_of) -> None:
    pipeline = build_from_crawler(AttributesPipeline, crawler_of())
    with pytest.raises(NotIndexed) as raised:
        run(pipeline, page("http://h.test/empty.html", b"<html><body><script>x()</script></body></html>"))
    outcome = raised.value.outcome
    assert (outcome.event, outcome.status, outcome.reason, outcome.depth) == (Event.GONE, Status.EMPTY, "no text to index", 2)
    assert outcome.columns == {"etag": '"e1"'}  # what the fetch learned goes with the outcome


def test_office_files_are_converted_in_workers_and_raw_checksums_take_the_bytes(crawler_of) -> None:
    document = docx.Document()
    document.core_properties.title = "Quarterly report"
    document.core_properties.author = "Ann Writer"
    document.add_paragraph("Revenue grew in every region this quarter.")
    data = io.BytesIO()
    document.save(data)
    crawler = crawler_of(SOURCE + 'checksum_of = "raw"\n', SEARCHCRAWL_CONVERT_WORKERS=1)
    pipeline = build_from_crawler(AttributesPipeline, crawler)
    item = run(
        pipeline, CrawledDocument("unit", "http://h.test/q.docx", 1, Fetched({"content-type": DOCX}, body=data.getvalue()))
    )
    fields = item.converted.fields
    assert (fields["title"], fields["author"], fields["document_kind_s"]) == ("Quarterly report", "Ann Writer", "docx")
    assert fields["content"] == "Revenue grew in every region this quarter." and fields["mimetype"] == DOCX
    assert item.converted.checksum_basis == data.getvalue() and item.fetched.body is None
    assert text_checksum(item.converted.checksum_basis) != text_checksum(f"Quarterly report\n{fields['content']}")

    broken = CrawledDocument(
        "unit", "http://h.test/broken.pdf", 1, Fetched({"content-type": "application/pdf"}, body=b"%PDF-1.4 no more")
    )
    with pytest.raises(NotIndexed) as raised:
        run(pipeline, broken)
    assert (raised.value.outcome.event, raised.value.outcome.status) == (Event.GONE, Status.CONVERSION_FAILED)
    assert raised.value.outcome.reason.startswith("corrupt: ")


def test_surrogates_controls_and_a_40_kb_author_reach_solr_clean(crawler_of, solr) -> None:
    """An RTF file with a character beyond the BMP written as two escapes, a lone surrogate, a
    control character and a 40 KB author: before, the checksum raised UnicodeEncodeError (the
    document was lost) and Solr would refuse the immense author term."""
    author = "A" * 40_000
    body = (
        rb"{\rtf1\ansi{\info{\title Odd text}{\author " + author.encode() + rb"}}"
        rb"Smile \u-10179?\u-8704? here, a lone \u-10179? there, a bell \u7? too.\par}"
    )
    crawler = crawler_of(SEARCHCRAWL_CONVERT_WORKERS=1)
    item = run(
        build_from_crawler(AttributesPipeline, crawler),
        CrawledDocument("unit", "http://h.test/odd.rtf", 1, Fetched({}, body=body)),
    )
    fields = dict(item.converted.fields)
    assert "Smile \U0001f600 here, a lone \ufffd there, a bell  too." in fields["content"]
    assert fields["author"] == author[:MAX_TERM_BYTES]
    text_checksum(item.converted.checksum_basis)  # raised UnicodeEncodeError before
    solr.add([fields])
    found = solr.search(f'id:"{fields["id"]}"', fl="author,content")
    assert found.hits == 1 and "\U0001f600" in found.docs[0]["content"]


def test_the_same_odd_document_through_tika(crawler_of, solr, tika_url) -> None:
    """The RTF above (with the font table Tika's parser needs), converted by a real Tika server:
    as clean when it reaches Solr."""
    author = "A" * 40_000
    body = (
        rb"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0 Arial;}}{\info{\title Odd text}{\author " + author.encode() + rb"}}"
        rb"\f0 Smile \u-10179?\u-8704? here, a lone \u-10179? there, a bell \u7? too.\par}"
    )
    pipeline = build_from_crawler(AttributesPipeline, crawler_of(SEARCHCRAWL_TIKA_URL=tika_url))
    fields = dict(
        run(pipeline, CrawledDocument("unit", "http://h.test/odd-tika.rtf", 1, Fetched({}, body=body))).converted.fields
    )
    assert "Smile \U0001f600 here, a lone \ufffd there" in fields["content"] and "\x07" not in fields["content"]
    assert all(not 0xD800 <= ord(ch) <= 0xDFFF for ch in fields["content"])
    assert fields["author"] == author[:MAX_TERM_BYTES] and fields["title"] == "Odd text"
    solr.add([fields])
    assert solr.search(f'id:"{fields["id"]}"').hits == 1


def textract(path: str) -> bytes:
    """A file of the textract corpus (the test is skipped when the corpus is absent)."""
    import tarfile

    from tests.conftest import corpus

    with tarfile.open(corpus("textract-tests.tar.xz")) as tar:
        member = tar.extractfile(f"textract-tests/tests/{path}")
        assert member is not None
        return member.read()


def test_a_document_without_text_is_indexed_with_its_metadata_and_name(crawler_of) -> None:
    """A scan without OCR (and any file without text): its title and file name, and a checksum over
    its bytes, so that two such files are never duplicates for their empty text alone."""
    pipeline = build_from_crawler(AttributesPipeline, crawler_of(SEARCHCRAWL_CONVERT_WORKERS=1))
    body = textract("pdf/ocr_text.pdf")  # a scan: no text layer
    item = run(
        pipeline, CrawledDocument("unit", "http://h.test/a/scan.pdf", 1, Fetched({"content-type": "application/pdf"}, body=body))
    )
    assert item.converted.fields["title"] == "00463065.tif" and "content" not in item.converted.fields
    assert item.note == "indexed without text: its metadata and file name" and item.converted.checksum_basis == body
    other = run(pipeline, CrawledDocument("unit", "http://h.test/b/scan.pdf", 1, Fetched({}, body=body + b"\n%%EOF\n")))
    assert text_checksum(other.converted.checksum_basis) != text_checksum(item.converted.checksum_basis)

    strict = build_from_crawler(AttributesPipeline, crawler_of(SOURCE + "index_without_text = false\n"))
    with pytest.raises(NotIndexed) as raised:
        run(strict, CrawledDocument("unit", "http://h.test/scan.pdf", 1, Fetched({}, body=body)))
    assert raised.value.outcome.status == Status.EMPTY


def test_ocr_through_tika_reads_an_image_when_the_source_asks(crawler_of, tika_url) -> None:
    """(The scanned PDF, slower, is read in tests/e2e/test_documents.py.)"""
    body = textract("png/standardized_text.png")
    source = SOURCE + 'ocr = true\nocr_languages = ["eng"]\n'
    pipeline = build_from_crawler(AttributesPipeline, crawler_of(source, SEARCHCRAWL_TIKA_URL=tika_url))
    item = run(pipeline, CrawledDocument("unit", "http://h.test/fox.png", 1, Fetched({"content-type": "image/png"}, body=body)))
    assert "quick brown fox" in item.converted.fields["content"] and item.note is None
    without = build_from_crawler(AttributesPipeline, crawler_of(SEARCHCRAWL_TIKA_URL=tika_url))  # ocr is off by default
    item = run(without, CrawledDocument("unit", "http://h.test/fox.png", 1, Fetched({"content-type": "image/png"}, body=body)))
    assert "content" not in item.converted.fields and item.converted.fields["title"] == "fox.png"
    assert item.note == "indexed without text: its metadata and file name"


def converter_failure(crawler_of, tika_url: str):  # type: ignore[no-untyped-def]
    """The outcome of a PDF whose fetch learned a new ETag, when its conversion by ``tika_url`` fails."""
    pipeline = build_from_crawler(AttributesPipeline, crawler_of(SEARCHCRAWL_TIKA_URL=tika_url))
    item = CrawledDocument("unit", "http://h.test/q.pdf", 1, Fetched({}, body=b"%PDF-1.4 x"), record={"etag": '"new"'})
    with pytest.raises(NotIndexed) as raised:
        run(pipeline, item)
    return raised.value.outcome


def test_an_unreachable_tika_fails_the_url_without_counting_or_keeping_the_fetch(crawler_of) -> None:
    from tests.conftest import free_port

    outcome = converter_failure(crawler_of, f"http://127.0.0.1:{free_port()}/")
    # no validators of this fetch (columns): the next crawl fetches it again
    assert (outcome.event, outcome.status, outcome.counted, dict(outcome.columns)) == (
        Event.FAILED,
        Status.CONVERTER_UNAVAILABLE,
        False,
        {},
    )
    assert outcome.reason.startswith("Tika unreachable at http://127.0.0.1:")


def picture_deck(image: bytes) -> bytes:
    """A PowerPoint deck of one slide holding only a picture."""
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])  # the blank layout
    slide.shapes.add_picture(io.BytesIO(image), Inches(1), Inches(1))
    data = io.BytesIO()
    deck.save(data)
    return data.getvalue()


def test_an_image_only_deck_through_tika_is_indexed_by_name(crawler_of, tika_url) -> None:
    pipeline = build_from_crawler(AttributesPipeline, crawler_of(SEARCHCRAWL_TIKA_URL=tika_url))
    image = textract("png/raw_text.png")
    deck = picture_deck(image)
    item = run(pipeline, CrawledDocument("unit", "http://h.test/a/deck.pptx", 1, Fetched({}, body=deck)))
    assert "content" not in item.converted.fields, item.converted.fields.get("content")
    assert (item.converted.fields["title"], item.converted.fields["document_kind_s"]) == ("deck.pptx", "pptx")
    assert item.note == "indexed without text: its metadata and file name" and item.converted.checksum_basis == deck


def test_a_document_that_crashes_the_converter_twice_counts_as_a_transient_failure(crawler_of, fake_tika) -> None:  # noqa: F811
    """Not removed at once (it may be the converter's trouble as much as the document's): a
    counted failure, the document leaves only after max_failures crawls."""
    outcome = converter_failure(crawler_of, fake_tika(status=500, version=True))
    assert (outcome.event, outcome.status, outcome.counted) == (Event.FAILED, Status.CONVERSION_FAILED, True)
    assert outcome.reason.startswith("crashed: Tika failed on it twice") and not outcome.columns


def test_a_converted_file_without_a_title_of_its_own_is_titled_by_its_decoded_name(crawler_of) -> None:
    """Issue 53: the file name standing in for a title was percent-encoded (``Quartals%C3%BCbersicht%202024.docx``)."""
    document = docx.Document()
    document.add_paragraph("Revenue grew in every region this quarter.")
    data = io.BytesIO()
    document.save(data)
    pipeline = build_from_crawler(AttributesPipeline, crawler_of(SEARCHCRAWL_CONVERT_WORKERS=1))
    url = "http://h.test/Quartals%C3%BCbersicht%202024.docx"
    item = run(pipeline, CrawledDocument("unit", url, 1, Fetched({"content-type": DOCX}, body=data.getvalue())))
    assert item.converted.fields["title"] == "Quartalsübersicht 2024.docx"


def picture_files(text: str) -> tuple[bytes, bytes]:
    """A Word file of one picture and a PowerPoint deck of two, unrelated but for ``text`` (their
    only words) and their title, "Presentation"."""
    import pptx
    from pptx.util import Inches

    image = textract("png/raw_text.png")
    word = docx.Document()
    word.core_properties.title = "Presentation"
    word.add_picture(io.BytesIO(image))
    word.add_paragraph(text)
    word_bytes = io.BytesIO()
    word.save(word_bytes)
    deck = pptx.Presentation()
    deck.core_properties.title = "Presentation"
    for _ in range(2):
        slide = deck.slides.add_slide(deck.slide_layouts[6])  # the blank layout
        slide.shapes.add_picture(io.BytesIO(image), Inches(1), Inches(1))
    slide.shapes.add_textbox(Inches(1), Inches(5), Inches(2), Inches(1)).text_frame.text = text
    deck_bytes = io.BytesIO()
    deck.save(deck_bytes)
    return word_bytes.getvalue(), deck_bytes.getvalue()


@pytest.mark.parametrize("text", ["1", " \u00a0 ", "Figure 1"])
def test_files_of_pictures_with_a_few_characters_are_not_duplicates_through_tika(crawler_of, tika_url, text) -> None:
    """Issue 53: with Tika, a Word file of one picture was "duplicate of" an unrelated deck of two
    (the same title, a text of whitespace or a few characters, the same checksum). A text of
    fewer than MIN_TEXT_CHARS letters or digits does not tell one document from another: their
    checksums are over their bytes; the same bytes are still duplicates. Such a text is indexed
    (issue 72 point 12); whitespace alone is none: documents without text."""
    pipeline = build_from_crawler(AttributesPipeline, crawler_of(SEARCHCRAWL_TIKA_URL=tika_url))
    word, deck = picture_files(text)
    items = [
        run(pipeline, CrawledDocument("unit", url, 1, Fetched({}, body=body)))
        for url, body in (
            ("http://h.test/a/pic.docx", word),
            ("http://h.test/b/pics.pptx", deck),
            ("http://h.test/c/pics.pptx", deck),
        )
    ]
    assert [item.converted.fields["title"] for item in items] == ["Presentation"] * 3
    kept = text.strip() or None
    assert [item.converted.fields.get("content") for item in items] == [kept] * 3
    assert [item.note for item in items] == [None if kept else "indexed without text: its metadata and file name"] * 3
    checksums = [text_checksum(item.converted.checksum_basis) for item in items]
    assert checksums[0] != checksums[1] and checksums[1] == checksums[2]  # the same bytes are duplicates


def test_a_short_text_that_names_a_document_is_its_text(crawler_of, tika_url) -> None:
    """MIN_TEXT_CHARS letters or digits are enough: a one-line file keeps its text and its checksum over it."""
    pipeline = build_from_crawler(AttributesPipeline, crawler_of(SEARCHCRAWL_TIKA_URL=tika_url))
    word, _deck = picture_files("Budget 2025")
    item = run(pipeline, CrawledDocument("unit", "http://h.test/a/pic.docx", 1, Fetched({}, body=word)))
    assert item.converted.fields["content"] == "Budget 2025" and item.note is None
    assert item.converted.checksum_basis == "Presentation\nBudget 2025"


def rtf(text: str, font: str = "Arial") -> bytes:
    """An RTF file of ``text`` as WordPad writes one (cp1252, its other characters escaped)."""
    escaped = "".join(char if char.isascii() else f"\\'{char.encode('cp1252')[0]:02x}" for char in text)
    head = "{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0\\fswiss " + font + ";}}"
    return (head + "\\pard\\f0\\fs22 " + escaped + "\\par}").encode("ascii")


def odt(text: str) -> bytes:
    """An OpenDocument text of one paragraph (titled "Deck" by its metadata)."""
    return _odf("application/vnd.oasis.opendocument.text", f"<office:text><text:p>{text}</text:p></office:text>")


SHORT_FILES = {  # name: (bytes, the text indexed, or None: a document without text)
    "uebersicht.rtf": (rtf("\u00dcbersicht"), "\u00dcbersicht"),
    "test-text.odt": (odt("Test text"), "Test text"),
    "a/test.rtf": (rtf("Test"), "Test"),
    "b/test.rtf": (rtf("Test", font="Calibri"), "Test"),  # the same word, other bytes: another document
    "c/test.rtf": (rtf("Test"), "Test"),  # a's bytes: a duplicate of it
    "bullets.rtf": (rtf("\u2022 \u2022 \u2022"), None),  # no letter or digit: no text
}


@pytest.mark.parametrize("tika", [False, True], ids=["python", "tika"])
def test_a_one_word_file_is_its_text_and_its_bytes_are_its_identity(crawler_of, request, tika: bool) -> None:
    """Issue 72 point 12: a converted text of fewer than MIN_TEXT_CHARS letters or digits was
    dropped (a one-word RTF, "\u00dcbersicht", or a two-word ODT, "Test text", was indexed without
    text and could not be found by its words). It is indexed now, by either converter; only its
    checksum is over its bytes, so two files that both say "Test" are two documents and a copy is
    a duplicate. A text without a letter or digit is still no text."""
    settings = {"SEARCHCRAWL_TIKA_URL": request.getfixturevalue("tika_url")} if tika else {"SEARCHCRAWL_CONVERT_WORKERS": 1}
    pipeline = build_from_crawler(AttributesPipeline, crawler_of(**settings))
    items = {
        name: run(pipeline, CrawledDocument("unit", f"http://h.test/{name}", 1, Fetched({}, body=body)))
        for name, (body, _text) in SHORT_FILES.items()
    }
    for name, (body, text) in SHORT_FILES.items():
        item = items[name]
        assert item.converted.fields.get("content") == text, name
        assert item.converted.checksum_basis == body, name  # a short text, or none: the bytes
        assert item.note == (None if text else "indexed without text: its metadata and file name"), name
    checksums = {name: text_checksum(item.converted.checksum_basis) for name, item in items.items()}
    assert checksums["a/test.rtf"] != checksums["b/test.rtf"] and checksums["a/test.rtf"] == checksums["c/test.rtf"]


def test_a_zip_bomb_through_tika_gets_a_status_not_an_index_entry(crawler_of, tika_url) -> None:
    """Issue 53: 5 million U+FFFD were indexed as a zip bomb's text; now status 921, 'not_text'."""
    pipeline = build_from_crawler(AttributesPipeline, crawler_of(SEARCHCRAWL_TIKA_URL=tika_url))
    with pytest.raises(NotIndexed) as raised:
        run(pipeline, CrawledDocument("unit", "http://h.test/bomb.zip", 1, Fetched({}, body=zip_of({"nul.txt": 100}))))
    outcome = raised.value.outcome
    assert (outcome.event, outcome.status) == (Event.GONE, Status.CONVERSION_FAILED)
    assert outcome.reason.startswith("not_text: ") and "U+FFFD" in outcome.reason


def test_a_page_count_beyond_solrs_int_or_not_a_number_is_left_out() -> None:
    """A converter's page count is indexed as page_count_i: beyond Solr's int it is left out
    (Solr would store it wrapped), and text that is no number no longer fails the document."""
    assert page_count("12") == 12
    assert page_count("99999999999") is None
    assert page_count("twelve") is None and page_count(None) is None
