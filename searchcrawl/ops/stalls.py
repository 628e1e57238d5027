"""Stall detection: running runs that fetch nothing, or whose processes stopped reporting, and
what they wait on. One implementation for `scrapy status`, the administration pages, the
metrics (searchcrawl_run_stalled) and notifications (``stalls(database, now)``).

A run is **stalled** (kind ``nothing fetched``) when it is running, has URLs to fetch (queued or
leased in its frontier) and none of its processes had an answer from a site for
SEARCHCRAWL_STALL_AFTER seconds (15 min by default), counted from the session's start when none
came yet; or, when longer, twice the largest download delay its processes reported plus the
requests' timeout (a source with a politeness delay of an hour is not stalled for it). It is **not reporting** when none of its processes has written its heartbeat for
``stale_after`` seconds (SEARCHCRAWL_LEASE_SECONDS, as `scrapy status` calls a run dead), or its
process is known gone (same host, pid not alive). Both are read from what the crawl recorded:
``runs.updated_at`` (counters saved every progress interval), ``crawl_nodes.heartbeat`` (lease
renewals, every third of SEARCHCRAWL_LEASE_SECONDS) and the ``run_progress`` table
(crawl/extensions/progress_report.py: heartbeat, last answer, waits). A run whose processes
wrote no progress report (a crawler older than this table) is judged on its heartbeat only.

What a stalled run **waits on**, and how each is known:

* a site: requests in the downloader with no answer (a site that stopped answering, or its
  download delay), and a site's Retry-After pause: the process's last progress report;
* a lease held by a process gone: frontier rows of the run leased by an owner (host:pid) that
  has no recent heartbeat, or whose pid is gone on this host (the lease's expiry says when
  another node may take the URLs back; the next crawl takes them back at once);
* Solr, Tika: their ping (ops/health.py, cached), when given; Solr is named with the source's
  documents waiting to be pushed;
* a process alive on this host that stopped writing its heartbeat: stopped (SIGSTOP, Ctrl-Z:
  its state in /proc/<pid>/stat), the database lock when PostgreSQL's pg_stat_activity shows
  sessions waiting on a lock, else "blocked (a database lock or a long synchronous task)": on
  SQLite a lock wait cannot be told from outside.

Each check reads a bounded number of rows: the running runs, their progress rows, their leased
URLs grouped by owner, and the queued URLs counted up to TO_FETCH_CAP.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from searchcrawl.ops.health import Health
from searchcrawl.store.database import Database, application_name, as_utc, local_pid, this_host
from searchcrawl.store.liveness import TO_FETCH_CAP, StallCheck
from searchcrawl.store.progress import Report, RunProgress, Wait
from searchcrawl.system.processes import process_alive, process_state
from searchcrawl.system.translations import gettext as _
from searchcrawl.system.translations import moment, ngettext, number

STALL_AFTER = 900.0  # SEARCHCRAWL_STALL_AFTER's default: seconds without an answer
DOWNLOAD_TIMEOUT = 30.0  # the settings' DOWNLOAD_TIMEOUT, for a delay reported without one
NOTHING_FETCHED = "nothing fetched"
NOT_REPORTING = "not reporting"


@dataclass(frozen=True)
class RunFacts:
    """What is recorded of a running run, as ``judge`` needs it."""

    source: str
    run_id: int
    started_at: datetime
    updated_at: datetime  # its counters' last save (any node)
    reports: tuple[Report, ...] = ()
    to_fetch: int = 0  # queued and leased URLs (up to TO_FETCH_CAP)
    gone: bool = False  # its recorded process is known not to run (same host, pid gone)
    node_heartbeat: datetime | None = None  # its nodes' latest lease renewal (crawl_nodes)

    @property
    def last_report(self) -> datetime:
        """Its latest sign of life: counters saved, a progress report, a lease renewal."""
        beats = [self.node_heartbeat] if self.node_heartbeat is not None else []
        return max([self.updated_at, *beats, *(report.reported_at for report in self.reports)])

    @property
    def last_fetch(self) -> datetime | None:
        return max((report.fetched_at for report in self.reports), default=None)


@dataclass(frozen=True)
class Stall:
    """A stalled run: ``kind`` (NOTHING_FETCHED or NOT_REPORTING) since ``since``, with what it
    waits on, in words (each without secrets: host names and counts only)."""

    source: str
    run_id: int
    kind: str
    since: datetime
    to_fetch: int
    waits_on: tuple[str, ...] = field(default_factory=tuple)

    def text(self, now: datetime) -> str:
        """The stall in a line, as `scrapy status`, `scrapy summary` and the mail say it (its time
        as ``2026-11-27 17:42:41``)."""
        return self._line(now, f"{self.since:%Y-%m-%d %H:%M:%S}", str(self.to_fetch))

    def shown(self, now: datetime) -> str:
        """The same line on a page: its time and count as the page's language writes them."""
        return self._line(now, moment(self.since), number(self.to_fetch))

    def _line(self, now: datetime, since: str, to_fetch: str) -> str:
        """The line in the current language (English outside a page), with ``since`` and ``to_fetch`` written."""
        values = {
            "run": self.run_id,
            "source": self.source,
            "duration": duration((now - self.since).total_seconds()),
            "since": since,
            "to_fetch": to_fetch + ("+" if self.to_fetch >= TO_FETCH_CAP else ""),
        }
        if self.kind == NOTHING_FETCHED:
            line = ngettext(
                "run %(run)s of %(source)s stalled: nothing fetched for %(duration)s (since %(since)s UTC), %(to_fetch)s URLs to fetch",
                "run %(run)s of %(source)s stalled: nothing fetched for %(duration)s (since %(since)s UTC), %(to_fetch)s URLs to fetch",
                self.to_fetch,
                **values,
            )
        else:
            line = ngettext(
                "run %(run)s of %(source)s stalled: no report from its process for %(duration)s (since %(since)s UTC), "
                "%(to_fetch)s URLs to fetch",
                "run %(run)s of %(source)s stalled: no report from its process for %(duration)s (since %(since)s UTC), "
                "%(to_fetch)s URLs to fetch",
                self.to_fetch,
                **values,
            )
        if self.waits_on:
            return _("%(stall)s; waits on: %(waits)s", stall=line, waits="; ".join(self.waits_on))
        return _("%(stall)s; waits on nothing recorded", stall=line)


