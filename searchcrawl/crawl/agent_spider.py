"""The spider of a source that is not web sites: its agent (searchcrawl/agents/) lists document
references, and each goes through the crawl as a web page does (the frontier, the document
table and its statuses, conversion, attributes, the cache and the push, maintenance crawls).

The listing runs in a worker thread, a batch at a time; each batch of references is admitted
(the scope filter), queued in the durable frontier in one statement and marked as listed in this
run, and the engine is woken to lease it. A reference's token, fields, metadata and (small)
content travel with its request (meta ``REFERENCE``, persisted), and crawl/handlers/agent.py
answers the request from them. When the listing has named everything, the documents it did not
name leave the index (CrawlState.settle_listing), while the crawl goes on. A listing that fails
(AgentError) ends the run failed, and nothing is removed for it.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import logging
import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.exceptions import CloseSpider
from scrapy.http import Response, TextResponse

from searchcrawl.agents.base import AgentError, Reference
from searchcrawl.content.extract import DEFAULT_ATTRIBUTES, INT_RANGES, TYPE_SUFFIXES, integer_in_range, mimetype_of
from searchcrawl.crawl.extensions.crawl_state import SKIPPED_STAT
from searchcrawl.crawl.frontier_scheduler import WAKE_URL
from searchcrawl.crawl.items import CrawledDocument
from searchcrawl.crawl.meta import PREVIOUS, REFERENCE, WAKE
from searchcrawl.crawl.spider import SourceSpider

logger = logging.getLogger(__name__)

LISTING_BATCH = 500  # references listed, admitted and queued at a time


def reference_data(reference: Reference, inline_bytes: int) -> dict[str, Any]:
    """A reference as JSON-able request data: content above ``inline_bytes`` is left to the
    agent's ``fetch`` (the frontier stores the data of every queued document)."""
    data: dict[str, Any] = {
        "token": reference.token,
        "modified": _utc(reference.modified).isoformat() if reference.modified else None,
        "fields": given_fields(reference),
        "metadata": dict(reference.metadata),
    }
    if reference.location:
        data["location"] = reference.location
    content = reference.content
    if content is not None and len(content.body) <= inline_bytes:
        data["content"] = {
            "body": base64.b64encode(content.body).decode("ascii"),
            "content_type": content.content_type,
            "name": content.name,
        }
    return data


# The Solr fields an agent may give: the default attributes, the document's own dates and
# display URL, and typed dynamic fields; never the identity (id, url, source, host), what the
# crawl computes (checksum, crawled_at, mimetype, content) or Solr's own (_version_)
AGENT_FIELDS = DEFAULT_ATTRIBUTES | {"last_modified", "display_url"}
TYPED_FIELD = re.compile(r"^[a-z][a-z0-9_]*(" + "|".join(sorted(set(TYPE_SUFFIXES.values()))) + r")$")
SCALARS = (str, int, float, bool)
INTEGER_KINDS = {TYPE_SUFFIXES[kind]: kind for kind in INT_RANGES}  # "_i" -> "int"


def given_fields(reference: Reference) -> dict[str, Any]:
    """A reference's Solr fields the crawl takes (JSON-able): others are left out, with a
    DEBUG line; a display URL only when it is http(s) or file (never ``javascript:``)."""
    fields: dict[str, Any] = {}
    for name, value in reference.fields.items():
        value = _jsonable(value)
        if name not in AGENT_FIELDS and not TYPED_FIELD.match(name):
            logger.debug("Field %r of %s left out: not a field an agent may set", name, reference.key)
        elif not (isinstance(value, SCALARS) or (isinstance(value, list) and all(isinstance(v, SCALARS) for v in value))):
            logger.debug("Field %r of %s left out: not a value or a list of values", name, reference.key)
        elif name == "display_url" and not (isinstance(value, str) and urlsplit(value).scheme in ("http", "https", "file")):
            logger.debug("Display URL of %s left out: not an http(s) or file URL", reference.key)
        elif (beyond := _beyond_range(name, value)) is not None:
            logger.debug("Field %r of %s left out: %s", name, reference.key, beyond)
        else:
            fields[name] = value
    return fields


def _beyond_range(name: str, value: Any) -> str | None:
    """Why a number given for an int or long field (``_i``, ``_l``) cannot be stored (Solr would
    wrap it: 99999999999 as 1215752191), or None."""
    kind = INTEGER_KINDS.get(name[name.rfind("_") :])
    if kind is None:
        return None
    for number in value if isinstance(value, list) else [value]:
        if isinstance(number, int) and not isinstance(number, bool):
            try:
                integer_in_range(number, kind)
            except ValueError as exc:
                return str(exc)
    return None


