"""The tests' SAML identity provider: searchcrawl/dev/servers/simplesamlphp.py's SimpleSAMLphp (what tests
may rely on is said there), one a test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from searchcrawl.dev.servers.simplesamlphp import PACKAGE, USERS, SamlIdp

__all__ = ["USERS", "SamlIdp", "saml_idp"]


@pytest.fixture
def saml_idp() -> Iterator[SamlIdp]:
    """An IdP whose service provider is the test client (http://127.0.0.1/...)."""
    if not PACKAGE.is_dir() or shutil.which("php") is None or shutil.which("xmlsec1") is None:
        pytest.fail("Debian's simplesamlphp, php-cli and xmlsec1 are missing: run deploy/bootstrap.sh")
    idp = SamlIdp("http://127.0.0.1/login/saml/metadata", "http://127.0.0.1/login/saml/acs").start()
    try:
        yield idp
    finally:
        idp.stop()
