"""The project's Prometheus metrics, read from the project database (the web application's
/metrics, web/app.py): per source, what the document table, the runs table and stall detection
know, and Solr's and Tika's health.

A custom Collector (prometheus_client's public API) on a CollectorRegistry of the caller's own:
nothing is registered in the library's global registry, so two applications (or tests) in one
process never see each other's metrics. Labels are bounded: source names, document states,
status classes (rules/status_codes.py ``status_class``: 2xx..5xx, searchcrawl for its own codes, other, none) and run states; never a
URL. A scrape reads, per source, the document table grouped by state (its index only) and the
statuses of the documents out of the index (through the same index: their cost grows with
those documents, not with the source), the latest run, and the stall
check's bounded reads; the result is kept ``cache_seconds`` (SEARCHCRAWL_METRICS_CACHE_SECONDS),
so scrapes more frequent than that cost nothing, and searchcrawl_metrics_collect_seconds says
what the last real read cost.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from searchcrawl.ops.health import Health, HealthCheck
from searchcrawl.ops.stalls import NOT_REPORTING, NOTHING_FETCHED, STALL_AFTER, stalls
from searchcrawl.rules.status_codes import status_class
from searchcrawl.store.database import Database, as_utc
from searchcrawl.store.documents import DocumentTable
from searchcrawl.store.models import FrontierState, RunState
from searchcrawl.store.progress import RunProgress
from searchcrawl.store.runs import Runs, counters_of

RUN_STATES = tuple(state.value for state in RunState)
FRONTIER_STATES = tuple(state.value for state in FrontierState)


def _timestamp(moment: datetime | None) -> float | None:
    moment = as_utc(moment)
    return moment.timestamp() if moment is not None else None


class ProjectCollector(Collector):
    """The project's metrics (module docstring). ``sources``: the source names (read at each
    real collection: new source files show without a restart)."""

    def __init__(
        self,
        database: Database,
        sources: Callable[[], list[str]],
        health: HealthCheck | None = None,
        stall_after: float = STALL_AFTER,
        stale_after: float = 600,
        cache_seconds: float = 60,
    ) -> None:
        self.database = database
        self.sources = sources
        self.health = health
        self.stall_after = stall_after
        self.stale_after = stale_after
        self.cache_seconds = cache_seconds
        self._lock = threading.Lock()
        self._cached: tuple[float, list[Metric]] | None = None

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            if self._cached is None or time.monotonic() - self._cached[0] >= self.cache_seconds:
                self._cached = (time.monotonic(), self._read())
            yield from self._cached[1]

    def _read(self) -> list[Metric]:
        started = time.perf_counter()
        table, runs = DocumentTable(self.database), Runs(self.database)
        names = self.sources()
        families = {name: GaugeMetricFamily(name, text, labels=labels) for name, (text, labels) in FAMILIES.items()}
        latest: dict[str, dict[str, Any]] = {}
        for name in names:
            _documents(families, table, name)
            run = runs.latest(name)
            if run is not None:
                latest[name] = run
                _run(families, name, run)
        health = self.health.now() if self.health is not None else None
        self._running(families, latest, names, health)
        found: list[Metric] = list(families.values())
        if health is not None and health.solr is not None:
            found.append(
                GaugeMetricFamily("searchcrawl_solr_up", "1 when Solr answers its ping (cached)", value=float(health.solr))
            )
        if health is not None and health.tika is not None:
            found.append(
                GaugeMetricFamily("searchcrawl_tika_up", "1 when Tika answers /version (cached)", value=float(health.tika))
            )
        found.append(
            GaugeMetricFamily(
                "searchcrawl_metrics_collect_seconds",
                "What the last read of these metrics took",
                value=time.perf_counter() - started,
            )
        )
        return found

    def _running(
        self, families: dict[str, GaugeMetricFamily], latest: dict[str, dict[str, Any]], names: list[str], health: Health | None
    ) -> None:
        """The running runs' last answer and stall (ops/stalls.py)."""
        running = {run["id"]: name for name, run in latest.items() if run["state"] == RunState.RUNNING}
        for run_id, reports in RunProgress(self.database).of_runs(running).items():
            # only a process that had an answer: before, its fetched_at is its session's start
            # (the clock of "nothing fetched"), no fetch; the metric is absent until one
            fetched = [report.fetched_at for report in reports if report.pages > 0]
            if fetched:
                moment = max(fetched).timestamp()
                families["searchcrawl_run_last_fetch_timestamp_seconds"].add_metric([running[run_id]], moment)
        now = datetime.now(UTC)
        found = {stall.source: stall for stall in stalls(self.database, now, self.stall_after, self.stale_after, health, names)}
        for name in running.values():
            stall = found.get(name)
            for kind in (NOTHING_FETCHED, NOT_REPORTING):
                value = 1.0 if stall is not None and stall.kind == kind else 0.0
                families["searchcrawl_run_stalled"].add_metric([name, kind.replace(" ", "_")], value)


