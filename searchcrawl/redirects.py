"""The redirect policy, as plain logic (the Scrapy middleware in middlewares/redirect.py applies it).

- Temporary redirects (302, 303, 307) are followed even outside the boundary: the page a link
  leads to is what the user meant. Only the last step may leave the boundary (its links are
  checked against the boundary as usual), and a server-side request forgery guard applies:
  a target outside the boundary must not be (or resolve to) a loopback, private, link-local or
  otherwise internal address unless the domain rules admit its host (an include rule, or with
  none, a seed host): the guard keeps redirects from reaching other internal hosts.
- Permanent redirects (301, 308) are followed only when the target passes the boundary rules;
  the old URL is recorded as moved either way (and leaves the index).
- Chains are bounded and loops detected; both end with REDIRECT_LOOP on the URL that started them.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from .boundary import Boundary
from .status import Status

PERMANENT = frozenset({301, 308})
TEMPORARY = frozenset({302, 303, 307})
REDIRECTS = PERMANENT | TEMPORARY


@dataclass(frozen=True)
class RedirectVerdict:
    follow: bool
    reason: str
    status: Status | None = None  # crawler code for the redirecting URL when the redirect is refused
    leaves_boundary: bool = False  # followed although the target is outside the boundary
    target_status: Status | None = None  # the boundary's code for a refused permanent target


def is_internal_address(address: str) -> bool:
    """Loopback, private, link-local, unspecified, reserved or multicast: not a public address."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified or ip.is_reserved or ip.is_multicast


def resolve_host(host: str) -> list[str]:
    """The addresses a host name stands for (an IP literal stands for itself). Blocking."""
    try:
        ipaddress.ip_address(host.strip("[]"))
        return [host.strip("[]")]
    except ValueError:
        pass
    try:
        return sorted({info[4][0] for info in socket.getaddrinfo(host, None)})
    except (OSError, UnicodeError):
        return []


def decide_redirect(
    status: int,
    target: str,
    depth: int,
    chain: Sequence[str],
    boundary: Boundary,
    max_redirects: int,
    resolve: Callable[[str], list[str]] = resolve_host,
) -> RedirectVerdict:
    """Follow a ``status`` redirect to ``target``? ``chain`` holds the URLs redirected so far,
    the current one last."""
    if target in chain:
        return RedirectVerdict(False, f"redirect loop back to {target}", Status.REDIRECT_LOOP)
    if len(chain) > max_redirects:
        return RedirectVerdict(False, f"more than {max_redirects} redirects in a row", Status.REDIRECT_LOOP)
    decision = boundary.check(target, depth)
    if decision.allowed:
        return RedirectVerdict(True, f"{status} to {target}")
    if status in PERMANENT:
        return RedirectVerdict(
            False, f"{status} to {target}, outside the boundary ({decision.rule})", target_status=decision.status
        )
    host = (urlsplit(target).hostname or "").lower()
    if not boundary.includes_host(host):
        internal = [address for address in resolve(host) if is_internal_address(address)]
        if internal:
            return RedirectVerdict(
                False,
                f"{status} to {target}: outside the boundary and {host} is an internal address ({internal[0]})",
                Status.INTERNAL_ADDRESS,
            )
    return RedirectVerdict(True, f"{status} to {target} (outside the boundary: {decision.rule})", leaves_boundary=True)
