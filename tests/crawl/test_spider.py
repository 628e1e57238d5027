"""SourceSpider alone: built through the crawler (``spidercls.from_crawler``) of
``tests.components``, fed public Scrapy responses; what it reports goes through ``url_outcome``
(a receiver of the test's own, and the ledger writer into the document table)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.spidermiddlewares.metacopy import MetaCopyDetectionMiddleware
from scrapy.utils.misc import build_from_crawler
from twisted.internet.error import DNSLookupError, TCPTimedOutError
from twisted.python.failure import Failure

from searchcrawl.access.tokens import Access, Grant
from searchcrawl.content.regions import ContentRegions
from searchcrawl.crawl.exceptions import RequestRefused, Unsent
from searchcrawl.crawl.items import CrawledDocument
from searchcrawl.crawl.meta import PREVIOUS
from searchcrawl.crawl.pipelines.attributes import AttributesPipeline
from searchcrawl.crawl.pipelines.checksum import versioned
from searchcrawl.crawl.requests import admission_of, admitted
from searchcrawl.crawl.signals import url_outcome
from searchcrawl.crawl.spider import SourceSpider, same_readers
from searchcrawl.rules.lifecycle import Event, Outcome, decide
from searchcrawl.rules.status_codes import Status
from tests.components import ledger_of

SOURCE = """seeds = ["http://h.test/", "http://h.test/docs/"]
url_rewriter = "strip_session"
"""
PAGE = b"""<html><head><title>Home</title>
<link rel="canonical" href="/index.html">
<meta http-equiv="refresh" content="5; url=/refreshed.html">
</head><body>
<a href="/a.html">A</a> <a href="b.html#part">B</a> <a href="/a.html">A again</a>
<a href="/q?sessionid=42&x=1">session</a> <a href="/print/a.html">print</a>
<a href="/report.pdf">report</a> <a href="/logo.png">logo</a> <a href="http://other.test/">elsewhere</a>
<map><area href="/area.html"></map> <iframe src="/frame.html"></iframe>
<p>Welcome to the home page.</p>
</body></html>"""


class Reports:
    """What the spider reports through url_outcome (connected like the ledger writer)."""

    def __init__(self, crawler: Crawler) -> None:
        self.seen: list[tuple[str, Outcome]] = []
        crawler.signals.connect(self.receive, signal=url_outcome)

    def receive(self, url: str, outcome: Outcome) -> None:
        self.seen.append((url, outcome))


def spider_of(crawler: Crawler, **arguments: Any) -> SourceSpider:
    spider = crawler.spidercls.from_crawler(crawler, **arguments)
    assert isinstance(spider, SourceSpider)
    return spider


def request(url: str, depth: int = 1, **meta: Any) -> Request:
    return Request(url, meta={"depth": depth, **meta})


def html(url: str, body: bytes = PAGE, status: int = 200, depth: int = 1, **headers: str) -> HtmlResponse:
    return HtmlResponse(
        url,
        status=status,
        body=body,
        headers={"Content-Type": "text/html; charset=utf-8", **headers},
        request=request(url, depth),
    )


def split(outputs: list[Any]) -> tuple[list[CrawledDocument], list[Request]]:
    return [o for o in outputs if isinstance(o, CrawledDocument)], [o for o in outputs if isinstance(o, Request)]


def test_it_is_built_by_the_crawler_with_the_crawls_arguments(crawler_of) -> None:
    crawler = crawler_of(SEARCHCRAWL_MAX_PARSE_BYTES=1000)
    spider = spider_of(crawler, recrawl="force", test_mode="1")
    assert spider.name == "unit" and spider.source.name == "unit"
    assert spider.arguments == {"recrawl": "force", "test_mode": "1"}  # what CrawlArguments.of reads
    assert spider.max_parse_bytes == 1000 and spider.crawler is crawler
    assert spider.admission is admission_of(crawler) and spider.agent is None  # the crawl's admission; no agent


def test_the_seeds_are_the_first_requests(crawler_of) -> None:
    spider = spider_of(crawler_of())

    async def start() -> list[Request]:
        return [request async for request in spider.start()]

    requests = asyncio.run(start())
    assert [(r.url, r.meta["depth"]) for r in requests] == [("http://h.test/", 0), ("http://h.test/docs/", 0)]
    assert all(r.callback == spider.parse and r.errback == spider.failed for r in requests)


def test_an_html_page_gives_its_document_and_its_links(crawler_of) -> None:
    crawler = crawler_of()
    spider = spider_of(crawler)
    reports = Reports(crawler)
    response = html("http://h.test/", depth=1, **{"Last-Modified": "Wed, 01 May 2024 10:00:00 GMT", "ETag": '"v1"'})
    documents, requests = split(list(spider.parse(response)))
    (document,) = documents
    assert (document.source, document.url, document.depth) == ("unit", "http://h.test/", 1)
    assert document.fetched.tree is not None and document.fetched.text is None and document.fetched.body is None
    assert document.canonical_url == "http://h.test/index.html"
    assert document.fetched.headers == {
        "content-type": "text/html; charset=utf-8",
        "last-modified": "Wed, 01 May 2024 10:00:00 GMT",
        "etag": '"v1"',
    }
    assert document.record == {
        "content_type": "text/html; charset=utf-8",
        "content_length": len(PAGE),
        "last_modified": "Wed, 01 May 2024 10:00:00 GMT",
        "etag": '"v1"',
        "fetched_with": "static",
        "via": None,
    }
    # canonical links, once each, one level deeper, through the URL rewriter and the boundary
    # (crawl/requests.py Admission: the dynamic page and other.test are kept out here)
    assert [r.url for r in requests] == [
        "http://h.test/refreshed.html",
        "http://h.test/a.html",
        "http://h.test/b.html",
        "http://h.test/report.pdf",
        "http://h.test/area.html",
        "http://h.test/frame.html",
    ]
    assert {r.meta["depth"] for r in requests} == {2} and all(r.callback == spider.parse for r in requests)
    assert all(admitted(r) for r in requests)  # nothing admits them again
    assert reports.seen == []  # the page's outcome comes with its document (the pipelines)
    # the links kept out are recorded with the page's exclusions (ScopeMiddleware flushes them)
    admission = admission_of(crawler)
    assert {url for url, *_ in admission.excluded} == {"http://h.test/print/a.html", "http://h.test/q?x=1", "http://other.test/"}
    admission.flush()  # urls_excluded: the ledger writer records them
    row = ledger_of(crawler).table.get("unit", "http://h.test/print/a.html")
    assert (row["state"], row["status"], row["depth"]) == ("excluded", Status.EXCLUDED_REWRITER, 2)


def test_a_pages_anchors_name_their_targets_as_the_admission_queues_them(crawler_of) -> None:
    """Issue 100: each link's words (content/anchors.py), its target canonical and through the URL
    rewriter, as the document table knows it; a link the rewriter drops, or to an ignored file
    type, names nothing, nor one to a host the domain rules keep out (issue 102: never a document
    of the source; the old code kept ("http://other.test/", "elsewhere")). A path another rule
    keeps out (the dynamic page) is still named: its document may come. A page that asks robots
    nofollow, a plain text and a file give none."""
    crawler = crawler_of()
    spider = spider_of(crawler)
    (document,), _requests = split(list(spider.parse(html("http://h.test/"))))
    assert document.anchors == (
        ("http://h.test/a.html", "A"),
        ("http://h.test/b.html", "B"),
        ("http://h.test/a.html", "A again"),
        ("http://h.test/q?x=1", "session"),
        ("http://h.test/report.pdf", "report"),
    )
    (nofollow,), _requests = split(list(spider.parse(html("http://h.test/f.html", **{"X-Robots-Tag": "nofollow"}))))
    assert nofollow.anchors == ()
    text = TextResponse("http://h.test/t.txt", body=b"see http://h.test/a.html", headers={"Content-Type": "text/plain"})
    text.request = request("http://h.test/t.txt")
    (plain,), _requests = split(list(spider.parse(text)))
    assert plain.anchors == ()


def test_a_pages_links_and_anchors_resolve_each_value_once(crawler_of, monkeypatch) -> None:
    """Issue 102: the anchors resolved every link of a page a second time (after its links), a
    quarter of a millisecond a Javadoc page; the page's values are resolved once and both read them."""
    spider = spider_of(crawler_of())
    asked: list[str] = []
    link = spider.page_links.link
    monkeypatch.setattr(spider.page_links, "link", lambda value, *args: asked.append(value) or link(value, *args))
    (document,), requests = split(list(spider.parse(html("http://h.test/"))))
    assert len(asked) == len(set(asked)) == 9  # the page's distinct href and src values
    assert len(document.anchors) == 5 and len(requests) == 6  # its meta refresh besides; no anchor off the domains


