"""AgentDownloadHandler built alone (``build_from_crawler`` on a ``get_crawler`` crawler of an
agent source, ``tests.components``, with the source's spider on it: the agent is the spider's):
how it answers an agent's requests as an HTTP server would, and what it refuses. The agent is the
tests' JSON repository (tests/custom_agents.py), whose fetches are logged, so a test sees what
was read; its documents are read in a worker thread (``asyncio.to_thread``), so each request runs
in ``asyncio.run``. Downloads from a reference's ``location`` go through the engine and are
covered end to end (tests/e2e); here, only the origin check that comes before any of them."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse, Response
from scrapy.utils.misc import build_from_crawler

from searchcrawl.access.tokens import Access, Grant
from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.handlers.agent import AgentDownloadHandler
from searchcrawl.crawl.meta import DUPLICATE_OF, REFERENCE
from searchcrawl.crawl.pipelines.checksum import versioned
from searchcrawl.rules.lifecycle import Event
from searchcrawl.rules.status_codes import Status
from tests.components import close_stores, source_crawler

NAME = "repo-unit"


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    path = tmp_path / "repository.json"
    path.write_text(
        json.dumps(
            {
                "a": {"title": "A", "body": "<html><body><p>Document a.</p></body></html>", "version": 3},
                "big": {"title": "Big", "body": "x" * 5000, "type": "text/plain"},
                "hr": {"title": "HR", "body": "<p>Pay.</p>", "readers": ["group:hr"]},
                "broken": {"title": "B", "body": "<p>B.</p>", "readers_unreadable": "the ACL of /b cannot be read"},
                "moved": {"title": "M", "body": "<p>Locked text.</p>", "readers": ["uid:0"], "token_read": "9"},
            }
        )
    )
    return path


@pytest.fixture
def handler(tmp_path: Path, repository: Path) -> Any:
    source = (
        'type = "agent"\nagent = "json_repository"\n'
        'fetch_origins = ["https://files.test"]\n'
        f"[agent_options]\npath = {json.dumps(str(repository))}\ninline = false\n"
        f"failing_keys = {json.dumps(str(repository) + '.failing')}\n"
        "[access]\npublic = true\n"
    )
    crawler = source_crawler(tmp_path, source, name=NAME, DOWNLOAD_MAXSIZE=1000)
    spider = crawler.spider = crawler.spidercls.from_crawler(crawler)  # what Crawler.crawl() does first: it makes the agent
    yield build_from_crawler(AgentDownloadHandler, crawler)
    spider.agent.close()  # the engine's stop does it in a crawl
    close_stores(crawler)


def fetched(repository: Path) -> list[str]:
    log = Path(f"{repository}.fetched")
    return log.read_text().split() if log.exists() else []


def answer(handler: AgentDownloadHandler, key: str, headers: dict[str, str] | None = None, **meta: Any) -> Response:
    request = Request(f"repo://{NAME}/{key}", headers=headers, meta=meta)
    return asyncio.run(handler.download_request(request))


def refusal(handler: AgentDownloadHandler, url: str, **meta: Any) -> RequestRefused:
    with pytest.raises(RequestRefused) as refused:
        asyncio.run(handler.download_request(Request(url, meta=meta)))
    return refused.value


def test_a_document_is_answered_200_with_its_token_and_time_as_headers(handler, repository: Path) -> None:
    response = answer(handler, "a", **{REFERENCE: {"token": "3", "modified": "2026-03-01T10:00:00+00:00"}})
    assert isinstance(response, HtmlResponse) and response.status == 200
    assert b"Document a." in response.body
    assert response.headers[b"ETag"] == b"3" and response.headers[b"Last-Modified"] == b"Sun, 01 Mar 2026 10:00:00 GMT"
    assert fetched(repository) == ["a"]


def test_content_handed_over_with_the_listing_is_not_fetched_again(handler, repository: Path) -> None:
    inline = {"body": base64.b64encode(b"plain words").decode(), "content_type": "text/plain"}
    response = answer(handler, "a", **{REFERENCE: {"token": "3", "content": inline}})
    assert response.status == 200 and response.body == b"plain words" and fetched(repository) == []


def test_an_unchanged_token_is_a_304_without_reading_the_document(handler, repository: Path) -> None:
    response = answer(handler, "a", {"If-None-Match": "3"}, **{REFERENCE: {"token": "3"}})
    assert response.status == 304 and response.headers[b"ETag"] == b"3" and fetched(repository) == []
    # a new token is read
    assert answer(handler, "a", {"If-None-Match": "2"}, **{REFERENCE: {"token": "3"}}).status == 200


def test_an_unchanged_duplicate_stays_a_duplicate_of_the_same_original_unread(handler, repository: Path) -> None:
    original = f"repo://{NAME}/b"
    refused = refusal(handler, f"repo://{NAME}/a", **{REFERENCE: {"token": "3"}, DUPLICATE_OF: ["3", original]})
    assert refused.status == Status.DUPLICATE and refused.outcome.event == Event.GONE
    assert not refused.outcome.fetched and refused.outcome.columns.get("duplicate_of") == original
    assert fetched(repository) == []
    # its token changed: read again (it may differ from the original now)
    assert answer(handler, "a", **{REFERENCE: {"token": "3"}, DUPLICATE_OF: ["2", original]}).status == 200


def test_a_duplicate_whose_readers_changed_is_read_again(handler, repository: Path) -> None:
    """Its checksum holds who could read it (crawl/pipelines/checksum.py): the same token with
    other readers is no longer a copy of the original, and is read to be judged again."""
    original = f"repo://{NAME}/b"
    restricted = versioned("0" * 64, Access.of([Grant("group:hr", "test")]))
    given = {"token": "3", "access": Access.of([Grant("group:hr", "test")]).to_data()}
    refused = refusal(handler, f"repo://{NAME}/a", **{REFERENCE: given, DUPLICATE_OF: ["3", original, restricted]})
    assert refused.status == Status.DUPLICATE and fetched(repository) == []
    # the source's [access] (public) now: other readers
    assert answer(handler, "a", None, **{REFERENCE: {"token": "3"}, DUPLICATE_OF: ["3", original, restricted]}).status == 200
    assert fetched(repository) == ["a"]


def test_a_reference_whose_access_cannot_be_read_is_refused_unread_927(handler, repository: Path) -> None:
    reference = {"token": "3", "access_unreadable": "the ACL of /a cannot be read: [Errno 5] Input/output error"}
    refused = refusal(handler, f"repo://{NAME}/a", **{REFERENCE: reference})
    assert refused.status == Status.ACCESS_UNREADABLE and refused.outcome.event == Event.GONE
    assert "cannot be read" in refused.reason and fetched(repository) == []


def test_the_access_read_with_the_content_replaces_the_listings(handler, repository: Path) -> None:
    """Issue 72: a file listed public, made private and rewritten before its turn, was indexed
    with its new text and the listing's access. What the agent read with the content is in the
    request's reference (what the spider and every pipeline read): 927 when it could not be read."""
    listed = {"token": "3", "access": Access.public("the listing").to_data()}
    response = answer(handler, "hr", **{REFERENCE: listed})
    assert response.status == 200 and b"Pay." in response.body
    assert Access.from_data(response.meta[REFERENCE]["access"]) == Access.of([Grant("group:hr", "the repository, when read")])
    assert response.meta[REFERENCE]["token"] == "3"
    refused = refusal(handler, f"repo://{NAME}/broken", **{REFERENCE: listed})
    assert refused.status == Status.ACCESS_UNREADABLE and refused.outcome.event == Event.GONE
    assert "cannot be read" in refused.reason and fetched(repository) == ["hr", "broken"]
    # an agent that reads none with the content: the listing's stays
    assert answer(handler, "a", **{REFERENCE: listed}).meta[REFERENCE]["access"] == listed["access"]


