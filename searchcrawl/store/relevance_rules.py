"""The relevance rules in the project's database: best bets, boosts and demotions, synonyms and
stopwords (tables relevance_*, migration 0016; a best bet's start and end, 0022). The rules are validated before they get here
(searchcrawl/rules/ranking_rules.py); each kind is bounded (``LIMITS``), so a search reads a bounded
set, and an administrator who reaches a limit is told so."""

from __future__ import annotations

from sqlalchemy import Connection, Table, delete, func, insert, select, update

from searchcrawl.rules.ranking_rules import BestBet, Boost, RelevanceError, Rules
from searchcrawl.store.database import Database, as_utc, now
from searchcrawl.store.models import relevance_bets, relevance_boosts, relevance_stopwords, relevance_synonyms
from searchcrawl.system.translations import N_, number
from searchcrawl.system.translations import gettext as _

LIMITS = {"bets": 1000, "boosts": 50, "synonyms": 2000, "stopwords": 2000}
# an administrator who reaches a limit on the relevance page is told so (in the page's language)
LIMIT_REACHED = {
    "bets": N_("There are %(count)s bets already, the most kept: delete one first."),
    "boosts": N_("There are %(count)s boosts already, the most kept: delete one first."),
    "synonyms": N_("There are %(count)s synonyms already, the most kept: delete one first."),
    "stopwords": N_("There are %(count)s stopwords already, the most kept: delete one first."),
}


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
        return [
            BestBet(
                tuple(row["queries"].split("\n")),
                tuple(row["urls"].split("\n")),
                row["id"],
                as_utc(row["starts_at"]),
                as_utc(row["ends_at"]),
            )
            for row in rows
        ]

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
                raise RelevanceError(_(LIMIT_REACHED[kind], count=number(count)))
            connection.execute(insert(table).values(created_at=now(), **values))

    def _update(self, table: Table, key: str, values: dict[str, object]) -> bool:
        """Change the rule ``key`` (an id) in place; False if there is none (deleted meanwhile)."""
        if not key.isascii() or not key.isdigit() or len(key) > 18:
            return False
        with self.engine.begin() as connection:
            return bool(connection.execute(update(table).where(table.c.id == int(key)).values(**values)).rowcount)

    @staticmethod
    def _bet_values(bet: BestBet) -> dict[str, object]:
        return {"queries": "\n".join(bet.queries), "urls": "\n".join(bet.urls), "starts_at": bet.start, "ends_at": bet.end}

    @staticmethod
    def _boost_values(boost: Boost) -> dict[str, object]:
        return {"kind": boost.kind, "value": boost.value, "factor": boost.factor}

    def add_bet(self, bet: BestBet) -> None:
        self._add(relevance_bets, "bets", self._bet_values(bet))

    def add_boost(self, boost: Boost) -> None:
        self._add(relevance_boosts, "boosts", self._boost_values(boost))

    def update_bet(self, key: str, bet: BestBet) -> bool:
        """Best bet ``key`` (an id) made ``bet`` (its queries, URLs, start and end), same id."""
        return self._update(relevance_bets, key, self._bet_values(bet))

    def update_boost(self, key: str, boost: Boost) -> bool:
        return self._update(relevance_boosts, key, self._boost_values(boost))

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

    def count(self, connection: Connection | None = None) -> int:
        """The rules of every kind together (0: an installation with none, as a restore needs)."""
        tables = (relevance_bets, relevance_boosts, relevance_synonyms, relevance_stopwords)

        def counted(connection: Connection) -> int:
            return sum(int(connection.execute(select(func.count()).select_from(table)).scalar_one()) for table in tables)

        if connection is not None:
            return counted(connection)
        with self.engine.connect() as own:
            return counted(own)

    @classmethod
    def restore(
        cls,
        connection: Connection,
        bets: list[BestBet],
        boosts: list[Boost],
        synonyms: list[tuple[str, ...]],
        stopwords: list[str],
    ) -> None:
        """Insert rules (parsed by the relevance page's own parsers: ops/configuration_backup.py) in the caller's
        transaction, in their order, within ``LIMITS``."""
        for kind, count in (
            ("bets", len(bets)),
            ("boosts", len(boosts)),
            ("synonyms", len(synonyms)),
            ("stopwords", len(stopwords)),
        ):
            if count > LIMITS[kind]:
                raise RelevanceError(f"{count} {kind}: at most {LIMITS[kind]} are kept.")
        moment = now()
        for bet in bets:
            connection.execute(insert(relevance_bets).values(created_at=moment, **cls._bet_values(bet)))
        for boost in boosts:
            connection.execute(insert(relevance_boosts).values(created_at=moment, **cls._boost_values(boost)))
        for terms in synonyms:
            connection.execute(insert(relevance_synonyms).values(created_at=moment, terms=",".join(terms)))
        for word in dict.fromkeys(stopwords):
            connection.execute(insert(relevance_stopwords).values(created_at=moment, word=word))