def judge(facts: RunFacts, now: datetime, stall_after: float, stale_after: float) -> tuple[str, datetime] | None:
    """Whether a running run is stalled, and how since when: not reporting (no heartbeat for
    ``stale_after`` seconds, or its process known gone) before nothing fetched (URLs to fetch and
    no answer for ``stall_after`` seconds)."""
    last_report = facts.last_report
    if facts.gone or (now - last_report).total_seconds() >= stale_after:
        return NOT_REPORTING, last_report
    last_fetch = facts.last_fetch
    if last_fetch is not None and facts.to_fetch > 0 and (now - last_fetch).total_seconds() >= expected_gap(facts, stall_after):
        return NOTHING_FETCHED, last_fetch
    return None


def expected_gap(facts: RunFacts, stall_after: float) -> float:
    """How long a run may go without an answer: ``stall_after``, or longer for a site with a long
    download delay (a politeness delay of 20 min to an hour): twice the largest delay its
    processes reported (Scrapy's randomized delay is at most 1.5 times it) plus their requests'
    timeout."""
    gaps = [
        2 * wait.seconds + (wait.timeout if wait.timeout is not None else DOWNLOAD_TIMEOUT)
        for report in facts.reports
        for wait in report.waits
        if wait.kind == "delay" and wait.seconds is not None
    ]
    return max([stall_after, *gaps])


