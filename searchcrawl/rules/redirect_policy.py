"""The redirect policy, as plain logic (the Scrapy middleware in middlewares/redirect.py applies it).

- Temporary redirects (302, 303, 307) are followed even outside the boundary: the page a link
  leads to is what the user meant. Only the last step may leave the boundary (its links are
  checked against the boundary as usual). A target on a port the port rules exclude is outside
  the boundary whatever the status code. Whether the target's address may be reached at all is
  the internal-address guard's decision (searchcrawl/rules/addresses.py), made for every request.
- Permanent redirects (301, 308) are followed only when the target passes the boundary rules;
  the old URL is recorded as moved either way (and leaves the index).
- Loops end with REDIRECT_LOOP on the URL that started them; Scrapy's RedirectMiddleware bounds
  the chain (``REDIRECT_MAX_TIMES``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from searchcrawl.rules.addresses import site_of_url
from searchcrawl.rules.boundary import Boundary
from searchcrawl.rules.status_codes import Status

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


def decide_redirect(
    status: int, target: str, depth: int, chain: Sequence[str], boundary: Boundary, left: bool = False
) -> RedirectVerdict:
    """Follow a ``status`` redirect to ``target``? ``chain`` holds the URLs redirected so far,
    the current one last; ``left``: the current one is already outside the boundary (a
    temporary redirect let it out), so a target outside it is a second step out, not followed."""
    if target in chain:
        return RedirectVerdict(False, f"redirect loop back to {target}", Status.REDIRECT_LOOP)
    decision = boundary.check(target, depth)
    if decision.allowed:
        return RedirectVerdict(True, f"{status} to {target}")
    if decision.status == Status.URL_TOO_LONG:  # never requested, whatever the status code
        return RedirectVerdict(False, f"{status} to a URL that is too long ({decision.rule})", Status.URL_TOO_LONG)
    if status in PERMANENT:
        return RedirectVerdict(
            False, f"{status} to {target}, outside the boundary ({decision.rule})", target_status=decision.status
        )
    if left:  # only the last step may leave: evil1 -> 302 -> evil2 -> ... is not a way out
        return RedirectVerdict(
            False, f"{status} to {target}, a second step outside the boundary ({decision.rule})", decision.status
        )
    _scheme, host, port = site_of_url(target)
    ports = boundary.port_decision(host, port) if port is not None else decision
    if decision.status == Status.EXCLUDED_PORT or not ports.allowed:
        rule = decision.rule if decision.status == Status.EXCLUDED_PORT else ports.rule
        return RedirectVerdict(False, f"{status} to {target}, outside the boundary ({rule})", Status.EXCLUDED_PORT)
    return RedirectVerdict(True, f"{status} to {target} (outside the boundary: {decision.rule})", leaves_boundary=True)
