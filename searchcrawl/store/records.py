"""The SQL of a URL's document row: read as the Ledger decides from it, and written as it decided.

Plain statements over a connection the caller (the Ledger, ledger.py) holds, so that reading a
row, deciding and writing it are one transaction; the bulk writes the ledger allows from
exactly one state take the states it decided. Nothing here decides what a row becomes: the
Ledger does (rules/lifecycle.py, rules/ledger_rules.py), and only the Ledger calls these
(tests/store/test_one_writer.py).

A row is keyed by its source and the SHA-256 of its URL (``url_hash``), not by the URL, which
may be longer than an index entry holds: every write here adds the key (``keyed``) and every
look-up by URL goes through ``url_hash``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, bindparam, case, exists, or_, select, tuple_, update

from searchcrawl.rules.lifecycle import Delta, State
from searchcrawl.store.columns import LEFT_INDEX, WHOLE, each_key, one_of
from searchcrawl.store.database import ROW_KEY, Database, keyed, url_hash
from searchcrawl.store.frontier import finish_queued
from searchcrawl.store.models import documents, frontier, redirects


class ChangedMeanwhile(Exception):
    """A spared page's row changed between ``spare_candidates``'s read and ``write_spared``."""


def row_state(database: Database) -> Any:
    """The statement that reads what the Ledger decides from, of one URL (``source``, ``url_hash``):
    its document's state and its frontier entry and redirect."""
    return database.statement(
        "row_state",
        lambda: (
            select(
                documents.c.id,
                frontier.c.document_id.label("entry"),
                redirects.c.target,
                redirects.c.via,
                documents.c.state,
                documents.c.status,
                documents.c.failures,
                documents.c.indexed_at,
                documents.c.delta,
                documents.c.delta_run,
                documents.c.entered_run,
                documents.c.checksum,
                documents.c.last_changed,
                documents.c.access,  # its readers before the outcome: what its anchors counted for (ledger.py)
            )
            .select_from(WHOLE)
            .where(documents.c.source == bindparam("source"), documents.c.url_hash == bindparam("url_hash"))
        ),
    )


def read_row(database: Database, connection: Connection, source: str, url: str) -> Any:
    """The row of ``url`` as ``row_state`` reads it, or None."""
    return connection.execute(row_state(database), {"source": source, "url_hash": url_hash(url)}).first()


def read_original_locked(database: Database, connection: Connection, source: str, url: str) -> Any:
    """(state, delta_run, checksum) of ``url``'s row, or None. On PostgreSQL its row stays locked
    until the caller commits, so that it cannot leave the index or change its content (and free
    its duplicates) between this read and the caller's write; SQLite writes one at a time, and
    ``update_row`` repeats the check in its statement (``original``)."""
    return connection.execute(
        database.statement(
            "row_state_locked",
            lambda: (
                select(documents.c.state, documents.c.delta_run, documents.c.checksum)
                .where(documents.c.source == bindparam("source"), documents.c.url_hash == bindparam("url_hash"))
                .with_for_update(read=True)
            ),
        ),
        {"source": source, "url_hash": url_hash(url)},
    ).first()


def insert_row(database: Database, connection: Connection, values: Mapping[str, Any]) -> bool:
    """Insert a new URL's row (``values`` with its source and url); False when another thread
    inserted it meanwhile (nothing written)."""
    inserted = connection.execute(
        database.insert(documents).values(keyed(dict(values))).on_conflict_do_nothing(index_elements=ROW_KEY)
    )
    return bool(inserted.rowcount)


