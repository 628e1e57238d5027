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
address (a cloud's metadata service, ``METADATA_ADDRESSES`` included) is reached only where a seed
is that literal address. Public addresses are not restricted
here: the boundary and the redirect policy decide about them.

The rule is applied to the address actually connected to: the crawl's DNS resolver
(searchcrawl/crawl/resolver.py) filters the addresses it hands to the connection, so a name that
resolves to a public address when checked and to an internal one when connecting (DNS
rebinding) gets no connection.

Above that rule stands another: the installation's own services (every node of its Solr, Tika,
the web application, the model and embedding servers, the metrics endpoints: ``OwnServices``)
are never requested, whatever the source says (seeds, domain rules, redirects, names that
resolve to them). What a crawl fetches it publishes; a page of Solr's is every document of the
index, the private ones included. They are told apart by host *and port*: a site on another
port of the same machine is the source's to crawl.
"""

from __future__ import annotations

import functools
import ipaddress
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from searchcrawl.rules.boundary import DEFAULT_PORTS, Boundary, normalize_host
from searchcrawl.rules.status_codes import Status
from searchcrawl.system.host_addresses import literal_ip

SAFE_SCHEMES = frozenset({"http", "https"})


# IPv6 prefixes whose last 32 bits are an IPv4 address a packet reaches: IPv4-compatible (::/96,
# but :: and ::1 are IPv6's own), SIIT's IPv4-translated (::ffff:0:0:0/96) and NAT64's well-known
# and local-use prefixes (64:ff9b::/96, 64:ff9b:1::/48), which a translator on the path sends to
# that IPv4 address
_CARRIES_IPV4 = tuple(ipaddress.IPv6Network(prefix) for prefix in ("::/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48"))


@functools.lru_cache(maxsize=1024)
def ip_of(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address ``host`` is a literal of (brackets, zone ids and the IPv6 forms that carry
    an IPv4 address unwrapped), or None for a name. Remembered: every request asks it of its host
    several times (the own services, the policy, each address), and a crawl has few hosts
    (issue 102); a name is an exception raised in ``ipaddress`` each time otherwise."""
    ip = literal_ip(host)
    if isinstance(ip, ipaddress.IPv6Address):
        # the IPv4 address an IPv6 form carries: mapped (::ffff:127.0.0.1), 6to4 (2002:7f00:1::,
        # which a 6to4 relay routes to 127.0.0.1), or one of _CARRIES_IPV4 ([::127.0.0.1],
        # [64:ff9b::7f00:1])
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and int(ip) > 1 and any(ip in prefix for prefix in _CARRIES_IPV4):
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return embedded
    return ip


def is_localhost_name(host: str) -> bool:
    """``localhost`` or a name below it (RFC 6761: they resolve to loopback, never elsewhere)."""
    name = host.strip("[]").rstrip(".").lower()
    return name == "localhost" or name.endswith(".localhost")


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address: where a password may travel without TLS (it never
    leaves the machine)."""
    if host.lower() == "localhost":
        return True
    ip = ip_of(host)
    return ip is not None and ip.is_loopback


# Cloud metadata services (instance credentials, user data) at addresses that are not all
# link-local: AWS's IPv4 and IPv6 instance metadata, its container credentials and time
# service, Alibaba Cloud's, Azure's wire server, Oracle Cloud's. Treated as link-local everywhere
# (``is_link_local``): reached only at a seed's literal address, never added in the browser.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(address)
    for address in (
        "169.254.169.254",
        "169.254.170.2",
        "169.254.169.123",
        "fd00:ec2::254",
        "fd00:ec2::123",
        "100.100.100.200",
        "168.63.129.16",
        "192.0.0.192",
    )
)


def is_link_local(address: str) -> bool:
    """169.254.0.0/16, fe80::/10 or a cloud's metadata address (``METADATA_ADDRESSES``)."""
    ip = ip_of(address)
    return ip is not None and (ip.is_link_local or ip in METADATA_ADDRESSES)


def is_local_or_link_local(address: str) -> bool:
    """Loopback, unspecified (0.0.0.0 and :: connect to this machine) or link-local (a cloud's
    metadata service): where a new seed shows this machine's services, not a site."""
    ip = ip_of(address)
    return ip is not None and (ip.is_loopback or ip.is_unspecified or is_link_local(address))


