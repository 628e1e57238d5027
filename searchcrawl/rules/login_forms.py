"""Form login as plain logic: which URL is the login page, when a page says the session expired,
whether the answer to a login means success, and each origin's sessions and failed logins.

The ``[auth.form]`` table (``FormLogin``) is declared with the other ``[[auth]]`` keys in
searchcrawl/rules/credentials.py; searchcrawl/crawl/middlewares/form_login.py runs the login through
Scrapy and asks these functions what its answers mean.
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import urljoin, urlsplit

from searchcrawl.rules.credentials import FormLogin, origin_of

# A login answers with at most this many redirects before its outcome is read (its own origins only)
MAX_LOGIN_REDIRECTS = 5
# The form picked when the table names none: the one with a password input
PASSWORD_FORM_XPATH = '//form[.//input[translate(@type, "PASSWORD", "password") = "password"]]'


def is_login_page(url: str, login_url: str) -> bool:
    """``url`` is the login page: same origin and path, whatever its query (``/login?next=/a``)."""
    return origin_of(url) == origin_of(login_url) and (urlsplit(url).path or "/") == (urlsplit(login_url).path or "/")


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


class Sessions:
    """Each origin's session, numbered (0: never logged in; each successful login makes a new
    one), and its failures in a row: failed logins and pages that showed expiry right after a
    fresh login. At ``limit`` failures in a row the origin is given up for the crawl."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.current: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()

    def session(self, origin: str) -> int:
        return self.current[origin]

    def stale(self, origin: str, seen: int) -> bool:
        """A request sent with session ``seen`` may try a newer one without logging in again."""
        return self.current[origin] > seen

    def logged_in(self, origin: str) -> int:
        self.current[origin] += 1
        self.failures[origin] = 0
        return self.current[origin]

    def failed(self, origin: str) -> bool:
        """Count a failure; True when it is the one that gives the origin up."""
        self.failures[origin] += 1
        return self.failures[origin] == self.limit

    def given_up(self, origin: str) -> bool:
        return self.failures[origin] >= self.limit
