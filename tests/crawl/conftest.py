"""Fixtures of the component tests: crawlers of a source, built by Scrapy's get_crawler."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy.crawler import Crawler

from tests.components import DEFAULT_SOURCE, close_stores, source_crawler


@pytest.fixture
def crawler_of(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., Crawler]]:
    """``crawler_of(source=None, **settings)``: a crawler of a source file (the test module's
    ``SOURCE`` by default) with the module's ``CRAWLER_SETTINGS`` under ``settings``; its
    stores (document table, cache, converter) are closed after the test."""
    made: list[Crawler] = []
    default_source = getattr(request.module, "SOURCE", DEFAULT_SOURCE)
    defaults: dict[str, Any] = getattr(request.module, "CRAWLER_SETTINGS", {})

    def make(source: str | None = None, **settings: Any) -> Crawler:
        crawler = source_crawler(tmp_path, default_source if source is None else source, **{**defaults, **settings})
        made.append(crawler)
        return crawler

    yield make
    for crawler in made:
        close_stores(crawler)
