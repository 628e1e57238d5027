"""The Prometheus metrics (ops/metrics.py, crawl/extensions/crawl_metrics.py, web/metrics_endpoint.py),
read back with the official client's parser; the Grafana dashboard names only exported metrics;
/metrics is off unless asked, and then answers loopback or the bearer token. SQLite, no server."""

from __future__ import annotations

import json
import re
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import insert, update
from starlette.testclient import TestClient

from searchcrawl.crawl.extensions.crawl_metrics import CrawlCollector, crawl_registry, pages_by_class
from searchcrawl.crawl.run import failure_counts
from searchcrawl.ops.health import HealthCheck
from searchcrawl.ops.metrics import ProjectCollector
from searchcrawl.rules.status_codes import status_class
from searchcrawl.store.database import Database, this_host
from searchcrawl.store.models import FrontierState, RunState, documents, frontier, runs
from searchcrawl.store.progress import RunProgress
from searchcrawl.store.runs import Runs
from searchcrawl.web.api import ApiRefusals, RateLimit, TokenGate
from searchcrawl.web.app import create_app
from tests.web.test_app import unit_config

DASHBOARD = Path(__file__).parents[2] / "deploy" / "grafana" / "searchcrawl.json"
URL = "https://intranet.example/secret-page?token=abc"  # never in a label


def parsed(registry: CollectorRegistry) -> dict[str, Any]:
    return {family.name: family for family in text_string_to_metric_families(generate_latest(registry).decode())}


def samples(family: Any) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(sample.labels.items())): sample.value for sample in family.samples}


def project(tmp_path: Path) -> Database:
    """Two sources: one finished run (documents indexed, failed, refused), one running run that
    got no answer for 20 minutes with URLs to fetch (stalled)."""
    database = Database(f"sqlite:///{tmp_path / 'documents.sqlite3'}")
    moment = datetime.now(UTC)
    rows = [("indexed", 200)] * 5 + [("failed", 503), ("failed", 921), ("excluded", 404), ("pending", 200), ("queued", None)]
    with database.engine.begin() as connection:
        connection.execute(
            insert(documents),
            [
                {
                    "source": "wiki",
                    "url": f"{URL}/{number}",
                    "url_hash": f"{number:064d}",
                    "state": state,
                    "status": status,
                    "first_seen": moment,
                }
                for number, (state, status) in enumerate(rows)
            ],
        )
    finished = Runs(database).start("wiki")
    Runs(database).end(finished.id, RunState.FINISHED, {"pages": 9, "indexed": 5}, "finished")
    running = Runs(database).start("files")
    Runs(database).update(running.id, {"pages": 3, "indexed": 1, "queued": 2, "leased": 0, "done": 3})
    with database.engine.begin() as connection:
        connection.execute(
            insert(frontier),
            [
                {"document_id": 100 + n, "source": "files", "run_id": running.id, "state": FrontierState.QUEUED.value}
                for n in range(2)
            ],
        )
    RunProgress(database).report(running.id, f"{this_host()}:1", "files", moment, moment - timedelta(minutes=20), 3, [])
    return database


def test_the_project_metrics_parse_and_say_what_the_database_holds(tmp_path: Path) -> None:
    database = project(tmp_path)
    registry = CollectorRegistry(auto_describe=False)
    health = HealthCheck(lambda: True, lambda: False, ttl=60)
    registry.register(
        ProjectCollector(database, lambda: ["files", "wiki"], health, stall_after=900, stale_after=600, cache_seconds=0)
    )
    text = generate_latest(registry).decode()
    assert "intranet.example" not in text and "token" not in text  # labels are source names, states, classes only
    found = parsed(registry)
    documents_ = samples(found["searchcrawl_documents"])
    assert (
        documents_[(("source", "wiki"), ("state", "indexed"))] == 5
        and documents_[(("source", "wiki"), ("state", "pending"))] == 1
    )
    classes = samples(found["searchcrawl_documents_not_indexed"])  # failed 503 and 921, excluded 404
    assert classes == {(("source", "wiki"), ("status_class", c)): 1.0 for c in ("4xx", "5xx", "searchcrawl")}
    state = samples(found["searchcrawl_run_state"])
    assert state[(("source", "wiki"), ("state", "finished"))] == 1 and state[(("source", "files"), ("state", "running"))] == 1
    assert samples(found["searchcrawl_frontier_urls"])[(("source", "files"), ("state", "queued"))] == 2
    stalled = samples(found["searchcrawl_run_stalled"])
    assert stalled == {
        (("kind", "nothing_fetched"), ("source", "files")): 1.0,
        (("kind", "not_reporting"), ("source", "files")): 0.0,
    }
    assert samples(found["searchcrawl_run_pages"])[(("source", "wiki"),)] == 9
    assert samples(found["searchcrawl_solr_up"]) == {(): 1.0} and samples(found["searchcrawl_tika_up"]) == {(): 0.0}
    assert "searchcrawl_run_ended_timestamp_seconds" in found and "searchcrawl_metrics_collect_seconds" in found
    # the answer is kept cache_seconds: a second scrape within it reads nothing
    collector = ProjectCollector(database, lambda: ["files", "wiki"], None, cache_seconds=3600)
    first = list(collector.collect())
    with database.engine.begin() as connection:
        connection.execute(update(runs).values(state=RunState.STOPPED))
    assert list(collector.collect()) == first


