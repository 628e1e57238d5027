"""The pieces the statements over the documents share (records.py, duplicates.py, plans.py,
redirects.py, documents.py): the states of the index as stored, a document joined with its
frontier entry and its redirect, and a look-up of rows by a list of keys."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ARRAY, Select, bindparam, func, literal, select, true

from searchcrawl.rules.lifecycle import State
from searchcrawl.store.models import documents, frontier, redirects

IN_INDEX = (State.PENDING.value, State.INDEXED.value)
LEFT_INDEX = (State.REMOVING.value, State.REMOVED.value)
# a document with its frontier entry (absent: not queued in any run) and its redirect (absent: none)
WITH_ENTRY = documents.outerjoin(frontier, frontier.c.document_id == documents.c.id)
WITH_REDIRECT = documents.outerjoin(redirects, redirects.c.document_id == documents.c.id)
WHOLE = WITH_ENTRY.outerjoin(redirects, redirects.c.document_id == documents.c.id)


def one_of(column: Any, values: Sequence[Any]) -> Any:
    """``column IN (...)`` over fixed values, for statements built once (``Database.statement``):
    ``in_`` of a list makes an "expanding" parameter, whose SQL SQLAlchemy rewrites on every
    execution; a parameter per value keeps the SQL as compiled."""
    return column.in_([literal(value, column.type) for value in values])


def found_by_key(column: Any) -> Any:
    """``column`` as an expression no index serves, for a condition tested on the rows a key has
    found, never used to find them. SQLite's planner, without statistics, read
    ``source = ? AND state IN (...) AND url_hash IN (...)`` by ix_documents_source_state: every
    row of the source in the index, for each parsed page's anchor targets (store/anchor_table.py
    ``mark_due``): linear in the source a page, so quadratic in a crawl (5 ms a page at 9,000
    documents, 0.26 ms by the key)."""
    return func.coalesce(column, literal("", column.type))


def each_key(dialect: str, query: Select, key: Any, name: str, limit: int | None = None) -> Select:
    """``query`` for each of a list of keys (bound as ``name``, matched by column ``key``). As one
    ``key IN (...)``, PostgreSQL read the source's rows through an index on ``source`` alone
    while the table had no statistics (a table grown by a first crawl before autovacuum's
    ANALYZE: issue 58, 100,000 rows a batch of 500 URLs at 100,000), and joined to a subquery
    it ran nested loops over the source (25 million rows read at 320). There, each key is
    looked up on its own: a LATERAL subquery per key, kept apart by its LIMIT (``limit`` rows a
    key) or an OFFSET 0 (every row), which the planner does not flatten into a join, prepared
    or not. While the table is small and has no statistics, PostgreSQL may still read it whole
    for a key (its smallest index): linear in the source, and only until the first ANALYZE.
    Other databases get the ``IN``."""
    if dialect != "postgresql":
        return query.where(key.in_(bindparam(name, expanding=True)))
    wanted = func.unnest(bindparam(name, type_=ARRAY(key.type))).table_valued("key").render_derived(name="wanted")
    found = query.where(key == wanted.c.key)
    fenced = found.limit(limit) if limit is not None else found.offset(0)
    lateral = fenced.lateral("found")
    return select(*lateral.c).select_from(wanted).join(lateral, true())
