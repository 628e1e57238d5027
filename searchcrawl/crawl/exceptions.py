"""Exceptions that carry what happened to a URL through Scrapy's own channels.

A downloader middleware that refuses a request raises ``RequestRefused`` (an ``IgnoreRequest``,
so Scrapy treats it as any refusal); a pipeline that keeps an item out of the index raises
``NotIndexed`` (a ``DropItem``). Both carry an ``Outcome`` (searchcrawl/rules/lifecycle.py), which the
ledger writer (crawl/ledger_writer.py) records: the spider's errback hands it the refusals,
Scrapy's ``item_dropped`` signal the dropped items. Any other ``IgnoreRequest`` comes from one of
Scrapy's own safety middlewares (a decompression bomb, ...) and gets a status too: no URL is
left without one.

A component a source does not need (no form login, no sitemaps, ...) raises ``not_needed(...)``:
Scrapy logs a WARNING for every ``NotConfigured`` with a message, which would put two or three
warnings into every ordinary crawl's log; the reason goes to DEBUG instead.
"""

from __future__ import annotations

import logging

from scrapy.exceptions import DropItem, IgnoreRequest, NotConfigured

from searchcrawl.rules.lifecycle import Event, Outcome

logger = logging.getLogger(__name__)


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


class TransportFailed(RequestRefused):
    """A request the source's transport cannot carry: its ``[tls]`` cannot be used (TLS_FAILED) or
    its proxy refused it or cannot tunnel it (PROXY_FAILED). A failure that may pass (FAILED, not
    counted toward max_failures), and unlike a rule's refusal a failure of the network: the
    failures by kind (crawl/run.py) count it as one."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(status, reason, event=Event.FAILED, counted=False)


class Unsent(IgnoreRequest):
    """A request given back before it was sent, as a suspend or stop closes the crawl
    (extensions/give_back.py): no outcome, its URL stays leased, and the frontier queues it
    again as the run closes, for the resumed run to fetch."""


class SessionHeld(Exception):
    """Not an error: a page request reached the form login's gate while its origin logs in again,
    or with a session older than the newest (crawl/middlewares/form_login.py);
    FormLoginMiddleware sends it again after the login. Nothing went out: no network failure."""


class NotIndexed(DropItem):
    """A pipeline keeps a fetched document out of the index: ``outcome`` says why."""

    def __init__(self, outcome: Outcome, message: str, log_level: str = "DEBUG") -> None:
        super().__init__(message, log_level=log_level)
        self.outcome = outcome


def not_needed(component: type, reason: str) -> NotConfigured:
    """The ``NotConfigured`` for a component this source has no use for: said once at DEBUG, and
    without a message, so that Scrapy does not log it as a warning."""
    logger.debug("%s is off for this crawl: %s", component.__name__, reason)
    return NotConfigured()