def is_internal_address(address: str) -> bool:
    """Loopback, private, link-local, unique-local, unspecified, reserved or multicast (also in
    IPv4-mapped IPv6 form): anything that is not a public unicast address."""
    ip = ip_of(address)
    if ip is None:
        return False
    return (
        ip in METADATA_ADDRESSES
        or ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_unspecified
        or ip.is_reserved
        or ip.is_multicast
        or not ip.is_global
    )


@dataclass(frozen=True)
class OwnService:
    """One service of the installation, where it answers: ``what`` it is (for the reason), its
    host and port, and for an address behind a reverse proxy (the web application's public URL,
    whose proxy may serve other sites too) the path below which it answers: then it is told by
    its name, port and path alone, never by the proxy's addresses."""

    what: str
    host: str
    port: int
    path: str = ""

    @classmethod
    def of_url(cls, what: str, url: str, behind_proxy: bool = False) -> OwnService | None:
        """The service at ``url`` (credentials in it ignored), None for a URL without an http(s) host."""
        scheme, host, port = site_of_url(url.strip())
        if scheme not in SAFE_SCHEMES or not host or port is None:
            return None
        return cls(what, host, port, path_key(urlsplit(url.strip()).path) if behind_proxy else "")


def path_key(path: str) -> str:
    """``path`` as a server behind a proxy may read it, to compare prefixes with: decoded, dot
    segments and repeated slashes resolved, lower case, ending in ``/`` (``//x/../%53earch`` is
    ``/search/``): no spelling slips past a prefix."""
    resolved = posixpath.normpath("/" + unquote(path).replace("\\", "/").lstrip("/"))
    return resolved.lower().rstrip("/") + "/"


def _address(text: str) -> str | None:
    ip = ip_of(text)
    return None if ip is None else str(ip)


class OwnServices:
    """The installation's own services, and the addresses they answer at: a request to one of
    them is refused whatever the source says.

    A service is met by its name and port (``solr.corp:8983``), by any address its name resolved
    to at the crawl's start (``addresses``) on its port, and, when it runs on this machine (a
    loopback or unspecified address, or one ``machine`` says is this machine's own), on its
    port at every address of this machine: a service listening on 0.0.0.0:8983 answers
    127.0.0.2:8983, [::1]:8983 and the LAN address's 8983 too. ``machine`` is asked at each
    check (searchcrawl/crawl/own_services.py ``on_this_machine``: interfaces come and go); this
    module does no I/O. Another port of the same host is not a service's."""

    def __init__(
        self,
        services: Iterable[OwnService] = (),
        addresses: Mapping[str, Iterable[str]] | None = None,
        machine: Callable[[str], bool] = lambda address: False,
    ) -> None:
        self.machine = machine
        self.by_name: dict[tuple[str, int], list[OwnService]] = {}
        self.by_address: dict[tuple[str, int], OwnService] = {}
        self.local_ports: dict[int, OwnService] = {}
        # a SolrCloud whose live nodes cannot be learnt now: any internal address on one of these
        # ports may be one of its nodes (``nodes_unknown``)
        self.unknown_nodes: dict[int, OwnService] = {}
        # the ports of SOLR_URL's nodes, where any internal address may be Solr under an address
        # no name gives (a container's, 172.17.0.2:8983, behind Docker's -p 8983:8983)
        self.solr_ports: dict[int, OwnService] = {}
        self.add(services, addresses)

    def guard_solr_ports(self, nodes: Iterable[OwnService]) -> None:
        """Refuse every internal address on the port of one of ``nodes`` (SOLR_URL's), for good
        (SEARCHCRAWL_CRAWL_SOLR_PORTS off): but 80 and 443, every intranet site's ports."""
        self.solr_ports = {
            node.port: OwnService("maybe a node of Solr (an internal address on its port)", node.host, node.port)
            for node in nodes
            if node.port not in DEFAULT_PORTS.values()
        }

    def nodes_unknown(self, nodes: Iterable[OwnService]) -> None:
        """A SolrCloud's live nodes cannot be learnt (its cluster state refused, timed out): fail
        closed, every internal address on the port of one of ``nodes`` (SOLR_URL's) may be one."""
        self.unknown_nodes = {
            node.port: OwnService("maybe a node of Solr (its cluster's live nodes are unknown)", node.host, node.port)
            for node in nodes
        }

    def nodes_known(self) -> None:
        """The live nodes are learnt again (``add``): the internal addresses on their ports are sites."""
        self.unknown_nodes = {}

    def add(self, services: Iterable[OwnService], addresses: Mapping[str, Iterable[str]] | None = None) -> None:
        """More services (a SolrCloud's live nodes, learnt once the crawl asked), with the
        addresses their names resolved to. A service known already (its name read again) gets
        the new addresses too: a node whose pod restarted elsewhere keeps being refused, at
        its old and its new address."""
        for service in services:
            host = normalize_host(service.host)
            named = self.by_name.setdefault((host, service.port), [])
            if service not in named:
                named.append(service)
            if service.path:
                continue  # behind a proxy: its addresses are the proxy's
            found = [_address(host), *(_address(address) for address in (addresses or {}).get(service.host, ()))]
            for address in filter(None, found):
                self.by_address.setdefault((address, service.port), service)
                if self._on_this_machine(address):
                    self.local_ports.setdefault(service.port, service)
            if is_localhost_name(host):
                self.local_ports.setdefault(service.port, service)

    def _on_this_machine(self, address: str) -> bool:
        ip = ipaddress.ip_address(address)
        return ip.is_loopback or ip.is_unspecified or self.machine(address)

    def at(self, host: str, port: int | None, path: str = "/", addresses: Iterable[str] = ()) -> OwnService | None:
        """The service ``host:port`` (at ``path``; connected to at ``addresses``) is, or None."""
        if port is None:
            return None
        host = normalize_host(host)
        for service in self.by_name.get((host, port), ()):
            if not service.path or path_key(path).startswith(service.path):
                return service
        if is_localhost_name(host) and port in self.local_ports:
            return self.local_ports[port]
        for address in filter(None, [_address(host), *map(_address, addresses)]):
            found = self.by_address.get((address, port))
            if found is None and port in self.local_ports and self._on_this_machine(address):
                found = self.local_ports.get(port)
            if found is not None:
                return found
        guarded = self.unknown_nodes.get(port) or self.solr_ports.get(port)
        if guarded is not None and any(map(is_internal_address, [host, *addresses])):
            return guarded
        return None

    def refusal(self, host: str, port: int | None, path: str = "/", addresses: Iterable[str] = ()) -> str | None:
        """Why ``host:port`` is not requested (one of the services), or None."""
        service = self.at(host, port, path, addresses)
        if service is None:
            return None
        return (
            f"{normalize_host(host)}:{port} is {service.what} of this installation "
            f"({service.host}:{service.port}{service.path}): never crawled, whatever the source says"
        )


