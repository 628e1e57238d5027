"""The tests' Redmine: searchcrawl/dev/servers/redmine_thin.py's instance (what tests may rely on is said
there), one a test worker."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from searchcrawl.dev.servers.redmine_thin import CRAWLER, PACKAGE, RedmineServer

__all__ = ["CRAWLER", "RedmineServer", "redmine_server"]


@pytest.fixture(scope="session")
def redmine_server() -> Iterator[RedmineServer]:
    """This worker's Redmine (deploy/bootstrap.sh installs redmine and redmine-sqlite)."""
    if not PACKAGE.is_dir() or shutil.which("ruby") is None:
        pytest.fail("Debian's redmine is missing: run deploy/bootstrap.sh")
    server = RedmineServer().start()
    try:
        yield server
    finally:
        server.stop()
