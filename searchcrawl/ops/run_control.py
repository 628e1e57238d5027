"""Suspending, resuming, stopping and starting a source's crawl from outside it.

One implementation for `scrapy control` and the web application's buttons, so that a button
does exactly what the command does. suspend and stop go through the runs table (the crawl reads
its control request every SEARCHCRAWL_PROGRESS_INTERVAL seconds, wherever it runs); resume and
start go through a launcher (a scrapyd job when SEARCHCRAWL_SCRAPYD_URL is set, else a local
process), and the crawl itself resumes a suspended run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from searchcrawl.ops.launchers import Launcher, LaunchError
from searchcrawl.store.database import Database
from searchcrawl.store.models import RunState
from searchcrawl.store.runs import CONTROLS, RESUMABLE, Runs
from searchcrawl.system.translations import N_
from searchcrawl.system.translations import gettext as _

# the actions, each with its button's label (worded where the button is shown)
ACTIONS: dict[str, str] = {"suspend": N_("Suspend"), "stop": N_("Stop"), "resume": N_("Resume"), "start": N_("Start")}
assert set(CONTROLS) <= set(ACTIONS)  # the runs table's controls, and the launcher's two
# what suspend and stop say, each a whole sentence (no action or state worded apart and put in):
# the running crawl asked, or the run ended by the runs table (Runs.control), in the state it is in
ASKED = {
    "suspend": N_("%(source)s: run %(run)s asked to suspend; the crawl will close within SEARCHCRAWL_PROGRESS_INTERVAL seconds"),
    "stop": N_("%(source)s: run %(run)s asked to stop; the crawl will close within SEARCHCRAWL_PROGRESS_INTERVAL seconds"),
}
assert set(ASKED) == set(CONTROLS)
ENDED = {
    RunState.RUNNING: N_("%(source)s: run %(run)s is running"),
    RunState.SUSPENDED: N_("%(source)s: run %(run)s is suspended"),
    RunState.FINISHED: N_("%(source)s: run %(run)s is finished"),
    RunState.STOPPED: N_("%(source)s: run %(run)s is stopped"),
    RunState.FAILED: N_("%(source)s: run %(run)s is failed"),
}


@dataclass(frozen=True)
class ControlResult:
    """What an action did: ``ok`` false when it did nothing (the command's exit code 1).

    Its words are kept with their values (``wording``: English with named placeholders, each one a
    message of the catalogues), so that the command, the log and the audit log say it in English
    (``message``) and a page in its reader's language (``shown``)."""

    ok: bool
    wording: str
    values: Mapping[str, object] = field(default_factory=dict)

    @property
    def message(self) -> str:
        """What the action did, in English: `scrapy control`'s output, the log, the audit log."""
        return self.wording % self.values

    def shown(self) -> str:
        """What the action did in the current language (a page's flash message)."""
        return _(self.wording, **self.values)


def control(database: Database, launcher: Launcher, source: str, action: str, stale_after: float = 600) -> ControlResult:
    """Do ``action`` (suspend, stop, resume, start) on the crawl of ``source``."""
    if action not in ACTIONS:
        raise ValueError(f"expected one of {', '.join(ACTIONS)}")
    runs = Runs(database)
    if action in CONTROLS:
        run = runs.control(source, action)
        if run is None:
            return ControlResult(False, N_("%(source)s: no running or suspended crawl"), {"source": source})
        if run["control"]:
            return ControlResult(True, ASKED[action], {"source": source, "run": run["id"]})
        if run["state"] in ENDED:
            return ControlResult(True, ENDED[run["state"]], {"source": source, "run": run["id"]})
        return ControlResult(  # a state of no RunState: said as it is
            True, N_("%(source)s: run %(run)s is %(state)s"), {"source": source, "run": run["id"], "state": run["state"]}
        )
    run = runs.latest(source)
    if action == "resume" and (run is None or run["state"] not in RESUMABLE):
        return ControlResult(False, N_("%(source)s: no suspended crawl to resume"), {"source": source})
    if runs.live(source, stale_after):
        assert run is not None
        return ControlResult(False, N_("%(source)s: run %(run)s is running already"), {"source": source, "run": run["id"]})
    if action == "start" and launcher.active(source):  # started, its run not yet begun
        return ControlResult(False, N_("%(source)s: a crawl started before is still pending or running"), {"source": source})
    try:
        job = launcher.start(source)
    except LaunchError as exc:
        return ControlResult(False, "searchcrawl: %(error)s", {"error": str(exc)})  # the launcher's words
    if action == "resume":
        assert run is not None
        return ControlResult(
            True, N_("%(source)s: resuming run %(run)s as job %(job)s"), {"source": source, "run": run["id"], "job": job}
        )
    return ControlResult(True, N_("%(source)s: crawl started as job %(job)s"), {"source": source, "job": job})
