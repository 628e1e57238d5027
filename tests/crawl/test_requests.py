"""crawl/requests.py alone: ``Admission`` (a URL's one decision and its depth, as it enters the
crawl) and ``RequestFactory`` (every request of an admitted entry), on a crawler of a source built
by ``tests.components`` (the crawl's own admission and stores; no crawl, no server)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from scrapy.crawler import Crawler

from searchcrawl.crawl.meta import ADMITTED, DEPTH, KNOWN, LEASED, REDIRECT_URLS, RENDER, RETRY_TIMES
from searchcrawl.crawl.requests import RequestFactory, admission_of, admitted, entry_of
from searchcrawl.crawl.spider import SourceSpider
from searchcrawl.rules.boundary import Boundary
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.frontier import Entry, Known
from tests.components import close_stores, ledger_of, source_crawler, start_run

SOURCE = """seeds = ["http://h.test/"]
max_depth = 3
url_rewriter = "strip_session"
paths = { "h.test" = { exclude = ["/private/"] } }

[[render_rules]]
pattern = "/app/"
render_js = true
"""


@pytest.fixture
def crawler(tmp_path: Path) -> Iterator[Crawler]:
    crawler = source_crawler(tmp_path, SOURCE)
    yield crawler
    close_stores(crawler)


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URLs the boundary judged (the rule chain past the rewriter)."""
    judged: list[str] = []
    check = Boundary.check

    def counted(self: Boundary, url: str, depth: int) -> Any:
        judged.append(url)
        return check(self, url, depth)

    monkeypatch.setattr(Boundary, "check", counted)
    return judged


@pytest.fixture
def spider(crawler: Crawler) -> SourceSpider:
    spider = crawler.spidercls.from_crawler(crawler)
    assert isinstance(spider, SourceSpider)
    return spider


# --- the factory ---------------------------------------------------------------------------------


def test_an_entry_becomes_the_spiders_request_admitted_at_its_depth(spider: SourceSpider) -> None:
    entry = spider.admission.link("http://h.test/a.html", 2)
    assert entry is not None
    request = spider.requests(entry)
    assert (request.url, request.callback, request.errback) == ("http://h.test/a.html", spider.parse, spider.failed)
    assert request.meta == {DEPTH: 2, ADMITTED: "http://h.test/a.html"} and admitted(request)
    assert request.priority == -2  # DEPTH_PRIORITY = 1: breadth-first, as Scrapy's DepthMiddleware gave it


def test_an_entry_this_process_did_not_admit_is_not_marked_admitted(spider: SourceSpider) -> None:
    """Queued by another process (an earlier session of a resumed run, another node), or by the
    document table itself (a duplicate taking its original's place), or admitted at another depth:
    the boundary check admits it by this process's rules."""
    assert not admitted(spider.requests(Entry("http://h.test/a.html", 2)))
    assert spider.admission.link("http://h.test/a.html", 1) is not None
    assert admitted(spider.requests(Entry("http://h.test/a.html", 1)))
    assert not admitted(spider.requests(Entry("http://h.test/a.html", 2)))


def test_the_render_rules_of_the_source_decide_the_render_mode(spider: SourceSpider) -> None:
    assert spider.requests(Entry("http://h.test/app/x.html", 1)).meta[RENDER] == "browser"
    assert RENDER not in spider.requests(Entry("http://h.test/x.html", 1)).meta
    assert RENDER not in RequestFactory(spider, spider.admission, renders=False)(Entry("http://h.test/app/x.html", 1)).meta


def test_a_leased_entry_carries_its_persisted_data_and_what_the_table_knew(spider: SourceSpider) -> None:
    known = Known("indexed", "c0ffee", "Wed, 21 Oct 2015 07:28:00 GMT", '"v1"', datetime(2024, 5, 1, tzinfo=UTC))
    data = {REDIRECT_URLS: ["http://h.test/old.html"], RETRY_TIMES: 1, "callback": "parse_document", "priority": -7}
    request = spider.requests(Entry("http://h.test/a.html", 1, {**data, "unpersisted": "x"}, known), leased=True)
    assert request.meta[REDIRECT_URLS] == ["http://h.test/old.html"] and request.meta[RETRY_TIMES] == 1
    assert "unpersisted" not in request.meta
    assert request.callback == spider.parse_document and request.priority == -7
    assert request.meta[KNOWN] is known and request.meta[LEASED] is True