def test_a_rewriter_that_raises_or_makes_an_invalid_url_excludes_that_link_alone(crawler_of) -> None:
    """The rewriter's step is ``RuleChain.rewrite_step``, which `scrapy explain` shows: a link it
    raises on is 909, one it makes invalid 902, and the page's other links go on (the exception
    escaped the spider before: the page failed with a spider error and lost its links)."""
    crawler = crawler_of('seeds = ["http://h.test/"]\nurl_rewriter = "hostile"\n')
    spider = spider_of(crawler)
    page = b'<html><body><a href="/boom.html">x</a> <a href="/badport.html">y</a> <a href="/ok.html">z</a></body></html>'
    documents, requests = split(list(spider.parse(html("http://h.test/", page))))
    assert len(documents) == 1 and [r.url for r in requests] == ["http://h.test/ok.html"]
    admission_of(crawler).flush()  # as ScopeMiddleware does with the page's output
    table = ledger_of(crawler).table
    boom = table.get("unit", "http://h.test/boom.html")
    assert (boom["state"], boom["status"], boom["reason"]) == (
        "excluded",
        Status.EXCLUDED_REWRITER,
        "the URL rewriter raised RuntimeError",
    )
    bad = table.get("unit", "http://h.test:99999/x")
    assert (bad["state"], bad["status"]) == ("excluded", Status.EXCLUDED_PORT) and bad["reason"].startswith("not a valid URL")
    steps = admission_of(crawler).chain.steps("http://h.test/boom.html", 1, rewrite="link", every=True)
    assert steps[-1].status == Status.EXCLUDED_REWRITER and steps[-1].rule == boom["reason"]  # explain's chain


