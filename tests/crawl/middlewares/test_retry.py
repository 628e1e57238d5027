"""RetryAfterMiddleware built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a
source): a 429 or 503 with ``Retry-After`` (seconds or an HTTP date) up to
``SEARCHCRAWL_RETRY_AFTER_MAX`` is retried (its site's pause is SitePauseMiddleware's:
test_site_pause.py); a longer wait is not held (the 429/503 reaches the spider); without a usable
``Retry-After`` Scrapy's own retry rules apply.

Like Scrapy's RetryMiddleware it builds retries with ``get_retry_request(spider=crawler.spider)``,
and ``crawler.spider`` is set only by ``Crawler.crawl()``: the fixture sets it as ``crawl()``
does, with the spider class's ``from_crawler``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.middlewares.retry import RetryAfterMiddleware
from tests.components import source_crawler

URL = "http://h.test/busy.html"


def build(tmp_path: Path, **settings: object) -> RetryAfterMiddleware:
    crawler = source_crawler(tmp_path, RETRY_TIMES=2, **settings)
    crawler.spider = crawler.spidercls.from_crawler(crawler)  # what Crawler.crawl() does first
    return build_from_crawler(RetryAfterMiddleware, crawler)


@pytest.fixture
def middleware(tmp_path: Path) -> RetryAfterMiddleware:
    return build(tmp_path)


def answer(status: int, retry_after: str | None = None, request: Request | None = None) -> tuple[Request, HtmlResponse]:
    request = request or Request(URL, meta={"depth": 1})
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return request, HtmlResponse(request.url, status=status, headers=headers, body=b"busy", request=request)


def test_retry_after_on_a_503_retries(middleware: RetryAfterMiddleware) -> None:
    request, response = answer(503, "1")
    retry = middleware.process_response(request, response)
    assert isinstance(retry, Request) and retry.url == URL
    assert (retry.meta["retry_times"], retry.dont_filter, retry.priority) == (1, True, -1)
    assert isinstance(middleware.process_response(*answer(503, "0", Request("http://h.test/other.html"))), Request)
    stats = middleware.crawler.stats
    assert stats.get_value("retry/count") == 2
    assert stats.get_value("retry/reason_count/503 Retry-After 1s") == 1


def test_retry_after_as_an_http_date_on_a_429(middleware: RetryAfterMiddleware) -> None:
    past = format_datetime(datetime.now(UTC) - timedelta(minutes=5), usegmt=True)
    retry = middleware.process_response(*answer(429, past))
    assert isinstance(retry, Request) and retry.meta["retry_times"] == 1
    soon = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
    request, response = answer(429, soon)
    assert middleware.process_response(request, response) is response  # an hour: beyond the cap


def test_a_wait_beyond_the_cap_is_not_held(middleware: RetryAfterMiddleware) -> None:
    """SEARCHCRAWL_RETRY_AFTER_MAX (120 s): a day's wait leaves the URL to the next crawl."""
    for status in (429, 503):
        request, response = answer(status, "86400")
        assert middleware.process_response(request, response) is response, status
    assert middleware.crawler.stats.get_value("retry/count") is None


def test_the_cap_is_a_setting(tmp_path: Path) -> None:
    middleware = build(tmp_path, SEARCHCRAWL_RETRY_AFTER_MAX=0.5)
    request, response = answer(503, "1")
    assert middleware.process_response(request, response) is response
    assert isinstance(middleware.process_response(*answer(503, "0")), Request)


def test_without_a_usable_retry_after_scrapys_rules_apply(middleware: RetryAfterMiddleware) -> None:
    for status, header in [(503, None), (429, None), (503, "soon"), (500, "1"), (502, "1")]:
        retry = middleware.process_response(*answer(status, header))
        assert isinstance(retry, Request) and retry.meta["retry_times"] == 1, (status, header)
    for status in (200, 404):  # not retried, Retry-After or not
        request, response = answer(status, "1")
        assert middleware.process_response(request, response) is response, status


def test_dont_retry_and_spent_retries_give_the_answer_to_the_spider(middleware: RetryAfterMiddleware) -> None:
    request, response = answer(503, "1", Request(URL, meta={"dont_retry": True}))
    assert middleware.process_response(request, response) is response
    request, response = answer(429, "0", Request(URL, meta={"retry_times": 2}))  # RETRY_TIMES=2
    assert middleware.process_response(request, response) is response
    assert middleware.crawler.stats.get_value("retry/max_reached") == 1


def test_giving_up_is_a_warning_not_an_error(middleware: RetryAfterMiddleware, caplog: pytest.LogCaptureFixture) -> None:
    """A page that fails its retries is recorded and fetched again by the next crawl: Scrapy's
    "Gave up retrying" comes at WARNING (RETRY_GIVE_UP_LOG_LEVEL), never at ERROR."""
    request = Request(URL, meta={"depth": 1, "retry_times": 2})
    with caplog.at_level("DEBUG"):
        assert middleware.process_response(request, answer(500, request=request)[1]).status == 500
        assert middleware.process_response(request, answer(503, "1", request=request)[1]).status == 503
    gave_up = [record for record in caplog.records if record.getMessage().startswith("Gave up retrying")]
    assert len(gave_up) == 2 and {record.levelname for record in gave_up} == {"WARNING"}
