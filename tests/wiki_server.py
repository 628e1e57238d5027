"""The tests' DokuWiki: searchcrawl/dev/servers/dokuwiki_php.py's wiki (what tests may rely on is said
there), one a test worker."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from searchcrawl.dev.servers.dokuwiki_php import CRAWLER, PACKAGE, WikiServer

__all__ = ["CRAWLER", "WikiServer", "wiki_server"]


@pytest.fixture(scope="session")
def wiki_server() -> Iterator[WikiServer]:
    """This worker's DokuWiki (deploy/bootstrap.sh installs dokuwiki and php-cli)."""
    if not PACKAGE.is_dir() or shutil.which("php") is None:
        pytest.fail("Debian's dokuwiki and php-cli are missing: run deploy/bootstrap.sh")
    server = WikiServer().start()
    try:
        yield server
    finally:
        server.stop()
