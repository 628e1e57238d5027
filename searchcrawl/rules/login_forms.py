"""Form login as plain logic: which URL is the login page, when a page says the session expired,
whether the answer to a login means success, and each origin's sessions and failed logins: what
a page that found its session expired gets (sent again after a login, or 936).

The ``[auth.form]`` table (``FormLogin``) is declared with the other ``[[auth]]`` keys in
searchcrawl/rules/credentials.py; searchcrawl/crawl/middlewares/form_login.py runs the login through
Scrapy and asks these functions what its answers mean.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from searchcrawl.rules.credentials import FormLogin, origin_of

# A login answers with at most this many redirects before its outcome is read (its own origins only)
MAX_LOGIN_REDIRECTS = 5
# The form picked when the table names none: the one with a password input
PASSWORD_FORM_XPATH = '//form[.//input[translate(@type, "PASSWORD", "password") = "password"]]'
# A page is sent again at most this many times after finding its session expired (each time in a
# session that served other pages): a page that always answers with the login page gets 936
MAX_RESENDS = 5


def is_login_page(url: str, login_url: str) -> bool:
    """``url`` is the login page: same origin and path, whatever its query (``/login?next=/a``)."""
    return origin_of(url) == origin_of(login_url) and (urlsplit(url).path or "/") == (urlsplit(login_url).path or "/")


def at_login_path(url: str, login_url: str) -> bool:
    """``url`` has the login page's scheme, port and path, whatever its host name: on another
    name of the same server (``localhost`` for ``127.0.0.1``) it is the login page when it shows
    the login form (the middleware looks)."""
    origin, login_origin = origin_of(url), origin_of(login_url)
    if origin is None or login_origin is None:
        return False
    return _scheme_and_port(origin) == _scheme_and_port(login_origin) and (urlsplit(url).path or "/") == (
        urlsplit(login_url).path or "/"
    )


def _scheme_and_port(origin: str) -> tuple[str, str]:
    scheme, _sep, host_port = origin.partition("://")
    return scheme, host_port.rsplit(":", 1)[1]


def redirect_target(url: str, status: int, location: str | None) -> str | None:
    """Where a 3xx answer to ``url`` leads (None: not a redirect)."""
    if not 300 <= status < 400 or not location:
        return None
    return urljoin(url, location.strip())


def session_expired(form: FormLogin, url: str, status: int, location: str | None, text: str | None) -> str | None:
    """Why the answer to a page request means the session expired, or None: a redirect to the
    login page (always), one of ``expired_status``, or a page showing ``expired_text``."""
    target = redirect_target(url, status, location)
    if target is not None and is_login_page(target, form.url):
        return f"HTTP {status} to the login page"
    if status in form.expired_status:
        return f"HTTP {status}"
    if form.expired_text is not None and text is not None and form.expired_text in text:
        return "the page shows the expiry text"
    return None


def login_failure(form: FormLogin, status: int, text: str | None, password_form: bool) -> str | None:
    """Why the final answer to a login (its redirects followed; one back to the login page is a
    failure already) means it failed, or None: an error status, a password form again (the login
    page shown once more), or no ``success_text``."""
    if status >= 400:
        return f"the login was answered HTTP {status}"
    if password_form:
        return "the answer to the login shows a password form again"
    if form.success_text is not None and (text is None or form.success_text not in text):
        return "the answer to the login does not show the success text"
    return None


@dataclass(frozen=True)
class Expiry:
    """What a page that found its session expired gets: ``log_in``, a new login is to start now
    (none runs, none newer exists); ``refusal``, why the page gets 936 instead of being sent
    again after the login (None: sent again); ``gives_up``, this expiry is the failure in a row
    that gives the origin up."""

    log_in: bool
    refusal: str | None = None
    gives_up: bool = False


class Sessions:
    """Each origin's session, numbered (0: never logged in; each successful login makes a new
    one), whether the newest served a page, and its failures in a row: failed logins, and
    sessions that expired before serving a single page (a login the site took but that gave no
    session that works). A session that expires after serving pages is no failure: a page served
    ends the failures in a row. At ``limit`` failures in a row the origin is given up."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.current: Counter[str] = Counter()
        self.working: Counter[str] = Counter()  # the newest session that served a page
        self.failures: Counter[str] = Counter()

    def session(self, origin: str) -> int:
        return self.current[origin]

    def stale(self, origin: str, seen: int) -> bool:
        """A request sent with session ``seen`` may try a newer one without logging in again."""
        return self.current[origin] > seen

    def logged_in(self, origin: str) -> int:
        self.current[origin] += 1
        return self.current[origin]

    def served(self, origin: str, seen: int) -> None:
        """A page answered in session ``seen`` (no expiry): the newest session works."""
        if seen == self.current[origin] and not self.given_up(origin):
            self.working[origin] = seen
            self.failures[origin] = 0

    def failed(self, origin: str) -> bool:
        """Count a failure; True when it is the one that gives the origin up."""
        self.failures[origin] += 1
        return self.failures[origin] == self.limit

    def given_up(self, origin: str) -> bool:
        return self.failures[origin] >= self.limit

    def expired(self, origin: str, seen: int, resends: int, renewing: bool) -> Expiry:
        """A page sent with session ``seen``, already sent again ``resends`` times for expiries,
        found it expired; ``renewing``: a login of the origin runs. Only the first page to find
        the newest session expired starts a login (and, if that session served nothing, counts a
        failure); a page of an older session, or found during the login, waits for it."""
        if self.given_up(origin):
            return Expiry(log_in=False, refusal="not asked again in this crawl: its form login failed")
        too_often = f"the page found its session expired {resends + 1} times" if resends >= MAX_RESENDS else None
        if renewing or self.stale(origin, seen):
            return Expiry(log_in=False, refusal=too_often)
        if self.working[origin] >= seen:
            return Expiry(log_in=True, refusal=too_often)  # served pages, then expired: log in again
        if self.failed(origin):
            why = f"the session expired before serving a page; the form login failed {self.limit} times in a row"
            return Expiry(log_in=False, refusal=why, gives_up=True)
        return Expiry(log_in=True, refusal="the session expired again right after a fresh login" if resends else None)