def duration(seconds: float) -> str:
    """``45 s``, ``20 min``, ``3 h 5 min``."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return _("%(seconds)s s", seconds=round(seconds))
    if seconds < 3600:
        return _("%(minutes)s min", minutes=int(seconds // 60))
    return _("%(hours)s h %(minutes)s min", hours=int(seconds // 3600), minutes=int(seconds % 3600 // 60))


def describe_wait(wait: Wait, now: datetime) -> str:
    """What a process waits on at a site, in words (the current language's; English outside a page)."""
    if wait.kind == "retry-after" and wait.until is not None:
        until = f"{wait.until:%H:%M:%S}"  # a time of day, as the command line has always written it
        return _("site %(site)s: a Retry-After pause until %(until)s UTC", site=wait.site, until=until)
    if wait.kind == "delay":
        return _(
            "site %(site)s: a download delay of %(delay)s between requests", site=wait.site, delay=duration(wait.seconds or 0)
        )
    if wait.since is not None:
        return ngettext(
            "site %(site)s: %(num)s request(s) without an answer for %(duration)s (the site does not answer, or its delay)",
            "site %(site)s: %(num)s request(s) without an answer for %(duration)s (the site does not answer, or its delay)",
            wait.count,
            site=wait.site,
            duration=duration((now - wait.since).total_seconds()),
        )
    return ngettext(
        "site %(site)s: %(num)s request(s) without an answer (the site does not answer, or its delay)",
        "site %(site)s: %(num)s request(s) without an answer (the site does not answer, or its delay)",
        wait.count,
        site=wait.site,
    )


def silent_process(owner: str, lock_waiters: int) -> str:
    """What a live process on this host that stopped reporting waits on: stopped (its state in
    /proc), the database lock when PostgreSQL shows sessions waiting on one (``lock_waiters``:
    its own, or sessions no process of searchcrawl named), else blocked on something unknown
    from outside."""
    pid = owner.rpartition(":")[2]
    if pid.isdigit() and process_state(int(pid)) in ("T", "t"):
        return _("its process %(pid)s is stopped (SIGSTOP or Ctrl-Z): kill -CONT %(pid)s resumes it", pid=pid)
    if lock_waiters:
        return _("the database lock: its process %(pid)s is alive but has not saved its heartbeat", pid=pid)
    return _(
        "its process %(pid)s is alive but has not saved its heartbeat: blocked (a database lock or a long synchronous task)",
        pid=pid,
    )


def _owner_gone(owner: str, live: set[str], here: str) -> bool:
    """A lease owner (host:pid) is gone when it has no recent heartbeat, or on this host its pid
    is not alive."""
    pid = local_pid(owner, here)
    return owner not in live if pid is None else not process_alive(pid)


def _others_alive(reports: Iterable[Report], now: datetime, within: float, here: str) -> bool:
    """Whether another process of the run reported lately and is not known gone (a shared run
    whose recorded process ended while the others go on)."""
    recent = {report.owner for report in reports if (now - report.reported_at).total_seconds() < within}
    return any(not _owner_gone(owner, recent, here) for owner in recent)


def stalls(
    database: Database,
    now: datetime,
    stall_after: float = STALL_AFTER,
    stale_after: float = 600,
    health: Health | None = None,
    sources: Iterable[str] | None = None,
) -> list[Stall]:
    """The stalled runs (of ``sources``, or all), each with what it waits on (module docstring).
    ``health``: Solr's and Tika's pings (ops/health.py), when the caller has them."""
    check = StallCheck(database)
    running = check.running(sources)
    if not running:
        return []
    reports = RunProgress(database).of_runs(run["id"] for run in running)
    beats = check.node_heartbeats(run["id"] for run in running)
    here = this_host()
    found = []
    for run in running:
        started, updated = as_utc(run["started_at"]), as_utc(run["updated_at"])
        assert started is not None and updated is not None  # NOT NULL columns
        own = tuple(reports.get(run["id"], ()))
        gone = (
            bool(run["pid"])
            and run["host"] == here
            and not process_alive(run["pid"])
            and not _others_alive(own, now, stale_after, here)
        )
        to_fetch = check.to_fetch(run["source"], run["id"])
        facts = RunFacts(run["source"], run["id"], started, updated, own, to_fetch, gone, beats.get(run["id"]))
        verdict = judge(facts, now, stall_after, stale_after)
        if verdict is None:
            continue
        kind, since = verdict
        found.append(
            Stall(
                run["source"],
                run["id"],
                kind,
                since,
                facts.to_fetch,
                tuple(waits_on(check, facts, kind, now, stale_after, health)),
            )
        )
    return found


def _gone_leases(check: StallCheck, facts: RunFacts, now: datetime, stale_after: float, here: str) -> list[str]:
    """The run's URLs leased by processes that are gone, by owner (and when each lease expires)."""
    waits: list[str] = []
    live = check.live_owners(facts.run_id, now, stale_after, facts.reports)
    for owner, count, expires in check.leases(facts.source, facts.run_id):
        if _owner_gone(owner, live, here):
            holder = owner or _("nobody")
            if expires is not None:
                expiry = f"{expires:%H:%M:%S}"
                waits.append(
                    ngettext(
                        "%(num)s URL(s) leased by %(owner)s, a process gone (the lease expires at %(expires)s UTC)",
                        "%(num)s URL(s) leased by %(owner)s, a process gone (the lease expires at %(expires)s UTC)",
                        count,
                        owner=holder,
                        expires=expiry,
                    )
                )
            else:
                waits.append(
                    ngettext(
                        "%(num)s URL(s) leased by %(owner)s, a process gone",
                        "%(num)s URL(s) leased by %(owner)s, a process gone",
                        count,
                        owner=holder,
                    )
                )
    return waits


def waits_on(
    check: StallCheck, facts: RunFacts, kind: str, now: datetime, stale_after: float, health: Health | None
) -> list[str]:
    """What a stalled run waits on, in words (module docstring: how each is known)."""
    here = this_host()
    waits: list[str] = []
    waiters = check.lock_waiters()
    if kind == NOT_REPORTING:
        if facts.gone:
            waits.append(_("its process is gone (killed or crashed): the next crawl resumes the run"))
        else:
            silent = {
                report.owner
                for report in facts.reports
                if report.owner.rpartition(":")[0] == here and not _owner_gone(report.owner, set(), here)
            }
            waits.extend(silent_process(owner, _waiting(waiters, {owner})) for owner in sorted(silent))
    for report in facts.reports:
        if kind == NOTHING_FETCHED or not facts.gone:
            waits.extend(describe_wait(wait, now) for wait in report.waits)
    waits += _gone_leases(check, facts, now, stale_after, here)
    if health is not None and health.solr is False:
        pending = check.pending(facts.source)
        waits.append(
            ngettext(
                "Solr: out of reach, %(num)s document(s) waiting to be pushed",
                "Solr: out of reach, %(num)s document(s) waiting to be pushed",
                pending,
            )
        )
    if health is not None and health.tika is False:
        waits.append(_("Tika: out of reach"))
    own = _waiting(waiters, {report.owner for report in facts.reports}) - waiters.get("", 0)
    if own:
        waits.append(
            ngettext(
                "the database lock: %(num)s session(s) of its processes wait on a lock",
                "the database lock: %(num)s session(s) of its processes wait on a lock",
                own,
            )
        )
    elif waiters.get(""):  # sessions that are not a searchcrawl process's (or renamed): perhaps
        waits.append(
            ngettext(
                "the database lock: %(num)s session(s) of the database wait on a lock (not its processes')",
                "the database lock: %(num)s session(s) of the database wait on a lock (not its processes')",
                waiters[""],
            )
        )
    return waits


def _waiting(waiters: dict[str, int], owners: set[str]) -> int:
    """Sessions waiting on a lock that are ``owners``' (by their application_name), or no
    searchcrawl process's ("": an administrator's application_name, another program)."""
    names = {application_name(owner) for owner in owners}
    return sum(count for name, count in waiters.items() if name in names) + waiters.get("", 0)
