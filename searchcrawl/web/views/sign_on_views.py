"""Signing in and out: searchers on the search page (/login, /logout: the password checked by a
bind to the directory) and administrators (/admin/login, /admin/logout: the configured
account, or a directory user with a role of web/roles.py), each with sessions, cookies and a login throttle of their own (sign_on/sessions.py)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
from collections.abc import Callable
from secrets import token_urlsafe
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from searchcrawl.access.decision import Principals
from searchcrawl.access.directory import DirectoryUnavailable
from searchcrawl.search.request import search_back
from searchcrawl.system.translations import N_, number
from searchcrawl.system.translations import gettext as _
from searchcrawl.web.context import WebContext
from searchcrawl.web.roles import AdminUser, Role
from searchcrawl.web.shared import (
    LOGIN_COOKIE,
    SEARCHER_COOKIE,
    SIGNIN_COOKIE,
    admin_gate,
    audited,
    in_limited_thread,
    in_thread,
    personal,
    searcher_principals,
    session_principals,
    session_principals_from_provider,
    set_cookie,
    small_form,
    who_searches,
)
from searchcrawl.web.sign_on.kerberos import negotiate_token
from searchcrawl.web.sign_on.oidc import OIDC_COOKIE
from searchcrawl.web.sign_on.providers import PENDING_SECONDS, SignedOn, SignOnError
from searchcrawl.web.sign_on.saml import SAML_COOKIE
from searchcrawl.web.sign_on.sessions import SESSION_COOKIE, LoginThrottle, Session, Sessions

logger = logging.getLogger(__name__)

OIDC_CALLBACK = "/login/oidc/callback"  # the redirect URI to register at the provider (under the prefix)
SAML_ACS = "/login/saml/acs"  # the assertion consumer service (HTTP-POST) to register at the IdP
SAML_METADATA = "/login/saml/metadata"  # this service provider's metadata, and its entity id by default
MAX_SAML_FORM_BYTES = 1024 * 1024  # the IdP's POST: a signed assertion, base64, with its groups
SIGN_ON_ADMIN_SECONDS = 3600  # an administrator's session whose roles came from the provider's groups
# the password forms' refusals (``_password_form``), by form: a searcher's sign-in, an administrator's
# login: not such a form, too many failures, the form expired
FORM_REFUSALS = {
    "sign-in": (
        N_("Not a sign-in form."),
        N_("Too many failed sign-ins: try again in %(seconds)s s."),
        N_("The sign-in form has expired; load it again."),
    ),
    "login": (
        N_("Not a login form."),
        N_("Too many failed logins: try again in %(seconds)s s."),
        N_("The login form has expired; load it again."),
    ),
}


async def signin_form(ctx: WebContext, request: Request) -> Response:
    if not ctx.searchers.enabled:
        return ctx.render(request, "forbidden.html", 404, reason=_("Signing in is off: no directory is configured."))
    token = request.cookies.get(SIGNIN_COOKIE) or token_urlsafe(32)
    searcher = await who_searches(ctx, request)
    back = search_back(request.query_params.get("back"))
    response = ctx.render(request, "signin.html", signin_token=token, searcher=searcher, error="", back=back)
    set_cookie(request, response, SIGNIN_COOKIE, token, 600, ctx.url("/"))
    return personal(ctx, response)


async def signin(ctx: WebContext, request: Request) -> Response:
    """A searcher's sign-in: the password checked by binding to the directory as the user."""
    if ctx.config.directory is None:
        return ctx.render(
            request, "forbidden.html", 404, reason=_("Signing in with a password is off: no directory is configured.")
        )
    checked = await _password_form(ctx, request, ctx.signin_throttle, (SIGNIN_COOKIE, "signin_token"), "sign-in")
    if isinstance(checked, Response):
        return checked
    form, client, expected = checked
    user, password = str(form.get("username", "")).strip(), str(form.get("password", ""))
    back = search_back(str(form.get("back", "")))  # the search signed in from: shown again
    anonymous = ctx.searcher(Principals.anonymous())
    # counted before the directory is asked (off the event loop), taken back on success:
    # attempts sent at once cannot all pass while the count is still low
    ctx.signin_throttle.failed(client)
    if not user or not password or len(user) > 256:  # an empty password would be an anonymous bind
        return ctx.render(request, "signin.html", 403, signin_token=expected, searcher=anonymous, error="failed", back=back)
    try:
        ok = await in_limited_thread(ctx.directory_threads, ctx.config.directory.authenticate, user, password)
    except DirectoryUnavailable as exc:
        ctx.signin_throttle.forgive(client)
        logger.warning("Search sign-in from %s: the directory does not answer: %s", client, exc)  # not the name typed
        return ctx.render(
            request,
            "signin.html",
            503,
            signin_token=expected,
            searcher=anonymous,
            error=_("The directory does not answer: %(reason)s", reason=str(exc)),
            back=back,
        )
    if not ok:
        logger.warning("Search sign-in: failed sign-in from %s", client)
        return ctx.render(request, "signin.html", 403, signin_token=expected, searcher=anonymous, error="failed", back=back)
    ctx.signin_throttle.succeeded(client)
    logger.info("Search sign-in: %s signed in", user)
    ctx.searchers.logout(request.cookies.get(SEARCHER_COOKIE))  # a new session, never the old one's token
    response = RedirectResponse(ctx.url("/") + back, status_code=303)
    set_cookie(request, response, SEARCHER_COOKIE, ctx.searchers.login(user), int(ctx.config.session_lifetime), ctx.url("/"))
    response.delete_cookie(SIGNIN_COOKIE, path=ctx.url("/"))
    return response


