"""The components an ordinary source does not need stay out of its log's warnings."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from scrapy.core.downloader.middleware import DownloaderMiddlewareManager
from scrapy.core.spidermw import SpiderMiddlewareManager
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.handlers.agent import AgentDownloadHandler
from tests.components import source_crawler


def test_a_source_without_logins_sitemaps_or_an_agent_builds_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Scrapy warns of every NotConfigured with a message ("Disabled ...: ..."): a plain source's
    crawl printed two such warnings every time. The reasons are said at DEBUG."""
    crawler = source_crawler(tmp_path, 'seeds = ["http://h.test/"]\nobey_robots = false\n')
    with caplog.at_level(logging.DEBUG):
        downloader = DownloaderMiddlewareManager.from_crawler(crawler)
        spider = SpiderMiddlewareManager.from_crawler(crawler)
        with pytest.raises(NotConfigured) as refused:
            build_from_crawler(AgentDownloadHandler, crawler)
    assert refused.value.args == ()
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []
    said = "\n".join(record.getMessage() for record in caplog.records if record.name == "searchcrawl.crawl.exceptions")
    for component, reason in [
        ("FormLoginMiddleware", "the source has no [[auth]] tables"),
        ("SiteAuthMiddleware", "no [[auth]] tables"),
        ("SitemapMiddleware", "the source reads no sitemaps"),
        ("AgentDownloadHandler", "not a source with an agent"),
    ]:
        assert f"{component} is off for this crawl: " in said and reason in said
    enabled = {type(component).__name__ for component in downloader.middlewares + spider.middlewares}
    assert not enabled & {"FormLoginMiddleware", "SiteAuthMiddleware", "SitemapMiddleware"}
    assert "ScopeMiddleware" in enabled
