"""Exceptions that carry what happened to a URL through Scrapy's own channels.

A downloader middleware that refuses a request raises ``RequestRefused`` (an ``IgnoreRequest``,
so Scrapy treats it as any refusal); a pipeline that keeps an item out of the index raises
``NotIndexed`` (a ``DropItem``). Both carry an ``Outcome`` (searchcrawl/rules/lifecycle.py), which the
ledger writer (crawl/ledger_writer.py) records: the spider's errback hands it the refusals,
Scrapy's ``item_dropped`` signal the dropped items. Any other ``IgnoreRequest`` comes from one of
Scrapy's own safety middlewares (a decompression bomb, ...) and gets a status too: no URL is
left without one.
"""

from __future__ import annotations

from scrapy.exceptions import DropItem, IgnoreRequest

from searchcrawl.rules.lifecycle import Event, Outcome


class RequestRefused(IgnoreRequest):
    """A rule kept a request from the network: ``status`` and ``reason`` for its row.

    ``event``: what happened to the URL, EXCLUDED by default (a rule); FAILED for a failure that
    may pass (robots.txt unavailable: counted toward ``max_failures``, never a removal by
    itself); GONE for an answer without a document (a permanent redirect out of the boundary);
    UNCHANGED, with ``fetched=False``, for a page its sitemap says is unchanged."""

    def __init__(
        self, status: int, reason: str, *, event: Event = Event.EXCLUDED, counted: bool = True, fetched: bool = True
    ) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.outcome = Outcome(event, int(status), reason, counted=counted, fetched=fetched)


class NotIndexed(DropItem):
    """A pipeline keeps a fetched document out of the index: ``outcome`` says why."""

    def __init__(self, outcome: Outcome, message: str, log_level: str = "DEBUG") -> None:
        super().__init__(message, log_level=log_level)
        self.outcome = outcome
