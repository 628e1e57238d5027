"""The relevance rules in the project's database: best bets, boosts and demotions, synonyms and
stopwords (tables relevance_*, migration 0016). The rules are validated before they get here
(searchcrawl/web/relevance.py); each kind is bounded (``LIMITS``), so a search reads a bounded
set, and an administrator who reaches a limit is told so."""

from __future__ import annotations

from sqlalchemy import Table, delete, func, insert, select

from searchcrawl.store.database import Database, now
from searchcrawl.store.models import relevance_bets, relevance_boosts, relevance_stopwords, relevance_synonyms
from searchcrawl.web.relevance import BestBet, Boost, RelevanceError, Rules

LIMITS = {"bets": 1000, "boosts": 50, "synonyms": 2000, "stopwords": 2000}


class RelevanceStore:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.engine = database.engine

    def rules(self) -> Rules:
        """The rules a search applies: best bets and boosts, in the order they were added."""
        return Rules(tuple(self.bets()), tuple(self.boosts()))

    def bets(self) -> list[BestBet]:
        with self.engine.connect() as connection:
            rows = connection.execute(select(relevance_bets).order_by(relevance_bets.c.id)).mappings().all()
        return [BestBet(tuple(row["queries"].split("\n")), tuple(row["urls"].split("\n")), row["id"]) for row in rows]

    def boosts(self) -> list[Boost]:
        with self.engine.connect() as connection:
            rows = connection.execute(select(relevance_boosts).order_by(relevance_boosts.c.id)).mappings().all()
        return [Boost(row["kind"], row["value"], float(row["factor"]), row["id"]) for row in rows]

    def synonyms(self) -> list[tuple[int, tuple[str, ...]]]:
        with self.engine.connect() as connection:
            rows = connection.execute(select(relevance_synonyms).order_by(relevance_synonyms.c.id)).mappings().all()
        return [(row["id"], tuple(row["terms"].split(","))) for row in rows]

    def stopwords(self) -> list[str]:
        with self.engine.connect() as connection:
            return list(connection.execute(select(relevance_stopwords.c.word).order_by(relevance_stopwords.c.word)).scalars())

    def _add(self, table: Table, kind: str, values: dict[str, object]) -> None:
        with self.engine.begin() as connection:
            count = connection.execute(select(func.count()).select_from(table)).scalar_one()
            if count >= LIMITS[kind]:
                raise RelevanceError(f"There are {count} {kind} already, the most kept: delete one first.")
            connection.execute(insert(table).values(created_at=now(), **values))

    def add_bet(self, bet: BestBet) -> None:
        self._add(relevance_bets, "bets", {"queries": "\n".join(bet.queries), "urls": "\n".join(bet.urls)})

    def add_boost(self, boost: Boost) -> None:
        self._add(relevance_boosts, "boosts", {"kind": boost.kind, "value": boost.value, "factor": boost.factor})

    def add_synonyms(self, terms: tuple[str, ...]) -> None:
        self._add(relevance_synonyms, "synonyms", {"terms": ",".join(terms)})

    def add_stopword(self, word: str) -> None:
        if word in self.stopwords():
            return
        self._add(relevance_stopwords, "stopwords", {"word": word})

    def delete(self, kind: str, key: str) -> bool:
        """Delete the rule ``key`` (an id; a stopword's word) of ``kind``; False if there was none."""
        if kind == "stopwords":
            statement = delete(relevance_stopwords).where(relevance_stopwords.c.word == key)
        else:
            table = {"bets": relevance_bets, "boosts": relevance_boosts, "synonyms": relevance_synonyms}.get(kind)
            if table is None or not key.isascii() or not key.isdigit() or len(key) > 18:
                return False
            statement = delete(table).where(table.c.id == int(key))
        with self.engine.begin() as connection:
            return bool(connection.execute(statement).rowcount)
