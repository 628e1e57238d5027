"""Is a process alive (dev Solr's pid file, crawl runs), and which Scrapy command is it running? Standard library only."""

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
