"""The daily summary of an installation (issue 60): one implementation for the mail, the webhook
and the administration page (/admin/summary).

``build_summary`` reads what the project recorded in the last ``hours`` (24 by default): the runs
that started or ended then, per source what they changed (their delta reports: new, changed,
deleted, held ...), what failed and why (the statuses of their URLs, by kind: HTTP 4xx/5xx and
the crawler's codes, docs/status-codes.md), and what waits (deletions the mass-deletion guard
holds in a source's latest run, runs suspended or still running, scheduled sources due now), and
the notifications that could not be sent. ``summary_message`` writes it as a plain-text mail and
its JSON; ``send_summary`` sends it once a day per channel (the key ``summary:<day>``), so a
second `scrapy summary --send` the same day sends nothing. Bounded: at most MAX_RUNS runs read.

A crawl tells of Solr or Tika out of reach when it needs them; between crawls nothing does:
``service_problems`` asks both, and ``send_problems`` sends ``solr_unreachable`` or
``tika_unreachable`` once a day per channel (``check:<day>``): `scrapy summary --check`, from
cron every few minutes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.ops.notifier import Notifier
from searchcrawl.ops.stalls import Stall
from searchcrawl.rules.notify_events import EventKind, Message, admin_link, failure_statuses, run_link, status_text
from searchcrawl.rules.schedules import Schedule
from searchcrawl.store.database import Database, as_utc
from searchcrawl.store.models import RunState
from searchcrawl.store.notifications import FAILED, SENDING, Notifications, run_key, runs_statuses
from searchcrawl.store.runs import Runs
from searchcrawl.store.schedule_marks import ScheduleMarks
from searchcrawl.system.secrets import redact
from searchcrawl.system.translations import gettext as _
from searchcrawl.system.translations import ngettext

MAX_RUNS = 2000  # runs of the period read, at most (newest first)
SUMMARY_EVENT = "daily_summary"


@dataclass
class SourceDay:
    """One source in the summary."""

    name: str
    runs: list[dict[str, Any]] = field(default_factory=list)  # id, state, reason, mode, started, ended
    changes: dict[str, int] = field(default_factory=dict)  # delta kind -> URLs, over its runs
    failures: dict[str, int] = field(default_factory=dict)  # "936 auth_refused" -> URLs, over its runs
    waits: list[str] = field(default_factory=list)  # what waits, in words

    @property
    def failed_runs(self) -> int:
        return sum(1 for run in self.runs if run["state"] == RunState.FAILED)


@dataclass
class DailySummary:
    installation: str
    since: datetime
    until: datetime
    sources: list[SourceDay]
    due: list[str]
    notifications_failed: list[str]
    truncated: bool = False

    @property
    def crawled(self) -> list[SourceDay]:
        return [source for source in self.sources if source.runs]

    @property
    def waiting(self) -> list[SourceDay]:
        return [source for source in self.sources if source.waits]

    def totals(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for source in self.sources:
            total.update(source.changes)
        return dict(sorted(total.items()))

    def to_data(self, base_url: str = "") -> dict[str, Any]:
        return {
            "installation": self.installation,
            "event": SUMMARY_EVENT,
            "since": self.since.isoformat(),
            "until": self.until.isoformat(),
            "totals": self.totals(),
            "sources": [
                {
                    "source": source.name,
                    "runs": [{**run, "link": run_link(base_url, run["id"]) or None} for run in source.runs],
                    "changes": source.changes,
                    "failures": source.failures,
                    "waits": source.waits,
                }
                for source in self.sources
                if source.runs or source.waits
            ],
            "due": self.due,
            "notifications_failed": self.notifications_failed,
            "truncated": self.truncated,
        }


def _run_row(row: Any) -> dict[str, Any]:
    started, ended = as_utc(row["started_at"]), as_utc(row["ended_at"])
    return {
        "id": row["id"],
        "state": str(row["state"]),
        "reason": redact(row["reason"] or ""),
        "mode": row["mode"],
        "started": started.isoformat() if started else None,
        "ended": ended.isoformat() if ended else None,
    }


def _add_run(source: SourceDay, row: Mapping[str, Any], statuses: Mapping[int, int], latest: bool) -> None:
    """One run of the period added to its source's day: its changes and failures; for the
    source's latest run, what waits (deletions held, a run suspended or running)."""
    counters = json.loads(row["counters"] or "{}")
    delta = counters.get("delta") if isinstance(counters, dict) else None
    if isinstance(delta, dict):
        for kind, number in delta.items():
            if isinstance(number, int):
                source.changes[kind] = source.changes.get(kind, 0) + number
    for code, number in failure_statuses(statuses).items():
        key = status_text(code)
        source.failures[key] = source.failures.get(key, 0) + number
    if latest:
        held = delta.get("held", 0) if isinstance(delta, dict) else 0
        # in the current language: the page's (built for a page); English for the mail and its JSON
        if held:
            source.waits.append(
                ngettext(
                    "%(num)s deletion held by the mass-deletion guard in run %(run)s (confirm: scrapy crawl %(source)s -a delete=force)",
                    "%(num)s deletions held by the mass-deletion guard in run %(run)s (confirm: scrapy crawl %(source)s -a delete=force)",
                    held,
                    run=row["id"],
                    source=row["source"],
                )
            )
        if row["state"] == RunState.SUSPENDED:
            source.waits.append(_("run %(run)s is suspended: the next crawl resumes it", run=row["id"]))
        elif row["state"] == RunState.RUNNING:
            source.waits.append(_("run %(run)s is running", run=row["id"]))


