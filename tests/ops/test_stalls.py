"""Stall detection (searchcrawl/ops/stalls.py): the rule against a model over seeded random runs,
and stalls() against a real SQLite project database with what crawls record (runs, progress
reports, leased URLs) written as they write it. No server."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert, update

from searchcrawl.ops.health import Health
from searchcrawl.ops.stalls import NOT_REPORTING, NOTHING_FETCHED, RunFacts, judge, silent_process, stalls
from searchcrawl.store.database import Database, this_host
from searchcrawl.store.models import FrontierState, frontier, runs
from searchcrawl.store.progress import Report, RunProgress, Wait
from searchcrawl.store.runs import Runs
from searchcrawl.system.processes import process_state

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def model(facts: RunFacts, now: datetime, stall_after: float, stale_after: float) -> str | None:
    """The rule as the documentation says it, written plainly."""
    heard = [facts.updated_at] + [report.reported_at for report in facts.reports]
    heard += [facts.node_heartbeat] if facts.node_heartbeat else []
    if facts.gone or all((now - moment).total_seconds() >= stale_after for moment in heard):
        return NOT_REPORTING
    answers = [report.fetched_at for report in facts.reports]
    if answers and facts.to_fetch and all((now - moment).total_seconds() >= stall_after for moment in answers):
        return NOTHING_FETCHED
    return None


def test_the_rule_agrees_with_its_model_on_random_runs() -> None:
    generator = random.Random(60)
    kinds = {None: 0, NOT_REPORTING: 0, NOTHING_FETCHED: 0}
    for _case in range(5000):
        ago = lambda: timedelta(seconds=generator.choice([0, 30, 599, 600, 899, 900, 901, 3600]))  # noqa: E731
        reports = tuple(
            Report(1, f"h:{number}", "s", NOW - ago(), NOW - ago(), generator.randrange(100))
            for number in range(generator.randrange(3))
        )
        facts = RunFacts(
            "s",
            1,
            NOW - timedelta(hours=2),
            NOW - ago(),
            reports,
            generator.choice([0, 0, 5]),
            generator.random() < 0.1,
            generator.choice([None, NOW - ago()]),
        )
        verdict = judge(facts, NOW, 900, 600)
        assert (verdict[0] if verdict else None) == model(facts, NOW, 900, 600), facts
        kinds[verdict[0] if verdict else None] += 1
    assert all(count > 100 for count in kinds.values()), kinds  # every outcome was drawn


@pytest.fixture
def database(tmp_path: Path) -> Database:
    return Database(f"sqlite:///{tmp_path / 'documents.sqlite3'}")


def queue(
    database: Database, source: str, run_id: int, count: int, state: FrontierState = FrontierState.QUEUED, **values: object
) -> None:
    with database.engine.begin() as connection:
        connection.execute(
            insert(frontier),
            [
                {"document_id": run_id * 1000 + number, "source": source, "run_id": run_id, "state": state.value, **values}
                for number in range(count)
            ],
        )


def test_a_run_with_urls_and_no_answer_for_the_stall_time_is_stalled_with_its_waits(database: Database) -> None:
    run = Runs(database).start("intranet")  # this process: alive
    queue(database, "intranet", run.id, 3)
    since = NOW - timedelta(minutes=20)
    waits = [
        Wait("in-flight", "hangs.example", since=since, count=2),
        Wait("retry-after", "busy.example", until=NOW + timedelta(minutes=1)),
    ]
    RunProgress(database).report(run.id, f"{this_host()}:{os.getpid()}", "intranet", NOW, since, 12, waits)
    with database.engine.begin() as connection:
        connection.execute(update(runs).values(updated_at=NOW))
    [stall] = stalls(database, NOW, stall_after=900, stale_after=600)
    assert (stall.source, stall.run_id, stall.kind, stall.since, stall.to_fetch) == (
        "intranet",
        run.id,
        NOTHING_FETCHED,
        since,
        3,
    )
    text = stall.text(NOW)
    assert "nothing fetched for 20 min" in text and "3 URLs to fetch" in text
    assert "site hangs.example: 2 request(s) without an answer for 20 min" in text
    assert "site busy.example: a Retry-After pause until 12:01:00 UTC" in text
    # ten minutes: not yet; nothing left to fetch: never
    assert stalls(database, since + timedelta(minutes=10), stall_after=900, stale_after=3600) == []
    with database.engine.begin() as connection:
        connection.execute(update(frontier).values(state=FrontierState.DONE.value))
    assert stalls(database, NOW, stall_after=900, stale_after=600) == []


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_lease_of_a_process_gone_and_solr_and_tika_down_are_named(database: Database) -> None:
    run = Runs(database).start("intranet")
    gone = f"{this_host()}:{dead_pid()}"
    expires = NOW + timedelta(minutes=5)
    queue(database, "intranet", run.id, 4, FrontierState.LEASED, lease_owner=gone, lease_expires=expires)
    RunProgress(database).report(run.id, f"{this_host()}:{os.getpid()}", "intranet", NOW, NOW - timedelta(hours=1), 0, [])
    with database.engine.begin() as connection:
        connection.execute(update(runs).values(updated_at=NOW))
    [stall] = stalls(database, NOW, 900, 600, Health(False, False, 0))
    assert f"4 URL(s) leased by {gone}, a process gone (the lease expires at 12:05:00 UTC)" in stall.waits_on
    assert "Solr: out of reach, 0 document(s) waiting to be pushed" in stall.waits_on and "Tika: out of reach" in stall.waits_on


def test_a_run_whose_process_is_gone_or_silent_is_not_reporting(database: Database) -> None:
    run = Runs(database).start("intranet")
    with database.engine.begin() as connection:
        connection.execute(update(runs).values(pid=dead_pid(), updated_at=NOW - timedelta(minutes=1)))
    [stall] = stalls(database, NOW, 900, 600)
    assert (
        stall.kind == NOT_REPORTING
        and "its process is gone (killed or crashed): the next crawl resumes the run" in stall.waits_on
    )
    # alive but silent for longer than the heartbeat's stale time: waits on the database
    with database.engine.begin() as connection:
        connection.execute(update(runs).values(pid=os.getpid(), updated_at=NOW - timedelta(minutes=12)))
    RunProgress(database).report(run.id, f"{this_host()}:{os.getpid()}", "intranet", NOW - timedelta(minutes=11), NOW, 1, [])
    [stall] = stalls(database, NOW, 900, 600)
    assert stall.kind == NOT_REPORTING and stall.since == NOW - timedelta(minutes=11)
    # SQLite: a lock wait cannot be told from a long synchronous task
    assert (
        f"its process {os.getpid()} is alive but has not saved its heartbeat: blocked (a database lock or a long synchronous task)"
        in stall.waits_on
    )
    assert not any("the database lock" in wait for wait in stall.waits_on)
    assert stalls(database, NOW, 900, 600, sources=["other"]) == []


def test_a_stopped_process_is_named_stopped(database: Database) -> None:
    """Every live process that stopped reporting was said to wait on "the database lock"; a
    crawl stopped with Ctrl-Z or SIGSTOP is named so, as /proc/<pid>/stat says."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        os.kill(child.pid, signal.SIGSTOP)
        for _ in range(1000):  # wait for the state, bounded
            if process_state(child.pid) == "T":
                break
            time.sleep(0.01)
        assert process_state(child.pid) == "T"
        run = Runs(database).start("intranet")
        with database.engine.begin() as connection:
            connection.execute(update(runs).values(pid=child.pid, updated_at=NOW - timedelta(minutes=12)))
        owner = f"{this_host()}:{child.pid}"
        RunProgress(database).report(run.id, owner, "intranet", NOW - timedelta(minutes=11), NOW, 1, [])
        [stall] = stalls(database, NOW, 900, 600)
        assert stall.kind == NOT_REPORTING
        assert f"its process {child.pid} is stopped (SIGSTOP or Ctrl-Z): kill -CONT {child.pid} resumes it" in stall.waits_on
    finally:
        child.kill()
        child.wait()
    assert silent_process("h:1", 2) != silent_process("h:1", 0)
    assert (
        silent_process(f"h:{os.getpid()}", 2)
        == f"the database lock: its process {os.getpid()} is alive but has not saved its heartbeat"
    )


