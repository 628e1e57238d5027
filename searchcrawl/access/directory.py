"""The searchers' directory (LDAP): who a searcher is (a password checked by binding as them),
and their principals, the tokens a search is trimmed to (decision.py).

A user's principals: ``user:<uid>`` and ``user:<DN>``, ``uid:<uidNumber>``, ``gid:<gidNumber>``
(the primary group), and for each group the user is in, directly or through groups in groups:
``group:<DN>``, ``group:<cn>`` and, for a posixGroup, ``gid:<gidNumber>``. Direct groups are the
groupOfNames with the user's DN as a ``member``, the groupOfUniqueNames with it as a
``uniqueMember``, the posixGroups with the uid as a ``memberUid`` and the posixGroup of the
user's primary gidNumber; a group is in another when its DN is a member or uniqueMember there,
followed breadth-first (``walk_groups``: at most MAX_GROUP_DEPTH steps up and MAX_GROUPS groups,
each group once, so a cycle ends). Each principal keeps where it came from, shown by `scrapy
explain-access`.

Fail closed: a directory that does not answer gives a searcher only ``public`` (with the reason,
logged at ERROR once until it answers again), never an error page and never the last principals
seen long ago. Answers are cached for SEARCHCRAWL_PRINCIPALS_CACHE_SECONDS: a user taken out of a
group still finds its documents until then.

Active Directory (``SEARCHCRAWL_LDAP_KIND = "active_directory"``): a user's principals are
``user:<sAMAccountName>``, ``user:<DN>``, ``sid:<objectSid>`` and a ``sid:`` for each SID of its
``tokenGroups`` (the directory's own closure: its groups, nested groups, primary group and the
domain's built-in groups, as Windows builds a logon token), with ``group:<DN>`` and
``group:<name>`` for each of those groups the group base holds; and the SIDs every domain user's
network logon carries (Everyone, NETWORK, Authenticated Users, This Organization), so a searcher
is granted exactly what Windows would grant them opening the file from the share. A directory
that gives no tokenGroups (none readable by the service account) answers nothing: public only.

The walk and the principals of entries are plain functions (``user_principals``,
``group_principals``, ``walk_groups``), tested without a server; ``LdapDirectory`` asks the
server (ldap3) and caches.
"""

from __future__ import annotations

import logging
import math
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import ldap3
from ldap3.core.exceptions import LDAPException, LDAPSASLPrepError
from ldap3.utils.conv import escape_filter_chars
from scrapy.settings import BaseSettings

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.access.ntfs import NETWORK_LOGON_SIDS, WELL_KNOWN, sid_bytes, sid_text
from searchcrawl.access.tokens import AccessError, normal_token
from searchcrawl.ops.secrets import LDAP_BIND_PASSWORD, secret

logger = logging.getLogger(__name__)

MAX_GROUP_DEPTH = 8  # groups in groups followed this many steps up from the user's own
MAX_GROUPS = 1000  # and this many groups at most (a searcher in more gets the first found)
LOOKUP_TIMEOUTS = 3  # a user's whole group walk takes at most this many SEARCHCRAWL_LDAP_TIMEOUTs
MAX_CACHED = 10_000  # searchers whose principals are cached at once
USER_ATTRIBUTES = ["uid", "uidNumber", "gidNumber"]
GROUP_ATTRIBUTES = ["cn", "gidNumber", "objectClass"]
AD_USER_ATTRIBUTES = ["sAMAccountName"]
AD_GROUP_ATTRIBUTES = ["cn", "sAMAccountName", "objectSid"]
AD_USER_FILTER = "(&(objectClass=user)(|(sAMAccountName={user})(userPrincipalName={user})))"
SIDS_PER_SEARCH = 100  # a group search names this many SIDs at most


class DirectoryUnavailable(Exception):
    """The directory did not answer (or refused the service account): the message says so for a
    user or an administrator, naming no secret."""


