"""A real OpenID Connect provider for tests and `scrapy dev oidc`: panva's ``oidc-provider`` (from the npm registry, the
version oidc_provider/package-lock.json pins: 8.x, since 9.x needs a newer Node.js than Debian 12's 18) under the machine's Node.js, on 127.0.0.1, with
its development login, one client (PKCE required) and the accounts of the tests' LDAP directory,
each with groups in its ID token (oidc_provider/provider.mjs, beside this module).

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
import os
import re
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urljoin

import requests

from searchcrawl.dev.jvm_server import free_port
from searchcrawl.dev.servers.server_processes import stop, stopped_on_failure, wait_listening
from searchcrawl.system.paths import user_cache_dir

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
        self.client_secret = secrets.token_urlsafe(24)  # random: the client's password, never in argv
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.folder: Path | None = None  # its log's, made by start(), removed by stop()

    def command(self, folder: Path) -> tuple[list[str], dict[str, str]]:
        """The provider's command line and environment: the client's secret in the environment
        (process.env in provider.mjs), which other local users cannot read, not in the command
        line that ps shows them."""
        argv = ["node", str(folder / "provider.mjs"), str(self.port), self.client_id, ",".join(self.redirect_uris)]
        argv += [json.dumps(ACCOUNTS), "conform" if self.conform else ""]
        return argv, {**os.environ, "OIDC_CLIENT_SECRET": self.client_secret}

    @stopped_on_failure
    def start(self) -> OidcProvider:
        folder = install()
        self.folder = Path(tempfile.mkdtemp(prefix="sc-oidc-provider-"))
        log = self.folder / "provider.log"
        command, env = self.command(folder)
        with log.open("wb") as output:
            self.process = subprocess.Popen(command, cwd=folder, env=env, stdout=output, stderr=subprocess.STDOUT)
        wait_listening(self.process, self.port, log)
        return self

    def stop(self) -> None:
        stop(self.process)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    def sign_in(self, browser: requests.Session, url: str, user: str) -> str:
        """``browser`` follows the authorization URL ``url`` to the login form, signs in as
        ``user`` and consents; returns where the provider sends it back (its Location)."""
        return sign_in(self.issuer, browser, url, user)


def sign_in(issuer: str, browser: requests.Session, url: str, user: str) -> str:
    """As ``OidcProvider.sign_in``, at the provider of ``issuer`` (one another process started)."""
    answer = browser.get(url, allow_redirects=False, timeout=30)
    for _step in range(10):
        location = answer.headers.get("location", "")
        if answer.status_code in (302, 303) and not location.startswith(issuer) and location.startswith("http"):
            return location  # back to the client
        if answer.status_code in (302, 303):
            answer = browser.get(urljoin(issuer + "/", location), allow_redirects=False, timeout=30)
            continue
        page = answer.text
        action = re.search(r'<form[^>]*action="([^"]+)"', page)
        assert action is not None, page[:2000]
        fields = dict(re.findall(r'<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"', page))
        if 'name="login"' in page:
            fields.update(login=user, password="any")  # the development login takes any password
        answer = browser.post(urljoin(issuer + "/", action[1]), data=fields, allow_redirects=False, timeout=30)
    raise AssertionError(f"the provider did not send the browser back: {answer.status_code} {answer.text[:500]}")
