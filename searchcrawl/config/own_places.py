"""The installation's own data, which no source reads (issue 99): an agent source whose local
paths or database point into it is refused, with the place it touches named.

The own places are found by the functions the installation finds them with
(searchcrawl/system/paths.py, searchcrawl/system/secrets.py): the data folder (the document
table's SQLite file, the caches, the dev Solr's home and index under ``<data dir>/solr``), the
document table's database (SEARCHCRAWL_DB_URL), the judged query sets, the sources folder (source
files, their seed files and TLS keys) and the secrets' files (``*_FILE``). A path is compared
with them after symbolic links and ``..`` are resolved, both ways: a path inside an own place is
refused, and so is one that holds an own place (``roots = ["/"]`` would list the data folder;
the files agent follows a link only to a target under its roots). A database URL is refused
when its SQLite file is such a path, or when it names the document table's own server and
database. Each agent's options say which local paths and databases it reads: ``local_paths()``
and ``database_urls()``, each as (key, value) pairs (an agent of one's own says so the same way).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel
from scrapy.settings import BaseSettings
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from searchcrawl.config.source import Source, SourceError, agent_table
from searchcrawl.system import paths, secrets

# the default port of each server a SQLAlchemy URL may name without one
DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306, "mariadb": 3306, "mssql": 1433, "oracle": 1521}
# the names of this machine in a database URL (a libpq socket folder, starting with "/", too)
LOCAL_HOSTS = frozenset({"", "localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class OwnPlace:
    """A file or folder of the installation's own: what it is, and its real path."""

    what: str
    path: str


@dataclass(frozen=True)
class OwnPlaces:
    """The installation's own files and folders, and its database when that is a server's."""

    places: tuple[OwnPlace, ...]
    database: str | None = None  # SEARCHCRAWL_DB_URL when not SQLite (its password never read)


def real_path(path: str) -> str | None:
    """``path`` with its symbolic links and ``..`` resolved (as far as it exists), or None when
    it cannot be (a NUL character, a path too long)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return None


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def path_refusal(path: str, own: OwnPlaces) -> str | None:
    """Why the local ``path`` may not be read (it is, is inside, or holds an own place), or None."""
    real = real_path(path)
    if real is None:
        return f"{path!r} cannot be resolved to a real path"
    shown = path if real == path else f"{path} (really {real})"
    for place in own.places:
        if real == place.path:
            return f"{shown} is {place.what}"
    for place in own.places:
        if _inside(real, place.path):
            return f"{shown} is inside {place.what}, {place.path}"
    for place in own.places:
        if _inside(place.path, real):
            return f"{shown} holds {place.what}, {place.path}"
    return None


def database_refusal(url: str, own: OwnPlaces) -> str | None:
    """Why the database ``url`` may not be read (its SQLite file is refused by ``path_refusal``,
    or it is the document table's own server and database), or None."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return "it cannot be read as a database URL"  # never quoted: it may hold a password
    if parsed.get_backend_name() == "sqlite":
        for path in _sqlite_files(parsed):
            refused = path_refusal(path, own)
            if refused is not None:
                return f"its SQLite file {refused}"
        return None
    if own.database is not None and _same_database(parsed, make_url(own.database)):
        return "it is the installation's own database (SEARCHCRAWL_DB_URL: the document table, the searches' log, API tokens)"
    return None


def _sqlite_files(url: URL) -> list[str]:
    """The files a SQLite URL may open: its database as a file name and, written ``file:...``,
    as the URI SQLite reads with ``uri=true`` (both, so neither reading is missed)."""
    database = url.database or ""
    if database in ("", ":memory:"):
        return []
    files = [database]
    if database.startswith("file:"):
        files.append(unquote(urlsplit(database).path) or ":memory:")
    return [name for name in files if name != ":memory:"]


def _server_database(url: URL) -> tuple[str, int | None, str | None, frozenset[str]]:
    """A server database's identity: its kind, its port, its database (PostgreSQL's default: the
    user's name) and its hosts (libpq's ``host`` parameters too; this machine's names as one)."""
    backend = url.get_backend_name()
    named = url.query.get("host", ())
    hosts = {url.host or ""} | ({named} if isinstance(named, str) else set(named))
    local = {host for host in hosts if host.strip("[]").lower() in LOCAL_HOSTS or host.startswith("/")}
    normal = frozenset({host.strip("[]").lower() for host in hosts - local} | ({"localhost"} if local else set()))
    database = url.database or (url.username if backend == "postgresql" else None)
    return backend, url.port or DEFAULT_PORTS.get(backend), database, normal


def _same_database(url: URL, own: URL) -> bool:
    """Whether ``url`` names ``own``'s database: the same kind, port and database on one of its hosts."""
    kind, port, database, hosts = _server_database(url)
    own_kind, own_port, own_database, own_hosts = _server_database(own)
    return (kind, port, database) == (own_kind, own_port, own_database) and bool(hosts & own_hosts)


def options_refusal(options: BaseModel, own: OwnPlaces) -> tuple[str, str] | None:
    """The first key of an agent's options that reads an own place, and why; or None."""
    local_paths = getattr(options, "local_paths", None)
    for key, path in local_paths() if callable(local_paths) else []:
        refused = path_refusal(path, own)
        if refused is not None:
            return key, refused
    database_urls = getattr(options, "database_urls", None)
    for key, url in database_urls() if callable(database_urls) else []:
        refused = database_refusal(url, own)
        if refused is not None:
            return key, refused
    return None


def check_own_places(source: Source, own: OwnPlaces) -> None:
    """SourceError when ``source``'s agent would read the installation's own data."""
    if source.agent_options is None:
        return
    refused = options_refusal(source.agent_options, own)
    if refused is not None:
        key, why = refused
        table = agent_table(source.settings.type)
        raise SourceError(f"{source.origin}: key '{table}.{key}': {why}: a source never reads the installation's own data")


def own_places(settings: BaseSettings, environ: Mapping[str, str] = os.environ) -> OwnPlaces:
    """The installation's own places, as its settings and environment (the secrets') say: the
    most particular first, so that a refusal names the place it touches."""
    database = paths.db_url(settings, with_password=False)
    try:
        parsed = make_url(database)
    except (ArgumentError, ValueError):  # never quoted: it may hold a password
        raise SourceError("SEARCHCRAWL_DB_URL cannot be read as a database URL") from None
    server = None if parsed.get_backend_name() == "sqlite" else database
    named = [("the document table's database", path) for path in (_sqlite_files(parsed) if server is None else [])]
    named.extend((f"the secret file of {name}", path) for name, path in secrets.secret_files(environ, settings).items())
    sources_dir = paths.sources_dir(settings)
    if sources_dir is not None:
        named.append(("the sources folder", str(sources_dir)))
    named.append(("the judged query sets' folder", str(paths.judged_dir(settings))))
    named.append(("the data folder (the document table, caches, the dev Solr's home)", str(paths.data_dir(settings))))
    places = [OwnPlace(what, real) for what, path in named if (real := real_path(path)) is not None]
    return OwnPlaces(tuple(places), server)
