"""RunEnd: the end of a crawl's run, in one place and in its order.

A process's crawl ends in these steps, each a function of its own (``RunEnd.end`` reads them top
to bottom):

1. claim the end: alone, this process ends the run; in a shared crawl, the node whose close finds
   the frontier empty and claims it first (``claims_end``); the others push their documents and
   leave (``leave_or_suspend``);
2. wait for the other nodes to leave the run (``wait_for_other_nodes``): what they still record
   is settled in this run;
3. settle: redirect targets nothing redirects to any more, orphans (``settle_run``);
4. apply the mass-deletion guard (``guard_removals``): refused deletions are held;
5. push the removals and the pending documents to Solr (``push_at_end``), commit;
6. leave the run and report: the run's state, counters and delta report (``report``), then
   ``run_ended`` for the notifications (extensions/run_notify.py), in the same worker thread.

Why ``spider_closed``: Scrapy sends it once the engine has closed everything else of the spider,
the item pipelines (every document is through them, the Solr pipeline's pushes during the crawl
are over) and the scheduler (this process leases nothing any more: what it had leased is queued
again), and it waits for an asynchronous receiver. That is Scrapy's public, documented order;
nothing here depends on the order in which it closes the pipelines and the scheduler. The
document table is closed later, on ``engine_stopped`` (stores.py). The stats are dumped
after ``spider_closed``: the end's counters are in the dump, and ``scrapy crawl`` reads
``searchcrawl/not_indexed`` for its exit code. The steps block (database, Solr): they run in a
worker thread, so the reactor goes on (other ``spider_closed`` receivers, a second Ctrl-C).
Not the Solr pipeline's ``close_spider`` and the scheduler's ``close``, where the end was spread
before: it was right only because the engine closes the pipelines before the scheduler, which
Scrapy does not document, and an item pipeline or scheduler doing a run's end is a component
doing another's work.

A node's lease renewal stops with its scheduler; its heartbeat goes on until its run's end is
over (``RunEnd.closed``), so that the node ending the run waits for its last push.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import AsyncioLoopingCall, create_looping_call
from twisted.internet.task import LoopingCall

from searchcrawl.config.source import Source
from searchcrawl.config.source_derived import fingerprint
from searchcrawl.crawl.ledger_writer import LedgerWriter
from searchcrawl.crawl.meta import CONNECTION_REFUSALS
from searchcrawl.crawl.pipelines.solr_push import SolrPipeline, count_push, make_pusher
from searchcrawl.crawl.requests import admission_of
from searchcrawl.crawl.run import SKIPPED_STAT, Run, run_counters
from searchcrawl.crawl.signals import run_ended, run_started
from searchcrawl.crawl.stores import Stores, source_of, stores_of
from searchcrawl.index.push import PushResult, SolrPusher, push_with_retries
from searchcrawl.index.solr_client import IndexingError
from searchcrawl.rules.chain import RuleChain
from searchcrawl.rules.lifecycle import Delta, Event, Outcome, State
from searchcrawl.rules.maintenance import deletion_guard
from searchcrawl.rules.status_codes import Status
from searchcrawl.store import Deltas
from searchcrawl.store.frontier import Frontier
from searchcrawl.store.ledger import Ledger
from searchcrawl.store.models import FrontierState, RunState
from searchcrawl.store.runs import Runs

logger = logging.getLogger(__name__)

# seconds the node that ends a shared run waits for the others to leave it (wait_for_other_nodes)
OTHERS_LEAVE_WAIT = 60.0
RUN_STATE_FOR_REASON = {
    "finished": RunState.FINISHED,
    "stopped": RunState.STOPPED,
    "failed": RunState.FAILED,
}  # anything else: suspended


# --- the decisions, plain ------------------------------------------------------------------------


def closing_state(reason: str, queued: int) -> RunState:
    """The run's state for the spider's close ``reason``: finished, stopped, failed, else
    suspended (resumable); finished with URLs still queued (a limit) is suspended too."""
    state = RUN_STATE_FOR_REASON.get(reason, RunState.SUSPENDED)
    return RunState.SUSPENDED if state == RunState.FINISHED and queued else state


def run_complete(counts: Mapping[FrontierState, int]) -> bool:
    """Nothing queued and nothing leased: every URL of the run is done (a shutdown, or another
    node still working, leaves URLs queued or leased)."""
    return not counts.get(FrontierState.QUEUED) and not counts.get(FrontierState.LEASED)


def claims_end(shared: bool, state: RunState, counts: Mapping[FrontierState, int], claim: Callable[[], bool]) -> bool:
    """Whether this process does the run's end (removals, delta report). Alone: always. In a
    shared crawl: a node closing "finished" that finds the frontier empty, and wins ``claim``
    (exactly one node does). A node closing otherwise (shutdown, suspend) never claims: the run
    goes on, or is suspended, and the end is a later node's."""
    if not shared:
        return True
    return state == RunState.FINISHED and run_complete(counts) and claim()


