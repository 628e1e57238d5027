"""Forms posted from another origin are refused (issue 72): sign-in CSRF from a same-site page.

The forms' cookies are ``SameSite=Strict`` and each form carries a token that must equal its
cookie (double submit) or the session's. That stops another *site*, but not a page of the same
site on another port of this host or on a sibling host (``wiki.intranet.example`` beside
``search.intranet.example``): cookies are not bound to a port, and a sibling host may set one for
the parent domain, so such a page can set the sign-in form's cookie to a token of its own choice
and post the form with it, with an account of its own: the victim is then signed in as the
attacker, and their searches go to the attacker's history (a "login CSRF").

So every POST is also judged by what the browser says of where it was sent from (``foreign_post``):
``Sec-Fetch-Site``, when sent, must be ``same-origin``; ``Origin``, when sent, must be this
application's own origin: the scheme, host and port the request came to (the scheme as a
trusted proxy's X-Forwarded-Proto gives it, the host from the request's Host header, which a
page cannot choose), or the public URL's (SEARCHCRAWL_WEB_PUBLIC_URL, for a proxy that sends
another Host). ``Origin: null`` is what a browser sends from this application's own pages (they
carry ``Referrer-Policy: no-referrer``) and from a sandboxed page alike: it passes only with
``Sec-Fetch-Site: same-origin`` (Chromium, Firefox, Safari since 16.4). A request with neither
header was not sent by a browser of the last years (they send Origin with every POST): the
form's token decides, as before; such a client cannot be made to send a victim's cookies by a
page.

Binding the form's token to a server-side pre-session would add nothing here: the attacker can
ask the application for a pre-session and its token and plant both, as they plant the cookie.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.responses import HTMLResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from searchcrawl.rules.credentials import origin_of  # scheme://host:port, the port always written
from searchcrawl.system import translations

logger = logging.getLogger(__name__)


def refused_page() -> str:
    """The refusal's page, in the request's language (app.InterfaceLanguage chose it, outside this
    middleware): no template, as nothing of the application runs for a refused form."""
    language = translations.current()
    title = html.escape(translations.gettext("Refused"))
    text = html.escape(
        translations.gettext(
            "This form was sent from a page of another address. Open this application's own page and send it from there."
        )
    )
    return f'<!doctype html><html lang="{language.code}"><title>{title}</title><h1>{title}</h1><p>{text}</p></html>'


def public_origins(urls: Iterable[str]) -> tuple[str, ...]:
    """The origins of the public URLs (SEARCHCRAWL_WEB_PUBLIC_URL); ValueError naming one that is
    not an http(s) URL."""
    found = []
    for url in urls:
        if not url.strip():
            continue
        origin = origin_of(url.strip())
        if origin is None:
            raise ValueError(f"SEARCHCRAWL_WEB_PUBLIC_URL: {url!r} is not an http(s) URL")
        found.append(origin)
    return tuple(found)


def foreign_post(headers: Headers, scheme: str, host: str, public: Iterable[str] = ()) -> str | None:
    """Why a POST came from a page of another origin (None: it did not, or no browser says).
    ``scheme`` and ``host``: what the request came to (its scope's scheme, its Host header);
    ``public``: the public URL's origins (``public_origins``)."""
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site.strip().lower() != "same-origin":
        return f"Sec-Fetch-Site: {fetch_site[:40]}"
    sent = headers.get("origin")
    if sent is None:
        return None
    if sent.strip() == "null":
        # the application's pages are sent with Referrer-Policy: no-referrer, under which a
        # browser's form POST says Origin: null even to its own origin; Sec-Fetch-Site then
        # tells (a sandboxed page says it too); a browser too old to send it is refused
        return None if fetch_site is not None else "Origin: null, and no Sec-Fetch-Site"
    own = {origin for origin in (origin_of(f"{scheme}://{host}"), *public) if origin}
    if origin_of(sent.strip()) not in own:
        return f"Origin: {sent[:200]}"
    return None


class SameOriginPosts:
    """Refuses (403) a POST that ``foreign_post`` finds sent from another origin, before the
    application reads it. Placed after the proxy headers' middleware: the scheme is the one the
    browser used."""

    def __init__(self, app: ASGIApp, public: Iterable[str] = (), exempt: Iterable[str] = ()) -> None:
        self.app = app
        self.public = tuple(public)
        self.exempt = frozenset(exempt)  # paths whose POSTs come from another site by design (a SAML IdP's)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") == "POST" and scope.get("path", "") not in self.exempt:
            headers = Headers(scope=scope)
            why = foreign_post(headers, scope.get("scheme", "http"), headers.get("host", ""), self.public)
            if why is not None:
                logger.warning("A form sent to %s from another origin refused (%s)", scope.get("path", ""), why)
                await HTMLResponse(refused_page(), status_code=403)(scope, receive, send)
                return
            logger.debug("A POST to %s judged same-origin", scope.get("path", ""))
        await self.app(scope, receive, send)
