"""A source's HTTP(S) proxy as plain logic: the ``[proxy]`` table and which URLs go direct.

The proxy's address is in the source file, its password only in a secret named there
(``secret = "PROXY_PASSWORD"``: the environment variable, or ``PROXY_PASSWORD_FILE``), never in
the URL. ``no_proxy`` lists what goes direct: a host name or domain (``example.com`` is that host
and every host below it, as curl and wget read ``no_proxy``), an IP address, or an exact origin
(``https://wiki.example:8443``: that scheme, host and port only). The environment's
``http_proxy``/``https_proxy``/``no_proxy`` are not read: a source's traffic goes where its
file says (searchcrawl/crawl/middlewares/proxy.py applies this to every request).
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from searchcrawl.rules.boundary import normalize_host
from searchcrawl.rules.credentials import DEFAULT_PORTS, origin_of

_SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HOST = re.compile(r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$")


def _no_proxy_entry(entry: str) -> str:
    """One ``no_proxy`` entry, normalised: an origin (``scheme://host:port``), or a host name,
    domain or IP address in lower case without a leading dot; or ValueError."""
    value = entry.strip()
    if "://" in value:
        origin = origin_of(value)
        if origin is None or urlsplit(value).path not in ("", "/") or "@" in value:
            raise ValueError(f"no_proxy entry {entry!r}: expected an origin (scheme://host[:port]), a host or a domain")
        return origin
    host = normalize_host(value.lstrip("."))
    bare = host.strip("[]")
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        pass
    if not host or "*" in host or not _HOST.match(host):
        raise ValueError(
            f"no_proxy entry {entry!r}: expected a host name or domain such as 'intranet.example' (it covers the "
            "hosts below it; no wildcards, no port: name a port in an origin, 'https://host:8443'), an IP address "
            "or an origin"
        )
    return host


class ProxyRule(BaseModel):
    """The ``[proxy]`` table of a source file."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    url: str  # http://host:port or https://host:port, nothing more
    user: str | None = None
    secret: str | None = None  # the NAME of the secret holding the proxy password
    no_proxy: list[str] = Field(default_factory=list)

    @field_validator("url")
    @classmethod
    def _proxy_url(cls, url: str) -> str:
        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError:
            raise ValueError("expected a proxy URL such as 'http://proxy.example:3128'") from None
        if parts.username is not None or parts.password is not None:
            # never echo it: it holds a password
            raise ValueError("expected a proxy URL without user name and password: give 'user' and 'secret' instead")
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS or not parts.hostname:
            raise ValueError(f"expected an http:// or https:// proxy URL with a host, got {url!r}")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError(f"expected a proxy URL with nothing after host and port, got {url!r}")
        host = parts.hostname.lower()
        host = f"[{host}]" if ":" in host else host
        return f"{scheme}://{host}:{port or DEFAULT_PORTS[scheme]}"

    @field_validator("no_proxy")
    @classmethod
    def _entries(cls, entries: list[str]) -> list[str]:
        return list(dict.fromkeys(_no_proxy_entry(entry) for entry in entries))

    @model_validator(mode="after")
    def _credentials(self) -> ProxyRule:
        if (self.user is None) != (self.secret is None):
            raise ValueError("give both 'user' and 'secret' (the name of the secret holding the proxy password), or neither")
        if self.user is not None and (":" in self.user or not self.user):
            raise ValueError("a proxy user name cannot be empty or hold ':'")
        if self.secret is not None and not _SECRET_NAME.fullmatch(self.secret):
            raise ValueError("'secret' is the name of an environment variable holding the password, not the password")
        return self

    @property
    def site(self) -> tuple[str, int]:
        """(host, port) of the proxy, the way the internal-address rule names a site."""
        parts = urlsplit(self.url)
        assert parts.hostname is not None and parts.port is not None
        return normalize_host(parts.hostname), parts.port


def goes_direct(no_proxy: list[str], url: str) -> bool:
    """Whether ``url`` bypasses the proxy: its origin is listed, or its host is a listed host,
    IP address, or below a listed domain. Entries are ``ProxyRule``-normalised."""
    origin = origin_of(url)
    if origin is None:
        return False
    if origin in no_proxy:
        return True
    host = normalize_host(urlsplit(url).hostname or "").strip("[]")
    try:
        host = str(ipaddress.ip_address(host))
    except ValueError:
        pass
    for entry in no_proxy:
        if "://" in entry:
            continue
        if host == entry or (not _is_ip(entry) and host.endswith("." + entry)):
            return True
    return False


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True
