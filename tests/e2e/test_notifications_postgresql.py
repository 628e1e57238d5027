"""The notifications table (store/notifications.py) and migration 0019 on a real PostgreSQL server."""

from __future__ import annotations

from sqlalchemy import Engine

from searchcrawl.store import Database
from tests.e2e.test_store_postgresql import schema_url  # noqa: F401 (a fixture)
from tests.store.test_notifications import check_migration_0019, exercise


def test_notifications_on_postgresql(schema_url: tuple[Engine, str]) -> None:  # noqa: F811
    database = Database(schema_url[1])
    exercise(database)
    database.close()


def test_migration_0019_on_postgresql(schema_url: tuple[Engine, str]) -> None:  # noqa: F811
    check_migration_0019(*schema_url)
