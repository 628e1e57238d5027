"""Where searchcrawl keeps its state: resolved once from settings, used by every component."""

from __future__ import annotations

import os
from pathlib import Path

from scrapy.settings import BaseSettings
from sqlalchemy.engine import make_url

from searchcrawl.system import secrets


def data_dir(settings: BaseSettings) -> Path:
    """The data directory (document table, cache, dev Solr); created on first use."""
    configured = settings.get("SEARCHCRAWL_DATA_DIR")
    if configured:
        path = Path(configured).expanduser()
    else:
        base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
        path = Path(base) / "searchcrawl"
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


def db_url(settings: BaseSettings, with_password: bool = True) -> str:
    """The document table's SQLAlchemy URL; SQLite in the data directory unless configured.
    The password comes from SEARCHCRAWL_DB_PASSWORD(_FILE) unless the URL holds one (not read
    when ``with_password`` is false: where the database is, without connecting to it)."""
    configured = settings.get("SEARCHCRAWL_DB_URL")
    if not configured:
        return f"sqlite:///{data_dir(settings) / 'documents.sqlite3'}"
    if not with_password:
        return configured
    password = secrets.secret(secrets.DB_PASSWORD)
    url = make_url(configured)
    if password and not url.password:
        return url.set(password=password).render_as_string(hide_password=False)
    secrets.split_credentials(configured)  # a password in the URL is masked in logs too
    return configured


def judged_dir(settings: BaseSettings) -> Path:
    """The judged query sets' folder (SEARCHCRAWL_JUDGED_DIR, else ``judged`` in the data
    directory): one folder a set, with its queries.tsv and qrels.txt (search/evaluation.py)."""
    configured = settings.get("SEARCHCRAWL_JUDGED_DIR")
    return Path(configured).expanduser().resolve() if configured else data_dir(settings) / "judged"


def cache_dir(settings: BaseSettings, source: str) -> Path:
    """The document cache of one source."""
    path = data_dir(settings) / "cache" / source
    path.mkdir(parents=True, exist_ok=True)
    return path


def _solr_nodes(settings: BaseSettings) -> list[tuple[str, tuple[str, str] | None]]:
    """Each URL of SOLR_URL (a SolrCloud's nodes are comma-separated) split from the credentials
    written into it: every node's, not the first one's only."""
    configured = settings.get("SOLR_URL") or ""
    return [secrets.split_credentials(url.strip().rstrip("/")) for url in configured.split(",")]


def solr_url(settings: BaseSettings) -> str:
    """The Solr core or collection URL (or the nodes', comma-separated), without credentials (see
    solr_auth)."""
    return ",".join(url for url, _ in _solr_nodes(settings)).rstrip("/")


def solr_auth(settings: BaseSettings) -> tuple[str, str] | None:
    """Basic-auth credentials for Solr: SEARCHCRAWL_SOLR_USERNAME and SEARCHCRAWL_SOLR_PASSWORD
    (or _FILE) from the environment, else the user and password written into SOLR_URL (the
    first node's that has them)."""
    from_environment = secrets.credentials(secrets.SOLR_USERNAME, secrets.SOLR_PASSWORD)
    if from_environment:
        return from_environment
    return next((auth for _, auth in _solr_nodes(settings) if auth), None)


def sources_dir(settings: BaseSettings) -> Path | None:
    """The sources folder (SEARCHCRAWL_SOURCES_DIR), or None: the packaged sources only."""
    configured = settings.get("SEARCHCRAWL_SOURCES_DIR")
    return Path(configured).expanduser() if configured else None


def user_cache_dir() -> Path:
    """``~/.cache/searchcrawl`` ($XDG_CACHE_HOME honoured): builds and downloads shared by every
    data dir and installation, never beside the sources (they may be installed read-only)."""
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "searchcrawl"
