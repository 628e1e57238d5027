"""The tests' OpenID Connect provider: searchcrawl/dev/servers/oidc_node.py's oidc-provider under Node.js
(what tests may rely on is said there), one a test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from searchcrawl.dev.servers.oidc_node import ACCOUNTS, OidcProvider, install

__all__ = ["ACCOUNTS", "OidcProvider", "install", "oidc_provider"]


@pytest.fixture
def oidc_provider() -> Iterator[OidcProvider]:
    """A provider whose client's redirect URI is the test client's (http://127.0.0.1/...)."""
    if shutil.which("node") is None:
        pytest.fail("Node.js is missing: run deploy/bootstrap.sh")
    provider = OidcProvider(["http://127.0.0.1/login/oidc/callback"]).start()
    try:
        yield provider
    finally:
        provider.stop()
