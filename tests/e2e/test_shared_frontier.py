"""FrontierScheduler built alone (as in tests.crawl.test_frontier_scheduler), two nodes of a shared
crawl on one real PostgreSQL database: one run, leases, a starved node woken, a node leaving."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from scrapy.crawler import Crawler

from searchcrawl.crawl.frontier_scheduler import IDLE_RECHECK, WAKE_URL
from searchcrawl.crawl.meta import WAKE
from searchcrawl.store.deltas import Deltas
from tests.crawl.test_frontier_scheduler import (
    RunningEngine,
    counts,
    crawler_of,  # noqa: F401 - the fixture
    drain,
    fetched,
    link,
    opened,
    spider_of,
)


@pytest.fixture
def two_nodes(crawler_of, postgres_url: str) -> Callable[..., tuple[Crawler, Crawler]]:
    """two_nodes(b={...}, **settings): two crawlers of one shared source (``shared = true``) on the
    session's PostgreSQL database: two nodes of a fleet (``b``: settings of the second only).
    The source's name is the test's own (the database is the session's)."""

    def make(b: dict[str, Any] | None = None, **settings: Any) -> tuple[Crawler, Crawler]:
        name = f"shared-{uuid.uuid4().hex[:8]}"
        source = 'seeds = ["http://h.test/"]\nshared = true\n'
        settings["SEARCHCRAWL_DB_URL"] = postgres_url
        return (
            crawler_of(source, node="a", name=name, **settings),
            crawler_of(source, node="b", name=name, **{**settings, **(b or {})}),
        )

    return make


def test_nodes_join_one_run_and_a_starved_node_is_woken_by_the_others_links_and_the_runs_end(two_nodes) -> None:
    a, b = two_nodes()
    node_a, node_b = opened(a), opened(b)
    assert node_a.shared and node_b.shared
    run = node_a.run
    assert run is not None and node_b.run is not None
    assert (node_b.run.id, node_b.run.resumed) == (run.id, True)  # joined, not a second run
    runs = node_a.context.runs
    assert runs is not None and sorted(runs.nodes(run.id, 600)) == sorted([node_a.owner, node_b.owner])

    engine = RunningEngine(spider_of(node_b))
    b.engine = engine  # type: ignore[assignment]
    node_a.enqueue_request(link(node_a, "http://h.test/", 0))
    assert drain(node_a) == ["http://h.test/"]
    assert node_b.next_request() is None and node_b.starved
    assert node_b.has_pending_requests()  # node a holds a lease: its page may add links
    node_b._wake()
    assert engine.crawled == []  # nothing to hand out yet

    node_a.enqueue_request(link(node_a, "http://h.test/page.html"))  # node a's page has a link
    fetched(a, "http://h.test/")
    node_b._wake()  # node b leases it and makes its engine ask
    assert [(request.url, request.meta.get(WAKE)) for request in engine.crawled] == [(WAKE_URL, True)]
    assert not node_b.starved
    node_b._wake()
    assert len(engine.crawled) == 1  # not starved any more: no second wake
    assert node_b.enqueue_request(engine.crawled[0])  # the engine schedules the wake request: never queued
    assert drain(node_b) == ["http://h.test/page.html"]
    fetched(b, "http://h.test/page.html")

    assert node_b.starved
    time.sleep(IDLE_RECHECK)  # the other nodes' work is looked up again after IDLE_RECHECK
    node_b._wake()  # nothing pending anywhere: the run's end, the engine asks and may close
    assert len(engine.crawled) == 2 and not node_b.has_pending_requests()

    node_a.close("finished")  # the first node finding the frontier empty claims the run's end
    assert runs.latest(node_a.context.source.name)["state"] == "finished"  # type: ignore[index]
    node_b.close("finished")  # the other leaves
    latest = runs.latest(node_a.context.source.name)
    assert latest is not None and (latest["state"], latest["reason"]) == ("finished", "finished")
    assert runs.nodes(run.id, 600) == []


def test_a_waiting_node_looks_with_reads_and_leases_only_when_something_is_queued(two_nodes) -> None:
    """A node waiting for the others looks every IDLE_RECHECK (0.1 s): each look must be reads,
    not the two lease statements (writes: BEGIN, UPDATE, COMMIT on PostgreSQL) it made, so that a
    fleet waiting on one slow node does not load the database; once a URL is queued it leases."""
    from sqlalchemy import event

    a, b = two_nodes()
    node_a, node_b = opened(a), opened(b)
    engine = RunningEngine(spider_of(node_b))
    b.engine = engine  # type: ignore[assignment]
    node_a.enqueue_request(link(node_a, "http://h.test/", 0))
    assert drain(node_a) == ["http://h.test/"]
    assert node_b.next_request() is None and node_b.starved
    node_b._wake()  # the first look also takes back dead nodes' leases (every 0.5 s)
    sent: list[str] = []
    database = node_b.context.table.database
    event.listen(database.engine, "before_cursor_execute", lambda _c, _cur, statement, *_rest: sent.append(statement))
    time.sleep(IDLE_RECHECK)
    node_b._wake()
    assert sent and all(statement.lstrip().upper().startswith("SELECT") for statement in sent), sent
    assert engine.crawled == []  # node a's lease: its page may add links

    node_a.enqueue_request(link(node_a, "http://h.test/page.html"))
    sent.clear()
    time.sleep(IDLE_RECHECK)
    node_b._wake()
    assert any(statement.lstrip().upper().startswith("UPDATE") for statement in sent)  # the lease
    assert [request.url for request in engine.crawled] == [WAKE_URL]


def test_a_node_leaving_a_shared_run_leaves_its_urls_and_the_runs_end_to_the_others(two_nodes) -> None:
    a, b = two_nodes()
    node_a, node_b = opened(a), opened(b)
    name = node_a.context.source.name
    runs = node_a.context.runs
    assert runs is not None
    for path in ("", "a.html"):
        node_a.enqueue_request(link(node_a, f"http://h.test/{path}"))
    assert node_a.has_pending_requests() and counts(node_a)["leased"] == 2
    node_a.close("shutdown")  # Ctrl-C on node a: node b goes on
    assert runs.latest(name)["state"] == "running"  # type: ignore[index]
    assert counts(node_b) == {"queued": 2, "leased": 0, "done": 0}  # its leases back in the queue
    assert drain(node_b) == ["http://h.test/", "http://h.test/a.html"]
    fetched(b, "http://h.test/")
    fetched(b, "http://h.test/a.html")
    node_b.close("finished")
    latest = runs.latest(name)
    assert latest is not None and latest["state"] == "finished"
    assert Deltas(node_b.context.table.database).report(name, latest["id"]) == {"new": ["http://h.test/", "http://h.test/a.html"]}


def test_renewal_keeps_a_nodes_leases_and_takes_back_a_dead_nodes(two_nodes) -> None:
    """``_renew`` is what the renewal LoopingCall calls every third of the lease."""
    a, b = two_nodes(b={"SEARCHCRAWL_LEASE_SECONDS": 0.5}, SEARCHCRAWL_FRONTIER_BATCH=1)  # node b's leases: 0.5 s
    node_a, node_b = opened(a), opened(b)
    table = node_a.context.table
    name = node_a.context.source.name
    runs = node_a.context.runs
    run = node_a.run
    assert runs is not None and run is not None
    for path in ("a.html", "b.html"):
        node_a.enqueue_request(link(node_a, f"http://h.test/{path}"))
    kept = node_a.next_request()
    assert kept is not None and kept.url == "http://h.test/a.html"
    assert drain(node_b) == ["http://h.test/b.html"]
    expires = table.get(name, "http://h.test/a.html")["lease_expires"]  # type: ignore[index]

    time.sleep(0.6)  # node b stops: no renewal
    assert node_a.owner not in runs.nodes(run.id, 0.5)  # nor has node a had a heartbeat since
    node_a._renew()
    assert table.get(name, "http://h.test/a.html")["lease_expires"] > expires  # type: ignore[index]
    assert node_a.owner in runs.nodes(run.id, 0.5)
    assert table.get(name, "http://h.test/b.html")["frontier"] == "queued"  # type: ignore[index]
    assert drain(node_a) == ["http://h.test/b.html"]
