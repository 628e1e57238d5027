"""The tests' LDAP directory: searchcrawl/dev/servers/slapd.py's slapd (what it holds, and what
tests may rely on, is said there), one a test worker; and ``SlowProxy``, a slow twin of it."""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from searchcrawl.dev.servers.slapd import GROUPS, READING_GROUPS, ROOT_PASSWORD, SUFFIX, USERS, DirectoryServer

__all__ = ["GROUPS", "READING_GROUPS", "ROOT_PASSWORD", "SUFFIX", "USERS", "DirectoryServer", "SlowProxy", "directory_server"]


@pytest.fixture(scope="session")
def directory_server() -> Iterator[DirectoryServer]:
    """This worker's slapd (each xdist worker starts its own: a tenth of a second)."""
    folder = Path(tempfile.mkdtemp(prefix="searchcrawl-slapd-"))
    server = DirectoryServer(folder).start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


class SlowProxy:
    """A directory's slow twin: a loopback port that passes each connection on to ``url``'s
    server and each of its answers back ``delay`` seconds late (None: never); ``connections``
    counts the connections it took. ``delay`` may be changed while it runs."""

    def __init__(self, url: str, delay: float | None) -> None:
        target = urlsplit(url)
        self.target = (target.hostname or "127.0.0.1", target.port or 389)
        self.delay = delay
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"ldap://127.0.0.1:{self._listener.getsockname()[1]}"
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed.set()
        self._listener.close()

    def __enter__(self) -> SlowProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _address = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            server = socket.create_connection(self.target)
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, late: bool) -> None:
        try:
            while data := source.recv(65536):
                if late:  # an answer: held back as a slow directory holds it
                    if self._closed.wait(self.delay):
                        return
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                end.close()
