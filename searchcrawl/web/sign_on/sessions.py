"""Administrator sessions: the login check and the per-session CSRF token, without HTTP.

Sessions are kept in the server's memory, keyed by a random token (the cookie's only content):
nothing about the session can be read or forged from the cookie, a logout ends it on the server,
and a restart logs everyone out. Their number is bounded (the oldest goes first) and each expires
after ``lifetime`` seconds. The credentials come from the secrets mechanism
(SEARCHCRAWL_WEB_USERNAME, SEARCHCRAWL_WEB_PASSWORD or _FILE) and are compared in constant time.

Guessing is slowed down (``LoginThrottle``): after a few failed logins from one client address,
its next attempt waits a delay that doubles with each failure (up to 15 minutes), and past a
number of failures a minute from all clients together, every login waits out the minute. A
client behind a reverse proxy shares the proxy's address with every other one.

Searchers who sign in on the search page have sessions of the same kind in a store of their own
(``SearcherSessions``), their passwords checked by the directory.
"""

from __future__ import annotations

import hmac
import secrets as random_tokens
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

SESSION_COOKIE = "searchcrawl_session"  # the cookie of a Sessions session (the administration's sign-in)
MAX_SESSIONS = 1000
MAX_SESSIONS_PER_USER = 20  # one user's sessions at once: their own oldest goes first, never another's
MAX_SEARCHER_SESSIONS = 50_000  # an organisation's searchers (a few hundred bytes each)
FREE_FAILURES = 5  # failed logins from one address before its attempts are slowed down
MAX_DELAY = 900.0  # seconds: the longest wait between two attempts of one address
GLOBAL_FAILURES_PER_MINUTE = 60  # failed logins a minute from all addresses together
MAX_CLIENTS = 10_000  # addresses remembered (the oldest forgotten first)


@dataclass(frozen=True)
class Session:
    user: str
    csrf: str  # sent back in every form; a POST without it is refused
    expires: float
    kind: str = "local"  # the configured account's, "directory" (web/roles.py) or "oidc" (web/sign_on/oidc.py)
    groups: tuple[str, ...] = ()  # a single sign-on's: the groups its provider gave
    partial: str = ""  # and why they may be fewer than the provider's (a deny then refuses: fail closed)


class Sessions:
    def __init__(
        self,
        credentials: tuple[str, str] | None,
        lifetime: float = 8 * 3600,
        max_sessions: int | None = None,
        role_logins: bool = False,
    ) -> None:
        self.credentials = credentials
        self.role_logins = role_logins  # users with a role may log in: the directory's, single sign-on's (web/roles.py)
        self.lifetime = lifetime
        self.max_sessions = max_sessions  # None: MAX_SESSIONS
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._flashes: dict[str, str] = {}  # a message for the session's next page (after a POST)
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Administration is off without configured credentials (a password is required) or a
        directory whose users the roles name."""
        return self.local_account or self.role_logins

    @property
    def local_account(self) -> bool:
        return self.credentials is not None and bool(self.credentials[1])

    def check(self, user: str, password: str) -> bool:
        """Whether ``user`` and ``password`` are the configured account's (constant time)."""
        if not self.local_account:
            return False
        assert self.credentials is not None
        expected_user, expected_password = self.credentials
        same_user = hmac.compare_digest(user.encode(), expected_user.encode())
        same_password = hmac.compare_digest(password.encode(), expected_password.encode())
        return same_user and same_password

    def login(
        self, user: str, kind: str = "local", groups: tuple[str, ...] = (), partial: str = "", lifetime: float | None = None
    ) -> str:
        """A new session for ``user`` (``kind``: the configured account's, "directory", "oidc" or
        "saml", with the ``groups`` its provider gave), for ``lifetime`` seconds (default: the
        store's); returns its token (the cookie's value)."""
        token = random_tokens.token_urlsafe(32)
        with self._lock:
            own = [key for key, session in self._sessions.items() if session.user == user]
            for key in own[: max(0, len(own) - MAX_SESSIONS_PER_USER + 1)]:
                del self._sessions[key]
            expires = time.monotonic() + min(self.lifetime, lifetime or self.lifetime)
            self._sessions[token] = Session(user, random_tokens.token_urlsafe(32), expires, kind, groups, partial)
            while len(self._sessions) > (self.max_sessions or MAX_SESSIONS):
                self._sessions.popitem(last=False)
        return token

    def get(self, token: str | None) -> Session | None:
        if not token or not self.enabled:
            return None
        with self._lock:
            session = self._sessions.get(token)
            if session is not None and session.expires < time.monotonic():
                del self._sessions[token]
                return None
            return session

    def logout(self, token: str | None) -> None:
        with self._lock:
            self._sessions.pop(token or "", None)
            self._flashes.pop(token or "", None)

    def flash(self, token: str | None, message: str) -> None:
        with self._lock:
            if token is not None and token in self._sessions:
                self._flashes[token] = message
            for stale in [key for key in self._flashes if key not in self._sessions]:
                del self._flashes[stale]

    def take_flash(self, token: str | None) -> str:
        with self._lock:
            return self._flashes.pop(token or "", "")

    @staticmethod
    def csrf_ok(session: Session | None, sent: str | None) -> bool:
        """Whether a POST carries its session's CSRF token (constant-time comparison)."""
        return session is not None and sent is not None and hmac.compare_digest(session.csrf.encode(), sent.encode())