# name: (help, labels) of the gauges read at each collection
FAMILIES: dict[str, tuple[str, list[str]]] = {
    "searchcrawl_documents": ("Documents of a source by state (document table)", ["source", "state"]),
    "searchcrawl_documents_not_indexed": (
        "Documents refused, failed, excluded or removed, by status class",
        ["source", "status_class"],
    ),
    "searchcrawl_frontier_urls": ("The running run's frontier by state (as last counted)", ["source", "state"]),
    "searchcrawl_run_state": ("1 for the state of the source's latest run", ["source", "state"]),
    "searchcrawl_run_started_timestamp_seconds": ("The latest run's start", ["source"]),
    "searchcrawl_run_updated_timestamp_seconds": ("The latest run's last counter save", ["source"]),
    "searchcrawl_run_ended_timestamp_seconds": ("The latest run's end (ended runs)", ["source"]),
    "searchcrawl_run_pages": ("Pages fetched by the latest run", ["source"]),
    "searchcrawl_run_indexed": ("Documents indexed by the latest run", ["source"]),
    "searchcrawl_run_last_fetch_timestamp_seconds": ("When the running run last had an answer from a site", ["source"]),
    "searchcrawl_run_stalled": (
        "1 when the running run is stalled, by kind (nothing_fetched, not_reporting)",
        ["source", "kind"],
    ),
}


def _documents(families: dict[str, GaugeMetricFamily], table: DocumentTable, name: str) -> None:
    for state, count in sorted(table.count_by(name, "state").items()):
        families["searchcrawl_documents"].add_metric([name, str(state)], count)
    classes: dict[str, int] = {}
    for status, count in table.not_indexed_statuses(name).items():
        classes[status_class(status)] = classes.get(status_class(status), 0) + count
    for label, count in sorted(classes.items()):
        families["searchcrawl_documents_not_indexed"].add_metric([name, label], count)


def _run(families: dict[str, GaugeMetricFamily], name: str, run: dict[str, Any]) -> None:
    """The source's latest run: its state, times and counters (the frontier's while it runs)."""
    counters = counters_of(run)
    for state in RUN_STATES:
        families["searchcrawl_run_state"].add_metric([name, state], 1.0 if run["state"] == state else 0.0)
    for key, column in (("started", "started_at"), ("updated", "updated_at"), ("ended", "ended_at")):
        value = _timestamp(run[column])
        if value is not None:
            families[f"searchcrawl_run_{key}_timestamp_seconds"].add_metric([name], value)
    for key in ("pages", "indexed"):
        if isinstance(counters.get(key), int):
            families[f"searchcrawl_run_{key}"].add_metric([name], counters[key])
    if run["state"] == RunState.RUNNING:
        for state in FRONTIER_STATES:
            if isinstance(counters.get(state), int):
                families["searchcrawl_frontier_urls"].add_metric([name, state], counters[state])
