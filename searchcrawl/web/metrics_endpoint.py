"""The web application's /metrics (Prometheus text format): who may read it, and its answer.

Off unless SEARCHCRAWL_WEB_METRICS is set (404, as for any unknown path). When on, it answers:

* a client on the loopback interface (``::ffff:127.0.0.1`` too) that is not one of the proxies
  SEARCHCRAWL_WEB_PROXIES names, and whose request carries no forwarding header
  (X-Forwarded-For, Forwarded, X-Real-IP): a Prometheus (or its agent) on the same host. A
  reverse proxy on this host forwards outside clients over loopback, often with no header at
  all (nginx's plain ``proxy_pass``), so a peer that may be a proxy never gets in without the
  token: with the default SEARCHCRAWL_WEB_PROXIES (loopback) the token is always required;
* any client that sends ``Authorization: Bearer <token>`` with SEARCHCRAWL_WEB_METRICS_TOKEN
  (or the file SEARCHCRAWL_WEB_METRICS_TOKEN_FILE names, as the other secrets), compared in
  constant time; a missing or wrong token gets 401 and no metrics.

The metrics say how many documents each source has and how its crawls go, not what they are:
source names are their only labels (ops/metrics.py), and the JSON API's refusals are counted by
reason (api.py's ApiRefusals), never by token. The collection runs in a worker thread
(it reads the database).
"""

from __future__ import annotations

import hmac
from ipaddress import ip_address

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from searchcrawl.web.sign_on.searcher import Proxies

TOKEN = "SEARCHCRAWL_WEB_METRICS_TOKEN"  # the secret's name (system/secrets.py: environment or _FILE)


FORWARDING = ("x-forwarded-for", "forwarded", "x-real-ip")


def unmapped(peer: str | None) -> str | None:
    """The peer's address with an IPv4-mapped IPv6 one (``::ffff:127.0.0.1``) as its IPv4 form."""
    try:
        address = ip_address(peer) if peer else None
    except ValueError:
        return peer
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped) if mapped is not None else peer


def loopback(peer: str | None) -> bool:
    try:
        return peer is not None and ip_address(unmapped(peer) or "").is_loopback
    except ValueError:
        return False


def allowed(peer: str | None, headers: dict[str, str], token: str | None, proxies: Proxies | None = None) -> bool:
    """Whether a request may read the metrics (module docstring): fail closed, a peer that may
    be a proxy needs the token."""
    proxies = proxies if proxies is not None else Proxies(())
    direct = not any(name in headers for name in FORWARDING)
    if direct and loopback(peer) and peer not in proxies and unmapped(peer) not in proxies:
        return True
    given = headers.get("authorization", "")
    scheme, _, value = given.partition(" ")
    return bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), str(token).encode())


async def metrics_response(
    request: Request,
    peer: str | None,
    registry: CollectorRegistry | None,
    token: str | None,
    proxies: Proxies | None = None,
) -> Response:
    if registry is None:
        return PlainTextResponse("Not Found", status_code=404)
    if not allowed(peer, {key.lower(): value for key, value in request.headers.items()}, token, proxies):
        return PlainTextResponse(
            "metrics: with the bearer token (SEARCHCRAWL_WEB_METRICS_TOKEN)",
            status_code=401,
            headers={"www-authenticate": "Bearer"},
        )
    body = await run_in_threadpool(generate_latest, registry)
    return Response(body, media_type=CONTENT_TYPE_LATEST, headers={"cache-control": "no-store"})
