"""The directory over LDAP (ldap3): ``LdapDirectory`` binds, searches and caches; what it reads is
turned into principals by directory.py's plain functions. A module of its own so that ldap3 is
imported only where a directory is set (directory_setting.py ``directory_of``), not by every `scrapy` command."""

from __future__ import annotations

import logging
import math
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace

import ldap3
from ldap3.core.exceptions import LDAPException, LDAPSASLPrepError
from ldap3.utils.conv import escape_filter_chars

from searchcrawl.access.decision import Principals
from searchcrawl.access.directory import (
    AD_GROUP_ATTRIBUTES,
    AD_USER_ATTRIBUTES,
    FAILED_LOOKUP_SECONDS,
    GROUP_ATTRIBUTES,
    LOOKUP_TIMEOUTS,
    MAX_CACHED,
    MAX_GROUPS,
    SIDS_PER_SEARCH,
    USER_ATTRIBUTES,
    DirectoryConfig,
    DirectoryEntry,
    DirectoryUnavailable,
    binary_sids,
    dn_member_walk,
    named,
    own_uid,
    principals_of,
    sid_label,
    walk_groups,
    windows_principals,
)
from searchcrawl.access.ntfs import WELL_KNOWN, sid_bytes

logger = logging.getLogger("searchcrawl.access.directory")  # one logger for the directory's decisions