Refusal = tuple[Status, str]


class AddressPolicy:
    """The internal-address rule of one source: which (host, port) pairs may be internal; and
    the installation's own services (``own``), which no source may reach."""

    def __init__(self, boundary: Boundary, seeds: Sequence[str], own: OwnServices | None = None) -> None:
        self.boundary = boundary
        self.own = own if own is not None else OwnServices()
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

    def refusal(self, host: str, port: int | None, addresses: Iterable[str]) -> Refusal | None:
        """(status, reason) when a connection to ``host:port`` at ``addresses`` is refused, or
        None when allowed.

        One of the installation's own services never (status 944). Every address must be
        allowed: a name that resolves to a public and an internal address could be connected
        to the internal one. A link-local address (a cloud's metadata service,
        ``METADATA_ADDRESSES`` included) only where a seed is that literal address and port: a
        domain rule is not enough, nor a seed's name, which may resolve to a public address when
        the source is saved and to 169.254.169.254 when it is crawled."""
        addresses = list(addresses)
        own = self.own.refusal(host, port, addresses=addresses)
        if own is not None:
            return Status.OWN_SERVICE, own
        internal = [address for address in addresses if is_internal_address(address)]
        if not internal:
            return None
        where = normalize_host(host)
        literal = ip_of(where) if (where, port) in self.seed_sites else None
        link_local = next((address for address in internal if is_link_local(address) and ip_of(address) != literal), None)
        if link_local is not None:
            reason = (
                f"{where}:{port} is a link-local or metadata address ({link_local}), reached only at a seed's own literal address"
            )
            return Status.INTERNAL_ADDRESS, reason
        if self.admits(host, port):
            return None
        reason = f"{where}:{port} is an internal address ({internal[0]}) and the source's domain and port rules do not admit it"
        return Status.INTERNAL_ADDRESS, reason


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
