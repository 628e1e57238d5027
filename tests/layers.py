"""The unit layer starts no server: a pytest plugin (registered by tests/conftest.py) that fails a
test outside tests/e2e asking for a fixture that starts a real server, or listening on a socket.

The unit layer (every test outside tests/e2e) tests logic alone, fast, and starts no server
(issue 54: under 60 s on 2 cores). A test of a component against a real Solr, Tika, PostgreSQL or
HTTP server lives in tests/e2e (tests/e2e/test_<area>.py), importing the helpers and fixtures of
the unit module it extends."""

from __future__ import annotations

import socket
from collections.abc import Iterable
from typing import Any

import pytest

# The fixtures that start a real server, or hand out one (a Solr core, a site, a project whose
# SOLR_URL is the dev Solr): the dev Solr and SolrCloud, Tika, PostgreSQL, the tests' HTTP sites.
SERVER_FIXTURES = frozenset(
    {
        "dev_solr",
        "solr_url",
        "solr",
        "solr_cloud",
        "tika_url",
        "postgres_url",
        "serve",
        "project",
        "harbour_corpus",
        "auth_solr",  # tests/system/test_secrets.py: a Solr with basic auth
        "fake_tika",  # tests/e2e/test_tika_client.py: an HTTP server answering as Tika
        "ntlm_sites",  # tests/ntlm_site.py: sites behind NTLM
        "directory_server",  # tests/directory_server.py: an OpenLDAP slapd
        "samba_domain",  # tests/samba_domain.py: a Samba AD domain controller and SMB server
        "oidc_provider",  # tests/oidc_server.py: an OpenID Connect provider under Node.js
        "saml_idp",  # tests/saml_server.py: a SAML 2.0 identity provider (SimpleSAMLphp)
    }
)
E2E_LAYER = "tests/e2e/"
CURRENT_TEST = [""]  # the node id of the test being set up or run in this process
LISTENS = [False]  # whether that test is marked ``listens`` (a port of its own, nothing served)


def server_refusal(nodeid: str, fixtures: Iterable[str]) -> str | None:
    """Why the test ``nodeid`` may not use ``fixtures`` (the unit layer starts no server), or None."""
    if nodeid.startswith(E2E_LAYER):
        return None
    servers = sorted(SERVER_FIXTURES.intersection(fixtures))
    if not servers:
        return None
    return (
        f"{nodeid} is a unit test, and the unit layer (every test outside {E2E_LAYER}) starts no server, "
        f"but it asks for {', '.join(servers)}: a test against a real server belongs in {E2E_LAYER} "
        f"(e.g. {E2E_LAYER}test_<area>.py, importing the helpers and fixtures of {nodeid.split('::')[0]})"
    )


def listen_refusal(nodeid: str, listens: bool, address: object) -> str | None:
    """Why the test ``nodeid`` may not listen on ``address`` (the unit layer serves nothing), or None."""
    if not nodeid or nodeid.startswith(E2E_LAYER) or listens:
        return None
    return (
        f"{nodeid} is a unit test, and the unit layer (every test outside {E2E_LAYER}) starts no server, "
        f"but it listens on {address}: a test against a real server belongs in {E2E_LAYER}; a test that "
        "only needs a port of its own to connect to is marked @pytest.mark.listens(reason)"
    )


_listen = socket.socket.listen


def _guarded_listen(self: socket.socket, *args: Any) -> None:
    refusal = listen_refusal(CURRENT_TEST[0], LISTENS[0], self.getsockname())
    if refusal:
        pytest.fail(refusal, pytrace=False)
    _listen(self, *args)


def pytest_configure(config: pytest.Config) -> None:
    """Servers started without a fixture (an HTTP server in a thread, uvicorn, Twisted's listenTCP)
    are refused where they listen. Once per process: an in-process pytester run shares it."""
    config.addinivalue_line("markers", "listens(reason): a unit test listening on a port of its own, serving nothing")
    socket.socket.listen = _guarded_listen  # type: ignore[method-assign]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A unit test asking for a server's fixture by name (or through another fixture) fails
    before any of its fixtures is set up."""
    CURRENT_TEST[0] = item.nodeid
    LISTENS[0] = item.get_closest_marker("listens") is not None
    refusal = server_refusal(item.nodeid, getattr(item, "fixturenames", ()))
    if refusal:
        pytest.fail(refusal, pytrace=False)


@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest) -> None:
    """A server's fixture that a unit test asks for with ``request.getfixturevalue`` fails before
    it starts the server."""
    refusal = server_refusal(CURRENT_TEST[0], [fixturedef.argname]) if CURRENT_TEST[0] else None
    if refusal:
        pytest.fail(refusal, pytrace=False)
