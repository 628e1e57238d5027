"""The administration pages' logic, without HTTP: what `scrapy status`, `report`, `explain`,
`explain-access` and `control` know, gathered for a page.

Each function reads through the project's own stores (runs table, document table, schedule
marks, the document cache's spools) and returns plain values; the templates only lay them out.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from searchcrawl.access.decision import Principals
from searchcrawl.access.directory import Directory
from searchcrawl.access.explanation import access_lines
from searchcrawl.index.cache import spool_fill
from searchcrawl.index.solr_client import IndexingError, SolrIndex
from searchcrawl.ops.launchers import run_command
from searchcrawl.rules.lifecycle import State, delta_label
from searchcrawl.rules.schedules import Schedule
from searchcrawl.rules.status_codes import describe
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.database import as_utc
from searchcrawl.store.models import RunState, run_state_label
from searchcrawl.store.runs import Runs, control_text, counter_label, counters_of
from searchcrawl.store.schedule_marks import ScheduleMarks
from searchcrawl.system.secrets import redact
from searchcrawl.system.translations import N_, moment, number, percent
from searchcrawl.system.translations import gettext as _
from searchcrawl.web.pictures import failure_label

EXPLAIN_TIMEOUT = 120  # seconds: robots.txt and the page are fetched, with the crawl's own timeouts
NEVER_CRAWLED, DEAD = "never crawled", "dead"  # the overview's states that are no run's (runs.state)
# those two as the page words them (a run's own state by its label: store/models.py)
SOURCE_STATES = {NEVER_CRAWLED: N_("never crawled"), DEAD: N_("dead")}


@dataclass
class SourceRow:
    name: str
    state: str  # the latest run's state ("never crawled", "dead" for a run whose process is gone)
    last_run: dict[str, Any] | None
    next_run: str  # "due now", a time, or why there is none
    documents: dict[str, int]  # per state
    cache_bytes: int
    cache_files: int
    error: str = ""  # a broken source file

    @property
    def state_text(self) -> str:
        """The state as the page shows it, in the page's language: ``never crawled``, ``dead`` or the run's."""
        return _(SOURCE_STATES[self.state]) if self.state in SOURCE_STATES else run_state_label(self.state)

    @property
    def indexed(self) -> int:
        return self.documents.get(State.INDEXED.value, 0)

    @property
    def pending(self) -> int:
        return self.documents.get(State.PENDING.value, 0) + self.documents.get(State.REMOVING.value, 0)

    @property
    def total(self) -> int:
        return sum(self.documents.values())


def next_run(marks: ScheduleMarks, source: str, schedule: Schedule | None, now: datetime) -> str:
    """When the scheduler will next start ``source`` (as `scrapy scheduler --list` says it), in the
    page's language."""
    if schedule is None:
        return _("not scheduled")
    row = marks.get(source)
    mark = row["mark"] if row else schedule.initial_mark(now)
    due = schedule.next_due(now, mark)
    return _("due now") if due <= now else moment(due.astimezone())


def overview(
    database: Database,
    names: list[str],
    schedule_of: Callable[[str], Schedule | None],
    cache_root: Path,
    now: datetime,
    stale_after: float = 600,
) -> list[SourceRow]:
    """One row per source: its latest run, next scheduled run, documents by state and cache fill."""
    table, runs, marks = DocumentTable(database), Runs(database), ScheduleMarks(database)
    rows = []
    for name in names:
        error = ""
        try:
            schedule = schedule_of(name)
        except Exception as exc:  # a broken source file: shown, not fatal to the page
            schedule, error = None, str(exc)
        run = runs.latest(name)
        state = NEVER_CRAWLED if run is None else run["state"]
        if run is not None and runs.dead(run, stale_after):
            state = DEAD
        size, files = spool_fill(cache_root / name)
        rows.append(
            SourceRow(name, state, run, next_run(marks, name, schedule, now), table.count_by(name, "state"), size, files, error)
        )
    return rows