class Directory(Protocol):
    """What the web pages and the commands ask of a directory."""

    def authenticate(self, user: str, password: str) -> bool:
        """Whether ``password`` is ``user``'s (a bind as the user); False for a wrong password or
        an unknown user; DirectoryUnavailable when the directory does not answer."""
        ...

    def principals(self, user: str) -> Principals:
        """``user``'s principals (cached); never raises: only ``public``, with ``error``, when the
        directory does not answer."""
        ...

    def sid_names(self, sids: Iterable[str]) -> dict[str, str]:
        """Names of Windows SIDs (explanations); those it cannot name are left out."""
        ...


@dataclass(frozen=True)
class Entry:
    """A directory entry: its DN and attributes (names lower-cased, values as strings)."""

    dn: str
    attributes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    raw_sids: tuple[bytes, ...] = ()  # its objectSid as the directory sent it (Active Directory)

    @classmethod
    def of(cls, dn: str, attributes: Mapping[str, Any], raw: Mapping[str, Any] | None = None) -> Entry:
        values: dict[str, tuple[str, ...]] = {}
        for name, value in attributes.items():
            if name.lower() == "objectsid":
                continue  # binary: read from raw
            items = value if isinstance(value, list | tuple) else [value]
            values[name.lower()] = tuple(str(item) for item in items if item not in (None, b"", ""))
        sids = next((tuple(v) for k, v in (raw or {}).items() if k.lower() == "objectsid"), ())
        return cls(dn, values, tuple(bytes(sid) for sid in sids))

    def values(self, name: str) -> tuple[str, ...]:
        return self.attributes.get(name.lower(), ())

    def first(self, name: str) -> str:
        return next(iter(self.values(name)), "")


@dataclass(frozen=True)
class Membership:
    """A group the user is in: ``path`` the DNs from this group down to the user's own group,
    ``how`` the user is in that one ("member", "uniqueMember", "memberUid", "primary group")."""

    group: Entry
    path: tuple[str, ...]
    how: str


def rdn(dn: str) -> str:
    """The first part of a DN (``cn=finance`` of ``cn=finance,ou=groups,...``), for origins."""
    return dn.split(",", 1)[0]


def path_text(membership: Membership, user_dn: str) -> str:
    """ "memberOf path: cn=finance <- cn=accounting <- uid=alice (member)"."""
    steps = [rdn(dn) for dn in membership.path] + [rdn(user_dn)]
    return f"memberOf path: {' <- '.join(steps)} ({membership.how})"


def user_principals(user: Entry, name: str) -> list[Principal]:
    """The principals of the user's own entry: its uid (else the name signed in with), its DN,
    its uidNumber and its primary gidNumber."""
    found = [
        Principal(f"user:{user.first('uid') or name}", f"uid of {user.dn}"),
        Principal(f"user:{user.dn}", f"DN of the directory entry of {name}"),
    ]
    if user.first("uidNumber"):
        found.append(Principal(f"uid:{user.first('uidNumber')}", f"uidNumber of {user.dn}"))
    if user.first("gidNumber"):
        found.append(Principal(f"gid:{user.first('gidNumber')}", f"gidNumber (primary group) of {user.dn}"))
    return found


def group_principals(membership: Membership, user_dn: str) -> list[Principal]:
    """A group's principals: its DN, each cn, and a posixGroup's gidNumber, with the path."""
    group, path = membership.group, path_text(membership, user_dn)
    found = [Principal(f"group:{group.dn}", path)]
    found.extend(Principal(f"group:{cn}", f"cn of {group.dn}; {path}") for cn in group.values("cn"))
    if "posixgroup" in {kind.lower() for kind in group.values("objectClass")} and group.first("gidNumber"):
        found.append(Principal(f"gid:{group.first('gidNumber')}", f"gidNumber of posixGroup {group.dn}; {path}"))
    return found


def _dn_key(dn: str) -> str:
    return "".join(dn.lower().split())