def build_summary(
    database: Database,
    now: datetime,
    hours: float = 24.0,
    schedules: Mapping[str, Schedule] | None = None,
    installation: str = "searchcrawl",
) -> DailySummary:
    """The summary of the ``hours`` before ``now``. ``schedules``: the scheduled sources; one
    due now by the scheduler's mark (ops/dispatcher.py) is named as waiting."""
    since = now - timedelta(hours=hours)
    rows, latest_ids = Runs(database).of_period(since, MAX_RUNS + 1)
    truncated = len(rows) > MAX_RUNS
    rows = rows[:MAX_RUNS]
    statuses = runs_statuses(database, [row["id"] for row in rows])
    by_source: dict[str, SourceDay] = {}
    for row in reversed(rows):
        source = by_source.setdefault(row["source"], SourceDay(row["source"]))
        source.runs.append(_run_row(row))
        _add_run(source, row, statuses.get(row["id"], {}), row["id"] == latest_ids.get(row["source"]))
    due: list[str] = []
    marks = ScheduleMarks(database)
    for name, schedule in sorted((schedules or {}).items()):
        mark = marks.get(name)
        if mark is not None and mark["mark"] is not None and schedule.due(now, mark["mark"]) is not None:
            due.append(name)
            by_source.setdefault(name, SourceDay(name)).waits.append(_("due now by its schedule"))
    failed = [
        _(
            "%(event)s of %(key)s on %(channel)s: %(error)s",
            event=row["event"],
            key=row["key"],
            channel=row["channel"].split(":")[0],
            error=row["error"] or _("never finished"),
        )
        for row in Notifications(database).since(since)
        if row["state"] in (FAILED, SENDING)
    ]
    return DailySummary(installation, since, now, sorted(by_source.values(), key=lambda day: day.name), due, failed, truncated)


def _source_lines(source: SourceDay, base_url: str) -> list[str]:
    """A crawled source's lines of the summary's text: its runs (each with its link), its changes
    and its failures."""
    lines = []
    for run in source.runs:
        link = run_link(base_url, run["id"])
        lines.append(
            f"  run {run['id']} ({run['mode'] or 'crawl'}): {run['state']} ({run['reason']})" + (f" {link}" if link else "")
        )
    if source.changes:
        lines.append("  changes:  " + ", ".join(f"{kind} {number}" for kind, number in sorted(source.changes.items())))
    if source.failures:
        lines.append("  failures: " + ", ".join(f"{kind}: {number}" for kind, number in source.failures.items()))
    return lines


def summary_message(summary: DailySummary, base_url: str = "") -> Message:
    """The summary as a mail's subject and text, and its JSON."""
    crawled, waiting = summary.crawled, summary.waiting
    failures = sum(sum(source.failures.values()) for source in summary.sources)
    lines = [
        f"{summary.installation}: {len(crawled)} sources crawled from {summary.since:%Y-%m-%d %H:%M} to {summary.until:%Y-%m-%d %H:%M %Z}.",
        "",
    ]
    totals = summary.totals()
    if totals:
        lines.append("Changes:  " + ", ".join(f"{kind} {number}" for kind, number in totals.items()))
    lines.append(f"Failures: {failures} URLs" + (f"; {sum(s.failed_runs for s in crawled)} runs failed" if crawled else ""))
    for source in crawled:
        lines += ["", f"{source.name}:", *_source_lines(source, base_url)]
    if waiting:
        lines += ["", "Waiting:"]
        lines += [f"  {source.name}: {wait}" for source in waiting for wait in source.waits]
    if summary.notifications_failed:
        lines += ["", "Notifications not sent:"]
        lines += [f"  {line}" for line in summary.notifications_failed]
    if summary.truncated:
        lines += ["", f"(only the newest {MAX_RUNS} runs are counted)"]
    if base_url:
        lines += ["", f"The summary: {admin_link(base_url, '/summary')}"]
    subject = (
        f"[{summary.installation}] daily summary: {len(crawled)} sources crawled, {failures} failures, {len(waiting)} waiting"
    )
    return Message(redact(subject), redact("\n".join(lines)) + "\n", summary.to_data(base_url))


def send_summary(summary: DailySummary, notifier: Notifier, base_url: str = "") -> list[str]:
    """Send the summary on every channel, once a day (``summary:<day>``); the channels it went out on now."""
    message = summary_message(summary, base_url)
    key = f"summary:{summary.until:%Y-%m-%d}"
    return [channel.name for channel in notifier.config.channels() if notifier.send_once(key, SUMMARY_EVENT, channel, message)]


