"""Where the whole suite's CPU goes (issue 101, point 2): every process it started, by kind.

    accton /tmp/suite.pacct                # as root; apt-get install acct
    bash deploy/test.sh -p no:cacheprovider
    accton off
    .venv/bin/python -m tests.benchmarks.suite_processes /tmp/suite.pacct [--top 25]

Linux process accounting writes a record for every process that ends (``dump-acct`` prints
them): its command name, user and system time in clock ticks, lifetime, pid and parent pid.
Unlike pytest's rusage, it counts the forks of the workers' fork servers (reaped by a watcher),
the JVMs and servers that daemonise, and Chromium's helpers. The records are grouped by the
process's name and its parents' names up to pytest's workers (the ``python`` processes that
pytest started: pytest, the longest-lived ``python`` that no ``python`` started), so that a `scrapy` command
forked by a fork server (``python <- python <- python <- worker``) is told from a fresh
interpreter a test starts (``python <- worker``). A record stands for a process that ended
before ``accton off``: start accounting before the run and stop it after.
"""

from __future__ import annotations

import argparse
import subprocess
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

TICKS = 100  # dump-acct's times are in clock ticks (AHZ)


@dataclass(frozen=True)
class Record:
    """One ended process as ``dump-acct`` prints it."""

    name: str
    cpu: float  # user + system seconds
    seconds: float  # its lifetime
    pid: int
    parent: int


def records(lines: Iterable[str]) -> list[Record]:
    """``dump-acct``'s lines (``name|v3|utime|stime|etime|uid|gid|mem|io|pid|ppid|...``)."""
    found = []
    for line in lines:
        fields = [field.strip() for field in line.split("|")]
        if len(fields) < 11:
            continue
        utime, stime, etime = (float(fields[index]) for index in (2, 3, 4))
        found.append(Record(fields[0], (utime + stime) / TICKS, etime / TICKS, int(fields[9]), int(fields[10])))
    return found


def workers(found: list[Record]) -> set[int]:
    """pytest's workers: the ``python`` processes whose parent is pytest, the longest-lived
    ``python`` process that no ``python`` process started."""
    python = [record for record in found if record.name == "python"]
    pids = {record.pid for record in python}
    roots = [record for record in python if record.parent not in pids]
    if not roots:
        return set()
    pytest = max(roots, key=lambda record: record.seconds)
    return {record.pid for record in python if record.parent == pytest.pid}


def kind_of(record: Record, by_pid: dict[int, Record], worker_pids: set[int], depth: int = 4) -> str:
    """The record's name and its parents' names, up to a worker (``W``) or ``depth`` names. A pid
    used again by a later process names the first that had it: the parents of the run's first
    minutes are the ones it meant."""
    names: list[str] = []
    current: Record | None = record
    while current is not None and len(names) < depth:
        if current.pid in worker_pids:
            names.append("W")
            break
        names.append(current.name)
        current = by_pid.get(current.parent)
    return " <- ".join(names)


def by_kind(found: list[Record]) -> list[tuple[str, int, float]]:
    """(kind, processes, CPU seconds), the most CPU first; the workers each their own line."""
    worker_pids = workers(found)
    by_pid: dict[int, Record] = {}
    for record in found:
        by_pid.setdefault(record.pid, record)
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for record in found:
        kind = f"pytest worker {record.pid}" if record.pid in worker_pids else kind_of(record, by_pid, worker_pids)
        totals[kind][0] += 1
        totals[kind][1] += record.cpu
    return sorted(((kind, int(n), cpu) for kind, (n, cpu) in totals.items()), key=lambda row: -row[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", help="the accounting file accton wrote")
    parser.add_argument("--top", type=int, default=25, help="kinds shown (default 25)")
    args = parser.parse_args()
    found = records(subprocess.run(["dump-acct", args.file], capture_output=True, text=True, check=True).stdout.splitlines())
    total = sum(record.cpu for record in found)
    print(f"{total:.0f} CPU s in {len(found):,} processes")
    print("| processes | how many | CPU s | share |\n|---|---:|---:|---:|")
    for kind, count, cpu in by_kind(found)[: args.top]:
        print(f"| {kind} | {count:,} | {cpu:.1f} | {100 * cpu / total:.1f} % |")


if __name__ == "__main__":
    main()
