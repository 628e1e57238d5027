"""The example source's spider (its ``spider_class``): the example intranet served while it crawls
(dev/example_site.py), so that `searchcrawl crawl example` works on its own."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from scrapy import Request, signals

from searchcrawl.crawl.spider import SourceSpider
from searchcrawl.dev.example_site import HOST, PORT, serving

logger = logging.getLogger(__name__)


class ExampleSiteSpider(SourceSpider):
    """The example source's spider: serves the example intranet while it crawls, unless something
    (`searchcrawl demo`) serves it already."""

    async def start(self) -> AsyncIterator[Request]:
        served = contextlib.ExitStack()
        try:
            url = served.enter_context(serving())
        except OSError as exc:
            logger.info(
                "The example intranet is not served by this crawl: %s:%d is taken (%s); crawling what answers there",
                HOST,
                PORT,
                exc.strerror,
            )
        else:
            logger.info("Serving the example intranet at %s for this crawl", url)
            self.crawler.signals.connect(lambda: served.close(), signal=signals.engine_stopped, weak=False)
        async for request in super().start():
            yield request
