"""The tests' CMIS repository: searchcrawl/dev/servers/cmis_repository.py's client of the OpenCMIS
InMemory server (searchcrawl/dev/cmis_runner.py), one a test worker."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest

from searchcrawl.dev.cmis_runner import DevCmis
from searchcrawl.dev.jvm_server import free_port
from searchcrawl.dev.servers.cmis_repository import CRAWLER, CmisRepository

__all__ = ["CRAWLER", "CmisRepository", "cmis_repository"]


@pytest.fixture(scope="session")
def cmis_repository() -> Iterator[CmisRepository]:
    """This worker's CMIS repository (deploy/bootstrap.sh fetches its jars)."""
    server = DevCmis(tempfile.mkdtemp(prefix="sc-cmis-"), free_port())
    url = server.start(timeout=300)
    try:
        yield CmisRepository(url)
    finally:
        server.stop()