RUN_COUNTS = ("pages", "indexed", "removed", "excluded")  # the counters the runs list shows


def run_counts(run: dict[str, Any]) -> dict[str, str]:
    """What the runs list shows of ``run``: its pages, indexed, removed and excluded counters
    ("-" before its first save; a count as the page's language writes numbers), and ``changes``:
    its delta report's counts that are not 0, once it has ended ("-" until then)."""
    counters = counters_of(run)
    shown = {key: counter_shown(key, counters[key]) if key in counters else "-" for key in RUN_COUNTS}
    delta = counters.get("delta")
    shown["changes"] = (
        counter_shown("delta", {kind: count for kind, count in delta.items() if count}) if isinstance(delta, dict) else "-"
    )
    return shown


# the kinds of a nested counter (a dict) as a page names them: the delta report's, the failures'
NESTED_LABELS: dict[str, Callable[[str], str]] = {"delta": delta_label, "failures": failure_label}


def counter_shown(key: str, value: Any) -> str:
    """The counter ``key`` as a page shows it, in the page's language (store/runs.py's ``counter_text``
    words it for the command line): a count as the language writes numbers, a nested count (the
    delta report's ``{"changed": 1, "new": 3}``) as ``changed 1, new 3`` with its kinds' labels, or
    ``none``."""
    if isinstance(value, dict):
        label = NESTED_LABELS.get(key, str)
        return ", ".join(f"{label(kind)} {counter_shown(kind, count)}" for kind, count in value.items()) or _("none")
    return number(value) if isinstance(value, int) and not isinstance(value, bool) else str(value)


@dataclass
class RunView:
    run: dict[str, Any]
    counters: dict[str, Any]
    dead: bool
    live: bool
    rate: float  # pages per minute since the run started
    nodes: list[str]
    documents: dict[str, int]
    statuses: list[tuple[int | None, int, str]]
    failed: list[dict[str, Any]] = field(default_factory=list)  # the latest failed rows
    cache: tuple[int, int] = (0, 0)  # (bytes, spool files) of the source's document cache

    @property
    def shown_counters(self) -> list[tuple[str, str, str]]:
        """The counters as the page shows them, by name: each name, its label and its value in the
        page's language (the delta report's as ``new 3, changed 1``; a count as the language writes
        numbers)."""
        return [(key, counter_label(key), counter_shown(key, value)) for key, value in sorted(self.counters.items())]

    @property
    def control_text(self) -> str:
        """What the run was asked from outside, after its state (``, asked to suspend``), or ""."""
        return control_text(self.run["control"]) if self.run.get("control") else ""

    @property
    def progress(self) -> str:
        """done / (done + queued + in flight), when the frontier counts are known."""
        done, queued, leased = (self.counters.get(key) for key in ("done", "queued", "leased"))
        if not isinstance(done, int) or not isinstance(queued, int) or not isinstance(leased, int) or not done + queued + leased:
            return ""
        return percent(done / (done + queued + leased))


def shown_run(run: dict[str, Any]) -> dict[str, Any]:
    """A run as the pages show it: its reason redacted (as ``shown_rows``'s)."""
    return {**run, "reason": redact(run.get("reason") or "")}


