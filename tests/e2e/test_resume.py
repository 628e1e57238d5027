"""Resumable crawls: killed (SIGKILL, SIGTERM, with Solr down), then resumed, nothing is lost and
nothing is indexed twice; on SQLite and on PostgreSQL."""

from __future__ import annotations

import collections
import random
import signal
import time
import uuid

import pysolr
import pytest

from searchcrawl.dev.solr_runner import DevSolr
from searchcrawl.store.frontier import Frontier
from searchcrawl.store.models import FrontierState
from searchcrawl.store.outcome_batcher import BACKLOG
from searchcrawl.store.runs import Runs
from tests.conftest import free_port, not_found_probe
from tests.sites import build_intranet

CONCURRENT = 8
# Outcomes written in batches of at most this many (issue 74): a kill loses those not yet written,
# whose URLs stay leased and are fetched again, with what was in flight; at most BACKLOG batches wait
OUTCOME_BATCH = 10
FETCHED_AGAIN_PER_KILL = CONCURRENT + (BACKLOG + 1) * OUTCOME_BATCH  # BACKLOG waiting, one being written


@pytest.fixture(scope="module")
def resume_solr(tmp_path_factory) -> DevSolr:
    """A Solr of its own: one test stops and starts it."""
    solr = DevSolr(tmp_path_factory.mktemp("resume-solr"), free_port())
    solr.start(timeout=600)
    yield solr
    solr.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request, project) -> str:
    if request.param == "postgresql":
        project.db_url = request.getfixturevalue("postgres_url")
    return request.param


def crawl_site(tmp_path, serve):
    root = tmp_path / "site"
    root.mkdir()
    pages = build_intranet(root, sections=5, per_section=50)  # 506 pages within depth 3
    return serve(root), pages


