"""searchcrawl's scrapy commands (COMMANDS_MODULE): one module a command, named as the command."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from scrapy.settings import BaseSettings

from searchcrawl.config import paths
from searchcrawl.store import Database


@contextmanager
def open_database(settings: BaseSettings, migrate: bool = False) -> Iterator[Database]:
    """The document table's database for a command: read-only commands (status, report, solr
    migrate-ids) never migrate it (explain reads it through its read-only crawl's CrawlState);
    commands that write (control) bring it up to date as a crawl would."""
    database = Database(paths.db_url(settings), migrate=migrate)
    try:
        yield database
    finally:
        database.close()
