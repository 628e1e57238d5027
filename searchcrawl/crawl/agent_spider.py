"""The spider of a source that is not web sites: its agent (searchcrawl/agents/) lists document
references, and each goes through the crawl as a web page does (the frontier, the document
table and its statuses, conversion, attributes, the cache and the push, maintenance crawls).

The listing runs in a worker thread, a batch at a time; each batch of references is admitted
(the scope filter), queued in the durable frontier in one statement and marked as listed in this
run, and the engine is woken to lease it. A reference's token, fields, metadata, access (who
may read it, or why that cannot be known) and (small) content travel with its request (meta
``REFERENCE``, persisted), and crawl/handlers/agent.py answers the request from them. When the listing has named everything, the documents it did not
name leave the index (``settle_listing``), while the crawl goes on. A listing that fails
(AgentError) ends the run failed, and nothing is removed for it.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import logging
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider
from scrapy.http import Response, TextResponse

from searchcrawl.access.tokens import Access
from searchcrawl.agents.base import Agent, AgentError, Reference
from searchcrawl.config.own_places import check_own_places, own_places
from searchcrawl.config.source import SourceError
from searchcrawl.content.extract import DEFAULT_ATTRIBUTES, INT_RANGES, TYPE_SUFFIXES, integer_in_range, mimetype_of
from searchcrawl.crawl.frontier_scheduler import WAKE_URL
from searchcrawl.crawl.items import CrawledDocument, Fetched
from searchcrawl.crawl.ledger_writer import LedgerWriter
from searchcrawl.crawl.meta import PREVIOUS, REFERENCE, WAKE
from searchcrawl.crawl.middlewares.address_guard import AddressGuardMiddleware, own_service_refusal
from searchcrawl.crawl.run import SKIPPED_STAT, Run
from searchcrawl.crawl.signals import run_started
from searchcrawl.crawl.spider import SourceSpider
from searchcrawl.crawl.stores import Stores, stores_of
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.frontier import Frontier
from searchcrawl.store.ledger import Ledger

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
    if reference.access is not None:
        data["access"] = reference.access.to_data()
    if reference.access_unreadable:
        data["access_unreadable"] = reference.access_unreadable
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
    DEBUG line; a display URL only when it is http(s), file, smb or imap (never ``javascript:``)."""
    fields: dict[str, Any] = {}
    for name, value in reference.fields.items():
        value = _jsonable(value)
        if name not in AGENT_FIELDS and not TYPED_FIELD.match(name):
            logger.debug("Field %r of %s left out: not a field an agent may set", name, reference.key)
        elif not (isinstance(value, SCALARS) or (isinstance(value, list) and all(isinstance(v, SCALARS) for v in value))):
            logger.debug("Field %r of %s left out: not a value or a list of values", name, reference.key)
        elif name == "display_url" and not (
            isinstance(value, str) and urlsplit(value).scheme in ("http", "https", "file", "smb", "imap")
        ):
            logger.debug("Display URL of %s left out: not an http(s), file, smb or imap URL", reference.key)
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


def settle_listing(agent: Agent, ledger: Ledger, run: Run, since: datetime | None, batch: int = 500) -> None:
    """An agent's listing of run ``run`` is complete (blocking): indexed documents it did not
    name leave the index now, while the crawl still runs, so that a renamed file, fetched as a
    duplicate of its old self, takes its place in this crawl; an incremental listing's (``since``)
    are first asked of the agent (``gone``). In test mode too: the table keeps the state, the
    report says it."""
    source = run.source
    unlisted = ledger.table.orphans(source)
    removed = 0
    for start in range(0, len(unlisted), batch):
        urls: dict[str, str] = {}
        gone_urls: list[str] = []  # not the agent's at all (the source's type changed): gone
        for url in unlisted[start : start + batch]:
            key = agent.key_of(url)
            if key is None:
                gone_urls.append(url)
            else:
                urls[key] = url
        if since is not None:
            try:
                gone = set(agent.gone(list(urls)))
            except AgentError as exc:
                logger.error("%s could not say which documents are gone (%s): none is removed", source, exc)
                return
        else:
            gone = set(urls)
        gone_urls.extend(url for key, url in urls.items() if key in gone)
        reason = "not listed by the source's agent" if since is None else "gone, says the source's agent"
        for url in gone_urls:
            ledger.record(url, Outcome(Event.GONE, int(Status.LEFT_REPOSITORY), reason))
        removed += len(gone_urls)
    if removed:
        logger.info("%d documents of %s are no longer in its repository: %s", removed, source, run.leaving())


