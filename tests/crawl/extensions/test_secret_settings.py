"""SecretSettings alone: the values of secret-ish settings given to a crawl are masked in every
log line, from Scrapy's "Overridden settings" line on; it keeps no state and is never enabled.

The crawler of ``tests.components`` runs it as Scrapy does (the extension manager, first of the
project's EXTENSIONS); ``build_from_crawler`` runs it again. Masks are process-wide, so every test
uses canary values of its own."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.extensions.secret_settings import SecretSettings
from searchcrawl.system.secrets import MASK
from tests.components import close_stores, source_crawler


def canary(label: str) -> str:
    return f"{label}-canary-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def closing() -> Iterator[list[Crawler]]:
    made: list[Crawler] = []
    yield made
    for crawler in made:
        close_stores(crawler)


def logged(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(record.getMessage() for record in caplog.records)


def test_secret_settings_are_masked_from_scrapys_first_line_on(
    tmp_path: Path, closing: list[Crawler], caplog: pytest.LogCaptureFixture
) -> None:
    password, token, user = canary("pass"), canary("token"), canary("user")
    with caplog.at_level(logging.INFO):
        crawler = source_crawler(tmp_path, HTTPAUTH_PASS=password, HTTPAUTH_USER=user, SERVICES={"search": {"api_token": token}})
        closing.append(crawler)
        logging.getLogger("searchcrawl.test").error("proxy refused %s with %s; token %s", user, password, token)
    text = logged(caplog)
    overridden = next(record.getMessage() for record in caplog.records if record.getMessage().startswith("Overridden settings"))
    assert f"'HTTPAUTH_PASS': {MASK}" in overridden  # Scrapy's own line, logged after the extensions are built
    assert password not in text and token not in text
    assert f"proxy refused {user} with {MASK}; token {MASK}" in text  # a user name is no secret
    assert crawler.get_extension(SecretSettings) is None  # it got out of the way


def test_built_again_it_only_remembers_and_is_not_configured(tmp_path: Path, closing: list[Crawler], caplog) -> None:
    crawler = source_crawler(tmp_path, MY_API_KEY=canary("key"), LOG_LEVEL="INFO")
    closing.append(crawler)
    with pytest.raises(NotConfigured):
        build_from_crawler(SecretSettings, crawler)
    key = crawler.settings["MY_API_KEY"]
    with caplog.at_level(logging.INFO):
        logging.getLogger("searchcrawl.test").info("key=%s level=%s", key, crawler.settings["LOG_LEVEL"])
    assert logged(caplog) == f"key={MASK} level=INFO"


def test_switches_and_short_values_are_no_secrets(tmp_path: Path, closing: list[Crawler], caplog) -> None:
    # (Scrapy's defaults, FTP_PASSWORD's "guest", are no secrets either; but source_crawler gives
    # every default to get_crawler at project priority, so through it "guest" is masked: see
    # tests/system/test_secrets.py, with a crawler of plain get_crawler.)
    crawler = source_crawler(tmp_path, CACHE_KEY_ENABLED=True, FTP_PASSIVE_MODE=False, SHORT_KEY="abc")
    closing.append(crawler)
    with caplog.at_level(logging.INFO):
        logging.getLogger("searchcrawl.test").info("cache key: True; passive: False; short: abc")
    assert logged(caplog) == "cache key: True; passive: False; short: abc"
