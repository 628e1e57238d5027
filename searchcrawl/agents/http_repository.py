"""What the agents of repositories spoken to over HTTP (``webdav``, ``cmis``) share: their
credentials and TLS options, the check of a token template, how a server's groups become
tokens (``GroupOptions``), and a client that reads answers within bounds.

- Credentials: ``username`` and ``password_secret`` (the NAME of the variable holding the
  password) go together, sent as HTTP basic auth, over ``http://`` only to this machine.
- The client (``HttpClient``): one ``requests`` session a thread, no proxy or netrc from the
  environment (the source says), no redirect followed, answers asked uncompressed (a compressed
  answer's ETag is another), each read within ``timeout`` and a whole answer within ten times
  it, and never more than the caller's limit held.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Self
from urllib.parse import SplitResult, urlsplit

import requests
from pydantic import BaseModel, Field, field_validator, model_validator

from searchcrawl.access.tokens import AccessError, Grant, filter_relations
from searchcrawl.agents.base import AgentError
from searchcrawl.agents.files import TreeRules
from searchcrawl.rules.addresses import is_loopback
from searchcrawl.system.secrets import SecretError, checked_secret_name, required_secret

CHUNK = 64 * 1024
IDENTITY = {"Accept-Encoding": "identity"}


def server_url(value: str, what: str) -> SplitResult:
    """``value``, an http(s) URL without user, query or fragment; ValueError naming ``what``."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.query or parts.fragment:
        raise ValueError(f"expected the http(s) URL of {what}, without user, query or fragment, got {value!r}")
    return parts


def folder_url(value: str, what: str) -> str:
    """``value`` as ``server_url`` checks it, its host lower-case and its path ending in ``/``."""
    parts = server_url(value, what)
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return f"{parts.scheme}://{parts.netloc.lower()}{path}"


def server_file(path: str, what: str, limit: int) -> bytes:
    """A file of the server's configuration the agent reads (Apache's, the wiki's rules), read
    again at each listing, as its server reads it (the caller decodes); AgentError when it
    cannot be read or is larger than ``limit`` bytes."""
    try:
        with open(path, "rb") as file:
            data = file.read(limit + 1)
    except OSError as error:
        raise AgentError(f"{what} {path} cannot be read: {error.strerror}") from None
    if len(data) > limit:
        raise AgentError(f"{what} {path} is larger than {limit} bytes")
    return data


def checked_token(value: str | None) -> str | None:
    """A token as a source names it (``group:cn=staff,...``, ``public``); ValueError."""
    if value is not None:
        try:
            Grant.of(value, "check")
        except AccessError as error:
            raise ValueError(str(error)) from None
    return value


def token_template(value: str | None) -> str | None:
    """A token with one ``{id}`` (``group:cn={id},ou=groups,dc=example,dc=org``); ValueError."""
    if value is None:
        return None
    if value.count("{id}") != 1:
        raise ValueError(f"expected a token with one {{id}}, got {value!r}")
    try:
        Grant.of(value.replace("{id}", "x"), "check")
    except AccessError as error:
        raise ValueError(str(error)) from None
    return value


class GroupOptions(BaseModel):
    """How the group names of a server's own rules become tokens (``dokuwiki``, ``git``):
    ``group_token`` (a template: every group the directory reading gives a searcher, nested ones
    too) or ``group_filter`` (the LDAP filter of the one search by which the server finds a
    user's groups, a group then the ``direct:`` tokens of its relations: access/tokens.py
    ``filter_relations``; one it cannot read is refused), never both; neither: groups read nothing."""

    group_token: str | None = None
    group_filter: str | None = None

    @field_validator("group_token")
    @classmethod
    def _group_template(cls, value: str | None) -> str | None:
        return token_template(value)

    @field_validator("group_filter")
    @classmethod
    def _group_filter(cls, value: str | None) -> str | None:
        if value is not None:
            filter_relations(value)  # ValueError: not read
        return value

    @model_validator(mode="after")
    def _one_group_reading(self) -> Self:
        if self.group_token is not None and self.group_filter is not None:
            raise ValueError("group_token and group_filter both say what a group is: set one")
        return self

    @property
    def group_relations(self) -> tuple[tuple[str, str | None], ...]:
        """The ``direct:`` relations of ``group_filter`` (none without one)."""
        return filter_relations(self.group_filter) if self.group_filter is not None else ()


