"""Several processes on one machine crawl one source (source key ``processes``), over the SQLite
document table: each URL fetched once, the index complete, per-site politeness for the whole
crawl, and a SIGKILL of the crawl losing nothing (the next crawl resumes its run)."""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

from searchcrawl.store.runs import Runs
from searchcrawl.system.processes import process_alive
from tests.conftest import InFlight, Project, Site, assert_spaced, children, wait_for
from tests.e2e.test_scale_out import fetched, solr_ids
from tests.sites import build_intranet

pytestmark = pytest.mark.slow


def test_two_processes_crawl_one_source_over_sqlite(project: Project, serve, tmp_path, solr_url: str) -> None:
    site, pages = intranet(project, serve, tmp_path, "twoprocs")
    result = project.scrapy("crawl", "twoprocs", "-s", "SEARCHCRAWL_PROGRESS_INTERVAL=1")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-3000:]

    started = re.search(r"Started 1 more crawler processes for this source: \[(\d+)\]", log)
    assert started, log[-3000:]
    assert started.start() < log.index("Spider opened")  # forked as the crawl starts, beside the first
    assert "Joining run" in log  # the second process joined the first one's run
    assert len(re.findall(r"'response_received_count': [1-9]", log)) == 2  # both fetched pages
    counts = fetched(site)
    assert set(counts) == {"/" + path for path in pages}
    assert max(counts.values()) == 1, {path: n for path, n in counts.items() if n > 1}  # each page once
    ids = solr_ids(solr_url, "twoprocs")
    assert len(ids) == len(set(ids)) == len(pages)
    table = project.table()
    assert table.count_by("twoprocs", "state") == {"indexed": len(pages)}
    assert Runs(table.database).latest("twoprocs")["state"] == "finished"


def test_sixteen_processes_on_two_cores_fetch_each_url_once(project: Project, serve, tmp_path, solr_url: str) -> None:
    """``processes = "auto"`` on a 16-core server, here on 2: the processes come up together, slowly,
    and join the run one after another while the first ones lease. A joining process took back
    the leases of every node but those live when it joined (read in a transaction of its own),
    so a process that joined just before it lost its first leases: the section pages were
    fetched two and three times (one run in two failed)."""
    root = tmp_path / "site"
    root.mkdir()
    pages = build_intranet(root, sections=10, per_section=60)
    site = serve(root)
    project.source("sixteen", f'seeds = ["{site.url}index.html"]\nprocesses = 16\nconcurrent_per_site = 16\n')
    result = project.scrapy("crawl", "sixteen", "-s", "CONCURRENT_REQUESTS=32")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-3000:]
    assert "Started 15 more crawler processes" in log
    assert re.findall(r"\((\d+) were in flight\)", log) == ["0"] * log.count("Joining run"), log[-3000:]
    counts = fetched(site)
    assert set(counts) == {"/" + path for path in pages}
    assert max(counts.values()) == 1, {path: n for path, n in counts.items() if n > 1}  # each page once
    ids = solr_ids(solr_url, "sixteen")
    assert len(ids) == len(set(ids)) == len(pages)
    assert project.table().count_by("sixteen", "state") == {"indexed": len(pages)}


def test_politeness_holds_for_the_processes_together(project: Project, serve, tmp_path) -> None:
    root = tmp_path / "site"
    root.mkdir()
    build_intranet(root, sections=3, per_section=5)  # 34 pages
    delay = 0.3
    site = serve(root)
    project.source("politeprocs", f'seeds = ["{site.url}index.html"]\nprocesses = 2\ndelay = {delay}\n')
    result = project.scrapy("crawl", "politeprocs")
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert len(site.arrivals) >= 34
    assert_spaced(site.arrivals, delay)

    # no delay: each process takes its share of the per-site limit, and the site sees the limit.
    # 127 pages of 0.2 s: 13 s for the first process alone, so that the second comes up in time
    # even on a loaded machine (it starts once the first has opened the run)
    larger = tmp_path / "larger"
    larger.mkdir()
    build_intranet(larger, sections=6, per_section=20)
    in_flight = InFlight(reach=4)  # answers held until 4 came together: both processes' shares overlap
    slow = serve(larger, in_flight=in_flight, slow=0.2)
    project.source("concprocs", f'seeds = ["{slow.url}index.html"]\nprocesses = 2\nconcurrent_per_site = 4\n')
    result = project.scrapy("crawl", "concprocs", "-s", "CONCURRENT_REQUESTS=8")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-3000:]
    assert "Shared crawl of 2 local processes: at most 2 requests at once to a site from each (4 in all)" in log
    assert len(fetched(slow)) >= 127
    assert in_flight.max_per_host <= 4, in_flight.max_per_host  # never past the limit
    assert in_flight.max_per_host == 4, (in_flight.max_per_host, in_flight.alone)  # and the limit used
    assert len(re.findall(r"'response_received_count': [1-9]", log)) == 2  # both fetched pages


