"""Whether a crawl's SQLite writers take turns through the lock file (crawl/stores.py
``writer_lock``, issue 94): by default unless the crawl runs more processes than cores."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from searchcrawl.crawl import stores
from searchcrawl.ops import local_fleet


@pytest.mark.parametrize(
    ("setting", "processes", "cores", "taken"),
    [
        ("auto", 2, 2, True),
        ("auto", "auto", 16, True),
        ("auto", 4, 2, False),  # more processes than cores: SQLite's busy handler waited less
        ("true", 4, 2, True),
        ("false", 1, 2, False),
    ],
)
def test_the_writer_lock_by_default_unless_processes_outnumber_the_cores(
    monkeypatch: pytest.MonkeyPatch, setting: str, processes: object, cores: int, taken: bool
) -> None:
    monkeypatch.setattr(local_fleet, "usable_cores", lambda: cores)
    monkeypatch.setattr(stores, "usable_cores", lambda: cores)
    settings = Settings({"SEARCHCRAWL_SQLITE_WRITER_LOCK": setting, "SEARCHCRAWL_PROCESSES": processes})
    assert stores.writer_lock(settings) is taken
