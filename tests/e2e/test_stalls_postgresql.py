"""Stall detection (ops/stalls.py) and the project metrics (ops/metrics.py) on a real PostgreSQL
server: the same checks as on SQLite, migration 0020, and a session really waiting on a lock
named as the database lock a stalled run waits on, only when it is one of the run's processes'
sessions (their application_name), not another searchcrawl process's."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, inspect, text, update

from searchcrawl.ops.metrics import ProjectCollector
from searchcrawl.ops.stalls import NOTHING_FETCHED, stalls
from searchcrawl.store import Database
from searchcrawl.store.database import SCHEMA_REVISION, current_revision, this_host, upgrade_schema
from searchcrawl.store.models import run_progress, runs
from searchcrawl.store.progress import RunProgress
from searchcrawl.store.runs import Runs
from tests.conftest import wait_for
from tests.e2e.test_store_postgresql import schema_url  # noqa: F401 (a fixture)
from tests.ops import test_stalls
from tests.ops.test_stalls import queue


def test_stalls_on_postgresql(schema_url: tuple[Engine, str]) -> None:  # noqa: F811
    database = Database(schema_url[1])
    try:
        test_stalls.test_a_run_with_urls_and_no_answer_for_the_stall_time_is_stalled_with_its_waits(database)
    finally:
        database.close()


def test_leases_of_a_process_gone_and_silence_on_postgresql(schema_url: tuple[Engine, str]) -> None:  # noqa: F811
    database = Database(schema_url[1])
    try:
        test_stalls.test_a_lease_of_a_process_gone_and_solr_and_tika_down_are_named(database)
        with database.engine.begin() as connection:
            connection.execute(runs.delete())
        test_stalls.test_a_run_whose_process_is_gone_or_silent_is_not_reporting(database)
    finally:
        database.close()


def test_migration_0020_on_postgresql(schema_url: tuple[Engine, str]) -> None:  # noqa: F811
    engine = schema_url[0]
    upgrade_schema(engine, "0018")
    upgrade_schema(engine)
    assert current_revision(engine) == SCHEMA_REVISION
    assert {column["name"] for column in inspect(engine).get_columns("run_progress")} == {c.name for c in run_progress.c}


def test_a_session_waiting_on_a_lock_is_named_and_metrics_parse(schema_url: tuple[Engine, str]) -> None:  # noqa: F811
    database = Database(schema_url[1])
    now = datetime.now(UTC)
    run = Runs(database).start("pg-stall")
    queue(database, "pg-stall", run.id, 2)
    RunProgress(database).report(run.id, f"{this_host()}:{os.getpid()}", "pg-stall", now, now - timedelta(hours=1), 0, [])
    # another searchcrawl process's session (another run's, the web's): not this run's wait
    elsewhere = Database(f"{schema_url[1]}{'&' if '?' in schema_url[1] else '?'}application_name=searchcrawl%20elsewhere:1")
    holder = database.engine.connect()
    holder.execute(text("LOCK TABLE site_slots IN ACCESS EXCLUSIVE MODE"))  # held until its rollback
    other = threading.Thread(target=lambda: _read_site_slots(elsewhere), daemon=True)
    other.start()
    waiter = threading.Thread(target=lambda: _read_site_slots(database), daemon=True)
    try:
        wait_for(lambda: _waiting(database) == 1, timeout=60, what="another process's session waiting on the lock")
        [stall] = stalls(database, now, 900, 600, sources=["pg-stall"])
        assert not any("database lock" in wait for wait in stall.waits_on), stall.waits_on
        waiter.start()  # this process's session: the run's (its progress report's owner)
        wait_for(lambda: _waiting(database) == 2, timeout=60, what="the run's session waiting on the lock")
        [stall] = stalls(database, now, 900, 600, sources=["pg-stall"])
        assert stall.kind == NOTHING_FETCHED
        assert "the database lock: 1 session(s) of its processes wait on a lock" in stall.waits_on, stall.waits_on
        registry = CollectorRegistry(auto_describe=False)
        registry.register(ProjectCollector(database, lambda: ["pg-stall"], cache_seconds=0))
        families = {f.name: f for f in text_string_to_metric_families(generate_latest(registry).decode())}
        [sample] = [s for s in families["searchcrawl_run_stalled"].samples if s.labels["kind"] == "nothing_fetched"]
        assert sample.value == 1.0
    finally:
        holder.rollback()
        holder.close()
        other.join(timeout=60)
        if waiter.is_alive() or waiter.ident is not None:
            waiter.join(timeout=60)
        elsewhere.close()
        with database.engine.begin() as connection:
            connection.execute(update(runs).values(state="stopped"))
        database.close()


def _read_site_slots(database: Database) -> None:
    with database.engine.connect() as connection:
        connection.execute(text("SELECT count(*) FROM site_slots")).scalar()


def _waiting(database: Database) -> int:
    with database.engine.connect() as connection:
        return int(
            connection.execute(
                text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
            ).scalar_one()
        )