def test_robots_meta_noindex_and_nofollow(crawler_of) -> None:
    crawler = crawler_of()
    spider = spider_of(crawler)
    reports = Reports(crawler)
    noindex = PAGE.replace(b"<title>", b'<meta name="robots" content="noindex"><title>')
    documents, requests = split(list(spider.parse(html("http://h.test/n.html", noindex))))
    assert documents == [] and len(requests) == 6  # its links are still followed
    assert [(url, o.event, o.status, o.reason) for url, o in reports.seen] == [
        ("http://h.test/n.html", Event.GONE, Status.NOINDEX, "robots noindex")
    ]
    nofollow = html("http://h.test/f.html", **{"X-Robots-Tag": "nofollow"})
    documents, requests = split(list(spider.parse(nofollow)))
    assert len(documents) == 1 and requests == []


def test_a_navigation_page_is_kept_out_with_its_links_followed_and_a_copy_too(crawler_of) -> None:
    crawler = crawler_of()
    spider = spider_of(crawler)
    reports = Reports(crawler)
    documents, requests = split(list(spider.parse(html("http://h.test/api/class-use/Injector.html"))))
    assert documents == [] and len(requests) == 6  # the site is reached through them
    copy = "http://h.test/_sources/index.rst.txt"
    text = TextResponse(copy, body=b"Home\n====\n", headers={"Content-Type": "text/plain"}, request=request(copy))
    assert list(spider.parse(text)) == []
    # a 304 of a page indexed before the rule: it leaves the index
    old = "http://h.test/api/index-all.html"
    unchanged = HtmlResponse(
        old, status=304, body=b"", request=request(old, 1, **{PREVIOUS: {"checksum": "c", "state": "indexed"}})
    )
    assert list(spider.parse(unchanged)) == []
    assert [(url, o.event, o.status, o.reason) for url, o in reports.seen] == [
        (
            "http://h.test/api/class-use/Injector.html",
            Event.GONE,
            Status.NAVIGATION_PAGE,
            "navigation page or copy (navigation_pages: */class-use/*)",
        ),
        (copy, Event.GONE, Status.NAVIGATION_PAGE, "navigation page or copy (navigation_pages: */_sources/*)"),
        (old, Event.GONE, Status.NAVIGATION_PAGE, "navigation page or copy (navigation_pages: */index-all.html)"),
    ]
    everything = spider_of(crawler_of(SOURCE + "navigation_pages = []\n"))
    assert len(split(list(everything.parse(html("http://h.test/api/class-use/Injector.html"))))[0]) == 1