class HttpRepositoryOptions(TreeRules):
    """The options an HTTP repository's table shares (a files source's rules on paths too)."""

    username: str | None = None
    password_secret: str | None = None
    ca_file: str | None = None
    timeout: float = Field(default=60.0, gt=0, le=600)
    user_token: str = "user:{id}"

    @field_validator("password_secret")
    @classmethod
    def _secret_name(cls, value: str | None) -> str | None:
        return checked_secret_name(value)

    @field_validator("user_token")
    @classmethod
    def _user_template(cls, value: str) -> str:
        return token_template(value) or value

    def server_urls(self) -> list[str]:
        """The URLs the credentials are sent to (each source type names its own)."""
        return []

    @model_validator(mode="after")
    def _credentials(self) -> Self:
        """ValueError when the credentials are half given, or would travel in clear."""
        if bool(self.username) != bool(self.password_secret):
            raise ValueError("'username' and 'password_secret' go together")
        for url in self.server_urls():
            if self.password_secret and url.startswith("http://") and not is_loopback(urlsplit(url).hostname or ""):
                raise ValueError("http:// sends the password in clear: use https://, or a server on this machine")
        return self


class HttpClient:
    """Requests to one repository (``where`` names it in errors), by threads of their own."""

    def __init__(self, options: HttpRepositoryOptions, table: str, where: str) -> None:
        self.options, self.table, self.where = options, table, where
        self._password: str | None = None
        self._local = threading.local()

    def session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            session.trust_env = False  # no proxy or netrc from the environment: the source says
            if self.options.username:
                if self._password is None:
                    try:
                        self._password = required_secret(self.options.password_secret or "", self.table)
                    except SecretError as error:
                        raise AgentError(str(error)) from None
                session.auth = (self.options.username, self._password)
            session.verify = self.options.ca_file or True
            self._local.session = session
        return session

    def request(self, method: str, url: str, **arguments: Any) -> requests.Response:
        """A streamed answer (the caller closes it); AgentError when the server cannot be reached."""
        headers = {**IDENTITY, **arguments.pop("headers", {})}
        try:
            return self.session().request(
                method, url, stream=True, allow_redirects=False, timeout=self.options.timeout, headers=headers, **arguments
            )
        except requests.RequestException as error:
            raise AgentError(f"{self.where} cannot be reached: {type(error).__name__}") from None

    def answer(
        self, method: str, url: str, what: str, limit: int, expected: int = 200, absent: tuple[int, ...] = (), **arguments: Any
    ) -> bytes | None:
        """The body of an answer with status ``expected`` (None when it is larger than
        ``limit``; empty for a status in ``absent``); AgentError for another status, saying when
        the account was refused."""
        response = self.request(method, url, **arguments)
        with response:
            if response.status_code in absent:
                return b""
            if response.status_code in (401, 403):
                raise AgentError(f"{self.where} refused the crawl's account (HTTP {response.status_code}) for {what}")
            if response.status_code != expected:
                raise AgentError(f"{self.where} answered HTTP {response.status_code} for {what}")
            return self.read(response, limit, what)

    def read(self, response: requests.Response, limit: int, what: str) -> bytes | None:
        """An answer's body, at most ``limit`` bytes (None beyond; 0: no limit), within ten
        times the timeout in all (a server that drips is cut off)."""
        deadline = time.monotonic() + self.options.timeout * 10
        body = bytearray()
        for chunk in response.iter_content(CHUNK):
            body += chunk
            if limit and len(body) > limit:
                return None
            if time.monotonic() > deadline:
                raise AgentError(f"{self.where} took longer than {self.options.timeout * 10:.0f} s sending {what}")
        return bytes(body)
