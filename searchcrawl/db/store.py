"""DocumentTable: every read and write of the document table goes through here.

Works on SQLite (the default, in WAL mode so that readers never wait on the crawl) and on
PostgreSQL. The schema is brought up to date with Alembic whenever a table is opened, so a user's
data survives upgrades of searchcrawl.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, case, create_engine, event, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from .models import Document

_migrate_lock = threading.Lock()


class State(StrEnum):
    """Where a URL is in its life: the document table's ``state`` column."""

    QUEUED = "queued"  # met, waiting to be fetched for the first time
    EXCLUDED = "excluded"  # a rule keeps it out; never fetched (status says which rule)
    FETCHED = "fetched"  # fetched, nothing to index (error status, unsupported type, ...)
    FAILED = "failed"  # fetching failed (timeout, DNS, refused); status says how
    PENDING = "pending"  # converted and cached, waiting to be pushed to Solr
    INDEXED = "indexed"  # in Solr
    REMOVING = "removing"  # in Solr, but must leave it (moved, excluded by changed rules, ...)
    REMOVED = "removed"  # was in Solr and has been removed; status says why


IN_INDEX = (State.PENDING.value, State.INDEXED.value)


def now() -> datetime:
    return datetime.now(UTC)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def create_db_engine(url: str) -> Engine:
    """An engine for the document table, with the settings each database needs."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    return create_engine(url, pool_pre_ping=True)


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (idempotent)."""
    config = Config()
    config.set_main_option("script_location", "searchcrawl.db:migrations")
    with _migrate_lock, engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