def test_a_pages_regions_are_read_once_and_a_navigation_pages_without_its_prose(crawler_of, monkeypatch) -> None:
    """Issue 102: the soft-error markers read every page's text by its regions, which the attributes
    pipeline takes (read once); a navigation page's document is not indexed, so its link lists
    (the dearest part of the regions, what the prose leaves out) are not looked for."""
    reads: list[tuple[str, bool]] = []
    text = ContentRegions.text

    def counted(self: ContentRegions, body: Any, url: str, *args: Any, **kwargs: Any) -> Any:
        reads.append((url, kwargs.get("prose", True)))
        return text(self, body, url, *args, **kwargs)

    monkeypatch.setattr(ContentRegions, "text", counted)
    crawler = crawler_of()
    spider = spider_of(crawler)
    navigation, page = "http://h.test/api/class-use/Injector.html", "http://h.test/guide.html"
    assert split(list(spider.parse(html(navigation))))[0] == []
    [document] = split(list(spider.parse(html(page))))[0]
    assert document.fetched.region_text is not None
    item = asyncio.run(build_from_crawler(AttributesPipeline, crawler).process_item(document))
    assert "Welcome to the home page." in item.converted.fields["content"]
    assert reads == [(navigation, False), (page, True)]


def test_a_navigation_page_keeps_its_validators_and_its_304_keeps_it_out(crawler_of) -> None:
    """Issue 91: a navigation page's row kept no validators, and every maintenance crawl fetched
    it whole (4,459 pages of a Javadoc site). Its fetch's validators are recorded with its 917;
    a 304 keeps it out with the validators it was asked with (none recorded over them)."""
    crawler = crawler_of()
    spider = spider_of(crawler)
    reports = Reports(crawler)
    url, file_url = "http://h.test/api/class-use/Injector.html", "http://h.test/api/class-use/Injector.pdf"
    validators = {"Last-Modified": "Wed, 21 Oct 2015 07:28:00 GMT", "ETag": '"v1"'}
    assert len(split(list(spider.parse(html(url, **validators))))[1]) == 6  # its links followed
    pdf = Response(
        file_url, body=b"%PDF-1.4", headers={"Content-Type": "application/pdf", **validators}, request=request(file_url)
    )
    assert list(spider.parse(pdf)) == []
    previous = {PREVIOUS: {"checksum": None, "last_modified": validators["Last-Modified"], "state": "fetched"}}
    assert list(spider.parse(HtmlResponse(url, status=304, body=b"", request=request(url, 1, **previous)))) == []
    (page, _), (pdf_file, _), (not_modified, _) = [(o.columns, o) for _url, o in reports.seen]
    assert (page["last_modified"], page["etag"]) == (validators["Last-Modified"], validators["ETag"])
    assert (pdf_file["last_modified"], pdf_file["etag"]) == (validators["Last-Modified"], validators["ETag"])
    # a page's and a file's rows keep the same of their fetch (spider.py fetch_record, one implementation)
    assert set(page) == set(pdf_file) - {"fetched_with"}, (page, pdf_file)
    assert (page["content_type"], page["content_length"]) == ("text/html; charset=utf-8", len(PAGE))
    assert "last_modified" not in not_modified and "etag" not in not_modified
    assert {o.status for _url, o in reports.seen} == {Status.NAVIGATION_PAGE}


def test_a_plain_text_document(crawler_of) -> None:
    spider = spider_of(crawler_of())
    url = "http://h.test/notes.txt"
    response = TextResponse(
        url, body=b"Some notes\nsee http://h.test/x.html", headers={"Content-Type": "text/plain"}, request=request(url)
    )
    (document,) = list(spider.parse(response))
    assert document.fetched.text == "Some notes\nsee http://h.test/x.html" and document.fetched.tree is None


def test_a_pdf_is_handed_to_the_pipelines_as_bytes_without_links(crawler_of) -> None:
    spider = spider_of(crawler_of())
    url = "http://h.test/report.pdf"
    body = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj <<>> endobj\n"
    response = Response(url, body=body, headers={"Content-Type": "application/pdf"}, request=request(url, 2))
    (document,) = list(spider.parse(response))
    assert (document.fetched.body, document.fetched.tree, document.depth) == (body, None, 2)
    assert document.record["content_type"] == "application/pdf" and document.record["content_length"] == len(body)


def test_a_pdf_served_as_html_is_still_a_pdf(crawler_of) -> None:
    spider = spider_of(crawler_of())
    body = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj <<>> endobj\n"
    (document,) = list(spider.parse(html("http://h.test/report", body)))
    assert document.fetched.body == body and document.fetched.tree is None