class SearcherSessions(Sessions):
    """Searchers' sessions (the search page's sign-in): the same machinery in a store of their
    own, so that no searcher's session is an administrator's. Their passwords are checked by the
    directory (searchcrawl/access/directory.py), not here: ``check`` refuses everything; they are
    on when there is a directory to check them (``enabled``)."""

    def __init__(self, enabled: bool, lifetime: float = 8 * 3600, max_sessions: int = MAX_SEARCHER_SESSIONS) -> None:
        super().__init__(None, lifetime, max_sessions)
        self._enabled = enabled

    @property
    def enabled(self) -> bool:
        return self._enabled


class LoginThrottle:
    """Failed logins per client address, and from all addresses in the current minute: whether
    an attempt may be checked now, or in how many seconds. Bounded memory (``MAX_CLIENTS``)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._failures: OrderedDict[str, tuple[int, float]] = OrderedDict()  # address -> (count, last)
        self._minute = (0.0, 0)  # (start of the current minute, failures in it)
        self._lock = threading.Lock()

    def wait(self, client: str) -> float:
        """Seconds before ``client`` may try again (0: now)."""
        now = self.clock()
        with self._lock:
            start, failures = self._minute
            if now - start < 60 and failures >= GLOBAL_FAILURES_PER_MINUTE:
                return start + 60 - now
            count, last = self._failures.get(client, (0, now))
            if count < FREE_FAILURES:
                return 0.0
            delay = min(MAX_DELAY, 2.0 ** (count - FREE_FAILURES))
            return max(0.0, last + delay - now)

    def failed(self, client: str) -> None:
        now = self.clock()
        with self._lock:
            start, failures = self._minute
            self._minute = (start, failures + 1) if now - start < 60 else (now, 1)
            count, _last = self._failures.pop(client, (0, now))
            self._failures[client] = (count + 1, now)
            while len(self._failures) > MAX_CLIENTS:
                self._failures.popitem(last=False)

    def forgive(self, client: str) -> None:
        """Takes back one failure of ``client`` counted before its attempt could be checked (the
        search page's sign-in counts one before asking the directory, so that attempts sent at
        once cannot all pass while the count is low, and takes it back when the directory did
        not answer: that was no guess)."""
        with self._lock:
            start, failures = self._minute
            self._minute = (start, max(0, failures - 1))
            count, last = self._failures.pop(client, (0, 0.0))
            if count > 1:
                self._failures[client] = (count - 1, last)

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._failures.pop(client, None)

    def __len__(self) -> int:
        """Client addresses with failed logins remembered."""
        return len(self._failures)