def walk_groups(
    direct: Iterable[tuple[Entry, str]],
    parents_of: Callable[[Entry], list[Entry]],
    max_depth: int = MAX_GROUP_DEPTH,
    max_groups: int = MAX_GROUPS,
    cut: list[str] | None = None,
) -> list[Membership]:
    """The user's groups, breadth-first: ``direct`` (a group, and how the user is in it), then
    the groups each is a member of (``parents_of``), up to ``max_depth`` steps and ``max_groups``
    groups, each group once (the first, shortest, path to it): a cycle ends there. Where a bound
    left a group out, ``cut`` gets why (the principals are then partial: a deny token of a group
    left out would not be seen, decision.py)."""
    found: list[Membership] = []
    seen: set[str] = set()
    queue: deque[tuple[Membership, int]] = deque()
    cut = [] if cut is None else cut
    for group, how in direct:
        if _dn_key(group.dn) in seen:
            continue
        if len(found) >= max_groups:
            cut.append(f"more than {max_groups} groups")
            break
        seen.add(_dn_key(group.dn))
        membership = Membership(group, (group.dn,), how)
        found.append(membership)
        queue.append((membership, 0))
    while queue:
        membership, depth = queue.popleft()
        for parent in parents_of(membership.group):
            if _dn_key(parent.dn) in seen:
                continue
            if depth >= max_depth or len(found) >= max_groups:
                cut.append(
                    f"groups in groups deeper than {max_depth}" if depth >= max_depth else f"more than {max_groups} groups"
                )
                return found
            seen.add(_dn_key(parent.dn))
            above = Membership(parent, (parent.dn, *membership.path), membership.how)
            found.append(above)
            queue.append((above, depth + 1))
    return found


def principals_of(name: str, user: Entry, memberships: Iterable[Membership]) -> Principals:
    """The searcher ``name``'s principals from their entry and groups (a value that is no token,
    an empty cn say, is left out: DEBUG)."""
    entries = user_principals(user, name)
    for membership in memberships:
        entries.extend(group_principals(membership, user.dn))
    return Principals.of(user.first("uid") or name, tokens_only(entries, name))


def tokens_only(entries: Iterable[Principal], name: str) -> list[Principal]:
    """The principals whose values are tokens (an empty cn, say, is not: left out, DEBUG)."""
    kept = []
    for entry in entries:
        try:
            normal_token(entry.token)
        except AccessError as exc:
            logger.debug("directory: a principal of %s left out: %s", name, exc)
            continue
        kept.append(entry)
    return kept


def windows_principals(name: str, user: Entry, sids: list[str], groups: Mapping[str, Entry]) -> Principals:
    """An Active Directory user's principals (the module's docstring): ``sids`` its own SID
    first, then its tokenGroups; ``groups`` the group entries found for them, by SID."""
    account = user.first("sAMAccountName") or name
    entries = [
        Principal(f"user:{account}", f"sAMAccountName of {user.dn}"),
        Principal(f"user:{user.dn}", f"DN of the directory entry of {name}"),
    ]
    for number, sid in enumerate(sids):
        group = groups.get(sid)
        label = sid_label(sid, group)
        origin = f"objectSid of {user.dn}" if number == 0 else f"tokenGroups of {rdn(user.dn)}: {label}"
        entries.append(Principal(f"sid:{sid}", origin))
        if group is not None:
            entries.append(Principal(f"group:{group.dn}", f"tokenGroups of {rdn(user.dn)}: {sid}"))
            for cn in (*group.values("sAMAccountName"), *group.values("cn")):
                entries.append(Principal(f"group:{cn}", f"name of {group.dn} ({sid})"))
    for sid in NETWORK_LOGON_SIDS:
        entries.append(Principal(f"sid:{sid}", f"{WELL_KNOWN[sid]}: every domain user's network logon"))
    return Principals.of(account, tokens_only(entries, name))


def sid_label(sid: str, group: Entry | None) -> str:
    """A SID's name for origins and explanations: the group's name, a well-known name, or the SID."""
    if group is not None:
        return group.first("sAMAccountName") or group.first("cn") or rdn(group.dn)
    return WELL_KNOWN.get(sid, sid)


