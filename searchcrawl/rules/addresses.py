"""Which network addresses a source may reach, as plain logic: no Scrapy, no I/O.

An enterprise crawler runs inside the network it indexes, next to admin consoles, metadata
services and file shares, and what it fetches it publishes. So one rule guards every request the
crawler makes (links, redirects of every kind, meta refresh, robots.txt and its redirects, and
what the rendering browser loads): a connection to an *internal* address (loopback, private,
link-local, unique-local, unspecified, reserved, multicast, and their IPv4-mapped IPv6 forms) is
made only when the source's domain rules *and* port rules admit that host and port, or when it is
a seed's host and port (what the admin wrote is trusted). Domain rules admit internal addresses
by a suffix ``include`` rule only, never by ``include_prefix`` (``intranet.`` matches
``intranet.attacker.test`` too, a name anyone can point at 169.254.169.254), and a link-local
address (a cloud's metadata service) is reached only as a seed's own site. Public addresses are not restricted
here: the boundary and the redirect policy decide about them.

The rule is applied to the address actually connected to: the crawl's DNS resolver
(searchcrawl/crawl/resolver.py) filters the addresses it hands to the connection, so a name that
resolves to a public address when checked and to an internal one when connecting (DNS
rebinding) gets no connection.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from searchcrawl.rules.boundary import DEFAULT_PORTS, Boundary, normalize_host

SAFE_SCHEMES = frozenset({"http", "https"})


def ip_of(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address ``host`` is a literal of (brackets, zone ids and IPv4-mapped forms
    unwrapped), or None for a name."""
    try:
        ip = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        # the IPv4 address an IPv6 form carries: mapped (::ffff:127.0.0.1) or 6to4 (2002:7f00:1::,
        # which a 6to4 relay routes to 127.0.0.1)
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is not None:
            return embedded
    return ip


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address: where a password may travel without TLS (it never
    leaves the machine)."""
    if host.lower() == "localhost":
        return True
    ip = ip_of(host)
    return ip is not None and ip.is_loopback


def is_link_local(address: str) -> bool:
    """169.254.0.0/16 or fe80::/10: where cloud metadata services answer (169.254.169.254)."""
    ip = ip_of(address)
    return ip is not None and ip.is_link_local


def is_internal_address(address: str) -> bool:
    """Loopback, private, link-local, unique-local, unspecified, reserved or multicast (also in
    IPv4-mapped IPv6 form): anything that is not a public unicast address."""
    ip = ip_of(address)
    if ip is None:
        return False
    return (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_unspecified
        or ip.is_reserved
        or ip.is_multicast
        or not ip.is_global
    )


class AddressPolicy:
    """The internal-address rule of one source: which (host, port) pairs may be internal."""

    def __init__(self, boundary: Boundary, seeds: Sequence[str]) -> None:
        self.boundary = boundary
        self.seed_sites: frozenset[tuple[str, int | None]] = frozenset(
            (normalize_host(parts.hostname or ""), _port(parts.scheme, parts))
            for parts in map(urlsplit, seeds)
            if parts.scheme.lower() in SAFE_SCHEMES
        )

    def admits(self, host: str, port: int | None) -> bool:
        """May ``host:port`` be an internal address? A seed's site, or a host the domain rules
        name (a suffix include rule, or with none, a seed host: never an ``include_prefix``
        rule, which matches a name under any domain) on a port the port rules admit."""
        host = normalize_host(host)
        if (host, port) in self.seed_sites:
            return True
        return port is not None and self.boundary.admits_site(host, port)

    def refusal(self, host: str, port: int | None, addresses: Iterable[str]) -> str | None:
        """Why a connection to ``host:port`` at ``addresses`` is refused, or None when allowed.

        Every address must be allowed: a name that resolves to a public and an internal
        address could be connected to the internal one. A link-local address (a cloud's
        metadata service) only for a seed's own site: a domain rule is not enough."""
        addresses = list(addresses)
        internal = [address for address in addresses if is_internal_address(address)]
        if not internal:
            return None
        where = normalize_host(host)
        if (where, port) not in self.seed_sites:
            link_local = next((address for address in internal if is_link_local(address)), None)
            if link_local is not None:
                return f"{where}:{port} is a link-local address ({link_local}), reached only as a seed's own site"
        if self.admits(host, port):
            return None
        where = normalize_host(host)
        return f"{where}:{port} is an internal address ({internal[0]}) and the source's domain and port rules do not admit it"


def _port(scheme: str, parts: object) -> int | None:
    try:
        port = parts.port  # type: ignore[attr-defined]
    except ValueError:
        return None
    return port or DEFAULT_PORTS.get(scheme.lower())


def site_of_url(url: str) -> tuple[str, str, int | None]:
    """(scheme, normalised host, port with the scheme's default) of ``url``."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, normalize_host(parts.hostname or ""), _port(scheme, parts)
