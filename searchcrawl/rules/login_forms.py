"""Form login as plain logic: which URL is the login page, when a page says the session expired,
whether the answer to a login means success, and each origin's sessions and failed logins: what
a page that found its session expired gets (sent again after a login, or 936).

The ``[auth.form]`` table (``FormLogin``) is declared with the other ``[[auth]]`` keys in
searchcrawl/rules/credentials.py; searchcrawl/crawl/middlewares/form_login.py runs the login through
Scrapy and asks these functions what its answers mean.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from searchcrawl.rules.credentials import FormLogin, origin_of

# A login answers with at most this many redirects before its outcome is read (its own origins only)
MAX_LOGIN_REDIRECTS = 5
# The form picked when the table names none: the one with a password input
PASSWORD_FORM_XPATH = '//form[.//input[translate(@type, "PASSWORD", "password") = "password"]]'
# A page is sent again at most this many times after finding its session expired while the site
# served no page since (no progress: a session that ends right after each login); a page that
# expires in sessions serving pages is sent again as often as the site ends them
MAX_RESENDS = 5


def is_login_page(url: str, login_url: str) -> bool:
    """``url`` is the login page: same origin and path, whatever its query (``/login?next=/a``)."""
    return origin_of(url) == origin_of(login_url) and (urlsplit(url).path or "/") == (urlsplit(login_url).path or "/")


def at_login_path(url: str, login_url: str) -> bool:
    """``url`` has the login page's scheme, port and path, whatever its host name: on another
    name of the same server (``localhost`` for ``127.0.0.1``: the middleware compares the
    addresses answering) it is the login page when it shows the login form (``is_login_form``)."""
    origin, login_origin = origin_of(url), origin_of(login_url)
    if origin is None or login_origin is None:
        return False
    return _scheme_and_port(origin) == _scheme_and_port(login_origin) and (urlsplit(url).path or "/") == (
        urlsplit(login_url).path or "/"
    )


def _scheme_and_port(origin: str) -> tuple[str, str]:
    scheme, _sep, host_port = origin.partition("://")
    return scheme, host_port.rsplit(":", 1)[1]


def is_login_form(form: FormLogin, page_url: str, action: str | None, inputs: Collection[str]) -> bool:
    """A form on ``page_url`` (its ``action`` and its inputs' names) is the table's login form:
    it sends to the login page's path (no action: the page itself), or it has the table's user
    and password inputs. A sign-in box of another site's header sends elsewhere, most often."""
    target = urljoin(page_url, (action or "").strip())
    return (urlsplit(target).path or "/") == (urlsplit(form.url).path or "/") or {
        form.user_field,
        form.password_field,
    } <= set(inputs)


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
    (none runs, none newer exists) and the page is its proof (fetched first in the new session);
    ``refusal``, why the page gets 936 instead of being sent again after the login (None: sent
    again); ``gives_up``, this expiry gives the origin up (the failure in a row at the limit,
    or the login that would pass the crawl's cap)."""

    log_in: bool
    refusal: str | None = None
    gives_up: bool = False


class LoginSessions:
    """Each origin's session, numbered (0: never logged in; each successful login makes a new
    one), its failures in a row and its logins that followed a session serving no page.

    A session that expires after serving pages is no failure: the page that found it expired
    proves the next login (the middleware fetches it first in the new session, before any other
    page, ``proved``/``disproved``): served, the login works; expired again, the login gives no
    session that serves it (a wrong password the site takes with a redirect home, a session that
    ends at once) or the page alone expires. A failure is a failed login, a login its proof
    disproves, or a session that expires before anything proved it (the first login's, which
    has no proof) and before it served a page known to need a session (one that found a session
    expired once: a page anyone may see, or an error, proves nothing of the login); each session
    counts once at most. A proof, or a page known to need a session served in the newest
    session, ends the failures in a row; at ``limit`` failures in a row the origin is given up.
    ``login_limit`` (0: none) caps the logins of an origin that follow a session which served no
    page (a loop of logins serving nothing, as two processes sharing a user on a site that
    allows one session per user may make): the one that would pass it gives the origin up."""

    def __init__(self, limit: int, login_limit: int = 0) -> None:
        self.limit = max(1, limit)
        self.login_limit = max(0, login_limit)
        self.current: Counter[str] = Counter()
        self.working: Counter[str] = Counter()  # the newest session proved to work
        self.answered: Counter[str] = Counter()  # the newest session that answered a page (2xx or 3xx)
        self.blamed: Counter[str] = Counter()  # the newest session counted as a failure
        self.failures: Counter[str] = Counter()
        self.fruitless: Counter[str] = Counter()  # logins after a session that answered no page
        self.capped: set[str] = set()
        self.needs_session: dict[str, set[str]] = {}  # the URLs that found a session expired once
        self.proven: dict[str, str] = {}  # the newest URL served that needs a session: a second proof

    def session(self, origin: str) -> int:
        return self.current[origin]

    def stale(self, origin: str, seen: int) -> bool:
        """A request sent with session ``seen`` may try a newer one without logging in again."""
        return self.current[origin] > seen

    def logged_in(self, origin: str) -> int:
        self.current[origin] += 1
        return self.current[origin]

    def served(self, origin: str, seen: int, url: str, status: int) -> None:
        """``url`` was answered ``status`` in session ``seen``, no expiry: the newest session
        answers pages, and works if ``url`` is known to need one (an error proves nothing)."""
        if seen != self.current[origin] or status >= 400 or self.given_up(origin):
            return
        self.answered[origin] = seen
        if url in self.needs_session.get(origin, ()):
            self.proved(origin, seen, url)

    def proved(self, origin: str, seen: int, url: str) -> None:
        """``url``, known to need a session, was served in session ``seen``: it works."""
        if seen == self.current[origin] and not self.given_up(origin):
            self.working[origin], self.failures[origin], self.proven[origin] = seen, 0, url

    def disproved(self, origin: str, seen: int) -> bool:
        """The proof of session ``seen`` found it expired: a failure (once per session); True
        when it is the one that gives the origin up."""
        return self._blame(origin, seen)

    def _blame(self, origin: str, seen: int) -> bool:
        if self.blamed[origin] >= seen:
            return False
        self.blamed[origin] = seen
        return self.failed(origin)

    def failed(self, origin: str) -> bool:
        """Count a failure; True when it is the one that gives the origin up."""
        self.failures[origin] += 1
        return self.failures[origin] == self.limit

    def given_up(self, origin: str) -> bool:
        return self.failures[origin] >= self.limit or origin in self.capped

    def expired(self, origin: str, seen: int, resends: int, renewing: bool, url: str) -> Expiry:
        """``url``, sent with session ``seen``, already sent again ``resends`` times for expiries,
        found it expired; ``renewing``: a login of the origin runs. A page of an older session,
        or found during the login, waits for it. The first page to find the newest session
        expired starts a login and is its proof; the session counts a failure if nothing proved
        it. A page is sent again at most MAX_RESENDS times while the site serves no page in its
        session or a later one (no progress): then 936."""
        if self.given_up(origin):
            return Expiry(log_in=False, refusal="not asked again in this crawl: its form login failed")
        self.needs_session.setdefault(origin, set()).add(url)
        if resends >= MAX_RESENDS and self.answered[origin] < seen:
            return Expiry(log_in=False, refusal=f"the page found its session expired {resends + 1} times, no page served since")
        if renewing or self.stale(origin, seen):
            return Expiry(log_in=False)
        if self.working[origin] < seen and self._blame(origin, seen):
            why = f"the session expired before serving a page that needs one; the form login failed {self.limit} times in a row"
            return Expiry(log_in=False, refusal=why, gives_up=True)
        if self.answered[origin] < seen:
            self.fruitless[origin] += 1
            if self.login_limit and self.fruitless[origin] >= self.login_limit:
                self.capped.add(origin)
                why = (
                    f"its session expired without serving a page {self.login_limit} times in this crawl "
                    "(SEARCHCRAWL_AUTH_LOGIN_LIMIT)"
                )
                return Expiry(log_in=False, refusal=why, gives_up=True)
        return Expiry(log_in=True)