def test_review_a_content_read_with_another_token_than_the_listings_is_answered_without_an_etag(handler) -> None:
    """Review of issue 72: a link listed on an open file and read on a locked one (repointed
    between): indexed with the listing's token, the next crawl's 304 on that token would put the
    open file's access on the locked text. No ETag: the next crawl reads it again."""
    response = answer(handler, "moved", **{REFERENCE: {"token": "3", "access": Access.public("the listing").to_data()}})
    assert response.status == 200 and b"Locked text." in response.body
    assert b"ETag" not in response.headers
    assert Access.from_data(response.meta[REFERENCE]["access"]) == Access.of([Grant("uid:0", "the repository, when read")])
    # the token read is the listing's: indexed as ever
    assert answer(handler, "moved", **{REFERENCE: {"token": "9"}}).headers[b"ETag"] == b"9"


def test_a_document_gone_from_the_repository_is_a_404(handler) -> None:
    assert answer(handler, "removed", **{REFERENCE: {"token": "1"}}).status == 404


def test_a_document_larger_than_download_maxsize_is_refused_922(handler) -> None:
    refused = refusal(handler, f"repo://{NAME}/big")
    assert refused.status == Status.TOO_LARGE and refused.outcome.event == Event.GONE
    inline = {"body": base64.b64encode(b"y" * 2000).decode(), "content_type": "text/plain"}
    assert refusal(handler, f"repo://{NAME}/a", **{REFERENCE: {"content": inline}}).status == Status.TOO_LARGE


def test_a_repository_that_cannot_be_read_fails_the_request_not_the_document(handler, repository: Path) -> None:
    Path(f"{repository}.failing").write_text("a\n")
    refused = refusal(handler, f"repo://{NAME}/a")
    assert refused.status == Status.CONNECTION_FAILED and refused.outcome.event == Event.FAILED


@pytest.mark.parametrize(
    "url",
    [
        "http://h.test/a",  # the web's, not the agent's
        "file:///etc/passwd",
        "repo://another-source/a",  # the agent of another source
    ],
)
def test_a_url_that_is_not_the_agents_is_refused(handler, url: str) -> None:
    assert refusal(handler, url).status == Status.EXCLUDED_SCHEME


@pytest.mark.parametrize(
    "location", ["https://evil.test/a.pdf", "http://files.test/a.pdf", "https://files.test:8443/a.pdf", "file:///etc/passwd"]
)
def test_a_location_outside_fetch_origins_is_never_requested(handler, location: str) -> None:
    refused = refusal(handler, f"repo://{NAME}/a", **{REFERENCE: {"location": location}})
    assert refused.status == Status.EXCLUDED_DOMAIN and location in refused.reason


def test_a_web_source_has_no_agent_handler(tmp_path: Path) -> None:
    crawler = source_crawler(tmp_path, 'seeds = ["http://h.test/"]\n')
    crawler.spider = crawler.spidercls.from_crawler(crawler)
    try:
        with pytest.raises(NotConfigured):
            build_from_crawler(AgentDownloadHandler, crawler)
    finally:
        close_stores(crawler)
