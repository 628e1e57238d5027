"""End-to-end crawls for: Schedules and politeness: due-time logic (interval, cron, missed runs, no overlap), the (the components alone: tests.ops.test_schedules)."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchcrawl.store.runs import Runs
from tests.conftest import solr_docs, wait_for
from tests.ops.test_schedules import serve_three_sites  # noqa: F401 - helpers and fixtures
from tests.sites import build_intranet


@pytest.mark.parametrize("limit", [None, 1])
def test_sites_at_once(project, serve, tmp_path: Path, solr, limit: int | None) -> None:
    sites = serve_three_sites(tmp_path, serve)
    seeds = ", ".join(f'"{site.url}index.html"' for site in sites)
    project.source("three", f"seeds = [{seeds}]\n" + (f"concurrent_sites = {limit}\n" if limit else ""))
    crawl = project.scrapy("crawl", "three")
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    tracker = sites[0].in_flight
    assert all(len(site.requests) >= 10 for site in sites)  # every site crawled
    if limit:
        assert tracker.max_hosts == 1
    else:
        assert tracker.max_hosts > 1  # the measurement sees overlap when nothing limits it


def test_per_source_log_file_level_and_delay_rules(project, serve, tmp_path: Path, solr) -> None:
    (tmp_path / "site").mkdir()
    build_intranet(tmp_path / "site", sections=1, per_section=3)
    site = serve(tmp_path / "site")
    log_file = tmp_path / "logs" / "polite.log"
    log_file.parent.mkdir()
    project.source(
        "polite",
        "\n".join(
            [
                f'seeds = ["{site.url}index.html"]',
                f'log_file = "{log_file}"',
                'log_level = "INFO"',
                "autothrottle = true",
                "[[delay_rules]]",
                "delay = 0.2",  # every day, all day
            ]
        ),
    )
    crawl = project.scrapy("crawl", "polite")
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    log = log_file.read_text()
    assert "Delay between requests to one site is now 0.20 s (delay_rules, AutoThrottle floor)" in log
    assert "Spider closed (finished)" in log and "DEBUG" not in log


def test_scheduler_starts_a_local_crawl_without_scrapyd(project, serve, tmp_path: Path, solr) -> None:
    (tmp_path / "site").mkdir()
    pages = build_intranet(tmp_path / "site", sections=1, per_section=2)
    site = serve(tmp_path / "site")
    project.source("local", f'seeds = ["{site.url}index.html"]\nrefresh_interval = "1d"\n')
    # --list only reads: before anything ran, it makes no database (it used to migrate one)
    listing = project.scrapy("scheduler", "--list", SEARCHCRAWL_SCRAPYD_URL="")
    assert listing.returncode == 0 and "local: every 1 day, 0:00:00; never started" in listing.stdout, listing.stdout
    assert not (project.data_dir / "documents.sqlite3").exists()
    result = project.scrapy("scheduler", "--once", SEARCHCRAWL_SCRAPYD_URL="")
    assert result.returncode == 0 and "Schedule of local (every 1 day, 0:00:00): started crawl" in result.stderr, result.stderr
    table = project.table()
    wait_for(lambda: (Runs(table.database).latest("local") or {}).get("state") == "finished", what="the local crawl")
    assert {doc["url"] for doc in solr_docs(solr, "local")} == {site.url + path for path in pages}
    logs = list((project.data_dir / "logs" / "local").glob("*.log"))
    assert logs
    # the run is marked finished a moment before Scrapy logs its last line
    wait_for(lambda: "Spider closed (finished)" in logs[0].read_text(), timeout=30, what="the crawl's last log line")
    table.database.close()
