"""Where a crawl's processes waited (issue 94): the wait profiles its processes wrote
(``SEARCHCRAWL_WAIT_PROFILE``, searchcrawl/crawl/extensions/wait_profile.py), summed and given per
page: each kind of statement's count and milliseconds a page, those of 1 ms or more (SQLite's busy
handler sleeps at least that long), the writer lock's waits, the event loop's idle time, and the
CPU a page apart: user and system, the garbage collector's, page faults and context switches
(issue 102: where two processes' extra CPU a page goes, which py-spy's stacks do not say).

    .venv/bin/python -m tests.benchmarks.waits FOLDER
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.benchmarks.measure import markdown_table


def summarise(folder: Path) -> dict[str, Any]:
    """The profiles in ``folder`` (one a process), summed, per page."""
    runs = [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]
    pages = max(1, sum(run["responses"] for run in runs))
    wall = sum(run["wall_s"] for run in runs) or 1.0
    kinds: dict[str, dict[str, float]] = {}
    for run in runs:
        for kind, tally in run["statements"].items():
            total = kinds.setdefault(kind, {"count": 0, "seconds": 0.0, "slow": 0, "slow_seconds": 0.0})
            for key in total:
                total[key] += tally[key]
    idle = sum(run["loop_idle_s"] or 0 for run in runs)

    def usage(name: str) -> float:
        return sum(run.get("usage", {}).get(name, 0) for run in runs)

    return {
        "processes": len(runs),
        "responses": pages,
        "cpu_ms_per_page": round(1000 * sum(run["cpu_s"] for run in runs) / pages, 3),
        "user_ms_per_page": round(1000 * usage("utime") / pages, 3),
        "system_ms_per_page": round(1000 * usage("stime") / pages, 3),
        "gc_ms_per_page": round(1000 * sum(sum(run.get("gc_s", ())) for run in runs) / pages, 3),
        "gc_full_collections": sum(run.get("gc_collections", [0, 0, 0])[2] for run in runs),
        "minor_faults_per_page": round(usage("minflt") / pages, 2),
        "context_switches_per_page": round(usage("nvcsw") / pages, 2),
        "preemptions_per_page": round(usage("nivcsw") / pages, 2),
        "per_process": [
            {
                "responses": run["responses"],
                "cpu_s": run["cpu_s"],
                "wall_s": run["wall_s"],
                "pushes": run.get("pushes"),
                **run.get("usage", {}),
            }
            for run in runs
        ],
        "loop_idle_share": round(idle / wall, 4),
        "loop_idle_ms_per_page": round(1000 * idle / pages, 3),
        "lock_wait_ms_per_page": round(
            1000 * sum(total["seconds"] for kind, total in kinds.items() if kind.startswith("writer lock")) / pages, 3
        ),
        "statements_ms_per_page": round(
            1000 * sum(total["seconds"] for kind, total in kinds.items() if not kind.startswith("writer lock")) / pages, 3
        ),
        "kinds": {
            kind: {
                "per_page": round(total["count"] / pages, 3),
                "ms_per_page": round(1000 * total["seconds"] / pages, 3),
                "mean_ms": round(1000 * total["seconds"] / max(1, total["count"]), 3),
                "slow_per_page": round(total["slow"] / pages, 4),
                "slow_ms_per_page": round(1000 * total["slow_seconds"] / pages, 3),
            }
            for kind, total in sorted(kinds.items(), key=lambda item: -item[1]["seconds"])
        },
    }


def markdown(summary: dict[str, Any]) -> str:
    return markdown_table(
        f"{summary['processes']} processes, {summary['responses']:,} responses: CPU {summary['cpu_ms_per_page']} ms a page, "
        f"statements {summary['statements_ms_per_page']} ms, writer lock {summary['lock_wait_ms_per_page']} ms, "
        f"event loop idle {summary['loop_idle_ms_per_page']} ms ({100 * summary['loop_idle_share']:.1f}% of its time); "
        f"CPU: user {summary.get('user_ms_per_page')} ms, system {summary.get('system_ms_per_page')} ms, garbage "
        f"collector {summary.get('gc_ms_per_page')} ms ({summary.get('gc_full_collections')} full collections); "
        f"a page: {summary.get('minor_faults_per_page')} page faults, {summary.get('context_switches_per_page')} "
        f"waits, {summary.get('preemptions_per_page')} preemptions",
        ["kind", "a page", "ms a page", "mean ms", "of 1 ms or more, a page", "their ms a page"],
        [
            [kind, row["per_page"], row["ms_per_page"], row["mean_ms"], row["slow_per_page"], row["slow_ms_per_page"]]
            for kind, row in summary["kinds"].items()
            if row["ms_per_page"] >= 0.005
        ],
    )


if __name__ == "__main__":
    print(markdown(summarise(Path(sys.argv[1]))))