def test_progress_rows_read_back_what_was_written_and_refuse_malformed_waits(database: Database) -> None:
    store = RunProgress(database)
    store.report(7, "h:1", "s", NOW, NOW, 3, [Wait("in-flight", "x" * 400, since=NOW, count=1)] * 9)
    store.report(7, "h:1", "s", NOW, NOW, 4, [Wait("in-flight", "a.example", since=NOW, count=1)] * 9)  # an upsert
    [report] = store.of_runs([7])[7]
    assert report.pages == 4 and len(report.waits) == 5 and report.waits[0].site == "a.example"
    assert Wait.of({"kind": "in-flight", "site": "a", "since": "not a time"}) is None and Wait.of([1]) is None


def test_migration_0020_makes_the_table_the_models_describe(tmp_path: Path) -> None:
    from sqlalchemy import inspect

    from searchcrawl.store.database import SCHEMA_REVISION, create_db_engine, current_revision, upgrade_schema
    from searchcrawl.store.models import run_progress

    engine = create_db_engine(f"sqlite:///{tmp_path / 'old.sqlite3'}")
    upgrade_schema(engine, "0018")
    assert "run_progress" not in inspect(engine).get_table_names()
    upgrade_schema(engine)
    assert current_revision(engine) == SCHEMA_REVISION and SCHEMA_REVISION >= "0020"  # 0020, and those after it
    columns = {column["name"] for column in inspect(engine).get_columns("run_progress")}
    assert columns == {column.name for column in run_progress.c}
    engine.dispose()


