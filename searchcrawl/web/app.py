"""The web application (`scrapy web`): a search page for everyone and administration pages.

The search page shows each searcher what they may read (Solr trims hits, counts, facets and
suggestions to the searcher's principals: searchcrawl/access/). A searcher is known by signing
in on the search page (the password checked by a bind to the LDAP directory; sessions, cookies
and a login throttle apart from the administrators'), or by the user header of a trusted
reverse proxy doing single sign-on (searchers.py); anyone else sees public documents only, and
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

The logic of each page is in search_page.py, admin.py, sessions.py, searchers.py and api.py;
this module is the HTTP layer.
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from secrets import token_urlsafe
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio.to_thread
from anyio import CapacityLimiter
from jinja2 import Environment, PackageLoader, select_autoescape
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.access.directory import Directory, DirectoryUnavailable
from searchcrawl.access.explanation import URL_WANTED, explainable_url
from searchcrawl.access.tokens import AccessError
from searchcrawl.commands.report import reason_text, run_report
from searchcrawl.index import managed
from searchcrawl.index.indexer import IndexingError, SolrIndex
from searchcrawl.ops import daily_summary
from searchcrawl.ops.health import HealthCheck
from searchcrawl.ops.launchers import Launcher
from searchcrawl.ops.metrics import ProjectCollector
from searchcrawl.ops.run_control import ACTIONS, control
from searchcrawl.ops.stalls import stalls
from searchcrawl.rules import relevance
from searchcrawl.rules.lifecycle import Delta, State
from searchcrawl.rules.schedules import Schedule
from searchcrawl.rules.status_codes import describe
from searchcrawl.search import suggestions, why
from searchcrawl.search.query import matching
from searchcrawl.search.searcher import TrimmedIndex
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.api_tokens import ApiTokens
from searchcrawl.store.notifications import Notifications, run_key
from searchcrawl.store.relevance_rules import RelevanceStore
from searchcrawl.store.runs import Runs
from searchcrawl.store.samples import RunSamples
from searchcrawl.store.searches import Searches
from searchcrawl.web import admin, analytics, api, pictures
from searchcrawl.web.metrics_endpoint import metrics_response
from searchcrawl.web.origins import SameOriginPosts
from searchcrawl.web.search_page import FACET_TITLES, SearchRequest, run_search, search_back
from searchcrawl.web.searchers import Proxies, Searcher, header_user
from searchcrawl.web.sessions import LoginThrottle, SearcherSessions, Sessions

logger = logging.getLogger(__name__)

SESSION_COOKIE = "searchcrawl_session"
LOGIN_COOKIE = "searchcrawl_login"  # the login form's own CSRF token (double submit)
# a searcher's session and sign-in form: names of their own, on the search page's path
SEARCHER_COOKIE = "searchcrawl_searcher"
SIGNIN_COOKIE = "searchcrawl_signin"
PEER = "searchcrawl.peer"  # the scope's key for the connection's own peer address (PeerAddress)
# The application's forms are small and URL-encoded: anything else is refused before it is read
# (Starlette reads any form whole: a login POST could hold a gigabyte before its token was checked)
FORM_TYPE = "application/x-www-form-urlencoded"
MAX_FORM_BYTES = 16_384
DOCUMENT_ROWS = 50
# questions to the directory at once (searchers' lookups and sign-ins), in threads apart from
# the ones pages share: more wait for one of these, never for a visitor's search
DIRECTORY_THREADS = 64
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
# The search page alone runs a script: this application's own suggest.js (static/, no inline
# script, no eval), which asks /suggest (connect-src) for suggestions while the searcher types.
# Every other page, the administration's included, keeps script-src 'none'; JSON from /suggest
# is never a script (nosniff, application/json), and nothing else this origin serves is one.
SEARCH_PAGE_CSP = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


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
    suggestions: bool = True  # SEARCHCRAWL_WEB_SUGGESTIONS: the search box's, while typing
    stale_after: float = 600
    session_lifetime: float = 8 * 3600
    explain_environ: dict[str, str] | None = None
    solr_timeout: float = 30
    # who searches: the directory that checks searchers' passwords and gives their principals
    # (None: no sign-in, everyone sees public documents only), a trusted proxy's user header
    # (SEARCHCRAWL_WEB_USER_HEADER, "" for none) and the proxies believed (SEARCHCRAWL_WEB_PROXIES)
    directory: Directory | None = None
    user_header: str = ""
    proxies: tuple[str, ...] = ()
    # the relevance rules a search applies are read again after this many seconds (changes made
    # by another process); synonyms and stopwords are pushed to Solr when the application starts
    relevance_ttl: float = 30
    relevance_sync_at_start: bool = True
    # query analytics (analytics.py): days kept (0: nothing logged), the searcher's name logged
    # too, and the key signing click links (None: a random one for this process)
    analytics_days: int = 0
    log_users: bool = False
    click_key: bytes | None = None
    # browser origins whose pages may call the JSON API (SEARCHCRAWL_WEB_API_ORIGINS; none: CORS off)
    api_origins: tuple[str, ...] = ()
    # each API token's rate (api.py's RateLimit): requests a minute (0: no limit) and burst
    # (SEARCHCRAWL_WEB_API_RATE, SEARCHCRAWL_WEB_API_BURST)
    api_rate: float = 600
    api_burst: int = 60
    # issue 60: /metrics (off unless ``metrics``; web/metrics_endpoint.py says who may read it), stall
    # detection's threshold, the metrics' and the Solr/Tika pings' caches, Tika's URL (pinged)
    metrics: bool = False
    metrics_token: str | None = field(default=None, repr=False)
    stall_after: float = 900
    metrics_cache: float = 60
    health_cache: float = 30
    tika_url: str = ""
    # issue 72: the public URL's origin (SEARCHCRAWL_WEB_PUBLIC_URL): forms may be posted from its
    # pages as from the origin a request came to; from no other (origins.py)
    public_origins: tuple[str, ...] = ()


class PeerAddress:
    """Keeps the connection's peer address in the scope (``PEER``) before X-Forwarded-For is
    applied to ``client``: the user header is believed from a proxy's connection only, not from
    a client that names a proxy's address in X-Forwarded-For (searchers.py)."""

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