def wait_for_requests(site, count: int, process, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while len(site.requests) < count:
        assert process.poll() is None, "the crawl ended before the kill"
        assert time.monotonic() < deadline, "the crawl did not make progress"
        time.sleep(0.02)


def check_complete(project, name, site, pages, solr_url, kills: int) -> None:
    client = pysolr.Solr(solr_url, timeout=30)
    client.commit()
    ids = [doc["url"] for doc in client.search(f'source:"{name}"', rows=5000, fl="url")]
    assert len(ids) == len(set(ids))
    expected = {site.url + path for path in pages}
    table = project.table()
    missing = {
        url: {
            k: v
            for k, v in (table.get(name, url) or {}).items()
            if k in ("state", "status", "frontier", "run_id", "checksum", "reason")
        }
        for url in expected - set(ids)
    }
    assert set(ids) == expected, repr(missing)  # the final index equals the full site
    states = project.table().count_by(name, "state")
    assert states == {"indexed": len(pages)}, states  # each page indexed, nothing pending
    fetched = collections.Counter(path for _m, _h, path in site.requests if path != "/robots.txt" and not not_found_probe(path))
    again = {path: n for path, n in fetched.items() if n > 1}
    assert len(again) <= FETCHED_AGAIN_PER_KILL * kills, again  # only what was in flight, or not yet recorded, at the kill
    assert set(fetched) == {"/" + path for path in pages}


def crawl_args(name: str) -> list[str]:
    return [
        "crawl",
        name,
        "-s",
        f"CONCURRENT_REQUESTS={CONCURRENT}",
        "-s",
        "SEARCHCRAWL_PROGRESS_INTERVAL=1",
        "-s",
        "SEARCHCRAWL_CACHE_MAX_BYTES=50000",
        "-s",
        f"SEARCHCRAWL_OUTCOME_BATCH={OUTCOME_BATCH}",
    ]


# Each backend's crawl is stopped twice on its way, by each signal once, and then finished: the
# first signal stops a fresh crawl, the second the crawl that resumed it; the order differs by
# backend, so that each signal stops a fresh crawl on one backend and a resumed one on the other.
# (A crawl of its own for each signal fetched the same 506 pages twice as often.)
SIGNALS = {"sqlite": (signal.SIGKILL, signal.SIGTERM), "postgresql": (signal.SIGTERM, signal.SIGKILL)}


def test_killed_crawl_resumes_without_loss(project, backend, serve, tmp_path, solr_url) -> None:
    """SIGKILL leaves the run running (its process died), SIGTERM suspends it; either way the next
    crawl resumes it, and the crawl that ends it leaves the full site indexed, each page once,
    having fetched again only what was in flight or not yet recorded at each stop."""
    site, pages = crawl_site(tmp_path, serve)
    name = f"resume-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 3\n')
    resumed: int | None = None  # the run the next crawl must resume
    for signum in SIGNALS[backend]:
        # 50-200 page requests into each crawl: both stops land before the site's 506 pages are done
        kill_at = len(site.requests) + random.Random().randint(50, 200)
        crawl = project.popen(*crawl_args(name))
        wait_for_requests(site, kill_at, crawl)
        crawl.send_signal(signum)
        output, _ = crawl.communicate(timeout=300)
        if resumed is not None:
            assert f"Resuming run {resumed}" in output, output[-3000:]
        run = Runs(project.table().database).latest(name)  # the first crawl made the database
        if signum == signal.SIGTERM:
            assert run["state"] == "suspended", output[-2000:]
        else:
            assert run["state"] == "running", output[-2000:]  # its process died: the next crawl resumes it
        resumed = run["id"]
    result = project.scrapy(*crawl_args(name))
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Resuming run {resumed}" in result.stderr
    assert Runs(project.table().database).latest(name)["state"] == "finished"
    check_complete(project, name, site, pages, solr_url, kills=2)


@pytest.mark.xdist_group("resume-solr")  # one worker starts the Solr it stops and starts
def test_killed_while_solr_is_down(project, backend, serve, tmp_path, resume_solr) -> None:
    site, pages = crawl_site(tmp_path, serve)
    name = f"resume-solr-{uuid.uuid4().hex[:8]}"
    project.solr_url = resume_solr.url
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 3\n')
    # at most 50 requests a second: stopping Solr takes seconds while the crawl goes on (CI once:
    # from about 250 to 420 of 510 requests; once to the site's end, the crawl over before the kill)
    slow = ["-s", "DOWNLOAD_DELAY=0.02", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1"]
    crawl = project.popen(*crawl_args(name), "-s", "SEARCHCRAWL_SOLR_RETRY_BACKOFF=0.2", *slow)
    wait_for_requests(site, random.Random().randint(50, 150), crawl)
    resume_solr.stop()
    wait_for_requests(site, len(site.requests) + 20, crawl)  # crawling with Solr down (+100 outran the site)
    crawl.kill()
    crawl.communicate(timeout=300)
    assert project.table().count_by(name, "state").get("pending", 0) > 0
    resume_solr.start(timeout=600)
    result = project.scrapy(*crawl_args(name))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "left pending by an earlier crawl" in result.stderr
    check_complete(project, name, site, pages, resume_solr.url, kills=1)


def test_status_suspend_stop_and_fresh(project, serve, tmp_path) -> None:
    site, pages = crawl_site(tmp_path, serve)
    name = f"control-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 3\n')
    slow = [*crawl_args(name), "-s", "DOWNLOAD_DELAY=0.05", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1"]
    crawl = project.popen(*slow)
    wait_for_requests(site, 30, crawl)
    second = project.scrapy("crawl", name)  # never two runs of one source at once
    assert "is being crawled by process" in second.stderr and "searchcrawl/pages" not in second.stderr
    suspend = project.scrapy("control", name, "suspend")
    assert suspend.returncode == 0 and "asked to suspend" in suspend.stdout
    output, _ = crawl.communicate(timeout=120)
    assert crawl.returncode == 0, output[-2000:]
    runs = Runs(project.table().database)
    assert runs.latest(name)["state"] == "suspended"
    status = project.scrapy("status", name)
    assert status.returncode == 0
    assert f"== {name}" in status.stdout and "suspended" in status.stdout and "queued" in status.stdout
    assert "waiting for Solr" in status.stdout
    assert project.scrapy("control", name, "stop").stdout.strip().endswith("is stopped")
    fresh = project.scrapy("crawl", name, "-a", "fresh=1", "-s", "CLOSESPIDER_PAGECOUNT=5")
    assert fresh.returncode == 0
    assert f"Starting run {runs.latest(name)['id']}" in fresh.stderr
    assert runs.latest(name)["id"] > 1


@pytest.mark.parametrize("how", ["scrapy control suspend", "SIGTERM"])
def test_suspend_gives_back_what_waits_for_the_sites_delay(project, serve, tmp_path, how: str) -> None:
    """A suspend with a site's delay of 4 s closes the crawl within about the progress interval
    plus what is on the wire: the 15 requests waiting to be sent (for the site's turn, in
    Scrapy's downloader slot for the delay) go back to the queue, where the next crawl finds
    them, instead of being sent one every 4 s (a minute) before the crawl could close. Asked
    through the runs table (the command, the pages) or by a signal (Ctrl-C, SIGTERM)."""
    root = tmp_path / "site"
    root.mkdir()
    pages = [f"p{i}.html" for i in range(30)]
    links = "".join(f'<a href="{page}">{page}</a> ' for page in pages)
    (root / "index.html").write_text(f"<html><head><title>home</title></head><body>{links}</body></html>")
    for page in pages:
        (root / page).write_text(f"<html><head><title>{page}</title></head><body>{page}</body></html>")
    site = serve(root)
    name = f"giveback-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\ndelay = 4\n')
    crawl = project.popen("crawl", name, "-s", "SEARCHCRAWL_PROGRESS_INTERVAL=0.5", "-s", "CONCURRENT_REQUESTS=16")
    try:
        # robots.txt, the not-found probe, the index, the first of its links: 15 more wait
        wait_for_requests(site, 4, crawl)
        asked = len(site.requests)
        if how == "SIGTERM":
            crawl.send_signal(signal.SIGTERM)
        else:
            assert project.scrapy("control", name, "suspend").returncode == 0
        # 15 requests at 4 s each would take a minute; a bounded wait, well under it
        output, _ = crawl.communicate(timeout=30)
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.communicate()
    assert crawl.returncode == 0, output[-3000:]
    assert "requests not yet sent go back to the queue" in output, output[-3000:]
    assert len(site.requests) <= asked + 1, site.paths()  # at most the one on the wire at the suspend
    database = project.table().database
    run = Runs(database).latest(name)
    assert run["state"] == "suspended"
    counts = Frontier(database, name, run["id"], "test").counts()
    fetched = {path for path in site.paths() if path != "/robots.txt" and not not_found_probe(path)}
    # the pages not fetched are queued again, none left leased: the next crawl fetches them
    assert counts[FrontierState.LEASED] == 0, counts
    assert counts[FrontierState.QUEUED] == len(pages) + 1 - len(fetched), (counts, sorted(fetched))
    resumed = project.scrapy("crawl", name, "-s", "DOWNLOAD_DELAY=0")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"Resuming run {run['id']}" in resumed.stderr
    asked = {path for path in site.paths() if path != "/robots.txt" and not not_found_probe(path)}
    assert asked == {"/index.html", *(f"/{page}" for page in pages)}
