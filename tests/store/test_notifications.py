"""The notifications table (issue 60): migration 0019 agrees with the models, and a claim is won once."""

from __future__ import annotations

from sqlalchemy import Engine, inspect

from searchcrawl.store import Database
from searchcrawl.store.database import SCHEMA_REVISION, create_db_engine, current_revision, upgrade_schema
from searchcrawl.store.models import notifications
from searchcrawl.store.notifications import Notifications, run_key


def exercise(database: Database) -> None:
    store = Notifications(database)
    assert store.claim(run_key(3), "run_failed", "mail", "intranet", 3)
    assert not store.claim(run_key(3), "run_failed", "mail", "intranet", 3)  # a second process
    assert store.claim(run_key(3), "run_failed", "webhook:abc", "intranet", 3)  # another channel
    assert store.claim(run_key(4), "run_failed", "mail", "intranet", 4)  # another run
    store.finish(run_key(3), "run_failed", "mail", 1, None)
    store.finish(run_key(3), "run_failed", "webhook:abc", 3, "answered 500")
    rows = {row["channel"]: row for row in store.of_key(run_key(3))}
    assert rows["mail"]["state"] == "sent" and rows["mail"]["sent_at"] is not None
    assert rows["webhook:abc"]["state"] == "failed" and rows["webhook:abc"]["error"] == "answered 500"


def check_migration_0019(engine: Engine, url: str) -> None:
    upgrade_schema(engine, "0018")
    assert "notifications" not in inspect(engine).get_table_names()
    upgrade_schema(engine)
    assert current_revision(engine) == SCHEMA_REVISION >= "0019"
    columns = {column["name"] for column in inspect(engine).get_columns("notifications")}
    assert columns == {column.name for column in notifications.c}
    database = Database(url)
    exercise(database)
    database.close()


def test_migration_0019_on_sqlite(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    engine = create_db_engine(url)
    check_migration_0019(engine, url)
    engine.dispose()


def test_a_new_database_made_from_the_models(tmp_path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'new.sqlite3'}")
    exercise(database)
    database.close()