# --- Solr and Tika out of reach, when no crawl tells (`scrapy summary --check`) --------------------

CHECK_EVENTS = {"solr": "solr_unreachable", "tika": "tika_unreachable"}


def why_silent(url: str, timeout: float) -> str | None:
    """Why the server does not answer a GET of ``url`` with a success (None: it does)."""
    import requests  # the Tika client's own library

    try:
        answer = requests.get(url, timeout=timeout)
    except requests.RequestException as exc:
        return f"no answer ({type(exc).__name__})"
    return None if answer.ok else f"it answered {answer.status_code}"


def check_tika(tika_url: str, timeout: float) -> str | None:
    """Why the Tika server does not answer (None: it does), asked for its version."""
    return why_silent(f"{tika_url.rstrip('/')}/version", timeout)


def service_problems(solr: SolrIndex | None, tika_url: str, timeout: float) -> dict[str, str]:
    """The services out of reach now, with why: Solr (its ping, through any node of SOLR_URL) and,
    when SEARCHCRAWL_TIKA_URL is set, Tika."""
    problems: dict[str, str] = {}
    if solr is not None and not solr.ping():
        problems["solr"] = "Solr does not answer its ping (SOLR_URL)"
    if tika_url:
        why = check_tika(tika_url, timeout)
        if why is not None:
            problems["tika"] = f"the Tika server does not answer: {why} (SEARCHCRAWL_TIKA_URL)"
    return problems


def check_message(service: str, problem: str, moment: datetime, installation: str, base_url: str = "") -> Message:
    """A service out of reach as a mail and a webhook's JSON; with a base URL, the link of the
    administration overview (it shows Solr's health and the stalled runs)."""
    event = CHECK_EVENTS[service]
    title = "Solr out of reach" if service == "solr" else "Tika out of reach"
    link = admin_link(base_url)
    text = (
        f"{problem}, checked at {moment:%Y-%m-%d %H:%M %Z}.\n\n"
        "Crawls keep their documents cached and pending (Solr) or try them again next time (Tika, status 926).\n\n"
        + (f"The overview: {link}\n\n" if link else "")
        + f"-- {installation}, `scrapy solr status` or `scrapy tika status` ask again\n"
    )
    data = {
        "installation": installation,
        "event": event,
        "title": title,
        "summary": problem,
        "checked": moment.isoformat(),
        "link": link or None,
    }
    return Message(redact(f"[{installation}] {title}"), redact(text), data)


def send_problems(problems: Mapping[str, str], notifier: Notifier, moment: datetime) -> list[str]:
    """Each service out of reach told once a day per channel (``check:<day>``) if its event is
    configured; the events sent now."""
    config = notifier.config
    sent = []
    for service, problem in sorted(problems.items()):
        event = CHECK_EVENTS[service]
        if event not in config.events:
            continue
        message = check_message(service, problem, moment, config.installation, config.base_url)
        for channel in config.channels():
            if notifier.send_once(f"check:{moment:%Y-%m-%d}", event, channel, message):
                sent.append(event)
    return sent


# --- stalled runs (`scrapy summary --check`: a run that stalls never reaches its end) -----------


def stall_message(stall: Stall, now: datetime, base_url: str = "", installation: str = "searchcrawl") -> Message:
    """A stalled run (ops/stalls.py) as a mail and a webhook's JSON: what stalls, since when, and
    what it waits on (host names and counts only: no URL, no secret)."""
    title = f"{stall.source}: run {stall.run_id} stalled"
    line = stall.text(now)
    link = run_link(base_url, stall.run_id)
    text = (
        f"{line}.\n\n"
        + (f"The run: {link}\n" if link else "")
        + f"\n-- {installation}, `scrapy status {stall.source}` says more\n"
    )
    data = {
        "installation": installation,
        "event": EventKind.RUN_STALLED.value,
        "source": stall.source,
        "run": stall.run_id,
        "kind": stall.kind,
        "since": stall.since.isoformat(),
        "to_fetch": stall.to_fetch,
        "waits_on": list(stall.waits_on),
        "link": link,
    }
    return Message(redact(f"[{installation}] {title}"), redact(text), data)


def send_stalls(stalls: list[Stall], notifier: Notifier, now: datetime) -> list[int]:
    """Each stalled run told once per run and channel (``run:<id>``, event run_stalled) when the
    event is configured (a source's [notify] table may choose otherwise only for its run's end);
    the runs told now."""
    config = notifier.config
    told: list[int] = []
    if EventKind.RUN_STALLED.value not in config.events:
        return told
    for stall in stalls:
        message = stall_message(stall, now, config.base_url, config.installation)
        for channel in config.channels():
            if notifier.send_once(
                run_key(stall.run_id), EventKind.RUN_STALLED.value, channel, message, stall.source, stall.run_id
            ):
                told.append(stall.run_id)
    return told
