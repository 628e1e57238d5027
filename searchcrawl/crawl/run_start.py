"""The start of a run: what a source's crawl is before it fetches anything (blocking; called by
the frontier scheduler when it opens, which then sends ``run_started``).

- ``take_over_index``: a source the document table knows nothing of takes over what Solr holds of it;
- ``begin_run``: the run this process works on as a value (``Run``): resumed as it was, or new:
  a maintenance crawl (every known URL queued again, those the rules keep out now excluded), a
  forced recrawl (asked for, a change of the settings that documents depend on, Solr's documents
  taken over), a test crawl, or a first crawl.
- ``plan_run``: the maintenance plan of a run of a source the document table knows (every known
  URL queued again, or excluded), made in batches on a thread of its own while the crawl goes on
  (the frontier scheduler starts it): a million known URLs take seconds to plan, and the first
  request does not wait for them. The run's ``plan_owner`` says which node makes it; a run resumed
  with it pending makes it again (it is idempotent), a node of a shared crawl takes it over from
  a node that is gone (the scheduler), and no node ends a run while it is pending.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta

from searchcrawl.config.source import Source
from searchcrawl.config.source_derived import fingerprint
from searchcrawl.crawl.run import CrawlArguments, Run
from searchcrawl.index.solr_client import IndexingError, SolrIndex, found_documents
from searchcrawl.rules.maintenance import recrawl_reasons
from searchcrawl.store import DocumentTable
from searchcrawl.store.database import now, process_owner
from searchcrawl.store.ledger import Ledger
from searchcrawl.store.runs import RunInfo, Runs

logger = logging.getLogger(__name__)


def take_over_index(source: Source, documents: DocumentTable, index: SolrIndex, ledger: Ledger) -> bool:
    """Before a run starts: a source the document table knows nothing of. Its data directory may
    be lost or new (another machine, a container without its volume, SQLite swapped for
    PostgreSQL) while Solr still holds the source's documents: with no row, a page deleted from
    the site since would stay in the index for good, and the delta report would call every page
    new. What Solr holds of the source is taken over (``found``: indexed, with the checksum Solr
    keeps), and the run is a forced recrawl (True): the maintenance plan queues every document,
    a page gone leaves, and the others are indexed again as this version and these settings make
    them. Before the run starts, so no process of a shared crawl fetches a URL of the source
    meanwhile. Solr unreadable: the crawl goes on as a first crawl, and says what it could not
    take over. Agent sources (whose listing names their documents) take nothing over."""
    name = source.name
    if source.agent_class is not None or documents.knows(name):
        return False
    try:
        found = ledger.record_found(found_documents(index, name))
    except IndexingError as exc:
        logger.warning(
            "Could not read what Solr holds of %s (%s): documents of it in Solr that this crawl does not find again stay there",
            name,
            exc,
        )
        return False
    if found:
        logger.info(
            "Forced recrawl of %s: the document table knew nothing of it; took over the %d documents Solr "
            "holds of it, which this crawl checks and indexes again",
            name,
            found,
        )
    return bool(found)


def begin_run(
    info: RunInfo,
    arguments: CrawlArguments,
    *,
    source: Source,
    runs: Runs,
    ledger: Ledger,
    known: Callable[[str, int], tuple[int, str] | None],
    taken_over: bool = False,
    shared: bool = False,
    owner: str = "",
) -> Run:
    """The run ``info`` (started, resumed or joined by ``Runs.start``) as this process works on it.
    A resumed run keeps its mode; a new run of a source the document table knows is a
    maintenance crawl, whose plan (``plan_run``) this process makes: ``plan_pending``. A resumed
    run whose plan was cut short has it made again by its first process (one that joins live
    nodes leaves it to them). The ledger's writes are the run's from here on."""
    name = source.name
    value = dict(id=info.id, source=name, started=now(), resumed=info.resumed, joined=bool(info.others))
    value.update(force_delete=arguments.force_delete, shared=shared, owner=owner)
    if info.resumed:
        mode = (runs.latest(name) or {}).get("mode") or "initial"
        test_mode = arguments.test_mode or mode == "test"
        ledger.in_run(info.id, test_mode)
        forced = arguments.forced or taken_over or mode == "forced"
        # its plan cut short (a stop, a crash) is made again, by its first process (the nodes that
        # join live ones leave it to them: the scheduler takes it over from one that is gone)
        plan_pending = not info.others and runs.plan_pending(info.id)
        if plan_pending:
            runs.set_plan_owner(info.id, owner or process_owner())
        return Run(mode=mode, forced=forced, test_mode=test_mode, plan_pending=plan_pending, **value)  # type: ignore[arg-type]
    ledger.in_run(info.id, arguments.test_mode)
    forced = arguments.forced or taken_over
    reasons = recrawl_reasons(runs.fingerprint(name), fingerprint(source))
    if reasons and not forced:
        logger.info("Forced recrawl of %s: %s", name, "; ".join(reasons))
    forced = forced or bool(reasons)
    if source.agent_class is not None:  # its listing names what is crawled, known or not (agent_spider.py)
        known_before, plan_pending = ledger.table.count_in_index(name) > 0, False
    else:
        known_before = plan_pending = ledger.table.knows(name)
    if arguments.test_mode:
        mode = "test"
    elif forced:
        mode = "forced"
    else:
        mode = "maintenance" if known_before else "initial"
    runs.set_mode(info.id, mode)
    if plan_pending:
        runs.set_plan_owner(info.id, owner or process_owner())
    return Run(mode=mode, forced=forced, test_mode=arguments.test_mode, plan_pending=plan_pending, **value)  # type: ignore[arg-type]


def plan_run(
    run: Run,
    *,
    source: Source,
    runs: Runs,
    ledger: Ledger,
    known: Callable[[str, int], tuple[int, str] | None],
    stop: Callable[[], bool] | None = None,
) -> bool:
    """Make the maintenance plan of ``run`` (blocking: the scheduler runs it on a thread): every
    known URL queued again, or excluded when the rules (``known``: ``Admission.known``) keep it
    out now (``Ledger.plan_maintenance``, batch by batch). Returns whether it was made whole
    (``stop`` cuts it short: the run's plan stays pending, and the next session makes it again)."""
    name = source.name
    days = source.settings.recheck_gone_days
    started = time.monotonic()
    planned, excluded = ledger.plan_maintenance(known, now() - timedelta(days=days) if days > 0 else None, stop=stop)
    if stop is not None and stop():
        logger.info("The plan of run %d of %s was cut short: the next crawl makes it again", run.id, name)
        return False
    runs.set_plan_owner(run.id, None)
    if excluded:
        logger.info("%d known URLs of %s are outside the source's rules now; %s", excluded, name, run.leaving())
    logger.info(
        "%s crawl of %s: %d known URLs queued with the seeds (planned in %.1f s)",
        run.mode.title(),
        name,
        planned,
        time.monotonic() - started,
    )
    return True