async def signout(ctx: WebContext, request: Request) -> Response:
    session = ctx.searchers.get(request.cookies.get(SEARCHER_COOKIE))
    form = await small_form(request)
    if session is None or form is None or not Sessions.csrf_ok(session, str(form.get("csrf", "")) or None):
        return ctx.render(request, "forbidden.html", 403, reason=_("Not signed in, or the form's token is missing or stale."))
    ctx.searchers.logout(request.cookies.get(SEARCHER_COOKIE))
    logger.info("Search sign-in: %s signed out", session.user)
    response = RedirectResponse(ctx.url("/"), status_code=303)
    response.delete_cookie(SEARCHER_COOKIE, path=ctx.url("/"))
    return response


async def login_form(ctx: WebContext, request: Request) -> Response:
    if not ctx.sessions.enabled:
        return ctx.render(request, "admin_off.html", 404)
    token = request.cookies.get(LOGIN_COOKIE) or token_urlsafe(32)
    response = ctx.render(request, "login.html", login_token=token, failed=False)
    set_cookie(request, response, LOGIN_COOKIE, token, 600, ctx.url("/admin"))
    return response


async def login(ctx: WebContext, request: Request) -> Response:
    if not ctx.sessions.enabled:
        return ctx.render(request, "admin_off.html", 404)
    checked = await _password_form(ctx, request, ctx.throttle, (LOGIN_COOKIE, "login_token"), "login")
    if isinstance(checked, Response):
        return checked
    form, client, expected = checked
    user, password = str(form.get("username", "")), str(form.get("password", ""))
    # counted by address and by address and name, before anything is checked (the directory off
    # the event loop): a login of one's own clears that name's failures only, never the guesses at
    # another's; both must have waited their delay
    named = throttle_key(client, user)
    wait = ctx.throttle.wait(named)
    if wait > 0:
        refused = ctx.render(
            request,
            "forbidden.html",
            429,
            reason=_("Too many failed logins: try again in %(seconds)s s.", seconds=number(round(wait))),
        )
        refused.headers["retry-after"] = str(int(wait) + 1)
        return refused
    ctx.throttle.failed(client)
    ctx.throttle.failed(named)
    if ctx.sessions.check(user, password):
        admin = AdminUser(user, "local", frozenset({Role.ADMINISTRATOR}))
    else:
        found = await _directory_login(ctx, request, client, named, expected, user.strip(), password)
        if isinstance(found, Response):
            return found
        admin = found
    ctx.throttle.succeeded(named)
    ctx.throttle.forgive(client)  # this attempt's count by address alone: the others stay
    logger.info(
        "Web administration: login of %s (%s)", admin.name if admin.kind == "directory" else "the configured account", admin.kind
    )
    await in_thread(ctx.audit, admin, "login", "", admin.kind)
    kind = admin.kind
    ctx.sessions.logout(request.cookies.get(SESSION_COOKIE))  # a new session, never the old one's token
    response = RedirectResponse(ctx.url("/admin"), status_code=303)
    token = ctx.sessions.login(admin.name, kind)
    set_cookie(request, response, SESSION_COOKIE, token, int(ctx.config.session_lifetime), ctx.url("/admin"))
    response.delete_cookie(LOGIN_COOKIE, path=ctx.url("/admin") or "/")
    return response


