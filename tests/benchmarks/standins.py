"""Stand-ins for a machine without Java or nginx (the lent 16-core machine: Python 3.12, no Java,
no internet, no package installs): the benchmarks' Solr and web server, in Python.

    SolrStandIn   answers what a crawl asks of Solr (ping, the schema's copy fields, queries:
                  nothing found) and accepts every update, counting its documents without
                  parsing them (the mbeans statistics ``measure.solr_updates`` reads). It measures
                  the crawler's cost, not Solr's: the figures it gives say so.
    StaticSite    serves a folder like the benchmark's nginx (Last-Modified, 304 on
                  If-Modified-Since), from several forked processes sharing one listening
                  socket (Twisted's static File), and logs each request as nginx's benchmark
                  log does: ``<epoch> <status> <bytes> <path>``.

Each runs in a process of its own (``python -m tests.benchmarks.standins solr|site ...``), so that
its CPU is counted apart from the crawler's. Never part of the test suite's real-parts tests:
those talk to a real Solr and nginx.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from searchcrawl.dev.solr_runner import free_port
from tests.benchmarks.measure import python_path
from tests.benchmarks.synthetic import Nginx
from tests.conftest import ROOT

ID_KEY = b'"id":'  # one per document of a JSON update (a quote inside a value is escaped: \")


class _SolrHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    counts = {"adds": 0, "deletes": 0}
    lock = threading.Lock()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - BaseHTTPRequestHandler's name
        pass

    def _answer(self, body: dict[str, object], status: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_POST(self) -> None:
        self._route(self._body())

    def do_GET(self) -> None:
        self._route(b"")

    def _route(self, body: bytes) -> None:
        parts = urlsplit(self.path)
        path, query = parts.path.rstrip("/"), parse_qs(parts.query)
        header = {"status": 0, "QTime": 0}
        if path.endswith("/update") or path.endswith("/update/json/docs"):
            with self.lock:
                if b'"delete"' in body[:200]:
                    self.counts["deletes"] += body.count(b'"id"')
                else:
                    self.counts["adds"] += body.count(ID_KEY)
            self._answer({"responseHeader": header})
        elif path.endswith("/admin/ping"):
            self._answer({"responseHeader": header, "status": "OK"})
        elif path.endswith("/admin/mbeans"):
            stats = {
                "UPDATE.updateHandler.cumulativeAdds.count": self.counts["adds"],
                "UPDATE.updateHandler.cumulativeDeletesById.count": self.counts["deletes"],
            }
            self._answer({"responseHeader": header, "solr-mbeans": ["UPDATE", {"updateHandler": {"stats": stats}}]})
        elif "/schema" in path:
            self._answer({"responseHeader": header, "copyFields": [], "fields": [], "fieldTypes": []})
        elif path.endswith("/select") or path.endswith("/query"):
            answer: dict[str, object] = {"responseHeader": header, "response": {"numFound": 0, "start": 0, "docs": []}}
            if "cursorMark" in query:
                answer["nextCursorMark"] = query["cursorMark"][0]
            if "facet.field" in query or "facet" in query:
                answer["facet_counts"] = {"facet_fields": {name: [] for name in query.get("facet.field", [])}}
            self._answer(answer)
        else:
            self._answer({"responseHeader": {"status": 404}, "error": {"msg": f"the stand-in has no {path}"}}, 404)


def serve_solr(port: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", port), _SolrHandler)
    server.daemon_threads = True
    server.serve_forever()


def serve_site(root: str, port: int, workers: int, log: str) -> None:
    """``workers`` forked processes, each a Twisted static server on one shared listening socket."""
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listening.bind(("127.0.0.1", port))
    listening.listen(1024)
    listening.setblocking(False)
    children = []
    for number in range(workers):
        pid = os.fork()
        if pid == 0:
            _site_worker(listening, root, f"{log}.{number}")
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)


def _site_worker(listening: socket.socket, root: str, log: str) -> None:
    from twisted.internet import reactor
    from twisted.web.server import Site
    from twisted.web.static import File

    stream = open(log, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - for the process's life

    class LoggedSite(Site):
        def log(self, request) -> None:  # type: ignore[no-untyped-def]
            path = request.uri.decode("latin-1").split("?", 1)[0]
            stream.write(f"{time.time():.3f} {request.code} {request.sentLength} {path}\n")

    resource = File(root)
    resource.indexNames = []  # a folder without index.html answers 403 in nginx: no listing either
    reactor.adoptStreamPort(listening.fileno(), socket.AF_INET, LoggedSite(resource))  # type: ignore[attr-defined]
    reactor.run()  # type: ignore[attr-defined]


class StaticSite(Nginx):
    """The stand-in web server, read as the benchmark reads nginx (``Nginx``): its log is the
    workers' logs together."""

    def _lines(self) -> list[str]:
        lines: list[str] = []
        for path in sorted(self.access_log.parent.glob(self.access_log.name + ".*")):
            lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
        return lines


def _wait_until_up(url: str, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):  # noqa: S310 - loopback
                return
        except urllib.error.HTTPError:  # it answers
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the {what} stand-in did not start") from None
            time.sleep(0.05)


@contextlib.contextmanager
def solr_stand_in() -> Iterator[tuple[str, int]]:
    """(core URL, pid) of a Solr stand-in on a free port of 127.0.0.1."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=python_path(ROOT))
    process = subprocess.Popen([sys.executable, "-m", "tests.benchmarks.standins", "solr", str(port)], env=env)
    url = f"http://127.0.0.1:{port}/solr/searchcrawl"
    try:
        _wait_until_up(f"{url}/admin/ping", process, "Solr")
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextlib.contextmanager
def static_site(root: Path, work: Path, workers: int) -> Iterator[StaticSite]:
    """The stand-in web server serving ``root`` with ``workers`` processes."""
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = work / "access.log"
    env = dict(os.environ, PYTHONPATH=python_path(ROOT))
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.benchmarks.standins", "site", str(root), str(port), str(workers), str(log)],
        env=env,
        start_new_session=True,  # its forked workers are its process group: stopped together
    )
    try:
        _wait_until_up(f"http://127.0.0.1:{port}/", process, "web server")
        yield StaticSite(process, port, log)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)


if __name__ == "__main__":
    if sys.argv[1] == "solr":
        serve_solr(int(sys.argv[2]))
    else:
        serve_site(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
