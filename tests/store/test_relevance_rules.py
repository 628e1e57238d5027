"""The relevance rules' tables (migration 0016): made alike by the migration and by a new SQLite
database's models, rules kept in order, deleted by key, each kind bounded. On SQLite here; on the
session's real PostgreSQL in tests/e2e/test_store_postgresql.py."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, inspect

from searchcrawl.store import Database
from searchcrawl.store import relevance_rules as store_module
from searchcrawl.store.database import SCHEMA_REVISION, create_db_engine, current_revision, upgrade_schema
from searchcrawl.store.relevance_rules import RelevanceStore
from searchcrawl.web.relevance import Boost, RelevanceError, parse_bet

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
