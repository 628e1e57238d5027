"""A run's progress samples (store/samples.py, issue 60): thinned past their bound, kept for a
source's latest runs only; migration 0021. On SQLite here; on PostgreSQL in
tests/e2e/test_samples_postgresql.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine, inspect

from searchcrawl.store import Database
from searchcrawl.store.database import SCHEMA_REVISION, create_db_engine, current_revision, upgrade_schema
from searchcrawl.store.models import RunState, run_samples
from searchcrawl.store.runs import Runs
from searchcrawl.store.samples import KEEP_RUNS, RunSamples, to_thin

T0 = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)


def test_a_thinning_drops_every_second_sample_but_the_latest() -> None:
    assert to_thin([1, 2, 3, 4, 5]) == [2, 4] and to_thin([1, 2, 3, 4]) == [2] and to_thin([1]) == []


def thinned(database: Database) -> None:
    """A run of any length keeps at most its limit, spread over its whole course."""
    runs = Runs(database)
    first, second = runs.start("thinned"), runs.start("other")
    samples = RunSamples(database, limit=20)
    for n in range(100):
        samples.add(first.id, {"pages": n, "done": n, "queued": "x", "pending": None}, at=T0 + timedelta(seconds=n))
    samples.add(second.id, {"pages": 1})
    kept = samples.of(first.id)
    assert 10 <= len(kept) <= 20
    assert kept[0]["pages"] == 0 and kept[-1]["pages"] == 99 and kept[-1]["queued"] is None
    assert [row["pages"] for row in kept] == sorted(row["pages"] for row in kept)
    assert kept[-1]["at"] == T0 + timedelta(seconds=99)
    assert [row["pages"] for row in samples.of(second.id)] == [1]


def latest_runs_only(database: Database) -> None:
    """As a run adds its first sample, its source's runs before the latest KEEP_RUNS lose theirs."""
    runs, samples = Runs(database), RunSamples(database)
    other = runs.start("another")
    samples.add(other.id, {"pages": 1})
    runs.end(other.id, RunState.FINISHED, {}, "finished")
    ids = []
    for _number in range(KEEP_RUNS + 3):
        info = runs.start("kept")
        samples.add(info.id, {"pages": 1})
        samples.add(info.id, {"pages": 2})
        runs.end(info.id, RunState.FINISHED, {}, "finished")
        ids.append(info.id)
    assert [len(samples.of(run_id)) for run_id in ids] == [0] * 3 + [2] * KEEP_RUNS
    assert len(samples.of(other.id)) == 1  # another source's


def test_samples_on_sqlite(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'documents.sqlite3'}")
    thinned(database)
    latest_runs_only(database)
    database.close()


def check_migration_0021(engine: Engine, url: str) -> None:
    upgrade_schema(engine, "0018")
    assert "run_samples" not in inspect(engine).get_table_names()
    upgrade_schema(engine)
    assert current_revision(engine) == SCHEMA_REVISION  # 0021, and the revisions after it
    columns = {column["name"] for column in inspect(engine).get_columns("run_samples")}
    assert columns == {column.name for column in run_samples.c}
    database = Database(url)
    thinned(database)
    database.close()


def test_migration_0021_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    engine = create_db_engine(url)
    check_migration_0021(engine, url)
    engine.dispose()
