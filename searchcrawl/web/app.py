"""The web application (`scrapy web`): a search page for everyone and administration pages.

Built on Starlette (a small, typed, well-kept ASGI toolkit by the authors of uvicorn and httpx:
routing, forms, static files and a test client, and nothing we would have to switch off), Jinja2
(the templates, autoescaping everything) and uvicorn (the server). No JavaScript framework: the
pages are HTML forms and links; the live run page refreshes itself with a meta refresh.

Safe by default: it binds 127.0.0.1 unless told otherwise (commands/web.py); every page is sent
with a Content-Security-Policy that allows no script at all, no framing and forms only to this
application, so text from crawled pages (titles, snippets, URLs, reasons) cannot run in an
administrator's browser even if escaping failed; the administration pages are off unless
SEARCHCRAWL_WEB_USERNAME and SEARCHCRAWL_WEB_PASSWORD(_FILE) are set, and every POST carries its
session's CSRF token, with SameSite=Strict, HttpOnly session cookies. Behind a reverse proxy,
``prefix`` (SEARCHCRAWL_WEB_PREFIX, ``--prefix``) is the path the application is served under.

The logic of each page is in search.py, admin.py and sessions.py; this module is the HTTP layer.
"""

from __future__ import annotations

import hmac
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from secrets import token_urlsafe
from typing import Any
from urllib.parse import parse_qsl

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from searchcrawl.access.decision import Principals
from searchcrawl.commands.report import run_report
from searchcrawl.index.indexer import IndexingError, SolrIndex
from searchcrawl.index.query import matching
from searchcrawl.ops.launchers import Launcher
from searchcrawl.ops.run_control import ACTIONS, control
from searchcrawl.rules.lifecycle import Delta, State
from searchcrawl.rules.schedules import Schedule
from searchcrawl.rules.status_codes import describe
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.runs import Runs
from searchcrawl.web import admin
from searchcrawl.web.search_page import FACET_TITLES, SearchRequest, run_search
from searchcrawl.web.sessions import LoginThrottle, Sessions

logger = logging.getLogger(__name__)

SESSION_COOKIE = "searchcrawl_session"
LOGIN_COOKIE = "searchcrawl_login"  # the login form's own CSRF token (double submit)
# The application's forms are small and URL-encoded: anything else is refused before it is read
# (Starlette reads any form whole: a login POST could hold a gigabyte before its token was checked)
FORM_TYPE = "application/x-www-form-urlencoded"
MAX_FORM_BYTES = 16_384
DOCUMENT_ROWS = 50
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


@dataclass
class WebConfig:
    """What the application needs, resolved by `scrapy web` from the project's settings."""

    solr_url: str
    db_url: str
    cache_root: Path
    project_dir: Path
    source_names: Callable[[], list[str]]
    schedule_of: Callable[[str], Schedule | None]
    launcher: Launcher
    solr_auth: tuple[str, str] | None = None
    credentials: tuple[str, str] | None = None
    prefix: str = ""
    rows: int = 10
    stale_after: float = 600
    session_lifetime: float = 8 * 3600
    explain_environ: dict[str, str] | None = None
    solr_timeout: float = 30


