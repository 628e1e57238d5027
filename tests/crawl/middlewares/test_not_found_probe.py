"""NotFoundProbeMiddleware built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a
source), the engine's ``download_async`` stood in for: one probe per site, beside its first page,
within the source's rules; what a site's answer teaches; the pages' requests carry it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from urllib.parse import urlsplit

import lxml.html
import pytest
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse, Response
from scrapy.utils.misc import build_from_crawler

from searchcrawl.content.extract import body_of
from searchcrawl.content.soft_errors import Page, SoftErrors
from searchcrawl.crawl.meta import NOT_FOUND_PAGE, PROBE_REQUEST, own_request
from searchcrawl.crawl.middlewares.not_found_probe import NotFoundProbeMiddleware, probe_url

SITE = "http://h.test"
CrawlerOf = Callable[..., Crawler]
SOFT_404 = b"<html><head><title>Intranet</title></head><body><p>Sorry, nothing at this address.</p></body></html>"


class Server:
    """The engine's ``download_async`` for a site: ``answer(url)`` gives the response."""

    def __init__(self, answer: Callable[[str], Response]) -> None:
        self.answer = answer
        self.requested: list[Request] = []

    async def download_async(self, request: Request) -> Response:
        self.requested.append(request)
        await asyncio.sleep(0)
        return self.answer(request.url)


HOME = b"<html><head><title>Intranet</title></head><body><p>News of the week, the canteen and the rota.</p></body></html>"


def soft(url: str) -> Response:
    """A site with soft 404s: its home page, and a page for any other URL."""
    body = HOME if urlsplit(url).path == "/" else SOFT_404
    return HtmlResponse(url, status=200, body=body, headers={"Content-Type": "text/html"})


def honest(url: str) -> Response:
    return HtmlResponse(url, status=404, body=b"<html><title>404</title></html>", headers={"Content-Type": "text/html"})


def build(crawler_of: CrawlerOf, answer: Callable[[str], Response], extra: str = "", **settings: object):
    middleware = build_from_crawler(NotFoundProbeMiddleware, crawler_of(f'seeds = ["{SITE}/"]\n{extra}', **settings))
    server = Server(answer)
    middleware.crawler.engine = server  # type: ignore[assignment]
    return middleware, server


def pages(middleware: NotFoundProbeMiddleware, *urls: str) -> list[Request]:
    requests = [Request(url) for url in urls]

    async def go() -> None:
        await asyncio.gather(*(middleware.process_request(request) for request in requests))

    asyncio.run(go())
    return requests


def test_the_probe_is_beside_the_first_page_with_its_extension() -> None:
    assert probe_url("http://h.test/docs/a/install.html?x=1", "ab") == "http://h.test/docs/a/searchcrawl-not-found-ab.html"
    assert probe_url("http://h.test/docs/", "ab") == "http://h.test/docs/searchcrawl-not-found-ab"
    assert probe_url("http://h.test", "ab") == "http://h.test/searchcrawl-not-found-ab"
    assert probe_url("http://h.test/report.pdf", "ab") == "http://h.test/searchcrawl-not-found-ab"


def test_off_when_the_source_says_so(crawler_of: CrawlerOf) -> None:
    with pytest.raises(NotConfigured):
        build_from_crawler(NotFoundProbeMiddleware, crawler_of(f'seeds = ["{SITE}/"]\n[soft_errors]\nprobe_not_found = false\n'))


def test_one_probe_per_site_and_its_page_goes_on_every_request_of_the_site(crawler_of: CrawlerOf) -> None:
    middleware, server = build(crawler_of, soft)
    requests = pages(middleware, f"{SITE}/docs/a.html", f"{SITE}/docs/b.html", f"{SITE}/c.html")
    requests += pages(middleware, f"{SITE}/d.html")
    assert [request.url for request in server.requested][1:] == [f"{SITE}/"]  # the probe, and the home page
    probe = server.requested[0]
    assert own_request(probe) and probe.meta[PROBE_REQUEST] and probe.url.startswith(f"{SITE}/docs/searchcrawl-not-found-")
    learned = {id(request.meta.get(NOT_FOUND_PAGE)) for request in requests}
    assert len(learned) == 1 and requests[0].meta[NOT_FOUND_PAGE].probe == probe.url
    assert pages(middleware, probe.url)[0].meta.get(NOT_FOUND_PAGE) is not None  # itself a page of the site, later


def test_an_honest_site_teaches_nothing(crawler_of: CrawlerOf) -> None:
    middleware, server = build(crawler_of, honest)
    assert NOT_FOUND_PAGE not in pages(middleware, f"{SITE}/a.html")[0].meta
    assert len(server.requested) == 1


def test_a_redirect_on_the_site_is_followed_and_one_off_it_is_not(crawler_of: CrawlerOf) -> None:
    def answer(url: str) -> Response:
        if "searchcrawl-not-found-" in url:
            return Response(url, status=302, headers={"Location": "/errors/404.html"})
        return soft(url)

    middleware, server = build(crawler_of, answer)
    assert NOT_FOUND_PAGE in pages(middleware, f"{SITE}/a.html")[0].meta
    assert [r.url for r in server.requested][1:] == [f"{SITE}/errors/404.html", f"{SITE}/"]

    def away(url: str) -> Response:
        return Response(url, status=302, headers={"Location": "http://other.test/404"})

    middleware, server = build(crawler_of, away)
    assert NOT_FOUND_PAGE not in pages(middleware, f"{SITE}/a.html")[0].meta
    assert len(server.requested) == 1  # the other host: never requested


