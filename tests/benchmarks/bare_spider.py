"""The benchmark's baseline: bare Scrapy fetching the synthetic site and following its links
(LinkExtractor, Scrapy's own scheduler and dupefilter), nothing else. Run outside the project
(no searchcrawl settings) with `scrapy runspider`."""

from __future__ import annotations

from collections.abc import Iterator

import scrapy
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor


class BareSpider(scrapy.Spider):
    name = "bare"

    def __init__(self, start_url: str = "", **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.start_urls = [start_url]
        self.allowed_domains = ["127.0.0.1"]
        self.links = LinkExtractor(deny_extensions=[])

    def parse(self, response: Response) -> Iterator[scrapy.Request]:
        if isinstance(response, HtmlResponse):
            for link in self.links.extract_links(response):
                yield response.follow(link.url)
