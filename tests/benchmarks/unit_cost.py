"""The unit layer's cost (issue 101, point 3): the CPU seconds (user + sys) of pytest and its
workers, which hold on a loaded machine, beside the wall time, which does not.

    .venv/bin/python -m tests.benchmarks.unit_cost                  # -n 2, as the issue's target is given
    .venv/bin/python -m tests.benchmarks.unit_cost --workers 3 --runs 2 -- -k "not properties"

Runs ``python -m pytest -p no:cacheprovider -q -n W tests --ignore=tests/e2e`` (what follows
``--`` is added) from the checkout, in the shell's environment, and reports for each run: the
tests passed, the wall time, the CPU of pytest and of every process it waited for (its workers,
and what the tests started and reaped: ``RUSAGE_CHILDREN``), and the load average before and
after (``/proc/loadavg``; a CPU figure from a machine at a load of 20 runs some 15% above an
idle one's). The first run after a change compiles what changed (the run keeps compiled modules:
tests/conftest.py ``kept_bytecode``); ``--runs 2`` shows both. Target: at most 150 s of CPU on
two workers.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET_CPU = 150.0  # seconds of CPU on two workers (issue 101)


@dataclass(frozen=True)
class Run:
    """One run of the unit layer, as measured from outside."""

    passed: int
    failed: int
    wall: float
    user: float
    system: float
    load_before: str
    load_after: str

    @property
    def cpu(self) -> float:
        return self.user + self.system


def command(workers: int, extra: list[str]) -> list[str]:
    """The unit layer's pytest command line."""
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "-n",
        str(workers),
        "tests",
        "--ignore=tests/e2e",
        *extra,
    ]


def counted(summary: str, word: str) -> int:
    """The number before ``word`` in pytest's last line (``3868 passed, 2 failed in ...``), or 0."""
    found = re.search(rf"(\d+) {word}", summary)
    return int(found.group(1)) if found else 0


def load_average() -> str:
    """The three load averages of /proc/loadavg."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measure(workers: int, extra: list[str]) -> Run:
    """Run the unit layer once; its CPU is what this process's reaped children used meanwhile."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(part for part in (str(ROOT), os.environ.get("PYTHONPATH", "")) if part)}
    before, load_before, started = resource.getrusage(resource.RUSAGE_CHILDREN), load_average(), time.monotonic()
    done = subprocess.run(command(workers, extra), cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall, after = time.monotonic() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = done.stdout.strip().splitlines() or [""]
    for failure in (line for line in lines if line.startswith(("FAILED ", "ERROR "))):  # -ra's summary
        print(failure, file=sys.stderr)
    last = lines[-1]
    if done.returncode not in (0, 1):  # 1: some tests failed, still a run of them all
        raise SystemExit(f"pytest exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    return Run(
        counted(last, "passed"),
        counted(last, "failed") + counted(last, "error"),
        wall,
        after.ru_utime - before.ru_utime,
        after.ru_stime - before.ru_stime,
        load_before,
        load_average(),
    )


def line(run: Run) -> str:
    """A run as a Markdown table row."""
    return (
        f"| {run.passed} | {run.failed} | {run.wall:.1f} s | {run.user:.1f} + {run.system:.1f} = {run.cpu:.1f} s "
        f"| {run.load_before} -> {run.load_after} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (default 2)")
    parser.add_argument("--runs", type=int, default=1, help="runs, one after the other")
    parser.add_argument("extra", nargs="*", help="after --: more pytest arguments")
    options = parser.parse_args()
    print(" ".join(command(options.workers, options.extra)))
    print("| passed | failed | wall | CPU (user + sys) | load average |\n|---:|---:|---:|---:|---|", flush=True)
    runs = []
    for _ in range(options.runs):
        runs.append(measure(options.workers, options.extra))
        print(line(runs[-1]), flush=True)
    best = min(run.cpu for run in runs)
    print(
        f"least CPU: {best:.1f} s ({'within' if best <= TARGET_CPU else 'above'} the target of {TARGET_CPU:.0f} s on two workers)"
    )


if __name__ == "__main__":
    main()