def test_status_classes() -> None:
    """One rule for the web's metrics, the crawl's and the runs' failure counts (they disagreed:
    600-899 "other" here, "6xx".."8xx" in the crawl's, a site's 999 "9xx")."""
    codes = (None, 100, 200, 301, 404, 503, 650, 800, 900, 921, 943, 949, 999, 42)
    assert [status_class(code) for code in codes] == [
        "none",
        "other",
        "2xx",
        "3xx",
        "4xx",
        "5xx",
        "other",
        "other",
        "searchcrawl",
        "searchcrawl",
        "searchcrawl",
        "other",
        "other",
        "other",
    ]
    assert status_class(921, own=False) == "other"  # a site's answer is never one of searchcrawl's codes
    responses = {f"downloader/response_status_count/{code}": 1 for code in (200, 404, 503, 650, 921, 999)}
    assert pages_by_class({**responses, "downloader/response_status_count/200": 3, "other": 9}) == {
        "2xx": 3,
        "4xx": 1,
        "5xx": 1,
        "other": 3,
    }
    assert failure_counts(responses) == {"4xx": 1, "5xx": 1}


def crawl_metrics() -> CollectorRegistry:
    stats = {"downloader/response_status_count/200": 7, "downloader/response_status_count/503": 2, "searchcrawl/indexed": 4}
    collector = CrawlCollector("wiki", lambda: stats, lambda: {FrontierState.QUEUED: 5, FrontierState.DONE: 9}, lambda: 1.7e9)
    registry, histogram = crawl_registry(collector)
    histogram.labels("wiki").observe(0.3)
    return registry


def test_the_crawl_metrics_parse() -> None:
    found = parsed(crawl_metrics())
    assert samples(found["searchcrawl_crawl_pages"])[(("source", "wiki"), ("status_class", "2xx"))] == 7
    assert [s.name for s in found["searchcrawl_crawl_pages"].samples][0] == "searchcrawl_crawl_pages_total"
    assert samples(found["searchcrawl_crawl_documents_indexed"]) == {(("source", "wiki"),): 4}
    assert samples(found["searchcrawl_crawl_frontier_urls"])[(("source", "wiki"), ("state", "queued"))] == 5
    push = {s.name: s.value for s in found["searchcrawl_crawl_solr_push_seconds"].samples if s.labels.get("le") in (None, "0.5")}
    assert push == {
        "searchcrawl_crawl_solr_push_seconds_bucket": 1.0,
        "searchcrawl_crawl_solr_push_seconds_count": 1.0,
        "searchcrawl_crawl_solr_push_seconds_sum": 0.3,
    }
    assert samples(found["searchcrawl_crawl_last_fetch_timestamp_seconds"]) == {(("source", "wiki"),): 1.7e9}


def test_every_metric_the_dashboard_names_is_exported(tmp_path: Path) -> None:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ProjectCollector(project(tmp_path), lambda: ["files", "wiki"], HealthCheck(lambda: True, lambda: True)))
    api = CollectorRegistry(auto_describe=False)
    api.register(ApiRefusals(TokenGate(lambda _token: None), RateLimit(600, 60)))  # type: ignore[arg-type,return-value]
    exported = {
        sample.name
        for registry_ in (registry, crawl_metrics(), api)
        for family in parsed(registry_).values()
        for sample in family.samples
    }
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    named = {name for expr in exprs for name in re.findall(r"\bsearchcrawl_[a-z_]+", expr)}
    assert len(named) >= 15 and named <= exported, named - exported
    assert {"searchcrawl_documents", "searchcrawl_crawl_pages_total", "searchcrawl_crawl_solr_push_seconds_bucket"} <= named
    assert "searchcrawl_web_api_refused_total" in named


TOKEN = "metrics-token-b7"


@pytest.fixture
def metrics_app(tmp_path: Path) -> Any:
    project(tmp_path)
    return create_app(unit_config(tmp_path, metrics=True, metrics_token=TOKEN, source_names=lambda: ["files", "wiki"]))


def test_metrics_are_off_unless_asked(tmp_path: Path) -> None:
    web = TestClient(create_app(unit_config(tmp_path)), base_url="http://127.0.0.1", client=("127.0.0.1", 5000))
    assert web.get("/metrics").status_code == 404


