"""The relevance rules' tables (migration 0016; a best bet's start and end, 0022): made alike by
the migration and by a new SQLite database's models, rules kept in order, edited in place,
deleted by key, each kind bounded. On SQLite here; on the session's real PostgreSQL in
tests/e2e/test_store_postgresql.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, inspect

from searchcrawl.rules.ranking_rules import BestBet, Boost, RelevanceError, parse_bet
from searchcrawl.store import Database
from searchcrawl.store import relevance_rules as store_module
from searchcrawl.store.database import SCHEMA_REVISION, create_db_engine, current_revision, upgrade_schema
from searchcrawl.store.models import relevance_bets
from searchcrawl.store.relevance_rules import RelevanceStore
from searchcrawl.system.resources import package_dir

TABLES = {"relevance_bets", "relevance_boosts", "relevance_synonyms", "relevance_stopwords"}


def check_rules_are_kept(engine: Engine, url: str) -> None:
    """From revision 0015 to now: the tables come, and rules go in and out."""
    upgrade_schema(engine, "0015")
    assert not TABLES & set(inspect(engine).get_table_names())
    upgrade_schema(engine)
    assert current_revision(engine) == SCHEMA_REVISION and TABLES <= set(inspect(engine).get_table_names())
    database = Database(url)
    store = RelevanceStore(database)
    store.add_bet(parse_bet("holiday form\nleave", "https://intranet/holiday\nhttps://intranet/leave"))
    store.add_boost(Boost("url", "https://intranet/policies/", 2.0))
    store.add_boost(Boost("age", "365", 0.5))
    store.add_synonyms(("car", "automobile", "motor vehicle"))
    store.add_stopword("quux")
    store.add_stopword("quux")  # once
    rules = store.rules()
    assert rules.pinned("Leave") == ["https://intranet/holiday", "https://intranet/leave"]
    assert [(boost.kind, boost.value, boost.factor) for boost in rules.boosts] == [
        ("url", "https://intranet/policies/", 2.0),
        ("age", "365", 0.5),
    ]
    assert [terms for _id, terms in store.synonyms()] == [("car", "automobile", "motor vehicle")]
    assert store.stopwords() == ["quux"]
    assert store.delete("boosts", str(rules.boosts[0].id)) and not store.delete("boosts", str(rules.boosts[0].id))
    assert store.delete("stopwords", "quux") and store.stopwords() == []
    assert not store.delete("boosts", "1 OR 1=1") and not store.delete("documents", "1")
    assert [boost.kind for boost in store.boosts()] == ["age"]
    database.close()


def test_migration_0016_makes_the_tables_and_keeps_rules_on_sqlite(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    engine = create_db_engine(url)
    check_rules_are_kept(engine, url)
    engine.dispose()


def test_each_kind_of_rule_is_bounded(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(store_module.LIMITS, "boosts", 2)
    database = Database(f"sqlite:///{tmp_path / 'new.sqlite3'}")  # a new database: made from the models
    store = RelevanceStore(database)
    store.add_boost(Boost("source", "a", 2.0))
    store.add_boost(Boost("source", "b", 2.0))
    with pytest.raises(RelevanceError, match="delete one first"):
        store.add_boost(Boost("source", "c", 2.0))
    assert len(store.boosts()) == 2
    database.close()


def edited_and_scheduled(database: Database) -> None:
    """A bet edited in place keeps its id; its start and end come back as they went in (UTC,
    timezone-aware); a boost too; a rule that is not there is not made."""
    store = RelevanceStore(database)
    store.add_bet(parse_bet("holiday form", "https://intranet/old"))
    store.add_bet(parse_bet("other", "https://intranet/other", end="2020-01-01"))
    first, second = store.bets()
    assert (first.start, first.end, second.start) == (None, None, None)
    assert second.end == datetime(2020, 1, 2, tzinfo=UTC)
    edited = parse_bet("holiday form\nleave", "https://intranet/new", "2026-12-01 09:30", "2026-12-31")
    assert store.update_bet(str(first.id), edited)
    assert store.bets() == [BestBet(edited.queries, edited.urls, first.id, edited.start, edited.end), second]
    assert store.bets()[0].start == datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    assert store.update_bet(str(first.id), parse_bet("holiday form", "https://intranet/new"))  # schedule removed
    assert (store.bets()[0].start, store.bets()[0].end) == (None, None)
    assert not store.update_bet("999", edited) and not store.update_bet("1 OR 1=1", edited) and len(store.bets()) == 2
    store.add_boost(Boost("url", "https://intranet/a/", 2.0))
    (boost,) = store.boosts()
    assert store.update_boost(str(boost.id), Boost("age", "30", 0.5))
    assert store.boosts() == [Boost("age", "30", 0.5, boost.id)] and not store.update_boost("999", boost)


def check_migration_0022(engine: Engine, url: str) -> None:
    """From revision 0021 (bets there already) to now: the columns come, the bets are kept, with
    no schedule (always shown)."""
    upgrade_schema(engine, "0021")
    assert {"starts_at", "ends_at"}.isdisjoint(column["name"] for column in inspect(engine).get_columns("relevance_bets"))
    with engine.begin() as connection:
        connection.execute(
            relevance_bets.insert().values(queries="kept", urls="https://intranet/kept", created_at=datetime.now(UTC))
        )
    upgrade_schema(engine)
    assert current_revision(engine) == SCHEMA_REVISION  # 0022, and the revisions after it
    columns = {column["name"] for column in inspect(engine).get_columns("relevance_bets")}
    assert columns == {column.name for column in relevance_bets.c}
    database = Database(url)
    (kept,) = RelevanceStore(database).bets()
    assert (kept.queries, kept.start, kept.end) == (("kept",), None, None) and RelevanceStore(database).rules().pinned("kept")
    store = RelevanceStore(database)
    assert store.delete("bets", str(kept.id))
    edited_and_scheduled(database)
    database.close()
    downgraded_without_bets_out_of_their_window(engine, url)


def downgrade_schema(engine: Engine, revision: str) -> None:
    """Alembic's downgrade to ``revision`` (an administrator's ``alembic downgrade``)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    with package_dir("searchcrawl.store", "migrations") as scripts, engine.begin() as connection:
        config.set_main_option("script_location", str(scripts))
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def downgraded_without_bets_out_of_their_window(engine: Engine, url: str) -> None:
    """Without its columns a bet is always shown: a downgrade to 0021 deletes the bets scheduled
    or expired (they were not shown), keeps the others, and the upgrade after it works again."""
    database = Database(url)
    store = RelevanceStore(database)
    for bet in store.bets():
        store.delete("bets", str(bet.id))
    store.add_bet(parse_bet("always", "https://intranet/always"))
    store.add_bet(parse_bet("window", "https://intranet/window", "2020-01-01", "9998-12-31"))
    store.add_bet(parse_bet("to come", "https://intranet/later", "9998-01-01"))
    store.add_bet(parse_bet("past", "https://intranet/past", end="2020-01-01"))
    database.close()
    downgrade_schema(engine, "0021")
    assert current_revision(engine) == "0021"
    with engine.connect() as connection:
        kept = sorted(row[0] for row in connection.exec_driver_sql("SELECT queries FROM relevance_bets"))
    assert kept == ["always", "window"]
    upgrade_schema(engine)
    assert current_revision(engine) == SCHEMA_REVISION


def test_migration_0022_on_sqlite(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    engine = create_db_engine(url)
    check_migration_0022(engine, url)
    engine.dispose()


def test_bets_edited_and_scheduled_in_a_new_database(tmp_path) -> None:  # type: ignore[no-untyped-def]
    database = Database(f"sqlite:///{tmp_path / 'new.sqlite3'}")  # made from the models
    edited_and_scheduled(database)
    database.close()
