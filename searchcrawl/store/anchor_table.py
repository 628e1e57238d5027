"""The SQL of anchor text (content/anchors.py): the words of each indexed page's links, and the
documents whose anchor field is due to be set in Solr.

The anchors table holds, per source, a row for each (linking page, target, text), keyed by the
URLs' hashes (``url_hash``). A page's rows are replaced whole when it is parsed and go when it
leaves the index, with its outcome and in its transaction; the documents whose anchors that
count may have changed get a mark (``anchor_marks``: appended, never updated, so that two nodes'
outcome batches never wait on the same rows; an UPDATE of the targets' document rows made them
deadlock), and the push sets their field and deletes the marks it read: a mark added since
stays (``clear_due``). What counts for a target is read here (``candidates``: the
anchors of the source's pages in the index, with their access) and decided by content/anchors.py.
The writes are the Ledger's alone (store/ledger.py ``_keep_anchors``, ``mark_anchors_set``;
tests/store/test_one_writer.py), and this module is the only writer of these two tables. The marks
of a transaction's outcomes (a batch of pages) are made at its end, in one statement for up to
MARK_CHUNK targets (``Ledger._mark_due``); a page fetched for the first time that entered the
index in it, to be pushed, gets none: its push reads its anchors as it sends it (one that came
back to the index may be in a push under way, or held in Solr by the mass-deletion guard: it is
marked).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import NamedTuple

from sqlalchemy import Connection, and_, bindparam, delete, select

from searchcrawl.rules.lifecycle import State
from searchcrawl.store.columns import IN_INDEX, each_key, found_by_key, one_of
from searchcrawl.store.database import Database
from searchcrawl.store.models import anchor_marks, anchors, documents

AnchorKey = tuple[str, str]  # (the target's url_hash, the text)
MARK_CHUNK = 500  # targets a marking statement looks up at most


class DueDocument(NamedTuple):
    """A document whose anchor field is due (``due_documents``): its URL and key (None and its
    key: no row any more), its state, and the marks of it read."""

    url: str | None
    url_hash: str
    state: str | None
    marks: tuple[int, ...]


# the states of a document Solr may hold: in the index, or held there by the mass-deletion guard
IN_SOLR = (*IN_INDEX, State.REMOVING.value)


def read_page(database: Database, connection: Connection, source: str, page_hash: str) -> set[AnchorKey]:
    """The anchors a page has now, as (target hash, text)."""
    statement = database.statement(
        "anchors_of_page",
        lambda: select(anchors.c.target_hash, anchors.c.text).where(
            anchors.c.source == bindparam("source"), anchors.c.page_hash == bindparam("page_hash")
        ),
    )
    return {(row.target_hash, row.text) for row in connection.execute(statement, {"source": source, "page_hash": page_hash})}


def replace_page(
    database: Database, connection: Connection, source: str, page_hash: str, wanted: Collection[AnchorKey], had: bool = True
) -> None:
    """The page's anchors become ``wanted`` (none: it has none); ``had``: whether it may have some
    now (else nothing is deleted: a statement less for each new page of a first crawl)."""
    if had:
        connection.execute(
            database.statement(
                "anchors_delete_page",
                lambda: delete(anchors).where(
                    anchors.c.source == bindparam("source"), anchors.c.page_hash == bindparam("page_hash")
                ),
            ),
            {"source": source, "page_hash": page_hash},
        )
    if wanted:
        rows = [{"source": source, "page_hash": page_hash, "target_hash": target, "text": text} for target, text in wanted]
        connection.execute(anchors.insert(), rows)


def mark_due(database: Database, connection: Connection, source: str, targets: Iterable[str]) -> None:
    """The documents of these target hashes that Solr may hold (pending, indexed, or removing:
    held by the mass-deletion guard) get a mark each (a document not in the index gets its field
    when it is pushed). Their rows are read, not written: nothing waits on them."""
    keys = sorted(set(targets))
    if not keys:
        return
    if len(keys) > MARK_CHUNK:  # a transaction's targets, bounded a statement (SQLite's 32,766 parameters)
        for start in range(0, len(keys), MARK_CHUNK):
            mark_due(database, connection, source, keys[start : start + MARK_CHUNK])
        return
    dialect = database.engine.dialect.name
    statement = database.statement(
        ("anchors_mark_due", dialect),
        lambda: anchor_marks.insert().from_select(
            ["source", "target_hash"],
            each_key(
                dialect,
                select(documents.c.source, documents.c.url_hash).where(
                    documents.c.source == bindparam("source"), one_of(found_by_key(documents.c.state), IN_SOLR)
                ),
                documents.c.url_hash,
                "targets",
            ),
        ),
    )
    connection.execute(statement, {"source": source, "targets": keys})


def clear_due(database: Database, connection: Connection, marks: Sequence[int]) -> None:
    """These marks were read before the anchors their documents' fields were set from: they go.
    A mark added since stays, whatever its id (on PostgreSQL ids are not handed out in the order
    their transactions commit): for the next push."""
    if not marks:
        return
    statement = database.statement(
        "anchors_clear_due", lambda: delete(anchor_marks).where(anchor_marks.c.id == bindparam("mark"))
    )
    connection.execute(statement, [{"mark": mark} for mark in marks])


def due_documents(database: Database, source: str, after: int, limit: int) -> list[DueDocument]:
    """The source's documents whose anchor field is due, from its marks after mark ``after``, at
    most ``limit`` marks: each document once, as url, url_hash, state and the marks read, in the
    order of their first marks. The last mark read is ``after`` of the next call."""
    statement = database.statement(
        "anchors_due",
        lambda: (
            select(anchor_marks.c.id, anchor_marks.c.target_hash, documents.c.url, documents.c.state)
            .select_from(
                anchor_marks.outerjoin(
                    documents,
                    and_(documents.c.source == anchor_marks.c.source, documents.c.url_hash == anchor_marks.c.target_hash),
                )
            )
            .where(anchor_marks.c.source == bindparam("source"), anchor_marks.c.id > bindparam("after"))
            .order_by(anchor_marks.c.id)
            .limit(bindparam("limit"))
        ),
    )
    with database.single.connect() as connection:
        rows = list(connection.execute(statement, {"source": source, "after": after, "limit": limit}))
    found: dict[str, DueDocument] = {}
    for row in rows:
        known = found.get(row.target_hash)
        marks = (*known.marks, row.id) if known is not None else (row.id,)
        found[row.target_hash] = DueDocument(row.url, row.target_hash, row.state, marks)
    return list(found.values())


def candidates(database: Database, source: str, targets: Sequence[str]) -> dict[str, list[tuple[str, str, str | None]]]:
    """The anchors of these target hashes from the source's pages in the index (pending or
    indexed), by target: (the linking page's hash, the text, its access column). Whether each
    counts is content/anchors.py's ``anchor_field``'s to say."""
    found: dict[str, list[tuple[str, str, str | None]]] = {}
    if not targets:
        return found
    dialect = database.engine.dialect.name
    statement = database.statement(
        ("anchors_candidates", dialect),
        lambda: each_key(
            dialect,
            select(anchors.c.target_hash, anchors.c.page_hash, anchors.c.text, documents.c.access)
            .select_from(
                anchors.join(documents, and_(documents.c.source == anchors.c.source, documents.c.url_hash == anchors.c.page_hash))
            )
            .where(anchors.c.source == bindparam("source"), one_of(documents.c.state, IN_INDEX)),
            anchors.c.target_hash,
            "targets",
        ),
    )
    with database.single.connect() as connection:
        for row in connection.execute(statement, {"source": source, "targets": list(targets)}):
            found.setdefault(row.target_hash, []).append((row.page_hash, row.text, row.access))
    return found
