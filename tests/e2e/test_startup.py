"""End-to-end: what a crawl of a one-page source loads and starts, in a fresh `python -m scrapy
crawl` process each (not the test fork server, which has imported everything already).

Speed is measured by tests/benchmarks/startup.py, never asserted; these check the mechanisms
that make a small crawl cheap: nothing imported or started that the source does not need."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

from searchcrawl.store.database import create_db_engine, upgrade_schema
from tests.conftest import ROOT

# `python -m scrapy ...`, reporting at exit (after Scrapy's sys.exit) the modules it imported,
# whether the startup objects were frozen out of the garbage collector's passes, and its children
CRAWL = """
import atexit, gc, json, multiprocessing, runpy, sys
path = sys.argv[1]
def report():
    with open(path, "w") as out:
        json.dump({"modules": sorted(sys.modules), "frozen": gc.get_freeze_count(), "collecting": gc.isenabled(),
                   "children": len(multiprocessing.active_children())}, out)
atexit.register(report)
sys.argv = ["scrapy", *sys.argv[2:]]
runpy.run_module("scrapy", run_name="__main__", alter_sys=True)
"""
PAGE = (
    "<html><head><title>One page</title></head><body><p>The only page of a small source, long enough "
    "for its language to be detected: nothing declares it.</p></body></html>"
)


def crawl(project, tmp_path, name: str) -> dict:
    report = tmp_path / f"report-{uuid.uuid4().hex[:6]}.json"
    command = [sys.executable, "-c", CRAWL, str(report), "crawl", name]
    result = subprocess.run(command, cwd=ROOT, env=project.env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(report.read_text())
    found["modules"] = set(found["modules"])
    return found


def loaded(modules: set[str], *packages: str) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def test_a_one_page_crawl_loads_only_what_the_source_needs(project, serve, tmp_path, solr) -> None:
    site = tmp_path / "site"
    (site / "plain").mkdir(parents=True)
    (site / "plain" / "index.html").write_text(PAGE, encoding="utf-8")
    server = serve(site)  # /plain/: no validators, answered 200 every time: parsed, its checksum compared
    url = f"{server.url}plain/index.html"
    name = f"onepage-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{url}"]\n')

    # the document table of an older searchcrawl (revision 0009): the first crawl migrates it
    project.data_dir.mkdir(parents=True)
    engine = create_db_engine(f"sqlite:///{project.data_dir / 'documents.sqlite3'}")
    upgrade_schema(engine, "0009")
    engine.dispose()

    first = crawl(project, tmp_path, name)
    # an outdated schema: Alembic's migrations bring it up to date; the page's language is detected
    assert loaded(first["modules"], "alembic") and loaded(first["modules"], "py3langid")
    again = crawl(project, tmp_path, name)
    # the schema is current: Alembic is not loaded; the page is unchanged: no language model
    assert loaded(again["modules"], "alembic", "py3langid", "numpy") == []
    for run in (first, again):
        # a source that renders no page loads no browser machinery
        assert loaded(run["modules"], "playwright", "scrapy_playwright.handler") == []
        # Scrapy's remote control is off: neither it nor aiohttp's server is imported
        assert loaded(run["modules"], "aiohttp", "scrapy.extensions.remote_control") == []
        # no message is shown: Babel is not imported (the status codes only mark theirs, N_)
        assert loaded(run["modules"], "babel") == []
        # no cron schedule: no croniter (its import runs a process)
        assert loaded(run["modules"], "croniter") == []
        # no directory of searchers: no LDAP client, though Scrapy imports the search, web and
        # explain-access commands' modules on every command (ldap3 and pyasn1: 0.1 s of CPU)
        assert loaded(run["modules"], "ldap3", "pyasn1", "searchcrawl.access.ldap_directory") == []
        # an HTML page needs no converter: no worker process was ever started
        assert loaded(run["modules"], "multiprocessing.popen_spawn_posix") == [] and run["children"] == 0
        # the startup objects were kept out of the garbage collector's passes, and the collector,
        # off while they were made, collects again (a long crawl must not grow without it)
        assert run["frozen"] > 10_000 and run["collecting"] is True
    # a new document table (SQLite): made from the models, no Alembic either
    other = tmp_path / "other-data"
    result = subprocess.run(
        [sys.executable, "-c", CRAWL, str(tmp_path / "new.json"), "crawl", name],
        cwd=ROOT,
        env=project.env(SEARCHCRAWL_DATA_DIR=str(other)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    new = json.loads((tmp_path / "new.json").read_text())
    assert loaded(set(new["modules"]), "alembic") == [] and (other / "documents.sqlite3").exists()
    docs = solr.search(f'source:"{name}"').docs
    assert [(doc["url"], doc["language"]) for doc in docs] == [(url, "en")]
    assert [path for _method, _host, path in server.requests].count("/plain/index.html") == 3
