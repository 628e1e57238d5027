"""The contention model of ``processes = P`` over SQLite's one writer (issue 94): what the waits
measured on 2 cores predict for a machine with a core for each process.

A closed queue, solved by mean value analysis: P processes, each working ``t1 - hold`` ms a page
outside the write lock, then holding it ``hold`` ms a page (its pages' write transactions, in
``transactions`` a page). With SQLite's busy handler a writer that met the lock sleeps
``overshoot`` ms past its release on average (its sleeps: 1, 2, 5, 10, ... ms), the lock mostly
idle meanwhile, so each page's hold grows by ``transactions * overshoot`` times the share of
transactions that met it; with the writer lock (store/writer_lock.py) the overshoot is 0.

    .venv/bin/python -m tests.benchmarks.contention_model --t1 3.6 --hold 0.7 --transactions 0.073 --overshoot 2.5
"""

from __future__ import annotations

import argparse


def closed_queue(processes: int, t1: float, hold: float) -> tuple[float, float, float]:
    """(pages a ms, lock wait ms a page, the lock's busy share) of ``processes`` by mean value analysis."""
    think, queued, rate, response = t1 - hold, 0.0, 0.0, hold
    for count in range(1, processes + 1):
        response = hold * (1 + queued)
        rate = count / (think + response)
        queued = rate * response
    return rate, response - hold, rate * hold


def speedup(processes: int, t1: float, hold: float, transactions: float, overshoot: float) -> tuple[float, float, float]:
    """(speed-up over one process, lock wait ms a page, pages a second) of ``processes``."""
    held = hold
    for _ in range(200):  # the hold grows with the share of transactions that meet the lock
        rate, wait, busy = closed_queue(processes, t1, held)
        met = busy * (processes - 1) / processes
        held = (held + hold + transactions * overshoot * met) / 2
    return rate / closed_queue(1, t1, hold)[0], wait, rate * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--t1", type=float, required=True, help="one process's ms a page")
    parser.add_argument("--hold", type=float, required=True, help="ms a page in write transactions")
    parser.add_argument("--transactions", type=float, required=True, help="write transactions a page")
    parser.add_argument("--overshoot", type=float, default=2.5, help="the busy handler's sleep past a release, ms")
    parser.add_argument("--processes", default="1,2,4,8,16")
    args = parser.parse_args()
    for name, overshoot in (("busy handler", args.overshoot), ("writer lock", 0.0)):
        for count in (int(count) for count in args.processes.split(",")):
            gain, wait, pages = speedup(count, args.t1, args.hold, args.transactions, overshoot)
            print(f"{name}: P={count}: {gain:.2f}x, lock wait {wait:.2f} ms a page, {pages:.0f} pages/s")


if __name__ == "__main__":
    main()
