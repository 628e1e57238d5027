"""CrawlState: the crawl's shared state, a Scrapy extension found by every other component.

Spider, middlewares, pipelines and the scheduler are separate Scrapy components that work on one
source, one document table, one cache and one index. They share this extension (found with
Scrapy's public ``crawler.get_extension``) instead of each opening its own database connection
pool. The order is Scrapy's: the extensions are built after the spider and before the engine
(downloader and spider middlewares, pipelines, scheduler), so those find it in their
``from_crawler``; the spider and the other extensions (built in the same step, when
``get_extension`` cannot answer yet) find it when the spider opens. It opens (and migrates) the
document table and builds the ledger writer, the one writer of URL states: a source spider
never runs without it (``crawl_state`` fails loudly). It closes the table when the engine has
stopped, after every ``spider_closed`` receiver.

The source's rules on a URL (the URL rewriter, the boundary's checks, the scope filter) are one
chain, ``CrawlState.steps``: the crawl takes its first refusal (``admit``, ``rule_excluding``) and
`scrapy explain` prints every step of it. A read-only crawl (``SEARCHCRAWL_READ_ONLY``, what
`scrapy explain` runs) opens the document table without migrating it and writes nothing: no
ledger writer, no exclusions recorded, no document cache opened.
"""

from __future__ import annotations

import logging
import os
import socket
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, NamedTuple

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object

from searchcrawl.agents.base import Agent, AgentError
from searchcrawl.config import paths
from searchcrawl.config.source import Source
from searchcrawl.content.convert import Converter, DocumentConverter, TikaConverter
from searchcrawl.crawl.ledger_writer import LedgerWriter
from searchcrawl.index.cache import DocumentCache
from searchcrawl.index.indexer import IndexingError, SolrIndex, SolrPusher, found_documents
from searchcrawl.ops.local_fleet import shared_crawl
from searchcrawl.rules.boundary import Boundary, ScopeDecision
from searchcrawl.rules.display_urls import DisplayUrls
from searchcrawl.rules.filters import FilterRules, FilterSet
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.maintenance import recrawl_reasons, settings_fingerprint
from searchcrawl.rules.status_codes import Status
from searchcrawl.rules.url_rewriter import UrlRewriter, load_rewriter
from searchcrawl.rules.urls import canonical
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.database import now
from searchcrawl.store.frontier import Frontier
from searchcrawl.store.runs import Runs

logger = logging.getLogger(__name__)


def tika_configured(settings: BaseSettings) -> bool:
    """Whether a Tika server converts this crawl's documents (else the Python converters do)."""
    return bool(settings.get("SEARCHCRAWL_TIKA_URL"))


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


class RuleStep(NamedTuple):  # a tuple: made for every URL the crawl meets, it must cost little
    """One decision of a source's rules on a URL (``CrawlState.steps``).

    ``name``: the rule: ``url_rewriter``, a boundary check's name (``Boundary.checks``: ``domains``,
    ``paths``, ...; ``boundary`` for the boundary's verdict when only the decisive steps were asked
    for), ``scope_filter``. ``decision``: allowed or not, the rule's words (what the document table
    keeps and `scrapy explain` prints), the crawler status when not. ``url``: the URL the rules
    after this one judge (the rewriter's result, for a link; else the URL judged)."""

    name: str
    decision: ScopeDecision
    url: str

    @property
    def allowed(self) -> bool:
        return self.decision.allowed

    @property
    def rule(self) -> str:
        return self.decision.rule

    @property
    def status(self) -> Status | None:
        return self.decision.status


