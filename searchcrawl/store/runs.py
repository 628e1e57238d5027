"""Crawl runs: each `scrapy crawl <source>` starts a run or resumes the unfinished one.

A run is ``running`` while a process works on it, ``suspended`` when it was interrupted
(Ctrl-C, SIGTERM, `scrapy control <source> suspend`) or its process died, and ``finished``,
``stopped`` (for good) or ``failed`` at its end. The next crawl of a source resumes a running
(dead) or suspended run; a finished, stopped or failed one is followed by a new run.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Result, RowMapping, delete, func, or_, select, text, update

from searchcrawl.store.database import Database, as_utc, now, this_host
from searchcrawl.store.models import FrontierState, RunState, crawl_nodes, runs, source_states
from searchcrawl.system.processes import process_alive
from searchcrawl.system.translations import N_
from searchcrawl.system.translations import gettext as _

RESUMABLE = (RunState.RUNNING, RunState.SUSPENDED)
CONTROLS = ("suspend", "stop")
UPDATE_ATTEMPTS = 5  # Runs.update's compare-and-set, when other nodes write the counters meanwhile
FRONTIER_COUNTS = frozenset(state.value for state in FrontierState)  # kept by Runs.update when not given
FINISHING = "finishing"  # runs.control: a node of a shared crawl has claimed the run's end
ALREADY_RUNNING = "already_running"  # the close reason of a crawl refused by RunConflict
# a run's control as its page says it after its state, whole (worded where shown: ``control_text``)
CONTROL_TEXTS = {"suspend": N_(", asked to suspend"), "stop": N_(", asked to stop"), FINISHING: N_(", finishing")}
# the counters a run saves (crawl/run.py's run_counters, the frontier's counts, the delta report
# and the documents in the index at its end) as the pages name them (worded where shown: ``counter_label``)
COUNTER_LABELS: dict[str, str] = {
    "pages": N_("pages"),
    "cached": N_("cached"),
    "indexed": N_("indexed"),
    "removed": N_("removed"),
    "excluded": N_("excluded"),
    "skipped": N_("skipped"),
    "anchors": N_("anchor fields set"),
    "failures": N_("failures"),
    FrontierState.QUEUED: N_("queued"),
    FrontierState.LEASED: N_("leased"),
    FrontierState.DONE: N_("done"),
    "delta": N_("delta"),
    "documents": N_("documents"),
}


def counters_of(run: dict[str, Any]) -> dict[str, Any]:
    """A run's counters as saved (JSON in the runs table): {} before the first save."""
    value = json.loads(run.get("counters") or "{}")
    return value if isinstance(value, dict) else {}


def counter_text(value: Any) -> str:
    """A counter as people read it: a number as it is; a nested count (the delta report's
    ``{"changed": 1, "new": 3}``) as ``changed 1, new 3``, never as a Python dict."""
    if isinstance(value, dict):
        return ", ".join(f"{key} {counter_text(number)}" for key, number in value.items()) or "none"
    return str(value)


def shown_counters(counters: dict[str, Any]) -> list[tuple[str, str]]:
    """The counters of a run (``counters_of``), each with its text (``counter_text``), by name."""
    return [(key, counter_text(value)) for key, value in sorted(counters.items())]


def counter_label(key: str) -> str:
    """A counter's name as a page shows it, in the current language; a name of none of the
    COUNTER_LABELS as it is. The saved counters and `scrapy status` keep the name."""
    return _(COUNTER_LABELS[key]) if key in COUNTER_LABELS else key


def control_text(control: str) -> str:
    """What a run was asked from outside (``runs.control``) as its page says it after its state, in
    the current language: ``, asked to suspend``."""
    return _(CONTROL_TEXTS[control]) if control in CONTROL_TEXTS else _(", asked to %(action)s", action=control)


class RunEnded(Exception):
    """The run a process was started to join has ended (or is not the source's latest)."""


class RunConflict(Exception):
    """Another live process is crawling this source."""


@dataclass
class RunInfo:
    id: int
    source: str
    state: RunState
    resumed: bool
    sessions: int
    others: tuple[str, ...] = ()  # the other live nodes of the run when this one joined it