class SecurityHeaders:
    """Adds SECURITY_HEADERS to every response, and no-store to the administration's."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        private = "/admin" in scope.get("path", "")

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.extend((name.encode(), value.encode()) for name, value in SECURITY_HEADERS.items())
                if private:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, sending)


@dataclass
class WebApp:
    config: WebConfig
    sessions: Sessions = field(init=False)
    throttle: LoginThrottle = field(default_factory=LoginThrottle, init=False)
    templates: Environment = field(init=False)
    _database: Database | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self.sessions = Sessions(self.config.credentials, self.config.session_lifetime)
        self.templates = Environment(
            loader=PackageLoader("searchcrawl.web", "templates"), autoescape=select_autoescape(default=True)
        )
        self.templates.globals.update(
            base=self.config.prefix, facet_titles=FACET_TITLES, describe=describe, actions=ACTIONS, matching=matching
        )
        # as a crawl reaches Solr: SOLR_URL may list a SolrCloud collection on several nodes
        self.solr = SolrIndex(self.config.solr_url, timeout=self.config.solr_timeout, auth=self.config.solr_auth)

    @property
    def database(self) -> Database:
        """The document table, opened at the first administration page (brought up to date as
        `scrapy control` does: the buttons write to it); the search page needs none."""
        with self._lock:
            if self._database is None:
                self._database = Database(self.config.db_url, migrate=True)
            return self._database

    def close(self) -> None:
        if self._database is not None:
            self._database.close()

    def render(self, request: Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
        session = self.sessions.get(request.cookies.get(SESSION_COOKIE))
        html = self.templates.get_template(template).render(session=session, admin_enabled=self.sessions.enabled, **context)
        return HTMLResponse(html, status_code=code)

    def url(self, path: str) -> str:
        return self.config.prefix + path

    # --- search ---------------------------------------------------------------------------------

    async def search(self, request: Request) -> Response:
        query = SearchRequest.from_params(request.query_params)
        try:
            page = await _in_thread(run_search, self.solr, query, Principals.anonymous(), self.config.rows)
        except IndexingError as exc:
            logger.warning("Search %r failed: %s", query.q, exc.reason)
            return self.render(request, "search.html", 503, page=None, query=query, error="The index cannot be searched now.")
        return self.render(request, "search.html", page=page, query=query, error="")

    # --- login ------------------------------------------------------------------------------------

    async def login_form(self, request: Request) -> Response:
        if not self.sessions.enabled:
            return self.render(request, "admin_off.html", 404)
        token = request.cookies.get(LOGIN_COOKIE) or token_urlsafe(32)
        response = self.render(request, "login.html", login_token=token, failed=False)
        self._cookie(request, response, LOGIN_COOKIE, token, 600)
        return response

    async def login(self, request: Request) -> Response:
        if not self.sessions.enabled:
            return self.render(request, "admin_off.html", 404)
        form = await small_form(request)
        if form is None:
            return self.render(request, "forbidden.html", 413, reason="Not a login form.")
        # from the throttle's answer to the failure it records, no await: concurrent attempts of
        # one address cannot all pass while its count is still low
        client = request.client.host if request.client is not None else "-"
        wait = self.throttle.wait(client)
        if wait > 0:  # guessing is slowed down, whatever the form holds
            refused = self.render(request, "forbidden.html", 429, reason=f"Too many failed logins: try again in {wait:.0f} s.")
            refused.headers["retry-after"] = str(int(wait) + 1)
            return refused
        expected = request.cookies.get(LOGIN_COOKIE)
        sent = str(form.get("login_token", ""))
        if not expected or not hmac.compare_digest(expected.encode(), sent.encode()):
            return self.render(request, "forbidden.html", 403, reason="The login form has expired; load it again.")
        user, password = str(form.get("username", "")), str(form.get("password", ""))
        if not self.sessions.check(user, password):
            self.throttle.failed(client)
            logger.warning("Web administration: failed login from %s", client)
            return self.render(request, "login.html", 403, login_token=expected, failed=True)
        self.throttle.succeeded(client)
        logger.info("Web administration: login")
        response = RedirectResponse(self.url("/admin"), status_code=303)
        self._cookie(request, response, SESSION_COOKIE, self.sessions.login(user), int(self.config.session_lifetime))
        response.delete_cookie(LOGIN_COOKIE, path=self.url("/admin") or "/")
        return response

    async def logout(self, request: Request) -> Response:
        denied = await self._denied(request, post=True)
        if denied is not None:
            return denied
        self.sessions.logout(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse(self.url("/"), status_code=303)
        response.delete_cookie(SESSION_COOKIE, path=self.url("/admin"))
        return response

    def _cookie(self, request: Request, response: Response, name: str, value: str, max_age: int) -> None:
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            path=self.url("/admin"),
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )

    async def _denied(self, request: Request, post: bool = False) -> Response | None:
        """None when the request may proceed: administration on, a session, and for a POST its
        CSRF token; otherwise the answer to send."""
        if not self.sessions.enabled:
            return self.render(request, "admin_off.html", 404)
        session = self.sessions.get(request.cookies.get(SESSION_COOKIE))
        if session is None:
            if post:
                return self.render(request, "forbidden.html", 403, reason="Not logged in.")
            return RedirectResponse(self.url("/admin/login"), status_code=303)
        if post:
            form = await small_form(request)
            if form is None:
                return self.render(request, "forbidden.html", 413, reason="Not a form of this application.")
            if not Sessions.csrf_ok(session, str(form.get("csrf", "")) or None):
                logger.warning("Web administration: POST to %s without its CSRF token refused", request.url.path)
                return self.render(request, "forbidden.html", 403, reason="The form's token is missing or stale.")
        return None

    async def _admin_source(self, request: Request, post: bool = False) -> str | Response:
        """The source an administration page is about, or the answer to send instead (not
        allowed: ``_denied``; no such source: 404)."""
        denied = await self._denied(request, post=post)
        if denied is not None:
            return denied
        name = self._source(request)
        if name is None:
            return self.render(request, "forbidden.html", 404, reason="No such source.")
        return name

    def _source(self, request: Request) -> str | None:
        name = str(request.path_params["name"])
        return name if name in self.config.source_names() else None

    # --- administration ---------------------------------------------------------------------------

    async def overview(self, request: Request) -> Response:
        denied = await self._denied(request)
        if denied is not None:
            return denied

        def gather() -> dict[str, Any]:
            names = self.config.source_names()
            for name in names:  # reap local crawl processes that ended
                self.config.launcher.active(name)
            rows = admin.overview(
                self.database,
                names,
                self.config.schedule_of,
                self.config.cache_root,
                datetime.now().astimezone(),
                self.config.stale_after,
            )
            return {"sources": rows, "solr": admin.solr_health(self.solr)}

        return self.render(request, "overview.html", **await _in_thread(gather), flash=self._flash(request))

    async def source(self, request: Request) -> Response:
        name = await self._admin_source(request)
        if isinstance(name, Response):
            return name

        def gather() -> dict[str, Any]:
            table = DocumentTable(self.database)
            statuses = sorted(table.count_by(name, "status").items(), key=lambda item: (item[0] is None, item[0] or 0))
            return {
                "runs": [{**run, "counts": admin.run_counts(run)} for run in Runs(self.database).recent(name, limit=20)],
                "states": table.count_by(name, "state"),
                "statuses": [(status, count, describe(status)) for status, count in statuses],
            }

        return self.render(request, "source.html", name=name, **await _in_thread(gather), flash=self._flash(request))

    async def run(self, request: Request) -> Response:
        denied = await self._denied(request)
        if denied is not None:
            return denied
        view = await _in_thread(
            admin.run_view, self.database, int(request.path_params["run"]), self.config.cache_root, self.config.stale_after
        )
        if view is None:
            return self.render(request, "forbidden.html", 404, reason="No such run.")
        report = None
        if not view.live:
            report = await _in_thread(run_report, self.database, view.run["source"], view.run["id"])
        return self.render(request, "run.html", view=view, report=report, kinds=tuple(Delta), flash=self._flash(request))

    async def documents(self, request: Request) -> Response:
        name = await self._admin_source(request)
        if isinstance(name, Response):
            return name
        status = _int(request.query_params.get("status"))
        state = request.query_params.get("state")
        state = state if state in {item.value for item in State} else None
        page = max(_int(request.query_params.get("page")) or 1, 1)
        rows = await _in_thread(
            DocumentTable(self.database).rows, name, status, state, DOCUMENT_ROWS + 1, (page - 1) * DOCUMENT_ROWS
        )
        return self.render(
            request,
            "documents.html",
            name=name,
            rows=rows[:DOCUMENT_ROWS],
            more=len(rows) > DOCUMENT_ROWS,
            status=status,
            state=state,
            page=page,
            meaning=describe(None if status == -1 else status) if status is not None else "",
        )

    async def explain(self, request: Request) -> Response:
        name = await self._admin_source(request, post=True)
        if isinstance(name, Response):
            return name
        url = str((await small_form(request) or FormData()).get("url", "")).strip()
        if not url.lower().startswith(("http://", "https://", "file:", "ftp://")) or len(url) > 8192:
            ok, text = False, "Give an absolute URL (http://, https://, ftp:// or file:)."
        else:
            ok, text = await _in_thread(admin.explain, self.config.project_dir, name, url, self.config.explain_environ)
        return self.render(request, "explain.html", name=name, url=url, ok=ok, text=text)

    async def control(self, request: Request) -> Response:
        denied = await self._denied(request, post=True)
        if denied is not None:
            return denied
        name = self._source(request)
        form = await small_form(request) or FormData()
        action = str(form.get("action", ""))
        if name is None or action not in ACTIONS:
            return self.render(request, "forbidden.html", 404, reason="No such source or action.")
        outcome = await _in_thread(control, self.database, self.config.launcher, name, action, self.config.stale_after)
        logger.info("Web administration: %s %s: %s", action, name, outcome.message)
        self.sessions.flash(request.cookies.get(SESSION_COOKIE), outcome.message)
        back = str(form.get("back", ""))
        target = back if back.startswith("/admin") and "//" not in back else f"/admin/sources/{name}"
        return RedirectResponse(self.url(target), status_code=303)

    def _flash(self, request: Request) -> str:
        return self.sessions.take_flash(request.cookies.get(SESSION_COOKIE))


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None and value != "" else None
    except ValueError:
        return None


async def small_form(request: Request) -> FormData | None:
    """The request's URL-encoded form, read once (kept on the request) and at most
    ``MAX_FORM_BYTES``; None for another content type or a larger body, which is not read on."""
    if hasattr(request.state, "form"):
        return request.state.form
    form: FormData | None = None
    if request.headers.get("content-type", "").split(";", 1)[0].strip().lower() == FORM_TYPE:
        body = bytearray()
        async with aclosing(request.stream()) as chunks:
            async for chunk in chunks:
                body += chunk
                if len(body) > MAX_FORM_BYTES:
                    break
        if len(body) <= MAX_FORM_BYTES:
            pairs = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True, encoding="utf-8", errors="replace")
            form = FormData(list[tuple[str, str | UploadFile]](pairs))
    request.state.form = form
    return form


async def _in_thread(function: Callable[..., Any], *args: Any) -> Any:
    """Blocking work (Solr, the database, a process) off the event loop."""
    return await run_in_threadpool(function, *args)


def create_app(config: WebConfig) -> Starlette:
    """The ASGI application for ``config``; under ``config.prefix`` when one is set."""
    web = WebApp(config)
    routes = [
        Route("/", web.search),
        Route("/admin", web.overview),
        Route("/admin/login", web.login_form, methods=["GET"]),
        Route("/admin/login", web.login, methods=["POST"]),
        Route("/admin/logout", web.logout, methods=["POST"]),
        Route("/admin/runs/{run:int}", web.run),
        Route("/admin/sources/{name}", web.source),
        Route("/admin/sources/{name}/documents", web.documents),
        Route("/admin/sources/{name}/explain", web.explain, methods=["POST"]),
        Route("/admin/sources/{name}/control", web.control, methods=["POST"]),
        Mount("/static", StaticFiles(packages=[("searchcrawl.web", "static")]), name="static"),
    ]
    if config.prefix:
        routes = [Mount(config.prefix, routes=routes), Route("/", lambda request: RedirectResponse(config.prefix + "/"))]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        web.close()

    app = Starlette(routes=routes, middleware=[Middleware(SecurityHeaders)], lifespan=lifespan)
    app.state.web = web
    return app
