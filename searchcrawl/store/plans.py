"""The SQL of a maintenance crawl's plan: the source's known URLs read a batch at a time, and
those the plan keeps queued in the run. What the plan does with each URL is decided by the
Ledger (ledger.py ``plan_maintenance``, rules/ledger_rules.py ``plan_step``)."""

from __future__ import annotations

import functools
from array import array
from typing import Any

from sqlalchemy import Connection, select

from searchcrawl.store.columns import WITH_REDIRECT
from searchcrawl.store.database import Database
from searchcrawl.store.frontier import queue_documents
from searchcrawl.store.models import documents, redirects


def plan_batch(database: Database, source: str, after: int, limit: int) -> list[Any]:
    """The source's rows with an id above ``after``, ``limit`` of them in id order, each with
    what the plan decides from (url, depth, state, status, its redirect's ``via``, last_fetched).
    In a connection closed before a row is recorded (SQLite's one writer)."""
    with database.engine.connect() as connection:
        if database.engine.dialect.name == "postgresql":
            # in id order through the index of (source, id), ``limit`` rows: while the
            # table's statistics were stale, the planner read the rest of the source
            # and sorted it, for every batch (issue 58: 1,050,000 rows at 100,000 URLs)
            connection.exec_driver_sql("SET LOCAL enable_sort = off")
        return list(
            connection.execute(
                select(
                    documents.c.id,
                    documents.c.url,
                    documents.c.depth,
                    documents.c.state,
                    documents.c.status,
                    redirects.c.via,
                    documents.c.last_fetched,
                )
                .select_from(WITH_REDIRECT)
                .where(documents.c.source == source, documents.c.id > after)
                .order_by(documents.c.id)
                .limit(limit)
            ).all()
        )


def queue_planned(database: Database, run_id: int, queue: array[int]) -> int:
    """Queue a batch of the plan's documents (by id) in run ``run_id``, in one transaction.
    Returns how many were queued; a deadlock with a node queueing links meanwhile runs it again
    (``Database.transaction``)."""
    return database.transaction(functools.partial(_queue_planned, database, run_id, queue))


def _queue_planned(database: Database, run_id: int, queue: array[int], connection: Connection) -> int:
    """``queue_planned`` in the transaction of ``connection``."""
    queued = 0
    if database.engine.dialect.name == "postgresql":
        # by the primary key, 500 ids at a time: the planner read the whole source for
        # each 500 while the table's statistics were stale or it was small (issue 58:
        # 20,000 rows each at 20,000 URLs); the transaction holds nothing else
        connection.exec_driver_sql("SET LOCAL enable_seqscan = off")
    for start in range(0, len(queue), 500):
        # a node that joined the run meanwhile (a fleet's, processes = N) may have queued,
        # leased or fetched it in this run: it keeps its place, and its fetch is not
        # repeated; request data of an earlier run (a redirect chain, a render) does not carry over
        queued += queue_documents(
            database,
            connection,
            run_id,
            documents.c.id.in_(queue[start : start + 500].tolist()),
            new_in_run=True,
            drop_request=True,
        )
    return queued