class DocumentTable:
    """The document table of all sources, bound to one database."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = create_db_engine(url)
        migrate(self.engine)
        self.insert = (postgresql if self.engine.dialect.name == "postgresql" else sqlite).insert
        self.run_id: int | None = None  # set during a crawl: outcomes then finish the URL's frontier entry

    def _finished(self) -> dict[str, Any]:
        """Columns that take a URL out of the current run's frontier (it is done)."""
        if self.run_id is None:
            return {}
        return {"run_id": self.run_id, "frontier": "done", "lease_owner": None, "lease_expires": None}

    def close(self) -> None:
        self.engine.dispose()

    # --- writes ---------------------------------------------------------------------------

    def _upsert(self, rows: Sequence[dict[str, Any]], update_columns: Iterable[str], keep_index_state: bool = False) -> None:
        """Insert rows, or update ``update_columns`` of existing ones. With ``keep_index_state``, a
        row whose document is in the index (or must leave it) keeps its state."""
        if not rows:
            return
        statement = self.insert(Document)
        columns = list(update_columns)
        if columns:
            values: dict[str, Any] = {c: statement.excluded[c] for c in columns}
            if keep_index_state and "state" in values:
                current = Document.__table__.c.state
                values["state"] = case(
                    (current.in_([*IN_INDEX, State.REMOVING.value]), current), else_=statement.excluded.state
                )
            statement = statement.on_conflict_do_update(index_elements=["source", "url"], set_=values)
        else:
            statement = statement.on_conflict_do_nothing(index_elements=["source", "url"])
        with self.engine.begin() as connection:
            connection.execute(statement, list(rows))

    def record_fetch(
        self,
        source: str,
        url: str,
        *,
        state: State,
        status: int,
        depth: int | None = None,
        reason: str | None = None,
        content_type: str | None = None,
        content_length: int | None = None,
        last_modified: str | None = None,
        etag: str | None = None,
        done: bool = True,
    ) -> None:
        """Record the outcome of fetching ``url`` (or trying to). A document in the index stays
        there (a failed fetch is not a deletion; whether it is one is the maintenance crawl's
        decision): use ``record_outcome`` for what must leave the index."""
        when = now()
        row = {
            "source": source,
            "url": url,
            "state": state.value,
            "status": status,
            "reason": reason,
            "depth": depth,
            "content_type": content_type,
            "content_length": content_length,
            "last_modified": last_modified,
            "etag": etag,
            "first_seen": when,
            "last_fetched": when,
        }
        if done:
            row.update(self._finished())
        self._upsert([row], [c for c in row if c not in ("source", "url", "first_seen")], keep_index_state=True)

    def record_outcome(self, source: str, url: str, *, status: int, reason: str, depth: int | None = None,
                       fetched: bool = True) -> None:
        """Record a URL that will not be (or no longer is) indexed: a redirect, a refusal, an
        exclusion found at fetch time. If it is in the index, it is marked for removal."""
        when = now()
        with self.engine.begin() as connection:
            state = connection.execute(
                select(Document.state).where(Document.source == source, Document.url == url)
            ).scalar_one_or_none()
            if state in IN_INDEX or state == State.REMOVING.value:
                new_state = State.REMOVING
            elif fetched:
                new_state = State.FETCHED
            else:
                new_state = State.EXCLUDED
            values: dict[str, Any] = {"state": new_state.value, "status": status, "reason": reason, **self._finished()}
            if fetched:
                values["last_fetched"] = when
            if depth is not None:
                values["depth"] = depth
            if state is None:
                connection.execute(self.insert(Document).values(source=source, url=url, first_seen=when, **values))
            else:
                connection.execute(
                    update(Document).where(Document.source == source, Document.url == url).values(**values)
                )

    def record_excluded(self, source: str, rows: Sequence[tuple[str, int, int, str]]) -> None:
        """Record URLs a rule kept out, as (url, status, depth, reason); known URLs keep their row.

        The frontier is not touched: the same URL may still be queued by another route (a
        temporary redirect may lead out of the boundary)."""
        when = now()
        self._upsert(
            [
                {"source": source, "url": url, "state": State.EXCLUDED.value, "status": status,
                 "depth": depth, "reason": reason, "first_seen": when}
                for url, status, depth, reason in rows
            ],
            [],
        )

    def mark_pending(self, source: str, url: str, checksum: str, display_url: str | None = None) -> None:
        """The document is in the cache and waits for Solr."""
        when = now()
        with self.engine.begin() as connection:
            previous = connection.execute(
                select(Document.checksum).where(Document.source == source, Document.url == url)
            ).scalar_one_or_none()
            values: dict[str, Any] = {
                "state": State.PENDING.value, "checksum": checksum, "display_url": display_url, **self._finished()
            }
            if previous != checksum:
                values["last_changed"] = when
            connection.execute(
                update(Document).where(Document.source == source, Document.url == url).values(**values)
            )

    def mark_indexed(self, source: str, documents: Sequence[tuple[str, str]]) -> list[str]:
        """Mark (url, checksum) pairs indexed; returns the URLs whose row still had that checksum.

        A document re-cached with new content while the old one was being pushed stays pending.
        """
        when = now()
        done = []
        with self.engine.begin() as connection:
            for url, checksum in documents:
                result = connection.execute(
                    update(Document)
                    .where(
                        Document.source == source,
                        Document.url == url,
                        Document.checksum == checksum,
                        Document.state == State.PENDING.value,
                    )
                    .values(state=State.INDEXED.value, indexed_at=when)
                )
                if result.rowcount:
                    done.append(url)
        return done

    def mark_done(self, source: str, url: str) -> None:
        """The URL is finished in the current run (its outcome was recorded elsewhere, or needs none)."""
        finished = self._finished()
        if finished:
            with self.engine.begin() as connection:
                connection.execute(
                    update(Document).where(Document.source == source, Document.url == url).values(**finished)
                )

    def mark_removed(self, source: str, urls: Sequence[str]) -> None:
        """These URLs have left Solr."""
        with self.engine.begin() as connection:
            connection.execute(
                update(Document)
                .where(Document.source == source, Document.url.in_(list(urls)), Document.state == State.REMOVING.value)
                .values(state=State.REMOVED.value, indexed_at=None)
            )

    def exclude_known(self, source: str, decide: Callable[[str, int], tuple[int, str] | None]) -> int:
        """Apply changed rules to every URL the table knows for the source: ``decide(url, depth)``
        returns (status, reason) for a URL the rules now exclude. Indexed ones are marked for
        removal. Returns how many rows changed."""
        changed = 0
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(Document.url, Document.depth, Document.state, Document.status).where(
                    Document.source == source, Document.state != State.REMOVED.value
                )
            ).all()
        for url, depth, state, status in rows:
            verdict = decide(url, depth or 0)
            if verdict is None or (state == State.EXCLUDED.value and status == verdict[0]):
                continue
            self.record_outcome(source, url, status=verdict[0], reason=verdict[1], fetched=False)
            changed += 1
        return changed

    # --- reads ----------------------------------------------------------------------------

    def pending(self, source: str) -> list[tuple[str, str]]:
        """(url, checksum) of the documents waiting for Solr, oldest first."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(Document.url, Document.checksum)
                .where(Document.source == source, Document.state == State.PENDING.value)
                .order_by(Document.id)
            )
            return [(url, checksum) for url, checksum in rows]

    def removals(self, source: str) -> list[str]:
        """URLs that must leave Solr."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(Document.url).where(Document.source == source, Document.state == State.REMOVING.value)
            )
            return [url for (url,) in rows]

    def display_url_owner(self, source: str, display_url: str) -> str | None:
        """The URL already indexed (or about to be) under ``display_url``, if any."""
        with self.engine.connect() as connection:
            return connection.execute(
                select(Document.url)
                .where(Document.source == source, Document.display_url == display_url, Document.state.in_(IN_INDEX))
                .order_by(Document.id)
                .limit(1)
            ).scalar_one_or_none()

    def get(self, source: str, url: str) -> dict[str, Any] | None:
        with self.engine.connect() as connection:
            table = Document.__table__
            row = connection.execute(
                select(table).where(table.c.source == source, table.c.url == url)
            ).mappings().first()
            return dict(row) if row is not None else None

    def count_by(self, source: str, column: str) -> dict[Any, int]:
        """How many rows of the source per value of ``column`` (state or status)."""
        field = getattr(Document, column)
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(field, func.count()).where(Document.source == source).group_by(field)
            )
            return {value: count for value, count in rows}
