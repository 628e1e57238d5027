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

``member:<DN>`` is narrower, what Apache's mod_authnz_ldap grants ``Require ldap-group <DN>`` with
its defaults (``AuthLDAPGroupAttribute`` member and uniqueMember, ``AuthLDAPGroupAttributeIsDN``
on, ``AuthLDAPSubGroupAttribute`` member and uniqueMember, ``AuthLDAPSubGroupClass``
groupOfNames and groupOfUniqueNames): the groups holding the user's DN as a member or
uniqueMember, and the groups holding one of those as a member or uniqueMember where it is a
groupOfNames or groupOfUniqueNames, and so on up (``dn_member_walk``). A posixGroup's memberUid,
a primary gidNumber and a posixGroup in a groupOfNames give no ``member:``: Apache answers 401.

``direct:<attribute>:<cn>`` and ``direct:<attribute>/<objectClass>:<cn>`` (``direct_principals``)
are narrower still, what one LDAP search by a group filter finds, as DokuWiki's authldap does with
its ``groupfilter``: each group the user is in itself (no nesting), by the attribute that holds
them (``DIRECT_ATTRIBUTES``: member, uniqueMember, memberUid, the primary group's gidNumber), named
by its first cn (authldap's ``groupkey`` takes the first value), with and without each of its
objectClasses; ``direct:=...`` alike for a group whose first cn is lower-case as stored (what a
server comparing names with case, gitolite, means by the lower-case name). None for a first cn
with blanks around it, and no memberUid one for an entry of several uids (``direct_principals``).

Who the searcher is: the one entry the user filter finds whose compared attribute equals the name
asked for under the tokens' case folding (``named``: the directory's own matching folds more), and
``user:<name>`` is that entry's own name (``own_name``), never the name typed. The principals are
read by the service account (anonymous without one), never through the user's own bind, which
only checks a password; a reader that sees no group at all makes a user without groups partial.

Fail closed: a directory that does not answer gives a searcher only ``public`` (with the reason,
logged at ERROR once until it answers again), never an error page and never the last principals
seen long ago. A lookup or a sign-in has one deadline, LOOKUP_TIMEOUTS timeouts over everything
it asks; a failed lookup is remembered FAILED_LOOKUP_SECONDS. Answers are cached for
SEARCHCRAWL_PRINCIPALS_CACHE_SECONDS: a user taken out of a group still finds its documents until
then.

Active Directory (``SEARCHCRAWL_LDAP_KIND = "active_directory"``): a user's principals are
``user:<sAMAccountName>``, ``user:<DN>``, ``sid:<objectSid>`` and a ``sid:`` for each SID of its
``tokenGroups`` (the directory's own closure: its groups, nested groups, primary group and the
domain's built-in groups, as Windows builds a logon token), with ``group:<DN>`` and
``group:<name>`` for each of those groups the group base holds; and the SIDs every domain user's
network logon carries (Everyone, NETWORK, Authenticated Users, This Organization), so a searcher
is granted exactly what Windows would grant them opening the file from the share. A directory
that gives no tokenGroups (none readable by the service account) answers nothing: public only.

The walk and the principals of entries are plain functions (``user_principals``,
``group_principals``, ``walk_groups``), tested without a server; ``LdapDirectory``
(ldap_directory.py) asks the server (ldap3) and caches.
"""

from __future__ import annotations

import logging
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from scrapy.settings import BaseSettings

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.access.ntfs import NETWORK_LOGON_SIDS, WELL_KNOWN, sid_text
from searchcrawl.access.tokens import AccessError, direct_token, normal_token
from searchcrawl.system.secrets import LDAP_BIND_PASSWORD, secret

logger = logging.getLogger(__name__)

MAX_GROUP_DEPTH = 8  # groups in groups followed this many steps up from the user's own
MAX_GROUPS = 1000  # and this many groups at most (a searcher in more gets the first found)
LOOKUP_TIMEOUTS = 3  # a whole lookup or sign-in takes at most this many SEARCHCRAWL_LDAP_TIMEOUTs
MAX_CACHED = 10_000  # searchers whose principals are cached at once
USER_ATTRIBUTES = ["uid", "uidNumber", "gidNumber"]
GROUP_ATTRIBUTES = ["cn", "gidNumber", "objectClass"]
DN_MEMBERSHIP = ("member", "uniqueMember")  # how a user is in a group by DN (Membership.how)
SUBGROUP_CLASSES = frozenset({"groupofnames", "groupofuniquenames"})  # mod_authnz_ldap's default subgroups
# Membership.how -> the group's attribute that holds the user itself (direct: tokens)
DIRECT_ATTRIBUTES = {"member": "member", "uniqueMember": "uniquemember", "memberUid": "memberuid", "primary group": "gidnumber"}
AD_USER_ATTRIBUTES = ["sAMAccountName"]
AD_GROUP_ATTRIBUTES = ["cn", "sAMAccountName", "objectSid"]
AD_USER_FILTER = "(&(objectClass=user)(|(sAMAccountName={user})(userPrincipalName={user})))"
SIDS_PER_SEARCH = 100  # a group search names this many SIDs at most
FAILED_LOOKUP_SECONDS = 10.0  # a lookup that failed is not tried again for a user within this
_COMPARED = re.compile(r"\(\s*([A-Za-z][A-Za-z0-9;.-]*)\s*=\{user\}\s*\)")


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
class DirectoryEntry:
    """A directory entry: its DN and attributes (names lower-cased, values as strings)."""

    dn: str
    attributes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    raw_sids: tuple[bytes, ...] = ()  # its objectSid as the directory sent it (Active Directory)

    @classmethod
    def of(cls, dn: str, attributes: Mapping[str, Any], raw: Mapping[str, Any] | None = None) -> DirectoryEntry:
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

    group: DirectoryEntry
    path: tuple[str, ...]
    how: str


def compared_attributes(user_filter: str) -> tuple[str, ...]:
    """The attributes a user filter compares with the name asked for (``(uid={user})``: uid);
    ValueError when it compares none for equality (``(uid={user}*)``): an entry found by it
    could not be checked to bear the name (``named``)."""
    found = tuple(dict.fromkeys(name.lower() for name in _COMPARED.findall(user_filter)))
    if not found:
        raise ValueError(f"SEARCHCRAWL_LDAP_USER_FILTER: {user_filter!r} compares no attribute with {{user}}: (uid={{user}})")
    return found


def named(entry: DirectoryEntry, name: str, attributes: Iterable[str], domain_prefix: bool = False) -> bool:
    """Whether ``entry`` bears the name asked for: one of ``attributes`` (the user filter's,
    ``compared_attributes``) equals ``name`` under the tokens' case folding (``str.lower``),
    nothing more. The directory's own matching folds more (OpenLDAP matches a fullwidth ``ｂob``
    to ``uid=bob``, and ignores spaces): its answer alone would name another user. With
    ``domain_prefix`` (Active Directory) a ``DOMAIN\\name`` names the entry only when DOMAIN is
    its domain's (the first ``dc=`` of its DN, as NetBIOS names it by default)."""
    if domain_prefix and "\\" in name:
        domain, name = name.rsplit("\\", 1)
        first_dc = next((part[3:] for part in dn_parts(entry.dn) if part.startswith("dc=")), "")
        if domain.lower() != first_dc:
            return False
    wanted = name.lower()
    return any(value.lower() == wanted for attribute in attributes for value in entry.values(attribute))


def dn_parts(dn: str) -> list[str]:
    """A DN's parts, lower-cased, spaces around them dropped (``cn=a, DC=x`` -> cn=a, dc=x)."""
    return [part.strip().lower() for part in dn.split(",")]


def rdn(dn: str) -> str:
    """The first part of a DN (``cn=finance`` of ``cn=finance,ou=groups,...``), for origins."""
    return dn.split(",", 1)[0]


def path_text(membership: Membership, user_dn: str) -> str:
    """ "memberOf path: cn=finance <- cn=accounting <- uid=alice (member)"."""
    steps = [rdn(dn) for dn in membership.path] + [rdn(user_dn)]
    return f"memberOf path: {' <- '.join(steps)} ({membership.how})"


def own_name(attribute: str, value: str, dn: str) -> list[Principal]:
    """``user:<value>``, the entry's name as stored (``attribute``): none when the entry has no
    such name, or when the tokens' folding would make it another user's (an entry
    ``uid=bob@partner.example`` is not ``user:bob``: tokens.py reads ``name@realm`` and
    ``DOMAIN\\name`` as ``name``, right for a document's token, wrong for a second entry; a
    name with ``=`` would read as a DN)."""
    if not value:
        return []
    token = f"user:{value}"
    try:
        # a name with "=" reads as a DN, which may be another entry's
        other = "=" in value or normal_token(token) != f"user:{value.lower()}"
    except AccessError:
        return []  # not a token (tokens_only would leave it out)
    if other:
        logger.debug("directory: %s's %s %r reads as another name: no user:<name> principal, its DN only", dn, attribute, value)
        return []
    return [Principal(token, f"{attribute} of {dn}")]


def own_uid(user: DirectoryEntry, name: str) -> str:
    """The entry's uid: its one value, or of several the one equal to ``name``, the name asked
    (case aside), which the directory found it by and no other entry bears; "" otherwise. Never
    merely the first of several: an entry uid=mallory whose uid values are (alice, mallory) is
    not alice, whose own entry the search for mallory did not meet."""
    values = user.values("uid")
    if len(values) <= 1:
        return next(iter(values), "")
    return next((value for value in values if value.lower() == name.lower()), "")


def user_principals(user: DirectoryEntry, name: str) -> list[Principal]:
    """The principals of the user's own entry: its uid (``own_uid`` and ``own_name``: never the
    name signed in with, which the directory may have matched to another spelling), its DN, its
    uidNumber and its primary gidNumber."""
    found = [
        *own_name("uid", own_uid(user, name), user.dn),
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
    found.extend(Principal(f"group:{cn}", f"cn of {group.dn}; {path}") for cn in group_names(group, "cn"))
    if "posixgroup" in {kind.lower() for kind in group.values("objectClass")} and group.first("gidNumber"):
        found.append(Principal(f"gid:{group.first('gidNumber')}", f"gidNumber of posixGroup {group.dn}; {path}"))
    return found


def group_names(group: DirectoryEntry, attribute: str) -> tuple[str, ...]:
    """A group's names (``cn``, ``sAMAccountName``) for ``group:<name>`` principals, leaving out a
    name with ``=``: it reads as a DN, perhaps another group's (a group a department created
    with the cn ``cn=finance,ou=groups,...`` would give its members that group's DN token,
    which the manual says matches that one group)."""
    names = group.values(attribute)
    for value in names:
        if "=" in value:
            logger.debug("directory: %s's %s %r reads as a DN: no group:<name> principal", group.dn, attribute, value)
    return tuple(value for value in names if "=" not in value)


def _dn_key(dn: str) -> str:
    return "".join(dn.lower().split())


def walk_groups(
    direct: Iterable[tuple[DirectoryEntry, str]],
    parents_of: Callable[[DirectoryEntry], list[DirectoryEntry]],
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


def dn_member_walk(
    direct: Iterable[tuple[DirectoryEntry, str]],
    parents_of: Callable[[DirectoryEntry], list[DirectoryEntry]],
    cut: list[str] | None = None,
) -> list[Membership]:
    """The groups that hold the user as mod_authnz_ldap's defaults read ``Require ldap-group``
    (the module's docstring): of ``direct``, those holding the user's DN (``DN_MEMBERSHIP``),
    then up through the groups of SUBGROUP_CLASSES only (``walk_groups``' bounds)."""

    def subgroup_parents(group: DirectoryEntry) -> list[DirectoryEntry]:
        return parents_of(group) if SUBGROUP_CLASSES & {kind.lower() for kind in group.values("objectClass")} else []

    return walk_groups([(group, how) for group, how in direct if how in DN_MEMBERSHIP], subgroup_parents, cut=cut)


def direct_principals(direct: Iterable[tuple[DirectoryEntry, str]], user: DirectoryEntry) -> list[Principal]:
    """The ``direct:`` principals of the groups the user is in itself (the module's docstring):
    what a group filter of these attributes and classes finds, one search, no nesting; the
    ``direct:=`` ones too where the cn is lower-case as stored (``direct_token``). A group whose
    first cn reads as a DN (``group_names``) or has blanks around it gives none, and a memberUid
    group gives none to an entry of several uids: a filter's ``%{uid}`` is the first of them,
    ``%{user}`` the name signed in with, perhaps another (fail closed)."""
    found = []
    several_uids = len(user.values("uid")) > 1
    for group, how in direct:
        cn = group.first("cn")
        if not cn or "=" in cn:
            continue
        if how == "memberUid" and several_uids:
            logger.debug("directory: %s has several uids: no direct: token of memberUid group %s", user.dn, group.dn)
            continue
        attribute = DIRECT_ATTRIBUTES[how]
        origin = f"{how} of {group.dn} (its first cn, no nesting) <- {user.dn}"
        for group_class in (None, *dict.fromkeys(kind.lower() for kind in group.values("objectClass"))):
            for exact in (False, True):
                try:
                    found.append(Principal(direct_token(attribute, group_class, cn, exact), origin))
                except AccessError:
                    logger.debug(
                        "directory: %s's class %r or cn makes no direct%s token", group.dn, group_class, ":=" if exact else ":"
                    )
    return found


def principals_of(
    name: str,
    user: DirectoryEntry,
    memberships: Iterable[Membership],
    dn_memberships: Iterable[Membership] = (),
    direct: Iterable[tuple[DirectoryEntry, str]] = (),
) -> Principals:
    """The searcher ``name``'s principals from their entry, groups, ``member:`` groups
    (``dn_member_walk``) and ``direct:`` groups (``direct``, each group the user is in itself
    and how); a value that is no token, an empty cn say, is left out: DEBUG."""
    entries = user_principals(user, name)
    for membership in memberships:
        entries.extend(group_principals(membership, user.dn))
    entries.extend(Principal(f"member:{m.group.dn}", path_text(m, user.dn)) for m in dn_memberships)
    entries.extend(direct_principals(direct, user))
    return Principals.of(own_uid(user, name) or name, tokens_only(entries, name))


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


def windows_principals(name: str, user: DirectoryEntry, sids: list[str], groups: Mapping[str, DirectoryEntry]) -> Principals:
    """An Active Directory user's principals (the module's docstring): ``sids`` its own SID
    first, then its tokenGroups; ``groups`` the group entries found for them, by SID."""
    account = user.first("sAMAccountName") or name
    entries = [
        *own_name("sAMAccountName", user.first("sAMAccountName"), user.dn),
        Principal(f"user:{user.dn}", f"DN of the directory entry of {name}"),
    ]
    for number, sid in enumerate(sids):
        group = groups.get(sid)
        label = sid_label(sid, group)
        origin = f"objectSid of {user.dn}" if number == 0 else f"tokenGroups of {rdn(user.dn)}: {label}"
        entries.append(Principal(f"sid:{sid}", origin))
        if group is not None:
            entries.append(Principal(f"group:{group.dn}", f"tokenGroups of {rdn(user.dn)}: {sid}"))
            for cn in (*group_names(group, "sAMAccountName"), *group_names(group, "cn")):
                entries.append(Principal(f"group:{cn}", f"name of {group.dn} ({sid})"))
    for sid in NETWORK_LOGON_SIDS:
        entries.append(Principal(f"sid:{sid}", f"{WELL_KNOWN[sid]}: every domain user's network logon"))
    return Principals.of(account, tokens_only(entries, name))


def sid_label(sid: str, group: DirectoryEntry | None) -> str:
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

    @property
    def compared(self) -> tuple[str, ...]:
        """The attributes of the user filter that must bear the name asked for (``named``)."""
        return compared_attributes(self.filter)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DirectoryConfig:
        kind = settings.get("SEARCHCRAWL_LDAP_KIND") or "posix"
        if kind not in ("posix", "active_directory"):
            raise ValueError(f"SEARCHCRAWL_LDAP_KIND: expected 'posix' or 'active_directory', got {kind!r}")
        config = cls(
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
        config.compared  # noqa: B018 - a filter comparing no attribute with {user} stops here
        return config
