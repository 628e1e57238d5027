"""Is a process alive (dev Solr's pid file, crawl runs), which Scrapy command is it running, and a
process's or thread's lot: ended with its parent, lowered in priority. Standard library only."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import PurePath


def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs on this host; a zombie (exited, not yet reaped) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def process_state(pid: int) -> str | None:
    """The state letter of ``pid`` in /proc (``R``, ``S``, ``D``, ``T`` stopped, ``t`` traced,
    ``Z``...), or None where it cannot be read (another system, no such process)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


# the programs whose command line names a Scrapy command: the console scripts, and the packages run
# with `python -m` (scrapy's __main__.py, scrapyd's runner.py, as its launcher runs a crawl)
SCRAPY_PROGRAMS = frozenset({"scrapy", "searchcrawl"})
SCRAPY_PACKAGES = frozenset({"scrapy/__main__.py", "scrapyd/runner.py", "searchcrawl/__main__.py"})


def command_name(argv: Sequence[str]) -> str | None:
    """The command of a Scrapy command line, found as Scrapy finds it: its first argument that is
    not an option. None for another program's (``pytest -k crawl`` names no command)."""
    if not argv:
        return None
    program = PurePath(argv[0])
    if program.stem not in SCRAPY_PROGRAMS and f"{program.parent.name}/{program.name}" not in SCRAPY_PACKAGES:
        return None
    return next((arg for arg in argv[1:] if not arg.startswith("-")), None)


PR_SET_PDEATHSIG = 1  # prctl(2)


def die_with_parent(parent: int) -> bool:
    """Ask Linux to send this process SIGTERM when its parent dies (a crawl's forked processes: a
    graceful stop, their leases go back to the queue; its passes' process, searchcrawl/semantic/
    pass_process.py: it ends). Linux sends it when the *thread* that started this process ends:
    start it from a thread that lives as long as its process. False if the parent is already gone."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the process goes on until it is told to end
        pass
    return os.getppid() == parent


def lower_priority(increment: int) -> bool:
    """Lower the calling thread's OS priority by ``increment`` (Linux: a thread's nice value is
    its own, set by its thread id, and the threads it starts inherit it); False where the system
    does not allow it. Only ever lowered: an unprivileged process cannot raise it back, so only a
    thread whose work may wait calls this."""
    import threading

    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + increment))
    except (AttributeError, OSError):  # no setpriority (not POSIX), or refused
        return False
    return True
