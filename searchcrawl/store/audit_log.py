"""The administration's audit log (issue 79; table ``audit_log``, migration 0025): every change
made on the administration pages, who made it with which roles, and when; shown on the audit page
(/admin/audit, administrators only). Written by the views after the change was made (a change
refused is not one); texts are cut to their columns' sizes, never a secret (a token made is
recorded by its name and id, never the token)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select

from searchcrawl.store.database import Database, as_utc, now
from searchcrawl.store.models import audit_log

MAX_ROWS = 200  # of one page of the log


class AuditLog:
    def __init__(self, database: Database) -> None:
        self.database = database

    def record(self, user: str, roles: str, action: str, target: str = "", detail: str = "", at: datetime | None = None) -> None:
        values = {
            "at": at or now(),
            "user": user[:256],
            "roles": roles[:200],
            "action": action[:60],
            "target": target[:2000],
            "detail": detail[:4000],
        }
        with self.database.engine.begin() as connection:
            connection.execute(insert(audit_log).values(**values))

    def recent(self, limit: int = MAX_ROWS, offset: int = 0, user: str = "") -> list[dict[str, Any]]:
        """The newest entries first (``user``: theirs only), at most ``limit`` (and MAX_ROWS)."""
        statement = select(audit_log).order_by(audit_log.c.id.desc()).limit(min(limit, MAX_ROWS)).offset(max(0, offset))
        if user:
            statement = statement.where(audit_log.c.user == user)
        with self.database.engine.connect() as connection:
            rows = connection.execute(statement).mappings().all()
        return [{**row, "at": as_utc(row["at"])} for row in rows]

    def count(self, user: str = "") -> int:
        statement = select(func.count()).select_from(audit_log)
        if user:
            statement = statement.where(audit_log.c.user == user)
        with self.database.engine.connect() as connection:
            return int(connection.execute(statement).scalar_one())
