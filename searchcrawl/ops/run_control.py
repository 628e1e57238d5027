"""Suspending, resuming, stopping and starting a source's crawl from outside it.

One implementation for `scrapy control` and the web application's buttons, so that a button
does exactly what the command does. suspend and stop go through the runs table (the crawl reads
its control request every SEARCHCRAWL_PROGRESS_INTERVAL seconds, wherever it runs); resume and
start go through a launcher (a scrapyd job when SEARCHCRAWL_SCRAPYD_URL is set, else a local
process), and the crawl itself resumes a suspended run.
"""

from __future__ import annotations

from dataclasses import dataclass

from searchcrawl.ops.launchers import Launcher, LaunchError
from searchcrawl.store.database import Database
from searchcrawl.store.runs import CONTROLS, RESUMABLE, Runs

ACTIONS = (*CONTROLS, "resume", "start")


@dataclass(frozen=True)
class ControlResult:
    """What an action did: ``ok`` false when it did nothing (the command's exit code 1)."""

    ok: bool
    message: str


def control(database: Database, launcher: Launcher, source: str, action: str, stale_after: float = 600) -> ControlResult:
    """Do ``action`` (suspend, stop, resume, start) on the crawl of ``source``."""
    if action not in ACTIONS:
        raise ValueError(f"expected one of {', '.join(ACTIONS)}")
    runs = Runs(database)
    if action in CONTROLS:
        run = runs.control(source, action)
        if run is None:
            return ControlResult(False, f"{source}: no running or suspended crawl")
        if run["control"]:
            return ControlResult(
                True,
                f"{source}: run {run['id']} asked to {action}; the crawl will close within SEARCHCRAWL_PROGRESS_INTERVAL seconds",
            )
        return ControlResult(True, f"{source}: run {run['id']} is {run['state']}")
    run = runs.latest(source)
    if action == "resume" and (run is None or run["state"] not in RESUMABLE):
        return ControlResult(False, f"{source}: no suspended crawl to resume")
    if runs.live(source, stale_after):
        assert run is not None
        return ControlResult(False, f"{source}: run {run['id']} is running already")
    if action == "start" and launcher.active(source):  # started, its run not yet begun
        return ControlResult(False, f"{source}: a crawl started before is still pending or running")
    try:
        job = launcher.start(source)
    except LaunchError as exc:
        return ControlResult(False, f"searchcrawl: {exc}")
    if action == "resume":
        assert run is not None
        return ControlResult(True, f"{source}: resuming run {run['id']} as job {job}")
    return ControlResult(True, f"{source}: crawl started as job {job}")
