"""Where the installation's web application listens, as it records it itself, for every crawl to
read: a crawl started from a shell that does not name the application's port
(SEARCHCRAWL_WEB_PORT) still refuses its pages (crawl/own_services.py, status 944).

`scrapy web` binds its socket, writes a record of the address it is bound to (port 0 made the
real port) into the data directory, ``listening/web-<port>-<host>.json``, atomically, before it
serves a request, and removes it as it shuts down. Every crawl reads the records when it starts
and again with a SolrCloud's live nodes. A record outlives a server that was killed (SIGKILL, a
crash, a power cut): it is still read, and its address refused, until a server bound there again
replaces it or an operator removes the file. Whether its process is gone cannot be known for
sure (its pid reused, another machine sharing the data directory): fail closed. Standard library
only."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from searchcrawl.system.atomic_files import write_atomically

logger = logging.getLogger(__name__)

FOLDER = "listening"  # in the data directory
WEB_SERVICE = "web"  # the web application's records (`scrapy web`)
MAX_RECORDS = 100  # records read (a folder filled with files reads no further)
MAX_RECORD_BYTES = 64 * 1024


@dataclass(frozen=True)
class Listening:
    """An address a service of the installation listens at, as its record says: ``service`` (the
    record's kind: ``web``), host and port, and the record's file (for the reason of a refusal)."""

    service: str
    host: str
    port: int
    record: Path


def record_path(data_dir: Path, service: str, host: str, port: int) -> Path:
    """The record of ``service`` bound to ``host:port``: one file an address, which a server bound
    there again replaces."""
    safe_host = re.sub(r"[^0-9A-Za-z.-]", "_", host) or "_"
    return data_dir / FOLDER / f"{service}-{port}-{safe_host}.json"


def write_record(data_dir: Path, service: str, host: str, port: int) -> Path:
    """Record that this process's ``service`` listens at ``host:port``; the record's path."""
    path = record_path(data_dir, service, host, port)
    since = datetime.now(UTC).isoformat(timespec="seconds")
    text = json.dumps(
        {"service": service, "host": host, "port": port, "pid": os.getpid(), "machine": socket.gethostname(), "since": since}
    )
    write_atomically(path, text + "\n")
    return path


def remove_record(path: Path) -> None:
    """Remove this process's record at ``path`` (one another process wrote since stays)."""
    try:
        if json.loads(path.read_text(encoding="utf-8")).get("pid") != os.getpid():
            return
        path.unlink()
    except (OSError, ValueError, AttributeError) as exc:
        logger.debug("The listening record %s was not removed: %s", path, exc)


@contextmanager
def recorded(data_dir: Path, service: str, addresses: Sequence[tuple[str, int]]) -> Iterator[list[Path]]:
    """While the block runs, records of ``service`` listening at each of ``addresses``."""
    paths: list[Path] = []
    try:
        for host, port in addresses:
            paths.append(write_record(data_dir, service, host, port))
        yield paths
    finally:
        for path in paths:
            remove_record(path)


def listening(data_dir: Path) -> list[Listening]:
    """Every address the records in ``data_dir`` name (none when there are none). A record that
    cannot be read names nothing: a WARNING says which."""
    folder = data_dir / FOLDER
    try:
        with os.scandir(folder) as entries:
            names = sorted(entry.name for entry in entries if entry.name.endswith(".json"))
    except OSError:
        return []
    found = []
    for name in names[:MAX_RECORDS]:
        path = folder / name
        try:
            address = _read(path)
        except FileNotFoundError:
            continue  # removed as its server shut down
        if address is None:
            logger.warning("The listening record %s cannot be read: the address it was to name is not refused", path)
        else:
            found.append(address)
    return found


def _read(path: Path) -> Listening | None:
    """The address the record at ``path`` names, None for a file that is no record."""
    try:
        with path.open("rb") as handle:
            record = json.loads(handle.read(MAX_RECORD_BYTES + 1)[:MAX_RECORD_BYTES])
        service, host, port = record["service"], record["host"], record["port"]
    except FileNotFoundError:
        raise
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if not (isinstance(service, str) and isinstance(host, str) and host and type(port) is int and 0 < port < 65536):
        return None
    return Listening(service, host, port, path)
