"""A run's progress samples (store/samples.py) and migration 0021 on a real PostgreSQL server."""

from __future__ import annotations

from sqlalchemy import Engine

from searchcrawl.store import Database
from tests.e2e.test_store_postgresql import schema_url  # noqa: F401 (a fixture)
from tests.store.test_samples import check_migration_0021, latest_runs_only, thinned


def test_samples_on_postgresql(schema_url: tuple[Engine, str]) -> None:  # noqa: F811
    database = Database(schema_url[1])
    thinned(database)
    latest_runs_only(database)
    database.close()


def test_migration_0021_on_postgresql(schema_url: tuple[Engine, str]) -> None:  # noqa: F811
    check_migration_0021(*schema_url)
