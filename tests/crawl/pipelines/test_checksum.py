"""ChecksumPipeline alone: the SHA-256 that change and duplicate detection compare.

It has no ``from_crawler``; ``build_from_crawler`` builds it as Scrapy does (``cls()``)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy.utils.misc import build_from_crawler

from searchcrawl.access.tokens import Access, Grant
from searchcrawl.crawl.items import ConvertedDocument, CrawledDocument
from searchcrawl.crawl.pipelines.attributes import checksum_basis
from searchcrawl.crawl.pipelines.checksum import ChecksumPipeline, access_update, content_of, versioned
from tests.components import close_stores, source_crawler


@pytest.fixture
def pipeline(tmp_path: Path) -> Iterator[ChecksumPipeline]:
    crawler = source_crawler(tmp_path)
    yield build_from_crawler(ChecksumPipeline, crawler)
    close_stores(crawler)


def item(basis: str | bytes = "", **fields: object) -> CrawledDocument:
    converted = ConvertedDocument(fields, basis, "http://h.test/a.html")
    return CrawledDocument("unit", "http://h.test/a.html", 0, converted=converted)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_checksum_is_taken_over_the_basis_the_attributes_pipeline_chose(pipeline: ChecksumPipeline) -> None:
    done = pipeline.process_item(item("Title\nSome text é", content="other"))
    assert done.fields["checksum"] == sha256("Title\nSome text é".encode())
    assert done.converted is not None and "checksum" not in done.converted.fields  # the attributes stage's result stays
    assert done.fields["content"] == "other"
    with pytest.raises(TypeError):  # a frozen document for Solr: a later stage builds a new one
        done.fields["language"] = "en"  # type: ignore[index]


def test_the_text_digest_covers_what_the_passages_are_cut_from_whatever_the_checksum_covers(pipeline: ChecksumPipeline) -> None:
    """Issue 91 (review of point 4): with ``checksum_of = "main_text"`` the checksum is the main
    text's, but the passages are cut from the whole content (title, content, outline): a sentence
    removed from a sidebar keeps the checksum, and changes the digest the passages are compared by."""
    main = "Title\nThe main text"
    before = pipeline.process_item(item(main, title="Title", content="The main text. Sidebar: the password is X1.")).fields
    after = pipeline.process_item(item(main, title="Title", content="The main text. Sidebar: ask reception.")).fields
    assert before["checksum"] == after["checksum"] and before["text_digest"] != after["text_digest"]
    again = pipeline.process_item(item("other basis", title="Title", content="The main text. Sidebar: ask reception.")).fields
    assert again["text_digest"] == after["text_digest"]  # the text alone, not the checksum's basis
    renamed = pipeline.process_item(item(main, title="Other", content="The main text. Sidebar: ask reception.")).fields
    headed = pipeline.process_item(item(main, title="Title", content="The main text. Sidebar: ask reception.", outline=["The"]))
    assert len({after["text_digest"], renamed["text_digest"], headed.fields["text_digest"]}) == 3


def test_raw_bytes_are_taken_as_they_are(pipeline: ChecksumPipeline) -> None:
    assert pipeline.process_item(item(b"%PDF-1.7 \x00\xff")).fields["checksum"] == sha256(b"%PDF-1.7 \x00\xff")


def test_without_a_basis_the_content_or_nothing(pipeline: ChecksumPipeline) -> None:
    assert pipeline.process_item(item(content="only text")).fields["checksum"] == sha256(b"only text")
    assert pipeline.process_item(item()).fields["checksum"] == sha256(b"")


def test_same_basis_same_checksum_different_basis_different(pipeline: ChecksumPipeline) -> None:
    first, again, changed = (pipeline.process_item(item(text)).fields["checksum"] for text in ("a\nb", "a\nb", "a\nc"))
    assert first == again != changed


def test_a_short_text_is_indexed_but_only_the_same_bytes_make_a_duplicate(pipeline: ChecksumPipeline) -> None:
    """Issue 72 point 12: a converted file of fewer than MIN_TEXT_CHARS letters or digits keeps its
    text (AttributesPipeline), and its identity is its bytes: two different files that both say
    "Test" (and are titled by their one name) are two documents; the same file twice is one."""
    one, other = rb"{\rtf1\ansi Test\par}", rb"{\rtf1\ansi\deff0 Test\par}"
    checksums = [
        pipeline.process_item(item(checksum_basis("Test", "Test", body, raw=False))).fields["checksum"]
        for body in (one, other, one)
    ]
    assert checksums[0] != checksums[1] and checksums[0] == checksums[2] == sha256(one)
    assert checksum_basis("Overview", "\u00dcbersicht", one, raw=False) == one
    assert checksum_basis("Scan", "", one, raw=False) == one  # no text at all: the bytes too
    # ten letters or digits identify a file: its title and text, whatever its bytes
    assert checksum_basis("Budget", "Budget 2025", one, raw=False) == "Budget\nBudget 2025"
    assert checksum_basis("Budget", "Budget 2025", other, raw=False) == "Budget\nBudget 2025"
    assert checksum_basis("Budget", "Budget 2025", one, raw=True) == one  # checksum_of = "raw"
    # a page or an agent's text (no bytes converted): its title and text, however short
    assert checksum_basis("Home", "Test", None, raw=False) == "Home\nTest"


def test_a_restricted_documents_checksum_holds_its_readers_and_its_fields_are_added(pipeline) -> None:
    public = pipeline.process_item(item("same text"))
    content = public.fields["checksum"]
    assert content == sha256(b"same text") and "access_allow" not in public.fields  # no access: as before
    opened = item("same text")
    opened.access = Access.public("test")
    assert pipeline.process_item(opened).fields["checksum"] == content  # public: the content's alone
    assert opened.fields["access_allow"] == ["public"] and opened.fields["access_deny"] == []
    hr, board = item("same text"), item("same text")
    hr.access, board.access = Access.of([Grant("group:hr", "t")]), Access.of([Grant("group:board", "t")])
    first, second = pipeline.process_item(hr).fields["checksum"], pipeline.process_item(board).fields["checksum"]
    assert first != second  # other readers: not duplicates, and a change
    assert content_of(first) == content_of(second) == content and first == versioned(content, hr.access)
    assert hr.fields["access_allow"] == ["group:hr"] and hr.fields["access_allow_1"] == ["public"]


def test_an_access_update_is_an_atomic_update_solr_applies_only_to_a_document_it_holds() -> None:
    access = Access.of([Grant("group:hr", "t")], [Grant("user:intern", "t")])
    update = access_update("unit", "http://h.test/a.html", "c+d", access)
    assert next(iter(update)) == "id" and update["id"] == "unit!http://h.test/a.html"
    assert update["access_allow"] == {"set": ["group:hr"]} and update["access_deny"] == {"set": ["user:intern"]}
    assert update["access_allow_3"] == {"set": ["public"]} and update["checksum"] == "c+d" and update["_version_"] == 1
    assert update["passages_model"] == {"set": None}  # its passages to be set anew (semantic/passage_index.py)
    assert update["anchor"] == {"set": None}  # counted for its old readers: the push sets it for the new ones
    assert set(update) == {
        "id",
        "url",
        "checksum",
        "_version_",
        "passages_model",
        "anchor",
        *access.fields(),
    }  # nothing of its content