def test_a_probe_outside_the_sources_rules_is_not_made(crawler_of: CrawlerOf) -> None:
    middleware, server = build(crawler_of, soft, '[patterns]\nexclude_regex = ["searchcrawl-not-found"]\n')
    assert NOT_FOUND_PAGE not in pages(middleware, f"{SITE}/a.html")[0].meta
    assert server.requested == []


def test_the_sites_held_are_bounded(crawler_of: CrawlerOf) -> None:
    hosts = '[domains]\ninclude = ["a.test", "b.test", "c.test"]\n'
    middleware, server = build(crawler_of, soft, hosts, SEARCHCRAWL_NOT_FOUND_SITES=2)
    for host in ("a", "b", "c", "a"):
        pages(middleware, f"http://{host}.test/p.html")
    assert len(middleware.learned) == 2
    probes = [r.url.split("/")[2] for r in server.requested if "searchcrawl-not-found-" in r.url]
    assert probes == ["a.test", "b.test", "c.test", "a.test"]  # a: forgotten, asked again


def test_a_failing_probe_leaves_the_pages_alone(crawler_of: CrawlerOf) -> None:
    def broken(url: str) -> Response:
        raise ConnectionError("refused")

    middleware, _server = build(crawler_of, broken)
    assert NOT_FOUND_PAGE not in pages(middleware, f"{SITE}/a.html")[0].meta


@pytest.mark.parametrize("answer", ["a copy", "a redirect"])
def test_a_site_that_answers_with_its_home_page_has_no_not_found_page(crawler_of: CrawlerOf, answer: str) -> None:
    """A site that answers any unknown URL with its home page (a single-page app's fallback, a "404
    to home page" plugin, a redirect to /): every page as like that answer as the source's
    similarity was a soft 404, the home page first, whose links were then never followed: the
    crawl of the site ended at its seed."""

    def home_for_all(url: str) -> Response:
        if "searchcrawl-not-found-" in url and answer == "a redirect":
            return Response(url, status=302, headers={"Location": "/"})
        return HtmlResponse(url, status=200, body=HOME, headers={"Content-Type": "text/html"})

    middleware, server = build(crawler_of, home_for_all)
    assert NOT_FOUND_PAGE not in pages(middleware, f"{SITE}/")[0].meta
    assert [r.url for r in server.requested][1:] == [f"{SITE}/"]  # the home page, asked once
    assert NOT_FOUND_PAGE not in pages(middleware, f"{SITE}/a.html")[0].meta
    assert len(server.requested) == 2  # learned: nothing


def test_the_home_page_is_asked_within_the_sources_rules(crawler_of: CrawlerOf) -> None:
    """A source kept to a folder of the site does not ask its home page: a soft 404 is learned."""
    middleware, server = build(crawler_of, soft, "[patterns]\ninclude_regex = ['^http://h[.]test/docs/']\n")
    assert NOT_FOUND_PAGE in pages(middleware, f"{SITE}/docs/a.html")[0].meta
    assert [r.url for r in server.requested] == [server.requested[0].url] and "/docs/" in server.requested[0].url


MENU = '<div class="menu">' + " ".join(f'<a href="/d{n}">Department {n} office</a>' for n in range(80)) + "</div>"


def intranet_page(content: str) -> bytes:
    """A page of an intranet whose menu is no landmark (a <div>): most of each page's text."""
    return f"<html><head><title>Acme intranet</title></head><body>{MENU}<div>{content}</div></body></html>".encode()


def test_the_template_the_not_found_page_shares_with_the_home_page_makes_no_likeness(crawler_of: CrawlerOf) -> None:
    """A short page of a site whose template's text is no landmark (a menu of 240 words in a
    <div>) was 0.93 like its not-found page, all of it template: a person's card was a soft 404
    (929, counted) and left the index. What the not-found page shares with the home page is the
    template: the likeness is measured on the rest."""

    def site(url: str) -> Response:
        path = urlsplit(url).path
        if path == "/":
            content = "<h1>Welcome</h1>" + "".join(f"<p>News {n}: the canteen reopens on day {n}.</p>" for n in range(20))
        elif path == "/people/jdoe.html":
            content = "<h1>Jane Doe</h1><p>Payroll, room 4.12, extension 4411.</p>"
        else:
            content = "<h1>Sorry</h1><p>There is nothing at this address.</p>"
        return HtmlResponse(url, status=200, body=intranet_page(content), headers={"Content-Type": "text/html"})

    middleware, _server = build(crawler_of, site)
    (request,) = pages(middleware, f"{SITE}/people/jdoe.html")
    learned = request.meta[NOT_FOUND_PAGE]

    def page_of(url: str) -> Page:
        root = lxml.html.fromstring(site(url).body)
        return Page(url, {}, root, lambda: middleware.regions.text(body_of(root), url).text)

    assert SoftErrors().of_page(page_of(f"{SITE}/people/jdoe.html"), learned) is None
    gone = SoftErrors().of_page(page_of(f"{SITE}/people/left-long-ago.html"), learned)
    assert gone is not None and gone.kind == "not_found"


def test_a_probe_that_raises_costs_the_site_its_likeness_not_its_pages(crawler_of: CrawlerOf, monkeypatch) -> None:
    middleware, _server = build(crawler_of, soft)

    def broken(url: str, response: Response) -> None:
        raise ValueError("a page lxml cannot read")

    monkeypatch.setattr(middleware, "learn", broken)
    requests = pages(middleware, f"{SITE}/a.html", f"{SITE}/b.html")  # raised into every page's request before
    assert all(NOT_FOUND_PAGE not in request.meta for request in requests)