@pytest.mark.parametrize(
    ("url", "content_type", "body", "reason"),
    [
        ("http://h.test/logo.png", "image/png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "content type image/png is not indexed"),
        ("http://h.test/blob", "text/html", b"\x00\x01\x02\x03\xff\xfe" * 50, "binary content served as text/html"),
        ("http://h.test/data.bin", None, b"\x00\x01\x02\x03", "content type application/octet-stream is not indexed"),
    ],
)
def test_binary_content_is_not_indexed(crawler_of, url: str, content_type: str | None, body: bytes, reason: str) -> None:
    crawler = crawler_of()
    spider = spider_of(crawler)
    reports = Reports(crawler)
    headers = {"Content-Type": content_type} if content_type else {}
    response_class = HtmlResponse if content_type == "text/html" else Response
    response = response_class(url, body=body, headers=headers, request=request(url))
    assert list(spider.parse(response)) == []
    ((reported, outcome),) = reports.seen
    assert (reported, outcome.event, outcome.status, outcome.reason) == (url, Event.GONE, Status.UNSUPPORTED_TYPE, reason)
    assert outcome.columns["content_length"] == len(body)


def test_a_404_reports_gone(crawler_of) -> None:
    crawler = crawler_of()
    spider = spider_of(crawler)
    reports = Reports(crawler)
    gone = b"<html><body>Not found <a href='/x.html'>x</a></body></html>"
    assert list(spider.parse(html("http://h.test/old.html", gone, status=404, depth=3))) == []  # no document, no links
    ((url, outcome),) = reports.seen
    assert (url, outcome.event, outcome.status, outcome.reason, outcome.depth, outcome.kind) == (
        "http://h.test/old.html",
        Event.GONE,
        404,
        "gone",
        3,
        "failed",
    )
    assert outcome.columns["content_type"] == "text/html; charset=utf-8"
    row = ledger_of(crawler).table.get("unit", "http://h.test/old.html")  # and the ledger writer's row
    assert (row["state"], row["status"], row["reason"]) == ("fetched", 404, "gone")


def test_a_redirect_that_reaches_the_spider_is_redirected(crawler_of) -> None:
    """Issue 53: a 3xx not followed (no Location, or a request that must not be redirected)
    was reported failed by the spider itself; the ledger's default kind says redirected."""
    crawler = crawler_of()
    spider = spider_of(crawler)
    reports = Reports(crawler)
    assert list(spider.parse(html("http://h.test/r.html", b"", status=302))) == []
    ((_url, outcome),) = reports.seen
    assert (outcome.event, outcome.status, outcome.kind) == (Event.GONE, 302, None)
    assert decide(None, outcome).delta == "redirected"  # as the ledger reports it


@pytest.mark.parametrize(
    ("status", "event", "reason"),
    [
        (410, Event.GONE, "gone"),
        (403, Event.GONE, "HTTP 403: no document"),
        (503, Event.FAILED, "HTTP 503"),
        (429, Event.FAILED, "HTTP 429"),
    ],
)
def test_other_answers_without_a_document(crawler_of, status: int, event: Event, reason: str) -> None:
    crawler = crawler_of()
    spider = spider_of(crawler)
    reports = Reports(crawler)
    assert list(spider.parse(html("http://h.test/p.html", b"<html></html>", status=status))) == []
    assert [(o.event, o.status, o.reason) for _url, o in reports.seen] == [(event, status, reason)]


SIGN_IN = (
    b'<html><head><title>Sign in</title></head><body><form method="post"><input name="user">'
    b'<input type="password" name="pw"></form></body></html>'
)
JUST_A_MOMENT = b"<html><head><title>Just a moment...</title></head><body>Checking your browser.</body></html>"


@pytest.mark.parametrize("status", [401, 403])
def test_a_login_page_answered_401_or_403_is_a_refusal_and_a_challenge_a_soft_error(crawler_of, status: int) -> None:
    """A 401 or 403 is the site's refusal: a page behind it has no document, and leaves the index
    (the source's credentials refused are site_auth's 936, before the spider; a form login's
    expiry is its expired_status). Taken for a login wall (928, never counted), a page its site
    made private stayed in the index, for all to find, for ever. A bot challenge answered 403
    (Cloudflare's) is no refusal of the page: a soft error, its indexed version kept."""
    crawler = crawler_of()
    spider = spider_of(crawler)
    reports = Reports(crawler)
    assert list(spider.parse(html("http://h.test/private.html", SIGN_IN, status=status))) == []
    assert list(spider.parse(html("http://h.test/walled.html", JUST_A_MOMENT, status=status))) == []
    assert [(url, o.event, o.status, o.counted) for url, o in reports.seen] == [
        ("http://h.test/private.html", Event.GONE, status, True),
        ("http://h.test/walled.html", Event.FAILED, Status.SOFT_ERROR, False),
    ]


def test_a_304_of_an_indexed_document_is_unchanged(crawler_of) -> None:
    crawler = crawler_of()
    spider = spider_of(crawler)
    reports = Reports(crawler)
    url = "http://h.test/same.html"
    response = HtmlResponse(
        url, status=304, body=b"", request=request(url, 1, **{PREVIOUS: {"checksum": "c", "state": "indexed"}})
    )
    assert list(spider.parse(response)) == []
    assert [(o.event, o.status, o.kind) for _url, o in reports.seen] == [(Event.UNCHANGED, Status.UNCHANGED, "not_modified")]


RULES = SOURCE + '[access]\nallow = ["group:staff"]\n[[access.rules]]\npaths = ["/hr/"]\nallow = ["group:hr"]\n'


def test_a_304_whose_readers_changed_is_an_atomic_update_of_its_access_alone(crawler_of) -> None:
    """The indexed checksum holds the readers it was indexed for: another access on a 304 gives
    an item of the access fields alone (its content is not read again); one no rule covers
    leaves the index (927)."""
    crawler = crawler_of(RULES)
    spider = spider_of(crawler)
    reports = Reports(crawler)
    content = "c" * 64
    url = "http://h.test/hr/pay.html"
    staff = versioned(content, Access.of([Grant("group:staff", "t")]))

    def not_modified(checksum: str, page: str = url) -> list[Any]:
        previous = {"checksum": checksum, "state": "indexed"}
        return list(spider.parse(HtmlResponse(page, status=304, body=b"", request=request(page, 1, **{PREVIOUS: previous}))))

    [item] = not_modified(staff)  # indexed for staff, the rules now say hr
    assert isinstance(item, CrawledDocument) and item.access_update and item.access is not None
    assert item.fields["checksum"] == versioned(content, item.access) and item.fields["_version_"] == 1
    assert item.fields["access_allow"] == {"set": ["group:hr"]} and "content" not in item.fields
    assert reports.seen == []  # its outcome is the cache's
    hr = item.fields["checksum"]
    assert not_modified(hr) == [] and reports.seen[-1][1].kind == "not_modified"  # the same readers
    assert same_readers(spider, url, request(url).meta, hr) and not same_readers(spider, url, request(url).meta, staff)
    assert same_readers(spider, url, request(url).meta, None)  # nothing indexed to compare with


def test_a_304_of_a_document_no_rule_covers_any_more_leaves_the_index(crawler_of) -> None:
    crawler = crawler_of(SOURCE + '[access]\n[[access.rules]]\npaths = ["/hr/"]\nallow = ["group:hr"]\n')
    spider = spider_of(crawler)
    reports = Reports(crawler)
    url = "http://h.test/other.html"
    previous = {"checksum": "c" * 64, "state": "indexed"}
    response = HtmlResponse(url, status=304, body=b"", request=request(url, 1, **{PREVIOUS: previous}))
    assert list(spider.parse(response)) == []
    [(seen, outcome)] = reports.seen
    assert (seen, outcome.event, outcome.status) == (url, Event.GONE, Status.ACCESS_UNREADABLE)
    assert not same_readers(spider, url, request(url).meta, "c" * 64)
    # fetched whole (a 200), the document carries why, and the access pipeline keeps it out
    [document] = split(list(spider.parse(html(url))))[0]
    assert document.access is None and "no rule of the source's [access] table covers it" in (document.access_error or "")


def test_a_page_beyond_max_parse_bytes_is_cut_and_says_so(crawler_of) -> None:
    spider = spider_of(crawler_of(SEARCHCRAWL_MAX_PARSE_BYTES=200))
    body = b"<html><head><title>Long</title></head><body><p>" + b"word " * 200 + b"</p><a href='/late.html'>x</a></body></html>"
    documents, requests = split(list(spider.parse(html("http://h.test/long.html", body))))
    assert documents[0].note == f"truncated: the first 200 of {len(body)} bytes were parsed"
    assert documents[0].record["content_length"] == len(body) and requests == []  # the cut link is not seen


def test_a_result_filtered_page_is_crawled_for_its_links_only(crawler_of) -> None:
    crawler = crawler_of(SOURCE + '[filters.result]\nexclude_urls = ["*/index/*"]\n')
    spider = spider_of(crawler)
    reports = Reports(crawler)
    documents, requests = split(list(spider.parse(html("http://h.test/index/all.html"))))
    assert documents == [] and len(requests) == 6
    assert [(o.event, o.status) for _url, o in reports.seen] == [(Event.GONE, Status.EXCLUDED_FILTER)]


def test_requests_that_end_without_a_response(crawler_of) -> None:
    crawler = crawler_of()
    spider = spider_of(crawler)
    reports = Reports(crawler)

    def fail(url: str, error: BaseException) -> None:
        failure = Failure(error)
        failure.request = request(url, 2)  # type: ignore[attr-defined]  # as Scrapy hands it to an errback
        spider.failed(failure)

    fail("http://h.test/robots-says-no.html", RequestRefused(Status.EXCLUDED_ROBOTS, "robots.txt: Disallow: /"))
    fail("http://h.test/bomb.gz", IgnoreRequest("decompressed size exceeds DOWNLOAD_MAXSIZE"))
    fail("http://nowhere.test/", DNSLookupError("nowhere.test"))
    fail("http://h.test/slow.html", TCPTimedOutError())
    fail("http://h.test/unsent.html", Unsent("the crawl is closing"))  # given back by a suspend: no outcome
    found = {url: (o.event, o.status, o.depth) for url, o in reports.seen}
    assert "http://h.test/unsent.html" not in found
    assert found["http://h.test/robots-says-no.html"] == (Event.EXCLUDED, Status.EXCLUDED_ROBOTS, 2)
    assert found["http://h.test/bomb.gz"][0] == Event.GONE and found["http://h.test/bomb.gz"][2] == 2
    assert found["http://nowhere.test/"] == (Event.GONE, Status.DNS_FAILURE, 2)  # gone, not transient
    assert found["http://h.test/slow.html"] == (Event.FAILED, Status.TIMEOUT, 2)
    row = ledger_of(crawler).table.get("unit", "http://h.test/slow.html")
    assert (row["state"], row["failures"]) == ("failed", 1)


def test_a_seed_its_own_rules_exclude_is_named_in_a_warning(crawler_of, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 53: a seed the source's own rules keep out was requested, excluded, and said nothing."""
    source = (
        'seeds = ["http://h.test/", "http://h.test/private/a.html", "http://h.test/b.zip"]\n'
        'paths = { "h.test" = { exclude = ["/private/"] } }\n'
        'patterns = { exclude_glob = ["*.zip"] }\n'
    )
    spider = spider_of(crawler_of(source))

    async def start() -> list[Request]:
        return [request async for request in spider.start()]

    with caplog.at_level("WARNING", logger="searchcrawl.crawl.spider"):
        requests = asyncio.run(start())
    # admitted once, at the start: the seeds its rules exclude are not requested, and have their rows
    assert [r.url for r in requests] == ["http://h.test/"]
    row = ledger_of(spider.crawler).table.get("unit", "http://h.test/b.zip")
    assert (row["state"], row["status"]) == ("excluded", Status.EXCLUDED_PATTERN)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            'Seed http://h.test/private/a.html of source unit is outside its own rules, not crawled: path exclude "/private/" '
            "on h.test (903 excluded_path)",
        ),
        (
            "WARNING",
            'Seed http://h.test/b.zip of source unit is outside its own rules, not crawled: pattern exclude_glob "*.zip" '
            "(904 excluded_pattern)",
        ),
    ]


