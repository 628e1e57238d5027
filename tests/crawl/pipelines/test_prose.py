"""A page's prose (its text less its lists that are only links) beside its content, through the
attributes and checksum pipelines: what snippets and passages are made of, never what is searched
or checksummed (issue 91, point 19, and its review)."""

from __future__ import annotations

import asyncio
from typing import Any

from lxml import html
from scrapy.utils.misc import build_from_crawler

from searchcrawl.content.extract import body_of
from searchcrawl.content.regions import ContentRegions
from searchcrawl.crawl.items import CrawledDocument, Fetched
from searchcrawl.crawl.pipelines.attributes import AttributesPipeline
from searchcrawl.crawl.pipelines.checksum import ChecksumPipeline

SOURCE = 'seeds = ["http://h.test/"]\n'
POLICIES = """<html><head><title>Policies</title></head><body><h1>Policies</h1>
<p>Every policy of the company, with receipts attached.</p>
<ul><li><a href="travel.html">Travel policy</a></li><li><a href="mailto:hr@h.test">hr@h.test</a></li></ul>
</body></html>"""


def crawled(crawler: Any, page: str, url: str = "http://h.test/policies.html", spider_read: bool = False) -> dict[str, Any]:
    """The Solr fields of ``page`` once through the attributes and checksum pipelines (its text
    read by the pipeline, or by the spider's soft-error markers before it: ``spider_read``)."""
    tree = html.fromstring(page)
    read = ContentRegions().text(body_of(tree), url) if spider_read else None
    item = CrawledDocument("unit", url, 0, Fetched({"content-type": "text/html"}, tree=tree, region_text=read))
    item = asyncio.run(build_from_crawler(AttributesPipeline, crawler).process_item(item))
    return build_from_crawler(ChecksumPipeline, crawler).process_item(item).fields


def test_link_lists_are_searched_and_checksummed_and_left_out_of_the_prose(crawler_of) -> None:
    """Review of issue 91: ``link_lists`` dropped the lists from the content itself, so the words
    query lost them (a policy index, a list of mailto: links) and listing pages that differ only in
    their links were one content (duplicates). They are in the content and its checksum; the prose,
    what snippets are highlighted from and passages cut from, leaves them out."""
    crawler = crawler_of()
    for spider_read in (False, True):
        fields = crawled(crawler, POLICIES, spider_read=spider_read)
        assert "Travel policy" in fields["content"] and "hr@h.test" in fields["content"]
        assert fields["prose"] == "Policies Every policy of the company, with receipts attached."
        assert fields["has_prose"] is True
    other = crawled(crawler, POLICIES.replace("travel.html", "security.html").replace("Travel", "Security"))
    assert other["checksum"] != fields["checksum"] and other["prose"] == fields["prose"]
    plain = crawled(crawler, "<html><body><p>Nothing but a sentence, with <a href='a.html'>a link</a>.</p></body></html>")
    assert "prose" not in plain and "has_prose" not in plain  # its prose is its content: not stored twice


def test_a_content_not_the_regions_text_has_no_prose(crawler_of) -> None:
    """``main_text`` replaces the content by trafilatura's: the regions' prose is not of it."""
    fields = crawled(crawler_of(SOURCE + "main_text = true\n"), POLICIES)
    assert "prose" not in fields and "has_prose" not in fields


def test_a_pages_meta_tags_are_read_once(crawler_of, monkeypatch) -> None:
    """Issue 102: the attributes stage read a page's meta tags twice (its attributes, then the
    source's mapping's named values); once now, and both still see them."""
    from searchcrawl.content import extract
    from searchcrawl.crawl.pipelines import attributes

    reads: list[object] = []
    read = extract.meta_tags

    def counted(root: Any) -> dict[str, str]:
        reads.append(root)
        return read(root)

    monkeypatch.setattr(extract, "meta_tags", counted)
    monkeypatch.setattr(attributes, "meta_tags", counted)
    page = POLICIES.replace("<title>", '<meta name="description" content="The rules."><meta name="team" content="HR"><title>')
    fields = crawled(crawler_of(SOURCE + '[attributes]\nteam = "team"\n'), page)
    assert fields["description"] == "The rules." and fields["team_s"] == "HR"
    assert len(reads) == 1
