"""The start of a run alone (crawl/run_start.py): what ``begin_run`` makes of a run the runs
table started or resumed, as a ``Run`` value, over in-memory stores and the store's ``Ledger``
(no crawler, no Solr: the take-over of Solr's documents is given an unreachable one)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from searchcrawl.config.source import Source
from searchcrawl.config.source_derived import fingerprint, rule_chain
from searchcrawl.crawl.run import CrawlArguments, Run
from searchcrawl.crawl.run_start import begin_run, plan_run, take_over_index
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.ledger import Ledger
from searchcrawl.store.models import RunState
from searchcrawl.store.runs import Runs
from tests.components import UNREACHABLE_SOLR

SOURCE = 'seeds = ["http://h.test/"]\npaths = { "*" = { exclude = ["/private/"] } }\n'


@pytest.fixture
def source(crawler_of) -> Source:
    return crawler_of().spidercls.source  # type: ignore[no-any-return]


@pytest.fixture
def table() -> Iterator[DocumentTable]:
    table = DocumentTable(Database("sqlite://"))
    yield table
    table.database.close()


def start(source: Source, table: DocumentTable, arguments: dict[str, str] | None = None, **options: bool) -> tuple[Run, Ledger]:
    """A run of ``source`` as the frontier scheduler starts it, and the ledger that writes for it."""
    runs, ledger = Runs(table.database), Ledger(table, source.name)
    info = runs.start(source.name, owner="node-1")
    chain = rule_chain(source, 2048)
    run = begin_run(
        info,
        CrawlArguments.of(arguments or {}),
        source=source,
        runs=runs,
        ledger=ledger,
        known=chain.refusal,
        owner="node-1",
        **options,
    )
    return run, ledger


def finish(table: DocumentTable, run: Run, source: Source, indexed: list[str]) -> None:
    """The run fetched ``indexed`` (in the index now) and finished, its fingerprint kept."""
    ledger = Ledger(table.for_run(run.id), source.name)
    for url in indexed:
        ledger.record(url, Outcome(Event.CACHED, 200, "", 0, columns={"checksum": url}))
    ledger.mark_indexed([(url, url) for url in indexed])
    runs = Runs(table.database)
    runs.end(run.id, RunState.FINISHED, {}, "finished")
    runs.save_fingerprint(source.name, fingerprint(source))


def test_arguments_are_read_as_the_crawl_gives_them() -> None:
    assert CrawlArguments.of({"recrawl": "force", "test_mode": "yes", "delete": "force"}) == CrawlArguments(True, True, True)
    assert CrawlArguments.of({"recrawl": "no", "test_mode": "0"}) == CrawlArguments()


def test_a_first_run_is_initial_and_its_writes_are_its_own(source: Source, table: DocumentTable) -> None:
    run, ledger = start(source, table)
    assert (run.mode, run.forced, run.test_mode, run.resumed, run.joined, run.owner) == (
        "initial",
        False,
        False,
        False,
        False,
        "node-1",
    )
    assert ledger.table.run_id == run.id
    assert Runs(table.database).latest(source.name)["mode"] == "initial"  # type: ignore[index]


def plan(run: Run, source: Source, table: DocumentTable, stop=None) -> bool:
    """The run's plan as the scheduler's thread makes it (plan_run)."""
    ledger = Ledger(table.for_run(run.id), source.name)
    return plan_run(
        run, source=source, runs=Runs(table.database), ledger=ledger, known=rule_chain(source, 2048).refusal, stop=stop
    )


def test_the_next_run_is_a_maintenance_crawl_of_what_is_known(source: Source, table: DocumentTable) -> None:
    """Its plan is not made by begin_run (a million known URLs take seconds: the first request
    does not wait for them) but by plan_run, which the scheduler runs on a thread of its own."""
    first, _ = start(source, table)
    assert not first.plan_pending  # nothing known: nothing to plan
    finish(table, first, source, ["http://h.test/", "http://h.test/a.html"])
    run, ledger = start(source, table)
    runs = Runs(table.database)
    assert run.mode == "maintenance" and not run.forced and run.plan_pending and runs.plan_pending(run.id)
    assert table.get(source.name, "http://h.test/a.html")["run_id"] == first.id  # type: ignore[index]  # not yet
    assert plan(run, source, table)
    assert table.get(source.name, "http://h.test/a.html")["run_id"] == run.id  # type: ignore[index]  # queued again
    assert not runs.plan_pending(run.id)


def test_a_plan_cut_short_is_made_again_by_the_resumed_run_not_by_a_node_that_joins(source: Source, table: DocumentTable) -> None:
    """A stop (or a crash) during the plan leaves it pending: the run ends suspended (RunEnd),
    and the process that resumes it makes it again, whole (idempotent); a node that joins live
    nodes leaves it to them (the scheduler takes it over only once they are gone)."""
    first, _ = start(source, table)
    finish(table, first, source, ["http://h.test/", "http://h.test/a.html"])
    run, _ = start(source, table)
    assert not plan(run, source, table, stop=lambda: True)  # cut short before its first batch
    runs = Runs(table.database)
    assert runs.plan_pending(run.id)
    runs.end(run.id, RunState.SUSPENDED, {}, "shutdown")
    resumed, _ = start(source, table)
    assert (resumed.id, resumed.resumed, resumed.mode, resumed.plan_pending) == (run.id, True, "maintenance", True)
    assert plan(resumed, source, table)
    assert table.get(source.name, "http://h.test/a.html")["frontier"] == "queued"  # type: ignore[index]
    shared = runs.start(source.name, allow_shared=True, owner="node-2")  # joins node-1, alive
    runs.set_plan_owner(run.id, "node-1")
    joined = begin_run(
        shared,
        CrawlArguments(),
        source=source,
        runs=runs,
        ledger=Ledger(table, source.name),
        known=rule_chain(source, 2048).refusal,
    )
    assert shared.others and not joined.plan_pending


def test_a_changed_indexing_rule_forces_one_recrawl_saying_why(crawler_of, table: DocumentTable, caplog) -> None:
    """Issue 72: a changed [regions] never reached the pages answered 304. Its change forces a
    recrawl with an INFO line saying why; the run after it (its fingerprint kept) does not."""
    source = crawler_of().spidercls.source
    first, _ = start(source, table)
    finish(table, first, source, ["http://h.test/"])
    changed = crawler_of(SOURCE + '[regions]\ndrop = ["div.share"]\n').spidercls.source
    assert changed.name == source.name
    with caplog.at_level(logging.INFO, logger="searchcrawl.crawl.run_start"):
        run, _ = start(changed, table)
    assert (run.mode, run.forced) == ("forced", True)
    assert f"Forced recrawl of {source.name}: the [regions] rules changed" in caplog.text
    finish(table, run, changed, ["http://h.test/"])
    run, _ = start(changed, table)
    assert (run.mode, run.forced) == ("maintenance", False)


def test_arguments_make_a_forced_or_a_test_run(source: Source, table: DocumentTable) -> None:
    run, ledger = start(source, table, {"recrawl": "force", "delete": "force"})
    assert (run.mode, run.forced, run.force_delete) == ("forced", True, True)
    Runs(table.database).end(run.id, RunState.STOPPED, {}, "stopped")
    run, ledger = start(source, table, {"test_mode": "1"})
    assert (run.mode, run.test_mode, ledger.table.test_mode) == ("test", True, True)


def test_solr_taken_over_makes_a_forced_run(source: Source, table: DocumentTable) -> None:
    run, _ = start(source, table, taken_over=True)
    assert (run.mode, run.forced) == ("forced", True)


def test_a_resumed_run_keeps_its_mode(source: Source, table: DocumentTable) -> None:
    first, _ = start(source, table, {"recrawl": "force"})
    Runs(table.database).end(first.id, RunState.SUSPENDED, {}, "shutdown")
    run, _ = start(source, table)  # resumed, without -a recrawl=force
    assert (run.id, run.resumed, run.mode, run.forced) == (first.id, True, "forced", True)


def test_nothing_is_taken_over_from_a_solr_that_cannot_be_read(source: Source, table: DocumentTable, caplog) -> None:
    ledger = Ledger(table, source.name)
    assert take_over_index(source, table, SolrIndex(UNREACHABLE_SOLR, timeout=2), ledger) is False
    assert "Could not read what Solr holds of unit" in caplog.text
    assert not table.knows(source.name)


def test_leaving_says_what_a_test_run_does() -> None:
    run = Run(id=1, source="unit", mode="test", started=None, test_mode=True)  # type: ignore[arg-type]
    assert "test mode: the index is not touched" in run.leaving()


def test_a_resumed_run_that_took_over_solr_is_forced(source: Source, table: DocumentTable) -> None:
    """A run killed before its first document, whose source's table is still empty: the next
    crawl resumes it, takes over what Solr holds, and must recrawl it forced, as a new run would."""
    first, _ = start(source, table)
    Runs(table.database).end(first.id, RunState.SUSPENDED, {}, "shutdown")
    run, _ = start(source, table, taken_over=True)
    assert (run.resumed, run.mode, run.forced) == (True, "initial", True)