def insert_new(database: Database, connection: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert rows for URLs the table does not know; known URLs keep their row."""
    if rows:
        statement = database.statement(
            "insert_new", lambda: database.insert(documents).on_conflict_do_nothing(index_elements=ROW_KEY)
        )
        connection.execute(statement, [keyed(row) for row in rows])


def update_row(
    database: Database,
    connection: Connection,
    source: str,
    url: str,
    values: Mapping[str, Any],
    *,
    new_checksum: str | None = None,
    expect_state: str | None = None,
    original: str | None = None,
    content: str | None = None,
    run_id: int | None = None,
    validators: Mapping[str, Any] | None = None,
    compared_checksum: str | None = None,
    row_id: int | None = None,
) -> bool:
    """Set ``values`` on the row of ``url``, with a statement built once per set of columns. With
    ``new_checksum``, ``last_changed`` is set only when the row's checksum differs: it says when
    the content changed, not when it was last seen. ``validators`` (an unchanged document's ETag,
    Last-Modified) are set only while the row's checksum is ``compared_checksum``: they belong to
    that content. With ``expect_state``, only while the row is in that state, and with
    ``original``, only while that URL has not left the index in run ``run_id`` nor holds another
    content than ``content`` when given (on SQLite in the same statement; on PostgreSQL
    ``read_original_locked`` holds its row). ``row_id``: the row's id, read in this transaction:
    the row is found by its primary key. Found by (source, url_hash) with a state to match,
    PostgreSQL chose the index of (source, state) as often as the unique one while a table's
    statistics were stale, and read every row of the source in that state for each page (issue
    58: 100,000 rows a page at 100,000 URLs). Returns whether it wrote."""
    checked = dict(validators or {})
    if not values and not checked:
        return True
    track_change = new_checksum is not None and "last_changed" in values
    guarded = expect_state is not None
    # SQLite only: on PostgreSQL ``read_original_locked`` holds the original's row locked until the
    # caller commits, and the check in this statement was planned through the index of a
    # run's deltas, which read half the source's rows for every page (issue 58: 5,000 rows a
    # page at 10,000 URLs; tests/benchmarks/README.md)
    kept = guarded and original is not None and database.engine.dialect.name == "sqlite"
    held = kept and content is not None
    by_id = row_id is not None
    flags = {"track_change": track_change, "guarded": guarded, "kept": kept, "held": held, "by_id": by_id}
    statement = database.statement(
        ("update_row", tuple(values), tuple(checked), *flags.values()),
        lambda: _update_statement(tuple(values), tuple(checked), **flags),
    )
    parameters = {f"v_{column}": value for column, value in {**values, **checked}.items()}
    if checked:
        parameters["w_checksum"] = compared_checksum
    if track_change:
        parameters["new_checksum"] = new_checksum
    if guarded:
        parameters["w_state"] = expect_state
    if kept:
        parameters.update(w_original=url_hash(original or ""), w_run=run_id, **({"w_content": content} if held else {}))
    if by_id:
        parameters["w_id"] = row_id
    if kept or not by_id:
        parameters.update(w_source=source, w_url_hash=url_hash(url))
    result = connection.execute(statement, parameters)
    return not guarded or bool(result.rowcount)


def _update_statement(
    columns: tuple[str, ...], checked: tuple[str, ...], *, track_change: bool, guarded: bool, kept: bool, held: bool, by_id: bool
) -> Any:
    """``update_row``'s statement for one set of columns, built once (``Database.statement``): its
    values as bind parameters (``v_<column>``), and the conditions it was asked for."""
    assignments: dict[str, Any] = {column: bindparam(f"v_{column}") for column in columns}
    if track_change:
        assignments["last_changed"] = case(
            (
                or_(documents.c.checksum.is_(None), documents.c.checksum != bindparam("new_checksum")),
                bindparam("v_last_changed"),
            ),
            else_=documents.c.last_changed,
        )
    for column in checked:  # the validators of the content compared with, or none
        assignments[column] = case(
            (documents.c.checksum.is_not_distinct_from(bindparam("w_checksum")), bindparam(f"v_{column}")),
            else_=documents.c[column],
        )
    if by_id:  # ids are never reused: a row is never deleted
        statement = update(documents).where(documents.c.id == bindparam("w_id"))
    else:
        statement = update(documents).where(
            documents.c.source == bindparam("w_source"), documents.c.url_hash == bindparam("w_url_hash")
        )
    if guarded:
        statement = statement.where(documents.c.state == bindparam("w_state"))
    if kept:
        holder = documents.alias("holder")
        moved_on = and_(one_of(holder.c.state, LEFT_INDEX), holder.c.delta_run == bindparam("w_run"))
        if held:  # or it holds another content now
            moved_on = or_(moved_on, holder.c.checksum.is_distinct_from(bindparam("w_content")))
        statement = statement.where(
            ~exists().where(holder.c.source == bindparam("w_source"), holder.c.url_hash == bindparam("w_original"), moved_on)
        )
    return statement.values(assignments)


def set_indexed(
    connection: Connection, source: str, acknowledged: Sequence[tuple[str, str]], before: str, after: str, when: datetime
) -> list[str]:
    """Rows of these (url, checksum) pairs still in state ``before`` with that checksum go to
    ``after``, indexed at ``when``, one statement per 500. Returns their URLs."""
    done: list[str] = []
    for start in range(0, len(acknowledged), 500):  # one statement per batch, not per document
        chunk = [(url_hash(url), checksum) for url, checksum in acknowledged[start : start + 500]]
        done += (
            connection.execute(
                update(documents)
                .where(
                    documents.c.source == source,
                    documents.c.state == before,
                    tuple_(documents.c.url_hash, documents.c.checksum).in_(chunk),
                )
                .values(state=after, indexed_at=when)
                .returning(documents.c.url)
            )
            .scalars()
            .all()
        )
    return done


def set_removed(connection: Connection, source: str, urls: Sequence[str], before: str, after: str) -> None:
    """Rows of ``urls`` still in state ``before`` go to ``after``, no longer indexed."""
    connection.execute(
        update(documents)
        .where(
            documents.c.source == source,
            documents.c.url_hash.in_([url_hash(url) for url in urls]),
            documents.c.state == before,
        )
        .values(state=after, indexed_at=None)
    )


def set_held(connection: Connection, source: str, run_id: int, before: str) -> int:
    """Rows of run ``run_id`` in state ``before`` that it deleted, or that Solr holds though they
    left (not held or refused already), are reported ``held``. Returns how many."""
    result = connection.execute(
        update(documents)
        .where(
            documents.c.source == source,
            documents.c.state == before,
            documents.c.delta_run == run_id,
            or_(
                documents.c.delta == Delta.DELETED.value,
                documents.c.indexed_at.is_not(None) & documents.c.delta.not_in([Delta.HELD.value, Delta.REFUSED.value]),
            ),
        )
        .values(delta=Delta.HELD.value)
    )
    return result.rowcount or 0


def set_linked(connection: Connection, source: str, urls: Sequence[str], run_id: int) -> None:
    """These URLs' rows were linked in run ``run_id``."""
    connection.execute(
        update(documents)
        .where(documents.c.source == source, documents.c.url_hash.in_([url_hash(url) for url in urls]))
        .values(linked_run=run_id)
    )


def spare_candidates(database: Database) -> Any:
    """The statement that reads the rows of a batch of URLs (``source``, ``hashes``) a maintenance
    run may spare a request: each with its frontier entry and redirect, as ``row_state`` reads it.

    Each URL looked up by its key (columns.py ``each_key``: a LATERAL subquery per hash on
    PostgreSQL)."""

    def build() -> Any:
        columns = (
            documents.c.id,
            documents.c.url,
            documents.c.last_fetched,
            documents.c.last_modified,
            documents.c.etag,
            frontier.c.run_id,
            frontier.c.state.label("frontier"),
            *row_state(database).selected_columns[2:],  # the ledger's view, as ``read_row`` reads it
        )
        query = select(*columns).select_from(WHOLE).where(documents.c.source == bindparam("source"))
        return each_key(database.engine.dialect.name, query, documents.c.url_hash, "hashes", limit=1)

    return database.statement("spare_candidates", build)


def read_spare_candidates(database: Database, source: str, urls: Iterable[str]) -> list[Any]:
    """The rows of ``urls`` (``spare_candidates``), in a connection of their own."""
    with database.engine.connect() as connection:
        return list(
            connection.execute(spare_candidates(database), {"source": source, "hashes": [url_hash(url) for url in urls]}).all()
        )


def _spared_update(columns: tuple[str, ...]) -> Any:
    """The write of ``columns`` of a document spared a request, by id, while indexed."""
    return (
        update(documents)
        .where(documents.c.id == bindparam("w_id"), documents.c.state == State.INDEXED.value)
        .values({column: bindparam(f"v_{column}", type_=documents.c[column].type) for column in columns})
    )


def write_spared(
    database: Database, run_id: int, writes: Mapping[int, Mapping[str, Any]], finished: Mapping[str, Any]
) -> set[int]:
    """Finish (``finished``: the entry's done values) in run ``run_id`` the entries of ``writes``
    (document id -> values) still queued, and write those documents' values, in one transaction:
    an entry leased between the read and this write keeps its request. A row that left the index
    meanwhile rolls the whole batch back (ChangedMeanwhile). Returns the ids written; a deadlock
    with another node's transaction runs it again (``Database.transaction``)."""
    return database.transaction(functools.partial(_write_spared, database, run_id, writes, finished))


def _write_spared(
    database: Database, run_id: int, writes: Mapping[int, Mapping[str, Any]], finished: Mapping[str, Any], connection: Connection
) -> set[int]:
    """``write_spared`` in the transaction of ``connection``."""
    done = finish_queued(database, connection, run_id, list(writes), finished)
    by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for document_id in done:
        values = writes[document_id]
        by_columns.setdefault(tuple(values), []).append(
            {"w_id": document_id, **{f"v_{column}": value for column, value in values.items()}}
        )
    written = 0
    for columns, parameters in by_columns.items():
        statement = database.statement(("spared", columns), functools.partial(_spared_update, columns))
        written += connection.execute(statement, parameters).rowcount
    if database.engine.dialect.supports_sane_multi_rowcount and written != len(done):
        raise ChangedMeanwhile
    return done
