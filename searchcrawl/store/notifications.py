"""The notifications sent (issue 60): each event of a run, and each day's summary, once per channel.

A notification is claimed before it is sent: inserting its row (``key``, ``event``, ``channel``)
is the claim, and the table's unique key lets exactly one process win it, so that a second node
of a shared crawl, a retry or a second `scrapy summary --send` never sends it again. A claimed
notification whose sending failed is marked failed with the (redacted) error; one left "sending"
by a process killed while it sent is given up (never sent twice), and said in the summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import exc, func, select, update

from searchcrawl.store.database import Database, now
from searchcrawl.store.models import documents, frontier, notifications
from searchcrawl.system.translations import N_
from searchcrawl.system.translations import gettext as _

SENDING, SENT, FAILED = "sending", "sent", "failed"
# a notification's state as the pages word it (worded where shown: ``notification_state_label``)
NOTIFICATION_STATE_LABELS = {SENDING: N_("sending"), SENT: N_("sent"), FAILED: N_("failed")}
MAX_ERROR_CHARS = 500


def notification_state_label(state: str) -> str:
    """A notification's state (``notifications.state``) as a page shows it, in the current language;
    another value as it is."""
    return _(NOTIFICATION_STATE_LABELS[state]) if state in NOTIFICATION_STATE_LABELS else state


def run_key(run_id: int) -> str:
    return f"run:{run_id}"


class Notifications:
    def __init__(self, database: Database) -> None:
        self.engine = database.engine

    def claim(self, key: str, event: str, channel: str, source: str | None = None, run_id: int | None = None) -> bool:
        """Claim the notification: True for the one caller that may send it, False when it was
        claimed before (sent, being sent, or failed for good)."""
        try:
            with self.engine.begin() as connection:
                connection.execute(
                    notifications.insert().values(
                        key=key,
                        event=event,
                        channel=channel,
                        source=source,
                        run_id=run_id,
                        state=SENDING,
                        attempts=0,
                        created_at=now(),
                    )
                )
        except exc.IntegrityError:
            return False
        return True

    def finish(self, key: str, event: str, channel: str, attempts: int, error: str | None) -> None:
        """Record how the claimed notification went: sent, or failed with ``error`` (redacted by the caller)."""
        values: dict[str, Any] = {"attempts": attempts, "state": SENT if error is None else FAILED}
        if error is None:
            values["sent_at"] = now()
        else:
            values["error"] = error[:MAX_ERROR_CHARS]
        with self.engine.begin() as connection:
            connection.execute(
                update(notifications)
                .where(notifications.c.key == key, notifications.c.event == event, notifications.c.channel == channel)
                .values(**values)
            )

    def of_key(self, key: str) -> list[dict[str, Any]]:
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(notifications).where(notifications.c.key == key).order_by(notifications.c.id)
            ).mappings()
            return [dict(row) for row in rows]

    def since(self, moment: datetime, limit: int = 1000) -> list[dict[str, Any]]:
        """The notifications claimed since ``moment``, newest first (bounded)."""
        with self.engine.connect() as connection:
            rows: Sequence[Any] = (
                connection.execute(
                    select(notifications)
                    .where(notifications.c.created_at >= moment)
                    .order_by(notifications.c.id.desc())
                    .limit(limit)
                )
                .mappings()
                .all()
            )
            return [dict(row) for row in rows]


def run_statuses(database: Database, run_id: int) -> dict[int, int]:
    """The statuses of the URLs a run queued, counted (its frontier's documents: every node's)."""
    with database.engine.connect() as connection:
        rows: Sequence[Any] = connection.execute(
            select(documents.c.status, func.count())
            .select_from(frontier.join(documents, documents.c.id == frontier.c.document_id))
            .where(frontier.c.run_id == run_id, documents.c.status.is_not(None))
            .group_by(documents.c.status)
        ).all()
    return {int(status): count for status, count in rows}


def runs_statuses(database: Database, run_ids: Sequence[int]) -> dict[int, dict[int, int]]:
    """``run_statuses`` of several runs in one query (the daily summary's), by run."""
    found: dict[int, dict[int, int]] = {}
    if not run_ids:
        return found
    with database.engine.connect() as connection:
        rows: Sequence[Any] = connection.execute(
            select(frontier.c.run_id, documents.c.status, func.count())
            .select_from(frontier.join(documents, documents.c.id == frontier.c.document_id))
            .where(frontier.c.run_id.in_(list(run_ids)), documents.c.status.is_not(None))
            .group_by(frontier.c.run_id, documents.c.status)
        ).all()
    for run_id, status, count in rows:
        found.setdefault(int(run_id), {})[int(status)] = count
    return found


def run_examples(database: Database, run_id: int, statuses: Sequence[int], limit: int = 5) -> dict[int, list[str]]:
    """A few URLs of the run per status in ``statuses`` (for a message: made safe there)."""
    found: dict[int, list[str]] = {}
    with database.engine.connect() as connection:
        for status in statuses:
            urls: list[str] = list(
                connection.execute(
                    select(documents.c.url)
                    .select_from(frontier.join(documents, documents.c.id == frontier.c.document_id))
                    .where(frontier.c.run_id == run_id, documents.c.status == status)
                    .order_by(documents.c.id)
                    .limit(limit)
                ).scalars()
            )
            found[status] = urls
    return {status: urls for status, urls in found.items() if urls}
