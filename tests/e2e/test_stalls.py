"""Stall detection and metrics with real parts: a real `scrapy crawl` of a site that stops
answering is named stalled by `scrapy status`, the administration pages and the web
application's /metrics (parsed by prometheus_client's parser), its own metrics endpoint answers
while it hangs, and once the crawl is killed with SIGKILL its leases are named as held by a
process gone (no Solr there: the project's SOLR_URL points nowhere, and Solr is named as out of
reach too). `scrapy web` serves /metrics as a user starts it; a crawl into the dev Solr shows
its pushes' latency in its own metrics."""

from __future__ import annotations

import re
import signal
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from searchcrawl.dev.jvm_server import free_port
from searchcrawl.ops.launchers import LocalLauncher
from searchcrawl.web.app import create_app
from tests.conftest import ROOT, Project, wait_for
from tests.e2e.test_notifications import WEBHOOK_SECRET, WEBHOOK_TOKEN, Hooks, webhook_receiver  # noqa: F401 (a fixture)
from tests.ops.test_metrics import project as metrics_project
from tests.sites import build_intranet
from tests.web.test_app import PASSWORD, unit_config
from tests.web_site import serve_web

PAGES = 6


class HangingSite(ThreadingHTTPServer):
    """Answers robots.txt (404) and the index (links to p0..p5); every page after that is never
    answered, until ``release`` (the test's end)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.released = threading.Event()
        self.hanging = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


class Handler(BaseHTTPRequestHandler):
    server: HangingSite

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path == "/index.html":
            links = "".join(f'<a href="p{number}.html">page {number}</a> ' for number in range(PAGES))
            self._answer(200, f"<html><head><title>home</title></head><body>{links}</body></html>")
        elif self.path.startswith("/p"):
            self.server.hanging += 1
            self.server.released.wait(timeout=600)
            self._answer(200, "<html><body>late</body></html>")
        else:
            self._answer(404, "not here")

    def _answer(self, code: int, body: str) -> None:
        try:
            self.send_response(code)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body.encode())))
            self.end_headers()
            self.wfile.write(body.encode())
        except OSError:  # the crawl was killed meanwhile
            pass

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hanging_site() -> Iterator[HangingSite]:
    site = HangingSite()
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    yield site
    site.released.set()
    site.shutdown()
    site.server_close()


def login(web: TestClient) -> None:
    token = re.search(r'name="login_token" value="([^"]+)"', web.get("/admin/login").text)
    assert token is not None
    data = {"login_token": token[1], "username": "admin", "password": PASSWORD}
    assert web.post("/admin/login", data=data, follow_redirects=False).status_code == 303


def stall_settings() -> list[str]:
    return ["-s", "SEARCHCRAWL_STALL_AFTER=3", "-s", "SEARCHCRAWL_LEASE_SECONDS=3600"]


def metrics_of(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    return {
        family.name: {tuple(sorted(sample.labels.items())): sample.value for sample in family.samples}
        for family in text_string_to_metric_families(text)
    }


def test_a_crawl_of_a_site_that_stops_answering_is_stalled_then_its_leases_are_a_process_gones(
    offline_project: Project, hanging_site: HangingSite, webhook_receiver: Hooks
) -> None:
    project = offline_project
    name = f"stall-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{hanging_site.url}index.html"]\n')
    port = free_port()
    crawl = project.popen(
        "crawl",
        name,
        "-s",
        "SEARCHCRAWL_PROGRESS_INTERVAL=0.5",
        "-s",
        "DOWNLOAD_TIMEOUT=600",
        "-s",
        f"SEARCHCRAWL_METRICS_PORT={port}",
        *stall_settings(),
    )
    try:
        wait_for(lambda: hanging_site.hanging >= 1 or crawl.poll() is not None, what="a request to a page that hangs")
        assert crawl.poll() is None

        def stalled() -> str:
            answer = project.scrapy("status", name, *stall_settings())
            return answer.stdout if "STALLED" in answer.stdout else ""

        wait_for(stalled, timeout=120, what="scrapy status to name the stall")
        status = stalled()
        assert f"of {name} stalled: nothing fetched for" in status, status
        assert "site 127.0.0.1: " in status and "request(s) without an answer" in status, status
        assert "Solr: out of reach" in status, status

        # the crawl's own metrics, while it hangs: on loopback, in Prometheus's text format
        own = metrics_of(requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)
        assert own["searchcrawl_crawl_pages"][(("source", name), ("status_class", "2xx"))] >= 1  # the index
        assert own["searchcrawl_crawl_frontier_urls"], own
        assert own["searchcrawl_crawl_last_fetch_timestamp_seconds"][(("source", name),)] > 1.7e9
        # the web application's, from the project database
        config = unit_config(
            project.data_dir.parent,
            db_url=f"sqlite:///{project.data_dir / 'documents.sqlite3'}",
            solr_url=project.solr_url,
            metrics=True,
            stall_after=3,
            stale_after=3600,
            source_names=lambda: [name],
            launcher=LocalLauncher(ROOT, project.data_dir / "logs"),
        )
        with TestClient(create_app(config), base_url="http://127.0.0.1", client=("127.0.0.1", 5000)) as web:
            found = metrics_of(web.get("/metrics").text)
            # and the administration pages name it: the overview, and the run's page
            login(web)
            overview = web.get("/admin").text
            assert "Stalled runs" in overview and f"run 1 of {name} stalled: nothing fetched for" in overview, overview
            assert "site 127.0.0.1: " in overview
            run_page = web.get("/admin/runs/1").text
            assert "Stalled: run 1 of" in run_page and "without an answer" in run_page
        assert found["searchcrawl_run_stalled"][(("kind", "nothing_fetched"), ("source", name))] == 1.0
        assert found["searchcrawl_run_state"][(("source", name), ("state", "running"))] == 1.0
        assert found["searchcrawl_solr_up"] == {(): 0.0}

        # the periodic check (`scrapy summary --check`, a timer's) tells of it, once for the run
        env = {
            "SEARCHCRAWL_NOTIFY_WEBHOOK_URL": webhook_receiver.url,
            "SEARCHCRAWL_NOTIFY_WEBHOOK_SECRET": WEBHOOK_SECRET,
            "SEARCHCRAWL_NOTIFY_EVENTS": "run_stalled",
        }
        checks = [project.scrapy("summary", "--check", *stall_settings(), **env) for _ in range(2)]
        assert [check.returncode for check in checks] == [1, 1], checks[0].stderr[-3000:]
        assert f"of {name} stalled: nothing fetched for" in checks[0].stdout
        [told] = webhook_receiver.received  # the second check: told before
        assert (told["event"], told["source"], told["run"], told["kind"]) == ("run_stalled", name, 1, "nothing fetched")
        assert any("127.0.0.1" in wait for wait in told["waits_on"]) and WEBHOOK_TOKEN not in str(told)
        assert webhook_receiver.refused == []

        # killed: nothing reports any more, and the URLs it leased are held by a process gone
        owner_pid = crawl.pid
        crawl.send_signal(signal.SIGKILL)
        crawl.wait()
        status = project.scrapy("status", name, *stall_settings()).stdout
        assert "stalled: no report from its process" in status, status
        assert "its process is gone (killed or crashed)" in status, status
        assert f":{owner_pid}, a process gone (the lease expires at" in status, status
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.wait()


def test_scrapy_web_serves_metrics_to_the_token_only_behind_a_local_proxy(offline_project: Project, tmp_path: Path) -> None:
    """`scrapy web` as a user starts it (uvicorn), over a project database with runs: /metrics
    parses and answers the bearer token; with the default SEARCHCRAWL_WEB_PROXIES (loopback) a
    loopback client may be a reverse proxy forwarding outside clients with no header at all
    (nginx's plain proxy_pass): refused without the token, as a forwarded one. Its token is in no
    log line nor answer."""
    database = metrics_project(tmp_path)
    url = str(database.engine.url)
    database.close()
    token = "metrics-token-" + uuid.uuid4().hex
    port = free_port()
    offline_project.data_dir.mkdir(parents=True, exist_ok=True)
    for name in ("wiki", "files"):  # the sources the database holds runs of
        offline_project.source(name, 'seeds = ["http://127.0.0.1:9/"]\n')
    process = serve_web(
        offline_project, port, SEARCHCRAWL_WEB_METRICS="1", SEARCHCRAWL_DB_URL=url, SEARCHCRAWL_WEB_METRICS_TOKEN=token
    )
    try:
        base = f"http://127.0.0.1:{port}/metrics"
        bearer = {"authorization": f"Bearer {token}"}
        proxied = requests.get(base, timeout=60)  # as nginx's proxy_pass: no forwarding header
        assert proxied.status_code == 401 and "searchcrawl_" not in proxied.text and token not in proxied.text
        found = metrics_of(requests.get(base, headers=bearer, timeout=60).text)
        assert found["searchcrawl_documents"][(("source", "wiki"), ("state", "indexed"))] == 5
        assert found["searchcrawl_run_stalled"][(("kind", "nothing_fetched"), ("source", "files"))] == 1.0
        forwarded = requests.get(base, headers={"x-forwarded-for": "192.0.2.9"}, timeout=60)
        assert forwarded.status_code == 401 and token not in forwarded.text
        authorised = requests.get(base, headers={"x-forwarded-for": "192.0.2.9", **bearer}, timeout=60)
        assert authorised.status_code == 200 and "searchcrawl_run_state" in authorised.text
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    log = (offline_project.data_dir.parent / f"web-{port}.log").read_text()
    assert token not in log and "Serving searchcrawl's pages" in log, log[-2000:]


def test_a_crawls_own_metrics_observe_its_pushes_to_a_real_solr(project: Project, serve: Any, tmp_path: Path) -> None:
    """A crawl of a site into the dev Solr, slowed so that it runs while pushes happen (every
    SEARCHCRAWL_PUSH_INTERVAL): its /metrics show documents indexed and the pushes' latency."""
    root = tmp_path / "site"
    root.mkdir()
    build_intranet(root, sections=3, per_section=4)
    site = serve(root)
    name = f"pushes-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\ndelay = 0.2\n')
    port = free_port()
    crawl = project.popen("crawl", name, "-s", f"SEARCHCRAWL_METRICS_PORT={port}", "-s", "SEARCHCRAWL_PUSH_INTERVAL=0.5")
    seen: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}

    def pushed() -> bool:
        assert crawl.poll() is None, "the crawl ended before a push was seen"
        try:
            seen.update(metrics_of(requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text))
        except requests.ConnectionError:  # not serving yet
            return False
        indexed = seen.get("searchcrawl_crawl_documents_indexed", {}).get((("source", name),), 0)
        pushes = seen.get("searchcrawl_crawl_solr_push_seconds", {}).get((("source", name),), 0)
        return indexed > 0 and pushes > 0

    try:
        wait_for(pushed, timeout=120, what="a push observed in the crawl's metrics")
    finally:
        crawl.kill()
        crawl.wait()
    buckets = {key: value for key, value in seen["searchcrawl_crawl_solr_push_seconds"].items() if ("le", "+Inf") in key}
    assert list(buckets.values())[0] >= 1, seen["searchcrawl_crawl_solr_push_seconds"]
