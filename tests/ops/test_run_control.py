"""searchcrawl/ops/run_control.py: the actions of `scrapy control` and the web buttons, on a real
SQLite document table and a launcher that records what it is asked to start."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchcrawl.ops.launchers import LaunchError
from searchcrawl.ops.run_control import control
from searchcrawl.store import Database
from searchcrawl.store.runs import Runs


class Recorder:
    """A launcher that starts nothing: it records, or fails as scrapyd unreachable would."""

    def __init__(self, busy: bool = False, fails: bool = False) -> None:
        self.started: list[str] = []
        self.busy, self.fails = busy, fails

    def start(self, source: str) -> str:
        if self.fails:
            raise LaunchError("scrapyd at http://127.0.0.1:1: schedule.json: refused")
        self.started.append(source)
        return "job1"

    def active(self, source: str) -> bool:
        return self.busy


@pytest.fixture
def database(tmp_path: Path):
    database = Database(f"sqlite:///{tmp_path / 'documents.sqlite3'}")
    yield database
    database.close()


def test_nothing_to_suspend_stop_or_resume(database) -> None:
    launcher = Recorder()
    for action, message in (
        ("suspend", "docs: no running or suspended crawl"),
        ("stop", "docs: no running or suspended crawl"),
        ("resume", "docs: no suspended crawl to resume"),
    ):
        outcome = control(database, launcher, "docs", action)
        assert (outcome.ok, outcome.message) == (False, message)
    assert launcher.started == []
    with pytest.raises(ValueError):
        control(database, launcher, "docs", "restart")


def test_start_resume_and_stop_a_suspended_run(database) -> None:
    launcher = Recorder()
    assert control(database, launcher, "docs", "start").message == "docs: crawl started as job job1"
    assert control(database, Recorder(busy=True), "docs", "start").message == (
        "docs: a crawl started before is still pending or running"
    )
    runs = Runs(database)
    run = runs.start("docs")
    runs.end(run.id, "suspended", {}, "interrupted")
    assert control(database, launcher, "docs", "resume").message == f"docs: resuming run {run.id} as job job1"
    assert launcher.started == ["docs", "docs"]
    failed = control(database, Recorder(fails=True), "docs", "resume")
    assert not failed.ok and "refused" in failed.message
    stopped = control(database, launcher, "docs", "stop")
    assert stopped.ok and stopped.message == f"docs: run {run.id} is stopped"
    assert "%(state)s" not in stopped.wording  # a whole sentence to translate (issue 79), no word put in
    assert runs.latest("docs")["state"] == "stopped"


def test_a_live_run_is_asked_and_not_started_twice(database) -> None:
    runs = Runs(database)
    run = runs.start("docs")  # this process: alive
    assert control(database, Recorder(), "docs", "start").message == f"docs: run {run.id} is running already"
    asked = control(database, Recorder(), "docs", "suspend")
    assert asked.message.startswith(f"docs: run {run.id} asked to suspend")
    assert "%(action)s" not in asked.wording and asked.shown() == asked.message  # whole; English outside a page
    assert runs.latest("docs")["control"] == "suspend"
