"""Downloader middleware: a source's form logins (``[[auth]]`` tables with ``type = "form"``).

Before the first page request to one of a form login's origins, that request (and any other of
those origins meanwhile) waits while the middleware logs in: it fetches the login page, fills its
form with form2request (what Scrapy 2.19 names instead of its deprecated
``FormRequest.from_response``: hidden inputs such as a CSRF token kept, the first submit button
clicked, the user and the secret in the configured fields) and sends it. Both go through the engine
(``engine.download_async``) and so through every downloader middleware, the internal-address
guard included; robots.txt and the boundary do not apply to them (the source's author named the
login page, and sites commonly disallow it to keep it out of search engines), and nothing
records them. Only a POST to one of the table's origins is sent (a form sending elsewhere, or
sending the password in its URL, is a failed login), and the answer's redirects are followed
within those origins only (searchcrawl/rules/login_forms.py says what the answer means).

Session cookies are kept by Scrapy's CookiesMiddleware (which runs after this one), in a jar of
the login's own (``meta["cookiejar"]``, set here on every request of the source: a login's
origins share its jar, any other origin has a jar of its own), so no session cookie reaches
another origin, another port of the same host included, whatever a redirect copies. A source
with any other ``[[auth]]`` table gets the same jars (and no login): the cookies a site sets
once it has the credentials most often are the session standing for them, and a cookie is not
bound to a port (RFC 6265), nor, with a ``Domain``, to one host.

A page answer that says the session expired (a redirect to the login page; optionally one of
``expired_status`` or a page showing ``expired_text``) makes one new login, however many
requests see it together, and the page is sent again after it. While a login runs, no page
request of its origins goes out: those that reach this middleware wait here, and those that
passed it already and waited for the site's turn (site_concurrency, fleet) are stopped by
FormLoginGateMiddleware, the last downloader middleware before the network, and sent again after
the login (so are those sent with a session older than the newest). The gate also reads each
answer before the site's turn is given back, so that the next request already finds the login
under way. The page whose expiry starts a login proves it: fetched first in the new session, as
a request of the login's own, before any page waiting for the login (which would use a session
of a few pages up before it). A failed login, a login whose proof finds the fresh session
expired (a login the site took without giving a session that works, a session that ends at
once), or a first session that expires before serving a page known to need one, counts toward
SEARCHCRAWL_AUTH_REFUSED_LIMIT failures in a row, which a proof served ends; a session that
expires after serving pages counts nothing, however often (searchcrawl/rules/login_forms.py,
LoginSessions). The URL gets status 936 (a transient failure of the source, not counted, nothing
removed) when its login failed, when its proof found the fresh session expired (alone, if a page
proved before is served there), or after MAX_RESENDS resends while the site served no page; at
the limit, or at the SEARCHCRAWL_AUTH_LOGIN_LIMITth login after a session that served no page,
the crawl logs an ERROR and stops asking the login's origins (their URLs get 936 without a
request), rather than walking a site of login pages. The login page itself is never requested as a page
(status 903), nor indexed when another name of the same server leads to it (its path and port
on another host answered from the address the login page came from, showing the login form:
936, which removes nothing).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from form2request import form2request
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadFailedError
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.selector import SelectorList
from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.web.client import ResponseNeverReceived

from searchcrawl.crawl.exceptions import RequestRefused, SessionHeld, not_needed
from searchcrawl.crawl.meta import (
    COOKIEJAR,
    DONT_REDIRECT,
    DONT_RETRY,
    HANDLE_HTTPSTATUS_ALL,
    LOGIN_EXPIRY,
    LOGIN_REQUEST,
    LOGIN_RETRIED,
    LOGIN_SESSION,
    ROBOTS_REQUEST,
)
from searchcrawl.crawl.middlewares.site_auth import SiteAuthError, read_credentials
from searchcrawl.crawl.stores import source_of
from searchcrawl.rules.credentials import Credentials, FormLogin, origin_of, safe_header_value
from searchcrawl.rules.lifecycle import Event
from searchcrawl.rules.login_forms import (
    MAX_LOGIN_REDIRECTS,
    PASSWORD_FORM_XPATH,
    Expiry,
    LoginSessions,
    at_login_path,
    is_login_form,
    is_login_page,
    login_failure,
    redirect_target,
    session_expired,
)
from searchcrawl.rules.status_codes import Status
from searchcrawl.system.secrets import SecretError, required_secret

logger = logging.getLogger(__name__)

RESEND_PAUSE = 0.1  # seconds before a login request that got no answer is sent again (_fetch)
# A login's outcome: why it failed (None: logged in), and why its proof gets 936 (None: sent again)
LoginOutcome = tuple[str | None, str | None]
_VERDICTS = {True: "expired too", False: "served", None: "proves nothing"}
# Each crawl's FormLoginMiddleware, for its gate (built after it: a higher order)
_MIDDLEWARES: WeakKeyDictionary[Crawler, FormLoginMiddleware] = WeakKeyDictionary()


@dataclass(frozen=True)
class Login:
    """One form login with its secrets read (no repr of them)."""

    credential: Credentials
    user: str

    @property
    def form(self) -> FormLogin:
        assert self.credential.rule.form is not None  # type = "form" has one (SiteAuth's validation)
        return self.credential.rule.form

    @property
    def origins(self) -> list[str]:
        return self.credential.rule.origins

    @property
    def key(self) -> str:
        """Names the login's session and cookie jar: the login page's origin."""
        origin = origin_of(self.form.url)
        assert origin is not None
        return origin

    def __repr__(self) -> str:
        return f"Login({self.form.url} for {', '.join(self.origins)})"


def read_logins(rules: list[Any]) -> list[Login]:
    """Each form login with its password (and user, from ``user_secret``) read and remembered for masking."""
    logins = []
    for credential in read_credentials(rules):
        form = credential.rule.form
        assert form is not None  # only type = "form" tables are read here
        user = credential.rule.user
        if form.user_secret is not None:
            try:
                user = required_secret(form.user_secret, form.url)
            except SecretError as exc:
                raise SiteAuthError(str(exc)) from None
            if not safe_header_value(user):
                raise SiteAuthError(f"the secret {form.user_secret} holds a line break or another control character")
        assert user is not None  # SiteAuth's validation: user or user_secret
        logins.append(Login(credential, user))
    return logins


class FormLoginMiddleware:
    def __init__(self, crawler: Crawler, logins: list[Login], refused_limit: int, login_limit: int = 0) -> None:
        self.crawler = crawler
        self.logins = logins
        self.by_origin = {origin: login for login in logins for origin in login.origins}
        self.sessions = LoginSessions(refused_limit, login_limit)
        self.logging_in: dict[str, asyncio.Future[LoginOutcome]] = {}  # login key -> the login under way
        self.login_addresses: dict[str, set[str]] = {}  # login key -> the addresses its login page came from
        _MIDDLEWARES[crawler] = self

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FormLoginMiddleware:
        auth = source_of(crawler).settings.auth
        if not auth:
            raise not_needed(cls, "the source has no [[auth]] tables (no form login, no cookie jar per origin)")
        rules = [rule for rule in auth if rule.type == "form"]  # none: only a jar per origin
        settings = crawler.settings
        limits = settings.getint("SEARCHCRAWL_AUTH_REFUSED_LIMIT"), settings.getint("SEARCHCRAWL_AUTH_LOGIN_LIMIT")
        return cls(crawler, read_logins(rules), *limits)

    # --- page requests ----------------------------------------------------------------------

    def _page_login(self, request: Request) -> Login | None:
        """The form login a page request of the crawl needs (None: another origin's, or one of a
        login's own requests, or a robots.txt)."""
        if request.meta.get(LOGIN_REQUEST) or request.meta.get(ROBOTS_REQUEST):
            return None
        return self.by_origin.get(origin_of(request.url) or "")

    async def process_request(self, request: Request, spider: Any = None) -> None:
        origin = origin_of(request.url)
        login = self.by_origin.get(origin or "")
        request.meta[COOKIEJAR] = login.key if login is not None else origin  # every request: its own jar
        login = self._page_login(request)
        if login is None:
            return None
        if is_login_page(request.url, login.form.url):
            raise RequestRefused(Status.EXCLUDED_PATH, f"the login page of {login.key}: never crawled as a page")
        await self._ready(login, request)
        return None

    async def _ready(self, login: Login, request: Request) -> None:
        """Wait for the first login, or the one under way; the request gets the newest session."""
        if self.sessions.given_up(login.key):
            raise self._refused(login, "not asked again in this crawl: its form login failed")
        if self.sessions.session(login.key) == 0 or login.key in self.logging_in:
            await self._outcome(login, self._start_login(login))  # one login for all that ask together
        request.meta[LOGIN_SESSION] = self.sessions.session(login.key)

    def held(self, request: Request) -> bool:
        """The gate's question: the page request must not go out now (a login of its origin runs,
        or it carries an older session's cookies, or the origin was given up meanwhile)."""
        login = self._page_login(request)
        if login is None or LOGIN_SESSION not in request.meta:
            return False
        key = login.key
        return key in self.logging_in or self.sessions.stale(key, request.meta[LOGIN_SESSION]) or self.sessions.given_up(key)

    def expiry(self, request: Request, response: Response) -> Expiry | None:
        """What the answer to a page request means for its session, decided once (by the gate,
        before the site's turn is given back): None, a page served; else what the page gets. The
        first page to find the newest session expired starts the new login here."""
        return self._expiry(request, response)[0]

    def _expiry(self, request: Request, response: Response) -> tuple[Expiry | None, asyncio.Future[LoginOutcome] | None]:
        """``expiry``'s answer and the login the page then waits for (the one under way)."""
        login = self._page_login(request)
        if login is None:
            return None, None
        if LOGIN_EXPIRY in request.meta:
            return request.meta[LOGIN_EXPIRY]
        form, seen = login.form, request.meta.get(LOGIN_SESSION, 0)
        text = response.text if form.expired_text is not None and isinstance(response, TextResponse) else None
        why = session_expired(form, request.url, response.status, _location(response), text)
        if why is None:
            self.sessions.served(login.key, seen, request.url, response.status)
            request.meta[LOGIN_EXPIRY] = None, None
            return None, None
        resends = int(request.meta.get(LOGIN_RETRIED, 0))
        expiry = self.sessions.expired(login.key, seen, resends, login.key in self.logging_in, request.url)
        logger.debug(
            "The session %d of %s expired at %s (%s): %s",
            seen,
            login.key,
            request.url,
            why,
            "logging in again" if expiry.log_in else "status 936" if expiry.refusal else "sent again after the login",
        )
        if expiry.gives_up:
            self._give_up(login, expiry.refusal or "")
        waits_for = self._start_login(login, proof=request.url) if expiry.log_in else self.logging_in.get(login.key)
        request.meta[LOGIN_EXPIRY] = expiry, waits_for
        return expiry, waits_for

    async def process_response(self, request: Request, response: Response, spider: Any = None) -> Request | Response:
        login = self._page_login(request)
        if login is None:
            self._refuse_login_page_elsewhere(request, response)
            return response
        expiry, waits_for = self._expiry(request, response)
        del request.meta[LOGIN_EXPIRY]  # decided for this answer only
        if expiry is None:
            return response
        if expiry.refusal is not None:
            raise self._refused(login, expiry.refusal)
        if waits_for is not None:  # else a newer session exists already
            disproof = await self._outcome(login, waits_for)
            if expiry.log_in and disproof is not None:  # this page was the login's proof
                raise self._refused(login, disproof)
        resends = int(request.meta.get(LOGIN_RETRIED, 0)) + 1
        return request.replace(dont_filter=True, meta={**request.meta, LOGIN_RETRIED: resends})

    async def process_exception(self, request: Request, exception: Exception, spider: Any = None) -> Request | None:
        """A request the gate held: sent again once the login is done (it never went out)."""
        if not isinstance(exception, SessionHeld):
            return None
        login = self._page_login(request)
        assert login is not None  # the gate holds page requests of a login's origins only
        await self._ready(login, request)
        logger.debug("%s waited for the login of %s: sent again with its new session", request.url, login.key)
        return request.replace(dont_filter=True)

    def _refuse_login_page_elsewhere(self, request: Request, response: Response) -> None:
        """The login page reached through another name of its server (its path and port on
        another host, answered from an address its login page came from, showing the login
        form) is never indexed either: 936, a transient failure that removes nothing (a page
        indexed before stays, as one served a login wall does). An address unknown (no login
        yet, a handler that does not say) makes it a page like any other."""
        if request.meta.get(LOGIN_REQUEST) or request.meta.get(ROBOTS_REQUEST) or not isinstance(response, HtmlResponse):
            return
        address = str(response.ip_address) if response.ip_address is not None else None
        for login in self.logins:
            if address not in self.login_addresses.get(login.key, ()) or not at_login_path(response.url, login.form.url):
                continue
            if any(
                is_login_form(login.form, response.url, found.attrib.get("action"), found.xpath(".//input/@name").getall())
                for found in _login_form(response, login.form)
            ):
                raise RequestRefused(
                    Status.AUTH_REFUSED,
                    f"the login page of {login.key}, reached as {origin_of(response.url)}: never indexed",
                    event=Event.FAILED,
                    counted=False,
                )

    def _refused(self, login: Login, why: str) -> RequestRefused:
        self.crawler.stats.inc_value("searchcrawl/auth_refused")
        return RequestRefused(Status.AUTH_REFUSED, f"{login.key}: {why}", event=Event.FAILED, counted=False)

    def _give_up(self, login: Login, why: str) -> None:
        logger.error(
            "The form login of %s: %s; %s is not requested again in this crawl; check the secret and the [auth.form] table",
            login.form.url,
            why,
            ", ".join(login.origins),
        )

    # --- the login --------------------------------------------------------------------------

    async def _outcome(self, login: Login, running: asyncio.Future[LoginOutcome]) -> str | None:
        """Wait for the login ``running``; RequestRefused (936) if it failed, else why its proof
        gets 936 (None: served, or no proof)."""
        failure, disproof = await asyncio.shield(running)
        if failure is not None:
            raise self._refused(login, f"the form login failed: {failure}")
        return disproof

    def _start_login(self, login: Login, proof: str | None = None) -> asyncio.Future[LoginOutcome]:
        """The login under way, started now if none is (one for all the requests that ask
        together); ``proof``, the page that found the last session expired."""
        running = self.logging_in.get(login.key)
        if running is None:
            running = self.logging_in[login.key] = asyncio.ensure_future(self._login(login, proof))
            running.add_done_callback(lambda _done: self.logging_in.pop(login.key, None))
        return running

    async def _login(self, login: Login, proof: str | None) -> LoginOutcome:
        """Log in once, then fetch ``proof`` first in the new session (no page of the origin goes
        out meanwhile): why the login failed (counted toward giving up), and why the proof gets 936."""
        logger.info("Logging in to %s at %s", login.key, login.form.url)
        try:
            failure = await self._submit(login)
        except Exception as exc:  # the login page or the form unreachable, refused by a rule, ...
            failure = f"{type(exc).__name__}: {exc}"
        self.crawler.stats.inc_value("searchcrawl/logins" if failure is None else "searchcrawl/logins_failed")
        if failure is not None:
            logger.warning("The form login of %s failed: %s", login.form.url, failure)
            if self.sessions.failed(login.key):
                self._give_up(login, f"failed {self.sessions.limit} times in a row")
            return failure, None
        session = self.sessions.logged_in(login.key)
        logger.info("Logged in to %s (session %d)", login.key, session)
        return None, None if proof is None else await self._prove(login, session, proof)

    async def _prove(self, login: Login, session: int, url: str) -> str | None:
        """The page that found the last session expired, fetched first in the new one: served,
        the login works; expired again, the page alone expires if a page proved before is served
        (a page the crawler's user may not see), else the login failed (a wrong password the site
        takes, a session that ends at once). Why the page gets 936 (None: it is sent again)."""
        key = login.key
        answer = await self._expires(login, url)
        logger.debug("The proof of session %d of %s at %s: %s", session, key, url, _VERDICTS[answer])
        if answer is not True:
            if answer is False:
                self.sessions.proved(key, session, url)
            return None
        known = self.sessions.proven.get(key)
        if known is not None and known != url and await self._expires(login, known) is False:
            self.sessions.proved(key, session, known)
            logger.debug("%s expires alone: %s, which needs a session too, is served in session %d", url, known, session)
            return "the page alone found expired a fresh session that serves other pages needing one"
        if self.sessions.disproved(key, session):
            self._give_up(
                login, f"the session of a fresh login expired at once; the form login failed {self.sessions.limit} times in a row"
            )
        return "the page found expired the session of a fresh login too"

    async def _expires(self, login: Login, url: str) -> bool | None:
        """Whether ``url``, fetched as a login request (no redirect followed, nothing recorded),
        says the session expired (None: it proves nothing: an error, a redirect elsewhere, no answer)."""
        try:
            response = await self._fetch(self._request(login, url), f"The page {url} proving the login of {login.key}")
        except Exception as exc:  # unreachable, refused by a rule, ...
            logger.debug("The proof %s of the login of %s got no answer: %s", url, login.key, exc)
            return None
        text = response.text if login.form.expired_text is not None and isinstance(response, TextResponse) else None
        if session_expired(login.form, url, response.status, _location(response), text) is not None:
            return True
        return False if 200 <= response.status < 300 else None

    async def _submit(self, login: Login) -> str | None:
        form = login.form
        page, failure = await self._follow(login, self._request(login, form.url), f"The login page {form.url}")
        if failure is not None:
            return failure
        if page.status != 200 or not isinstance(page, TextResponse):
            return f"the login page answered HTTP {page.status}" + ("" if page.status != 200 else " without text")
        if page.ip_address is not None:  # its server: another name of it leads to the login page too
            self.login_addresses.setdefault(login.key, set()).add(str(page.ip_address))
        found = _login_form(page, form)
        if not found:
            return f"no login form on the login page ({form.form or 'a form with a password input'})"
        data = {**form.fields, form.user_field: login.user, form.password_field: login.credential.value}
        try:  # the form's own inputs (a CSRF token ...) and its first submit button, with our values
            submit = form2request(found[0], data).to_scrapy(callback=None, dont_filter=True, meta=self._meta(login))
        except (ValueError, NotImplementedError) as exc:  # a multipart form, a method of its own ...
            return f"the login form cannot be sent ({exc})"
        if submit.method != "POST":
            return "the login form sends its fields in its URL (GET): not sent, the password would be in it"
        if origin_of(submit.url) not in login.origins:
            return f"the login form sends to {origin_of(submit.url)}, not one of its [[auth]] table's origins"
        logger.debug("Sending the login form of %s to %s", form.url, submit.url)
        answer, failure = await self._follow(login, submit, f"The login form of {form.url}", stop_early=form.success_text is None)
        if failure is not None:
            return failure
        if redirect_target(answer.url, answer.status, _location(answer)) is not None:
            return None  # a redirect elsewhere than the login page, and no success text to read
        text = answer.text if isinstance(answer, TextResponse) else None
        password_form = isinstance(answer, HtmlResponse) and bool(answer.xpath(PASSWORD_FORM_XPATH))
        return login_failure(form, answer.status, text, password_form)

    async def _follow(self, login: Login, request: Request, what: str, stop_early: bool = False) -> tuple[Response, str | None]:
        """Fetch ``request`` and its redirects (GET, within the login's origins, never back to
        the login page after the form was sent). ``stop_early``: a redirect elsewhere than the
        login page is the answer itself (no success text to read: nothing more fetched)."""
        response = await self._fetch(request, what)
        for _hop in range(MAX_LOGIN_REDIRECTS):
            target = redirect_target(response.url, response.status, _location(response))
            if target is None:
                return response, None
            if request.method == "POST" and is_login_page(target, login.form.url):
                return response, "the login led back to the login page"
            if origin_of(target) not in login.origins:
                return response, f"the login redirects to {origin_of(target) or 'a non-http(s) URL'}, not one of its origins"
            if stop_early:
                return response, None
            response = await self._fetch(self._request(login, target), f"A redirect of the login at {login.form.url}")
        return response, f"the login redirects more than {MAX_LOGIN_REDIRECTS} times"

    async def _fetch(self, request: Request, what: str) -> Response:
        """Fetch through every downloader middleware (the address guard, the cookie jar, the site's
        concurrency). A request that got no answer at all (its connection closed or reset before
        the first byte of one) is sent again, once, after RESEND_PAUSE, as browsers do on a
        kept-alive connection: most often the server never read it. Twisted's client keeps the
        connection of an HTTP/1.0 answer in its pool though the server closes it after the
        answer, and sends again by itself only a GET, so the form sent just after the login page
        of an HTTP/1.0 server races that close (a CI run under load lost it twice in a row, when
        the whole login was sent again); so does a form sent as a server closes a kept-alive
        connection (Apache does after 5 idle seconds). The pause lets the client see the closes
        of other pooled connections first, so that the resend does not take one of them. A server
        that did read the form and then closed counts two attempts (an account lockout's counter
        too), and a one-time token it spent fails the second: a failed login, as without it.
        ``what`` names the request in the log line (never the form's action URL: the page's)."""
        assert self.crawler.engine is not None
        again = request.copy()  # as it was before the middlewares added to it (its Cookie header ...)
        try:
            return await self.crawler.engine.download_async(request)
        except DownloadFailedError as exc:
            if not _never_answered(exc):
                raise
            logger.info("%s got no answer (%s); sending it again", what, exc)
        await asyncio.sleep(RESEND_PAUSE)
        return await self.crawler.engine.download_async(again)

    def _request(self, login: Login, url: str) -> Request:
        return Request(url, dont_filter=True, meta=self._meta(login))

    def _meta(self, login: Login) -> dict[str, Any]:
        # never retried (a login is not sent twice for one attempt) nor redirected by Scrapy (followed here)
        return {
            LOGIN_REQUEST: login.key,
            COOKIEJAR: login.key,
            DONT_REDIRECT: True,
            DONT_RETRY: True,
            HANDLE_HTTPSTATUS_ALL: True,
        }


class FormLoginGateMiddleware:
    """The last downloader middleware before the network: a page request of a form login's
    origins that got the site's turn while the origin logs in again (or with an older session's
    cookies) does not go out (SessionHeld: the turn is given back, and FormLoginMiddleware sends
    it again after the login); each answer is read for expiry here, before the turn is given
    back, so that the next request finds the login under way."""

    def __init__(self, logins: FormLoginMiddleware) -> None:
        self.logins = logins

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FormLoginGateMiddleware:
        logins = _MIDDLEWARES.get(crawler)
        if logins is None:
            raise not_needed(cls, "the source has no form login")
        return cls(logins)

    def process_request(self, request: Request, spider: Any = None) -> None:
        if self.logins.held(request):
            raise SessionHeld(f"{request.url} waits for a login")

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Response:
        self.logins.expiry(request, response)
        return response


def _never_answered(exc: DownloadFailedError) -> bool:
    """Whether the connection closed or was reset before the first byte of an answer (not a
    cancellation, a timeout or a TLS handshake that failed: sending again changes nothing there)."""
    cause = exc.__cause__
    return isinstance(cause, ResponseNeverReceived) and all(
        reason.check(ConnectionDone, ConnectionLost) for reason in cause.reasons
    )


def _login_form(page: TextResponse, form: FormLogin) -> SelectorList:
    """The login form on ``page``: the table's ``form`` selector's, else the one with a password
    input (empty: none, or the selector names no <form>)."""
    found = page.css(form.form) if form.form else page.xpath(PASSWORD_FORM_XPATH)
    return found if found and found[0].root.tag == "form" else SelectorList([])


def _location(response: Response) -> str | None:
    location = response.headers.get(b"Location")
    return location.decode("latin-1") if location else None
