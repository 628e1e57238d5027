"""ConditionalGetMiddleware built alone, from what it uses (an in-memory document table and the
source's name), or by ``build_from_crawler`` on a ``get_crawler`` crawler of a source where the
source file or the run decides: a request for a document in the index carries
If-Modified-Since / If-None-Match from its row (what the frontier read with its lease, ``KNOWN``
meta, or else the URL's row in the document table) and what the index holds (``PREVIOUS`` meta);
a forced run (``run_started``), a source deleting orphans and a page to be rendered send no
validators."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from scrapy import Request
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.meta import KNOWN, PREVIOUS, RENDER, ROBOTS_REQUEST
from searchcrawl.crawl.middlewares.conditional import ConditionalGetMiddleware
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.database import MEMORY
from searchcrawl.store.frontier import Known
from searchcrawl.store.ledger import Ledger
from tests.components import start_run

URL = "http://h.test/doc.html"
LAST_MODIFIED = "Wed, 21 Oct 2015 07:28:00 GMT"
ETAG = '"abc123"'


def row(
    state: str = "indexed", last_modified: str | None = LAST_MODIFIED, etag: str | None = ETAG, status: int | None = 200
) -> Known:
    """What the frontier read of the URL with a lease (store/frontier.py ``Known``)."""
    return Known(state, "c0ffee", last_modified, etag, status=status)


def validators(request: Request) -> tuple[bytes | None, bytes | None]:
    return request.headers.get(b"If-Modified-Since"), request.headers.get(b"If-None-Match")


@pytest.fixture
def documents() -> Iterator[DocumentTable]:
    """An in-memory document table, as the crawl's stores hand theirs to the middleware."""
    table = DocumentTable(Database(MEMORY))
    yield table
    table.database.close()


@pytest.fixture
def middleware(documents: DocumentTable) -> ConditionalGetMiddleware:
    return ConditionalGetMiddleware(documents, "unit")  # a web source's (from_crawler: its orphans are kept)


def index_document(documents: DocumentTable, url: str, last_modified: str | None, etag: str | None) -> None:
    """Put ``url`` in the index as a crawl does: cached (pending), then acknowledged by Solr."""
    columns = {"checksum": "c0ffee", "last_modified": last_modified, "etag": etag}
    Ledger(documents, "unit").record(url, Outcome(Event.CACHED, 200, "fetched", 0, columns=columns))
    assert Ledger(documents, "unit").mark_indexed([(url, "c0ffee")]) == [url]


def test_the_row_the_request_carries_gives_the_validators(middleware: ConditionalGetMiddleware) -> None:
    request = Request(URL, meta={KNOWN: row()})
    assert middleware.process_request(request) is None
    assert validators(request) == (LAST_MODIFIED.encode(), ETAG.encode())
    assert request.meta[PREVIOUS] == {"checksum": "c0ffee", "last_modified": LAST_MODIFIED, "etag": ETAG, "state": "indexed"}
    assert KNOWN not in request.meta  # read once: it is not carried on to the response


def test_only_the_validators_the_row_has_are_sent(middleware: ConditionalGetMiddleware) -> None:
    for last_modified, etag, expected in [
        (LAST_MODIFIED, None, (LAST_MODIFIED.encode(), None)),
        (None, ETAG, (None, ETAG.encode())),
        (None, None, (None, None)),
    ]:
        request = Request(URL, meta={KNOWN: row(last_modified=last_modified, etag=etag)})
        middleware.process_request(request)
        assert validators(request) == expected, (last_modified, etag)
        assert request.meta[PREVIOUS]["state"] == "indexed"


def test_a_pending_document_is_in_the_index_too(middleware: ConditionalGetMiddleware) -> None:
    request = Request(URL, meta={KNOWN: row(state="pending")})
    middleware.process_request(request)
    assert validators(request) == (LAST_MODIFIED.encode(), ETAG.encode())


def test_a_url_not_in_the_index_gets_no_validators(middleware: ConditionalGetMiddleware) -> None:
    for state in ("queued", "fetched", "excluded", "failed", "removing", "removed"):
        request = Request(URL, meta={KNOWN: row(state=state)})
        middleware.process_request(request)
        assert validators(request) == (None, None), state
        assert PREVIOUS not in request.meta, state


