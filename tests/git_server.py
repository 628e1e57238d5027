"""The tests' Git repositories: searchcrawl/dev/servers/gitolite.py's gitolite and Apache (what
tests may rely on is said there), one a test worker."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from searchcrawl.dev.servers.gitolite import CRAWLER, DIRECTORY_GROUPS, GitServer

__all__ = ["CRAWLER", "DIRECTORY_GROUPS", "GitServer", "git_server"]


@pytest.fixture(scope="session")
def git_server() -> Iterator[GitServer]:
    """This worker's gitolite and Apache (deploy/bootstrap.sh installs gitolite3 and apache2)."""
    if shutil.which("gitolite") is None:
        pytest.fail("Debian's gitolite3 is missing: run deploy/bootstrap.sh")
    server = GitServer().start()
    try:
        yield server
    finally:
        server.stop()
