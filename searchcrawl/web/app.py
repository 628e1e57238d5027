"""The web application (`scrapy web`): a search page for everyone and administration pages.

The search page shows each searcher what they may read (Solr trims hits, counts, facets and
suggestions to the searcher's principals: searchcrawl/access/). A searcher is known by signing
in on the search page (the password checked by a bind to the LDAP directory; sessions, cookies
and a login throttle apart from the administrators'), or by the user header of a trusted
reverse proxy doing single sign-on (sign_on/searcher.py); anyone else sees public documents only, and
so does a signed-in searcher whose principals the directory cannot give now (fail closed).

Built on Starlette (a small, typed, well-kept ASGI toolkit by the authors of uvicorn and httpx:
routing, forms, static files and a test client, and nothing we would have to switch off), Jinja2
(the templates, autoescaping everything) and uvicorn (the server). No JavaScript framework: the
pages are HTML forms and links; the live run page refreshes itself with a meta refresh. The
search page alone loads one small script of this application's (static/suggest.js: suggestions
while typing, from /suggest); without it the page is the same plain form.

Safe by default: it binds 127.0.0.1 unless told otherwise (commands/web.py); every page is sent
with a Content-Security-Policy that allows no script at all (the search page: this
application's own script files only, SEARCH_PAGE_CSP), no framing and forms only to this
application, so text from crawled pages (titles, snippets, URLs, reasons) cannot run in an
administrator's browser even if escaping failed; the administration pages are off unless
SEARCHCRAWL_WEB_USERNAME and SEARCHCRAWL_WEB_PASSWORD(_FILE) are set, and every POST carries its
session's CSRF token, with SameSite=Strict, HttpOnly session cookies. Behind a reverse proxy,
``prefix`` (SEARCHCRAWL_WEB_PREFIX, ``--prefix``) is the path the application is served under.

Other applications search through the JSON API (``/api/search``, api.py) with tokens made on the
administration pages (store/api_tokens.py); portals include static/searchbox.js, a form to the
search page.

This module builds the application: the context (context.py: the services, built once), the
route table over the views of each audience (views/search_views.py, views/api_views.py, views/agent_views.py, views/sign_on_views.py,
views/admin_views.py, views/relevance_views.py, views/analytics_views.py, views/token_views.py, views/backup_views.py, views/source_editor_views.py; what they share:
shared.py) and the middlewares every request passes. The logic behind the pages, without HTTP,
is in admin.py, sign_on/sessions.py, sign_on/searcher.py, api.py and their neighbours; the search's in search/results.py.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from searchcrawl.system import translations
from searchcrawl.web.context import WebConfig, WebContext
from searchcrawl.web.origins import SameOriginPosts
from searchcrawl.web.shared import LANGUAGE_COOKIE, PEER
from searchcrawl.web.views import (
    admin_views,
    agent_views,
    analytics_views,
    api_views,
    backup_views,
    relevance_views,
    search_views,
    sign_on_views,
    source_editor_views,
    token_views,
)

EMBEDDABLE = "/static/searchbox.js"  # the portals' search box (static/searchbox.js)
# No script from anywhere, no plugin, no frame; styles and images from this application only.
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",  # a query or an admin URL never travels to a crawled site
}


class PeerAddress:
    """Keeps the connection's peer address in the scope (``PEER``) before X-Forwarded-For is
    applied to ``client``: the user header is believed from a proxy's connection only, not from
    a client that names a proxy's address in X-Forwarded-For (sign_on/searcher.py)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            client = scope.get("client")
            scope[PEER] = client[0] if client else None
        await self.app(scope, receive, send)


