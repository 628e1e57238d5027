"""A small crawled corpus for the web application's tests, browser tests and screenshots.

A site of harbour pages on 127.0.0.1: 24 English pages (half last modified two years ago), a
German page, a plain-text file, and a page whose title and text hold markup (``<script>``, an
``onerror`` image): crawled by one source, and one of its pages also by a second source (two
Solr documents, one URL: one hit).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import os
import re
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.conftest import Project, Site, free_port, popen_scrapy, wait_for

WORDS = "anchor beacon cargo dredger ferry gantry jetty mooring pilot quay rudder tugboat".split()
PASSWORD = "quay-" + uuid.uuid4().hex  # the administrator's, for `scrapy web` started by serve_web
SCRIPT_TITLE = "<script>alert('owned')</script> Harbour warning"
SCRIPT_TEXT = "Beware of <img src=x onerror=alert('img')> and <b>bold</b> claims about the harbour."
OLD = time.time() - 2 * 365 * 86400


@dataclass
class Corpus:
    site: Site
    main: str  # the source crawling the whole site
    second: str  # the source crawling one of its pages again
    pages: dict[str, str]  # URL -> title


def page(title: str, text: str, lang: str = "en", links: tuple[str, ...] = ()) -> str:
    anchors = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
    return (
        f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8"><title>{html.escape(title)}</title></head>'
        f"<body><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p><ul>{anchors}</ul></body></html>"
    )


def build_harbour(root: Path) -> dict[str, str]:
    """The site's files; returns each page's path and title."""
    titles: dict[str, str] = {}
    links = []
    for number in range(24):
        word = WORDS[number % len(WORDS)]
        name = f"log{number:02d}.html"
        title = f"Harbour log {number:02d}: the {word}"
        extra = "lighthouse keepers" if number % 2 == 0 else "estuary tides"
        text = f"The harbour master wrote about the {word} and the {extra} on day {number}. " * 3
        (root / name).write_text(page(title, text), encoding="utf-8")
        if number % 2:
            os.utime(root / name, (OLD, OLD))
        titles[name] = title
        links.append(name)
    (root / "hafen.html").write_text(
        page("Hafenbuch", "Der Hafenmeister schreibt über den Hafen und den Leuchtturm. " * 4, "de"), encoding="utf-8"
    )
    titles["hafen.html"] = "Hafenbuch"
    (root / "notes.txt").write_text("Plain notes of the harbour pilot: tides, moorings and the quay.\n" * 5, encoding="utf-8")
    titles["notes.txt"] = ""
    (root / "warning.html").write_text(page(SCRIPT_TITLE, SCRIPT_TEXT * 2), encoding="utf-8")
    titles["warning.html"] = SCRIPT_TITLE
    links += ["hafen.html", "notes.txt", "warning.html"]
    (root / "index.html").write_text(page("Harbour index", "The harbour's logs.", links=tuple(links)), encoding="utf-8")
    titles["index.html"] = "Harbour index"
    return titles


def source_file(seed: str, max_depth: int, extra: str = "") -> str:
    return f'description = "harbour"\nseeds = ["{seed}"]\nmax_depth = {max_depth}\n{extra}'


def crawl_harbour(project: Project, site: Site, titles: dict[str, str]) -> Corpus:
    """Crawl the site with two sources (names of their own); asserts the crawls succeeded."""
    main, second = f"harbour-{uuid.uuid4().hex[:8]}", f"harbour2-{uuid.uuid4().hex[:8]}"
    project.source(main, source_file(site.url + "index.html", 1))
    project.source(second, source_file(site.url + "log00.html", 0))
    for name in (main, second):
        result = project.scrapy("crawl", name)
        assert result.returncode == 0, result.stderr[-3000:]
    return Corpus(site, main, second, {site.url + path: title for path, title in titles.items()})


@pytest.fixture(scope="session")
def harbour_corpus(tmp_path_factory: pytest.TempPathFactory, solr_url: str) -> Iterator[tuple[Project, Corpus]]:
    """The harbour site served and crawled into the test Solr once per pytest process (each
    worker has a Solr core of its own): the tests count its documents, so it is there once."""
    base = tmp_path_factory.mktemp("web")
    (base / "sources").mkdir()
    (base / "site").mkdir()
    project = Project(base / "data", base / "sources", solr_url)
    titles = build_harbour(base / "site")
    site = Site(base / "site").start()
    try:
        yield project, crawl_harbour(project, site, titles)
    finally:
        site.stop()


def serve_web(project: Project, port: int, *args: str, **environ: str) -> subprocess.Popen[str]:
    """`scrapy web --port N` in the project, ``environ`` added to its environment; waits until
    it answers. Its crawls save counters every second (tests/web_settings.py). A fork of the
    worker's fork server, as the tests' other `scrapy` commands are (tests/forkserver.py): the
    suite starts it 44 times, and a fresh interpreter spent 2.5 s of CPU importing (`scrapy web --help`:
    2.4-2.5 s of CPU in 5-6 s at a load average of 8-10; forked, 0.3-0.5 s)."""
    env = project.env(
        SCRAPY_SETTINGS_MODULE="tests.web_settings",
        SEARCHCRAWL_WEB_USERNAME="admin",
        SEARCHCRAWL_WEB_PASSWORD=PASSWORD,
        **environ,
    )
    log = open(project.data_dir.parent / f"web-{port}.log", "w")  # noqa: SIM115 (closed with the process)
    process = popen_scrapy(["web", "--port", str(port), *args], env, stdout=log, stderr=subprocess.STDOUT)

    def answering() -> bool:
        assert process.poll() is None, (project.data_dir.parent / f"web-{port}.log").read_text()
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", port)) == 0

    wait_for(answering, 60, "scrapy web to listen")
    return process


@contextmanager
def web_served(project: Project, *args: str, **environ: str) -> Iterator[str]:
    """`scrapy web` of ``project`` on a free port (serve_web), for a browser test: its base URL;
    stopped as a user stops it (SIGTERM) at the end."""
    project.data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    process = serve_web(project, port, *args, **environ)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        ended = process.poll()  # before it was told to stop: a crash, or a signal from elsewhere
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        if ended is not None:  # raised over a test's own failure too, which it then explains
            log = (project.data_dir.parent / f"web-{port}.log").read_text(errors="replace")
            raise AssertionError(f"scrapy web ended (status {ended}) before the test stopped it; its log ends:\n{log[-3000:]}")


def kill_crawl(pid: int | None, source: str) -> None:
    """SIGKILL the crawl of ``source`` that `scrapy web` started as ``pid`` (its run's record), if
    that process still runs it: a failed test's cleanup. The pid alone is not enough: the web
    application reaps an ended crawl, and with Linux's 32768 pids another worker's process can
    hold it seconds later (a `scrapy web` of another test was killed so). Tests name their sources
    uniquely."""
    if not pid:
        return
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:  # gone
        return
    if "crawl" in argv and source in argv:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def browser_login(page: Any, base: str) -> None:
    """An administrator logs in on ``page`` (Playwright's) of the application at ``base``."""
    page.goto(base + "/admin")
    page.wait_for_url(re.compile(r"/admin/login$"))
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit] >> text=Log in")
    page.wait_for_url(re.compile(r"/admin$"))


def attempts_at_once(app: Any, path: str, form: dict[str, str], cookie: tuple[str, str], count: int = 20) -> list[int]:
    """The status codes of ``count`` POSTs of ``form`` to ``path`` sent at once from one address
    (with ``cookie``, a name and value): ASGI requests on one event loop, each body arriving
    after a yield, so that each handler runs while the others wait for theirs."""
    body = urlencode(form).encode()
    headers = [
        (b"content-type", b"application/x-www-form-urlencoded"),
        (b"content-length", str(len(body)).encode()),
        (b"cookie", f"{cookie[0]}={cookie[1]}".encode()),
    ]

    async def attempt() -> int:
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
            "headers": headers, "client": ("192.0.2.7", 1234), "server": ("127.0.0.1", 80),
        }  # fmt: skip
        status: list[int] = []

        async def receive() -> dict[str, object]:
            await asyncio.sleep(0)  # the others run meanwhile
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, object]) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))  # type: ignore[call-overload]

        await app(scope, receive, send)
        return status[0]

    async def burst() -> list[int]:
        return list(await asyncio.gather(*(attempt() for _ in range(count))))

    return asyncio.run(burst())