class AgentSpider(SourceSpider):
    """Crawl a source of another type than web sites: its agent's references, no links. It lists
    into the run's frontier (``run_started``); without a run (a read-only crawl: `scrapy explain`)
    it lists nothing."""

    renders = False  # an agent's handler answers its references: no browser
    agent: Agent
    run: Run | None = None
    frontier: Frontier | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> AgentSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, AgentSpider)
        # the source's agent: the spider's, as a web spider's site is its own; built before the
        # extensions, which find it here (the rule chain: its documents are the source's
        # boundary), and closed once the engine has stopped (after the run's end)
        spider.agent = spider.source.make_agent()
        crawler.signals.connect(spider.agent.close, signal=signals.engine_stopped)
        crawler.signals.connect(spider.run_started, signal=run_started)
        return spider

    def run_started(self, run: Run, frontier: Frontier) -> None:
        self.run, self.frontier = run, frontier

    @property
    def stores(self) -> Stores:
        """The crawl's stores (an extension, built after the spider: found on use)."""
        return stores_of(self.crawler)

    async def start(self) -> AsyncIterator[Request]:
        agent = self.agent
        frontier, run = self.frontier, self.run
        if frontier is None or run is None:  # a read-only crawl (`scrapy explain`) lists nothing
            return
        ledger = self.crawler.get_extension(LedgerWriter)
        assert ledger is not None  # a run has one
        self.refuse_own_places()
        await self.refuse_own_services(agent, self.crawler.get_downloader_middleware(AddressGuardMiddleware))
        since = self.listing_since(agent, run)
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
            self.admission.flush()
            if entries:
                self.admission.queue(entries)
                ledger.mark_linked([entry.url for entry in entries])
            listed += len(batch)
            logger.debug("Listed %d references of %s (%d queued)", listed, self.source.name, len(entries))
            yield Request(WAKE_URL, dont_filter=True, meta={WAKE: True})  # the engine leases them now
        if since is not None:  # changes only: what failed before is asked again, with its reference then
            failing = [
                entry
                for url, data in self.stores.documents.failing(self.source.name)
                if agent.key_of(url) is not None and (entry := self.admission.reference(url, data))
            ]
            self.admission.flush()
            if failing:
                self.admission.queue(failing)
                ledger.mark_linked([entry.url for entry in failing])
                logger.info("%d documents of %s that failed before are read again", len(failing), self.source.name)
                yield Request(WAKE_URL, dont_filter=True, meta={WAKE: True})
        logger.info("Listed %d documents of %s", listed, self.source.name)
        self.crawler.stats.set_value(SKIPPED_STAT, agent.skipped())  # the agent logged them at WARNING
        # complete: the documents it did not name leave (a listing that failed part-way removed nothing)
        await asyncio.to_thread(settle_listing, agent, ledger, run, since)

    def refuse_own_places(self) -> None:
        """An agent never reads the installation's own data (the data folder, the document
        table, the sources folder, the secrets' files: config/own_places.py), whichever way its
        spider was made: the run fails before anything is listed (issue 99)."""
        try:
            check_own_places(self.source, own_places(self.crawler.settings))
        except SourceError as exc:
            logger.error("The listing of %s is refused: %s; nothing is removed", self.source.name, exc)
            raise CloseSpider("failed") from None

    async def refuse_own_services(self, agent: Agent, guard: AddressGuardMiddleware | None) -> None:
        """An agent that asks its repository itself (WebDAV, CMIS, a wiki, Redmine, Git over
        HTTP: its options' ``server_urls``) never asks the installation's own services: the run
        fails before anything is listed (issue 91)."""
        server_urls = getattr(agent.options, "server_urls", None)
        if guard is None or not callable(server_urls):
            return
        for url in server_urls():
            refused = await own_service_refusal(guard.policy, url)
            if refused is not None:
                logger.error("The listing of %s is refused: %s; nothing is removed", self.source.name, refused)
                raise CloseSpider("failed")

    def listing_since(self, agent: Agent, run: Run) -> datetime | None:
        """Since when an incremental agent lists changes: the start of the source's last run that
        finished (not a test crawl), less SEARCHCRAWL_AGENT_SINCE_MARGIN, in a maintenance crawl
        that is not forced; else None (list everything)."""
        if not agent.incremental or run.forced or run.mode != "maintenance":
            return None
        started = self.stores.runs.last_finished_start(self.source.name)
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
            fetched = Fetched(headers, text=response.text)
        else:
            fetched = Fetched(headers, tree=response.selector.root)
        item = CrawledDocument(self.source.name, response.url, depth, fetched, previous=previous)
        yield self.with_reference(item, response)

    def document(
        self, response: Response, depth: int, headers: dict[str, str], record: dict[str, Any], **content: Any
    ) -> CrawledDocument:
        return self.with_reference(super().document(response, depth, headers, record, **content), response)

    def with_reference(self, item: CrawledDocument, response: Response) -> CrawledDocument:
        data = response.meta.get(REFERENCE) or {}
        item.given = dict(data.get("fields") or {})
        item.metadata = {str(name): str(value) for name, value in (data.get("metadata") or {}).items()}
        return self.with_access(item, response.meta)

    def access_of(self, url: str, meta: Mapping[str, Any]) -> Access:
        """The reference's own access (``Reference.access``, in its request data), else the
        source's [access] table on ``/<key>``; AccessUnreadable when neither says."""
        return self.document_access.of(url, meta.get(REFERENCE) or {}, self.agent.key_of(url))


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
