"""`scrapy status [source]`: the document table by state and status, the last runs with their
counters, the cache fill and what waits to be indexed."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

from scrapy.commands import ScrapyCommand
from scrapy.settings import BaseSettings

from searchcrawl.commands import open_database
from searchcrawl.config.source import SourceError
from searchcrawl.index.cache import spool_fill
from searchcrawl.ops.health import HealthCheck
from searchcrawl.ops.stalls import stalls
from searchcrawl.ops.terminal import printable
from searchcrawl.rules.status_codes import describe
from searchcrawl.store import Database, DocumentTable, State
from searchcrawl.store.models import RunState
from searchcrawl.store.runs import Runs, counters_of, shown_counters
from searchcrawl.system import paths


def source_report(table: DocumentTable, name: str, cache_bytes: int, cache_spools: int, lease_seconds: float = 600) -> list[str]:
    lines = [f"== {name}"]
    states = table.count_by(name, "state")
    lines.append("documents: " + (", ".join(f"{state} {count}" for state, count in sorted(states.items())) or "none"))
    for status, count in sorted(table.count_by(name, "status").items(), key=lambda item: (item[0] is None, item[0] or 0)):
        lines.append(f"  {status if status is not None else '-':>5}  {count:>8}  {describe(status)}")
    lines.append(
        f"cache: {cache_spools} spool files, {cache_bytes / 1e6:.1f} MB; waiting for Solr: "
        f"{states.get(State.PENDING.value, 0)} to add, {states.get(State.REMOVING.value, 0)} to remove"
    )
    runs = Runs(table.database)
    for run in runs.recent(name):
        shown = "; ".join(f"{key} {value}" for key, value in shown_counters(counters_of(run)))
        started = run["started_at"].strftime("%Y-%m-%d %H:%M:%S")
        state = run["state"]
        if runs.dead(run, lease_seconds):
            state = f"dead (marked running, but process {run['pid']} on {run['host']} is gone; the next crawl resumes it)"
        lines.append(
            f"run {run['id']}: {state}, started {started}, {run['sessions']} session(s)"
            + (f", scrapyd job {run['job']}" if run["job"] else "")
            + (f", {run['reason']}" if run["reason"] else "")
            + (f"; {shown}" if shown else "")
        )
        if run["state"] == RunState.RUNNING and not state.startswith("dead"):
            nodes = runs.nodes(run["id"], within=lease_seconds)  # heartbeats: every third of it
            if nodes:
                lines.append(f"  nodes working on it: {', '.join(nodes)}")
    return lines


def known_source(loader: Any, table: DocumentTable, name: str) -> bool:
    """Whether ``name`` is a source: it has a source file (broken or not), or the document table
    or the runs table holds something of it (a source whose file was removed since)."""
    try:
        loader.load(name)
    except SourceError:  # a broken source file still names a source
        pass
    except KeyError:
        return bool(table.count_by(name, "state") or Runs(table.database).recent(name, limit=1))
    return True


def stall_lines(settings: BaseSettings, database: Database, names: list[str]) -> dict[str, list[str]]:
    """The stalled runs of ``names`` (ops/stalls.py), a STALLED line each, by source. Solr and
    Tika are pinged once (bounded by a 5 s timeout each) when a run is stalled."""
    moment = datetime.now(UTC)
    stall_after, stale_after = settings.getfloat("SEARCHCRAWL_STALL_AFTER"), settings.getfloat("SEARCHCRAWL_LEASE_SECONDS")
    found = stalls(database, moment, stall_after, stale_after, None, names)
    if found:  # only then are Solr and Tika asked
        health = HealthCheck.of(
            paths.solr_url(settings), settings.get("SEARCHCRAWL_TIKA_URL") or "", solr_auth=paths.solr_auth(settings)
        )
        found = stalls(database, moment, stall_after, stale_after, health.now(), names)
    lines: dict[str, list[str]] = {}
    for stall in found:
        lines.setdefault(stall.source, []).append("STALLED: " + stall.text(moment))
    return lines


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[source]"

    def short_desc(self) -> str:
        return "Show the document table by state and status, recent runs, cache and pending documents"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None and self.crawler_process is not None
        loader = self.crawler_process.spider_loader
        names = args or sorted(loader.list())
        with open_database(self.settings) as database:
            table = DocumentTable(database)
            unknown = [name for name in args if not known_source(loader, table, name)]
            if unknown:  # a typo is an error, not a source with no documents
                sources = ", ".join(sorted(loader.list())) or "none"
                print(f"searchcrawl: no source named {', '.join(map(repr, unknown))} (sources: {sources})", file=sys.stderr)
                self.exitcode = 2
                return
            stalled = stall_lines(self.settings, database, names)
            for name in names:
                size, files = spool_fill(paths.data_dir(self.settings) / "cache" / name)
                lines = source_report(table, name, size, files, self.settings.getfloat("SEARCHCRAWL_LEASE_SECONDS"))
                lines += stalled.get(name, [])
                print("\n".join(printable(line) for line in lines))  # run reasons quote the sites