def test_a_source_with_a_long_delay_is_stalled_only_after_twice_its_delay(database: Database) -> None:
    """A politeness delay of 20 minutes was reported "nothing fetched" at every cycle."""
    delay = Wait("delay", "slow.example", seconds=1200, timeout=30)

    def facts(ago: float, waits: tuple[Wait, ...]) -> RunFacts:
        report = Report(1, "h:1", "s", NOW, NOW - timedelta(seconds=ago), 3, waits)
        return RunFacts("s", 1, NOW - timedelta(hours=3), NOW, (report,), to_fetch=5)

    assert judge(facts(1000, (delay,)), NOW, 900, 600) is None  # within its own gap
    assert judge(facts(2400, (delay,)), NOW, 900, 600) is None  # 2 x 1200 + 30
    assert judge(facts(3000, (delay,)), NOW, 900, 600) == (NOTHING_FETCHED, NOW - timedelta(seconds=3000))
    assert judge(facts(1000, ()), NOW, 900, 600) is not None  # no delay reported: the setting
    short = Wait("delay", "fast.example", seconds=2, timeout=30)
    assert judge(facts(1000, (short,)), NOW, 900, 600) is not None
    # written and read back as a crawl writes it, and named among the waits
    run = Runs(database).start("slow")
    RunProgress(database).report(run.id, "h:1", "slow", NOW, NOW - timedelta(seconds=3000), 3, [delay])
    [report] = RunProgress(database).of_runs([run.id])[run.id]
    assert report.waits == (delay,)
    with database.engine.begin() as connection:
        connection.execute(
            insert(frontier), [{"document_id": 1, "source": "slow", "run_id": run.id, "state": FrontierState.QUEUED.value}]
        )
    assert [stall.kind for stall in stalls(database, NOW)] == [NOTHING_FETCHED]
    assert "site slow.example: a download delay of 20 min between requests" in stalls(database, NOW)[0].waits_on
    assert stalls(database, NOW - timedelta(seconds=1500)) == []
    for bad in ("x", -1, float("nan"), 1e12):
        assert Wait.of({"kind": "delay", "site": "a", "seconds": bad}) is None
