"""What the views share (the views: views/search_views.py, views/api_views.py, views/sign_on_views.py, views/admin_views.py,
views/relevance_views.py, views/analytics_views.py, views/token_views.py): who searches, forms read small and once,
blocking work off the event loop, cookies, and the administration's gate. Each function takes
the context (context.py) or only what it uses."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote

import anyio.to_thread
from anyio import CapacityLimiter
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.access.tokens import AccessError
from searchcrawl.search.extractive import is_question
from searchcrawl.system.translations import gettext as _
from searchcrawl.web.roles import AdminUser, Permission, Role
from searchcrawl.web.sign_on.providers import provider_principals
from searchcrawl.web.sign_on.searcher import Searcher, header_user
from searchcrawl.web.sign_on.sessions import SESSION_COOKIE, Session, Sessions

if TYPE_CHECKING:
    from searchcrawl.search.answer_parts import Answer
    from searchcrawl.search.hybrid import SemanticSearch
    from searchcrawl.search.request import SearchRequest
    from searchcrawl.search.trimmed_index import TrimmedIndex
    from searchcrawl.web.context import WebConfig, WebContext

logger = logging.getLogger(__name__)

LOGIN_COOKIE = "searchcrawl_login"  # the login form's own CSRF token (double submit)
# a searcher's session and sign-in form: names of their own, on the search page's path
SEARCHER_COOKIE = "searchcrawl_searcher"
SIGNIN_COOKIE = "searchcrawl_signin"
# the searcher's choice of the interface's language (system/translations.py), a preference, no credential
LANGUAGE_COOKIE = "searchcrawl_language"
LANGUAGE_COOKIE_SECONDS = 365 * 24 * 3600
MAX_BACK_PATH_CHARS = 4000  # the page a form leads back to (local_back): longer ones lead home
PEER = "searchcrawl.peer"  # the scope's key for the connection's own peer address (app.PeerAddress)
# The application's forms are small and URL-encoded: anything else is refused before it is read
# (Starlette reads any form whole: a login POST could hold a gigabyte before its token was checked)
FORM_TYPE = "application/x-www-form-urlencoded"
MAX_FORM_BYTES = 16_384


# --- who searches -----------------------------------------------------------------------------


async def who_searches(ctx: WebContext, request: Request) -> Searcher:
    """Who searches: the trusted proxy's user header, else the sign-in session, else nobody
    (public documents only). The principals come from the directory (which caches them); when
    it cannot give them, the searcher sees public documents only, and is told why."""
    user, known_by, csrf = None, "anonymous", ""
    if ctx.config.user_header:
        values = request.headers.getlist(ctx.config.user_header)
        peer = request.scope.get(PEER)
        if len(values) > 1:
            # two of them: one may be the client's own, passed on by a proxy that adds its
            # header instead of replacing it; which is the proxy's is unknown: neither
            logger.warning("Search: %d %s headers from %s: none believed", len(values), ctx.config.user_header, peer)
        elif peer in ctx.proxies:
            user, known_by = header_user(values[0] if values else None), "header"
        elif values:
            logger.warning("Search: %s header from %s ignored (not one of SEARCHCRAWL_WEB_PROXIES)", ctx.config.user_header, peer)
    session = None
    if user is None:
        session = ctx.searchers.get(request.cookies.get(SEARCHER_COOKIE))
        if session is not None:
            user, known_by, csrf = session.user, "session", session.csrf
    if user is None:
        return ctx.searcher(Principals.anonymous())
    principals = await session_principals(ctx, session) if session is not None else await searcher_principals(ctx, user)
    if principals.error:
        logger.warning("Search by %s: public documents only: %s", user, principals.error)
    logger.debug("Search by %s (%s): %d principals", user, known_by, len(principals.tokens))
    return ctx.searcher(principals, known_by, csrf)


def session_principals_from_provider(ctx: WebContext, kind: str) -> bool:
    """Whether a single sign-on session of ``kind`` takes its principals from its provider's groups
    (``principals`` "token", or "auto" without a directory) rather than the directory."""
    return ctx.config.principals_from_provider(kind)


async def session_principals(ctx: WebContext, session: Session) -> Principals:
    """The principals of a session's user: a single sign-on's from the groups its provider gave
    where that is where they come from (sign_on/oidc.py, sign_on/saml.py: ``principals`` "token", or "auto"
    without a directory), else the directory's."""
    if session_principals_from_provider(ctx, session.kind):
        return provider_principals(session.user, session.groups, f"single sign-on ({session.kind})", session.partial)
    return await searcher_principals(ctx, session.user)


