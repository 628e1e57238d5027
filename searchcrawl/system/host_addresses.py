"""What a host name is on this machine now: the addresses its resolver gives. Below the crawl
(crawl/own_services.py: the installation's services' names) and the web application (the source
editor's seeds on this machine) alike, which import each other nowhere. Standard library only."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable


def addresses_of(hosts: Iterable[str]) -> dict[str, list[str]]:
    """Each name's addresses, as this machine resolves them now (a name that does not resolve:
    none; an address literal or an empty host is no name, and is left out)."""
    found: dict[str, list[str]] = {}
    for host in set(hosts):
        if not host or literal_ip(host) is not None:
            continue
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            continue
        found[host] = sorted({str(info[4][0]) for info in infos})
    return found


def literal_ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address ``host`` is written as (IPv6 with or without brackets, its zone id dropped),
    None for a name (rules/addresses.py ``ip_of`` reads the IPv4 address an IPv6 form carries)."""
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