def shown_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Document rows as the pages show them: their reasons redacted (system/secrets.py), as the daily
    summary's are: a crawl's reason may quote a URL's credentials or a login's secret."""
    return [{**row, "reason": redact(row["reason"] or "")} for row in rows]


def run_view(database: Database, run_id: int, cache_root: Path, stale_after: float = 600) -> RunView | None:
    """A run as the live page shows it: its counters (saved by RunMonitor every
    SEARCHCRAWL_PROGRESS_INTERVAL seconds), rate, nodes, and its source's documents and errors."""
    runs, table = Runs(database), DocumentTable(database)
    run = runs.get(run_id)
    if run is None:
        return None
    counters = counters_of(run)
    started, updated = as_utc(run["started_at"]), as_utc(run["updated_at"])
    elapsed = (updated - started).total_seconds() if started and updated else 0
    pages = counters.get("pages", 0)
    rate = pages * 60 / elapsed if elapsed > 0 and isinstance(pages, int) else 0.0
    dead = runs.dead(run, stale_after)
    statuses = sorted(table.count_by(run["source"], "status").items(), key=lambda item: (item[0] is None, item[0] or 0))
    # the reasons as the daily summary shows them (ops/daily_summary.py): a login's password in a
    # crawl's failure, a URL's credentials, never on a page
    run = shown_run(run)
    failed = shown_rows(table.rows(run["source"], state=State.FAILED.value, limit=20))
    return RunView(
        run,
        counters,
        dead,
        run["state"] == RunState.RUNNING and not dead,
        rate,
        runs.nodes(run_id, within=stale_after) if run["state"] == RunState.RUNNING else [],
        table.count_by(run["source"], "state"),
        [(status, count, describe(status)) for status, count in statuses],
        failed,
        spool_fill(cache_root / run["source"]),
    )


def solr_health(index: SolrIndex) -> dict[str, Any]:
    """Solr's document count and ping, through any node of SOLR_URL that answers, or what went
    wrong (Solr's reason; the URLs carry no credentials)."""
    try:
        documents = index.document_count()
    except IndexingError as exc:
        return {"ok": False, "status": redact(exc.reason), "documents": None}
    if not index.ping():
        return {"ok": False, "status": _("its ping handler does not answer OK"), "documents": documents}
    return {"ok": True, "status": "OK", "documents": documents}


EXPLAIN_URL = N_("an absolute URL (http://, https://, ftp:// or file:)")  # what `scrapy explain` is given here


def explainable(url: str) -> bool:
    """Whether ``url`` is one the administration's explain runs `scrapy explain` on (bounded)."""
    return url.lower().startswith(("http://", "https://", "file:", "ftp://")) and len(url) <= 8192


def explain(project_dir: Path, source: str, url: str, environ: dict[str, str] | None = None) -> tuple[bool, str]:
    """`scrapy explain <source> <url>`'s answer: the command itself, in a process of its own.

    explain is a (read-only) crawl: Scrapy builds the source's spider, middlewares and settings
    and runs them on a Twisted reactor, which cannot run inside the web server's event loop
    (nor be started twice in one process). So its own command runs, as a list of arguments (no
    shell), bounded by EXPLAIN_TIMEOUT; its output is the same lines the shell would show."""
    try:
        answer = run_command(
            project_dir, environ if environ is not None else dict(os.environ), EXPLAIN_TIMEOUT, "explain", source, url
        )
    except subprocess.TimeoutExpired:
        return False, _("explain took longer than %(seconds)s s", seconds=EXPLAIN_TIMEOUT)
    return answer.returncode == 0, (answer.stdout + answer.stderr).strip()[-20000:]


def explain_access(directory: Directory | None, index: SolrIndex, database: Database, user: str, url: str) -> tuple[bool, str]:
    """`scrapy explain-access USER URL`'s report (access/explanation.py), in this process: the
    user's principals from the directory (``-``: a visitor who is not signed in), each source's
    document of the URL with its tokens (from the document table, else the index), the decision.
    False with the reason when the directory is not configured or Solr does not answer."""
    if user == "-":
        principals = Principals.anonymous()
    elif directory is None:
        return False, _("The searchers' directory is not configured (SEARCHCRAWL_LDAP_URL): only - (a visitor) can be explained.")
    else:
        principals = directory.principals(user)
    try:
        return True, "\n".join(access_lines(principals, directory, index, DocumentTable(database), url))
    except IndexingError as exc:
        return False, _("Solr did not answer: %(reason)s", reason=exc.reason)
