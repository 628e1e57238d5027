"""Operations against a real scrapyd on 127.0.0.1: deploying the project's egg with
deploy/deploy.sh (scrapyd-deploy), jobs that crawl into Solr, suspend and resume mapped onto jobs
and runs, and `scrapy scheduler` starting due sources through scrapyd's API."""

from __future__ import annotations

import configparser
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from searchcrawl.store.runs import Runs
from tests.conftest import ROOT, InFlight, Project, free_port, solr_docs, wait_for
from tests.e2e.test_rendering import indexed_text, quotes_site, quotes_source  # noqa: F401,F811 - quotes_site is a fixture
from tests.sites import build_intranet

# one group: the tests deploy from the same checkout, and each checks that no build output is left
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("scrapyd")]


class Scrapyd:
    def __init__(self, workdir: Path, project: Project) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = configparser.ConfigParser()
        config.read(ROOT / "deploy" / "scrapyd.conf")  # the shipped configuration, with test places
        config["scrapyd"].update(
            http_port=str(self.port),
            eggs_dir=str(workdir / "eggs"),
            dbs_dir=str(workdir / "dbs"),
            logs_dir=str(workdir / "logs"),
            poll_interval="0.5",
        )
        with open(workdir / "scrapyd.conf", "w") as handle:
            config.write(handle)
        env = project.env()
        env.pop("PYTHONPATH")  # jobs must run the deployed egg's code and sources
        self.log = open(workdir / "scrapyd.out", "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [str(Path(sys.executable).parent / "scrapyd")],
            cwd=workdir,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{self.url}/daemonstatus.json", timeout=2).ok:
                    break
            except requests.ConnectionError:
                pass
            assert self.process.poll() is None, (workdir / "scrapyd.out").read_text()
            assert time.monotonic() < deadline, "scrapyd did not start"
            time.sleep(0.2)

    def get(self, endpoint: str, **params: str) -> dict:
        return requests.get(f"{self.url}/{endpoint}", params={"project": "searchcrawl", **params}, timeout=60).json()

    def post(self, endpoint: str, **data: str) -> dict:
        return requests.post(f"{self.url}/{endpoint}", data={"project": "searchcrawl", **data}, timeout=60).json()

    def job(self, job_id: str) -> tuple[str, dict]:
        jobs = self.get("listjobs.json")
        for state in ("pending", "running", "finished"):
            for job in jobs[state]:
                if job["id"] == job_id:
                    return state, job
        raise AssertionError(f"job {job_id} unknown to scrapyd: {jobs}")

    def wait_finished(self, job_id: str, timeout: float = 180) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state, job = self.job(job_id)
            if state == "finished":
                return job
            time.sleep(0.5)
        raise AssertionError(f"job {job_id} did not finish in {timeout}s")

    def job_log(self, job: dict) -> str:
        return (self.workdir / "logs" / "searchcrawl" / job["spider"] / f"{job['id']}.log").read_text()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(60)
        self.log.close()


@pytest.fixture(scope="module")
def ops_project(tmp_path_factory: pytest.TempPathFactory, solr_url: str) -> Project:
    base = tmp_path_factory.mktemp("ops")
    (base / "sources").mkdir()
    (base / "data").mkdir()
    return Project(base / "data", base / "sources", solr_url)


@pytest.fixture(scope="module")
def scrapyd(tmp_path_factory: pytest.TempPathFactory, ops_project: Project) -> Iterator[Scrapyd]:
    server = Scrapyd(tmp_path_factory.mktemp("scrapyd"), ops_project)
    yield server
    server.stop()


def deploy(server: Scrapyd) -> subprocess.CompletedProcess[str]:
    """deploy/deploy.sh, as an operator runs it, against the test's scrapyd."""
    env = dict(os.environ, SEARCHCRAWL_SCRAPYD_URL=server.url)
    result = subprocess.run(
        ["bash", "deploy/deploy.sh", "--version", "1"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (ROOT / "setup.py").exists() and not (ROOT / "build").exists(), "deploy.sh left build output"
    return result


def test_concurrent_deploys_take_turns(tmp_path: Path) -> None:
    """Two operators (or two CI jobs) deploying from one checkout at once: each deploy's cleanup
    removed the setup.py the other's bdist_egg was reading, and one failed with exit status 2."""
    eggs = [tmp_path / f"{n}.egg" for n in range(3)]
    runs = []
    for egg in eggs:  # staggered: each starts while the one before is building
        command = ["bash", "deploy/deploy.sh", "--build-egg", str(egg)]
        runs.append(subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        time.sleep(0.4)
    for run in runs:
        output, _ = run.communicate(timeout=300)
        assert run.returncode == 0, output
    assert all(egg.stat().st_size > 0 for egg in eggs)
    assert not (ROOT / "setup.py").exists() and not (ROOT / "build").exists(), "deploy.sh left build output"


def test_deploy_schedule_suspend_resume(scrapyd: Scrapyd, ops_project: Project, serve, solr) -> None:
    site_root = ops_project.data_dir.parent / "site-a"
    site_root.mkdir()
    pages = build_intranet(site_root, sections=6, per_section=6)
    site = serve(site_root)
    # polite: one request at a time, 0.1 s apart, so that the crawl is still running when suspended
    ops_project.source("opsa", f'seeds = ["{site.url}index.html"]\ndelay = 0.1\nconcurrent_per_site = 1\n')
    deploy(scrapyd)
    assert "searchcrawl" in scrapyd.get("listprojects.json")["projects"]
    spiders = scrapyd.get("listspiders.json")["spiders"]
    assert "example" in spiders, "the egg carries the packaged sources"
    assert "opsa" in spiders, "sources from SEARCHCRAWL_SOURCES_DIR work on the server"

    # 1. a job, suspended through the runs table (`scrapy control opsa suspend`)
    job1 = scrapyd.post("schedule.json", spider="opsa", setting="SEARCHCRAWL_PROGRESS_INTERVAL=0.5")["jobid"]
    table = ops_project.table()
    runs = Runs(table.database)
    wait_for(lambda: len(site.requests) >= 10, what="the first job to fetch pages")
    control = ops_project.scrapy("control", "opsa", "suspend")
    assert control.returncode == 0, control.stdout + control.stderr
    finished = scrapyd.wait_finished(job1)
    run = runs.latest("opsa")
    assert run["state"] == "suspended", scrapyd.job_log(finished)[-3000:]
    assert run["job"] == job1

    # 2. resumed as a new scrapyd job (`scrapy control opsa resume`), then cancelled in scrapyd
    #    (SIGINT), which suspends the run again
    resumed = ops_project.scrapy("control", "opsa", "resume", SEARCHCRAWL_SCRAPYD_URL=scrapyd.url)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    job2 = resumed.stdout.strip().rsplit(" ", 1)[-1]
    wait_for(
        lambda: scrapyd.job(job2)[0] == "running" and (runs.latest("opsa") or {}).get("job") == job2,
        what="the resumed job to run",
    )
    fetched = len(site.requests)
    wait_for(lambda: len(site.requests) >= fetched + 5, what="the resumed job to fetch")
    assert scrapyd.post("cancel.json", job=job2)["status"] == "ok"
    scrapyd.wait_finished(job2)
    run = runs.latest("opsa")
    assert run["state"] == "suspended" and run["sessions"] == 2

    # 3. scheduled again: the same run resumes and finishes; every page once in Solr
    job3 = scrapyd.post("schedule.json", spider="opsa")["jobid"]
    log = scrapyd.job_log(scrapyd.wait_finished(job3))
    run = runs.latest("opsa")
    assert run["state"] == "finished" and run["sessions"] == 3, log[-3000:]
    docs = solr_docs(solr, "opsa")
    assert sorted(doc["url"] for doc in docs) == sorted(site.url + path for path in pages)
    gets = [path for method, _host, path in site.requests if method == "GET" and path != "/robots.txt"]
    # each page fetched once, except the few in flight at each suspension (fetched again)
    assert len(gets) - len(set(gets)) <= 2 * 16
    table.database.close()


def test_scheduler_starts_due_sources_through_scrapyd(scrapyd: Scrapyd, ops_project: Project, serve, solr) -> None:
    site_root = ops_project.data_dir.parent / "site-b"
    site_root.mkdir()
    pages = build_intranet(site_root, sections=2, per_section=3)
    site = serve(site_root)
    ops_project.source("opsb", f'seeds = ["{site.url}index.html"]\nrefresh_interval = "1h"\n')
    ops_project.source("opsc", f'seeds = ["{site.url}index.html"]\nschedule = "0 3 * * *"\n')
    deploy(scrapyd)  # a new version carrying nothing new: jobs use the latest egg
    env = {"SEARCHCRAWL_SCRAPYD_URL": scrapyd.url}

    first = ops_project.scrapy("scheduler", "--once", **env)
    assert first.returncode == 0, first.stderr
    assert "Schedule of opsb (every 1:00:00): started crawl" in first.stderr
    jobs = [job for state in ("pending", "running", "finished") for job in scrapyd.get("listjobs.json")[state]]
    assert [job["spider"] for job in jobs if job["spider"] in ("opsb", "opsc")] == ["opsb"], jobs
    # checked again at once: not due again (and its job may still run): nothing new started
    second = ops_project.scrapy("scheduler", "--once", **env)
    assert "started crawl" not in second.stderr, second.stderr
    listing = ops_project.scrapy("scheduler", "--list", **env)
    assert "opsb: every 1:00:00; last started" in listing.stdout
    assert "opsc: cron '0 3 * * *'; never started; next due" in listing.stdout, listing.stdout

    job = next(job for job in jobs if job["spider"] == "opsb")
    scrapyd.wait_finished(job["id"])
    assert sorted(doc["url"] for doc in solr_docs(solr, "opsb")) == sorted(site.url + path for path in pages)
    assert json.loads(Runs(ops_project.table().database).latest("opsb")["counters"])["pages"] >= len(pages)


def test_a_source_of_two_processes_as_a_scrapyd_job(scrapyd: Scrapyd, ops_project: Project, serve, solr) -> None:
    """processes = 2 under scrapyd: the second process, forked from the first under scrapyd's
    runner (which activated the egg that holds the source), joins the job's run and logs into the
    job's log; it leaves without the runner's clean-up, which removes the egg the first still uses."""
    site_root = ops_project.data_dir.parent / "site-p"
    site_root.mkdir()
    pages = build_intranet(site_root, sections=5, per_section=20)
    site = serve(site_root, in_flight=InFlight(), slow=0.05)  # long enough for the second process to come up
    ops_project.source("opsprocs", f'seeds = ["{site.url}index.html"]\nprocesses = 2\n')
    deploy(scrapyd)
    job = scrapyd.post("schedule.json", spider="opsprocs")["jobid"]
    log = scrapyd.job_log(scrapyd.wait_finished(job, timeout=300))
    assert "Started 1 more crawler processes" in log, log[-3000:]
    assert "Joining run" in log or "Not joining: run" in log, log[-3000:]  # the egg's source was found
    assert sorted(doc["url"] for doc in solr_docs(solr, "opsprocs")) == sorted(site.url + path for path in pages)
    assert Runs(ops_project.table().database).latest("opsprocs")["state"] == "finished"


def test_rendering_under_scrapyd(scrapyd: Scrapyd, ops_project: Project, quotes_site, solr) -> None:  # noqa: F811 - the fixture
    """A JavaScript source as a scrapyd job: Chromium through scrapy-playwright, all 100 quotes."""
    quotes_source(ops_project, quotes_site, "opsjs", "true", ["js/"])
    deploy(scrapyd)
    job = scrapyd.post("schedule.json", spider="opsjs")["jobid"]
    log = scrapyd.job_log(scrapyd.wait_finished(job, timeout=300))
    assert "Spider closed (finished)" in log, log[-3000:]
    text = indexed_text(solr, "opsjs")
    assert [quote for quote in quotes_site.quotes if quote not in text] == []
    assert ops_project.table().get("opsjs", quotes_site.url + "js/page/7/")["fetched_with"] == "browser"


def test_sources_of_files_and_of_a_table_as_scheduled_scrapyd_jobs(scrapyd: Scrapyd, ops_project: Project, solr) -> None:
    """Agents' sources run under scrapyd as web sources do: the egg carries the agents, `scrapy
    scheduler` starts them when due, their documents reach Solr."""
    share = ops_project.data_dir.parent / "share"
    (share / "minutes").mkdir(parents=True)
    (share / "minutes" / "board.txt").write_text("board minutes: budget approved")
    (share / "notes.html").write_text("<html><head><title>Notes</title></head><body><p>team notes</p></body></html>")
    database = ops_project.data_dir.parent / "records.sqlite3"
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE records (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
        connection.executemany("INSERT INTO records VALUES (?, ?, ?)", [(1, "First", "harbour"), (2, "Second", "crane")])
    ops_project.source("opsfiles", f'type = "files"\nrefresh_interval = "1h"\n[files]\nroots = ["{share}"]\n')
    ops_project.source(
        "opsrows",
        'type = "database"\nrefresh_interval = "1h"\n[access]\npublic = true\n[database]\n'
        f'url = "sqlite:///{database}"\nquery = "SELECT id, title, body FROM records"\nkey = "id"\ntitle = "title"\ncontent = ["body"]\n',
    )
    deploy(scrapyd)
    started = ops_project.scrapy("scheduler", "--once", SEARCHCRAWL_SCRAPYD_URL=scrapyd.url)
    assert "Schedule of opsfiles (every 1:00:00): started crawl" in started.stderr, started.stderr
    assert "Schedule of opsrows (every 1:00:00): started crawl" in started.stderr, started.stderr
    jobs = [job for state in ("pending", "running", "finished") for job in scrapyd.get("listjobs.json")[state]]
    for job in jobs:
        if job["spider"] in ("opsfiles", "opsrows"):
            scrapyd.wait_finished(job["id"])
    assert sorted(doc["url"] for doc in solr_docs(solr, "opsfiles")) == [
        (share / "minutes" / "board.txt").as_uri(),
        (share / "notes.html").as_uri(),
    ]
    assert sorted(doc["title"] for doc in solr_docs(solr, "opsrows")) == ["First", "Second"]