def _utc(moment: datetime) -> datetime:
    """An agent's time in UTC (a naive one is taken as UTC)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(part) for part in value]
    return value


class AgentSpider(SourceSpider):
    """Crawl a source of another type than web sites: its agent's references, no links."""

    renders = False  # an agent's handler answers its references: no browser

    async def start(self) -> AsyncIterator[Request]:
        context = self.context
        agent = context.agent
        assert agent is not None  # the spider loader makes this spider for agent sources only
        frontier = context.frontier
        if frontier is None:  # a read-only crawl (`scrapy explain`) lists nothing
            return
        since = self.listing_since()
        context.listed_since = since
        inline = self.crawler.settings.getint("SEARCHCRAWL_AGENT_INLINE_BYTES")
        logger.info(
            "Listing %s (%s)%s", self.source.name, type(agent).__name__, f", changes since {since.isoformat()}" if since else ""
        )
        references = agent.references(since)
        budget = self.crawler.settings.getint("SEARCHCRAWL_AGENT_BATCH_BYTES")
        listed = 0
        while True:
            try:
                batch = await asyncio.to_thread(_take, references, LISTING_BATCH, budget)
            except Exception as exc:  # noqa: BLE001 - an agent's (or its repository's) any error: the run fails
                reason = str(exc) if isinstance(exc, AgentError) else f"{type(exc).__name__}: {exc}"
                logger.error("The listing of %s failed: %s; nothing is removed", self.source.name, reason)
                raise CloseSpider("failed") from None
            if not batch:
                break
            entries = [
                entry
                for reference in batch
                if (
                    entry := self.admission.reference(
                        agent.url_for(reference.key), {REFERENCE: reference_data(reference, inline)}
                    )
                )
            ]
            context.flush_exclusions()
            if entries:
                frontier.add(entries)
                context.writer.mark_linked([entry.url for entry in entries])
            listed += len(batch)
            logger.debug("Listed %d references of %s (%d queued)", listed, self.source.name, len(entries))
            yield Request(WAKE_URL, dont_filter=True, meta={WAKE: True})  # the engine leases them now
        if since is not None:  # changes only: what failed before is asked again, with its reference then
            failing = [
                entry
                for url, data in context.table.failing(self.source.name)
                if agent.key_of(url) is not None and (entry := self.admission.reference(url, data))
            ]
            context.flush_exclusions()
            if failing:
                frontier.add(failing)
                context.writer.mark_linked([entry.url for entry in failing])
                logger.info("%d documents of %s that failed before are read again", len(failing), self.source.name)
                yield Request(WAKE_URL, dont_filter=True, meta={WAKE: True})
        context.listing_complete = True
        logger.info("Listed %d documents of %s", listed, self.source.name)
        self.crawler.stats.set_value(SKIPPED_STAT, agent.skipped())  # the agent logged them at WARNING
        await asyncio.to_thread(context.settle_listing)

    def listing_since(self) -> datetime | None:
        """Since when an incremental agent lists changes: the start of the source's last run that
        finished (not a test crawl), less SEARCHCRAWL_AGENT_SINCE_MARGIN, in a maintenance crawl
        that is not forced; else None (list everything)."""
        context = self.context
        agent = context.agent
        if agent is None or not agent.incremental or context.forced or context.mode != "maintenance" or context.runs is None:
            return None
        started = context.runs.last_finished_start(self.source.name)
        if started is None:
            return None
        # a margin for the repository's clock and for changes committed late (a long transaction
        # whose rows carry a time before that run's start): listed again, unchanged ones cost a 304
        return started - timedelta(seconds=self.crawler.settings.getfloat("SEARCHCRAWL_AGENT_SINCE_MARGIN"))

    def parse_document(self, response: TextResponse, depth: int, headers: dict[str, str]) -> Iterator[Any]:
        """The document (text or HTML) with what its agent knows; an agent's documents have no
        links to follow."""
        previous = response.meta.get(PREVIOUS)
        if mimetype_of(headers.get("content-type")) == "text/plain":
            item = CrawledDocument(self.source.name, response.url, depth, headers, text=response.text, previous=previous)
        else:
            item = CrawledDocument(self.source.name, response.url, depth, headers, tree=response.selector.root, previous=previous)
        yield self.with_reference(item, response)

    def document(
        self, response: Response, depth: int, headers: dict[str, str], record: dict[str, Any], **content: Any
    ) -> CrawledDocument:
        return self.with_reference(super().document(response, depth, headers, record, **content), response)

    @staticmethod
    def with_reference(item: CrawledDocument, response: Response) -> CrawledDocument:
        data = response.meta.get(REFERENCE) or {}
        item.given = dict(data.get("fields") or {})
        item.metadata = {str(name): str(value) for name, value in (data.get("metadata") or {}).items()}
        return item


def _take(references: Iterator[Reference], count: int, budget: int) -> list[Reference]:
    """The next references: ``count`` at most, and no more content than ``budget`` bytes (a
    batch of large rows or messages is cut short, never held whole)."""
    batch: list[Reference] = []
    held = 0
    for reference in itertools.islice(references, count):
        batch.append(reference)
        held += len(reference.content.body) if reference.content is not None else 0
        if held >= budget:
            break
    return batch
