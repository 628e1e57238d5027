"""The benchmark's baseline: bare Scrapy fetching the site and following its links
(LinkExtractor, Scrapy's own scheduler and dupefilter), nothing else. Run outside the project
(no searchcrawl settings) with `scrapy runspider`.

It follows what the crawler follows by default, so that both fetch the same URLs: links of a,
area, frame and iframe (href, src), on the seed's host, not to the extensions the benchmark
passes as ``deny_extensions`` (comma-separated; none if empty)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor


class BareSpider(scrapy.Spider):
    name = "bare"

    def __init__(self, start_url: str = "", deny_extensions: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [start_url]
        self.allowed_domains = ["127.0.0.1"]
        self.links = LinkExtractor(
            tags=("a", "area", "frame", "iframe"),
            attrs=("href", "src"),
            deny_extensions=[ext for ext in deny_extensions.split(",") if ext],
        )

    def parse(self, response: Response) -> Iterator[scrapy.Request]:
        if isinstance(response, HtmlResponse):
            for link in self.links.extract_links(response):
                yield response.follow(link.url)
