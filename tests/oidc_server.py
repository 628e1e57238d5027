"""A real OpenID Connect provider for tests: panva's ``oidc-provider`` (from the npm registry, the
version tests/oidc_provider/package-lock.json pins: 8.x, whose 9.x needs Node.js 20.19 or later,
while Debian 12's nodejs is 18) under the machine's Node.js, on 127.0.0.1, with
its development login, one client (PKCE required) and the accounts of the tests' LDAP directory,
each with groups in its ID token (tests/oidc_provider/provider.mjs).

``install()`` puts the package in the user's cache (``~/.cache/searchcrawl/oidc-provider-<lock>``,
with ``npm ci``, once: deploy/bootstrap.sh calls it); ``OidcProvider(redirect_uris).start()``
starts one. What tests may rely on:

- ``issuer`` (``http://127.0.0.1:<port>``), ``client_id``, ``client_secret``;
- ``ACCOUNTS``: who may sign in, and their groups;
- ``sign_in(browser, url, user)``: a browser (a ``requests.Session``) at the provider's
  authorization URL ``url`` signs in as ``user`` (the development login's form) and consents; the
  URL the provider sends it back to (the client's redirect URI, with the code).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin

import pytest
import requests

from searchcrawl.dev.jvm_server import free_port
from searchcrawl.system.paths import user_cache_dir
from tests.local_servers import stop, wait_listening

HERE = Path(__file__).resolve().parent / "oidc_provider"
ACCOUNTS = {
    "alice": {"name": "Alice", "groups": ["finance", "search-admins"]},
    "bob": {"name": "Bob", "groups": ["all-staff"]},
    "carol": {"name": "Carol", "groups": []},
}


def install() -> Path:
    """The provider's folder: package.json, its lock, node_modules and the server script."""
    lock = (HERE / "package-lock.json").read_bytes()
    folder = user_cache_dir() / f"oidc-provider-{hashlib.sha256(lock).hexdigest()[:12]}"
    if not (folder / "node_modules" / "oidc-provider" / "package.json").is_file():
        if shutil.which("npm") is None:
            raise RuntimeError("npm is missing: install Node.js and npm (Debian's nodejs and npm)")
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(HERE / name, folder / name)
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=folder, check=True, timeout=600)
    shutil.copy(HERE / "provider.mjs", folder / "provider.mjs")
    return folder


class OidcProvider:
    def __init__(self, redirect_uris: list[str], conform: bool = False) -> None:
        """``conform``: the ID token holds ``sub`` alone, the profile's claims (the user's name,
        groups) are given at the userinfo endpoint (oidc-provider's default)."""
        self.redirect_uris = redirect_uris
        self.conform = conform
        self.client_id = "searchcrawl-tests"
        self.client_secret = "client-secret-for-tests-" + hashlib.sha256(str(id(self)).encode()).hexdigest()[:12]
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = Path(tempfile.mkstemp(prefix="oidc-provider-", suffix=".log")[1])

    def start(self) -> OidcProvider:
        folder = install()
        command = [
            "node",
            str(folder / "provider.mjs"),
            str(self.port),
            self.client_id,
            self.client_secret,
            ",".join(self.redirect_uris),
            json.dumps(ACCOUNTS),
            "conform" if self.conform else "",
        ]
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(command, cwd=folder, stdout=log, stderr=subprocess.STDOUT)
        wait_listening(self.process, self.port, self.log)
        return self

    def stop(self) -> None:
        stop(self.process)

    def sign_in(self, browser: requests.Session, url: str, user: str) -> str:
        """``browser`` follows the authorization URL ``url`` to the login form, signs in as
        ``user`` and consents; returns where the provider sends it back (its Location)."""
        answer = browser.get(url, allow_redirects=False, timeout=30)
        for _step in range(10):
            location = answer.headers.get("location", "")
            if answer.status_code in (302, 303) and not location.startswith(self.issuer) and location.startswith("http"):
                return location  # back to the client
            if answer.status_code in (302, 303):
                answer = browser.get(urljoin(self.issuer + "/", location), allow_redirects=False, timeout=30)
                continue
            page = answer.text
            action = re.search(r'<form[^>]*action="([^"]+)"', page)
            assert action is not None, page[:2000]
            fields = dict(re.findall(r'<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"', page))
            if 'name="login"' in page:
                fields.update(login=user, password="any")  # the development login takes any password
            answer = browser.post(urljoin(self.issuer + "/", action[1]), data=fields, allow_redirects=False, timeout=30)
        raise AssertionError(f"the provider did not send the browser back: {answer.status_code} {answer.text[:500]}")


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
