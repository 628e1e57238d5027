"""A Scrapy scheduler backed by the durable frontier (searchcrawl/store/frontier.py).

It replaces Scrapy's in-memory queue and dupefilter: enqueuing inserts the URL into the
frontier (a URL already queued in this run is discarded), dequeuing leases a small batch, and
only that batch lives in memory, so a frontier of millions of URLs does not grow the process.
Each `scrapy crawl <source>` is a run (searchcrawl/store/runs.py): an interrupted run is resumed by
the next crawl, with the URLs that were in flight back in the queue. JOBDIR is not needed.

Requests are persisted as data, never pickled: the URL, its depth, and the meta keys in
``searchcrawl.crawl.meta.PERSISTED`` (plus the callback's name when it is not ``parse``), and
made again from a leased entry by the spider's request factory (crawl/requests.py).

Leases are renewed every third of ``SEARCHCRAWL_LEASE_SECONDS`` while the process lives. In a
shared crawl (``SEARCHCRAWL_SHARED_CRAWL``, source key ``shared``) several processes, on one
machine or many, join the same run over PostgreSQL: each leases its own batches (``FOR UPDATE
SKIP LOCKED``), takes back leases that expired (a node died), and waits while other nodes still
hold leases, since their pages may add links. The node whose close finds the frontier empty
claims the run's end (removals, delta report); the others just leave (extensions/run_end.py).

``SEARCHCRAWL_MAX_REQUESTS`` caps the requests this process hands to the engine (the source
editor's test crawl: 5 pages): past it, nothing more is leased or handed over, and once those in
flight are answered the crawl closes (``max_requests``; the run is left to resume). Scrapy's
``CLOSESPIDER_PAGECOUNT`` counts responses, so the requests in flight when it is reached still
go out (8 pages of a test crawl of 5).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import replace

from scrapy import Request, Spider, signals
from scrapy.core.scheduler import BaseScheduler, Scheduler
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider, DontCloseSpider
from scrapy.utils.asyncio import AsyncioLoopingCall, create_looping_call
from twisted.internet.task import LoopingCall
from twisted.python.failure import Failure

from searchcrawl.config.source import Source
from searchcrawl.crawl.extensions.run_end import run_end
from searchcrawl.crawl.ledger_writer import LedgerWriter
from searchcrawl.crawl.meta import WAKE
from searchcrawl.crawl.requests import Admission, admission_of, entry_of
from searchcrawl.crawl.run import MAX_REQUESTS_REASON, CrawlArguments, Run
from searchcrawl.crawl.run_start import begin_run, plan_run, take_over_index
from searchcrawl.crawl.signals import run_started, url_outcome
from searchcrawl.crawl.stores import Stores, source_of, stores_of
from searchcrawl.ops.local_fleet import joins_live_runs, run_to_join, shared_crawl
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.database import process_owner
from searchcrawl.store.frontier import Entry, Frontier
from searchcrawl.store.models import FrontierState
from searchcrawl.store.runs import ALREADY_RUNNING, RunConflict, RunEnded, RunInfo, Runs

logger = logging.getLogger(__name__)

# Seconds between frontier look-ups while it is empty: a node of a shared crawl waiting for the
# others' links, or for the run's end, loses at most this much (0.5 s cost a 5 s crawl of two
# local processes a tenth of its time). A look-up is one read (Frontier.present: index look-ups)
# and a lease (a write) only when something is queued; taking back a dead node's leases (three
# statements, two of them writes) is looked at less often.
IDLE_RECHECK = 0.1
TAKE_BACK_EVERY = 0.5
WAKE_URL = "data:,"
HELD_LIMIT_BATCHES = 4  # with SEARCHCRAWL_MAX_SITES: at most this many batches wait for a free site


class FrontierScheduler(BaseScheduler):
    """The durable frontier's scheduler (see the module's docstring): it starts the run when it
    opens (``open``: crawl/run_start.py, then ``run_started``), leases its URLs, and gives back
    what it leased but did not fetch when it closes."""

    def __init__(self, crawler: Crawler, source: Source, stores: Stores, ledger: LedgerWriter, admission: Admission) -> None:
        self.crawler = crawler
        self.source, self.stores, self.ledger, self.admission = source, stores, ledger, admission
        run_end(crawler)  # required: a run this scheduler starts is ended there
        settings = crawler.settings
        self.batch = settings.getint("SEARCHCRAWL_FRONTIER_BATCH") or 2 * settings.getint("CONCURRENT_REQUESTS")
        self.lease_seconds = settings.getfloat("SEARCHCRAWL_LEASE_SECONDS")
        self.shared = shared_crawl(settings)
        self.owner = process_owner()
        self.runs: Runs = stores.runs
        self.no_run = ""  # why this process took no run, and crawls nothing (``_leave_once_opened``)
        self.renewal: AsyncioLoopingCall | LoopingCall | None = None
        self.waker: AsyncioLoopingCall | LoopingCall | None = None  # a shared crawl's _wake
        self.starved = False  # the engine's last next_request() got no request
        self.others_checked = self.taken_back_at = 0.0
        self.others_working = False
        self.buffer: deque[Entry] = deque()
        self.max_sites = settings.getint("SEARCHCRAWL_MAX_SITES")
        self.held: deque[Request] = deque()  # waiting for a free site (SEARCHCRAWL_MAX_SITES)
        self.max_requests = settings.getint("SEARCHCRAWL_MAX_REQUESTS")  # 0: no cap
        self.handed = 0  # requests handed to the engine
        self.frontier: Frontier | None = None
        self.run: RunInfo | None = None
        self.spider: Spider | None = None
        self.last_empty = 0.0
        self.additions_at_empty = 0
        self.started: Run | None = None  # the run as begin_run made it
        # the run's maintenance plan, made on a thread of its own while the crawl goes on (plan_run)
        self.planner: threading.Thread | None = None
        self.plan_stop = threading.Event()
        self.plan_outcome: bool | BaseException | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BaseScheduler:  # type: ignore[override]  # Scrapy's for other spiders
        if getattr(crawler.spidercls, "source", None) is None:
            # another spider of the project (scrapy shell, scrapy fetch, a spider of one's own):
            # Scrapy's own scheduler (SCHEDULER names this one for the whole project)
            return Scheduler.from_crawler(crawler)
        ledger = crawler.get_extension(LedgerWriter)
        if ledger is None:  # a read-only crawl: explain runs Scrapy's own scheduler
            stores_of(crawler).close()  # the engine never starts: engine_stopped would not close them
            raise RuntimeError("a read-only crawl (SEARCHCRAWL_READ_ONLY) starts no run: use Scrapy's SCHEDULER")
        return cls(crawler, source_of(crawler), stores_of(crawler), ledger, admission_of(crawler))

    def open(self, spider: Spider) -> None:
        self.spider = spider
        arguments = CrawlArguments.of(getattr(spider, "arguments", {}))  # -a recrawl=force, test_mode, delete
        source = self.source.name
        runs = self.runs
        fresh = str(getattr(spider, "fresh", "")).lower() in ("1", "true", "yes")
        taken_over = take_over_index(self.source, self.stores.documents, self.stores.index, self.ledger)
        try:
            self.run = runs.start(
                source,
                fresh=fresh,
                allow_shared=joins_live_runs(self.crawler.settings),
                job=getattr(spider, "_job", None),
                stale_after=self.lease_seconds,
                owner=self.owner,
                join_run=run_to_join(self.crawler.settings),
            )
        except RunEnded as exc:
            # a process of a crawl of several (processes = N) that came up after the crawl's
            # run had ended (a small site): nothing left to do, and no run of its own to start
            logger.info("Not joining: %s", exc)
            self._leave_once_opened("finished")
            return
        except RunConflict as exc:
            # `scrapy crawl` refuses before the crawl opens (Runs.conflict); this is the race of
            # two starting at the same moment, which the source's lock in Runs.start settles
            logger.error("%s", exc)
            self._leave_once_opened(ALREADY_RUNNING)
            return
        self.frontier = Frontier(self.stores.database, source, self.run.id, self.owner, self.lease_seconds)
        others = list(self.run.others)
        run = begin_run(
            self.run,
            arguments,
            source=self.source,
            runs=runs,
            ledger=self.ledger,
            known=self.admission.known,
            taken_over=taken_over,
            shared=self.shared,
            owner=self.owner,
        )
        # every component that needs the run has it before anything is fetched; one that could
        # not take it fails the crawl's start (a ledger writing outside its run would lose outcomes)
        for _receiver, result in self.crawler.signals.send_catch_log(run_started, run=run, frontier=self.frontier):
            if isinstance(result, Failure):
                result.raiseException()
        self.started = run
        if run.plan_pending:
            self._start_plan(run)
        self._requeue_and_announce(self.run, self.frontier, others)
        self._start_timers()

    def _requeue_and_announce(self, info: RunInfo, frontier: Frontier, others: list[str]) -> None:
        """A resumed run takes back the leases of its dead nodes (or of this process before it
        stopped); the log says whether the run starts, resumes or is joined, and where it stands."""
        if info.resumed:
            # a shared run's live nodes keep their leases (those that joined since too); a dead node's are taken back
            requeued = frontier.requeue_gone(self.runs, self.lease_seconds, keep_own=False)
            counts = frontier.counts()
            logger.info(
                "%s run %d of %s (session %d%s): %d URLs done, %d queued (%d were in flight)",
                "Joining" if others else "Resuming",
                info.id,
                self.source.name,
                info.sessions,
                f", with {len(others)} other node(s)" if others else "",
                counts[FrontierState.DONE],
                counts[FrontierState.QUEUED],
                requeued,
            )
        else:
            logger.info("Starting run %d of %s%s", info.id, self.source.name, " (shared crawl)" if self.shared else "")

    def _start_timers(self) -> None:
        """The scheduler's timers and idle checks, once its run has begun: the wake-up of a node
        that waits for others or for its plan, the leases' renewal, and the idle checks that
        finish lost URLs and close a capped crawl."""
        if self.shared or self.planner is not None:
            # Scrapy asks a scheduler that has pending requests but returned none again only at its
            # heartbeat, every 5 s, which no public setting changes; a node waiting for the other
            # nodes' links (or for their end), or for its plan's next batch, looks every
            # IDLE_RECHECK instead (_wake).
            self.waker = create_looping_call(self._wake)
            self.waker.start(IDLE_RECHECK, now=False)
        self.crawler.signals.connect(self._finish_lost, signal=signals.spider_idle)
        if self.max_requests:
            self.crawler.signals.connect(self._close_when_capped, signal=signals.spider_idle)
        self.renewal = create_looping_call(self._renew)
        self.renewal.start(max(1.0, min(60.0, self.lease_seconds / 3)), now=False)

    def _start_plan(self, run: Run) -> None:
        """Make the run's maintenance plan on a thread of its own (run_start.plan_run): the crawl
        leases the first batches while the last are planned."""
        assert self.frontier is not None
        self.plan_stop.clear()
        self.plan_outcome = None

        def plan() -> None:
            try:
                self.plan_outcome = plan_run(
                    run,
                    source=self.source,
                    runs=self.runs,
                    ledger=self.ledger,
                    known=self.admission.known,
                    stop=self.plan_stop.is_set,
                )
            except BaseException as exc:  # noqa: BLE001 - read on the reactor thread (_planning)
                self.plan_outcome = exc

        self.planner = threading.Thread(target=plan, name=f"searchcrawl-plan-{run.id}", daemon=True)
        self.planner.start()

    def _planning(self) -> bool:
        """Whether the run's plan is being made by this process. Once made, a failure is logged
        (the run's plan stays pending: the run ends suspended, and the next crawl makes it again)."""
        if self.planner is None:
            return False
        if self.planner.is_alive():
            return True
        self.planner = None
        if isinstance(self.plan_outcome, BaseException):
            logger.error(
                "The maintenance plan of run %s failed: known URLs not planned are not checked by this process",
                self.run.id if self.run else "?",
                exc_info=self.plan_outcome,
            )
            if self.run is not None:
                try:  # nobody makes it now: another node of a shared crawl takes it over at once
                    self.runs.take_over_plan(self.run.id, self.owner, "")
                except Exception:  # the run stays pending all the same (RunEnd: suspended)
                    logger.exception("Could not give up the plan of run %d", self.run.id)
        if not self.shared and self.waker is not None and self.waker.running:
            self.waker.stop()  # only the plan's batches were waited for
        return False

    def _leave_once_opened(self, reason: str) -> None:
        """No run for this process: the spider closes (``reason``) as soon as it has opened, having
        crawled nothing (no ``run_started``: the item pipelines and the run's end leave Solr alone). Not by raising
        CloseSpider from open(): Scrapy (2.19) then skips opening the scraper but still closes it,
        and logs "Scraper close failure" at ERROR; a spider_opened receiver's CloseSpider is
        honoured once everything has opened."""
        self.no_run = reason
        self.crawler.signals.connect(self._refuse, signal=signals.spider_opened)

    def _refuse(self) -> None:
        raise CloseSpider(self.no_run)

    def _renew(self) -> None:
        """Keep this node's leases and node row alive; take back leases that expired elsewhere."""
        if self.frontier is None or self.run is None:
            return
        try:
            self.frontier.renew()
            self.runs.heartbeat(self.run.id, self.owner)
            self._take_back()
        except Exception:  # a database hiccup: the next renewal tries again, well before expiry
            logger.exception("Renewing the leases of run %d failed", self.run.id)

    def _take_back(self) -> int:
        """Queue again the URLs leased by nodes that stopped working on the run: their lease
        expired, or their process on this machine is gone (a killed process of a crawl of
        several local processes: its URLs come back at once, not a lease time later)."""
        assert self.frontier is not None and self.run is not None
        self.taken_back_at = time.monotonic()
        taken = self.frontier.requeue_leased(expired_only=True)
        if self.shared:
            taken += self.frontier.requeue_gone(self.runs, self.lease_seconds)
        if taken:
            logger.info(
                "Took back %d URLs whose lease expired or whose process is gone (a node stopped working on run %d)",
                taken,
                self.run.id,
            )
        return taken

    def close(self, reason: str) -> None:
        """This process leases nothing more: what it leased but did not fetch goes back to the
        queue. Leaving the run, and the run's end, are RunEnd's (extensions/run_end.py), once
        the spider is closed."""
        if self.run is None or self.frontier is None:
            return
        if self.renewal is not None and self.renewal.running:
            self.renewal.stop()
        if self.waker is not None and self.waker.running:
            self.waker.stop()
        if self.planner is not None:
            # the crawl closes before its plan is made (a stop, a suspend): the plan stops after
            # its batch (a fraction of a second), stays pending, and the next crawl makes it again
            self.plan_stop.set()
            self.planner.join(timeout=30)
            self._planning()
        self.ledger.flush()  # the outcomes of what was fetched are written: those URLs are done
        self.frontier.requeue_leased(owner=self.owner)  # what was leased but not fetched
        self.buffer.clear()
        self.held.clear()

    def _finish_lost(self) -> None:
        """spider_idle: nothing queued, nothing in flight, yet URLs this process leased have no
        outcome: something on their way raised without a trace Scrapy reports (a middleware, a
        signal handler). Each gets status 925, counted like a transient failure, before the
        pipelines close (the end of the run's removals sees them); without it the run would end
        "suspended" and every later crawl would resume it."""
        if self.frontier is None or self.buffer or self.held:
            return
        # the outcomes waiting for their batch first: their URLs are not lost, and what they
        # queue (a duplicate to take a place) is work still to do
        written = self.ledger.flush()
        lost = self.frontier.leased_by(self.owner)
        for url, depth in lost:
            logger.warning("No outcome was recorded for %s; it gets status 925 and is fetched again next crawl", url)
            outcome = Outcome(Event.FAILED, int(Status.PROCESSING_ERROR), "processing ended without an outcome", depth)
            self.crawler.signals.send_catch_log(url_outcome, url=url, outcome=outcome)
        written += self.ledger.flush()
        if (written or lost) and self.frontier.counts()[FrontierState.QUEUED]:
            raise DontCloseSpider  # an outcome queued work (a duplicate to take a place)

    def _wake(self) -> None:
        """A shared crawl, every IDLE_RECHECK while the engine has found no request to send: once
        the frontier has URLs again, or nothing is pending any more (the run's end), the engine is
        made to ask at once, through its public crawl(): a request handed to it makes it look at
        the scheduler, and enqueue_request keeps this one (meta WAKE) out of the queue."""
        engine = self.crawler.engine
        if not self.starved or engine is None or engine.spider is None or self.frontier is None:
            return
        try:
            present = self.frontier.present()  # a read; the lease, a write, only when it can find something
            if FrontierState.QUEUED in present:
                self._refill()
            ready = bool(self.buffer) or not (self.held or self._pending_elsewhere(present))
        except Exception:  # a database hiccup: the next look, or Scrapy's heartbeat, tries again
            logger.exception("Looking for URLs of run %s failed", self.run.id if self.run else "?")
            return
        if ready:
            self._ask_again()

    def _ask_again(self) -> None:
        """Make the engine, which found no request here a moment ago, ask again at once: a request
        handed to its public crawl() makes it look at the scheduler, and enqueue_request keeps
        this one (meta WAKE) out of the queue. Without it, the engine asks again only at its
        heartbeat, 5 s later."""
        try:
            engine = self.crawler.engine
        except RuntimeError:  # Scrapy's "not set yet": no crawl to wake (the scheduler driven alone)
            return
        if engine is None or engine.spider is None:
            return
        self.starved = False
        engine.crawl(Request(WAKE_URL, dont_filter=True, meta={WAKE: True}))

    def enqueue_request(self, request: Request) -> bool:
        if request.meta.get(WAKE):
            # _wake's request: it only made the engine look here. Accepted, so that it is never
            # reported as dropped, and not stored: BaseScheduler's "True if stored" bent on
            # purpose (the engine has no public way to be asked to look at the scheduler again)
            return True
        assert self.frontier is not None
        # dont_filter: a retry (RetryMiddleware) of a URL this run has leased already
        stored = bool(self.admission.queue([entry_of(request)], again=request.dont_filter))
        if stored:
            self.crawler.stats.inc_value("scheduler/enqueued")
        return stored

    def _left(self) -> int | None:
        """Requests this process may still lease for the engine (None: no cap)."""
        return max(0, self.max_requests - self.handed - len(self.held)) if self.max_requests else None

    def _capped(self) -> bool:
        return bool(self.max_requests) and self.handed >= self.max_requests

    def _close_when_capped(self) -> None:
        """spider_idle past SEARCHCRAWL_MAX_REQUESTS: what was handed over is answered; the crawl
        closes, though URLs are still queued (they stay queued, for the run's resumption)."""
        if self._capped():
            logger.debug("%d requests handed over (SEARCHCRAWL_MAX_REQUESTS): the crawl closes", self.handed)
            raise CloseSpider(MAX_REQUESTS_REASON)

    def _refill(self) -> None:
        left = self._left()
        if self.buffer or self.frontier is None or left == 0:
            return
        size = self.batch if left is None else min(self.batch, left)
        self.buffer.extend(self.frontier.lease(size))
        if not self.buffer and self.ledger.flush_links():  # links waiting for their batch: the next URLs, maybe
            self.buffer.extend(self.frontier.lease(size))
        if not self.buffer:
            self.last_empty = time.monotonic()
            self.additions_at_empty = self.frontier.additions

    def next_request(self) -> Request | None:
        if self._capped():
            return None
        request = self._next_within_sites() if self.max_sites else self._next()
        self.starved = request is None
        self.handed += request is not None
        return request

    def _next(self) -> Request | None:
        if (
            not self.buffer
            and self.frontier is not None
            and self.frontier.additions == self.additions_at_empty
            and time.monotonic() - self.last_empty < IDLE_RECHECK
            and not self.ledger.links_waiting()
        ):
            return None  # nothing new since the frontier was last found empty, nor waiting to be written
        self._refill()
        if not self.buffer:
            return None
        assert self.spider is not None
        # the spider's request factory: the source's current settings (its render mode) apply
        request: Request = self.spider.requests(self.buffer.popleft(), leased=True)  # type: ignore[attr-defined]
        self.crawler.stats.inc_value("scheduler/dequeued")
        return request

    def _next_within_sites(self) -> Request | None:
        """The next request whose site is being crawled already, or a new site's while fewer
        than SEARCHCRAWL_MAX_SITES are; others wait (held) until a site finishes."""
        assert self.crawler.engine is not None
        downloader = self.crawler.engine.downloader
        # downloader.active holds a request from the moment the engine hands it over until its
        # download ends (also when a downloader middleware drops it)
        active = {downloader.get_slot_key(request) for request in downloader.active}
        for _ in range(len(self.held)):
            request = self.held.popleft()
            if downloader.get_slot_key(request) in active or len(active) < self.max_sites:
                return request
            self.held.append(request)
        while len(self.held) < HELD_LIMIT_BATCHES * self.batch:
            queued = self._next()
            if queued is None:
                return None
            if downloader.get_slot_key(queued) in active or len(active) < self.max_sites:
                return queued
            self.held.append(queued)
        return None

    def has_pending_requests(self) -> bool:
        if self._capped():
            return False
        if self.held:
            return True
        self._refill()
        if self.buffer and self.starved:
            # URLs came since next_request found none: links its page's outcome batch wrote (on the
            # batch writer's thread: this node's additions count does not see them) or another
            # node's. The engine asks this while deciding whether the crawl is idle, and would ask
            # next_request again only at its heartbeat: every fresh crawl's first page waited 4.6-4.9 s
            self._ask_again()
        return bool(self.buffer) or self._pending_elsewhere()

    def _pending_elsewhere(self, present: set[FrontierState] | None = None) -> bool:
        """Nothing leased here, yet the run goes on: its plan is being made (its next batch may
        queue URLs), or, in a shared crawl, other nodes work on it."""
        return self._planning() or (self.shared and self._others_working(present))

    def _others_working(self, present: set[FrontierState] | None = None) -> bool:
        """In a shared crawl: do other nodes still hold leases (their pages may add links), or is
        the run just being set up by another node (nothing queued or done yet)? ``present``: the
        frontier's states just read (else read at most every IDLE_RECHECK)."""
        if present is None and time.monotonic() - self.others_checked < IDLE_RECHECK:
            return self.others_working
        assert self.frontier is not None and self.run is not None
        self.others_checked = time.monotonic()
        if self.others_checked - self.taken_back_at >= TAKE_BACK_EVERY and self._take_back():
            self.others_working = True  # a dead node's URLs are queued again
            return True
        maker = None if isinstance(self.plan_outcome, BaseException) else self.runs.plan_owner(self.run.id)
        if maker is not None:
            # the run's plan is being made; when its maker is gone (or failed), one node takes it
            # over (the plan is idempotent) and the others go on waiting for it
            if (
                self.planner is None
                and self.started is not None
                and maker != self.owner
                and (maker == "" or maker not in self.runs.nodes(self.run.id, self.lease_seconds, but=self.owner))
                and self.runs.take_over_plan(self.run.id, maker, self.owner)
            ):
                logger.info("Run %d's plan was left unmade (by %s): this node makes it", self.run.id, maker or "a failure")
                self._start_plan(replace(self.started, plan_pending=True))
            self.others_working = True
            return True
        if present is None:
            present = self.frontier.present()
        self.others_working = bool(present & {FrontierState.QUEUED, FrontierState.LEASED}) or (
            FrontierState.DONE not in present and bool(self.runs.nodes(self.run.id, self.lease_seconds, but=self.owner))
        )
        return self.others_working

    def __len__(self) -> int:
        return len(self.buffer) + len(self.held)
