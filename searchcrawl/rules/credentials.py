"""Site authentication as plain logic: which origin a source's credentials belong to, and the
headers they make (HTTP basic, digest per RFC 7616, a bearer token, a cookie, a fixed header; NTLM's
handshake is in searchcrawl/rules/ntlm_handshake.py),
or the form that logs in (``type = "form"``: the table's schema is here, its logic in
searchcrawl/rules/login_forms.py, applied by searchcrawl/crawl/middlewares/form_login.py).

A source file names its credentials by the secret that holds them (``secret = "WIKI_PASSWORD"``:
the environment variable, or ``WIKI_PASSWORD_FILE``), never by value; each entry belongs to exact
origins (scheme, host and port), and nothing of it is sent anywhere else, redirects included
(searchcrawl/crawl/middlewares/site_auth.py applies it to every request).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from dataclasses import dataclass
from typing import Annotated, Literal
from urllib.parse import urlsplit

from cssselect import HTMLTranslator, SelectorError
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DEFAULT_PORTS = {"http": 80, "https": 443}
AuthType = Literal["basic", "digest", "bearer", "cookie", "header", "ntlm", "form"]
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
_SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def origin_of(url: str) -> str | None:
    """``scheme://host:port`` of an http(s) URL, the port always written; None for other URLs."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return f"{scheme}://{parts.hostname.lower()}:{port or DEFAULT_PORTS[scheme]}"


class FormLogin(BaseModel):
    """The ``[auth.form]`` table of a ``type = "form"`` credential: the login page, the form's
    fields, and what says the session expired (a redirect to the login page, always; optionally
    statuses and a text)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    url: str  # the login page, on one of the table's origins; fetched, its form filled and sent
    form: str | None = None  # a CSS selector of the form; default: the form with a password input
    user_field: str = Field(default="username", min_length=1)
    password_field: str = Field(default="password", min_length=1)
    user_secret: str | None = None  # the name of a secret holding the user name (instead of `user`)
    fields: dict[str, str] = Field(default_factory=dict)  # fixed values, e.g. {remember = "1"}
    success_text: str | None = Field(default=None, min_length=1)  # the answer to the login shows it
    expired_status: list[Annotated[int, Field(ge=100, le=599)]] = Field(default_factory=list)
    expired_text: str | None = Field(default=None, min_length=1)  # a page showing it: the session expired

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        parts = urlsplit(url)
        if origin_of(url) is None or parts.username is not None or parts.password is not None or parts.fragment:
            raise ValueError(f"{url!r} is not the login page's http(s) URL (no credentials or #fragment in it)")
        return url

    @field_validator("form")
    @classmethod
    def _css_selector(cls, selector: str | None) -> str | None:
        if selector is not None:
            try:
                HTMLTranslator().css_to_xpath(selector)
            except SelectorError as exc:
                raise ValueError(f"'form' is not a CSS selector: {exc}") from None
        return selector

    @model_validator(mode="after")
    def _distinct_fields(self) -> FormLogin:
        if self.user_field == self.password_field:
            raise ValueError("'user_field' and 'password_field' name the same field")
        if {self.user_field, self.password_field} & set(self.fields):
            raise ValueError("'fields' cannot set the user or password field: those come from `user` and the secret")
        if self.user_secret is not None and not _SECRET_NAME.fullmatch(self.user_secret):
            raise ValueError("'user_secret' is the name of an environment variable holding the user, not the user")
        return self


class SiteAuth(BaseModel):
    """One ``[[auth]]`` table of a source file."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    origins: list[str] = Field(min_length=1)
    type: AuthType
    user: str | None = None  # basic, digest, ntlm ("CORP\\crawler" or "crawler@corp")
    secret: str  # the name of the secret: the password, token, cookie or header value
    header: str | None = None  # type = "header": the header's name
    form: FormLogin | None = None  # type = "form": the login form

    @field_validator("origins")
    @classmethod
    def _exact_origins(cls, origins: list[str]) -> list[str]:
        normalized = []
        for origin in origins:
            found = origin_of(origin)
            if found is None or urlsplit(origin).path not in ("", "/") or "@" in origin:
                raise ValueError(f"{origin!r} is not an origin (scheme://host[:port], http or https, nothing more)")
            normalized.append(found)
        return normalized

    @model_validator(mode="after")
    def _complete(self) -> SiteAuth:
        if self.type in ("basic", "digest", "ntlm") and not self.user:
            raise ValueError(f"type = {self.type!r} needs 'user'")
        if self.type == "basic" and self.user and ":" in self.user:
            raise ValueError("a basic-auth user name cannot hold ':'")
        if self.type == "header" and not (self.header and _HEADER_NAME.fullmatch(self.header)):
            raise ValueError("type = 'header' needs 'header', a valid header name")
        if not _SECRET_NAME.fullmatch(self.secret):
            raise ValueError("'secret' is the name of an environment variable holding the value, not the value")
        if (self.type == "form") != (self.form is not None):
            raise ValueError("type = 'form' needs an [auth.form] table, and only it takes one")
        if self.form is not None:
            if not (self.user or self.form.user_secret):
                raise ValueError("type = 'form' needs 'user' or the form's 'user_secret'")
            if origin_of(self.form.url) not in self.origins:
                raise ValueError(f"the login page {self.form.url!r} is not on one of the table's origins")
        return self


