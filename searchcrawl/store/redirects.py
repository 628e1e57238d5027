"""The SQL of the redirects table (models.redirects, migration 0012): a URL's temporary redirect
(``target``) and the URL a target was last reached through (``via``), written in the transaction
of the URL's outcome, and read at a run's start and end. Whether a redirect still stands is
decided by the Ledger (ledger.py, rules/ledger_rules.py); this is the table's one writer
(tests/store/test_one_writer.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, select
from sqlalchemy import Row as SqlRow

from searchcrawl.rules.lifecycle import State
from searchcrawl.rules.redirect_policy import TEMPORARY as TEMPORARY_REDIRECTS
from searchcrawl.store.columns import WHOLE
from searchcrawl.store.database import Database, url_hash
from searchcrawl.store.models import documents, frontier, redirects

COLUMNS = ("target", "via")  # an outcome's columns written here, not to the documents table
ORIGIN_COLUMNS = (  # what the Ledger asks rules/ledger_rules.py ``redirect_now`` about
    documents.c.url,
    documents.c.state,
    documents.c.status,
    documents.c.reason,
    redirects.c.target,
    frontier.c.run_id,
    frontier.c.state.label("frontier"),
)


def write_redirect(
    database: Database, connection: Connection, source: str, url: str, values: Mapping[str, Any], held: Mapping[str, Any]
) -> None:
    """Write what an outcome says of the URL's temporary redirect (``target``, ``via``), where it
    changes what its row ``held``: most outcomes say "no redirect" of a URL that has none, and
    cost no statement."""
    changed = tuple(column for column, value in values.items() if value != held[column])
    if not changed:
        return

    def build() -> Any:
        chosen = select(
            documents.c.id,
            documents.c.source,
            *(bindparam(f"v_{column}", type_=redirects.c[column].type) for column in changed),
        ).where(documents.c.source == bindparam("w_source"), documents.c.url_hash == bindparam("w_url_hash"))
        statement = database.insert(redirects).from_select(["document_id", "source", *changed], chosen)
        return statement.on_conflict_do_update(
            index_elements=["document_id"], set_={column: statement.excluded[column] for column in changed}
        )

    parameters = {f"v_{column}": values[column] for column in changed}
    connection.execute(
        database.statement(("write_redirect", changed), build),
        {**parameters, "w_source": source, "w_url_hash": url_hash(url)},
    )


def temporary_targets(database: Database, source: str) -> set[str]:
    """The targets of the source's temporary redirects that stood at their last fetch."""
    with database.engine.connect() as connection:
        return set(
            connection.execute(
                select(redirects.c.target)
                .join_from(redirects, documents, documents.c.id == redirects.c.document_id)
                .where(
                    redirects.c.source == source,
                    redirects.c.target.is_not(None),
                    documents.c.status.in_(sorted(TEMPORARY_REDIRECTS)),
                )
            ).scalars()
        )


def reached_targets(database: Database, source: str) -> list[tuple[str, str, int | None, str]]:
    """The source's URLs last reached through a redirect (url, via, depth, state), but those
    leaving already (or held by the mass-deletion guard)."""
    with database.engine.connect() as connection:
        rows: Sequence[SqlRow[str, str, int | None, str]] = connection.execute(
            select(documents.c.url, redirects.c.via, documents.c.depth, documents.c.state)
            .join_from(redirects, documents, documents.c.id == redirects.c.document_id)
            .where(
                redirects.c.source == source,
                redirects.c.via.is_not(None),
                documents.c.state != State.REMOVING.value,
            )
        ).all()
    return [(url, via, depth, state) for url, via, depth, state in rows]


def origins(database: Database, source: str, vias: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Every URL of the source that may lead to a target, by URL (``ORIGIN_COLUMNS``): those
    whose last answer (or the one before a failure) was a temporary redirect, and ``vias``:
    read in a few statements for all targets (one per target read every row of the source)."""
    whole = select(*ORIGIN_COLUMNS).select_from(WHOLE)
    by_url: dict[str, dict[str, Any]] = {}
    with database.engine.connect() as connection:
        for row in connection.execute(whole.where(documents.c.source == source, redirects.c.target.is_not(None))).mappings():
            by_url[row["url"]] = dict(row)
        hashes = sorted({url_hash(via) for via in vias})
        for start in range(0, len(hashes), 500):
            for row in connection.execute(
                whole.where(documents.c.source == source, documents.c.url_hash.in_(hashes[start : start + 500]))
            ).mappings():
                by_url[row["url"]] = dict(row)
    return by_url
