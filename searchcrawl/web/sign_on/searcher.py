"""Who is searching, without HTTP: the request's ``Searcher`` (the index as they may read it), a
trusted proxy's word, and the user name it may give.

A searcher is known by a session of the search page's sign-in (sign_on/sessions.py, its password checked
by the directory), or by a header that a reverse proxy doing single sign-on sets
(SEARCHCRAWL_WEB_USER_HEADER, e.g. ``X-Remote-User``). That header is believed only on a
connection whose peer is one of SEARCHCRAWL_WEB_PROXIES, the same proxies whose X-Forwarded-For is
believed. The peer is the address the connection really came from, taken before X-Forwarded-For
is applied (``request.client`` is then the address the proxy names, which a client picks when it
sends the header through the proxy itself): app.py's ``PeerAddress`` keeps it for this module.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from searchcrawl.access.decision import Principals
from searchcrawl.search.trimmed_index import TrimmedIndex

MAX_USER_CHARS = 256
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f]")
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Proxies:
    """SEARCHCRAWL_WEB_PROXIES: addresses and networks (``10.0.0.2``, ``10.1.0.0/16``, ``::1``);
    a name that is not an address (a Unix socket's) matches itself only."""

    def __init__(self, entries: Iterable[str]) -> None:
        self.entries = tuple(entry.strip() for entry in entries if entry.strip())
        self.networks: list[Network] = []
        self.names: set[str] = set()
        for entry in self.entries:
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.names.add(entry)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def __contains__(self, peer: str | None) -> bool:
        if not peer:
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return peer in self.names
        return any(address in network for network in self.networks)


def header_user(value: str | None) -> str | None:
    """The user name in a trusted proxy's header, or None (no header, an empty one, or one that
    is no user name: too long, unprintable characters)."""
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > MAX_USER_CHARS or _UNPRINTABLE.search(value):
        return None
    return value


@dataclass(frozen=True)
class Searcher:
    """The searcher of one request: the index as they may read it (``index``, its principals bound
    once where the searcher is known: WebContext.searcher; ``user`` None: not signed in), how they
    are known (``session``, ``header``, ``token`` or ``anonymous``), and the session's CSRF token for
    the sign-out. A view searches through ``index`` alone: it never chooses principals itself."""

    index: TrimmedIndex
    known_by: str = "anonymous"
    csrf: str = ""

    @property
    def principals(self) -> Principals:
        return self.index.principals

    @property
    def user(self) -> str | None:
        return self.principals.user

    @property
    def error(self) -> str:
        return self.principals.error