def _save_rule(store: RelevanceStore, action: str, key: str, text: Callable[[str], str]) -> str:
    """Add a best bet or a boost (``add-bet``, ``add-boost``) or change rule ``key`` in place
    (``edit-bet``, ``edit-boost``: the same rule, never deleted and added again), from the
    relevance page's form ``text``, validated alike; the message for the administrator."""
    if action.endswith("-bet"):
        bet = relevance.parse_bet(text("queries"), text("urls"), text("start"), text("end"))
        if action == "add-bet":
            store.add_bet(bet)
            return "Best bet added."
        saved, noun = store.update_bet(key, bet), "Best bet"
    else:
        boost = relevance.parse_boost(text("kind"), text("value"), text("factor"))
        if action == "add-boost":
            store.add_boost(boost)
            return "Rule added."
        saved, noun = store.update_boost(key, boost), "Rule"
    if not saved:
        raise relevance.RelevanceError("No such rule (deleted already?).")
    return f"{noun} {key} saved."


@dataclass
class WebApp:
    config: WebConfig
    sessions: Sessions = field(init=False)
    throttle: LoginThrottle = field(default_factory=LoginThrottle, init=False)
    templates: Environment = field(init=False)
    _database: Database | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _migrate_failed: bool = field(default=False, init=False)  # migrating is tried once a process
    # an API token just made, by administrator session, until the page it is redirected to shows it
    _made: dict[str, dict[str, Any]] = field(default_factory=dict, init=False)
    _health: HealthCheck | None = field(default=None, init=False)
    _registry: CollectorRegistry | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.sessions = Sessions(self.config.credentials, self.config.session_lifetime)
        # searchers: sessions and a throttle of their own (a searcher's typos never slow an
        # administrator's login down, and no searcher session opens the administration)
        self.searchers = SearcherSessions(self.config.directory is not None, self.config.session_lifetime)
        self.signin_throttle = LoginThrottle()
        self.directory_threads = CapacityLimiter(DIRECTORY_THREADS)  # _in_directory_thread
        self.proxies = Proxies(self.config.proxies)
        self.templates = Environment(
            loader=PackageLoader("searchcrawl.web", "templates"), autoescape=select_autoescape(default=True)
        )
        self.templates.globals.update(
            base=self.config.prefix,
            facet_titles=FACET_TITLES,
            describe=describe,
            actions=ACTIONS,
            matching=matching,
            reason_text=reason_text,
        )
        # as a crawl reaches Solr: SOLR_URL may list a SolrCloud collection on several nodes
        self.solr = SolrIndex(self.config.solr_url, timeout=self.config.solr_timeout, auth=self.config.solr_auth)
        # the JSON API's token checks (api.py): bounded, each verdict kept a while; the database
        # is opened in the check's own thread, never on the event loop
        self.token_gate = api.TokenGate(lambda token: ApiTokens(self.database).check(token))
        # and each valid token's rate: checked on the event loop (a lock held for a few
        # arithmetic operations, nothing that waits)
        self.rate_limit = api.RateLimit(self.config.api_rate, self.config.api_burst)
        # the relevance rules every search applies (relevance.py): cached, failing open
        self.relevance = relevance.RuleCache(self._read_rules, self.config.relevance_ttl)
        self._sync_lock = threading.Lock()  # one push of synonyms and stopwords to Solr at a time
        self._reader: Database | None = None
        # query analytics: a background writer, so a search never waits for the database
        self.analytics = analytics.Analytics(
            lambda: Searches(self.database), self.config.analytics_days, self.config.log_users, self.config.click_key
        )  # its writer started by the application's lifespan (create_app): building one touches no database

    @property
    def database(self) -> Database:
        """The document table, opened at the first administration page or by the analytics
        writer's thread (at the start, when analytics is on): created or brought up to date as a
        crawl does (the buttons and the writer write to it), so `scrapy web` needs the database
        rights a crawl has. Migrating is tried once a process: when it fails (a database user
        without the right to change the schema), the next openings only check the schema
        (a schema a crawl brought up to date is used; another is refused) and say why."""
        with self._lock:
            if self._database is None:
                if not self._migrate_failed:
                    try:
                        self._database = Database(self.config.db_url, migrate=True)
                    except Exception as exc:
                        self._migrate_failed = True
                        logger.warning(
                            "Web application: the database could not be created or brought up to date (%s);"
                            " not tried again by this process: run a crawl, or give `scrapy web` the rights a crawl has",
                            analytics.short_error(exc),
                        )
                        raise
                else:
                    self._database = Database(self.config.db_url, migrate=False)
            return self._database

    def _rules_database(self) -> Database:
        """The administration's database when it is open, else one opened read-only for the
        search page (which never migrates nor creates it: a database not made yet holds no rules)."""
        with self._lock:
            database = self._database or self._reader
            if database is None:
                database = Database(self.config.db_url, migrate=False)
                if database.engine.url.database not in (None, "", ":memory:"):
                    self._reader = database
            return database

    def _read_rules(self) -> relevance.Rules:
        return RelevanceStore(self._rules_database()).rules()

    def sync_relevance(self) -> bool:
        """Push the database's synonyms and stopwords to Solr (managed.py); True if Solr changed.
        One at a time (the start-up's and the relevance page's may come together), each reading
        the database once the one before has finished: a later push never puts back what an
        earlier one, having read the database after it, deleted."""
        with self._sync_lock:
            store = RelevanceStore(self._rules_database())
            synonyms = relevance.synonym_map(terms for _id, terms in store.synonyms())
            return managed.sync(self.solr, synonyms, store.stopwords())

    @property
    def health(self) -> HealthCheck:
        """Solr's and Tika's pings, cached (ops/health.py): the overview's stalls and /metrics."""
        with self._lock:
            if self._health is None:
                # pings of their own, bounded at 5 s: a Solr that hangs never holds a scrape for
                # the search's SOLR timeout
                self._health = HealthCheck.of(
                    self.config.solr_url, self.config.tika_url, self.config.health_cache, 5, self.config.solr_auth
                )
            return self._health

    @property
    def registry(self) -> CollectorRegistry | None:
        """/metrics' registry of its own (ops/metrics.py), None while metrics are off."""
        if not self.config.metrics:
            return None
        health, database = self.health, self.database  # (each takes the lock)
        with self._lock:
            if self._registry is None:
                self._registry = CollectorRegistry(auto_describe=False)
                self._registry.register(
                    ProjectCollector(
                        database,
                        self.config.source_names,
                        health,
                        self.config.stall_after,
                        self.config.stale_after,
                        self.config.metrics_cache,
                    )
                )
                self._registry.register(api.ApiRefusals(self.token_gate, self.rate_limit))
            return self._registry

    def stalls(self, names: list[str] | None = None) -> list[Any]:
        """The stalled runs (ops/stalls.py), for the overview and the run page."""
        return stalls(
            self.database, datetime.now(UTC), self.config.stall_after, self.config.stale_after, self.health.now(), names
        )

    def close(self) -> None:
        self.analytics.close()
        if self._database is not None:
            self._database.close()
        if self._reader is not None:
            self._reader.close()

    def render(self, request: Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
        session = self.sessions.get(request.cookies.get(SESSION_COOKIE))
        html = self.templates.get_template(template).render(
            session=session, admin_enabled=self.sessions.enabled, signin_enabled=self.searchers.enabled, **context
        )
        return HTMLResponse(html, status_code=code)

    def url(self, path: str) -> str:
        return self.config.prefix + path

    # --- search ---------------------------------------------------------------------------------

    async def search(self, request: Request) -> Response:
        """The search page, trimmed by Solr to what the searcher may read (hits, counts, facets,
        suggestions and pages alike)."""
        started = time.perf_counter()
        query = SearchRequest.from_params(request.query_params)  # every value of a repeated facet parameter
        searcher = await self.searcher(request)
        try:
            rules = await _in_thread(self.relevance.get)
            page = await _in_thread(
                run_search, TrimmedIndex(self.solr, searcher.principals), query, self.config.rows, True, rules
            )
        except IndexingError as exc:
            logger.warning("Search %r failed: %s", query.q, exc.reason)
            failed = self.render_search(
                request, 503, page=None, query=query, searcher=searcher, error="The index cannot be searched now."
            )
            return self._personal(failed)
        search_id = self.record_search(query, page.total, time.perf_counter() - started, "web", searcher.user) if query.q else ""
        return self._personal(
            self.render_search(
                request,
                page=page,
                query=query,
                searcher=searcher,
                error="",
                default_rows=self.config.rows,
                hit_link=self._hit_link(search_id),
            )
        )

    def render_search(self, request: Request, code: int = 200, **context: Any) -> HTMLResponse:
        """The search page, with the policy that lets its own script run (SEARCH_PAGE_CSP) when it
        has suggestions; without them it is a page like any other, with no script."""
        response = self.render(request, "search.html", code, suggestions_enabled=self.config.suggestions, **context)
        if self.config.suggestions:
            response.headers["content-security-policy"] = SEARCH_PAGE_CSP
        return response

    async def suggest(self, request: Request) -> Response:
        """Suggestions while typing (suggestions.py) as JSON, for the searcher of the request
        (as the search page knows them): ``{"q": ..., "suggestions": [{"text", "kind"}]}``.
        An empty list when Solr fails (the search box works without them); 404 when they are off."""
        if not self.config.suggestions:
            return self._personal(JSONResponse({"error": "Suggestions are off."}, status_code=404))
        prefix = suggestions.clean(request.query_params.get("q", ""), suggestions.MAX_PREFIX_CHARS)
        searcher = await self.searcher(request)
        found: list[suggestions.Suggestion] = []
        code = 200
        try:
            found = await _in_thread(self.completions, prefix, searcher.principals)
        except IndexingError as exc:
            logger.warning("Suggestions (%d characters typed) failed: %s", len(prefix), exc.reason)
            code = 503
        answer = JSONResponse({"q": prefix, "suggestions": [item.as_json() for item in found]}, status_code=code)
        return self._personal(answer)

    def completions(self, text: str, principals: Principals) -> list[suggestions.Suggestion]:
        """The completions of ``text`` that ``principals`` may see (suggestions.py): readable
        titles, and past queries (the query log's) that find a readable document; the search
        box's (/suggest) and the JSON API's alike. Raises IndexingError when Solr fails."""
        prefix = suggestions.clean(text, suggestions.MAX_PREFIX_CHARS)
        if not prefix.strip():
            return []
        try:
            candidates = self.query_candidates(prefix)
        except Exception as exc:  # noqa: BLE001 (the query log failing costs the titles nothing)
            logger.warning("Suggestions: no past queries: %s", type(exc).__name__)
            candidates = []
        return suggestions.suggest(TrimmedIndex(self.solr, principals), prefix, candidates)

    def query_candidates(self, prefix: str) -> list[str]:
        """Past queries that found documents and begin with ``prefix``, most frequent first (the
        query log's, analytics.py, from memory); suggestions.suggest shows only those the
        searcher's own documents answer."""
        return self.analytics.completions(prefix, suggestions.MAX_CANDIDATES)

    def record_search(self, query: SearchRequest, hits: int, seconds: float, client: str, user: str | None) -> str:
        """Logs a search (analytics.py: queued, never waited for) and returns its id, for its
        hits' click links (``analytics.click_url``). The JSON API calls it with client "api"."""
        filters = [*query.filters, ("from", query.date_from), ("to", query.date_to)]
        return self.analytics.record(
            query.q,
            [(name, value) for name, value in filters if value],
            query.sort,
            query.page,
            hits,
            seconds * 1000,
            client,
            user,
        )

    def click_link(self, search_id: str, position: int, url: str) -> str:
        """The link of the hit at rank ``position`` of search ``search_id`` (``record_search``'s
        id): through ``/click`` while analytics is on, else ``url`` itself (the JSON API's too)."""
        return self._hit_link(search_id)(position, url)

    def _hit_link(self, search_id: str) -> Callable[[int, str], str]:
        """A hit's link on a result page: through ``/click`` (its rank recorded, then redirected)
        while analytics is on, else the document's URL itself."""

        def link(position: int, url: str) -> str:
            if not search_id or not self.analytics.enabled or not url:
                return url
            return self.url("/click?" + self.analytics.click_url(search_id, position, url))

        return link

    async def click(self, request: Request) -> Response:
        """A hit opened from a result page: recorded, then redirected to the hit's URL; only a
        link this application signed (analytics.ClickSigner), never any other URL."""
        click = self.analytics.signer.check(request.query_params)
        if click is None:
            logger.debug("Click link refused: not one of this application's (or from before its restart)")
            return self.render(
                request,
                "forbidden.html",
                404,
                reason="This link is not valid (it may be older than the server's restart): search again.",
            )
        # a link checker's HEAD opens nothing; a stale or replayed link is followed, not counted
        if request.method == "GET" and self.analytics.counts(click):
            self.analytics.click(click)
        response = RedirectResponse(click.url, status_code=303)
        response.headers["cache-control"] = "no-store"
        return response

    def _personal(self, response: Response) -> Response:
        """A page that depends on who asks is kept by no cache (a shared proxy's included)."""
        if self.searchers.enabled or self.config.user_header:
            response.headers["cache-control"] = "private, no-store"
        return response

    # --- the JSON API (api.py) -------------------------------------------------------------------

    async def api_caller(self, request: Request) -> tuple[dict[str, str], Principals, str, str | None] | Response:
        """Who calls the JSON API (api.py): the CORS headers of the answer, the principals the
        token searches with (public documents, or a named user's when the token may search on
        behalf of users), the token's name and the user named; or the refusal to send."""
        cors = api.cors_headers(request.headers.get("origin"), self.config.api_origins, request.method == "OPTIONS")
        if request.method == "OPTIONS":  # a browser's preflight: the Authorization header may be sent
            return Response(status_code=204, headers=cors)
        token = api.bearer(request.headers.get("authorization"))
        if token is None:
            return _api_error(401, "no_token", "Send an API token: Authorization: Bearer <token>.", cors, api.challenge())
        try:
            check = await _in_thread(self.token_gate.verdict, token)
        except Exception as exc:  # the database: no search without its word on the token
            logger.warning("API: the token table cannot be read: %s", type(exc).__name__)
            return _api_error(503, "unavailable", "Tokens cannot be checked now.", cors)
        if check is None:  # as many checks as allowed wait on the database already
            busy = _api_error(503, "unavailable", "Tokens cannot be checked now; try again.", cors)
            busy.headers["retry-after"] = "1"
            return busy
        if not check.valid:  # unknown, revoked or expired: said alike (a leaked token is not confirmed)
            self.token_gate.refused(request.client.host if request.client is not None else "-", check.reason)
            challenge = api.challenge("invalid_token", "The token is not valid.")
            return _api_error(401, "invalid_token", "The token is not valid.", cors, challenge)
        wait = self.rate_limit.wait(api.rate_key(check, token))
        if wait > 0:  # this token's requests come too fast: Solr and the directory are not asked
            self.rate_limit.refused(check)
            seconds = api.retry_after(wait)
            limited = _api_error(429, "rate_limited", f"Too many requests with this token; try again in {seconds} s.", cors)
            limited.headers["retry-after"] = seconds
            return limited
        named = request.query_params.getlist("user")
        user = api.api_user(named[0]) if len(named) == 1 else ("" if named else None)  # two: which one?
        principals = Principals.anonymous()
        if user is not None:
            if not check.on_behalf:
                challenge = api.challenge("insufficient_scope", "This token may not search on behalf of users.")
                return _api_error(403, "insufficient_scope", "This token may not search on behalf of users.", cors, challenge)
            if not user:
                return _api_error(400, "invalid_request", "user= is not one user name.", cors)
            principals = await self._in_directory_thread(self._principals, user)
            if principals.error:
                logger.warning("API search by token %r for %s: public documents only: %s", check.name, user, principals.error)
        return cors, principals, check.name, user

    async def api_search(self, request: Request) -> Response:
        """The search page's search as JSON, for a request with an API token (api_caller), with
        the completions of its query (as /api/suggest gives them)."""
        caller = await self.api_caller(request)
        if isinstance(caller, Response):
            return caller
        cors, principals, token_name, user = caller
        started = time.perf_counter()
        query = SearchRequest.from_params(request.query_params)
        try:
            rules = await _in_thread(self.relevance.get)  # the page's boosts and best bets too
            page = await _in_thread(run_search, TrimmedIndex(self.solr, principals), query, self.config.rows, True, rules)
        except IndexingError as exc:
            logger.warning("API search %r failed: %s", query.q[:100], exc.reason)
            return _api_error(503, "unavailable", "The index cannot be searched now.", cors)
        completions: list[suggestions.Suggestion] = []
        if self.config.suggestions and query.q:
            try:
                completions = await _in_thread(self.completions, query.q, principals)
            except Exception as exc:  # noqa: BLE001 - suggestions never break a search
                logger.warning("API suggestions (%d characters) failed: %s", len(query.q), type(exc).__name__)
        if query.q:  # logged as the page's searches are (analytics.py), as client "api"
            self.record_search(query, page.total, time.perf_counter() - started, "api", user or None)
        logger.debug("API search by token %r (%s): %d hits", token_name, user or "public", page.total)
        answer = api.page_json(page, api.searcher_json(principals), [item.as_json() for item in completions])
        return JSONResponse(answer, headers={**cors, "cache-control": "private, no-store"})

    async def api_suggest(self, request: Request) -> Response:
        """The search box's suggestions (/suggest's) for a request with an API token, trimmed as
        its searches are: ``{"q": ..., "suggestions": [{"text", "kind"}]}``."""
        caller = await self.api_caller(request)
        if isinstance(caller, Response):
            return caller
        cors, principals, _token_name, _user = caller
        if not self.config.suggestions:
            return _api_error(404, "not_found", "Suggestions are off.", cors)
        prefix = suggestions.clean(request.query_params.get("q", ""), suggestions.MAX_PREFIX_CHARS)
        try:
            found = await _in_thread(self.completions, prefix, principals)
        except IndexingError as exc:
            logger.warning("API suggestions (%d characters typed) failed: %s", len(prefix), exc.reason)
            return _api_error(503, "unavailable", "The index cannot be asked now.", cors)
        answer = {"q": prefix, "suggestions": [item.as_json() for item in found]}
        return JSONResponse(answer, headers={**cors, "cache-control": "private, no-store"})

    # --- searchers --------------------------------------------------------------------------------

    async def searcher(self, request: Request) -> Searcher:
        """Who searches: the trusted proxy's user header, else the sign-in session, else nobody
        (public documents only). The principals come from the directory (which caches them); when
        it cannot give them, the searcher sees public documents only, and is told why."""
        user, known_by, csrf = None, "anonymous", ""
        if self.config.user_header:
            values = request.headers.getlist(self.config.user_header)
            peer = request.scope.get(PEER)
            if len(values) > 1:
                # two of them: one may be the client's own, passed on by a proxy that adds its
                # header instead of replacing it; which is the proxy's is unknown: neither
                logger.warning("Search: %d %s headers from %s: none believed", len(values), self.config.user_header, peer)
            elif peer in self.proxies:
                user, known_by = header_user(values[0] if values else None), "header"
            elif values:
                logger.warning(
                    "Search: %s header from %s ignored (not one of SEARCHCRAWL_WEB_PROXIES)", self.config.user_header, peer
                )
        if user is None:
            session = self.searchers.get(request.cookies.get(SEARCHER_COOKIE))
            if session is not None:
                user, known_by, csrf = session.user, "session", session.csrf
        if user is None:
            return Searcher(Principals.anonymous())
        principals = await self._in_directory_thread(self._principals, user)
        if principals.error:
            logger.warning("Search by %s: public documents only: %s", user, principals.error)
        logger.debug("Search by %s (%s): %d principals", user, known_by, len(principals.tokens))
        return Searcher(principals, known_by, csrf)

    async def _in_directory_thread(self, function: Callable[..., Any], *args: Any) -> Any:
        """A question to the directory, off the event loop in threads of its own
        (``directory_threads``): a slow directory holds those, never the threads every search
        and page shares (``_in_thread``), so a visitor's search, which asks no directory, is not
        kept waiting behind signed-in searchers' lookups (each bounded by its deadline)."""
        return await anyio.to_thread.run_sync(lambda: function(*args), limiter=self.directory_threads)

    def _principals(self, user: str) -> Principals:
        if self.config.directory is not None:
            return self.config.directory.principals(user)
        # single sign-on without a directory: the user name alone (no group is known)
        try:
            return Principals.of(user, [Principal(f"user:{user}", f"{self.config.user_header} header")])
        except AccessError as exc:
            return Principals(user, Principals.anonymous().entries, f"the user name cannot be a principal: {exc}")

    async def signin_form(self, request: Request) -> Response:
        if not self.searchers.enabled:
            return self.render(request, "forbidden.html", 404, reason="Signing in is off: no directory is configured.")
        token = request.cookies.get(SIGNIN_COOKIE) or token_urlsafe(32)
        searcher = await self.searcher(request)
        back = search_back(request.query_params.get("back"))
        response = self.render(request, "signin.html", signin_token=token, searcher=searcher, error="", back=back)
        self._cookie(request, response, SIGNIN_COOKIE, token, 600, self.url("/"))
        return self._personal(response)

    async def signin(self, request: Request) -> Response:
        """A searcher's sign-in: the password checked by binding to the directory as the user."""
        if not self.searchers.enabled:
            return self.render(request, "forbidden.html", 404, reason="Signing in is off: no directory is configured.")
        assert self.config.directory is not None
        form = await small_form(request)
        if form is None:
            return self.render(request, "forbidden.html", 413, reason="Not a sign-in form.")
        checked = self._password_form(request, form, self.signin_throttle, (SIGNIN_COOKIE, "signin_token"), "sign-in")
        if isinstance(checked, Response):
            return checked
        client, expected = checked
        user, password = str(form.get("username", "")).strip(), str(form.get("password", ""))
        back = search_back(str(form.get("back", "")))  # the search signed in from: shown again
        anonymous = Searcher(Principals.anonymous())
        # counted before the directory is asked (off the event loop), taken back on success:
        # attempts sent at once cannot all pass while the count is still low
        self.signin_throttle.failed(client)
        if not user or not password or len(user) > 256:  # an empty password would be an anonymous bind
            return self.render(request, "signin.html", 403, signin_token=expected, searcher=anonymous, error="failed", back=back)
        try:
            ok = await self._in_directory_thread(self.config.directory.authenticate, user, password)
        except DirectoryUnavailable as exc:
            self.signin_throttle.forgive(client)
            logger.warning("Search sign-in from %s: the directory does not answer: %s", client, exc)  # not the name typed
            return self.render(
                request,
                "signin.html",
                503,
                signin_token=expected,
                searcher=anonymous,
                error=f"The directory does not answer: {exc}",
                back=back,
            )
        if not ok:
            logger.warning("Search sign-in: failed sign-in from %s", client)
            return self.render(request, "signin.html", 403, signin_token=expected, searcher=anonymous, error="failed", back=back)
        self.signin_throttle.succeeded(client)
        logger.info("Search sign-in: %s signed in", user)
        self.searchers.logout(request.cookies.get(SEARCHER_COOKIE))  # a new session, never the old one's token
        response = RedirectResponse(self.url("/") + back, status_code=303)
        self._cookie(
            request, response, SEARCHER_COOKIE, self.searchers.login(user), int(self.config.session_lifetime), self.url("/")
        )
        response.delete_cookie(SIGNIN_COOKIE, path=self.url("/"))
        return response

    async def signout(self, request: Request) -> Response:
        session = self.searchers.get(request.cookies.get(SEARCHER_COOKIE))
        form = await small_form(request)
        if session is None or form is None or not Sessions.csrf_ok(session, str(form.get("csrf", "")) or None):
            return self.render(request, "forbidden.html", 403, reason="Not signed in, or the form's token is missing or stale.")
        self.searchers.logout(request.cookies.get(SEARCHER_COOKIE))
        logger.info("Search sign-in: %s signed out", session.user)
        response = RedirectResponse(self.url("/"), status_code=303)
        response.delete_cookie(SEARCHER_COOKIE, path=self.url("/"))
        return response

    # --- login ------------------------------------------------------------------------------------

    async def login_form(self, request: Request) -> Response:
        if not self.sessions.enabled:
            return self.render(request, "admin_off.html", 404)
        token = request.cookies.get(LOGIN_COOKIE) or token_urlsafe(32)
        response = self.render(request, "login.html", login_token=token, failed=False)
        self._cookie(request, response, LOGIN_COOKIE, token, 600, self.url("/admin"))
        return response

    async def login(self, request: Request) -> Response:
        if not self.sessions.enabled:
            return self.render(request, "admin_off.html", 404)
        form = await small_form(request)
        if form is None:
            return self.render(request, "forbidden.html", 413, reason="Not a login form.")
        checked = self._password_form(request, form, self.throttle, (LOGIN_COOKIE, "login_token"), "login")
        if isinstance(checked, Response):
            return checked
        client, expected = checked
        user, password = str(form.get("username", "")), str(form.get("password", ""))
        if not self.sessions.check(user, password):
            self.throttle.failed(client)
            logger.warning("Web administration: failed login from %s", client)
            return self.render(request, "login.html", 403, login_token=expected, failed=True)
        self.throttle.succeeded(client)
        logger.info("Web administration: login")
        response = RedirectResponse(self.url("/admin"), status_code=303)
        self._cookie(
            request, response, SESSION_COOKIE, self.sessions.login(user), int(self.config.session_lifetime), self.url("/admin")
        )
        response.delete_cookie(LOGIN_COOKIE, path=self.url("/admin") or "/")
        return response

    def _password_form(
        self, request: Request, form: FormData, throttle: LoginThrottle, token: tuple[str, str], what: str
    ) -> Response | tuple[str, str]:
        """The client's address and the form's own token (double submit: ``token`` names the
        cookie and the form's field that must hold the same value), or the refusal to send: the client waits out
        its ``throttle`` (guessing is slowed down, whatever the form holds), or the form has
        expired. The caller records the attempt with no await in between: concurrent attempts of
        one address cannot all pass while its count is still low."""
        client = request.client.host if request.client is not None else "-"
        wait = throttle.wait(client)
        if wait > 0:
            refused = self.render(request, "forbidden.html", 429, reason=f"Too many failed {what}s: try again in {wait:.0f} s.")
            refused.headers["retry-after"] = str(int(wait) + 1)
            return refused
        cookie, field_name = token
        expected = request.cookies.get(cookie)
        sent = str(form.get(field_name, ""))
        if not expected or not hmac.compare_digest(expected.encode(), sent.encode()):
            return self.render(request, "forbidden.html", 403, reason=f"The {what} form has expired; load it again.")
        return client, expected

    async def logout(self, request: Request) -> Response:
        denied = await self._denied(request, post=True)
        if denied is not None:
            return denied
        self.sessions.logout(request.cookies.get(SESSION_COOKIE))
        self._made.pop(str(request.cookies.get(SESSION_COOKIE)), None)  # a token made and never shown
        response = RedirectResponse(self.url("/"), status_code=303)
        response.delete_cookie(SESSION_COOKIE, path=self.url("/admin"))
        return response

    def _cookie(self, request: Request, response: Response, name: str, value: str, max_age: int, path: str) -> None:
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            path=path,
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
            return {"sources": rows, "solr": admin.solr_health(self.solr), "stalls": self.stalls(names), "now": datetime.now(UTC)}

        return self.render(request, "overview.html", **await _in_thread(gather), flash=self._flash(request))

    async def source(self, request: Request) -> Response:
        name = await self._admin_source(request)
        if isinstance(name, Response):
            return name

        def gather() -> dict[str, Any]:
            table = DocumentTable(self.database)
            statuses = sorted(table.count_by(name, "status").items(), key=lambda item: (item[0] is None, item[0] or 0))
            recent = Runs(self.database).recent(name, limit=max(20, pictures.SOURCE_RUNS))
            return {
                "runs": [{**run, "counts": admin.run_counts(run)} for run in recent[:20]],
                "charts": pictures.source_charts(recent),  # issue 60: drawn here, inline SVG
                "states": table.count_by(name, "state"),
                "statuses": [(status, count, describe(status)) for status, count in statuses],
            }

        return self.render(request, "source.html", name=name, **await _in_thread(gather), flash=self._flash(request))

    async def run(self, request: Request) -> Response:
        denied = await self._denied(request)
        if denied is not None:
            return denied
        view = await _in_thread(
            lambda: admin.run_view(
                self.database, int(request.path_params["run"]), self.config.cache_root, self.config.stale_after
            )
        )
        if view is None:
            return self.render(request, "forbidden.html", 404, reason="No such run.")
        report = None
        if not view.live:
            report = await _in_thread(lambda: run_report(self.database, view.run["source"], view.run["id"]))
        samples = await _in_thread(lambda: RunSamples(self.database).of(view.run["id"]))
        chart = pictures.run_chart(view.run, samples) if samples or view.live else None  # issue 60
        # issue 60: what was told of the run, on which channel (store/notifications.py)
        sent = await _in_thread(lambda: Notifications(self.database).of_key(run_key(view.run["id"])))
        stalled = [stall for stall in await _in_thread(self.stalls, [view.run["source"]]) if stall.run_id == view.run["id"]]
        return self.render(
            request,
            "run.html",
            view=view,
            report=report,
            kinds=tuple(Delta),
            chart=chart,
            notifications=sent,
            flash=self._flash(request),
            stalls=stalled,
            now=datetime.now(UTC),
        )

    async def metrics(self, request: Request) -> Response:
        """Prometheus' /metrics (web/metrics_endpoint.py: off unless SEARCHCRAWL_WEB_METRICS; loopback or token)."""
        registry = await _in_thread(lambda: self.registry)
        return await metrics_response(request, request.scope.get(PEER), registry, self.config.metrics_token, self.proxies)

    async def documents(self, request: Request) -> Response:
        name = await self._admin_source(request)
        if isinstance(name, Response):
            return name
        status = _int(request.query_params.get("status"))
        state = request.query_params.get("state")
        state = state if state in {item.value for item in State} else None
        page = max(_int(request.query_params.get("page")) or 1, 1)
        rows = await _in_thread(
            lambda: DocumentTable(self.database).rows(name, status, state, DOCUMENT_ROWS + 1, (page - 1) * DOCUMENT_ROWS)
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

    async def explain_access_form(self, request: Request) -> Response:
        denied = await self._denied(request)
        if denied is not None:
            return denied
        return self.render(request, "explain_access.html", user="", url="", ok=True, text="")

    async def explain_access(self, request: Request) -> Response:
        """`scrapy explain-access USER URL`'s report: the user's principals, the document's
        tokens, the decision and why (access/explanation.py, through admin.explain_access)."""
        denied = await self._denied(request, post=True)
        if denied is not None:
            return denied
        form = await small_form(request) or FormData()
        user, url = str(form.get("user", "")).strip()[:256], str(form.get("url", "")).strip()
        if not user or not explainable_url(url):  # the URLs the command takes
            ok, text = False, f"Give a user name and {URL_WANTED}."
        else:
            ok, text = await self._in_directory_thread(
                lambda: admin.explain_access(self.config.directory, self.solr, self.database, user, url)
            )
        logger.info("Web administration: explain-access %s %s", user, url)
        return self.render(request, "explain_access.html", user=user, url=url, ok=ok, text=text)

    async def why(self, request: Request) -> Response:
        """Why a document is a hit of a query (why.py): its rank, score and Solr's explanation in
        words, computed under the viewer's own trimming (their searcher principals on this
        request, else a visitor's), so a document they may not read is answered as a missing one."""
        denied = await self._denied(request)
        if denied is not None:
            return denied
        query = request.query_params.get("q", "")
        target = request.query_params.get("id", "")
        viewer = await self.searcher(request)
        try:
            rules = await _in_thread(self.relevance.get)
            page = await _in_thread(why.why, TrimmedIndex(self.solr, viewer.principals), query, target, rules.boosts)
        except IndexingError as exc:
            logger.warning("Web administration: why %r failed: %s", query[:100], exc.reason)
            page = why.WhyPage(query=query.strip()[: why.MAX_QUERY_CHARS], target=target.strip()[: why.MAX_TARGET_CHARS])
            page.message = "The index cannot be searched now."
        return self.render(request, "why.html", page=page, viewer=viewer, rank_limit=why.RANK_LIMIT)

    async def relevance_page(
        self, request: Request, error: str = "", code: int = 200, posted: dict[str, str] | None = None
    ) -> Response:
        """The relevance rules (relevance.py) with forms to add, edit and delete them: ``?edit=bets``
        (or ``boosts``) ``&key=ID`` fills a rule's form with it, to be saved in place; a form
        refused (``error``) comes back filled with what was ``posted``."""
        denied = await self._denied(request)
        if denied is not None:
            return denied

        def gather() -> dict[str, Any]:
            store = RelevanceStore(self.database)
            return {"bets": store.bets(), "boosts": store.boosts(), "synonyms": store.synonyms(), "stopwords": store.stopwords()}

        rules = await _in_thread(gather)
        forms = relevance.rule_forms(posted or {})
        if posted is None and request.query_params.get("edit"):
            edit, key = request.query_params.get("edit", ""), request.query_params.get("key", "")
            found = {("bets", str(bet.id)): bet for bet in rules["bets"]} | {("boosts", str(b.id)): b for b in rules["boosts"]}
            rule = found.get((edit, key))
            if rule is None:
                error, code = "No such rule (deleted already?).", 404
            else:
                forms = relevance.rule_forms(relevance.edit_form(rule))
        return self.render(
            request,
            "relevance.html",
            code,
            **rules,
            **forms,
            now=datetime.now(UTC),
            kinds=relevance.BOOST_KINDS,
            ttl=self.config.relevance_ttl,
            error=error,
            flash=self._flash(request),
        )

    async def relevance_change(self, request: Request) -> Response:
        """Add, edit (in place: same rule) or delete a rule (validated by relevance.py); synonyms
        and stopwords are then pushed to Solr, which applies them at once."""
        denied = await self._denied(request, post=True)
        if denied is not None:
            return denied
        form = await small_form(request) or FormData()
        action = str(form.get("action", ""))

        def text(name: str) -> str:
            return str(form.get(name, ""))

        def change() -> str:
            store = RelevanceStore(self.database)
            solr_side = False
            key = text("key")[:200]
            if action in ("add-bet", "edit-bet", "add-boost", "edit-boost"):
                message = _save_rule(store, action, key, text)
            elif action == "add-synonyms":
                store.add_synonyms(relevance.parse_synonyms(text("terms")))
                message, solr_side = "Synonyms added.", True
            elif action == "add-stopword":
                store.add_stopword(relevance.parse_stopword(text("word")))
                message, solr_side = "Stopword added.", True
            elif action == "delete":
                kind = text("kind")
                if not store.delete(kind, key):
                    raise relevance.RelevanceError("No such rule (deleted already?).")
                message, solr_side = "Deleted.", kind in ("synonyms", "stopwords")
            elif action == "push":
                message, solr_side = "Synonyms and stopwords checked.", True
            else:
                raise relevance.RelevanceError("Not an action of this page.")
            self.relevance.changed()
            if solr_side:
                try:
                    changed = self.sync_relevance()
                except IndexingError as exc:
                    logger.warning("Web administration: synonyms and stopwords not sent to Solr: %s", exc.reason)
                    return f"{message} Solr did not take them now ({exc.reason}): send them again later."
                if action == "push":
                    message = "Solr was sent the synonyms and stopwords and reloaded." if changed else "Solr holds them already."
            return message

        try:
            message = await _in_thread(change)
        except relevance.RelevanceError as exc:
            posted = {name: str(value) for name, value in form.items() if name != "csrf"}
            return await self.relevance_page(request, error=str(exc), code=400, posted=posted)
        logger.info("Web administration: relevance %s: %s", action, message)
        self.sessions.flash(request.cookies.get(SESSION_COOKIE), message)
        return RedirectResponse(self.url("/admin/relevance"), status_code=303)

    async def control(self, request: Request) -> Response:
        denied = await self._denied(request, post=True)
        if denied is not None:
            return denied
        name = self._source(request)
        form = await small_form(request) or FormData()
        action = str(form.get("action", ""))
        if name is None or action not in ACTIONS:
            return self.render(request, "forbidden.html", 404, reason="No such source or action.")
        outcome = await _in_thread(lambda: control(self.database, self.config.launcher, name, action, self.config.stale_after))
        logger.info("Web administration: %s %s: %s", action, name, outcome.message)
        self.sessions.flash(request.cookies.get(SESSION_COOKIE), outcome.message)
        back = str(form.get("back", ""))
        target = back if back.startswith("/admin") and "//" not in back else f"/admin/sources/{name}"
        return RedirectResponse(self.url(target), status_code=303)

    async def analytics_page(self, request: Request) -> Response:
        """Query analytics over a chosen period: totals, top queries, queries with no hits and
        click-through by position (store/searches.py)."""
        denied = await self._denied(request)
        if denied is not None:
            return denied
        period, chosen = analytics.period_of(request.query_params)

        def gather() -> dict[str, Any]:
            store = Searches(self.database)
            return {
                "totals": store.totals(period),
                "top": store.top_queries(period, analytics.PAGE_ROWS),
                "none": store.no_hits(period, analytics.PAGE_ROWS),
                "abandoned": store.abandoned(period, analytics.PAGE_ROWS),
                "positions": store.positions(period),
                "searchers": store.searchers(period, analytics.PAGE_ROWS),
            }

        try:
            reports = await _in_thread(gather)
        except Exception as exc:  # noqa: BLE001 - the page says so; the rest of the administration works on
            logger.warning("Web administration: analytics not read: %s", analytics.short_error(exc))
            reports = None
        return self.render(
            request,
            "analytics.html",
            period=period,
            chosen=chosen,
            period_days=analytics.PERIOD_DAYS,
            reports=reports,
            enabled=self.analytics.enabled,
            log_users=self.analytics.log_users,
            days=self.analytics.days,
            dropped=self.analytics.dropped,
            csv_query=urlencode(chosen),
        )

    async def summary_page(self, request: Request) -> Response:
        """The daily summary (issue 60, ops/daily_summary.py: the one `scrapy summary` prints and
        sends): sources crawled in the last 24 hours (?hours=), changes, failures, what waits."""
        denied = await self._denied(request)
        if denied is not None:
            return denied
        try:
            hours = min(max(float(request.query_params.get("hours", "24")), 1.0), 744.0)
        except ValueError:
            hours = 24.0
        if hours != hours:  # NaN
            hours = 24.0

        def gather() -> Any:
            names = self.config.source_names()
            schedules = {name: schedule for name in names if (schedule := self.config.schedule_of(name)) is not None}
            return daily_summary.build_summary(self.database, datetime.now().astimezone(), hours, schedules)

        return self.render(request, "summary.html", summary=await _in_thread(gather), hours=hours)

    async def analytics_csv(self, request: Request) -> Response:
        """One report of the analytics page as CSV (analytics.csv_text: safe to open in a spreadsheet)."""
        denied = await self._denied(request)
        if denied is not None:
            return denied
        report = request.query_params.get("report", "")
        if report not in analytics.REPORTS:
            return self.render(request, "forbidden.html", 404, reason="No such report.")
        period, _chosen = analytics.period_of(request.query_params)
        try:
            header, rows = await _in_thread(lambda: analytics.report_rows(Searches(self.database), report, period))
        except Exception as exc:  # noqa: BLE001 - said on a page, as the analytics page does
            logger.warning("Web administration: analytics not read: %s", analytics.short_error(exc))
            return self.render(request, "forbidden.html", 503, reason="The analytics cannot be read from the database now.")
        name = analytics.csv_filename(report, period)
        return Response(
            analytics.csv_text(header, rows),
            media_type="text/csv; charset=utf-8",
            headers={"content-disposition": f'attachment; filename="{name}"'},
        )

    def _flash(self, request: Request) -> str:
        return self.sessions.take_flash(request.cookies.get(SESSION_COOKIE))

    async def api_tokens(self, request: Request) -> Response:
        """The API's tokens (store/api_tokens.py); a POST makes one and leads to this page, which
        shows it once (reloading the page makes no second token)."""
        post = request.method == "POST"
        denied = await self._denied(request, post=post)
        if denied is not None:
            return denied
        tokens = await _in_thread(lambda: ApiTokens(self.database))  # opening it may wait: not on the event loop
        session = str(request.cookies.get(SESSION_COOKIE))
        created, error = None, ""
        if not post:
            created = self._made.pop(session, None)
        else:
            form = await small_form(request) or FormData()
            name = str(form.get("name", "")).strip()
            typed = str(form.get("days", "")).strip()
            days = _int(typed)
            if not name or len(name) > 200:
                error = "Give the token a name (at most 200 characters)."
            elif (typed and days is None) or (days is not None and not 1 <= days <= 3650):
                error = "A token expires after 1 to 3650 days, or never."
            else:
                expires = datetime.now(UTC) + timedelta(days=days) if days else None
                on_behalf = form.get("on_behalf") == "1"
                token_id, token = await _in_thread(tokens.create, name, on_behalf, expires)
                logger.info("Web administration: API token %d %r made (on behalf of users: %s)", token_id, name, on_behalf)
                self._made[session] = {"id": token_id, "name": name, "token": token}  # one a session
                return RedirectResponse(self.url("/admin/api"), status_code=303)
        listed = await _in_thread(tokens.list)
        code = 400 if error else 200
        return self.render(
            request, "api_tokens.html", code, tokens=listed, created=created, error=error, flash=self._flash(request)
        )

    async def api_token_revoke(self, request: Request) -> Response:
        denied = await self._denied(request, post=True)
        if denied is not None:
            return denied
        token_id = int(request.path_params["token"])
        revoked = await _in_thread(lambda: ApiTokens(self.database).revoke(token_id))
        self.token_gate.forget()  # its kept verdict too: revoked at once
        message = f"API token {token_id} revoked." if revoked else f"No valid API token {token_id}."
        logger.info("Web administration: %s", message)
        self.sessions.flash(request.cookies.get(SESSION_COOKIE), message)
        return RedirectResponse(self.url("/admin/api"), status_code=303)


def _api_error(code: int, error: str, message: str, cors: dict[str, str], challenge: str = "") -> JSONResponse:
    headers = {**cors, "cache-control": "no-store"}
    if challenge:
        headers["www-authenticate"] = challenge
    return JSONResponse({"error": error, "message": message}, status_code=code, headers=headers)


def _sync_at_start(web: WebApp) -> None:
    try:
        if web.sync_relevance():
            logger.info("Synonyms and stopwords sent to Solr again")
    except Exception as exc:  # noqa: BLE001 - Solr or the database down: the relevance page sends them later
        logger.warning("Synonyms and stopwords not sent to Solr at start: %s", getattr(exc, "reason", "") or type(exc).__name__)


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
    """Blocking work (Solr, the database, a process) off the event loop. Opening the database
    (``WebApp.database``) is such work too: pass a function that reads it, never its value."""
    return await run_in_threadpool(function, *args)


def create_app(config: WebConfig) -> Starlette:
    """The ASGI application for ``config``; under ``config.prefix`` when one is set. It reads
    X-Forwarded-For itself (from ``config.proxies``): serve it with the server's own proxy headers
    off (uvicorn's ``proxy_headers=False``), or the peer address would already be rewritten."""
    web = WebApp(config)
    routes = [
        Route("/", web.search),
        Route("/suggest", web.suggest, methods=["GET"]),
        Route("/login", web.signin_form, methods=["GET"]),
        Route("/login", web.signin, methods=["POST"]),
        Route("/logout", web.signout, methods=["POST"]),
        Route("/admin", web.overview),
        Route("/admin/login", web.login_form, methods=["GET"]),
        Route("/admin/login", web.login, methods=["POST"]),
        Route("/admin/logout", web.logout, methods=["POST"]),
        Route("/admin/runs/{run:int}", web.run),
        Route("/admin/sources/{name}", web.source),
        Route("/admin/sources/{name}/documents", web.documents),
        Route("/admin/sources/{name}/explain", web.explain, methods=["POST"]),
        Route("/admin/sources/{name}/control", web.control, methods=["POST"]),
        Route("/admin/explain-access", web.explain_access_form, methods=["GET"]),
        Route("/admin/explain-access", web.explain_access, methods=["POST"]),
        Route("/admin/why", web.why, methods=["GET"]),
        Route("/admin/relevance", web.relevance_page, methods=["GET"]),
        Route("/admin/relevance", web.relevance_change, methods=["POST"]),
        Route("/click", web.click, methods=["GET"]),
        Route("/admin/analytics", web.analytics_page, methods=["GET"]),
        Route("/admin/analytics.csv", web.analytics_csv, methods=["GET"]),
        Route("/admin/summary", web.summary_page, methods=["GET"]),  # issue 60
        Route("/admin/api", web.api_tokens, methods=["GET", "POST"]),
        Route("/admin/api/{token:int}/revoke", web.api_token_revoke, methods=["POST"]),
        Route("/api/search", web.api_search, methods=["GET", "OPTIONS"]),
        Route("/api/suggest", web.api_suggest, methods=["GET", "OPTIONS"]),
        Route("/metrics", web.metrics, methods=["GET"]),
        Mount("/static", StaticFiles(packages=[("searchcrawl.web", "static")]), name="static"),
    ]
    if config.prefix:
        routes = [Mount(config.prefix, routes=routes), Route("/", lambda request: RedirectResponse(config.prefix + "/"))]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        web.analytics.start()
        if config.relevance_sync_at_start:  # Solr may have lost them (a new configset, a dev Solr restarted)
            threading.Thread(target=_sync_at_start, args=(web,), name="relevance-sync", daemon=True).start()
        yield
        web.close()

    middleware = [Middleware(PeerAddress)]
    if config.proxies:  # X-Forwarded-For and -Proto from these only, after PeerAddress kept the peer
        middleware.append(Middleware(ProxyHeadersMiddleware, trusted_hosts=list(config.proxies)))
    middleware.append(Middleware(SecurityHeaders))
    # after the proxy headers: the scheme judged is the browser's (origins.py)
    middleware.append(Middleware(SameOriginPosts, public=config.public_origins))
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.web = web
    return app
