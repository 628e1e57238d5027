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

The first process is the one the user (or scrapyd, or the scheduler) started: it starts or
resumes the run, then starts the others, which join that run only (one that finds it ended, a
small site crawled before it was up, leaves at once: it never starts a run of its own), tells them
to stop when it is told to (SIGINT, SIGTERM), and exits
after them with the worst of their exit codes. The others end when it dies, even by SIGKILL
(``die_with_parent``): nothing then works on the run, and the next crawl resumes it at once,
taking back what the dead processes had leased.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings

logger = logging.getLogger(__name__)

PARENT_SETTING = "SEARCHCRAWL_PROCESSES_PARENT"  # set on the processes a crawl starts: its pid
RUN_SETTING = "SEARCHCRAWL_PROCESSES_RUN"  # and the run they join (never another)
PR_SET_PDEATHSIG = 1  # prctl(2)
SCRAPYD_RUNNER = "scrapyd.runner"


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


def entry_module() -> str:
    """What this process was started as: scrapyd's runner under scrapyd (it activates the
    project's egg, which carries the sources, from the environment scrapyd gave the job), else
    Scrapy's command line."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return SCRAPYD_RUNNER if spec is not None and spec.name == SCRAPYD_RUNNER else "scrapy"


def run_to_join(settings: BaseSettings) -> int | None:
    """The run a process started by a crawl joins: the first process's, and only while it runs."""
    return settings.getint(RUN_SETTING) or None


def command_line(source: str, arguments: Mapping[str, str], settings: BaseSettings, parent: int, run: int) -> list[str]:
    """The `scrapy crawl` of another process: the same source, spider arguments and command-line
    settings (``-s``, ``--logfile``, ``-L``: those at Scrapy's ``cmdline`` priority); the project's
    settings and the environment come with the environment it inherits."""
    line = [sys.executable, "-m", entry_module(), "crawl", source]
    for name, value in arguments.items():
        line += ["-a", f"{name}={value}"]
    own = {"SEARCHCRAWL_PROCESSES": str(processes_of(settings)), PARENT_SETTING: str(parent), RUN_SETTING: str(run)}
    for name, value in settings.items():
        if name not in own and settings.getpriority(name) == SETTINGS_PRIORITIES["cmdline"]:
            line += ["-s", f"{name}={_setting_text(value)}"]
    for name, value in own.items():
        line += ["-s", f"{name}={value}"]
    return line


def _setting_text(value: Any) -> str:
    if isinstance(value, BaseSettings):
        value = value.copy_to_dict()
    if isinstance(value, dict | list | tuple):
        return json.dumps(value)
    return str(value)


def die_with_parent(parent: int) -> bool:
    """Ask Linux to send this process SIGTERM when its parent dies (a graceful stop: its leases
    go back to the queue and it leaves the run). False if the parent is already gone."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the process goes on until the run ends
        logger.debug("Cannot ask to be stopped with process %d (no prctl)", parent)
    return os.getppid() == parent


class LocalProcesses:
    """The other processes of a crawl: started together, signalled together, waited for."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.children: list[subprocess.Popen[bytes]] = []

    def start(self, line: Sequence[str]) -> None:
        for _ in range(self.count):
            self.children.append(subprocess.Popen(list(line)))  # noqa: S603 - our own command, no shell
        logger.info("Started %d more crawler processes for this source: %s", self.count, self.pids())

    def pids(self) -> list[int]:
        return [child.pid for child in self.children]

    def signal(self, number: int) -> None:
        for child in self.children:
            if child.poll() is None:
                child.send_signal(number)

    def wait(self) -> list[int]:
        return [child.wait() for child in self.children]