class SecurityHeaders:
    """Adds SECURITY_HEADERS to every response, and no-store to the administration's."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        private = "/admin" in scope.get("path", "")
        embeddable = scope.get("path", "").endswith(EMBEDDABLE)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                given = {name.lower() for name, _value in headers}  # a page's own (the search page's CSP)
                headers.extend(
                    (name.encode(), value.encode()) for name, value in SECURITY_HEADERS.items() if name.encode() not in given
                )
                if private:
                    headers.append((b"cache-control", b"no-store"))
                if embeddable:  # a portal page of another origin may load it (even under COEP)
                    headers.append((b"cross-origin-resource-policy", b"cross-origin"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, sending)


class InterfaceLanguage:
    """Chooses each page's language (system/translations.py: the searcher's choice, kept in the
    LANGUAGE_COOKIE, else the browser's Accept-Language, else English) and makes it current while the
    request is answered, its threads included; says it in Content-Language. The JSON API, the agents'
    endpoint and /metrics are machine interfaces: they stay in English, whatever the client accepts."""

    def __init__(self, app: ASGIApp, prefix: str = "") -> None:
        self.app = app
        self.english = tuple(prefix + path for path in ("/api/", "/mcp", "/metrics", "/static/"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "").startswith(self.english):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        tag = translations.negotiate(request.cookies.get(LANGUAGE_COOKIE), request.headers.get("accept-language"))

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"content-language", chosen.code.encode()))
                headers.append((b"vary", b"Accept-Language, Cookie"))
                message["headers"] = headers
            await send(message)

        with translations.speaking(tag) as chosen:
            await self.app(scope, receive, sending)


def route_table(ctx: WebContext) -> list[Route]:
    """Every URL of the application (under the prefix), the methods it answers and its view, each
    view handed the context ``ctx``."""

    def route(path: str, view: Callable[[WebContext, Request], Awaitable[Response]], methods: list[str] | None = None) -> Route:
        return Route(path, partial(view, ctx), methods=methods)

    return [
        route("/", search_views.search),
        route("/suggest", search_views.suggest, ["GET"]),
        route("/cached", search_views.cached, ["GET"]),
        route("/language", search_views.choose_language, ["POST"]),
        route("/login", sign_on_views.signin_form, ["GET"]),
        route("/login", sign_on_views.signin, ["POST"]),
        route("/logout", sign_on_views.signout, ["POST"]),
        route("/login/oidc", sign_on_views.oidc_signin, ["GET"]),
        route("/login/oidc/callback", sign_on_views.oidc_callback, ["GET"]),
        route("/admin/login/oidc", sign_on_views.oidc_login, ["GET"]),
        route("/login/saml", sign_on_views.saml_signin, ["GET"]),
        route(sign_on_views.SAML_ACS, sign_on_views.saml_acs, ["POST"]),
        route(sign_on_views.SAML_METADATA, sign_on_views.saml_metadata, ["GET"]),
        route("/admin/login/saml", sign_on_views.saml_login, ["GET"]),
        route("/login/kerberos", sign_on_views.kerberos_signin, ["GET"]),
        route("/admin/login/kerberos", sign_on_views.kerberos_login, ["GET"]),
        route("/admin", admin_views.overview),
        route("/admin/login", sign_on_views.login_form, ["GET"]),
        route("/admin/login", sign_on_views.login, ["POST"]),
        route("/admin/logout", sign_on_views.logout, ["POST"]),
        route("/admin/runs/{run:int}", admin_views.run),
        route("/admin/sources/{name}", admin_views.source),
        route("/admin/sources/{name}/documents", admin_views.documents),
        route("/admin/sources/{name}/explain", admin_views.explain, ["POST"]),
        route("/admin/sources/{name}/control", admin_views.control_source, ["POST"]),
        route("/admin/explain-access", admin_views.explain_access_form, ["GET"]),
        route("/admin/explain-access", admin_views.explain_access, ["POST"]),
        route("/admin/explain-answer", admin_views.explain_answer_form, ["GET"]),
        route("/admin/explain-answer", admin_views.explain_answer, ["POST"]),
        route("/admin/why", relevance_views.why_page, ["GET"]),
        route("/admin/relevance", relevance_views.relevance_page, ["GET"]),
        route("/admin/relevance", relevance_views.relevance_change, ["POST"]),
        route("/admin/relevance/measure", relevance_views.measure_page, ["GET"]),
        route("/click", analytics_views.click, ["GET"]),
        route("/admin/analytics", analytics_views.analytics_page, ["GET"]),
        route("/admin/analytics.csv", analytics_views.analytics_csv, ["GET"]),
        route("/admin/summary", admin_views.summary_page, ["GET"]),  # issue 60
        route("/admin/audit", admin_views.audit_page, ["GET"]),  # issue 79
        route("/admin/api", token_views.api_tokens, ["GET", "POST"]),
        route("/admin/source-files", source_editor_views.source_files, ["GET"]),
        route("/admin/new-source", source_editor_views.source_editor, ["GET"]),
        route("/admin/new-source", source_editor_views.source_change, ["POST"]),
        route("/admin/source-files/{name}", source_editor_views.source_editor, ["GET"]),
        route("/admin/source-files/{name}", source_editor_views.source_change, ["POST"]),
        route("/admin/source-files/{name}/{action}", source_editor_views.source_file_action, ["POST"]),
        route("/admin/test-crawl", source_editor_views.test_crawl_page, ["GET"]),  # issue 91
        route("/admin/backup", backup_views.backup_page, ["GET"]),
        route("/admin/backup/export", backup_views.backup_export, ["GET"]),
        route("/admin/backup/import", backup_views.backup_import, ["POST"]),
        route("/admin/backup/restore", backup_views.backup_restore, ["POST"]),
        route("/admin/api/{token:int}/revoke", token_views.api_token_revoke, ["POST"]),
        route("/api/search", api_views.api_search, ["GET", "OPTIONS"]),
        route("/api/suggest", api_views.api_suggest, ["GET", "OPTIONS"]),
        route("/metrics", admin_views.metrics, ["GET"]),
    ]


def create_app(config: WebConfig) -> Starlette:
    """The ASGI application for ``config``; under ``config.prefix`` when one is set. It reads
    X-Forwarded-For itself (from ``config.proxies``): serve it with the server's own proxy headers
    off (uvicorn's ``proxy_headers=False``), or the peer address would already be rewritten."""
    ctx = WebContext(config)
    agents, agents_running = agent_views.agent_app(ctx)  # the Model Context Protocol (issue 77)
    routes: list[BaseRoute] = [
        *route_table(ctx),
        Mount("/static", StaticFiles(packages=[("searchcrawl.web", "static")]), name="static"),
        Mount("/mcp", app=agents, name="mcp"),
    ]
    if config.prefix:
        routes = [Mount(config.prefix, routes=routes), Route("/", partial(search_views.to_prefix, ctx))]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        ctx.analytics.start()
        if config.relevance_sync_at_start:  # Solr may have lost them (a new configset, a dev Solr restarted)
            threading.Thread(target=relevance_views.sync_at_start, args=(ctx,), name="relevance-sync", daemon=True).start()
        try:
            async with agents_running():
                yield
        finally:
            ctx.close()

    middleware = [Middleware(PeerAddress)]
    if config.proxies:  # X-Forwarded-For and -Proto from these only, after PeerAddress kept the peer
        middleware.append(Middleware(ProxyHeadersMiddleware, trusted_hosts=list(config.proxies)))
    middleware.append(Middleware(SecurityHeaders))
    middleware.append(Middleware(InterfaceLanguage, prefix=config.prefix))
    # after the proxy headers: the scheme judged is the browser's (origins.py)
    # the SAML IdP's answer is a POST from its own page by design (believed for its signature)
    middleware.append(Middleware(SameOriginPosts, public=config.public_origins, exempt=(config.prefix + sign_on_views.SAML_ACS,)))
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.web = ctx  # the context, for tests and tools that look inside
    return app