def wait_for_other_nodes(
    others: Callable[[], list[str]],
    timeout: float = OTHERS_LEAVE_WAIT,
    every: float = 0.02,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[str]:
    """Wait until ``others()`` (the other nodes in the run) is empty, at most ``timeout``
    seconds; returns the nodes still there then ([] when all left). A node's last URLs are done
    (their leases ended) before its last documents are through its pipelines: one found then to
    be the duplicate of what another node cached at the same moment leaves the index, and settled
    before that, the run's end left it to the next crawl's (the sequence test, seed 35, crawl 58,
    two processes: a redirect target excluded a crawl late). Bounded: a node killed at its very
    end stays listed until its lease expires. Asked every ``every`` seconds (a query of one
    index, well under a millisecond): the others leave within tenths of a second."""
    started = clock()
    while still := others():
        if clock() - started >= timeout:
            return still
        sleep(every)
    return []


def settle_run(
    source: Source,
    ledger: Ledger,
    rule_excluding: Callable[[str, int], tuple[int, str] | None],
    refused: int,
    unreached: int,
) -> None:
    """The end of a complete run of a web source, before removals go to Solr: a temporary
    redirect's target outside the boundary leaves once no URL of the source redirects to it; with
    ``orphans = "delete"``, documents no page linked to in this run leave too, unless the site
    refused the source's credentials (``refused``) or URLs failed in TLS or at the proxy
    (``unreached``): pages it did not show yielded no links, so "no page links to it" is unknown.
    (An agent's listing settles what left its source: agent_spider.py ``settle_listing``.)"""
    name = source.name
    gone = ledger.drop_stale_targets(rule_excluding)
    if gone:
        logger.info("%d redirect targets of %s outside its boundary leave the index: nothing redirects to them now", gone, name)
    if source.settings.orphans != "delete":
        return
    if refused or unreached:
        logger.warning(
            "Orphans of %s are kept: the site refused the source's credentials %d times; %d URLs failed in TLS or at the proxy",
            name,
            refused,
            unreached,
        )
        return
    seeds = set(source.seed_urls)
    for url in ledger.table.orphans(name):
        if url not in seeds:
            # on the run end's worker thread: written directly, not through a signal
            ledger.record(url, Outcome(Event.GONE, int(Status.ORPHAN), "no longer linked"))


def guard_removals(source: Source, ledger: Ledger, force_delete: bool) -> int:
    """The mass-deletion guard on what leaves the index: returns how many deletions it holds (0:
    they go). Held deletions stay in the index and the delta report says so; ``-a delete=force``
    (``force_delete``) confirms them."""
    table = ledger.table
    removals = len(table.removals(source.name))
    refusal = deletion_guard(
        source.name, removals, table.count_in_index(source.name), source.settings.max_delete_share, force_delete
    )
    if refusal is None:
        return 0
    logger.error("Mass-deletion guard for %s: %s", source.name, refusal)
    ledger.hold_removals()
    return removals


def delta_summary(counts: Mapping[str, int], skipped: int) -> str:
    """The delta report's counts, for the log: every kind of change, and the listing's skipped entries."""
    summary = ", ".join(f"{kind} {counts.get(kind, 0)}" for kind in Delta)
    if skipped:
        summary += f", skipped {skipped} (no documents: see the listing's warning)"
    return summary


# --- the component -------------------------------------------------------------------------------


class RunEnd:
    """The run's end, on ``spider_closed`` (see the module's docstring). Configured by
    ``SEARCHCRAWL_SOLR_RETRY_TIMES`` and ``SEARCHCRAWL_SOLR_RETRY_BACKOFF`` (the final push's
    attempts) and ``SEARCHCRAWL_LEASE_SECONDS`` (how long a silent node counts as in the run).

    It works with the source, the stores, the ledger and the rule chain (a redirect target's
    refusal), given to it, or, built with the other extensions, found when the run starts
    (Scrapy's ``get_extension`` answers once every extension is built); the run and its frontier
    arrive with ``run_started``. Without a run, this process crawled nothing: nothing to end."""

    stores: Stores
    ledger: LedgerWriter
    chain: RuleChain

    def __init__(
        self,
        crawler: Crawler,
        source: Source,
        stores: Stores | None = None,
        ledger: LedgerWriter | None = None,
        chain: RuleChain | None = None,
    ) -> None:
        self.crawler = crawler
        self.source = source
        if stores is not None and ledger is not None and chain is not None:
            self.stores, self.ledger, self.chain = stores, ledger, chain
        self.stats = crawler.stats
        settings = crawler.settings
        self.retry_times = max(1, settings.getint("SEARCHCRAWL_SOLR_RETRY_TIMES"))
        self.backoff = settings.getfloat("SEARCHCRAWL_SOLR_RETRY_BACKOFF")
        self.lease_seconds = settings.getfloat("SEARCHCRAWL_LEASE_SECONDS")
        self.others_leave_wait = OTHERS_LEAVE_WAIT
        self.run: Run | None = None
        self.frontier: Frontier | None = None
        crawler.signals.connect(self.run_started, signal=run_started)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RunEnd:
        if crawler.settings.getbool("SEARCHCRAWL_READ_ONLY"):
            raise NotConfigured("a read-only crawl (SEARCHCRAWL_READ_ONLY) has no run to end")
        return cls(crawler, source_of(crawler))

    def run_started(self, run: Run, frontier: Frontier) -> None:
        self.run, self.frontier = run, frontier
        if not hasattr(self, "stores"):  # built with the other extensions: found now
            ledger = self.crawler.get_extension(LedgerWriter)
            assert ledger is not None  # a crawl that starts a run has one
            self.stores, self.ledger, self.chain = stores_of(self.crawler), ledger, admission_of(self.crawler).chain

    def pusher(self) -> SolrPusher:
        """The Solr pipeline's pusher (one a crawl: ``make_pusher``), or one of its own when the
        pipeline is not enabled, or the crawler has no engine (a component built alone, whose
        ``get_item_pipeline`` raises: the run's end then failed before its last push)."""
        try:
            pipeline = self.crawler.get_item_pipeline(SolrPipeline)
        except RuntimeError:  # no engine: no item pipeline either
            pipeline = None
        if pipeline is not None:
            return pipeline.pusher
        return make_pusher(self.crawler.settings, self.source, self.stores, self.ledger)

    async def closed(self, reason: str) -> None:
        """spider_closed: the run's end, in a worker thread; meanwhile this node stays alive in
        the run (its scheduler's lease renewal has stopped): the node ending the run waits for
        it until it has pushed its documents and left, not only a lease long."""
        if self.run is None or self.frontier is None:  # it took no run, and crawled nothing: nothing to end
            return
        heartbeat = self.heartbeat(self.run)
        try:
            await asyncio.to_thread(self.end, self.run, self.frontier, reason)
        finally:
            if heartbeat.running:
                heartbeat.stop()

    def heartbeat(self, run: Run) -> AsyncioLoopingCall | LoopingCall:
        """This node's heartbeat in its run, every third of a lease from now (a no-op once it has left)."""
        looping = create_looping_call(self._beat, self.stores.runs, run.id, run.owner)
        looping.start(max(1.0, min(60.0, self.lease_seconds / 3)), now=True)
        return looping

    @staticmethod
    def _beat(runs: Runs, run_id: int, owner: str) -> None:
        try:
            runs.heartbeat(run_id, owner)
        except Exception:  # a database hiccup: the next beat tries again, well before the lease ends
            logger.exception("The heartbeat of %s in run %d failed", owner, run_id)

    def settle_copies(self) -> None:
        """What two nodes cached at the same moment, settled before the run's end decides (its
        removals come before the mass-deletion guard); a failure is logged and the end goes on
        (the last push settles them too)."""
        try:
            self.ledger.settle_pending(self.stores.cache.id)
        except Exception:
            logger.exception("Settling the same content cached twice at once failed at the end of the run")

    def end(self, run: Run, frontier: Frontier, reason: str) -> None:
        """The run's end, in its order (blocking)."""
        self.ledger.closing()  # this process fetches nothing more
        if not run.test_mode:  # (a test run caches nothing)
            self.settle_copies()
        counts = frontier.counts()
        if self.stores.runs.plan_pending(run.id):
            # its maintenance plan was cut short (a stop, a failure): known URLs are still to be
            # queued, whatever the frontier says. Suspended, and the next crawl makes the plan again
            counts = {**counts, FrontierState.QUEUED: counts.get(FrontierState.QUEUED, 0) + 1}
        state = closing_state(reason, counts.get(FrontierState.QUEUED, 0))
        if not self.claim(run, state, counts):
            with self.then_leave(run):
                self.push_at_end(run, remove=False)  # its own documents; the removals are the ending node's
            self.leave_or_suspend(run, frontier, state, reason)
            return
        with self.then_leave(run):
            self.wait_for_other_nodes(run)
            self.settle(run, run_complete(counts))
            remove = self.guard(run)
            self.push_at_end(run, remove)
        self.report(run, frontier, state, reason)

    @contextmanager
    def then_leave(self, run: Run) -> Iterator[None]:
        """A step before leaving the run that fails (the database, the cache, a bug) is logged,
        and the run is left and its end recorded all the same, as when the Solr pipeline's and
        the scheduler's close did them apart: otherwise the run stayed running with no report,
        as if the process had been killed (the next crawl resumed it), and in a shared crawl the
        ending node waited for a node that never left."""
        try:
            yield
        except Exception:
            logger.exception("The end of run %s of %s failed; the run is left all the same", run.id, run.source)

    # --- the steps ---

    def claim(self, run: Run, state: RunState, counts: Mapping[FrontierState, int]) -> bool:
        """Step 1: does this process end the run? (``claims_end``)."""
        return claims_end(run.shared, state, counts, lambda: self.stores.runs.claim_finish(run.id))

    def wait_for_other_nodes(self, run: Run) -> None:
        """Step 2, a shared crawl's ending node: wait (bounded) until the others have left the run."""
        if not run.shared:
            return
        runs = self.stores.runs
        started = time.monotonic()
        still = wait_for_other_nodes(lambda: runs.nodes(run.id, self.lease_seconds, but=run.owner), self.others_leave_wait)
        if still:
            logger.warning(
                "Run %d of %s ends without %s, which did not leave it in %.0f s: what it records now is the next crawl's to settle",
                run.id,
                run.source,
                ", ".join(still),
                self.others_leave_wait,
            )
        elif time.monotonic() - started >= 0.02:
            logger.debug("Waited %.1f s for the other nodes to leave run %d", time.monotonic() - started, run.id)

    def settle(self, run: Run, complete: bool) -> None:
        """Step 3: a complete run of a web source settles what leaves (``settle_run``); not in
        test mode, not an agent's source (its listing settled it)."""
        if not complete or run.test_mode or self.source.agent_class is not None:
            return
        refused = self.stats.get_value("searchcrawl/auth_refused", 0)
        unreached = self.stats.get_value(CONNECTION_REFUSALS, 0)  # TLS or proxy failures
        settle_run(self.source, self.ledger, self.chain.refusal, refused, unreached)

    def guard(self, run: Run) -> bool:
        """Step 4: whether the removals go to Solr (``guard_removals``; test mode sends nothing)."""
        if run.test_mode:
            return False
        held = guard_removals(self.source, self.ledger, run.force_delete)
        if held:
            self.stats.set_value("searchcrawl/deletions_held", held)
        return not held

    def push_at_end(self, run: Run, remove: bool) -> None:
        """Step 5: the removals (if ``remove``) and every pending document to Solr, a few times
        more when Solr fails (then the next crawl pushes them first), then a commit. Test mode
        sends nothing."""
        if run.test_mode:
            return
        self.stores.cache.seal()  # every document is marked pending now: its spool may go once pushed
        pusher = self.pusher()
        result = push_with_retries(lambda: pusher.push_once(remove), self.retry_times, self.backoff)
        self.account(result)
        if result.error is not None:
            return
        try:
            self.stores.index.commit()
        except IndexingError as exc:
            logger.warning("%s (documents become searchable with Solr's next automatic commit)", exc)
        stats = self.stats
        refused = stats.get_value("searchcrawl/solr_refused", 0)
        logger.log(
            logging.WARNING if refused else logging.INFO,
            "Indexing done: %d documents of %s pushed to Solr and %d removed in this crawl%s",
            stats.get_value("searchcrawl/indexed", 0),
            run.source,
            stats.get_value("searchcrawl/removed", 0),
            f"; {refused} refused by Solr (status 924, not indexed; the log says why)" if refused else "",
        )

    def account(self, result: PushResult) -> None:
        """The final push's counts in the crawl's stats; what stays pending, said once."""
        stats = self.stats
        count_push(stats, result)
        stats.set_value("searchcrawl/pending", result.pending)
        if result.error is None:
            return
        refused = stats.get_value("searchcrawl/solr_refused", 0)
        # what `scrapy crawl` exits with 4 for: documents this crawl could not get into Solr
        # (documents Solr refused one by one are not pending: they have status 924)
        stats.set_value("searchcrawl/not_indexed", result.pending)
        logger.error(
            "%s: %d documents of %s stay cached and pending; the next crawl pushes them first (%s)%s",
            "Solr refused the push" if result.request_refused else "Solr unavailable",
            result.pending,
            self.source.name,
            result.error,
            f"; {refused} documents were refused by Solr (status 924)" if refused else "",
        )

    def leave_or_suspend(self, run: Run, frontier: Frontier, state: RunState, reason: str) -> None:
        """A shared crawl's node that does not end the run leaves it; the last node of a run that
        did not finish (all shut down, or suspended) records its state and report."""
        runs = self.stores.runs
        runs.leave(run.id, run.owner)
        others = runs.nodes(run.id, self.lease_seconds)
        if others or state == RunState.FINISHED:  # the others go on, or one of them ends the run
            logger.info(
                "Node %s leaves run %d of %s (%s)%s",
                run.owner,
                run.id,
                run.source,
                reason,
                f"; {len(others)} node(s) go on" if others else "",
            )
            return
        self.report(run, frontier, state, reason)

    def report(self, run: Run, frontier: Frontier, state: RunState, reason: str) -> None:
        """Step 6: leave the run, record its end (state, counters, delta report kept in the
        database), and say it; a finished run keeps the settings' fingerprint."""
        runs = self.stores.runs
        runs.leave(run.id, run.owner)
        name = run.source
        deltas = Deltas(self.stores.database)
        deltas.keep(name, run.id)
        counts = deltas.counts(name, run.id)  # its URLs stay in the database (`scrapy report` lists them)
        counters = {**run_counters(self.stats, frontier.counts()), "delta": dict(sorted(counts.items()))}
        # the source's documents in the index after the run: the source page's chart (issue 60)
        counters["documents"] = self.stores.documents.count_by(name, "state").get(State.INDEXED.value, 0)
        runs.end(run.id, state, counters, reason)
        if state == RunState.FINISHED and not run.test_mode:
            runs.save_fingerprint(name, fingerprint(self.source))
        logger.info("Run %d of %s is %s (%s)", run.id, name, state, reason)
        logger.info(
            "Delta of run %d (%s%s): %s; `scrapy report %s` lists the URLs",
            run.id,
            run.mode,
            ", test mode: nothing sent to Solr" if run.test_mode else "",
            delta_summary(counts, self.stats.get_value(SKIPPED_STAT, 0)),
            name,
        )
        # issue 60: the recorded end, for the notifications (a receiver's failure is logged, never the end's)
        self.crawler.signals.send_catch_log(run_ended, run=run, state=state, reason=reason, counters=counters, stores=self.stores)


def run_end(crawler: Crawler) -> RunEnd:
    """The crawl's RunEnd; a source spider's crawl without it is refused: its runs would never end."""
    found = crawler.get_extension(RunEnd)
    if found is None:
        raise RuntimeError("searchcrawl.crawl.extensions.run_end.RunEnd is not enabled (EXTENSIONS): a source's crawl needs it")
    return found
