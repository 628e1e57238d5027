"""The tests' WebDAV server: searchcrawl/dev/servers/apache_webdav.py's Apache httpd (what tests may
rely on is said there), one a test worker, on this worker's directory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from searchcrawl.dev.servers.apache_webdav import ALL_STAFF, CRAWLER, WebdavServer
from searchcrawl.dev.servers.slapd import DirectoryServer

__all__ = ["ALL_STAFF", "CRAWLER", "WebdavServer", "webdav_server"]


@pytest.fixture(scope="session")
def webdav_server(directory_server: DirectoryServer) -> Iterator[WebdavServer]:
    """This worker's Apache (deploy/bootstrap.sh installs apache2), on this worker's directory."""
    server = WebdavServer(directory_server).start()
    try:
        yield server
    finally:
        server.stop()
