"""The scheduler's marks (``schedule_marks``): per scheduled source, the slot it last ran or
skipped and when it started, which the dispatcher (ops/dispatcher.py) decides from."""

from __future__ import annotations

from sqlalchemy import select

from searchcrawl.store.database import Database, as_utc
from searchcrawl.store.models import schedule_marks


class ScheduleMarks:
    """The ``schedule_marks`` table: one row per scheduled source."""

    def __init__(self, database: Database) -> None:
        self.engine = database.engine

    def get(self, source: str) -> dict | None:
        with self.engine.connect() as connection:
            row = connection.execute(select(schedule_marks).where(schedule_marks.c.source == source)).mappings().first()
        if row is None:
            return None
        return {**row, "mark": as_utc(row["mark"]), "started_at": as_utc(row["started_at"])}

    def save(self, source: str, **values: object) -> None:
        with self.engine.begin() as connection:
            if connection.execute(select(schedule_marks.c.source).where(schedule_marks.c.source == source)).first() is None:
                connection.execute(schedule_marks.insert().values(source=source, **values))
            else:
                connection.execute(schedule_marks.update().where(schedule_marks.c.source == source).values(**values))