def throttle_key(client: str, user: str) -> str:
    """The login throttle's count of guesses at ``user`` from ``client`` (the name hashed: no name
    typed, a password typed in its place say, is kept in memory)."""
    return f"{client} {hashlib.sha256(user.strip().casefold().encode()).hexdigest()[:16]}"


async def _directory_login(
    ctx: WebContext, request: Request, client: str, named: str, expected: str, user: str, password: str
) -> Response | AdminUser:
    """A directory user's administration login (web/roles.py): the password checked by a bind as
    the user, then a role from their principals; who logs in, or the refusal."""
    failed = ctx.render(request, "login.html", 403, login_token=expected, failed=True)
    directory = ctx.config.directory
    if not ctx.sessions.role_logins or directory is None or not user or not password or len(user) > 256:
        logger.warning("Web administration: failed login from %s", client)
        return failed
    try:
        ok = await in_limited_thread(ctx.directory_threads, directory.authenticate, user, password)
    except DirectoryUnavailable as exc:  # no guess: both counts taken back
        ctx.throttle.forgive(client)
        ctx.throttle.forgive(named)
        logger.warning("Web administration: login from %s: the directory does not answer: %s", client, exc)
        return ctx.render(request, "login.html", 503, login_token=expected, failed=True, unavailable=True)
    if not ok:
        logger.warning("Web administration: failed login from %s", client)
        return failed
    principals = await searcher_principals(ctx, user)
    roles = ctx.config.roles.roles_of(principals)
    if not roles:  # said as a failed login: the page tells no one that the password was right
        logger.warning("Web administration: %s has no administration role: login refused", user)
        return failed
    return AdminUser(principals.user or user, "directory", roles)  # the directory's own name (case and all)


async def oidc_signin(ctx: WebContext, request: Request) -> Response:
    """A searcher's single sign-on (sign_on/oidc.py): to the provider, the search to come back to kept."""
    return await _oidc_start(ctx, request, "search", search_back(request.query_params.get("back")))


async def oidc_login(ctx: WebContext, request: Request) -> Response:
    """An administrator's single sign-on: to the provider; a role is needed when it answers."""
    return await _oidc_start(ctx, request, "admin", "")


async def _oidc_start(ctx: WebContext, request: Request, purpose: str, back: str) -> Response:
    if ctx.oidc is None or (purpose == "admin" and not ctx.sessions.role_logins):
        return ctx.render(request, "forbidden.html", 404, reason=_("Single sign-on is off."))
    origin = _origin(ctx, request)
    try:
        key, url = await in_limited_thread(
            ctx.sign_on_threads, ctx.oidc.start, purpose, origin + ctx.url(OIDC_CALLBACK), back, _owner(request)
        )
    except SignOnError as exc:
        logger.warning("Single sign-on: %s", exc)
        return ctx.render(
            request, "forbidden.html", 503, reason=_("Single sign-on does not answer: %(reason)s", reason=exc.shown())
        )
    response = RedirectResponse(url, status_code=303)
    set_cookie(request, response, OIDC_COOKIE, key, PENDING_SECONDS, ctx.url(OIDC_CALLBACK), same_site="lax")
    return response


async def oidc_callback(ctx: WebContext, request: Request) -> Response:
    """The provider's answer: the code exchanged, the ID token checked (sign_on/oidc.py), then a searcher's
    session, or an administrator's when they have a role. The page that follows is reached by a
    link of this site's own (a meta refresh): the provider's redirect is another site's
    navigation, on which the SameSite=Strict session cookie would not be sent."""
    if ctx.oidc is None:
        return ctx.render(request, "forbidden.html", 404, reason=_("Single sign-on is off."))
    params = {key: value[:4096] for key, value in request.query_params.items()}
    finish = ctx.oidc.finish
    cookie = (OIDC_COOKIE, ctx.url(OIDC_CALLBACK))
    return await _finish(ctx, request, "oidc", cookie, finish, request.cookies.get(OIDC_COOKIE), params)


