"""Where searchcrawl keeps its state: resolved once from settings, used by every component."""

from __future__ import annotations

import os
from pathlib import Path

from scrapy.settings import BaseSettings


def data_dir(settings: BaseSettings) -> Path:
    """The data directory (document table, cache, dev Solr); created on first use."""
    configured = settings.get("SEARCHCRAWL_DATA_DIR") or os.environ.get("SEARCHCRAWL_DATA_DIR")
    if configured:
        path = Path(configured).expanduser()
    else:
        base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
        path = Path(base) / "searchcrawl"
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


def db_url(settings: BaseSettings) -> str:
    """The document table's SQLAlchemy URL; SQLite in the data directory unless configured."""
    configured = settings.get("SEARCHCRAWL_DB_URL") or os.environ.get("SEARCHCRAWL_DB_URL")
    if configured:
        return configured
    return f"sqlite:///{data_dir(settings) / 'documents.sqlite3'}"


def cache_dir(settings: BaseSettings, source: str) -> Path:
    """The document cache of one source."""
    path = data_dir(settings) / "cache" / source
    path.mkdir(parents=True, exist_ok=True)
    return path


def solr_url(settings: BaseSettings) -> str:
    return (settings.get("SOLR_URL") or os.environ.get("SOLR_URL") or "").rstrip("/")


def sources_dir(settings: BaseSettings) -> Path | None:
    configured = settings.get("SEARCHCRAWL_SOURCES_DIR") or os.environ.get("SEARCHCRAWL_SOURCES_DIR")
    return Path(configured).expanduser() if configured else None
