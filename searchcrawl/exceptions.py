"""Exceptions that carry a URL's status through Scrapy's own channels.

A downloader middleware that refuses a request raises ``RequestRefused`` (an ``IgnoreRequest``,
so Scrapy treats it as any refusal) with the crawler status and the reason; the source spider's
errback writes the URL's row from it. Any other ``IgnoreRequest`` comes from one of Scrapy's own
safety middlewares (a decompression bomb, ...) and gets a status there too: no URL is left
without one.
"""

from __future__ import annotations

from scrapy.exceptions import IgnoreRequest

from .status import Status


class RequestRefused(IgnoreRequest):
    """A rule kept a request from the network: ``status`` and ``reason`` for its row.

    ``recorded``: the raiser wrote the row already (the boundary's exclusions are written in
    batches that keep known URLs' rows)."""

    def __init__(self, status: Status, reason: str, *, recorded: bool = False) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.recorded = recorded