# What ``admit`` answers for a URL the source's rules let in (the crawl reads only ``allowed``).
ADMITTED = ScopeDecision(True, "inside the source's boundary and scope filter")
# What ``steps`` answers for a URL its ``skip`` passes over (as the rewriter made it): not judged
SKIPPED = ScopeDecision(True, "not judged: passed over")
# RuleStep(...) without its Python-level __new__, for the steps the crawl's hot path makes
_new_step = tuple.__new__
_UNCHANGED_BY_REWRITER = ScopeDecision(True, "the URL rewriter leaves it as it is")
# URLs (with their depth) a process remembers it admitted, then forgets (about 150 MB at most)
ADMITTED_LIMIT = 1_000_000
# The crawl's stats key of each exclusion status (Enum.name costs a property call a link)
# entries the agent's listing passed over, as no document can be made of them (a database row
# without a key, a second row of a key): the run's counters and report say how many
SKIPPED_STAT = "searchcrawl/skipped"
_EXCLUDED_STAT = {status: f"searchcrawl/excluded/{status.name.lower()}" for status in Status}

# CrawlState.steps' ``rewrite``: how the URL rewriter applies to the URL judged
#   "link":  a link found on a page: judged as the rewriter makes it (what the spider requests)
#   "known": a URL the document table knows (a maintenance crawl): the rewriter must leave it as it is
#   None:    a request's URL: the rewriter has had it already (links), or never does (seeds)
Rewrite = Literal["link", "known"] | None


