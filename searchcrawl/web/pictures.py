"""What the administration pages plot (issue 60): a source's runs over time, a run's progress.

Data from the project's own stores, drawn by charts.py (SVG on the server, inline in the page):

- a source's page: its last SOURCE_RUNS runs (the runs table's counters): documents in the index
  after each run (``documents``, counted as the run ended), new, changed and deleted per run (the
  delta report's counts), pages per minute (pages over the run's time, pauses between sessions
  included) and failed fetches by kind (``failures``: crawl/run.py's failure_counts). Runs ended
  before these counters existed have none: their points are left out, their bars are empty.
- a run's page: its samples (store/samples.py: one per RunMonitor tick, SEARCHCRAWL_PROGRESS_INTERVAL)
  of pages fetched, URLs done and to fetch (queued and in flight), documents waiting for Solr;
  an ended run's last point is its final counters.

Titles, axis and series labels are in the page's language (system/translations.py); the failure
kinds the crawl names in words are too, its status classes (4xx, 5xx) are shown as they are.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from markupsafe import Markup

from searchcrawl.rules.lifecycle import Delta, delta_label
from searchcrawl.store.database import as_utc
from searchcrawl.store.runs import COUNTER_LABELS, counters_of
from searchcrawl.system.translations import N_
from searchcrawl.system.translations import gettext as _
from searchcrawl.web.charts import Series, line_chart, stacked_bars

SOURCE_RUNS = 30  # the runs a source's page plots (the latest)
CHANGES = (Delta.NEW, Delta.CHANGED, Delta.DELETED)  # named by their delta labels (rules/lifecycle.py)
# the failure kinds of crawl/run.py's failure_counts said in words (its FAILURE_STATS), as the chart
# and the run page's failures counter name them
FAILURE_LABELS = {"network": N_("network"), "login refused": N_("login refused"), "Solr refused": N_("Solr refused")}
# the run page's lines: the samples' counters (their names as store/runs.py's COUNTER_LABELS), translated where drawn
PROGRESS_LABELS = {
    "pages": COUNTER_LABELS["pages"],
    "done": COUNTER_LABELS["done"],
    "to fetch": N_("to fetch"),
    "waiting for Solr": N_("waiting for Solr"),
}


def failure_label(kind: str) -> str:
    """A failure kind of a run's ``failures`` counter as a page names it: the crawl's words in the
    current language, a status class (4xx, 5xx) as it is."""
    return _(FAILURE_LABELS[kind]) if kind in FAILURE_LABELS else kind


def _seconds(moment: datetime | None) -> float | None:
    moment = as_utc(moment)
    return moment.timestamp() if moment is not None else None


def _count(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def pages_per_minute(run: dict[str, Any]) -> float | None:
    """The run's pages over its time (start to end, or its last update while it runs)."""
    started, ended = _seconds(run.get("started_at")), _seconds(run.get("ended_at") or run.get("updated_at"))
    pages = _count(counters_of(run).get("pages"))
    if started is None or ended is None or pages is None or ended <= started:
        return None
    return pages * 60 / (ended - started)


def source_charts(runs: list[dict[str, Any]]) -> list[Markup]:
    """The source page's charts, of ``runs`` (any order; the latest SOURCE_RUNS plotted)."""
    runs = sorted(runs, key=lambda run: run["id"])[-SOURCE_RUNS:]
    documents, rates = [], []
    for run in runs:
        counters = counters_of(run)
        ended = _seconds(run.get("ended_at") or run.get("updated_at"))  # a suspended run has no end
        if ended is not None and (count := _count(counters.get("documents"))) is not None:
            documents.append((ended, count))
        started, rate = _seconds(run.get("started_at")), pages_per_minute(run)
        if started is not None and rate is not None:
            rates.append((started, rate))
    names = [_("run %(id)s", id=run["id"]) for run in runs]

    def per_run(key: str, kind: str) -> list[tuple[float, float]]:
        values = [counters_of(run).get(key) for run in runs]
        return [(float(i), _count(value.get(kind)) or 0.0 if isinstance(value, dict) else 0.0) for i, value in enumerate(values)]

    kinds: dict[str, float] = {}
    for run in runs:
        failures = counters_of(run).get("failures")
        for kind, count in failures.items() if isinstance(failures, dict) else ():
            kinds[str(kind)] = kinds.get(str(kind), 0.0) + (_count(count) or 0.0)
    failure_kinds = sorted(kinds, key=lambda kind: -kinds[kind])
    return [
        line_chart(
            _("Documents in the index after each run"), [Series(_("documents"), documents)], y_label=_("documents"), integer=True
        ),
        stacked_bars(
            _("New, changed and deleted documents per run"),
            names,
            [Series(delta_label(kind), per_run("delta", kind.value)) for kind in CHANGES],
            y_label=_("documents"),
        ),
        line_chart(_("Pages per minute of each run"), [Series(_("pages/min"), rates)], y_label=_("pages/min")),
        stacked_bars(
            _("Failed fetches per run, by kind"),
            names if failure_kinds else [],
            [Series(failure_label(kind), per_run("failures", kind)) for kind in failure_kinds],
            y_label=_("fetches"),
        ),
    ]


def run_chart(run: dict[str, Any], samples: list[dict[str, Any]]) -> Markup:
    """The run page's progress chart: its samples, and an ended run's final counters."""
    lines: dict[str, list[tuple[float, float]]] = {label: [] for label in PROGRESS_LABELS}

    def add(at: float, values: dict[str, Any]) -> None:
        queued, leased = _count(values.get("queued")), _count(values.get("leased"))
        for label, value in (
            ("pages", _count(values.get("pages"))),
            ("done", _count(values.get("done"))),
            ("to fetch", queued + (leased or 0.0) if queued is not None else None),
            ("waiting for Solr", _count(values.get("pending"))),
        ):
            if value is not None:
                lines[label].append((at, value))

    for sample in samples:
        if (at := _seconds(sample.get("at"))) is not None:
            add(at, sample)
    ended = _seconds(run.get("ended_at"))
    if ended is not None and samples:
        add(ended, counters_of(run))
    series = [Series(_(PROGRESS_LABELS[label]), points) for label, points in lines.items()]
    return line_chart(_("Progress of run %(id)s", id=run["id"]), series, y_label=_("count"), integer=True)