def test_entry_of_keeps_what_goes_through_the_frontier(spider: SourceSpider) -> None:
    assert spider.admission.link("http://h.test/a.html", 2) is not None
    request = spider.requests(Entry("http://h.test/a.html", 2, {RETRY_TIMES: 1}))
    assert entry_of(request) == Entry("http://h.test/a.html", 2, {RETRY_TIMES: 1, "priority": -2})
    assert admitted(request.replace(dont_filter=True))  # a retry: the same URL, admitted
    # a redirect copies the meta to another URL: the target is not admitted yet
    redirected = request.replace(url="http://h.test/moved.html")
    assert not admitted(redirected) and not admitted(spider.requests(entry_of(redirected)))


# --- admission -----------------------------------------------------------------------------------


def test_a_link_is_canonical_rewritten_and_judged_at_its_depth(crawler: Crawler) -> None:
    admission = admission_of(crawler)
    assert admission.link("HTTP://H.TEST/a.html#top", 2) == Entry("http://h.test/a.html", 2)
    assert admission.link("http://h.test/b.html?sessionid=9", 1) == Entry("http://h.test/b.html", 1)
    assert admission.link("http://h.test/a.html", 4) is None  # max_depth = 3
    assert admission.link("http://h.test/private/a.html", 1) is None
    assert admission.link("http://h.test/print/a.html", 1) is None  # the rewriter drops it
    assert [(url, status, depth) for url, status, depth, _rule in admission.excluded] == [
        ("http://h.test/a.html", Status.EXCLUDED_DEPTH, 4),
        ("http://h.test/private/a.html", Status.EXCLUDED_PATH, 1),
        ("http://h.test/print/a.html", Status.EXCLUDED_REWRITER, 1),
    ]


def test_an_invalid_link_is_recorded_at_once(crawler: Crawler) -> None:
    assert admission_of(crawler).link("http://h.test:99999/a.html", 1) is None
    row = ledger_of(crawler).table.get("unit", "http://h.test:99999/a.html")
    assert (row["state"], row["status"]) == ("excluded", Status.EXCLUDED_PORT)


def test_a_link_queued_in_the_run_already_is_nothing_to_do(crawler: Crawler, asked: list[str]) -> None:
    """Most links of a site lead to pages queued already: the rules judge no more than the
    rewriter's step (a link rewritten to a queued URL is queued already too)."""
    _run, frontier = start_run(crawler)
    frontier.add([Entry("http://h.test/a.html", 1)])
    admission = admission_of(crawler)
    assert admission.link("http://h.test/a.html", 2) is None
    assert admission.link("http://h.test/a.html?sessionid=3", 2) is None
    assert asked == []
    assert admission.link("http://h.test/b.html", 2) == Entry("http://h.test/b.html", 2) and asked == ["http://h.test/b.html"]


def test_a_source_deleting_orphans_sees_every_link(tmp_path: Path) -> None:
    crawler = source_crawler(tmp_path, 'seeds = ["http://h.test/"]\norphans = "delete"\n')
    _run, frontier = start_run(crawler)
    frontier.add([Entry("http://h.test/a.html", 1)])
    assert admission_of(crawler).link("http://h.test/a.html", 2) == Entry("http://h.test/a.html", 2)
    close_stores(crawler)


def test_a_seed_is_judged_as_written_at_depth_zero(crawler: Crawler) -> None:
    admission = admission_of(crawler)
    entry, step = admission.seed("http://h.test/")
    assert entry == Entry("http://h.test/", 0) and step.allowed
    entry, step = admission.seed("http://h.test/private/")
    assert entry is None and (step.status, step.url) == (Status.EXCLUDED_PATH, "http://h.test/private/")


def test_an_agents_reference_keeps_its_data(crawler: Crawler) -> None:
    admission = admission_of(crawler)
    assert admission.reference("http://h.test/doc.html", {"x": 1}) == Entry("http://h.test/doc.html", 0, {"x": 1})
    assert admission.reference("http://other.test/doc.html", {"x": 1}) is None


def test_a_request_made_otherwise_is_admitted_and_marked(spider: SourceSpider, crawler: Crawler) -> None:
    admission = admission_of(crawler)
    request = spider.requests(Entry("http://h.test/a.html", 1)).replace(url="http://h.test/moved.html")
    assert admission.request(request, 1).allowed and admitted(request) and request.meta[DEPTH] == 1
    refused = request.replace(url="http://other.test/")
    step = admission.request(refused, 1)
    assert (step.allowed, step.status) == (False, Status.EXCLUDED_DOMAIN) and not admitted(refused)
