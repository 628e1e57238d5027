"""The notifications table (store/notifications.py) and migration 0019 on a real PostgreSQL server.

Named so that their schemas (schema_url: the last 12 characters of the test's folder) differ from
the other migration tests' ("..._on_postgresql" ones share "_on_postgre0")."""

from __future__ import annotations

from sqlalchemy import Engine

from searchcrawl.store import Database
from tests.e2e.test_store_postgresql import schema_url  # noqa: F401 (a fixture)
from tests.store.test_notifications import check_migration_0019, exercise


def test_pg_0019_notifications_claims(schema_url: tuple[Engine, str]) -> None:  # noqa: F811
    database = Database(schema_url[1])
    exercise(database)
    database.close()


def test_pg_0019_notifications_migration(schema_url: tuple[Engine, str]) -> None:  # noqa: F811
    check_migration_0019(*schema_url)
