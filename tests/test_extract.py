"""Attributes from HTML and headers (plain functions, real lxml parsing)."""

from lxml import html

from searchcrawl.extract import html_attributes, http_date_to_iso, solr_document, split_keywords, text_attributes
from searchcrawl.pipelines.checksum import text_checksum

PAGE = b"""<!DOCTYPE html><html lang="en-GB"><head>
<title>  Travel
 policy </title>
<meta name="Description" content="How to book travel">
<meta name="keywords" content="travel, expenses,  trains">
<meta name="DC.Subject" content="booking; travel">
<meta name="dc.creator" content="Ann Smith">
</head><body><nav>Home</nav><p>Book <b>trains</b> first.</p><script>var x = 1;</script></body></html>"""


def test_html_attributes() -> None:
    attributes = html_attributes(html.document_fromstring(PAGE), {})
    assert attributes["title"] == "Travel policy"
    assert attributes["description"] == "How to book travel"
    assert attributes["subject"] == ["travel", "expenses", "trains", "booking"]
    assert attributes["author"] == "Ann Smith"
    assert attributes["language"] == "en-gb"
    assert "Book trains first." in attributes["content"]
    assert "var x" not in attributes["content"]
    assert "Travel policy" not in attributes["content"]


def test_headers_fill_in_and_documents_are_clean() -> None:
    tree = html.document_fromstring(b"<html><body><p>x</p></body></html>")
    headers = {"content-type": "text/html; charset=utf-8", "content-language": "de, en",
               "last-modified": "Wed, 21 Oct 2015 07:28:00 GMT"}
    attributes = html_attributes(tree, headers)
    assert attributes["language"] == "de"
    assert attributes["description"] is None  # no body-text fallback by default
    document = solr_document("s", "http://Host.example.com:81/a", attributes, headers)
    assert document["id"] == document["url"] == document["display_url"] == "http://Host.example.com:81/a"
    assert document["host"] == "host.example.com"
    assert document["mimetype"] == "text/html"
    assert document["last_modified"] == "2015-10-21T07:28:00Z"
    assert "description" not in document and "subject" not in document
    assert document["crawled_at"].endswith("Z")


def test_small_helpers() -> None:
    assert http_date_to_iso("not a date") is None
    assert split_keywords("a;b") == ["a", "b"]
    assert text_attributes("hello\n", "http://h/docs/notes.txt", {})["title"] == "notes.txt"
    assert text_checksum("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