def binary_sids(values: Iterable[bytes]) -> list[str]:
    """Binary SIDs (objectSid, tokenGroups) as text; a value that is no SID is left out."""
    found = []
    for value in values:
        try:
            sid, length = sid_text(bytes(value))
        except ValueError:
            logger.debug("directory: a SID that does not parse left out")
            continue
        if length == len(value):
            found.append(sid)
    return found


@dataclass(frozen=True)
class DirectoryConfig:
    """The SEARCHCRAWL_LDAP_* settings (see searchcrawl/settings.py)."""

    url: str
    user_base: str
    group_base: str = ""
    user_filter: str = ""  # "": (uid={user}), or AD_USER_FILTER on Active Directory
    bind_dn: str = ""
    bind_password: str = field(default="", repr=False)
    cache_seconds: float = 300.0
    timeout: float = 5.0
    start_tls: bool = False
    ca_file: str = ""
    kind: str = "posix"  # "active_directory": sAMAccountName, objectSid and tokenGroups

    @property
    def active_directory(self) -> bool:
        return self.kind == "active_directory"

    @property
    def filter(self) -> str:
        """The user filter: the setting's, else the kind's."""
        return self.user_filter or (AD_USER_FILTER if self.active_directory else "(uid={user})")

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DirectoryConfig:
        kind = settings.get("SEARCHCRAWL_LDAP_KIND") or "posix"
        if kind not in ("posix", "active_directory"):
            raise ValueError(f"SEARCHCRAWL_LDAP_KIND: expected 'posix' or 'active_directory', got {kind!r}")
        return cls(
            url=settings.get("SEARCHCRAWL_LDAP_URL", ""),
            user_base=settings.get("SEARCHCRAWL_LDAP_USER_BASE", ""),
            group_base=settings.get("SEARCHCRAWL_LDAP_GROUP_BASE", "") or settings.get("SEARCHCRAWL_LDAP_USER_BASE", ""),
            user_filter=settings.get("SEARCHCRAWL_LDAP_USER_FILTER") or "",
            bind_dn=settings.get("SEARCHCRAWL_LDAP_BIND_DN", ""),
            bind_password=secret(LDAP_BIND_PASSWORD) or "",
            cache_seconds=settings.getfloat("SEARCHCRAWL_PRINCIPALS_CACHE_SECONDS", 300.0),
            timeout=settings.getfloat("SEARCHCRAWL_LDAP_TIMEOUT", 5.0),
            start_tls=settings.getbool("SEARCHCRAWL_LDAP_START_TLS", False),
            ca_file=settings.get("SEARCHCRAWL_LDAP_CA_FILE", ""),
            kind=kind,
        )


