"""CrawlState: the crawl's shared state, a Scrapy extension built before every other component.

Spider, middlewares, pipelines and the scheduler are separate Scrapy components that work on one
source, one document table, one cache and one index. They share this extension (found with
Scrapy's public ``crawler.get_extension``) instead of each opening its own database connection
pool. It is built in a known order: EXTENSIONS puts it first after SecretSettings, extensions
are built after the spider and before the engine (downloader middlewares, pipelines, scheduler),
so those find it in their ``from_crawler``; the spider and other extensions find it when the
spider opens. It opens (and migrates) the document table and builds the ledger writer, the one
writer of URL states: a source spider never runs without it (``crawl_state`` fails loudly).
"""

from __future__ import annotations

import logging
import os
import socket
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from searchcrawl.config import paths
from searchcrawl.config.source import Source
from searchcrawl.content.convert import Converter
from searchcrawl.crawl.extensions.ledger import LedgerWriter
from searchcrawl.index.cache import DocumentCache
from searchcrawl.index.indexer import SolrIndex
from searchcrawl.rules.boundary import Boundary
from searchcrawl.rules.boundary import ScopeDecision as Decision
from searchcrawl.rules.display_urls import DisplayUrls
from searchcrawl.rules.filters import FilterSet
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.maintenance import recrawl_reasons, settings_fingerprint
from searchcrawl.rules.status_codes import Status
from searchcrawl.rules.url_rewriter import UrlRewriter, load_rewriter
from searchcrawl.store import Database, Deltas, DocumentTable
from searchcrawl.store.database import now
from searchcrawl.store.frontier import Frontier
from searchcrawl.store.runs import Runs

logger = logging.getLogger(__name__)