def test_metrics_answer_loopback_and_the_token_only(metrics_app: Any) -> None:
    here = TestClient(metrics_app, base_url="http://127.0.0.1", client=("127.0.0.1", 5000))
    answer = here.get("/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    names = {family.name for family in text_string_to_metric_families(answer.text)}
    assert {"searchcrawl_documents", "searchcrawl_run_stalled", "searchcrawl_solr_up"} <= names
    # through a proxy on this host, or from elsewhere: the token, or nothing
    assert here.get("/metrics", headers={"x-forwarded-for": "192.0.2.7"}).status_code == 401
    there = TestClient(metrics_app, base_url="http://127.0.0.1", client=("192.0.2.7", 5000))
    refused = there.get("/metrics", headers={"authorization": "Bearer wrong"})
    assert refused.status_code == 401 and TOKEN not in refused.text and "searchcrawl_" not in refused.text
    assert there.get("/metrics").status_code == 401
    assert there.get("/metrics", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_a_proxy_on_this_host_never_lets_metrics_out_without_the_token(tmp_path: Path) -> None:
    """nginx's plain proxy_pass adds no X-Forwarded-For: outside clients reached uvicorn from
    127.0.0.1 and read the metrics. With the default SEARCHCRAWL_WEB_PROXIES (loopback), a
    loopback peer may be that proxy, so the token is required."""
    project(tmp_path)
    config = unit_config(tmp_path, metrics=True, metrics_token=TOKEN, proxies=("127.0.0.1", "::1"))
    app = create_app(config)
    for peer in ("127.0.0.1", "::1", "::ffff:127.0.0.1"):
        proxied = TestClient(app, base_url="http://127.0.0.1", client=(peer, 5000))
        refused = proxied.get("/metrics")  # nginx-like: no forwarding header at all
        assert refused.status_code == 401 and "searchcrawl_" not in refused.text, peer
        assert proxied.get("/metrics", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_metrics_loopback_rule() -> None:
    from searchcrawl.web.metrics_endpoint import allowed
    from searchcrawl.web.sign_on.searcher import Proxies

    none = Proxies([])
    loopback_proxies = Proxies(["127.0.0.1", "::1"])
    # straight from loopback, no proxy configured there: in
    assert allowed("127.0.0.1", {}, None, none) and allowed("::1", {}, None, none)
    assert allowed("::ffff:127.0.0.1", {}, None, none)
    # any forwarding header: a proxy forwarded it
    for header in ("x-forwarded-for", "forwarded", "x-real-ip"):
        assert not allowed("127.0.0.1", {header: "192.0.2.7"}, None, none), header
    # a configured proxy's address, mapped or not: token only
    for peer in ("127.0.0.1", "::1", "::ffff:127.0.0.1"):
        assert not allowed(peer, {}, TOKEN, loopback_proxies), peer
        assert allowed(peer, {"authorization": f"Bearer {TOKEN}"}, TOKEN, loopback_proxies), peer
    assert not allowed("::ffff:192.0.2.7", {}, None, none) and not allowed(None, {}, None, none)
    assert not allowed("unix-socket", {}, None, Proxies(["unix-socket"]))


def test_a_collection_while_the_crawl_adds_stats_does_not_raise() -> None:
    """The metrics server's thread iterated Scrapy's live stats dict while the crawl added keys
    (RuntimeError: dictionary changed size during iteration)."""
    stats: dict[str, Any] = {f"downloader/response_status_count/{200 + n % 300}": 1 for n in range(300)}
    stats.update({f"searchcrawl/excluded/{n}": n for n in range(20_000)})
    collector = CrawlCollector("wiki", lambda: stats, dict, lambda: None)
    done = threading.Event()

    def grow() -> None:
        for n in range(2_000_000):  # bounded
            if done.is_set():
                return
            stats[f"grown/{n}"] = n
            if n % 1000 == 999:
                for k in range(n - 999, n + 1):
                    del stats[f"grown/{k}"]

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    thread = threading.Thread(target=grow)
    thread.start()
    try:
        for _ in range(20):  # the collect before the fix raised in its first three, 40 times in 40
            list(collector.collect())
    finally:
        done.set()
        thread.join()
        sys.setswitchinterval(interval)


def test_the_last_fetch_is_absent_until_a_run_had_an_answer(tmp_path: Path) -> None:
    """It was the session's start (the stall clock) for a run that had fetched nothing yet."""
    database = project(tmp_path)
    waiting = Runs(database).start("waiting")
    RunProgress(database).report(waiting.id, "h:2", "waiting", datetime.now(UTC), datetime.now(UTC), 0, [])
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ProjectCollector(database, lambda: ["files", "waiting"], HealthCheck(lambda: True, lambda: True)))
    found = samples(parsed(registry)["searchcrawl_run_last_fetch_timestamp_seconds"])
    assert list(found) == [(("source", "files"),)]  # the run that fetched 3 pages only