async def searcher_principals(ctx: WebContext, user: str) -> Principals:
    """``user``'s principals: from the directory's cache at once where it keeps them (a dict
    read, no directory thread: 64 lookups held by a slow directory, one searcher's requests
    at once say, must not hold a searcher whose principals are cached), else asked in a
    directory thread."""
    cached = getattr(ctx.config.directory, "cached", None)
    found = cached(user) if cached is not None else None
    return found if found is not None else await in_limited_thread(ctx.directory_threads, principals_of, ctx.config, user)


async def in_limited_thread(threads: CapacityLimiter, function: Callable[..., Any], *args: Any) -> Any:
    """Work off the event loop in ``threads`` of its own: a question to the directory (the
    context's ``directory_threads``: a slow directory holds those, never the threads every search
    and page shares, ``in_thread``, so a visitor's search, which asks no directory, is not kept
    waiting behind signed-in searchers' lookups, each bounded by its deadline), a cached copy's
    read (``cached_copies``)."""
    return await anyio.to_thread.run_sync(lambda: function(*args), limiter=threads)


def principals_of(config: WebConfig, user: str) -> Principals:
    """``user``'s principals: the directory's, else (single sign-on without a directory) the
    user name alone."""
    if config.directory is not None:
        return config.directory.principals(user)
    # single sign-on without a directory: the user name alone (no group is known)
    try:
        return Principals.of(user, [Principal(f"user:{user}", f"{config.user_header} header")])
    except AccessError as exc:
        return Principals(user, Principals.anonymous().entries, f"the user name cannot be a principal: {exc}")


def personal(ctx: WebContext, response: Response) -> Response:
    """A page that depends on who asks is kept by no cache (a shared proxy's included)."""
    if ctx.searchers.enabled or ctx.config.user_header:
        response.headers["cache-control"] = "private, no-store"
    return response


# --- requests and answers ---------------------------------------------------------------------


def local_back(text: str | None, prefix: str) -> str:
    """The page of this application a form leads back to (``/admin/runs/3?x=1``, under ``prefix``):
    a path of its own, never another site's (``//host``, ``/\\host``, a scheme) nor a long one;
    the search page for anything else."""
    home = prefix + "/"
    if not text or len(text) > MAX_BACK_PATH_CHARS or not text.startswith(home) or text.startswith("//"):
        return home
    if any(character in text for character in "\\\r\n\t") or not text.isprintable():
        return home
    # no dot segment (``/search/../other``, ``%2e%2e``, which browsers resolve alike): the path stays under the prefix
    if any(unquote(segment) in (".", "..") for segment in text.split("?")[0].split("#")[0].split("/")):
        return home
    return text


def set_cookie(
    request: Request, response: Response, name: str, value: str, max_age: int, path: str, same_site: str = "strict"
) -> None:
    """Every cookie of the application: HttpOnly, SameSite=Strict (Lax only for a single sign-on's
    pending login, which the provider's redirect must bring back), Secure over HTTPS."""
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=path,
        httponly=True,
        samesite=same_site,  # type: ignore[arg-type]
        secure=request.url.scheme == "https",
    )


async def admin_gate(
    ctx: WebContext, request: Request, *, permission: Permission | None, post: bool = False, form_bytes: int = 0
) -> Response | None:
    """The administration's gate: None when the request may proceed (administration on, a
    session, a role that grants ``permission`` now, and for a POST its CSRF token); otherwise
    the answer to send. Who it let through is ``request.state.admin`` (``admin_user``).
    ``permission`` is required, and None only where any session may (logging out: a user whose
    roles were taken away still ends their session). ``form_bytes``: a POST's form may be this
    large (the source editor's file; default ``MAX_FORM_BYTES``)."""
    if not ctx.sessions.enabled:
        return ctx.render(request, "admin_off.html", 404)
    session = ctx.sessions.get(request.cookies.get(SESSION_COOKIE))
    if session is None:
        if post:
            return ctx.render(request, "forbidden.html", 403, reason=_("Not logged in."))
        return RedirectResponse(ctx.url("/admin/login"), status_code=303)
    admin = await admin_of(ctx, session)
    request.state.admin = admin
    if permission is not None and not admin.may(permission):
        logger.warning(
            "Web administration: %s (roles: %s) refused %s %s", admin.name, admin.role_names, request.method, request.url.path
        )
        return ctx.render(
            request, "forbidden.html", 403, reason=_("Your roles (%(roles)s) do not allow this page.", roles=admin.shown_roles)
        )
    if post:
        form = await small_form(request, form_bytes or MAX_FORM_BYTES)
        if form is None:
            return ctx.render(request, "forbidden.html", 413, reason=_("Not a form of this application."))
        if not Sessions.csrf_ok(session, str(form.get("csrf", "")) or None):
            logger.warning("Web administration: POST to %s without its CSRF token refused", request.url.path)
            return ctx.render(request, "forbidden.html", 403, reason=_("The form's token is missing or stale."))
    return None