class BoundedSet:
    """A set that forgets its oldest members beyond ``size``: memory stays flat on huge crawls
    (forgetting only costs a repeated, idempotent write)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, item: str) -> bool:
        return item in self.items

    def add(self, item: str) -> None:
        self.items[item] = None
        if len(self.items) > self.size:
            self.items.popitem(last=False)


@dataclass
class CrawlState:
    source: Source
    table: DocumentTable
    cache: DocumentCache
    index: SolrIndex
    boundary: Boundary
    rewriter: UrlRewriter
    display_urls: DisplayUrls
    crawler: Crawler
    excluded: list[tuple[str, int, int, str]] = field(default_factory=list)
    recorded: BoundedSet = field(default_factory=lambda: BoundedSet(100_000))
    run_id: int | None = None
    frontier: Frontier | None = None
    runs: Runs | None = None
    # What this crawl is (spider arguments, and what the run decides at its start)
    forced: bool = False  # -a recrawl=force, or a settings change: validators and checksums ignored
    test_mode: bool = False  # -a test_mode=1: report only, nothing sent to Solr, index state untouched
    force_delete: bool = False  # -a delete=force: confirm deletions beyond max_delete_share
    mode: str = "initial"
    # A shared crawl (SEARCHCRAWL_SHARED_CRAWL): several processes work on one run; ``owner``
    # names this one in leases and node rows.
    shared: bool = False
    owner: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    site_delay: float = 0.0  # seconds between requests to one site (DOWNLOAD_DELAY, delay_rules)
    _ends_run: bool | None = None
    _converter: Any = None
    ledger: Any = None  # the LedgerWriter (kept here: signal receivers are weak references)
    scope_filter: FilterSet | None = None
    result_filter: FilterSet | None = None

    def __post_init__(self) -> None:
        filters = self.source.settings.filters
        self.scope_filter = FilterSet(filters.scope, "scope")
        self.result_filter = FilterSet(filters.result, "result")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlState:
        if getattr(crawler.spidercls, "source", None) is None:
            raise NotConfigured("not a searchcrawl source spider")
        state = cls.build(crawler)
        spider = getattr(crawler, "spider", None)  # absent when a test builds components alone
        state.configure(getattr(spider, "arguments", {}))
        state.ledger = LedgerWriter(crawler, state)
        crawler.signals.connect(state.close, signal=signals.spider_closed)
        return state

    @classmethod
    def build(cls, crawler: Crawler) -> CrawlState:
        source: Source | None = getattr(crawler.spidercls, "source", None)
        if source is None:
            raise TypeError(f"{crawler.spidercls.__name__} is not a searchcrawl source spider")
        settings = crawler.settings
        return cls(
            source=source,
            table=DocumentTable(Database(paths.db_url(settings))),
            cache=DocumentCache(paths.cache_dir(settings, source.name)),
            index=SolrIndex(
                paths.solr_url(settings),
                timeout=settings.getfloat("SEARCHCRAWL_SOLR_TIMEOUT"),
                commit_within_ms=settings.getint("SEARCHCRAWL_SOLR_COMMIT_WITHIN"),
                auth=paths.solr_auth(settings),
            ),
            boundary=Boundary(source.seed_urls, source.settings, settings.getint("SEARCHCRAWL_MAX_URL_LENGTH")),
            rewriter=load_rewriter(source.settings.url_rewriter),
            display_urls=DisplayUrls(source.settings.display_urls),
            crawler=crawler,
            shared=settings.getbool("SEARCHCRAWL_SHARED_CRAWL"),
            site_delay=settings.getfloat("DOWNLOAD_DELAY"),
        )

    def admit(self, url: str, depth: int) -> Decision:
        """The boundary's decision on a URL about to be requested; exclusions are remembered for
        the document table (written by ``flush_exclusions``) and counted per crawler code."""
        decision = self.boundary.check(url, depth)
        if decision.allowed:
            assert self.scope_filter is not None
            filtered = self.scope_filter.check_url(url)
            if not filtered.passed:
                decision = Decision(False, filtered.rule, Status.EXCLUDED_FILTER)
        if not decision.allowed:
            assert decision.status is not None
            self.crawler.stats.inc_value(f"searchcrawl/excluded/{decision.status.name.lower()}")
            if url not in self.recorded:
                self.recorded.add(url)
                self.excluded.append((url, int(decision.status), depth, decision.rule))
                logger.debug("Excluded (%s): %s", decision.rule, url)
        return decision

    def flush_exclusions(self) -> None:
        if self.excluded:
            self.table.record_excluded(self.source.name, self.excluded)
            self.excluded = []

    def configure(self, arguments: dict[str, Any]) -> None:
        """Take the crawl's spider arguments (`scrapy crawl <source> -a name=value`)."""
        yes = ("1", "true", "yes", "force")
        self.forced = str(arguments.get("recrawl", "")).lower() == "force"
        self.test_mode = str(arguments.get("test_mode", "")).lower() in yes
        self.force_delete = str(arguments.get("delete", "")).lower() == "force"
        self.table.test_mode = self.test_mode

    def attach_run(self, run_id: int, resumed: bool, frontier: Frontier, runs: Runs) -> None:
        """The crawl's run has started (or resumed): outcomes now finish frontier entries. A new
        run of a source crawled before is a maintenance crawl: every known URL is queued; a
        change of the settings that documents depend on forces a full recrawl."""
        self.run_id, self.frontier, self.runs = run_id, frontier, runs
        self.table.run_id = run_id
        source = self.source.name
        if resumed:
            self.mode = (runs.latest(source) or {}).get("mode") or "initial"
            self.forced = self.forced or self.mode == "forced"
            self.test_mode = self.test_mode or self.mode == "test"
            self.table.test_mode = self.test_mode
            return
        reasons = recrawl_reasons(runs.fingerprint(source), self.fingerprint())
        if reasons and not self.forced:
            logger.info("Forced recrawl of %s: %s", source, "; ".join(reasons))
            self.forced = True
        days = self.source.settings.recheck_gone_days
        known, excluded = self.table.plan_maintenance(
            source, self.rule_excluding, now() - timedelta(days=days) if days > 0 else None
        )
        if self.test_mode:
            self.mode = "test"
        elif self.forced:
            self.mode = "forced"
        else:
            self.mode = "maintenance" if known or excluded else "initial"
        runs.set_mode(run_id, self.mode)
        if excluded:
            logger.info("%d known URLs of %s are outside the source's rules now; they leave the index", excluded, source)
        if known:
            logger.info("%s crawl of %s: %d known URLs queued with the seeds", self.mode.title(), source, known)

    def rule_excluding(self, url: str, depth: int) -> tuple[int, str] | None:
        """(status, rule) when the source's rules keep ``url`` out now (the URL rewriter, the
        boundary, the scope filter), else None; robots.txt and the address guard decide when it
        is requested. What a maintenance crawl applies to every known URL."""
        try:
            rewritten = self.rewriter(url)
        except Exception as exc:  # a user's rewriter: one bad URL must not stop the crawl
            return int(Status.EXCLUDED_REWRITER), f"the URL rewriter raised {type(exc).__name__}"
        if rewritten is None:
            return int(Status.EXCLUDED_REWRITER), "dropped by the URL rewriter"
        if rewritten != url:
            return int(Status.EXCLUDED_REWRITER), f"the URL rewriter makes it {rewritten}"
        try:
            decision = self.boundary.check(url, depth)
        except ValueError as exc:
            return int(Status.EXCLUDED_PORT), f"not a valid URL: {exc}"
        if not decision.allowed and decision.status is not None:
            return int(decision.status), decision.rule
        assert self.scope_filter is not None
        filtered = self.scope_filter.check_url(url)
        if not filtered.passed:
            return int(Status.EXCLUDED_FILTER), filtered.rule
        return None

    def exclude_link(self, url: str, status: Status, depth: int, reason: str) -> None:
        """A link a rule keeps out before it becomes a request (an invalid URL, the rewriter)."""
        if url not in self.recorded:
            self.recorded.add(url)
            self.excluded.append((url, int(status), depth, reason))
        self.crawler.stats.inc_value(f"searchcrawl/excluded/{status.name.lower()}")
        self.flush_exclusions()

    def settle_run(self) -> None:
        """The end of a complete run, before removals go to Solr (blocking): a temporary
        redirect's target outside the boundary leaves once no URL of the source redirects to it;
        with ``orphans = "delete"``, documents no page linked to in this run leave too."""
        counts = self.frontier.counts() if self.frontier is not None else {"queued": 0, "leased": 0}
        complete = not counts["queued"] and not counts["leased"]  # a shutdown leaves URLs leased
        if not complete or self.run_id is None or self.test_mode:
            return
        source = self.source.name
        gone = self.table.drop_stale_targets(source, self.rule_excluding, self.source.settings.max_failures)
        if gone:
            logger.info(
                "%d redirect targets of %s outside its boundary leave the index: nothing redirects to them now", gone, source
            )
        if self.source.settings.orphans == "delete":
            seeds = set(self.source.seed_urls)
            for url in self.table.orphans(source):
                if url not in seeds:
                    # on the Solr push's worker thread: written directly, not through a signal
                    self.table.record(source, url, Outcome(Event.GONE, int(Status.ORPHAN), "no longer linked"))

    def fingerprint(self) -> dict[str, Any]:
        settings = self.source.settings
        return settings_fingerprint(settings.index_dynamic_pages, settings.attributes)

    def counters(self) -> dict[str, Any]:
        """The run's counters, as kept in the runs table and shown by `scrapy status`."""
        stats = self.crawler.stats
        counters: dict[str, Any] = {
            "pages": stats.get_value("response_received_count", 0),
            "cached": stats.get_value("searchcrawl/cached", 0),
            "indexed": stats.get_value("searchcrawl/indexed", 0),
            "removed": stats.get_value("searchcrawl/removed", 0),
            "excluded": sum(v for k, v in stats.get_stats().items() if k.startswith("searchcrawl/excluded/")),
        }
        if self.frontier is not None:
            counters.update(self.frontier.counts())
        return counters

    def ends_run(self) -> bool:
        """Whether this process does the run's end (removals, delta report). Always, alone; in a
        shared crawl, only the node that finds the frontier empty and claims the end first."""
        if not self.shared:
            return True
        if self._ends_run is None:
            if self.frontier is None or self.runs is None or self.run_id is None:
                return False
            counts = self.frontier.counts()
            self._ends_run = not counts["queued"] and not counts["leased"] and self.runs.claim_finish(self.run_id)
        return self._ends_run

    def end_run(self, state: str, reason: str) -> dict[str, list[str]]:
        """Record the run's end and keep its delta report; returns the report."""
        if self.runs is None or self.run_id is None:
            return {}
        source = self.source.name
        deltas = Deltas(self.table.database)
        deltas.keep(source, self.run_id)
        report = deltas.report(source, self.run_id)
        counters = {**self.counters(), "delta": {kind: len(urls) for kind, urls in sorted(report.items())}}
        self.runs.end(self.run_id, state, counters, reason)
        if state == "finished" and not self.test_mode:
            self.runs.save_fingerprint(source, self.fingerprint())
        return report

    @property
    def converter(self) -> Converter:
        """Worker processes converting PDF and office files, started on first use."""
        if self._converter is None:
            settings = self.crawler.settings
            self._converter = Converter(
                workers=settings.getint("SEARCHCRAWL_CONVERT_WORKERS"),
                timeout=settings.getfloat("SEARCHCRAWL_CONVERT_TIMEOUT"),
                memory_mb=settings.getint("SEARCHCRAWL_CONVERT_MEMORY_MB"),
                temp_dir=settings.get("SEARCHCRAWL_TEMP_DIR") or None,
            )
        return self._converter

    def close(self) -> None:
        self.cache.close()
        if self._converter is not None:
            self._converter.close()
        self.table.database.close()


def crawl_state(crawler: Crawler) -> CrawlState:
    """The crawl's state, for a component of a source spider's crawl. Other spiders' crawls have
    none: the component is then not configured. A source spider's crawl without it (EXTENSIONS
    overridden) is refused, since nothing would record what happens to its URLs."""
    state = crawler.get_extension(CrawlState)
    if state is not None:
        return state
    if getattr(crawler.spidercls, "source", None) is None:
        raise NotConfigured("not a searchcrawl source spider")
    raise RuntimeError(
        "searchcrawl.crawl.extensions.crawl_state.CrawlState is not enabled (EXTENSIONS): a source's crawl needs it"
    )
