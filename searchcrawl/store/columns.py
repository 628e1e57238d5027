"""The pieces the statements over the documents share (records.py, duplicates.py, plans.py,
redirects.py, documents.py): the states of the index as stored, and a document joined with its
frontier entry and its redirect."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import literal

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