def basic_authorization(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def safe_header_value(value: str) -> bool:
    """No line breaks or other controls: a header value cannot carry another header."""
    return not any(ord(ch) < 32 and ch != "\t" or ord(ch) == 127 for ch in value)


# --- digest (RFC 7616) -------------------------------------------------------------------------

_PARAM = re.compile(r'\s*([A-Za-z0-9_-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^,\s]*)\s*,?')
_HASHES = {"MD5": hashlib.md5, "SHA-256": hashlib.sha256, "SHA-512-256": None}


def parse_digest_challenge(header: str) -> dict[str, str] | None:
    """The parameters of a ``WWW-Authenticate: Digest ...`` challenge, or None if it is not one
    we can answer (another scheme, no nonce or realm, an unknown algorithm or qop)."""
    scheme, _, rest = header.strip().partition(" ")
    if scheme.lower() != "digest":
        return None
    params = {}
    for match in _PARAM.finditer(rest):
        value = match.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        params[match.group(1).lower()] = value
    algorithm = params.get("algorithm", "MD5").upper()
    base = algorithm.removesuffix("-SESS")
    if "nonce" not in params or "realm" not in params or _HASHES.get(base) is None:
        return None
    qops = [qop.strip() for qop in params.get("qop", "").split(",") if qop.strip()]
    if qops and "auth" not in qops:
        return None  # auth-int only: not offered
    params["algorithm"], params["qop"] = algorithm, "auth" if qops else ""
    return params


def digest_authorization(
    challenge: dict[str, str], user: str, password: str, method: str, uri: str, count: int, cnonce: str | None = None
) -> str:
    """The ``Authorization`` header answering ``challenge`` for ``method uri``, the ``count``-th
    use of its nonce."""
    algorithm = challenge["algorithm"]
    digest = _HASHES[algorithm.removesuffix("-SESS")]
    assert digest is not None

    def h(text: str) -> str:
        return digest(text.encode("utf-8")).hexdigest()

    cnonce = cnonce or os.urandom(8).hex()
    nc = f"{count:08x}"
    realm, nonce, qop = challenge["realm"], challenge["nonce"], challenge["qop"]
    ha1 = h(f"{user}:{realm}:{password}")
    if algorithm.endswith("-SESS"):
        ha1 = h(f"{ha1}:{nonce}:{cnonce}")
    ha2 = h(f"{method}:{uri}")
    response = h(f"{ha1}:{nonce}:{nc}:{cnonce}:{qop}:{ha2}") if qop else h(f"{ha1}:{nonce}:{ha2}")
    fields = [f'username="{_quoted(user)}"', f'realm="{_quoted(realm)}"', f'nonce="{_quoted(nonce)}"', f'uri="{_quoted(uri)}"']
    fields += [f'response="{response}"', f"algorithm={algorithm}"]
    if "opaque" in challenge:
        fields.append(f'opaque="{_quoted(challenge["opaque"])}"')
    if qop:
        fields += [f"qop={qop}", f"nc={nc}", f'cnonce="{cnonce}"']
    return "Digest " + ", ".join(fields)


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


@dataclass(frozen=True)
class Credentials:
    """A SiteAuth with its secret read (never printed: no repr of the value)."""

    rule: SiteAuth
    value: str

    def __repr__(self) -> str:
        return f"Credentials({self.rule.type} for {', '.join(self.rule.origins)})"
