"""A smoke run of the crawl benchmark (tests/benchmarks/crawl.py) with a tiny site: every phase
runs, and the results are written as JSON, Markdown and a PNG plot. The real runs are not tests.

A smoke run proves that a benchmark works and reports what it claims, not its figures: nginx's
capacity is measured for 1 s of wrk instead of 3 (2 s less of wrk and nginx on both cores), and the profiled phase
samples 50 times a second instead of 250: py-spy's own CPU grows with its rate (9.4 s for a 17.7 s
profiled crawl of the Sphinx site at 250 a second, 1.9 s for a 34 s one at 50, at a load of 10-13),
and each stage asserted still gets more than ten samples (HTML parsing, the fewest: about 16 on an
idle machine, 0.49 ms a page sampled in tests/benchmarks/README.md, more under load)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, pg_bin


def test_benchmark_smoke_run(tmp_path, solr_url) -> None:
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed (deploy/bootstrap.sh installs nginx-light)")
    out = tmp_path / "results"
    result = subprocess.run(
        [sys.executable, "-m", "tests.benchmarks.crawl", "--pages", "60", "--capacity-seconds", "1"]
        + ["--out", str(out), "--solr-url", solr_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((out / "results.json").read_text())
    run = report["runs"][0]
    documents = run["documents"]  # 60 pages and one PDF
    assert documents == 61
    for phase in ("a", "b", "c", "d"):
        assert run[phase]["requests"] >= documents  # every page fetched (and robots.txt)
        assert run[phase]["pages_per_s"] > 0 and run[phase]["peak_rss_mb"] > 0
    assert run["b"]["solr_updates"] == documents  # each document indexed once
    assert run["c"]["solr_updates"] == run["c"]["anchor_updates"] == 0  # the unchanged site: nothing re-indexed
    assert run["d"]["solr_updates"] == run["changed_pages"] == 3  # 5% of 60 pages
    assert run["e"]["documents"] == 60 and run["e"]["docs_per_s"] > 0
    passes = run["e"]["passes"]  # warm-up passes first, then the measured ones (their median counts)
    assert [each["warm_up"] for each in passes] == [True] * 5 + [False] * 3
    assert run["e"]["solr_updates"] == 8 * 60  # new documents, each once
    assert set(run["targets"]) >= {"b/a", "c/b", "push_docs_per_s", "c_solr_updates"}
    assert "| 60 | b: searchcrawl, full pipeline |" in (out / "results.md").read_text()
    assert (out / "pages_per_second.png").read_bytes()[:4] == b"\x89PNG"


def test_benchmark_smoke_run_on_the_real_sphinx_site(tmp_path, solr_url) -> None:
    """--site sphinx (the shared corpora's Scipy Lecture Notes, 255 HTML pages): the bare spider
    and the crawler fetch the same URLs, maintenance crawls re-index only changed pages, and the
    profiled full pipeline gives CPU per page by stage."""
    from tests.benchmarks.real_sites import corpus_missing

    missing = corpus_missing("sphinx")
    if missing:
        pytest.skip(f"the real Sphinx site is not here: {missing}")
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed (deploy/bootstrap.sh installs nginx-light)")
    if not Path(sys.executable).with_name("py-spy").exists():
        pytest.skip("py-spy is not installed (the bench extra: pip install py-spy)")
    out = tmp_path / "results"
    result = subprocess.run(
        [sys.executable, "-m", "tests.benchmarks.crawl", "--site", "sphinx", "--phases", "abcd", "--profile"]
        + ["--profile-rate", "50", "--capacity-seconds", "1", "--out", str(out), "--solr-url", solr_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    run = json.loads((out / "results.json").read_text())["runs"][0]
    assert run["site"] == "sphinx" and run["pages"] == 255
    # the same URLs: robots.txt, the 233 pages the seed reaches, their .txt sources, notebooks ...
    # counted once each: bare Scrapy fetches its start URL twice (start requests skip its
    # dupefilter), and on a loaded machine retries a request whose connection dropped (CI once
    # saw 670 requests against the crawler's 653)
    assert run["b"]["urls"] > 600 and run["a"]["urls"] == run["b"]["urls"]
    assert run["b"]["statuses"] == run["p"]["statuses"]
    # the pages and downloads; the _sources copies of the pages are kept out (navigation_pages, 917).
    # Counted apart from the anchor fields set in place, as many as pages were pushed before a page
    # linking to them (CI saw 254 and 267 Solr adds in all for the same crawl): the order's
    assert run["b"]["solr_updates"] == run["p"]["solr_updates"] > 200
    assert run["b"]["anchor_updates"] >= 0 and run["p"]["anchor_updates"] >= 0
    # the indexed pages answer 304; the _sources copies, kept out, are fetched whole (their links: none);
    # no anchor changed: no field is set in place either
    assert run["c"]["solr_updates"] == run["c"]["anchor_updates"] == 0 and run["c"]["statuses"]["304"] > 200
    assert 0 < run["d"]["solr_updates"] <= run["changed_pages"] == 13  # 5% of 255 (a changed orphan is not fetched)
    assert run["p"]["stages"]["rate"] == 50
    stages = run["p"]["stages"]["cpu_ms_per_page"]
    assert stages["total"] == run["b"]["cpu_s_per_1000_pages"]
    assert {"HTML parsing", "link extraction", "text/attribute extraction", "document table (SQLAlchemy/SQLite)"} <= set(stages)
    text = (out / "results.md").read_text()
    assert "| sphinx (255 HTML) | b: searchcrawl, full pipeline |" in text and "(50 samples/s, busy threads only" in text


def test_jvm_cpu_reads_solr_and_its_jit_compilers(dev_solr) -> None:
    """Phase e reports Solr's CPU per document and its JIT compilers' share, read from /proc."""
    from tests.benchmarks.measure import jvm_cpu

    measured = jvm_cpu(dev_solr.status()["pid"])
    assert measured.seconds > 0
    assert 0 < measured.compiler_seconds < measured.seconds  # started Solr has compiled its hot code


def test_startup_benchmark_splits_each_crawls_cpu_at_scrapys_signals(solr_url) -> None:
    """The startup benchmark with --marks: bare Scrapy, a first and a repeated crawl of a one-page
    source, each with its CPU from one of Scrapy's signals to the next; the stretches add up to
    the process's CPU counted from outside, and only the first crawl scrapes an item (the
    repeated one finds the page unchanged, bare Scrapy scrapes none)."""
    result = subprocess.run(
        [sys.executable, "-m", "tests.benchmarks.startup", "--runs", "1", "--marks", "--solr-url", solr_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    marks = json.loads(result.stderr[result.stderr.index("{") :])["marks"]
    assert list(marks) == ["bare", "first", "repeated"]
    for kind, stretches in marks.items():
        assert {"Scrapy imported", "spider_opened", "response_received", "spider_closed", "exit (atexit)"} <= set(stretches)
        assert ("item_scraped" in stretches) == (kind == "first")
        counted = sum(cpu for name, cpu in stretches.items() if name != "total")
        assert counted == pytest.approx(stretches["total"], abs=0.01)
        assert 0 < stretches["Scrapy imported"] < stretches["total"]
    assert "| item_scraped | n/a | " in result.stdout and "| tear-down (after atexit) |" in result.stdout


def test_scale_benchmark_smoke_run(tmp_path, solr_url) -> None:
    """The scale benchmark (tests/benchmarks/scale.py, issue 58) with a tiny site read from its
    sitemap index: the first crawl indexes every page, the maintenance crawl of the unchanged
    site requests no page and sends Solr nothing, and after 1% changed exactly those are
    re-indexed; the figures of each phase and the targets' verdicts are written."""
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed (deploy/bootstrap.sh installs nginx-light)")
    out = tmp_path / "results"
    command = [sys.executable, "-m", "tests.benchmarks.scale", "--out", str(out), "--solr-url", solr_url]
    result = subprocess.run([*command, "--pages", "200"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    run = json.loads((out / "results.json").read_text())["runs"][0]
    b, c, d = run["b"], run["c"], run["d"]
    assert run["pages"] == 200 and b["solr_updates"] == 200 and b["delta"]["new"] == 200
    # robots.txt, the sitemap index, one sitemap and the not-found probe; then no page
    assert c["requests"] <= 4 and c["solr_updates"] == 0 and c["delta"]["unchanged"] == 200
    assert run["changed_pages"] == 2 and d["solr_updates"] == 2 and d["reindexed"]["exactly_those"]
    for phase in (b, c, d):
        assert phase["peak_rss_mb"] > 0 and phase["document_table_mb"] > 0 and phase["cpu_ms_per_url"] > 0
        assert {"opened", "run started", "sitemaps read", "closed"} <= set(phase["milestones_s"])
        assert 0 < phase["start_s"] < phase["seconds"]
    assert "| 200 | sqlite | 1 | c: maintenance, unchanged (sitemap lastmod) |" in (out / "results.md").read_text()
    # a second size measured in a command of its own joins the first one's results
    result = subprocess.run([*command, "--pages", "100", "--phases", "b"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((out / "results.json").read_text())
    assert [run["pages"] for run in report["runs"]] == [100, 200]
    assert any(each["what"].startswith("CPU per page") and each["pages"] == 200 for each in report["targets"])
    # one process beside a busy core (what two processes' machine is like) is kept apart
    result = subprocess.run(
        [*command, "--pages", "100", "--phases", "b", "--busy-core"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((out / "results.json").read_text())
    assert [(run["pages"], run["busy_core"]) for run in report["runs"]] == [(100, False), (100, True), (200, False)]
    assert report["runs"][1]["b"]["solr_updates"] == 100
    assert "| 100 | sqlite, a core busy | 1 | b: first crawl, full pipeline |" in (out / "results.md").read_text()


def test_scale_benchmark_on_postgresql_with_two_processes(tmp_path, solr_url) -> None:
    """The scale benchmark with the document table on a PostgreSQL cluster of its own and two
    crawler processes (issue 58, points 3 and 4): the same outcomes as on SQLite; each phase
    counts the statements (pg_stat_statements) and the sequential scans of the documents and
    frontier tables; the run is kept apart from a SQLite run of the same N, and two processes
    are compared with one."""
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed (deploy/bootstrap.sh installs nginx-light)")
    if pg_bin("initdb") is None or pg_bin("pg_ctl") is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    out = tmp_path / "results"
    command = [sys.executable, "-m", "tests.benchmarks.scale", "--out", str(out), "--solr-url", solr_url, "--pages", "200"]
    for setup in (["--database", "postgresql", "--processes", "2"], ["--database", "postgresql", "--phases", "b"]):
        result = subprocess.run([*command, *setup], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((out / "results.json").read_text())
    assert [(run["database"], run["processes"]) for run in report["runs"]] == [("postgresql", 1), ("postgresql", 2)]
    run = report["runs"][1]
    b, c, d = run["b"], run["c"], run["d"]
    assert b["solr_updates"] == 200 and b["delta"]["new"] == 200
    assert c["solr_updates"] == 0 and c["delta"]["unchanged"] == 200
    assert run["changed_pages"] == 2 and d["solr_updates"] == 2 and d["reindexed"]["exactly_those"]
    for phase in (b, c, d):
        stats = phase["postgresql"]
        assert stats["statements_per_page"] > 0 and stats["top_by_calls"] and stats["top_by_time"]
        assert set(stats["seq_scans"]) == {"documents", "frontier"} and stats["seq_rows_read_per_page"] >= 0
        assert {"calls", "rows_per_call", "total_ms"} <= set(stats["top_by_calls"][0])
        assert phase["server_cpu_s"]["postgresql"] > 0 and phase["document_table_mb"] > 0
    assert b["postgresql"]["tables"]["documents"]["n_tup_ins"] >= 200
    text = (out / "results.md").read_text()
    assert "| 200 | postgresql | 2 | b: first crawl, full pipeline |" in text and "statements / URL" in text
    assert any(each["what"] == "CPU per page (b), 2 processes / 1" for each in report["targets"])