def test_a_seed_file_full_of_excluded_seeds_names_the_first_ones_and_counts_the_rest(
    crawler_of, caplog: pytest.LogCaptureFixture
) -> None:
    seeds = ", ".join(f'"http://h.test/private/{number}.html"' for number in range(25))
    spider = spider_of(crawler_of(f'seeds = [{seeds}]\npaths = {{ "*" = {{ exclude = ["/private/"] }} }}\n'))

    async def start() -> list[Request]:
        return [request async for request in spider.start()]

    with caplog.at_level("WARNING", logger="searchcrawl.crawl.spider"):
        assert asyncio.run(start()) == []
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 11 and messages[0].startswith("Seed http://h.test/private/0.html of source unit")
    assert (
        messages[-1]
        == "25 seeds of source unit in all are outside its own rules (the first 10 named above); they are not crawled"
    )


@pytest.mark.parametrize("depth", [10_000, 2_100])
def test_text_and_links_below_ten_thousand_nested_divs_are_kept(crawler_of, depth: int) -> None:
    """Issue 53: libxml2 stops parsing at 2,048 nested elements, even with huge_tree: the text and
    links below them, and after them, were lost. The page is parsed again flattened."""
    from searchcrawl.content.extract import html_attributes

    body = (
        b"<html><head><title>Deep</title></head><body><p>Top <a href='/top.html'>top</a></p>"
        + b"<div>" * depth
        + b"<p>deep words <a href='/deep.html'>deep</a><script>var hidden = 1;</script></p>"
        + b"</div>" * depth
        + b"<p>after <a href='/after.html'>after</a></p></body></html>"
    )
    documents, requests = split(list(spider_of(crawler_of()).parse(html("http://h.test/deep.html", body))))
    (document,) = documents
    assert [r.url for r in requests] == ["http://h.test/top.html", "http://h.test/deep.html", "http://h.test/after.html"]
    attributes = html_attributes(document.fetched.tree, {})
    assert attributes["title"] == "Deep"
    assert attributes["content"] == "Top top deep words deep after after"