async def admin_of(ctx: WebContext, session: Session) -> AdminUser:
    """Who holds ``session`` and their roles now: the configured account is an administrator; a
    directory user's roles are read from their principals at every request (the directory's
    cache), none when the directory cannot give them."""
    if session.kind == "local":
        return AdminUser(session.user, session.kind, frozenset({Role.ADMINISTRATOR}))
    principals = await session_principals(ctx, session)
    return AdminUser(session.user, session.kind, ctx.config.roles.roles_of(principals))


async def audited(ctx: WebContext, request: Request, action: str, target: str = "", detail: str = "") -> None:
    """Record the change the gate's administrator just made (the audit page's), off the event loop."""
    await in_thread(ctx.audit, admin_user(request), action, target, detail)


def admin_user(request: Request) -> AdminUser:
    """Who the gate let through on this request (for the audit log)."""
    admin = getattr(request.state, "admin", None)
    assert isinstance(admin, AdminUser), "admin_user before admin_gate"
    return admin


def flash(ctx: WebContext, request: Request) -> str:
    """The administration session's message (of the POST that led here), taken once."""
    return ctx.sessions.take_flash(request.cookies.get(SESSION_COOKIE))


def int_param(value: str | None) -> int | None:
    try:
        return int(value) if value is not None and value != "" else None
    except ValueError:
        return None


async def small_form(request: Request, max_bytes: int = MAX_FORM_BYTES) -> FormData | None:
    """The request's URL-encoded form, read once (kept on the request) and at most
    ``max_bytes``; None for another content type or a larger body, which is not read on."""
    if hasattr(request.state, "form"):
        return request.state.form
    form: FormData | None = None
    if request.headers.get("content-type", "").split(";", 1)[0].strip().lower() == FORM_TYPE:
        body = bytearray()
        async with aclosing(request.stream()) as chunks:
            async for chunk in chunks:
                body += chunk
                if len(body) > max_bytes:
                    break
        if len(body) <= max_bytes:
            pairs = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True, encoding="utf-8", errors="replace")
            form = FormData(list[tuple[str, str | UploadFile]](pairs))
    request.state.form = form
    return form


async def in_thread(function: Callable[..., Any], *args: Any) -> Any:
    """Blocking work (Solr, the database, a process) off the event loop. Opening the database
    (``WebContext.database``) is such work too: pass a function that reads it, never its value."""
    return await run_in_threadpool(function, *args)


async def answer_of(
    ctx: WebContext,
    request: Request,
    query: SearchRequest,
    index: TrimmedIndex,
    unasked: bool = False,
    semantic: SemanticSearch | None = None,
) -> Answer | None:
    """The answer to the search's query when the request asks for one (``answer=1``: the page's
    link, the API's parameter) and answers are on; filtered as the search is. ``unasked`` (the
    search page): for a question (extractive.py ``is_question``) the extractive answer is given
    without asking, when there is one, on the first page only (the next pages are more hits of the
    same question). ``semantic``: the request's own (``SemanticSearch.for_request``), whose query
    was embedded for its hits already."""
    if not query.q:
        return None
    filters, params = query.solr_filters()
    if request.query_params.get("answer") == "1":
        return await in_thread(ctx.answer, query.q, index, filters, params, True, semantic)
    if not unasked or query.page > 1 or not is_question(query.q):
        return None
    found = await in_thread(ctx.answer, query.q, index, filters, params, False, semantic)
    return found if found is not None and found.extract is not None else None