async def saml_signin(ctx: WebContext, request: Request) -> Response:
    """A searcher's single sign-on with SAML (sign_on/saml.py): an AuthnRequest to the IdP."""
    return await _saml_start(ctx, request, "search", search_back(request.query_params.get("back")))


async def saml_login(ctx: WebContext, request: Request) -> Response:
    """An administrator's single sign-on with SAML; a role is needed when the IdP answers."""
    return await _saml_start(ctx, request, "admin", "")


def _owner(request: Request) -> str:
    """Whose pending sign-ins a new one counts among (sign_on/providers.py): the client's address."""
    return request.client.host if request.client is not None else "-"


def _origin(ctx: WebContext, request: Request) -> str:
    """This application's origin as the provider must send the browser back to it: the public
    URL's, else the one the request came to (bounded: it is kept with each pending sign-in)."""
    return ctx.config.public_origins[0] if ctx.config.public_origins else f"{request.url.scheme}://{request.url.netloc[:300]}"


def _saml_endpoints(ctx: WebContext) -> tuple[str, str]:
    """This service provider's entity id and assertion consumer service URL: from the public URL
    alone, never from a request's Host header (an attacker's Host made the answers of another
    service provider of the same IdP acceptable here); SignOnError without one."""
    assert ctx.config.saml is not None
    if not ctx.config.public_origins:
        raise SignOnError(N_("SAML sign-in needs the application's public URL (SEARCHCRAWL_WEB_PUBLIC_URL)"))
    origin = ctx.config.public_origins[0]
    return ctx.config.saml.entity_id or origin + ctx.url(SAML_METADATA), origin + ctx.url(SAML_ACS)


def _saml_cookie(ctx: WebContext, request: Request) -> tuple[str, str]:
    """The pending sign-in cookie's name and path: over HTTPS a ``__Host-`` cookie (Secure, for the
    whole site, no Domain: no sibling host can set it), else a plain one on the ACS's path."""
    if request.url.scheme == "https":
        return f"__Host-{SAML_COOKIE}", "/"
    return SAML_COOKIE, ctx.url(SAML_ACS)


async def _saml_start(ctx: WebContext, request: Request, purpose: str, back: str) -> Response:
    if ctx.saml is None or (purpose == "admin" and not ctx.sessions.role_logins):
        return ctx.render(request, "forbidden.html", 404, reason=_("Single sign-on is off."))
    try:
        key, url = await in_limited_thread(
            ctx.sign_on_threads, ctx.saml.start, purpose, *_saml_endpoints(ctx), back, _owner(request)
        )
    except SignOnError as exc:
        logger.warning("Single sign-on (SAML): %s", exc)
        return ctx.render(
            request, "forbidden.html", 503, reason=_("Single sign-on does not answer: %(reason)s", reason=exc.shown())
        )
    response = RedirectResponse(url, status_code=303)
    # the IdP's answer is a POST from its site: a SameSite=Lax cookie would not come with it
    same_site = "none" if request.url.scheme == "https" else "lax"
    name, path = _saml_cookie(ctx, request)
    set_cookie(request, response, name, key, PENDING_SECONDS, path, same_site=same_site)
    return response


async def saml_acs(ctx: WebContext, request: Request) -> Response:
    """The IdP's answer (HTTP-POST binding), checked by pysaml2 (sign_on/saml.py), then a session as for
    OpenID Connect. Exempt from the same-origin check of forms (app.py): it comes from the IdP's
    page by design, and is believed for its signature, its request and this browser's cookie."""
    if ctx.saml is None:
        return ctx.render(request, "forbidden.html", 404, reason=_("Single sign-on is off."))
    form = await small_form(request, MAX_SAML_FORM_BYTES)
    if form is None:
        return ctx.render(request, "forbidden.html", 413, reason=_("Not a SAML answer."))
    answer = (str(form.get("RelayState", "")), str(form.get("SAMLResponse", "")))
    name, path = _saml_cookie(ctx, request)
    try:
        endpoints = _saml_endpoints(ctx)
    except SignOnError as exc:
        return ctx.render(
            request, "forbidden.html", 503, reason=_("Single sign-on does not answer: %(reason)s", reason=exc.shown())
        )
    finish = ctx.saml.finish
    return await _finish(ctx, request, "saml", (name, path), finish, request.cookies.get(name), *answer, *endpoints)