def test_a_crawl_of_two_processes_killed_with_sigkill_loses_nothing(project: Project, serve, tmp_path, solr_url: str) -> None:
    # 411 pages: the site's delay (50 requests a second at most, fleet-wide, however fast the
    # machine) makes the kill land after 150 of them with 250 still to fetch (811 pages before)
    site, pages = intranet(project, serve, tmp_path, "killprocs", "delay = 0.02\n", per_section=20)
    # outcomes written 8 at a time (100 by default: as many as 0.5 s brings), so that the bound below holds
    crawl = project.popen("crawl", "killprocs", "-s", "CONCURRENT_REQUESTS=4", "-s", "SEARCHCRAWL_OUTCOME_BATCH=8")
    wait_for(lambda: len(site.requests) > 150, timeout=300, what="the crawl to get going")
    others = children(crawl.pid)
    assert len(others) == 1, others
    crawl.send_signal(signal.SIGKILL)
    crawl.communicate(timeout=60)
    # the other process learns that the crawl died (SIGTERM from the kernel) and leaves the run
    wait_for(lambda: not any(process_alive(pid) for pid in others), timeout=120, what="the other process to end")
    before = len(site.requests)
    assert before < len(pages), "the crawl ended before the kill"

    again = project.scrapy("crawl", "killprocs")
    log = again.stdout + again.stderr
    assert again.returncode == 0, log[-3000:]
    assert "Resuming run" in log  # nothing works on the run: the next crawl resumes it at once
    counts = fetched(site)
    assert set(counts) == {"/" + path for path in pages}
    twice = {path: n for path, n in counts.items() if n > 1}
    # at most what each of the two processes held at the kill: its lease buffer (twice
    # CONCURRENT_REQUESTS), its requests in flight and one batch of outcomes not yet written (their
    # URLs stay leased: fetched again, never lost). CI saw 34 against the bound of 32 this test kept
    # from before outcomes were batched, with the default batch of 100.
    assert len(twice) <= 2 * (8 + 4 + 8), twice
    ids = solr_ids(solr_url, "killprocs")
    assert len(ids) == len(set(ids)) == len(pages)
    table = project.table()
    assert table.count_by("killprocs", "state") == {"indexed": len(pages)}
    assert Runs(table.database).latest("killprocs")["state"] == "finished"


def intranet(project: Project, serve, tmp_path, name: str, extra: str = "", per_section: int = 40) -> tuple[Site, list[str]]:
    """An intranet of 811 pages (``per_section`` 40; 20: 411), served, and a source of two processes for it."""
    root = tmp_path / "site"
    root.mkdir()
    pages = build_intranet(root, sections=10, per_section=per_section)
    site = serve(root)
    project.source(name, f'seeds = ["{site.url}index.html"]\nprocesses = 2\n{extra}')
    return site, pages


def test_a_process_killed_with_sigkill_has_its_urls_taken_back_by_the_others(
    project: Project, serve, tmp_path, solr_url: str
) -> None:
    # 411 pages (811 before): the site's delay (50 requests a second at most) makes the kill land
    # after 150 of them with 250 still to fetch, however fast the machine
    site, pages = intranet(project, serve, tmp_path, "killone", "delay = 0.02\n", per_section=20)
    started = time.monotonic()
    # outcomes written 8 at a time (issue 74's batches; 100 by default), so that the bound below is tight
    crawl = project.popen("crawl", "killone", "-s", "CONCURRENT_REQUESTS=4", "-s", "SEARCHCRAWL_OUTCOME_BATCH=8")
    wait_for(lambda: len(site.requests) > 150, timeout=300, what="the crawl to get going")
    (other,) = children(crawl.pid)
    os.kill(other, signal.SIGKILL)
    log, _ = crawl.communicate(timeout=600)
    assert crawl.returncode == 0, log[-3000:]  # the crawl went on and ended; nothing was lost
    assert f"Crawler process {other} was killed by signal 9" in log
    assert "Took back" in log and "whose process is gone" in log
    assert time.monotonic() - started < 300  # not a lease time (600 s) later
    counts = fetched(site)
    assert set(counts) == {"/" + path for path in pages}
    twice = {path: n for path, n in counts.items() if n > 1}
    # at most what the killed process had leased: its buffer (twice CONCURRENT_REQUESTS), what it
    # had in flight, and the pages fetched whose outcomes were not yet written (one batch: a kill
    # loses none of them, they are fetched again). CI once saw 17 against the bound of 16 that
    # this test kept from before outcomes were batched.
    assert len(twice) <= 8 + 4 + 8, twice
    ids = solr_ids(solr_url, "killone")
    assert len(ids) == len(set(ids)) == len(pages)
    table = project.table()
    assert table.count_by("killone", "state") == {"indexed": len(pages)}
    assert Runs(table.database).latest("killone")["state"] == "finished"