def test_a_page_flattened_keeps_its_base_url_refresh_and_encoding_as_served(crawler_of) -> None:
    """Issue 53 review: the flattened copy is UTF-8 and shorter, so a cp1252 link's ``?q=%E9``
    became ``?q=%C3%A9``, and a <base href> or meta refresh past Scrapy's first 4,096 characters
    came into them and applied. They are read from the page as served."""
    body = (
        b"<html><head><title>Deep</title></head><body>"
        + b"<div>" * 200
        + b"<div "
        + b"x" * 5000
        + b">"
        + b"</div>" * 201  # flattened away: what follows moves up
        + b'<base href="http://elsewhere.test/"><meta http-equiv="refresh" content="0; url=/refresh.html">'
        + b"<div>" * 300
        + "<link rel='canonical' href='c.html'><a href='page?q=\u00e9'>p</a>".encode("cp1252")
    )
    response = html("http://h.test/dir/deep.html", body, **{"Content-Type": "text/html; charset=windows-1252"})
    documents, requests = split(list(spider_of(crawler_of(SOURCE + "index_dynamic_pages = true\n")).parse(response)))
    (document,) = documents
    assert [r.url for r in requests] == ["http://h.test/dir/page?q=%E9"]
    assert document.canonical_url == "http://h.test/dir/c.html"


