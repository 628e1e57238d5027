"""`scrapy report <source> [--run N] [--json]`: the delta report of a run (the last by default):
new, changed, unchanged, not modified (304), deleted, held, refused, failed, excluded, redirected
and duplicate URLs; each URL that did not simply enter or stay in the index with its status and
reason in that run (a soft error's marker, the rule that excluded it, why it left)."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.commands import open_database
from searchcrawl.ops.notify_events import status_text
from searchcrawl.ops.secrets import redact
from searchcrawl.ops.terminal import printable
from searchcrawl.rules.lifecycle import Delta
from searchcrawl.store import Database, Deltas
from searchcrawl.store.deltas import DeltaEntry
from searchcrawl.store.runs import Runs


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "<source> [--run N] [--json]"

    def short_desc(self) -> str:
        return "Print the delta report of a source's run: what was new, changed, deleted, ..."

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--run", type=int, default=None, help="run id (default: the last run)")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("expected a source name")
        assert self.settings is not None
        with open_database(self.settings) as database:
            report = run_report(database, args[0], opts.run)
        if report is None:
            print(f"{args[0]}: no such run")
            self.exitcode = 1
            return
        if opts.json:
            print(json.dumps(report, indent=2))
            return
        started = datetime.fromisoformat(report["started_at"])
        print(f"Run {report['run']} of {args[0]}: {report['state']} ({report['mode']}), started {started:%Y-%m-%d %H:%M:%S}")
        for kind in Delta:
            urls = report["urls"][kind]
            print(f"{kind:>13}: {len(urls)}")
            for url in urls:
                print(f"               {printable(url)}")
                why = report["reasons"].get(url)
                if why:
                    print(f"                 {printable(reason_text(why))}")
        if report["skipped"]:
            print(f"{'skipped':>13}: {report['skipped']} (listed, but no document: a row without a key, a key listed before)")


# the kinds of URLs that entered or stayed in the index: their status and reason say nothing more
ROUTINE = frozenset({Delta.NEW, Delta.CHANGED, Delta.UNCHANGED, Delta.NOT_MODIFIED})


def reason_of(entry: DeltaEntry) -> dict[str, Any] | None:
    """Why a URL of the report is where it is (its status and reason in that run, masked), when
    it did not simply enter or stay in the index and its row says."""
    if entry.kind in ROUTINE or (entry.status is None and not entry.reason):
        return None
    return {"status": entry.status, "reason": redact(entry.reason or "") or None}


def reason_text(why: dict[str, Any]) -> str:
    status = status_text(why["status"]) if why["status"] is not None else ""
    return ": ".join(part for part in (status, why["reason"] or "") if part)


def run_report(database: Database, source: str, run_id: int | None = None) -> dict[str, Any] | None:
    """The delta report of one run of ``source`` (the last by default) as ``--json`` prints it:
    the run's id, state, mode and start, each kind of change with its count and URLs, why each
    URL that did not simply enter or stay in the index is there (``reasons``: its status and
    reason in that run, by URL), and how many entries the listing skipped; None when there is
    no such run."""
    runs = {run["id"]: run for run in Runs(database).recent(source, limit=1000)}
    run_id = run_id or (max(runs) if runs else None)
    if run_id is None or run_id not in runs:
        return None
    deltas: dict[str, list[str]] = {}
    reasons: dict[str, dict[str, Any]] = {}
    for entry in Deltas(database).entries(source, run_id):
        deltas.setdefault(entry.kind, []).append(entry.url)
        why = reason_of(entry)
        if why is not None:
            reasons[entry.url] = why
    run = runs[run_id]
    return {
        "source": source,
        "run": run_id,
        "state": run["state"],
        "mode": run["mode"],
        "started_at": run["started_at"].isoformat(),
        "counts": {kind.value: len(deltas.get(kind, [])) for kind in Delta},
        "urls": {kind.value: deltas.get(kind, []) for kind in Delta},
        "reasons": reasons,
        # entries of the repository that have no URL of their own (a database row without a key,
        # a second row of a key): the agent's listing passed them over
        "skipped": json.loads(run["counters"] or "{}").get("skipped", 0),
    }