@dataclass
class CrawlState:
    source: Source
    # the document table, whose writes are the run's once it started (``attach_run``: for_run),
    # and which queues no duplicate once this process fetches nothing more (``closing``)
    table: DocumentTable
    document_cache: DocumentCache | None  # None in a read-only crawl (``cache``)
    index: SolrIndex
    boundary: Boundary
    rewriter: UrlRewriter
    display_urls: DisplayUrls
    crawler: Crawler
    excluded: list[tuple[str, int, int, str]] = field(default_factory=list)
    admitted: dict[str, int] = field(default_factory=dict)  # URL -> depth: what this process's rules let in
    recorded: BoundedSet = field(default_factory=lambda: BoundedSet(100_000))
    run_id: int | None = None
    frontier: Frontier | None = None
    runs: Runs | None = None
    no_run: str = ""  # why this process took no run and crawls nothing (set by FrontierScheduler.open)
    # What this crawl is (spider arguments, and what the run decides at its start)
    forced: bool = False  # -a recrawl=force, or a settings change: validators and checksums ignored
    test_mode: bool = False  # -a test_mode=1: report only, nothing sent to Solr, index state untouched
    force_delete: bool = False  # -a delete=force: confirm deletions beyond max_delete_share
    mode: str = "initial"
    # A shared crawl (SEARCHCRAWL_SHARED_CRAWL): several processes work on one run; ``owner``
    # names this one in leases and node rows.
    shared: bool = False
    # this process joined a run other live processes were working on (attach_run): what an
    # earlier crawl left pending was the run's first process's to push, and what is pending now
    # may be theirs of this very run
    joined: bool = False
    owner: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    site_delay: float = 0.0  # seconds between requests to one site (DOWNLOAD_DELAY, delay_rules)
    # SEARCHCRAWL_READ_ONLY (`scrapy explain`): the document table is read, never written
    read_only: bool = False
    _converter: Any = None
    # the ledger writer, the one writer of URL states (kept here: signal receivers are weak
    # references); None in a read-only crawl, which writes nothing
    ledger: LedgerWriter | None = None
    # the crawl's one Solr pusher (pipelines/solr_push.py ``solr_pusher``): the Solr pipeline's
    # pushes and the run's last push are its, so the id migration before the first is done once
    pusher: SolrPusher | None = None
    scope_filter: FilterSet | None = None
    result_filter: FilterSet | None = None
    # a source of another type than web sites: its agent (searchcrawl/agents/), and whether its
    # listing of this run completed (only then are unlisted documents gone), and since when it
    # listed changes (an incremental listing; None: every document)
    agent: Agent | None = None
    listing_complete: bool = False
    listed_since: datetime | None = None
    # whether the scope filter has a rule: one with every key at its default passes every URL,
    # and the crawl's hot path (``steps`` without ``every``) need not ask it
    _scope_filtering: bool = field(default=True, init=False, repr=False)

    def __post_init__(self) -> None:
        filters = self.source.settings.filters
        self.scope_filter = FilterSet(filters.scope, "scope")
        self.result_filter = FilterSet(filters.result, "result")
        self._scope_filtering = filters.scope != FilterRules()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlState:
        if getattr(crawler.spidercls, "source", None) is None:
            raise NotConfigured("not a searchcrawl source spider")
        state = cls.build(crawler)
        if state.read_only:
            from searchcrawl.crawl.frontier_scheduler import FrontierScheduler  # it imports this module

            # the class itself, in its MRO: issubclass() on Scrapy's schedulers is duck-typed
            # (BaseSchedulerMeta), and says True of any scheduler
            if FrontierScheduler in load_object(crawler.settings["SCHEDULER"]).__mro__:
                state.table.database.close()
                raise RuntimeError("a read-only crawl (SEARCHCRAWL_READ_ONLY) starts no run: use Scrapy's SCHEDULER")
        spider = getattr(crawler, "spider", None)  # absent when a test builds components alone
        state.configure(getattr(spider, "arguments", {}))
        if not state.read_only:  # a read-only crawl records no outcome
            state.ledger = LedgerWriter(crawler, state)
        # closed once the engine has stopped: after every spider_closed receiver (the fleet's
        # release of its site slots, the run's end) that may still use the database
        crawler.signals.connect(state.close, signal=signals.engine_stopped)
        return state

    @classmethod
    def build(cls, crawler: Crawler) -> CrawlState:
        source: Source | None = getattr(crawler.spidercls, "source", None)
        if source is None:
            raise TypeError(f"{crawler.spidercls.__name__} is not a searchcrawl source spider")
        settings = crawler.settings
        read_only = settings.getbool("SEARCHCRAWL_READ_ONLY")
        return cls(
            source=source,
            # read-only: an outdated schema is refused (SchemaOutdated), never migrated
            table=DocumentTable(Database(paths.db_url(settings), migrate=not read_only)),
            document_cache=None if read_only else DocumentCache(paths.cache_dir(settings, source.name)),
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
            shared=shared_crawl(settings),
            site_delay=settings.getfloat("DOWNLOAD_DELAY"),
            read_only=read_only,
            agent=source.make_agent() if source.agent_class is not None else None,
        )

    @property
    def writer(self) -> LedgerWriter:
        """The ledger writer: every write of a URL's state in the crawl goes through it (a
        read-only crawl has none, and writes nothing)."""
        if self.ledger is None:
            raise RuntimeError("a read-only crawl (SEARCHCRAWL_READ_ONLY) writes no URL state")
        return self.ledger

    @property
    def cache(self) -> DocumentCache:
        """The source's document cache (a read-only crawl opens none: opening one writes)."""
        if self.document_cache is None:
            raise RuntimeError("a read-only crawl (SEARCHCRAWL_READ_ONLY) has no document cache")
        return self.document_cache

    def steps(
        self, url: str, depth: int, *, rewrite: Rewrite = None, every: bool = False, skip: Callable[[str], bool] | None = None
    ) -> list[RuleStep]:
        """The source's rules on ``url``, found ``depth`` links from a seed, in the crawl's order:
        the URL rewriter (``rewrite``, see ``Rewrite``), each boundary check, the scope filter.
        They stop at the first refusal, which is then the last step. The crawl decides with them
        (``admit``, ``rule_excluding``) and `scrapy explain` prints them: one chain for both.

        With ``every``, each rule that has something to say about the URL gives a step, passed
        ones with the reason they pass (what explain prints). Without it (the crawl's hot path:
        every link, every known URL), only the steps that change the outcome: the rewriter's when
        it refuses or rewrites a link, and the first refusal (from the boundary's verdict, named
        ``boundary``); no step, or no refusal, is an allowed URL. The URL is expected in canonical
        form; robots.txt and the internal-address guard decide when it is requested (downloader
        middlewares)."""
        steps: list[RuleStep] = []
        if rewrite is not None:
            step = self.rewrite_step(url, link=rewrite == "link")
            if every or not step.allowed or step.url != url:
                steps.append(step)
                if not step.decision.allowed:
                    return steps
                url = step.url
        if skip is not None and skip(url):  # e.g. queued in this run already: nothing to judge
            return [_new_step(RuleStep, ("skip", SKIPPED, url))]
        if self.agent is not None:
            # a source of another type: its agent's documents are its boundary (the agent admits
            # a file, a row, a message when it reads it); the scope filter applies as to pages
            agent_step = self._agent_step(url, every)
            if agent_step is not None:
                steps.append(agent_step)
                if not agent_step.allowed:
                    return steps
        elif every:
            for check, decision in self.boundary.trace(url, depth):
                steps.append(RuleStep(check.name, decision, url))
            if not steps[-1].decision.allowed:
                return steps
        else:
            verdict = self.boundary.check(url, depth)
            if not verdict.allowed:
                steps.append(_new_step(RuleStep, ("boundary", verdict, url)))
                return steps
        if not (every or self._scope_filtering):
            return steps
        assert self.scope_filter is not None
        filtered = self.scope_filter.check_url(url)
        if not filtered.passed:
            steps.append(RuleStep("scope_filter", ScopeDecision(False, filtered.rule, Status.EXCLUDED_FILTER), url))
        elif every:
            steps.append(RuleStep("scope_filter", ScopeDecision(True, filtered.rule), url))
        return steps

    def _agent_step(self, url: str, every: bool) -> RuleStep | None:
        """The agent's step on ``url``: a refusal when it is no document of the agent; with
        ``every`` (explain), the agent's own rules, as its listing applies them; else None."""
        assert self.agent is not None
        key = self.agent.key_of(url)
        if key is None:
            return RuleStep("agent", ScopeDecision(False, "not a document of the source's agent", Status.EXCLUDED_SCHEME), url)
        if not every:
            return None
        refusal = self.agent.refusal(key)
        if refusal is not None:
            return RuleStep("agent", ScopeDecision(False, f"its agent does not list it: {refusal}", Status.EXCLUDED_FILTER), url)
        return RuleStep("agent", ScopeDecision(True, "a document of the source's agent"), url)

    def rewrite_step(self, url: str, *, link: bool) -> RuleStep:
        """The URL rewriter's step on ``url`` (canonical): what it made of it, or raised. A link
        is judged as the rewriter makes it (the step's URL, canonical; a refusal when the rewriter
        drops it, raises, or makes an invalid URL of it); a known URL it changes is excluded (its
        rewritten form is a URL of its own). The spider's links and ``steps`` both take it."""
        try:
            rewritten: str | Exception | None = self.rewriter(url)
        except Exception as exc:  # a user's rewriter: one bad URL must not stop the page's other links
            rewritten = exc
        if isinstance(rewritten, Exception):
            refusal = ScopeDecision(False, f"the URL rewriter raised {type(rewritten).__name__}", Status.EXCLUDED_REWRITER)
            return RuleStep("url_rewriter", refusal, url)
        if rewritten is None:
            return RuleStep("url_rewriter", ScopeDecision(False, "dropped by the URL rewriter", Status.EXCLUDED_REWRITER), url)
        if rewritten == url:  # most links: made without RuleStep's Python-level __new__
            return _new_step(RuleStep, ("url_rewriter", _UNCHANGED_BY_REWRITER, url))
        if not link:
            refusal = ScopeDecision(False, f"the URL rewriter makes it {rewritten}", Status.EXCLUDED_REWRITER)
            return RuleStep("url_rewriter", refusal, url)
        try:
            target = canonical(rewritten)
        except ValueError as exc:  # e.g. a port out of range
            return RuleStep("url_rewriter", ScopeDecision(False, f"not a valid URL: {exc}", Status.EXCLUDED_PORT), rewritten)
        return RuleStep("url_rewriter", ScopeDecision(True, f"the URL rewriter makes it {target}"), target)

    def admit(self, url: str, depth: int, *, rewrite: Rewrite = None, skip: Callable[[str], bool] | None = None) -> RuleStep:
        """The rules' one decision on a URL entering the crawl (crawl/requests.py ``Admission``):
        ``steps``' first refusal, else an allowed step whose URL is the one to request (the
        rewriter's result, with ``rewrite="link"``), or the ``SKIPPED`` step of a URL ``skip``
        passes over (after the rewriter). Exclusions are remembered for the document table
        (written by ``flush_exclusions``) and counted per crawler code."""
        steps = self.steps(url, depth, rewrite=rewrite, skip=skip)
        if not steps:
            self.remember_admitted(url, depth)
            return _new_step(RuleStep, ("boundary", ADMITTED, url))
        step = steps[-1]
        decision = step.decision
        if decision is SKIPPED:
            return step
        if decision.allowed:
            self.remember_admitted(step.url, depth)
        else:
            assert decision.status is not None
            self.crawler.stats.inc_value(_EXCLUDED_STAT[decision.status])
            # the rewriter's refusal names the link as found (cut: it may be anything a page holds)
            excluded = step.url[:2000] if step.name == "url_rewriter" else step.url
            if excluded not in self.recorded:
                self.recorded.add(excluded)
                self.excluded.append((excluded, int(decision.status), depth, decision.rule))
                logger.debug("Excluded (%s): %s", decision.rule, excluded)
        return step

    def flush_exclusions(self) -> None:
        if self.read_only:  # nothing is written
            self.excluded = []
            return
        if self.excluded:
            self.writer.record_excluded(self.excluded)
            self.excluded = []

    def leaving(self) -> str:
        """What a log line says of documents that leave the index: a test-mode crawl changes
        nothing there (its delta report says what a crawl would delete)."""
        return "they would leave the index (test mode: the index is not touched)" if self.test_mode else "they leave the index"

    def configure(self, arguments: dict[str, Any]) -> None:
        """Take the crawl's spider arguments (`scrapy crawl <source> -a name=value`)."""
        yes = ("1", "true", "yes", "force")
        self.forced = str(arguments.get("recrawl", "")).lower() == "force"
        self.test_mode = str(arguments.get("test_mode", "")).lower() in yes
        self.force_delete = str(arguments.get("delete", "")).lower() == "force"
        self.table = self.table.for_run(self.run_id, self.test_mode)

    def attach_run(self, run_id: int, resumed: bool, frontier: Frontier, runs: Runs, joined: bool = False) -> None:
        """The crawl's run has started (or resumed, or been ``joined`` while other live processes
        work on it): outcomes now finish frontier entries. A new run of a source crawled before is
        a maintenance crawl: every known URL is queued; a change of the settings that documents
        depend on forces a full recrawl."""
        self.run_id, self.frontier, self.runs, self.joined = run_id, frontier, runs, joined
        self.table = self.table.for_run(run_id, self.test_mode)
        source = self.source.name
        if resumed:
            self.mode = (runs.latest(source) or {}).get("mode") or "initial"
            self.forced = self.forced or self.mode == "forced"
            self.test_mode = self.test_mode or self.mode == "test"
            self.table = self.table.for_run(run_id, self.test_mode)
            return
        reasons = recrawl_reasons(runs.fingerprint(source), self.fingerprint())
        if reasons and not self.forced:
            logger.info("Forced recrawl of %s: %s", source, "; ".join(reasons))
            self.forced = True
        days = self.source.settings.recheck_gone_days
        if self.agent is not None:  # its listing names what is crawled, known or not (agent_spider.py)
            known, excluded = self.table.count_in_index(source), 0
        else:
            known, excluded = self.writer.plan_maintenance(
                self.rule_excluding, now() - timedelta(days=days) if days > 0 else None
            )
        if self.test_mode:
            self.mode = "test"
        elif self.forced:
            self.mode = "forced"
        else:
            self.mode = "maintenance" if known or excluded else "initial"
        runs.set_mode(run_id, self.mode)
        if excluded:
            logger.info("%d known URLs of %s are outside the source's rules now; %s", excluded, source, self.leaving())
        if known and self.agent is None:
            logger.info("%s crawl of %s: %d known URLs queued with the seeds", self.mode.title(), source, known)

    def take_over_index(self) -> None:
        """Before a run starts (blocking): a source the document table knows nothing of. Its data
        directory may be lost or new (another machine, a container without its volume, SQLite
        swapped for PostgreSQL) while Solr still holds the source's documents: with no row, a page
        deleted from the site since would stay in the index for good, and the delta report would
        call every page new. What Solr holds of the source is taken over (``found``: indexed, with
        the checksum Solr keeps), and the run is a forced recrawl: the maintenance plan queues
        every document, a page gone leaves, and the others are indexed again as this version and
        these settings make them (what made the ones in Solr is unknown). Before the run starts,
        so no process of a shared crawl fetches a URL of the source meanwhile. Solr unreadable:
        the crawl goes on as a first crawl, and says what it could not take over. Agent sources
        (whose listing names their documents) take nothing over."""
        source = self.source.name
        if self.agent is not None or self.table.knows(source):
            return
        try:
            found = self.writer.record_found(found_documents(self.index, source))
        except IndexingError as exc:
            logger.warning(
                "Could not read what Solr holds of %s (%s): documents of it in Solr that this crawl does not find "
                "again stay there",
                source,
                exc,
            )
            return
        if found:
            self.forced = True
            logger.info(
                "Forced recrawl of %s: the document table knew nothing of it; took over the %d documents Solr "
                "holds of it, which this crawl checks and indexes again",
                source,
                found,
            )

    def rule_excluding(self, url: str, depth: int) -> tuple[int, str] | None:
        """(status, rule) when the source's rules keep ``url`` out now (the URL rewriter, the
        boundary, the scope filter), else None; robots.txt and the address guard decide when it
        is requested. What a maintenance crawl applies to every known URL (``steps``' first refusal)."""
        try:
            steps = self.steps(url, depth, rewrite="known")
        except ValueError as exc:
            return int(Status.EXCLUDED_PORT), f"not a valid URL: {exc}"
        if not steps:
            self.remember_admitted(url, depth)
            return None
        decision = steps[-1].decision  # a known URL's steps (without ``every``) are refusals only
        return (int(decision.status), decision.rule) if decision.status is not None else None

    def remember_admitted(self, url: str, depth: int) -> None:
        """``url`` was admitted at ``depth`` by this process's rules: its request need not be
        admitted again (``was_admitted``). Bounded: past ``ADMITTED_LIMIT`` URLs the memory is
        cleared, and a URL forgotten is only admitted once more."""
        if len(self.admitted) >= ADMITTED_LIMIT:
            self.admitted.clear()
        self.admitted[url] = depth

    def was_admitted(self, url: str, depth: int) -> bool:
        """Did this process's rules admit ``url`` at ``depth``? Not a URL another process queued
        (a resumed run's earlier session, another node of a shared crawl: the source file may
        have changed since), nor one the document table queued again itself (a duplicate taking
        its original's place): the boundary check admits those when they are requested."""
        return self.admitted.get(url) == depth

    def exclude_link(self, url: str, status: Status, depth: int, reason: str) -> None:
        """A link kept out before the rules can judge it (an invalid URL: crawl/requests.py), written at once."""
        if url not in self.recorded:
            self.recorded.add(url)
            self.excluded.append((url, int(status), depth, reason))
        self.crawler.stats.inc_value(f"searchcrawl/excluded/{status.name.lower()}")
        self.flush_exclusions()

    def settle_listing(self, batch: int = 500) -> None:
        """An agent's listing of this run is complete (blocking): indexed documents it did not
        name leave the index now, while the crawl still runs, so that a renamed file, fetched
        as a duplicate of its old self, takes its place in this crawl; an incremental listing's
        are first asked of the agent (``gone``). A listing that failed part-way removes nothing."""
        agent = self.agent
        assert agent is not None  # in test mode too: the table keeps the state, the report says it
        source = self.source.name
        if not self.listing_complete:
            logger.warning("The listing of %s did not complete: no document is removed for not being listed", source)
            return
        unlisted = self.table.orphans(source)
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
            if self.listed_since is not None:
                try:
                    gone = set(agent.gone(list(urls)))
                except AgentError as exc:
                    logger.error("%s could not say which documents are gone (%s): none is removed", source, exc)
                    return
            else:
                gone = set(urls)
            gone_urls.extend(url for key, url in urls.items() if key in gone)
            reason = "not listed by the source's agent" if self.listed_since is None else "gone, says the source's agent"
            for url in gone_urls:
                self.writer.record(url, Outcome(Event.GONE, int(Status.LEFT_REPOSITORY), reason))
            removed += len(gone_urls)
        if removed:
            logger.info("%d documents of %s are no longer in its repository: %s", removed, source, self.leaving())

    def fingerprint(self) -> dict[str, Any]:
        settings = self.source.settings
        agent = None
        if self.source.agent_class is not None and self.source.agent_options is not None:
            # the class and its options, as JSON (a secret's value is never an option: only its name)
            agent = {
                "class": f"{self.source.agent_class.__module__}.{self.source.agent_class.__qualname__}",
                "options": self.source.agent_options.model_dump(mode="json"),
                # an incremental listing would not name a document a new scope filter excludes
                "filters": settings.filters.model_dump(mode="json"),
            }
        return settings_fingerprint(settings.index_dynamic_pages, settings.attributes, agent)

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
        if stats.get_value(SKIPPED_STAT):
            counters["skipped"] = stats.get_value(SKIPPED_STAT)
        if self.frontier is not None:
            counters.update({state.value: number for state, number in self.frontier.counts().items()})  # JSON
        return counters

    @property
    def converts_any_type(self) -> bool:
        """Whether documents of every type go to the converter (a Tika server reads over a thousand
        formats), not only the kinds the Python converters read (``detect_kind``)."""
        return tika_configured(self.crawler.settings)

    @property
    def converter(self) -> DocumentConverter:
        """What converts PDF, office and other files, made on first use: the Tika server at
        SEARCHCRAWL_TIKA_URL when one is set, else the Python converters' worker processes."""
        if self._converter is None:
            settings = self.crawler.settings
            source = self.source.settings
            if self.converts_any_type:
                self._converter = TikaConverter(
                    settings.get("SEARCHCRAWL_TIKA_URL"),
                    timeout=settings.getfloat("SEARCHCRAWL_TIKA_TIMEOUT"),
                    concurrency=settings.getint("SEARCHCRAWL_TIKA_CONCURRENCY"),
                    write_limit=settings.getint("SEARCHCRAWL_TIKA_WRITE_LIMIT"),
                    max_embedded=settings.getint("SEARCHCRAWL_TIKA_MAX_EMBEDDED"),
                    ocr=source.ocr,
                    ocr_languages=tuple(source.ocr_languages),
                    ocr_timeout=source.ocr_timeout,
                )
            else:
                if source.ocr:
                    logger.warning(
                        "Source %s asks for OCR, which needs a Tika server (SEARCHCRAWL_TIKA_URL): "
                        "scanned documents are indexed without their text",
                        self.source.name,
                    )
                self._converter = Converter(
                    workers=settings.getint("SEARCHCRAWL_CONVERT_WORKERS"),
                    timeout=settings.getfloat("SEARCHCRAWL_CONVERT_TIMEOUT"),
                    memory_mb=settings.getint("SEARCHCRAWL_CONVERT_MEMORY_MB"),
                    temp_dir=settings.get("SEARCHCRAWL_TEMP_DIR") or None,
                )
        return self._converter

    def close(self) -> None:
        if self.agent is not None:
            self.agent.close()
        if self.document_cache is not None:
            self.document_cache.close()
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