def test_an_empty_shell_is_requested_again_for_the_browser_without_warnings(crawler_of, caplog) -> None:
    """Auto mode: a static page that is a JavaScript shell is requested again for the browser.
    The new request keeps what goes on with the URL (its depth, its redirect chain) and none of
    what Scrapy noted of the static fetch (download_latency ...), so Scrapy's own
    MetaCopyDetectionMiddleware, in the crawl's spider middlewares, has nothing to warn of."""
    crawler = crawler_of(SOURCE + 'render_js = "auto"\n')
    spider = spider_of(crawler)
    crawler.spider = spider  # what Crawler.crawl() does first
    url = "http://h.test/app/"
    static = request(url, 2, searchcrawl_render="auto", redirect_urls=["http://h.test/app"], redirect_times=1)
    static.meta.update(download_latency=0.01, redirect_ttl=19)  # what Scrapy notes of the static fetch
    shell = HtmlResponse(
        url, body=b'<html><body><div id="app"></div><script src="/app.js"></script></body></html>', request=static
    )
    shell.headers["Content-Type"] = "text/html"
    _documents, (again,) = split(list(spider.parse(shell)))
    assert again.url == url and again.dont_filter and again.meta["searchcrawl_render"] == "browser"
    assert (again.meta["depth"], again.meta["redirect_urls"]) == (2, [url[:-1]])  # the page itself, at its depth
    assert "download_latency" not in again.meta and "redirect_ttl" not in again.meta
    metacopy = build_from_crawler(MetaCopyDetectionMiddleware, crawler)
    with caplog.at_level(logging.WARNING):
        assert metacopy.get_processed_request(again, shell) is again
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING], caplog.text