async def kerberos_signin(ctx: WebContext, request: Request) -> Response:
    """A searcher's single sign-on with Kerberos (sign_on/kerberos.py): the browser's ticket, asked for."""
    return await _kerberos(ctx, request, "search", search_back(request.query_params.get("back")))


async def kerberos_login(ctx: WebContext, request: Request) -> Response:
    """An administrator's single sign-on with Kerberos; a role (from the directory) is needed."""
    return await _kerberos(ctx, request, "admin", "")


async def _kerberos(ctx: WebContext, request: Request, purpose: str, back: str) -> Response:
    """SPNEGO: without a Negotiate header, a 401 that asks the browser for its ticket (a page
    saying what to do when it has none); with one, the ticket accepted and a session made."""
    if ctx.kerberos is None or (purpose == "admin" and not ctx.sessions.role_logins):
        return ctx.render(request, "forbidden.html", 404, reason=_("Single sign-on is off."))
    try:
        token = negotiate_token(request.headers.get("authorization"))
        site = request.headers.get("sec-fetch-site", "none").strip().lower()
        if token is None and site not in ("same-origin", "none"):
            # another site's link or image: no ticket asked for (a browser would answer silently)
            return ctx.render(request, "forbidden.html", 403, reason=_("Sign in from this site's own pages."))
        if token is None:
            asked = ctx.render(
                request,
                "forbidden.html",
                401,
                reason=_(
                    "Your browser did not sign in with Kerberos: sign in to the domain on this computer, and allow this"
                    " site for Windows sign-in in the browser, or sign in another way."
                ),
            )
            asked.headers["www-authenticate"] = "Negotiate"
            return asked
        user, answer = await in_limited_thread(ctx.sign_on_threads, ctx.kerberos.accept, token)
    except SignOnError as exc:
        logger.warning("Single sign-on (kerberos) refused: %s", exc)
        return ctx.render(request, "forbidden.html", 403, reason=_("Single sign-on failed: %(reason)s", reason=exc.shown()))
    response = await _signed_on(ctx, request, SignedOn(user, (), purpose, back), "kerberos")
    if answer:  # mutual authentication: the service's own proof, for the browser
        response.headers["www-authenticate"] = "Negotiate " + base64.b64encode(answer).decode()
    return response


async def _finish(
    ctx: WebContext, request: Request, kind: str, pending: tuple[str, str], finish: Callable[..., SignedOn], *args: Any
) -> Response:
    """A provider's answer (``kind``: oidc, saml) checked by ``finish(*args)`` on single sign-on's
    threads, then its session (``_signed_on``) and the pending sign-in's cookie (its name and
    path) removed."""
    response: Response
    try:
        signed = await in_limited_thread(ctx.sign_on_threads, finish, *args)
    except SignOnError as exc:
        logger.warning("Single sign-on (%s) refused: %s", kind, exc)
        response = ctx.render(request, "forbidden.html", 403, reason=_("Single sign-on failed: %(reason)s", reason=exc.shown()))
    else:
        response = await _signed_on(ctx, request, signed, kind)
        response.delete_cookie(pending[0], path=pending[1])  # kept on a refusal: another site's post cancels nothing
    return response


async def saml_metadata(ctx: WebContext, request: Request) -> Response:
    """This service provider's SAML metadata, for the IdP's administrator to register it."""
    if ctx.saml is None:
        return ctx.render(request, "forbidden.html", 404, reason=_("Single sign-on is off."))
    try:
        entity_id, acs = _saml_endpoints(ctx)
        xml = await in_limited_thread(ctx.sign_on_threads, ctx.saml.sp_metadata, entity_id, acs)
    except SignOnError as exc:
        return ctx.render(
            request, "forbidden.html", 503, reason=_("Single sign-on does not answer: %(reason)s", reason=exc.shown())
        )
    return Response(xml, media_type="application/samlmetadata+xml")


