"""Several crawler processes for one source on one machine (source key ``processes``).

One `scrapy crawl` uses one core: Scrapy's engine, the spider, the pipelines and the document
table's statements all run on its reactor thread. With ``processes = N`` (or ``"auto"``: one per
usable core) the crawl starts N - 1 more `scrapy crawl` processes of the same source, and all N
work on one run as a shared crawl (``SEARCHCRAWL_SHARED_CRAWL``) over the document table, SQLite
by default: each leases its own batches of the frontier (one statement chooses and leases, so a
URL is fetched once), per-site delay and concurrency hold for all of them together
(``store/sites.py``), they share the document cache and take turns pushing it, and the process
that finds the frontier empty last ends the run.

Why whole processes rather than a pool of workers for the CPU-heavy part of a page: most of a
page's CPU is spent where Scrapy runs it (the engine, the middlewares, the HTML parse the spider
and the extraction share, the statements of the document table), not in one function that could
be shipped to a worker, and shipping the page there and the results back costs a copy each way.
Processes reuse the mechanism that already scales a crawl across machines, with every guarantee
it has (tests/e2e/test_scale_out.py, tests/e2e/test_local_processes.py).

The first process is the one the user (or scrapyd, or the scheduler) started. It forks the
others as soon as its command line is read (``scrapy crawl``'s ``process_options``: Scrapy,
searchcrawl and the source loaded; no reactor, thread or database connection yet), so they skip
the second of CPU that a new process spends importing before it can crawl, and come up beside
the first instead of after it. Each waits, before it builds its crawler, for the run to join,
which the first writes to its pipe once it has started or resumed the run: they join that run
only (one that finds it ended, a small site crawled before it was up, leaves at once: it never
starts a run of its own), and if the first never opens a run (refused, failed) they leave without
crawling. The first tells them to stop when it is told to (SIGINT, SIGTERM) and exits after them
with the worst of their exit codes. The others end when it dies, even by SIGKILL
(``die_with_parent``, a graceful stop of a moment: a crawl started meanwhile is refused, as any
second crawl is): nothing then works on the run, and the next crawl resumes it at once, taking
back what the dead processes had leased. A forked process leaves with ``os._exit``: the
clean-ups its parent registered (scrapyd's runner removes the project's egg when it exits) are
the parent's. (Started as new ``scrapy crawl`` processes, the others came up about a second after
the first: on the 2-core machine, the Sphinx site by two processes took 4.3-4.8 s against one
process's 5.0-5.3 s; forked, 3.5-3.7 s against 4.7-4.9: tests/benchmarks/README.md.)
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

PARENT_SETTING = "SEARCHCRAWL_PROCESSES_PARENT"  # set on the processes a crawl forks: its pid
RUN_SETTING = "SEARCHCRAWL_PROCESSES_RUN"  # and the run they join (never another), read from their pipe
RUN_LINE_LIMIT = 32  # bytes of the line that gives a process its run


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which containers and taskset narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def process_count(value: Any) -> int:
    """``processes`` as a number: ``"auto"`` is one per usable core; anything else at least 1."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return usable_cores()
    return max(1, int(value))


def processes_of(settings: BaseSettings) -> int:
    """How many processes crawl the source on this machine (SEARCHCRAWL_PROCESSES)."""
    return process_count(settings.get("SEARCHCRAWL_PROCESSES", 1))


def shared_crawl(settings: BaseSettings) -> bool:
    """Does this process share its run with others (machines of a fleet, or local processes)?"""
    return settings.getbool("SEARCHCRAWL_SHARED_CRAWL") or processes_of(settings) > 1


def known_fleet(settings: BaseSettings) -> int | None:
    """How many processes share the run, when only this machine's do (``processes`` without
    ``shared``); None when machines may join it too (their number is not known)."""
    count = processes_of(settings)
    return count if count > 1 and not settings.getbool("SEARCHCRAWL_SHARED_CRAWL") else None


def started_by_a_crawl(settings: BaseSettings) -> bool:
    """Is this process one of the others a crawl started (not the one to start them)?"""
    return bool(settings.get(PARENT_SETTING))


def joins_live_runs(settings: BaseSettings) -> bool:
    """May this process join a run another live process works on? A node of a fleet (``shared``)
    may; so may a process a crawl forked (its run only: ``run_to_join``). The first process of a
    crawl of several local processes may not: it is a second crawl while another runs, refused
    as one (it joined the other's run before 2026-11-24, though that crawl was not sharing)."""
    return settings.getbool("SEARCHCRAWL_SHARED_CRAWL") or started_by_a_crawl(settings)


def run_to_join(settings: BaseSettings) -> int | None:
    """The run a process started by a crawl joins: the first process's, and only while it runs."""
    return settings.getint(RUN_SETTING) or None


def read_run(descriptor: int) -> int | None:
    """The run a forked process joins, as the first process writes it to the process's pipe (one
    line, the run's id); None when the pipe ends without one (the first process opened no run) or
    holds anything else."""
    with os.fdopen(descriptor, "rb") as stream:
        line = stream.readline(RUN_LINE_LIMIT)
    if len(line) == RUN_LINE_LIMIT and not line.endswith(b"\n"):
        return None  # cut off: not a line the first process wrote
    line = line.strip()
    return int(line) if line.isdigit() else None


def leave_forked_process(code: int) -> None:
    """End a process ``LocalProcesses.fork`` made: its logs and streams flushed, then ``os._exit``,
    so that none of the clean-ups registered before the fork (atexit, scrapyd's runner removing
    the egg the first process still loads modules from) runs twice."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or its reader gone
            pass
    os._exit(code)


class LocalProcesses:
    """The other processes of a crawl: forked together, given the run together, signalled
    together, waited for."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.pids: list[int] = []
        self.pipes: dict[int, int] = {}  # pid: the write end of its run's pipe, until join

    def fork(self) -> int | None:
        """Fork the others from this process as it is now. Returns None in this process, and in
        each of the others the pipe its run comes on (``read_run``). Call it before the process
        has threads, a reactor or database connections: a fork copies none of those safely."""
        for stream in (sys.stdout, sys.stderr):  # nothing buffered is written twice
            stream.flush()
        for _ in range(self.count):
            read, write = os.pipe()
            try:
                pid = os.fork()
            except OSError:  # out of processes or memory: those forked already leave, then it fails
                for each in (read, write):
                    os.close(each)
                self.wait()
                raise
            if pid == 0:
                os.close(write)
                for pipe in self.pipes.values():  # its elder siblings': their ends must close with ours
                    os.close(pipe)
                return read
            os.close(read)
            self.pids.append(pid)
            self.pipes[pid] = write
        return None

    def join(self, run: int | None) -> None:
        """Give them the run to join (None: there is none, they leave), once: each pipe is closed
        after it. A process that has ended already is passed over."""
        for pid, pipe in list(self.pipes.items()):
            try:
                if run is not None:
                    os.write(pipe, f"{run}\n".encode())
            except OSError:  # BrokenPipeError: it ended (a signal, a failure); wait() says how
                logger.debug("Crawler process %d ended before it was given run %s", pid, run)
            finally:
                os.close(pipe)
                del self.pipes[pid]

    def signal(self, number: int) -> None:
        for pid in self.pids:
            try:
                os.kill(pid, number)  # not yet waited for, so the pid is still its, ended or not
            except ProcessLookupError:
                pass

    def wait(self) -> list[int]:
        """Their exit codes, as subprocess gives them: negative for a signal."""
        self.join(None)  # any still waiting for a run leave
        return [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in self.pids]
