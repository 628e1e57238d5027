"""What the single sign-on protocols share (issue 79: sign_on/oidc.py, sign_on/saml.py), without HTTP: the sign-ins
waiting for the provider's answer, each bound to the browser that started it and taken once; who
the provider signed in; their principals when they come from the provider's groups.

A pending sign-in is kept on the server, under a random key the browser holds in a cookie of its
own (the protocol's cookie, set when it starts), never more than ``MAX_PENDING`` at once (the
oldest dropped first) nor longer than ``PENDING_SECONDS``; the provider's answer is taken only for
the key that browser's cookie names, once, whatever the answer. So a forged, replayed or stray
answer, or one brought to another browser (a login CSRF), signs nobody in.
"""

from __future__ import annotations

import secrets as random_tokens
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.access.tokens import AccessError, normal_token
from searchcrawl.system.translations import N_, gettext

PENDING_SECONDS = 600  # a sign-in the provider did not answer in this long is forgotten
MAX_PENDING = 10_000  # pending sign-ins kept at once, per protocol
MAX_GROUPS = 500  # of one sign-in


class SignOnError(Exception):
    """The provider's answer cannot be believed, or the provider cannot be reached: one line, never a token.

    ``message`` is a message of the catalogues (marked ``N_`` where raised) and ``variables`` the
    values in it (a claim's name, a library's exception's name: never translated): ``str()`` is the
    English line (the logs'), ``shown()`` the line in the page's language."""

    def __init__(self, message: str, **variables: Any) -> None:
        super().__init__(message % variables)
        self.message = message
        self.variables = variables

    def shown(self) -> str:
        """The line in the current language (the page's): a ``Wording`` among the values with it."""
        return gettext(
            self.message,
            **{name: gettext(value) if isinstance(value, Wording) else value for name, value in self.variables.items()},
        )


class Wording(str):
    """A word of ours put into a SignOnError's message (``Wording(N_("Kerberos principal"))``),
    translated with it; a claim's or an attribute's name is a value and stays as configured."""

    __slots__ = ()


@dataclass(frozen=True)
class SignedOn:
    """Who the provider signed in: the user's name, the groups it gives them (``partial``: why
    they may be fewer than the provider holds), what for ("search" or "admin") and the search to
    go back to."""

    user: str
    groups: tuple[str, ...]
    purpose: str
    back: str
    partial: str = ""


MAX_PER_OWNER = 20  # pending sign-ins of one client address: its own oldest goes first


T = TypeVar("T")


def new_key() -> str:
    """A pending sign-in's key: 256 random bits."""
    return random_tokens.token_urlsafe(32)


class PendingSignIns(Generic[T]):
    """Sign-ins waiting for their answer, by the key their browser's cookie holds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._pending: OrderedDict[str, tuple[float, T, str]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, pending: T, key: str | None = None, owner: str = "") -> str:
        """Keep ``pending`` under ``key`` (a new one by default: ``new_key``) for ``owner`` (the
        client's address: at most MAX_PER_OWNER each, so one client cannot push the others' out);
        its key, for the browser's cookie."""
        key = key or new_key()
        with self._lock:
            self._forget_old()
            own = [held for held, (_created, _pending, who) in self._pending.items() if who == owner]
            for held in own[: max(0, len(own) - MAX_PER_OWNER + 1)]:
                del self._pending[held]
            self._pending[key] = (self.clock(), pending, owner)
            while len(self._pending) > MAX_PENDING:
                self._pending.popitem(last=False)
        return key

    def take(self, key: str | None) -> T:
        """The sign-in of ``key`` (the browser's cookie), taken once; SignOnError when none waits."""
        with self._lock:
            self._forget_old()
            found = self._pending.pop(key or "", None)
        if found is None:
            raise SignOnError(N_("no sign-in of this browser is waiting (it took too long, or was not started here)"))
        return found[1]

    def _forget_old(self) -> None:
        moment = self.clock()
        for key in [key for key, (created, _pending, _owner) in self._pending.items() if moment - created > PENDING_SECONDS]:
            del self._pending[key]

    def __len__(self) -> int:
        return len(self._pending)


def group_names(values: object) -> tuple[tuple[str, ...], str]:
    """A provider's groups as names (texts, each once, at most MAX_GROUPS), and why they may be
    fewer than the provider holds ("" when they are all there): a deny by a group left out must
    still refuse (Principals' ``partial``: fail closed)."""
    if values is None:
        return (), ""
    if not isinstance(values, list | tuple):
        return (), "the provider's groups are not a list"
    names = tuple(dict.fromkeys(value for value in values[:MAX_GROUPS] if isinstance(value, str) and value))
    kept = tuple(name for name in names if _is_token(f"group:{name}"))
    odd = any(not isinstance(value, str) or not value for value in values)  # a number, an empty name: left out
    if odd or len(values) > MAX_GROUPS or len(kept) != len({value for value in values if isinstance(value, str) and value}):
        return kept, f"some of the provider's {len(values)} groups were left out"
    return kept, ""


def _is_token(text: str) -> bool:
    try:
        normal_token(text)
    except AccessError:
        return False
    return True


def check_user(user: object, what: str) -> str:
    """The provider's user name, when it is one: a text that is a principal as it is, not one an
    index would read as another user's (``alice@evil.example`` and ``EVIL\\alice`` are read as
    ``alice``)."""
    if not isinstance(user, str) or not user.strip() or len(user) > 256:
        raise SignOnError(N_("the provider's answer has no %(what)s"), what=what)
    name = user.strip()
    try:
        same = normal_token(f"user:{name}") == f"user:{name.lower()}"
    except AccessError:
        same = False
    if not same:
        raise SignOnError(
            N_("the provider's %(what)s is no plain user name (a domain or realm in it, a control character)"), what=what
        )
    return name


def provider_principals(user: str, groups: tuple[str, ...], source: str, partial: str = "") -> Principals:
    """``user``'s principals from the provider alone: ``user:NAME`` and a ``group:`` per group (a
    value that is no token, left out); ``partial`` when the groups may be fewer than the
    provider's (a document that any group denies is then refused)."""
    entries = [Principal(f"user:{user}", f"{source}: the signed-in user")]
    entries += [Principal(f"group:{group}", f"{source}: a group the provider gives") for group in groups]
    return Principals.of(user, [entry for entry in entries if _is_token(entry.token)], partial=partial)