def test_a_navigation_page_out_of_the_index_is_asked_conditionally_while_it_is_one(
    middleware: ConditionalGetMiddleware,
) -> None:
    """Issue 91: navigation pages (917) were fetched whole in every maintenance crawl. One the rules
    still keep out gets its validators; one they no longer keep out (the source's own
    ``navigation_pages``) is fetched whole, to be indexed; other pages out of the index too."""
    navigation = "http://h.test/api/class-use/Injector.html"
    for state in ("fetched", "removed", "removing"):
        request = Request(navigation, meta={KNOWN: row(state=state, status=Status.NAVIGATION_PAGE)})
        middleware.process_request(request)
        assert validators(request) == (LAST_MODIFIED.encode(), ETAG.encode()), state
        assert request.meta[PREVIOUS]["state"] == state
    for url, status in [(navigation, Status.NOINDEX), (navigation, 404), (URL, Status.NAVIGATION_PAGE)]:
        request = Request(url, meta={KNOWN: row(state="fetched", status=status)})
        middleware.process_request(request)
        assert validators(request) == (None, None) and PREVIOUS not in request.meta, (url, status)
    ruled = ConditionalGetMiddleware(middleware.documents, "unit", navigation_pages=["*/tree/*"])
    request = Request(navigation, meta={KNOWN: row(state="fetched", status=Status.NAVIGATION_PAGE)})
    ruled.process_request(request)
    assert validators(request) == (None, None)
    agent = ConditionalGetMiddleware(middleware.documents, "unit", agent=True)
    request = Request(navigation, meta={KNOWN: row(state="fetched", status=Status.NAVIGATION_PAGE)})
    agent.process_request(request)
    assert validators(request) == (None, None)


def test_without_a_carried_row_the_document_table_is_read(documents: DocumentTable, middleware: ConditionalGetMiddleware) -> None:
    index_document(documents, URL, LAST_MODIFIED, ETAG)
    request = Request(URL)
    middleware.process_request(request)
    assert validators(request) == (LAST_MODIFIED.encode(), ETAG.encode())
    assert request.meta[PREVIOUS]["state"] == "indexed"
    unknown = Request("http://h.test/new.html")
    middleware.process_request(unknown)
    assert validators(unknown) == (None, None)
    assert PREVIOUS not in unknown.meta


def test_a_carried_row_wins_over_the_table(documents: DocumentTable, middleware: ConditionalGetMiddleware) -> None:
    """The frontier read the row with the lease: no second look-up, even when it says "unknown"."""
    index_document(documents, URL, LAST_MODIFIED, ETAG)
    request = Request(URL, meta={KNOWN: None})
    middleware.process_request(request)
    assert validators(request) == (None, None)
    assert PREVIOUS not in request.meta and KNOWN not in request.meta


def test_validators_already_on_the_request_are_kept(middleware: ConditionalGetMiddleware) -> None:
    request = Request(URL, headers={"If-None-Match": '"mine"'}, meta={KNOWN: row()})
    middleware.process_request(request)
    assert validators(request) == (LAST_MODIFIED.encode(), b'"mine"')


def test_a_robots_txt_fetch_is_left_alone(documents: DocumentTable, middleware: ConditionalGetMiddleware) -> None:
    url = "http://h.test/robots.txt"
    index_document(documents, url, LAST_MODIFIED, ETAG)
    request = Request(url, meta={ROBOTS_REQUEST: True, KNOWN: row()})
    middleware.process_request(request)
    assert validators(request) == (None, None)
    assert PREVIOUS not in request.meta


def test_a_page_to_be_rendered_gets_its_body(middleware: ConditionalGetMiddleware) -> None:
    """A browser cannot render a 304: no validators, but the index's version is still known."""
    request = Request(URL, meta={KNOWN: row(), RENDER: "browser"})
    middleware.process_request(request)
    assert validators(request) == (None, None)
    assert request.meta[PREVIOUS]["checksum"] == "c0ffee"
    auto = Request(URL, meta={KNOWN: row(), RENDER: "auto"})  # fetched statically first
    middleware.process_request(auto)
    assert validators(auto) == (LAST_MODIFIED.encode(), ETAG.encode())


def test_a_forced_recrawl_sends_no_validators(crawler_of) -> None:  # type: ignore[no-untyped-def]
    crawler = crawler_of()
    middleware = build_from_crawler(ConditionalGetMiddleware, crawler)
    run, _ = start_run(crawler, {"recrawl": "force"})  # `scrapy crawl <source> -a recrawl=force`
    assert run.forced and middleware.forced  # told by run_started
    request = Request(URL, meta={KNOWN: row()})
    middleware.process_request(request)
    assert validators(request) == (None, None)
    assert request.meta[PREVIOUS]["etag"] == ETAG


def test_a_source_deleting_orphans_sends_no_validators(crawler_of) -> None:  # type: ignore[no-untyped-def]
    """A 304 has no links, and finding orphans needs every page's links."""
    crawler = crawler_of('seeds = ["http://h.test/"]\norphans = "delete"\n')
    middleware = build_from_crawler(ConditionalGetMiddleware, crawler)
    request = Request(URL, meta={KNOWN: row()})
    middleware.process_request(request)
    assert validators(request) == (None, None)
    assert request.meta[PREVIOUS]["state"] == "indexed"
