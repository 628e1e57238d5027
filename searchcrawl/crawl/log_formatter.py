"""Scrapy's LogFormatter (the ``LOG_FORMATTER`` setting), naming an item instead of printing it.

Scrapy's own puts the whole item into its lines: "Dropped: <why>" (at the drop's level, WARNING
for a document that could not be converted), "Error processing <item>" (ERROR) and "Scraped from"
(DEBUG). A CrawledDocument holds the page's text, its parsed tree and, for a PDF or an office
file, its bytes: one line of megabytes, a document's words in the log. Here an item is named by
what identifies it (``item_name``): the level, the message and everything else stay Scrapy's.
"""

from __future__ import annotations

from typing import Any

from scrapy import Spider
from scrapy.http import Response
from scrapy.logformatter import LogFormatter, LogFormatterResult
from twisted.python.failure import Failure

MAX_ITEM_CHARS = 200  # an item that is not a document: its repr, cut to this


def item_name(item: Any) -> str:
    """A short name of ``item`` for a log line: a document's source and URL (an item with a
    ``url``), else its repr cut to MAX_ITEM_CHARS."""
    url = getattr(item, "url", None)
    if isinstance(url, str):
        source = getattr(item, "source", None)
        return f"<{type(item).__name__} {source + ' ' if isinstance(source, str) else ''}{url[:MAX_ITEM_CHARS]}>"
    text = repr(item)
    return text if len(text) <= MAX_ITEM_CHARS else text[: MAX_ITEM_CHARS - 3] + "..."


def _named(result: LogFormatterResult) -> LogFormatterResult:
    args = result.get("args")
    if isinstance(args, dict) and "item" in args:
        result["args"] = {**args, "item": item_name(args["item"])}
    return result


class DocumentLogFormatter(LogFormatter):
    """Scrapy's LogFormatter with items named, never printed (see the module docstring)."""

    def scraped(self, item: Any, response: Response | Failure | None, spider: Spider) -> LogFormatterResult:
        return _named(super().scraped(item, response, spider))

    def dropped(
        self, item: Any, exception: BaseException, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult:
        return _named(super().dropped(item, exception, response, spider))

    def item_error(
        self, item: Any, exception: BaseException, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult:
        return _named(super().item_error(item, exception, response, spider))