def _alive(host: str | None, pid: int | None) -> bool:
    """Is the process that owns a run still alive? (Only knowable on the same host.)"""
    if not pid:  # none recorded
        return False
    return host == this_host() and process_alive(pid)


def _recent(moment: datetime | None, seconds: float) -> bool:
    moment = as_utc(moment)
    return moment is not None and (now() - moment).total_seconds() < seconds


class Runs:
    def __init__(self, database: Database) -> None:
        self.engine = database.engine

    def latest(self, source: str) -> dict[str, Any] | None:
        with self.engine.connect() as connection:
            row = (
                connection.execute(select(runs).where(runs.c.source == source).order_by(runs.c.id.desc()).limit(1))
                .mappings()
                .first()
            )
            return dict(row) if row else None

    def get(self, run_id: int) -> dict[str, Any] | None:
        with self.engine.connect() as connection:
            row = connection.execute(select(runs).where(runs.c.id == run_id)).mappings().first()
            return dict(row) if row else None

    def last_finished_start(self, source: str) -> datetime | None:
        """When the source's last finished run that changed the index started (a test crawl
        changes nothing): an incremental listing's ``since``."""
        with self.engine.connect() as connection:
            started = connection.execute(
                select(runs.c.started_at)
                .where(
                    runs.c.source == source, runs.c.state == RunState.FINISHED, or_(runs.c.mode.is_(None), runs.c.mode != "test")
                )
                .order_by(runs.c.id.desc())
                .limit(1)
            ).scalar()
        return as_utc(started) if started is not None else None

    def recent(self, source: str | None, limit: int = 5) -> list[dict[str, Any]]:
        query = select(runs).order_by(runs.c.id.desc()).limit(limit)
        if source:
            query = query.where(runs.c.source == source)
        with self.engine.connect() as connection:
            return [dict(row) for row in connection.execute(query).mappings()]

    def of_period(self, since: datetime, limit: int) -> tuple[list[dict[str, Any]], dict[str, int]]:
        """The runs started or ended since ``since``, or running, newest first (``limit`` of
        them), and the latest run's id of every source: the daily summary's (ops/daily_summary.py),
        read together."""
        with self.engine.connect() as connection:
            rows = [
                dict(row)
                for row in connection.execute(
                    select(runs)
                    .where(or_(runs.c.started_at >= since, runs.c.ended_at >= since, runs.c.state == RunState.RUNNING))
                    .order_by(runs.c.id.desc())
                    .limit(limit)
                ).mappings()
            ]
            latest: dict[str, int] = dict(
                connection.execute(select(runs.c.source, func.max(runs.c.id)).group_by(runs.c.source)).tuples().all()
            )
        return rows, latest

    def conflict(self, source: str, allow_shared: bool = False, stale_after: float = 600) -> str | None:
        """Why a crawl of ``source`` would be refused now (``start``'s rule), or None. Read-only:
        `scrapy crawl` asks before it opens anything, so a refusal is one line, not a crawl that
        closes at once."""
        if allow_shared:
            return None
        with self.engine.connect() as connection:
            return self._conflict(connection, source, self._latest(connection, source), stale_after)

    def _conflict(self, connection: Connection, source: str, row: RowMapping | None, stale_after: float) -> str | None:
        """The refusal of a second process while ``row``, the source's latest run, is worked on
        by a live one (on this host: its process is alive; elsewhere: a node row had a heartbeat
        within ``stale_after`` seconds)."""
        if row is None or row["state"] != RunState.RUNNING:
            return None
        owner = f"process {row['pid']} on {row['host']}"
        others = self._live_nodes(connection, row["id"], stale_after)
        if others and not _alive(row["host"], row["pid"]):
            owner = f"{len(others)} node(s) ({', '.join(others)})"
        if not (_alive(row["host"], row["pid"]) or others):
            return None
        return (
            f"source {source} is being crawled by {owner} (run {row['id']}); not starting a second crawl "
            "(a shared crawl joins: SEARCHCRAWL_SHARED_CRAWL)"
        )

    @staticmethod
    def _latest(connection: Connection, source: str) -> RowMapping | None:
        return (
            connection.execute(select(runs).where(runs.c.source == source).order_by(runs.c.id.desc()).limit(1)).mappings().first()
        )

    def live(self, source: str, stale_after: float = 600) -> bool:
        """Is a crawl of ``source`` running now? On this host: its process is alive; on another
        host: its run was updated within ``stale_after`` seconds (progress ticks update it)."""
        run = self.latest(source)
        if run is None or run["state"] != RunState.RUNNING:
            return False
        if run["host"] == this_host():
            return _alive(run["host"], run["pid"])
        return _recent(run["updated_at"], stale_after)

    def dead(self, run: dict[str, Any], stale_after: float = 600) -> bool:
        """Is ``run`` marked running although nothing works on it any more (its process was
        killed, its machine lost)? On this host: its process is gone; elsewhere: no update and no
        node heartbeat within ``stale_after`` seconds. The next crawl resumes it."""
        if run["state"] != RunState.RUNNING:
            return False
        with self.engine.connect() as connection:
            if self._live_nodes(connection, run["id"], stale_after):
                return False
        if run["host"] == this_host():
            return not _alive(run["host"], run["pid"])
        return not _recent(run["updated_at"], stale_after)

    def _lock_source(self, connection: Connection, source: str) -> None:
        """Serialise run starts of one source across processes (three nodes starting at once
        must join one run, not start three)."""
        if self.engine.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"searchcrawl-run:{source}"})
        else:  # SQLite: the first write statement takes the database's write lock
            connection.execute(update(runs).where(runs.c.id == -1).values(state=RunState.RUNNING))

    def start(
        self,
        source: str,
        fresh: bool = False,
        allow_shared: bool = False,
        job: str | None = None,
        stale_after: float = 600,
        owner: str | None = None,
        join_run: int | None = None,
    ) -> RunInfo:
        """Resume the source's unfinished run, or start a new one (``fresh`` abandons the old).
        With ``join_run``, only join that run while it runs (RunEnded otherwise).

        Refuses (RunConflict, see ``conflict``) while another live process crawls the source,
        unless ``allow_shared``: then this process joins the run (a shared crawl).
        ``job``: the scrapyd job of this session, shown by `scrapy status`. ``owner``: this
        node, registered as working on the run under the same lock, so that of three nodes
        starting at once each sees the ones before it (RunInfo.others): registered later, a node
        took the run for an abandoned one and gave back the leases of a node already at work.
        """
        when = now()
        with self.engine.begin() as connection:
            self._lock_source(connection, source)
            row = self._latest(connection, source)
            if join_run is not None and (row is None or row["id"] != join_run or row["state"] != RunState.RUNNING):
                raise RunEnded(f"run {join_run} of {source} has ended")
            refusal = None if allow_shared else self._conflict(connection, source, row, stale_after)
            if refusal is not None:
                raise RunConflict(refusal)
            if row is not None and row["state"] == RunState.RUNNING and allow_shared:
                fresh = False  # joining the fleet's run, never abandoning it
            if row is not None and row["state"] in RESUMABLE:
                if not fresh:
                    return self._resume(connection, row, source, job, owner, stale_after, when)
                connection.execute(
                    update(runs)
                    .where(runs.c.id == row["id"])
                    .values(state=RunState.STOPPED, ended_at=when, reason="abandoned for a fresh run (-a fresh=1)")
                )
            return self._insert(connection, source, job, owner, stale_after, when)

    def _resume(
        self,
        connection: Connection,
        row: Any,
        source: str,
        job: str | None,
        owner: str | None,
        stale_after: float,
        when: datetime,
    ) -> RunInfo:
        """``start``'s resumption of the unfinished run ``row`` at ``when``: one session more, run by this process."""
        sessions = row["sessions"] + 1
        connection.execute(
            update(runs)
            .where(runs.c.id == row["id"])
            .values(
                state=RunState.RUNNING,
                control=None,
                host=this_host(),
                pid=os.getpid(),
                updated_at=when,
                sessions=sessions,
                job=job,
            )
        )
        others = self._join(connection, row["id"], owner, stale_after)
        return RunInfo(row["id"], source, RunState.RUNNING, True, sessions, others)

    def _insert(
        self, connection: Connection, source: str, job: str | None, owner: str | None, stale_after: float, when: datetime
    ) -> RunInfo:
        """``start``'s new run of ``source``, begun at ``when``, run by this process."""
        result = connection.execute(
            runs.insert().values(
                source=source,
                state=RunState.RUNNING,
                started_at=when,
                updated_at=when,
                host=this_host(),
                pid=os.getpid(),
                sessions=1,
                job=job,
            )
        )
        key = result.inserted_primary_key
        assert key is not None  # one row inserted (not executemany): its key is known
        return RunInfo(key[0], source, RunState.RUNNING, False, 1, self._join(connection, key[0], owner, stale_after))

    # --- nodes of a run (shared crawls) ----------------------------------------------------------

    @staticmethod
    def _live_nodes(connection: Connection, run_id: int, within: float, but: str | None = None) -> list[str]:
        """A node is live if its heartbeat is recent and, on this host, its process is alive."""
        since = now() - timedelta(seconds=within)
        rows: Result[str, str | None, int | None] = connection.execute(
            select(crawl_nodes.c.owner, crawl_nodes.c.host, crawl_nodes.c.pid).where(
                crawl_nodes.c.run_id == run_id, crawl_nodes.c.heartbeat >= since
            )
        )
        here = this_host()
        return [owner for owner, host, pid in rows if owner != but and (host != here or _alive(host, pid))]

    def _join(self, connection: Connection, run_id: int, owner: str | None, within: float) -> tuple[str, ...]:
        """This process works on the run (one row per node, kept alive by ``heartbeat``); returns
        the run's other live nodes. Without ``owner``, registers nothing."""
        if owner is None:
            return ()
        others = tuple(self._live_nodes(connection, run_id, within, but=owner))
        when = now()
        connection.execute(delete(crawl_nodes).where(crawl_nodes.c.run_id == run_id, crawl_nodes.c.owner == owner))
        connection.execute(
            crawl_nodes.insert().values(
                run_id=run_id, owner=owner, host=this_host(), pid=os.getpid(), started_at=when, heartbeat=when
            )
        )
        return others

    def heartbeat(self, run_id: int, owner: str) -> None:
        with self.engine.begin() as connection:
            connection.execute(
                update(crawl_nodes).where(crawl_nodes.c.run_id == run_id, crawl_nodes.c.owner == owner).values(heartbeat=now())
            )

    def leave(self, run_id: int, owner: str) -> None:
        with self.engine.begin() as connection:
            connection.execute(delete(crawl_nodes).where(crawl_nodes.c.run_id == run_id, crawl_nodes.c.owner == owner))

    def nodes(self, run_id: int, within: float, but: str | None = None) -> list[str]:
        """Owners (host:pid) of the nodes working on the run, seen within ``within`` seconds."""
        with self.engine.connect() as connection:
            return self._live_nodes(connection, run_id, within, but)

    def nodes_locked(self, connection: Connection, source: str, run_id: int, within: float, but: str | None = None) -> list[str]:
        """``nodes``, read with the source's lock taken in ``connection``'s transaction: a node
        joins a run under that lock (``start``), so until the transaction ends no node joins,
        and no node outside this list can hold a lease of the run (it leases once joined)."""
        self._lock_source(connection, source)
        return self._live_nodes(connection, run_id, within, but)

    def claim_finish(self, run_id: int) -> bool:
        """Claim the end of a shared run (removals, delta report): exactly one node wins."""
        with self.engine.begin() as connection:
            result = connection.execute(
                update(runs)
                .where(runs.c.id == run_id, runs.c.state == RunState.RUNNING, runs.c.control.is_(None))
                .values(control=FINISHING)
            )
            return bool(result.rowcount)

    def update(self, run_id: int, counters: dict[str, Any]) -> str | None:
        """Save the run's counters; returns a pending control request (suspend/stop), if any.
        The frontier's counts (queued, leased, done) not given keep their saved values: the
        progress line gives them only when it has just counted them, so that a node of a shared
        crawl never puts its older count over another's newer one. Written only over the value
        read (compare and set, as SQLite takes no lock on a read), again if another node wrote
        in between."""
        control: str | None = None
        with self.engine.connect() as connection:
            for _attempt in range(UPDATE_ATTEMPTS):
                saved = connection.execute(select(runs.c.counters, runs.c.control).where(runs.c.id == run_id)).first()
                if saved is None:
                    connection.rollback()
                    return None
                control = saved.control
                counts = {key: value for key, value in json.loads(saved.counters or "{}").items() if key in FRONTIER_COUNTS}
                written = connection.execute(
                    update(runs)
                    .where(
                        runs.c.id == run_id, runs.c.counters == saved.counters if saved.counters else runs.c.counters.is_(None)
                    )
                    .values(counters=json.dumps({**counts, **counters}, default=str), updated_at=now())
                )
                connection.commit()
                if written.rowcount:
                    break
            return control

    def end(self, run_id: int, state: RunState, counters: dict[str, Any], reason: str) -> None:
        when = now()
        values: dict[str, Any] = {
            "state": state,
            "counters": json.dumps(counters, default=str),
            "updated_at": when,
            "reason": reason,
            "control": None,
        }
        if state not in RESUMABLE:
            values["ended_at"] = when
        with self.engine.begin() as connection:
            connection.execute(update(runs).where(runs.c.id == run_id).values(**values))

    def fingerprint(self, source: str) -> dict[str, Any] | None:
        with self.engine.connect() as connection:
            value = connection.execute(
                select(source_states.c.fingerprint).where(source_states.c.source == source)
            ).scalar_one_or_none()
            return json.loads(value) if value else None

    def save_fingerprint(self, source: str, fingerprint: dict[str, Any]) -> None:
        with self.engine.begin() as connection:
            connection.execute(source_states.delete().where(source_states.c.source == source))
            connection.execute(
                source_states.insert().values(source=source, fingerprint=json.dumps(fingerprint), updated_at=now())
            )

    def set_mode(self, run_id: int, mode: str) -> None:
        with self.engine.begin() as connection:
            connection.execute(update(runs).where(runs.c.id == run_id).values(mode=mode))

    def set_plan_owner(self, run_id: int, owner: str | None) -> None:
        """The node making the run's maintenance plan ("": nobody, its maker failed; None: the
        plan is made): crawl/run_start.py."""
        with self.engine.begin() as connection:
            connection.execute(update(runs).where(runs.c.id == run_id).values(plan_owner=owner))

    def plan_owner(self, run_id: int) -> str | None:
        """Who makes the run's maintenance plan ("": nobody now); None once it is made. While it
        is not, no node ends the run."""
        with self.engine.connect() as connection:
            owner: str | None = connection.execute(select(runs.c.plan_owner).where(runs.c.id == run_id)).scalar_one_or_none()
            return owner

    def plan_pending(self, run_id: int) -> bool:
        """Whether the run's maintenance plan is still to be made (or being made)."""
        return self.plan_owner(run_id) is not None

    def take_over_plan(self, run_id: int, gone: str, owner: str) -> bool:
        """``owner`` makes the run's plan in place of ``gone`` (a node no longer alive, or ""):
        exactly one node wins."""
        with self.engine.begin() as connection:
            result = connection.execute(
                update(runs).where(runs.c.id == run_id, runs.c.plan_owner == gone).values(plan_owner=owner)
            )
            return bool(result.rowcount)

    def control(self, source: str, action: str) -> dict[str, Any] | None:
        """Ask the source's running crawl to suspend or stop; a suspended run is stopped directly."""
        if action not in CONTROLS:
            raise ValueError(f"expected one of {', '.join(CONTROLS)}")
        run = self.latest(source)
        if run is None or run["state"] not in RESUMABLE:
            return None
        if run["state"] == RunState.RUNNING and _alive(run["host"], run["pid"]):
            with self.engine.begin() as connection:
                connection.execute(update(runs).where(runs.c.id == run["id"]).values(control=action))
        elif action == "stop":
            self.end(run["id"], RunState.STOPPED, json.loads(run["counters"] or "{}"), "stopped by hand")
        else:
            self.end(run["id"], RunState.SUSPENDED, json.loads(run["counters"] or "{}"), "suspended by hand")
        return self.latest(source)