async def _signed_on(ctx: WebContext, request: Request, signed: SignedOn, kind: str) -> Response:
    """A session for whom a single sign-on (``kind``: oidc, saml) signed in: a searcher's, or an
    administrator's when they have a role. The page that follows is reached by a link of this
    site's own (a meta refresh): the provider's redirect or POST is another site's navigation, on
    which the SameSite=Strict session cookie would not be sent."""
    if signed.purpose == "admin":
        session = Session(signed.user, "", 0.0, kind, signed.groups, signed.partial)
        roles = ctx.config.roles.roles_of(await session_principals(ctx, session))
        if not roles:
            logger.warning(
                "Web administration: %s (single sign-on, %s) has no administration role: login refused", signed.user, kind
            )
            return ctx.render(request, "forbidden.html", 403, reason=_("You have no administration role."))
        admin = AdminUser(signed.user, kind, roles)
        await in_thread(ctx.audit, admin, "login", "", kind)
        logger.info("Web administration: login of %s (single sign-on, %s)", signed.user, kind)
        ctx.sessions.logout(request.cookies.get(SESSION_COOKIE))
        # roles from the provider's groups are those of the sign-in: an hour, then signed in again
        lifetime = SIGN_ON_ADMIN_SECONDS if session_principals_from_provider(ctx, kind) else None
        token = ctx.sessions.login(signed.user, kind, signed.groups, signed.partial, lifetime)
        cookie, path, target = SESSION_COOKIE, ctx.url("/admin"), ctx.url("/admin")
    else:
        logger.info("Search sign-in: %s signed in (single sign-on, %s)", signed.user, kind)
        ctx.searchers.logout(request.cookies.get(SEARCHER_COOKIE))
        token = ctx.searchers.login(signed.user, kind, signed.groups, signed.partial)
        cookie, path = SEARCHER_COOKIE, ctx.url("/")
        target = ctx.url("/") + signed.back
    response = ctx.render(request, "signed_on.html", target=target)
    set_cookie(request, response, cookie, token, int(ctx.config.session_lifetime), path)
    return response


async def _password_form(
    ctx: WebContext, request: Request, throttle: LoginThrottle, token: tuple[str, str], what: str
) -> Response | tuple[FormData, str, str]:
    """The password form (a sign-in's or a login's), the client's address and the form's own token
    (double submit: ``token`` names the cookie and the form's field that must hold the same
    value), or the refusal to send: not a small form, the client waits out its ``throttle``
    (guessing is slowed down, whatever the form holds), or the form has expired. The caller
    records the attempt with no await in between: concurrent attempts of one address cannot all
    pass while its count is still low."""
    not_a_form, too_many, expired = FORM_REFUSALS[what]
    form = await small_form(request)
    if form is None:
        return ctx.render(request, "forbidden.html", 413, reason=_(not_a_form))
    client = request.client.host if request.client is not None else "-"
    wait = throttle.wait(client)
    if wait > 0:
        refused = ctx.render(request, "forbidden.html", 429, reason=_(too_many, seconds=number(round(wait))))
        refused.headers["retry-after"] = str(int(wait) + 1)
        return refused
    cookie, field_name = token
    expected = request.cookies.get(cookie)
    sent = str(form.get(field_name, ""))
    if not expected or not hmac.compare_digest(expected.encode(), sent.encode()):
        return ctx.render(request, "forbidden.html", 403, reason=_(expired))
    return form, client, expected


async def logout(ctx: WebContext, request: Request) -> Response:
    denied = await admin_gate(ctx, request, permission=None, post=True)
    if denied is not None:
        return denied
    await audited(ctx, request, "logout")
    ctx.sessions.logout(request.cookies.get(SESSION_COOKIE))
    ctx.made.pop(str(request.cookies.get(SESSION_COOKIE)), None)  # a token made and never shown
    ctx.restores.pop(str(request.cookies.get(SESSION_COOKIE)), None)
    response = RedirectResponse(ctx.url("/"), status_code=303)
    response.delete_cookie(SESSION_COOKIE, path=ctx.url("/admin"))
    return response
