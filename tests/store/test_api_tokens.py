"""The API's tokens (store/api_tokens.py): made, checked, listed and revoked, only their hash
kept; migration 0018 from 0015. On SQLite here; on PostgreSQL in
tests/e2e/test_api_tokens_postgresql.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, inspect, select, text

from searchcrawl.store import Database
from searchcrawl.store.api_tokens import LAST_USED_EVERY, PREFIX, ApiTokens, token_hash
from searchcrawl.store.database import SCHEMA_REVISION, create_db_engine, current_revision, upgrade_schema
from searchcrawl.store.models import api_tokens


def exercise(database: Database) -> None:
    tokens = ApiTokens(database)
    first_id, first = tokens.create("  portal  ")
    second_id, second = tokens.create("intranet", on_behalf=True, expires_at=datetime.now(UTC) + timedelta(days=1))
    assert first.startswith(PREFIX) and len(first) == len(PREFIX) + 43 and first != second
    with database.engine.connect() as connection:
        stored = {row.token_hash for row in connection.execute(select(api_tokens.c.token_hash))}
    assert stored == {token_hash(first), token_hash(second)}  # the hashes, never the tokens
    check = tokens.check(first)
    assert (check.valid, check.name, check.on_behalf, check.token_id) == (True, "portal", False, first_id)
    assert tokens.check(second).on_behalf
    for wrong in ("", "sct_nothing", first + "x", first[:-1], "x" * 10_000):
        assert tokens.check(wrong).reason == "unknown"
    listed = tokens.list()
    assert [row["name"] for row in listed] == ["intranet", "portal"] and all("token_hash" not in row for row in listed)
    used = {row["name"]: row["last_used"] for row in listed}
    assert used["portal"] is not None and used["portal"].tzinfo is not None
    # a use within LAST_USED_EVERY writes nothing; later it does
    tokens.check(first)
    assert {row["name"]: row["last_used"] for row in tokens.list()}["portal"] == used["portal"]
    with database.engine.begin() as connection:
        earlier = used["portal"] - LAST_USED_EVERY - timedelta(seconds=1)
        connection.execute(api_tokens.update().where(api_tokens.c.id == first_id).values(last_used=earlier))
    tokens.check(first)
    assert {row["name"]: row["last_used"] for row in tokens.list()}["portal"] > earlier
    assert tokens.revoke(first_id) and not tokens.revoke(first_id) and not tokens.revoke(9999)
    assert tokens.check(first).reason == "revoked"
    statuses = {row["name"]: row["status"] for row in tokens.list()}
    assert statuses == {"portal": "revoked", "intranet": "valid"}
    _id, expired = tokens.create("old", expires_at=datetime.now(UTC) - timedelta(minutes=1))
    assert tokens.check(expired).reason == "expired" and tokens.check(second).valid
    assert {row["name"]: row["status"] for row in tokens.list()}["old"] == "expired"


def test_tokens_on_sqlite(tmp_path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'documents.sqlite3'}")
    exercise(database)
    database.close()


def check_migration_0018(engine: Engine, url: str) -> None:
    upgrade_schema(engine, "0015")
    assert "api_tokens" not in inspect(engine).get_table_names()
    upgrade_schema(engine)
    assert current_revision(engine) == SCHEMA_REVISION >= "0018"  # later migrations (0019: notifications) follow
    columns = {column["name"] for column in inspect(engine).get_columns("api_tokens")}
    assert columns == {column.name for column in api_tokens.c}
    database = Database(url)
    exercise(database)
    database.close()
    with engine.begin() as connection:  # the hash is unique: no two tokens alike
        count = connection.execute(text("SELECT count(DISTINCT token_hash) FROM api_tokens")).scalar()
    assert count == 3


def test_migration_0018_on_sqlite(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    engine = create_db_engine(url)
    check_migration_0018(engine, url)
    engine.dispose()