class LdapDirectory:
    """The directory over LDAP (ldap3), a connection per question (thread-safe: the web pages
    ask from threads), principals cached per user for ``cache_seconds`` of ``clock``."""

    def __init__(self, config: DirectoryConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.clock = clock
        self._cache: dict[str, tuple[float, Principals]] = {}
        self._lock = threading.Lock()
        self._failing = False

    # --- the Directory protocol ---

    def authenticate(self, user: str, password: str) -> bool:
        if not user or not password:  # an empty password would be an anonymous bind: refused
            logger.debug("directory: a sign-in refused: no user name or no password")
            return False
        try:
            with self._bound(self.config.bind_dn, self.config.bind_password, "the service account") as service:
                entry = self._find_user(service, user)
            if entry is None:
                logger.debug("directory: a sign-in refused: no such user")  # never the name: it may be a password
                return False
            connection = self._connection(entry.dn, password)
            try:
                if not self._user_bind(connection):
                    logger.debug(
                        "directory: a sign-in as %s refused: %s",
                        entry.dn,
                        (connection.result or {}).get("description", "no bind"),
                    )
                    return False
                logger.debug("directory: %r authenticated as %s", user, entry.dn)
                try:  # their principals, asked as them now: the search that follows needs them
                    self._remember(user, self._lookup_with(connection, user, entry))
                except LDAPException as exc:
                    logger.debug("directory: %r's principals not read as them (%s): asked later", user, exc)
                return True
            finally:
                connection.unbind()
        except LDAPException as exc:
            raise self._unavailable(exc) from None

    def principals(self, user: str) -> Principals:
        key = user.lower()
        now = self.clock()
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
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

    @staticmethod
    def _user_bind(connection: ldap3.Connection) -> bool:
        """Bind as the user; a password that ldap3 cannot send (SASLprep refuses control
        characters such as NUL) is a wrong password, not a directory that does not answer."""
        try:
            return bool(connection.bind())
        except LDAPSASLPrepError:
            return False

    def _public_only(self, user: str, error: str) -> Principals:
        if not self._failing:
            logger.error("directory: %s; searchers see public documents only until it answers", error)
        else:
            logger.debug("directory: still unavailable (%s): %r gets public only", error, user)
        self._failing = True
        return Principals(user, Principals.anonymous().entries, error=error)

    # --- uncached ---

    def lookup(self, user: str) -> Principals:
        """``user``'s principals asked now, through the service account; DirectoryUnavailable."""
        try:
            with self._bound(self.config.bind_dn, self.config.bind_password, "the service account") as service:
                entry = self._find_user(service, user)
                if entry is None:
                    logger.debug("directory: %r is no user of it: public only", user)
                    return Principals(user, Principals.anonymous().entries, error=f"{user!r} is not in the directory")
                return self._lookup_with(service, user, entry)
        except LDAPException as exc:
            raise self._unavailable(exc) from None

    def _lookup_with(self, connection: ldap3.Connection, user: str, entry: Entry) -> Principals:
        if self.config.active_directory:
            return self._windows_lookup(connection, user, entry)
        # a directory that answers each search just within the timeout would hold a search page
        # for hours over a large group graph: the whole walk has LOOKUP_TIMEOUTS timeouts
        budget = LOOKUP_TIMEOUTS * self.config.timeout
        deadline = self.clock() + budget
        cut: list[str] = []
        direct = self._direct_groups(connection, entry, cut)

        def parents_of(group: Entry) -> list[Entry]:
            if self.clock() > deadline:
                raise DirectoryUnavailableLdap(f"the directory at {self.config.url} took over {budget:g} s for {user!r}'s groups")
            return self._parents(connection, group, cut)

        memberships = walk_groups(direct, parents_of, cut=cut)
        found = principals_of(user, entry, memberships)
        if cut:
            found = replace(found, partial=cut[0])
            logger.debug("directory: %r's groups not all read (%s): no document with a deny token", user, cut[0])
        logger.debug("directory: %r has %d principals (%d groups)", user, len(found.entries), len(memberships))
        return found

    def _windows_lookup(self, connection: ldap3.Connection, user: str, entry: Entry) -> Principals:
        """An Active Directory user's principals: its objectSid and tokenGroups (one base search
        on its entry: the directory computes the closure), and the groups they name."""
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
        named: dict[str, Entry] = {}
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
            with self._bound(self.config.bind_dn, self.config.bind_password, "the service account") as service:
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

    def _remember(self, user: str, principals: Principals) -> None:
        with self._lock:
            if len(self._cache) >= MAX_CACHED:
                now = self.clock()
                for key in [key for key, (expires, _p) in self._cache.items() if expires <= now] or list(self._cache)[:1]:
                    del self._cache[key]
            self._cache[user.lower()] = (self.clock() + self.config.cache_seconds, principals)

    def _unavailable(self, exc: LDAPException) -> DirectoryUnavailable:
        if isinstance(exc, DirectoryUnavailableLdap):
            return DirectoryUnavailable(str(exc))
        return DirectoryUnavailable(f"the directory at {self.config.url} did not answer ({type(exc).__name__})")

    # --- LDAP ---

    @property
    def _seconds(self) -> int:
        return max(1, math.ceil(self.config.timeout))  # ldap3 packs it as a whole number

    def _server(self) -> ldap3.Server:
        tls = ldap3.Tls(validate=ssl.CERT_REQUIRED, ca_certs_file=self.config.ca_file or None)
        return ldap3.Server(self.config.url, connect_timeout=self._seconds, tls=tls, get_info=ldap3.NONE)

    def _connection(self, dn: str, password: str) -> ldap3.Connection:
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
        if self.config.start_tls:
            connection.open()
            if not connection.start_tls():
                raise DirectoryUnavailableLdap(f"the directory at {self.config.url} refused StartTLS")
        return connection

    def _bound(self, dn: str, password: str, who: str) -> _Bound:
        return _Bound(self._connection(dn, password), who, self.config.url)

    def _find_user(self, connection: ldap3.Connection, user: str) -> Entry | None:
        if self.config.active_directory:
            user = user.rsplit("\\", 1)[-1]  # DOMAIN\\alice: one domain per installation
        query = self.config.filter.replace("{user}", escape_filter_chars(user))
        attributes = AD_USER_ATTRIBUTES if self.config.active_directory else USER_ATTRIBUTES
        found = self._search(connection, self.config.user_base, query, attributes)
        return found[0] if len(found) == 1 else None  # two entries for one name: neither

    def _direct_groups(self, connection: ldap3.Connection, user: Entry, cut: list[str]) -> list[tuple[Entry, str]]:
        dn = escape_filter_chars(user.dn)
        asks = [
            ("member", f"(member={dn})"),
            ("uniqueMember", f"(uniqueMember={dn})"),
        ]
        if user.first("uid"):
            asks.append(("memberUid", f"(&(objectClass=posixGroup)(memberUid={escape_filter_chars(user.first('uid'))}))"))
        if user.first("gidNumber"):
            asks.append(
                ("primary group", f"(&(objectClass=posixGroup)(gidNumber={escape_filter_chars(user.first('gidNumber'))}))")
            )
        found: list[tuple[Entry, str]] = []
        for how, query in asks:
            found.extend((group, how) for group in self._search(connection, self.config.group_base, query, GROUP_ATTRIBUTES, cut))
        return found

    def _parents(self, connection: ldap3.Connection, group: Entry, cut: list[str]) -> list[Entry]:
        dn = escape_filter_chars(group.dn)
        return self._search(connection, self.config.group_base, f"(|(member={dn})(uniqueMember={dn}))", GROUP_ATTRIBUTES, cut)

    def _search(
        self, connection: ldap3.Connection, base: str, query: str, attributes: list[str], cut: list[str] | None = None
    ) -> list[Entry]:
        if not connection.search(base, query, attributes=attributes, size_limit=MAX_GROUPS, time_limit=self._seconds):
            if connection.result.get("result") in (0, 4, 32):  # none found, size limit, no such base
                if connection.result.get("result") == 4 and cut is not None:
                    cut.append(f"a search of groups stopped at its size limit ({MAX_GROUPS})")
                return self._entries(connection)
            raise DirectoryUnavailableLdap(
                f"the directory at {self.config.url} refused a search ({connection.result.get('description')})"
            )
        return self._entries(connection)

    @staticmethod
    def _entries(connection: ldap3.Connection) -> list[Entry]:
        return [
            Entry.of(item["dn"], item.get("attributes", {}), item.get("raw_attributes", {}))
            for item in connection.response or []
            if item.get("type") == "searchResEntry"
        ]


def _sid_filter(sid: str) -> str:
    """A SID as an LDAP filter value (its bytes escaped)."""
    return "".join(f"\\{byte:02x}" for byte in sid_bytes(sid))


class DirectoryUnavailableLdap(LDAPException):
    """An answer that is no answer (a refused service bind or search): its message is shown."""


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


def directory_of(settings: BaseSettings) -> Directory | None:
    """The installation's directory (SEARCHCRAWL_LDAP_URL), None without one."""
    if not settings.get("SEARCHCRAWL_LDAP_URL"):
        return None
    return LdapDirectory(DirectoryConfig.from_settings(settings))