class LdapDirectory:
    """The directory over LDAP (ldap3), a connection per question (thread-safe: the web pages
    ask from threads, each question on its own connection, no lock held while the directory
    answers), principals cached per user for ``cache_seconds`` of ``clock`` (a failed lookup for
    FAILED_LOOKUP_SECONDS). Each question (a sign-in, a user's lookup) has one deadline over all
    it asks, LOOKUP_TIMEOUTS times the timeout (``_asking``)."""

    def __init__(self, config: DirectoryConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.clock = clock
        self._cache: dict[str, tuple[float, Principals]] = {}
        self._lock = threading.Lock()
        self._failing = False
        self._local = threading.local()  # the deadline of the question this thread asks

    # --- the Directory protocol ---

    def authenticate(self, user: str, password: str) -> bool:
        if not user or not password:  # an empty password would be an anonymous bind: refused
            logger.debug("directory: a sign-in refused: no user name or no password")
            return False
        with self._asking():
            try:
                with self._bound(self.config.bind_dn, self.config.bind_password, "the service account") as service:
                    entry = self._find_user(service, user)
                if entry is None:
                    logger.debug("directory: a sign-in refused: no such user")  # never the name: it may be a password
                    return False
                connection = self._open(self._connection(entry.dn, password))
                try:
                    if not self._user_bind(connection):
                        logger.debug(
                            "directory: a sign-in as %s refused: %s",
                            entry.dn,
                            (connection.result or {}).get("description", "no bind"),
                        )
                        return False
                finally:
                    connection.unbind()
            except LDAPException as exc:
                raise self._unavailable(exc) from None
        # the bind checked the password, nothing more: the principals are read as the service
        # account reads them (a user who may read only their own entry would see no group, and
        # no deny of one), afresh at their next search
        logger.debug("directory: %r authenticated as %s", user, entry.dn)
        self._forget(user)
        return True

    def cached(self, user: str) -> Principals | None:
        """``user``'s principals while the cache keeps them (a failed lookup's too), else None:
        never asks the directory, so the web application reads it without a directory thread."""
        with self._lock:
            cached = self._cache.get(user.lower())
        return cached[1] if cached is not None and cached[0] > self.clock() else None

    def principals(self, user: str) -> Principals:
        cached = self.cached(user)
        if cached is not None:
            return cached
        try:
            found = self.lookup(user)
        except DirectoryUnavailable as exc:
            return self._public_only(user, str(exc))
        except Exception as exc:  # noqa: BLE001 - whatever fails, a searcher gets public only (fail closed)
            logger.debug("directory: %r's principals failed", user, exc_info=True)
            return self._public_only(user, f"the directory at {self.config.url} could not be asked ({type(exc).__name__})")
        if self._failing:
            logger.warning("directory: answers again")
            self._failing = False
        self._remember(user, found)
        return found

    def _user_bind(self, connection: ldap3.Connection) -> bool:
        """Bind as the user; a password that ldap3 cannot send (SASLprep refuses control
        characters such as NUL) is a wrong password, not a directory that does not answer."""
        self._clamp(connection)
        try:
            return bool(connection.bind())
        except LDAPSASLPrepError:
            return False

    def _public_only(self, user: str, error: str) -> Principals:
        """Public only, with ``error``; remembered FAILED_LOOKUP_SECONDS (never longer than the
        cache keeps answers): a directory that does not answer is not asked again for ``user``
        at each search, each waiting out the deadline."""
        if not self._failing:
            logger.error("directory: %s; searchers see public documents only until it answers", error)
        else:
            logger.debug("directory: still unavailable (%s): %r gets public only", error, user)
        self._failing = True
        found = Principals(user, Principals.anonymous().entries, error=error)
        self._remember(user, found, min(FAILED_LOOKUP_SECONDS, self.config.cache_seconds))
        return found

    # --- uncached ---

    def lookup(self, user: str) -> Principals:
        """``user``'s principals asked now, through the service account; DirectoryUnavailable."""
        with self._asking():
            try:
                with self._bound(self.config.bind_dn, self.config.bind_password, "the service account") as service:
                    entry = self._find_user(service, user)
                    if entry is None:
                        logger.debug("directory: %r is no user of it: public only", user)
                        return Principals(user, Principals.anonymous().entries, error=f"{user!r} is not in the directory")
                    return self._lookup_with(service, user, entry)
            except LDAPException as exc:
                raise self._unavailable(exc) from None

    def _lookup_with(self, connection: ldap3.Connection, user: str, entry: DirectoryEntry) -> Principals:
        if self.config.active_directory:
            return self._windows_lookup(connection, user, entry)
        cut: list[str] = []
        direct = self._direct_groups(connection, entry, user, cut)
        asked: dict[str, list[DirectoryEntry]] = {}  # each group's parents asked once, for both walks

        def parents(group: DirectoryEntry) -> list[DirectoryEntry]:
            if group.dn not in asked:
                asked[group.dn] = self._parents(connection, group, cut)
            return asked[group.dn]

        memberships = walk_groups(direct, parents, cut=cut)
        by_dn = dn_member_walk(direct, parents, cut=cut)
        if not memberships and not self._search(connection, self.config.group_base, ANY_GROUP, ["cn"], size_limit=1):
            # no group, and none to see: the reader may not read groups (a directory where users
            # read only their own entry, and no service account): a deny of theirs unseen
            reader = "the service account" if self.config.bind_dn else "an anonymous bind"
            cut.append(f"the directory shows {reader} no group under {self.config.group_base}")
        found = principals_of(user, entry, memberships, by_dn, direct)
        if cut:
            found = replace(found, partial=cut[0])
            logger.debug("directory: %r's groups not all read (%s): no document with a deny token", user, cut[0])
        logger.debug("directory: %r has %d principals (%d groups)", user, len(found.entries), len(memberships))
        return found

    def _windows_lookup(self, connection: ldap3.Connection, user: str, entry: DirectoryEntry) -> Principals:
        """An Active Directory user's principals: its objectSid and tokenGroups (one base search
        on its entry: the directory computes the closure), and the groups they name."""
        self._clamp(connection)
        ok = connection.search(
            entry.dn,
            "(objectClass=*)",
            search_scope=ldap3.BASE,
            attributes=["objectSid", "sIDHistory", "tokenGroups"],
            time_limit=self._seconds,
        )
        found = [item for item in connection.response or [] if item.get("type") == "searchResEntry"] if ok else []
        raw = found[0].get("raw_attributes", {}) if found else {}
        own = binary_sids(raw.get("objectSid") or [])
        # its groups, and the SIDs it had in a domain it was migrated from (Windows' token has both)
        groups = binary_sids(raw.get("tokenGroups") or []) + binary_sids(raw.get("sIDHistory") or [])
        if not own or not groups:  # every user has a primary group: none means none readable
            raise DirectoryUnavailableLdap(f"the directory at {self.config.url} gave no objectSid or tokenGroups for {user!r}")
        named: dict[str, DirectoryEntry] = {}
        for start in range(0, len(groups), SIDS_PER_SEARCH):
            chunk = groups[start : start + SIDS_PER_SEARCH]
            query = "(|" + "".join(f"(objectSid={_sid_filter(sid)})" for sid in chunk) + ")"
            base = self.config.group_base or self.config.user_base
            for group in self._search(connection, base, query, AD_GROUP_ATTRIBUTES, []):
                sid = next(iter(binary_sids(group.raw_sids)), "")
                if sid:
                    named[sid] = group
        found_principals = windows_principals(user, entry, own[:1] + groups, named)
        logger.debug("directory: %r has %d principals (%d SIDs)", user, len(found_principals.entries), len(groups) + 1)
        return found_principals

    def sid_names(self, sids: Iterable[str]) -> dict[str, str]:
        """Names of SIDs, for `scrapy explain-access` (``DOMAIN``-less sAMAccountName or cn;
        well-known SIDs by their names); {} when the directory does not answer."""
        wanted = sorted(set(sids))
        names = {sid: WELL_KNOWN[sid] for sid in wanted if sid in WELL_KNOWN}
        asked = [sid for sid in wanted if sid not in names]
        if not asked or not self.config.active_directory:
            return names
        try:
            with self._asking(), self._bound(self.config.bind_dn, self.config.bind_password, "the service account") as service:
                for start in range(0, len(asked), SIDS_PER_SEARCH):
                    query = (
                        "(|" + "".join(f"(objectSid={_sid_filter(sid)})" for sid in asked[start : start + SIDS_PER_SEARCH]) + ")"
                    )
                    for found in self._search(service, self.config.user_base, query, [*AD_GROUP_ATTRIBUTES], []):
                        for sid in binary_sids(found.raw_sids):
                            names[sid] = sid_label(sid, found)
        except (LDAPException, ValueError) as exc:
            logger.debug("directory: SIDs not named (%s)", type(exc).__name__)
        return names

    def _remember(self, user: str, principals: Principals, seconds: float | None = None) -> None:
        with self._lock:
            if len(self._cache) >= MAX_CACHED:
                now = self.clock()
                for key in [key for key, (expires, _p) in self._cache.items() if expires <= now] or list(self._cache)[:1]:
                    del self._cache[key]
            lifetime = self.config.cache_seconds if seconds is None else seconds
            self._cache[user.lower()] = (self.clock() + lifetime, principals)

    def _forget(self, user: str) -> None:
        with self._lock:
            self._cache.pop(user.lower(), None)

    def _unavailable(self, exc: LDAPException) -> DirectoryUnavailable:
        if isinstance(exc, DirectoryUnavailableLdap):
            return DirectoryUnavailable(str(exc))
        deadline = getattr(self._local, "deadline", None)
        if deadline is not None and deadline.passed:
            return DirectoryUnavailable(f"the directory at {self.config.url} did not answer within {deadline.seconds:g} s")
        return DirectoryUnavailable(f"the directory at {self.config.url} did not answer ({type(exc).__name__})")

    # --- the deadline ---

    @contextmanager
    def _asking(self) -> Iterator[None]:
        """One deadline over everything this thread asks in the block (the binds, the user's
        entry, the groups, the nested groups): a directory that answers each question just within
        the timeout would otherwise hold a search for as many timeouts as it asks questions."""
        self._local.deadline = _Deadline(LOOKUP_TIMEOUTS * self.config.timeout, self.config.url, self.clock)
        try:
            yield
        finally:
            self._local.deadline = None

    def _clamp(self, connection: ldap3.Connection | None = None) -> float:
        """Seconds the next answer may take: the timeout, or what is left of the deadline (the
        connection's socket waits that long); DirectoryUnavailableLdap once it has passed."""
        deadline = getattr(self._local, "deadline", None)
        seconds = self.config.timeout if deadline is None else min(self.config.timeout, deadline.left())
        socket = getattr(connection, "socket", None) if connection is not None else None
        if socket is not None:
            socket.settimeout(seconds)
        return seconds

    # --- LDAP ---

    @property
    def _seconds(self) -> int:
        return max(1, math.ceil(self.config.timeout))  # ldap3 packs it as a whole number

    def _server(self) -> ldap3.Server:
        tls = ldap3.Tls(validate=ssl.CERT_REQUIRED, ca_certs_file=self.config.ca_file or None)
        return ldap3.Server(self.config.url, connect_timeout=self._clamp(), tls=tls, get_info=ldap3.NONE)

    def _connection(self, dn: str, password: str) -> ldap3.Connection:
        """A connection for ``dn`` (``_open`` opens it)."""
        connection = ldap3.Connection(
            self._server(),
            user=dn or None,
            password=password or None,
            receive_timeout=self._seconds,
            raise_exceptions=False,
            read_only=True,
            # a referral (a searchResRef, or a referral result) is not followed: ldap3 would bind
            # to the host it names, any host, with these credentials (the service account's, or
            # the user's password); the search result 10 (referral) is then a refused search
            auto_referrals=False,
        )
        return connection

    def _open(self, connection: ldap3.Connection) -> ldap3.Connection:
        """``connection`` open, StartTLS done where set, within the deadline; not bound yet."""
        connection.open()
        if self.config.start_tls:
            self._clamp(connection)
            if not connection.start_tls():
                raise DirectoryUnavailableLdap(f"the directory at {self.config.url} refused StartTLS")
        return connection

    def _bound(self, dn: str, password: str, who: str) -> _Bound:
        connection = self._open(self._connection(dn, password))
        self._clamp(connection)
        return _Bound(connection, who, self.config.url)

    def _find_user(self, connection: ldap3.Connection, user: str) -> DirectoryEntry | None:
        """The one entry named ``user`` (``named``: the directory's match is not enough), or None."""
        asked = user.rsplit("\\", 1)[-1] if self.config.active_directory else user  # DOMAIN\\alice: named() checks DOMAIN
        query = self.config.filter.replace("{user}", escape_filter_chars(asked))
        attributes = AD_USER_ATTRIBUTES if self.config.active_directory else USER_ATTRIBUTES
        found = self._search(connection, self.config.user_base, query, [*dict.fromkeys([*attributes, *self.config.compared])])
        if len(found) != 1:  # two entries for one name: neither
            return None
        if not named(found[0], user, self.config.compared, self.config.active_directory):
            logger.debug(
                "directory: %s was found for another name (no %s equal to it): no one",
                found[0].dn,
                "/".join(self.config.compared),
            )
            return None
        return found[0]

    def _direct_groups(
        self, connection: ldap3.Connection, user: DirectoryEntry, name: str, cut: list[str]
    ) -> list[tuple[DirectoryEntry, str]]:
        dn = escape_filter_chars(user.dn)
        asks = [
            ("member", f"(member={dn})"),
            ("uniqueMember", f"(uniqueMember={dn})"),
        ]
        uid = own_uid(user, name)  # of several uids the one asked: the others may be other users'
        if uid:
            asks.append(("memberUid", f"(&(objectClass=posixGroup)(memberUid={escape_filter_chars(uid)}))"))
        elif user.first("uid"):
            cut.append(f"{user.dn} has several uids, none the name asked: its posixGroups by memberUid not read")
        if user.first("gidNumber"):
            asks.append(
                ("primary group", f"(&(objectClass=posixGroup)(gidNumber={escape_filter_chars(user.first('gidNumber'))}))")
            )
        found: list[tuple[DirectoryEntry, str]] = []
        for how, query in asks:
            found.extend((group, how) for group in self._search(connection, self.config.group_base, query, GROUP_ATTRIBUTES, cut))
        return found

    def _parents(self, connection: ldap3.Connection, group: DirectoryEntry, cut: list[str]) -> list[DirectoryEntry]:
        dn = escape_filter_chars(group.dn)
        return self._search(connection, self.config.group_base, f"(|(member={dn})(uniqueMember={dn}))", GROUP_ATTRIBUTES, cut)

    def _search(
        self,
        connection: ldap3.Connection,
        base: str,
        query: str,
        attributes: list[str],
        cut: list[str] | None = None,
        size_limit: int = MAX_GROUPS,
    ) -> list[DirectoryEntry]:
        seconds = max(1, math.ceil(self._clamp(connection)))  # the server's own limit: whole seconds
        if not connection.search(base, query, attributes=attributes, size_limit=size_limit, time_limit=seconds):
            if connection.result.get("result") not in (0, 4, 32):  # none found, size limit, no such base
                raise DirectoryUnavailableLdap(
                    f"the directory at {self.config.url} refused a search ({connection.result.get('description')})"
                )
            if connection.result.get("result") == 4 and cut is not None:
                cut.append(f"a search of groups stopped at its size limit ({MAX_GROUPS})")
        if cut is not None and any(item.get("type") == "searchResRef" for item in connection.response or []):
            # a continuation reference: part of the answer is held by another server, not asked
            # (a referral is never followed): the groups held there are not read
            cut.append(f"a search of groups under {base} was referred to another server (referrals are not followed)")
        return self._entries(connection)

    @staticmethod
    def _entries(connection: ldap3.Connection) -> list[DirectoryEntry]:
        return [
            DirectoryEntry.of(item["dn"], item.get("attributes", {}), item.get("raw_attributes", {}))
            for item in connection.response or []
            if item.get("type") == "searchResEntry"
        ]


def _sid_filter(sid: str) -> str:
    """A SID as an LDAP filter value (its bytes escaped)."""
    return "".join(f"\\{byte:02x}" for byte in sid_bytes(sid))


ANY_GROUP = "(|(objectClass=groupOfNames)(objectClass=groupOfUniqueNames)(objectClass=posixGroup))"


class DirectoryUnavailableLdap(LDAPException):
    """An answer that is no answer (a refused service bind or search): its message is shown."""


class _Deadline:
    """The end of one question to the directory, ``seconds`` of ``clock`` from now."""

    def __init__(self, seconds: float, url: str, clock: Callable[[], float]) -> None:
        self.seconds, self.url, self.clock = seconds, url, clock
        self.end = clock() + seconds

    @property
    def passed(self) -> bool:
        return self.clock() >= self.end

    def left(self) -> float:
        """Seconds left; DirectoryUnavailableLdap when none are."""
        left = self.end - self.clock()
        if left <= 0:
            raise DirectoryUnavailableLdap(f"the directory at {self.url} did not answer within {self.seconds:g} s")
        return left


class _Bound:
    """A connection bound as ``who`` for a ``with`` block (unbound after)."""

    def __init__(self, connection: ldap3.Connection, who: str, url: str) -> None:
        self.connection, self.who, self.url = connection, who, url

    def __enter__(self) -> ldap3.Connection:
        if not self.connection.bind():
            description = self.connection.result.get("description") if self.connection.result else "no answer"
            raise DirectoryUnavailableLdap(f"the directory at {self.url} refused {self.who} ({description})")
        return self.connection

    def __exit__(self, *exc: object) -> None:
        try:
            self.connection.unbind()
        except LDAPException:
            pass
