"""Access tokens: who may read a document, as the index holds it.

A token is a namespaced string: ``user:alice`` (a user name, or a user's DN), ``group:<DN or
name>``, ``member:<DN>`` (a group holding the user's DN as a ``member`` or ``uniqueMember``,
itself or through groupOfNames and groupOfUniqueNames in it: what Apache's ``Require ldap-group``
means by default, narrower than ``group:``, which also counts memberUid, primary groups and any
nesting), ``direct:<attribute>:<cn>`` and ``direct:<attribute>/<objectClass>:<cn>`` (a group,
by its first cn, whose ``attribute`` holds the user itself, no nesting: ``member`` or
``uniqueMember`` their DN, ``memberUid`` their uid, ``gidNumber`` their primary gidNumber; with
the class, a group of that objectClass: what one search by a filter such as DokuWiki's authldap
``groupfilter`` finds, ``direct_token``; ``direct:=<attribute>...`` the same for a group whose cn is
lower-case as stored, for servers that compare names with case), ``uid:1001`` and ``gid:2001`` (the numeric ids of files' owners and groups, matched to
a directory user's uidNumber and gidNumber), ``sid:S-1-5-21-...`` (a Windows security identifier:
an NTFS ACL's, matched to an Active Directory user's objectSid and tokenGroups), and ``public``
(everyone, signed in or not). A document's ``Access`` is a list of levels and a list of deny tokens:

- a reader passes a level when one of their principals is among its allow tokens (``public``
  is every reader's principal); the first level is the document itself, the others what a
  reader must also pass to reach it (the folders above a file: traversable by the same person);
- deny wins: a reader with one principal among the deny tokens may not read it, whatever a level
  allows;
- but for an ordered ACL (Windows: a file's own entries come before those it inherits, and the
  first entry naming the reader decides), the denies that follow its first allow entries are
  ``late_deny``: they refuse a reader unless one of the reader's principals is among
  ``overriding``, the allow entries before them. Exact for an ACL of two such blocks (a file's
  explicit entries, then its inherited ones); an ACL of more is read conservatively (a reader
  allowed by the second block and denied by the third is refused: fail closed).

Each token keeps where it came from (``Grant.origin``): what `scrapy explain-access` shows.
Tokens are normalised once, here, for documents and principals alike (``normal_token``): the
namespace and the value lower-cased (LDAP compares names and DNs without case), spaces around a
DN's commas and equals signs dropped, and a user's two shapes (``EXAMPLE\\alice``,
``alice@example.org``) reduced to the name (``alice``): one directory per installation.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

PUBLIC = "public"
NAMESPACES = ("user", "group", "member", "direct", "uid", "gid", "sid")
MAX_TOKEN_CHARS = 1024
# The index's levels: the document's own and at most three above it (a folder, a share ...).
# More levels that restrict differently are folded into the last, keeping only the tokens they
# have in common: a reader may then be refused what they could read (fail closed), never shown
# what they could not.
MAX_LEVELS = 4
LEVEL_FIELDS = ("access_allow", "access_allow_1", "access_allow_2", "access_allow_3")
DENY_FIELD = "access_deny"
LATE_DENY_FIELD = "access_deny_late"  # Access.late_deny
OVERRIDING_FIELD = "access_allow_early"  # Access.overriding
_SID = re.compile(r"s-1-[0-9]{1,15}(?:-[0-9]{1,10}){0,15}", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DN_SPACES = re.compile(r"\s*([,=+])\s*")
# [=]attribute[/objectclass]:cn, the cn with nothing blank around it
_DIRECT = re.compile(r"=?[a-z][a-z0-9-]*(?:/[a-z][a-z0-9-]*)?:[^=\s](?:[^=]*[^=\s])?")


class AccessError(ValueError):
    """A token that is not one (no known namespace, empty, control characters, too long)."""


class AccessUnreadable(Exception):
    """The access list of a document cannot be read (permission, a broken ACL, a source query
    that failed): the document is not indexed (status 927), never indexed as public."""


def normal_token(text: str) -> str:
    """``text`` as the index holds it (see the module's docstring); AccessError if it is not a
    token."""
    raw, text = text, text.strip()
    if text.lower() == PUBLIC:
        return PUBLIC
    namespace, colon, value = text.partition(":")
    namespace, value = namespace.strip().lower(), value.strip()
    if not colon or namespace not in NAMESPACES:
        raise AccessError(f"{text[:80]!r} is not an access token ({', '.join(NAMESPACES)}: followed by a name, or public)")
    if not value or len(value) > MAX_TOKEN_CHARS or _CONTROL.search(value):
        raise AccessError(f"{text[:80]!r}: an empty, too long or unprintable value")
    if namespace in ("uid", "gid"):
        return _numbered(text, namespace, value)
    if namespace == "sid":
        return _sid(text, value)
    value = value.lower()
    if namespace == "member" and "=" not in value:
        raise AccessError(f"{text[:80]!r}: member takes a group's DN")
    if namespace == "direct":
        return _direct(raw, text, value)
    if "=" in value:  # a DN
        value = _DN_SPACES.sub(r"\1", value)
    elif namespace == "user":
        value = value.rsplit("\\", 1)[-1].split("@", 1)[0] or value
    return f"{namespace}:{value}"


def _numbered(text: str, namespace: str, value: str) -> str:
    """A ``uid:`` or ``gid:`` token: a number, without leading zeros."""
    if not (value.isascii() and value.isdigit()):  # "²" is a digit int() refuses, "١" one it reads
        raise AccessError(f"{text[:80]!r}: {namespace} takes a number")
    return f"{namespace}:{int(value)}"


def _sid(text: str, value: str) -> str:
    """A ``sid:`` token: S-1-5-21-... as Windows writes it, without leading zeros."""
    numbers = [int(part) for part in value.split("-")[1:]] if _SID.fullmatch(value) else []
    # the authority is 48 bits, each sub-authority 32: a SID's binary form must exist
    if not numbers or numbers[1] >= 1 << 48 or any(number >= 1 << 32 for number in numbers[2:]):
        raise AccessError(f"{text[:80]!r}: sid takes a security identifier such as S-1-5-21-1-2-3-1105")
    return "sid:S-" + "-".join(str(number) for number in numbers)


def _direct(raw: str, text: str, value: str) -> str:
    """A ``direct:`` token, strictly: " finance" is not finance to a server."""
    if raw != text or not _DIRECT.fullmatch(value):
        raise AccessError(
            f"{text[:80]!r}: direct takes [=]attribute[/objectClass]:cn, such as memberuid/posixgroup:finance,"
            " no blank around the cn"
        )
    return f"direct:{value}"


def direct_token(attribute: str, group_class: str | None, cn: str, exact: bool = False) -> str:
    """The ``direct:`` token of a group named ``cn`` whose ``attribute`` holds the user itself
    (of ``group_class`` only, or of any class: None): the one spelling of what the directory
    gives a searcher (access/directory.py) and what a source's group grants name (DokuWiki on
    LDAP, access/dokuwiki_acl.py; gitolite, access/gitolite_rules.py). ``exact``: for a server
    that compares names with case (gitolite), the ``direct:=`` token, which only a cn already
    lower-case stands for (tokens are lower-case: ``FINANCE`` is not ``finance`` there).
    AccessError for a cn with blanks around it (DokuWiki encodes a trailing space, gitolite splits
    on it: no server reads it as the name without) or, ``exact``, with capitals."""
    if cn != cn.strip() or (exact and cn != cn.lower()):
        raise AccessError(f"{cn[:80]!r}: no direct{':=' if exact else ':'} token for a name with blanks around it or capitals")
    kind = ("=" if exact else "") + (attribute if group_class is None else f"{attribute}/{group_class}")
    return normal_token(f"direct:{kind}:{cn}")


def filter_relations(groupfilter: str) -> tuple[tuple[str, str | None], ...]:
    """What one LDAP search by a group filter finds, as ``direct:`` tokens' (attribute,
    objectClass or None) pairs (written as DokuWiki's authldap ``groupfilter``, whose
    ``fetchUserData`` fills the placeholders in with the user's own values and runs one search, no
    nesting): one relation ``(memberUid=%{user})`` (or ``%{uid}``), ``(gidNumber=%{gid})``,
    ``(member=%{dn})``, ``(uniqueMember=%{dn})``, several joined by ``(|...)``, either perhaps with
    one ``(objectClass=...)`` in a ``(&...)``. ValueError for any other filter: its groups' meaning
    is not known here."""
    text = "".join(groupfilter.split())
    wanted = {"memberuid": ("user", "uid"), "gidnumber": ("gid",), "member": ("dn",), "uniquemember": ("dn",)}
    group_class: str | None = None
    conjunction = re.fullmatch(r"\(&(\(.*\))\)", text)
    if conjunction is not None:
        parts = re.fullmatch(
            r"\((?i:objectClass)=([A-Za-z][A-Za-z0-9-]*)\)(.+)|(.+)\((?i:objectClass)=([A-Za-z][A-Za-z0-9-]*)\)",
            conjunction.group(1),
        )
        if parts is None:
            raise ValueError(f"groupfilter {groupfilter[:200]!r}: an (&...) other than one objectClass and the relations")
        group_class = (parts.group(1) or parts.group(4)).lower()
        text = parts.group(2) or parts.group(3)
    either = re.fullmatch(r"\(\|(\(.*\))\)", text)
    body = either.group(1) if either else text
    clauses = re.findall(r"\(([^()=]*)=%\{([^}]*)\}\)", body)
    written = "".join(f"({attribute}=%{{{placeholder}}})" for attribute, placeholder in clauses)
    if written != body or not clauses or (either is None and len(clauses) > 1):
        raise ValueError(
            f"groupfilter {groupfilter[:200]!r} is not a relation of a group to the user authldap's reading is known for"
        )
    for attribute, placeholder in clauses:
        if placeholder not in wanted.get(attribute.lower(), ()):
            raise ValueError(f"groupfilter {groupfilter[:200]!r}: ({attribute}=%{{{placeholder}}}) is not read")
    return tuple(dict.fromkeys((attribute.lower(), group_class) for attribute, _placeholder in clauses))


def denies_exactly(relations: Iterable[tuple[str, str | None]]) -> bool:
    """Whether the directory gives the ``direct:`` tokens of these relations (``filter_relations``)
    to every user a server's search by that filter finds, so that a group's deny refuses them
    all: only ``member`` and ``uniqueMember`` of any class. It reads memberUid and gidNumber on
    posixGroups only, and a server's ``(objectClass=X)`` matches X's subclasses too, which an
    entry need not list."""
    return all(group_class is None and attribute in ("member", "uniquemember") for attribute, group_class in relations)


def direct_tokens(relations: Iterable[tuple[str, str | None]], cn: str, exact: bool = False) -> list[str]:
    """The ``direct:`` tokens of the group ``cn`` as a filter of these ``relations`` finds it
    (``exact``: ``direct_token``'s)."""
    return [direct_token(attribute, group_class, cn, exact) for attribute, group_class in relations]


@dataclass(frozen=True)
class Grant:
    """A token and where it came from ("POSIX ACL of /srv/hr/pay.txt: group:finance r--")."""

    token: str
    origin: str

    @classmethod
    def of(cls, token: str, origin: str) -> Grant:
        return cls(normal_token(token), origin)


@dataclass(frozen=True)
class Level:
    """A gate a reader passes with one of its allow tokens: the document, or what holds it."""

    name: str
    allow: tuple[Grant, ...]

    @property
    def tokens(self) -> frozenset[str]:
        return frozenset(grant.token for grant in self.allow)

    @property
    def open(self) -> bool:
        return PUBLIC in self.tokens


@dataclass(frozen=True)
class Access:
    """Who may read a document: its levels (a reader passes every one) and deny tokens."""

    levels: tuple[Level, ...]
    deny: tuple[Grant, ...] = ()
    notes: tuple[str, ...] = field(default=(), compare=False)  # what the folding of levels lost
    # an ordered ACL's denies after its first allow entries, and those entries (module docstring)
    late_deny: tuple[Grant, ...] = ()
    overriding: tuple[Grant, ...] = ()

    @classmethod
    def public(cls, origin: str) -> Access:
        return cls((Level("document", (Grant(PUBLIC, origin),)),))

    @classmethod
    def of(cls, allow: Iterable[Grant], deny: Iterable[Grant] = (), name: str = "document") -> Access:
        """One level (``name``) with ``allow``, and ``deny``; tokens once each, in order."""
        return cls((Level(name, unique_grants(allow)),), unique_grants(deny))

    @property
    def is_public(self) -> bool:
        """Everyone may read it: every level open, nothing denied."""
        return not self.deny and not self.late_deny and all(level.open for level in self.levels)

    def within(self, level: Level, deny: Iterable[Grant] = ()) -> Access:
        """This access behind ``level`` too (a folder above a file), with its ``deny``. An open
        level adds nothing and is left out; a level with the same tokens as one already there
        adds nothing either."""
        denied = unique_grants((*self.deny, *deny))
        if level.open or any(kept.tokens == level.tokens for kept in self.levels):
            return replace(self, deny=denied)
        return replace(self, levels=(*self.levels, level), deny=denied)

    def indexed_levels(self) -> tuple[Access, tuple[Level, ...]]:
        """The levels as the index holds them (MAX_LEVELS at most: see there), with notes."""
        levels = [level for i, level in enumerate(self.levels) if i == 0 or not level.open]
        if len(levels) <= MAX_LEVELS:
            return self, tuple(levels)
        kept, folded = levels[: MAX_LEVELS - 1], levels[MAX_LEVELS - 1 :]
        common = frozenset.intersection(*(level.tokens for level in folded))
        grants = tuple(grant for grant in folded[0].allow if grant.token in common)
        name = " + ".join(level.name for level in folded)
        note = f"{name}: {len(folded)} levels folded into one, only the tokens all of them allow kept"
        return replace(self, notes=(*self.notes, note)), (*kept, Level(name, grants))

    def fields(self) -> dict[str, list[str]]:
        """The Solr fields: ``access_allow`` (the document's level), ``access_allow_1`` .. ``_3``
        (``public`` where there is no such level), ``access_deny``, ``access_deny_late`` and
        ``access_allow_early`` (empty but for an ordered ACL's late denies)."""
        _access, levels = self.indexed_levels()
        shown: dict[str, list[str]] = {}
        for i, name in enumerate(LEVEL_FIELDS):
            shown[name] = sorted(levels[i].tokens) if i < len(levels) else [PUBLIC]
        shown[DENY_FIELD] = sorted({grant.token for grant in self.deny})
        shown[LATE_DENY_FIELD] = sorted({grant.token for grant in self.late_deny})
        shown[OVERRIDING_FIELD] = sorted({grant.token for grant in self.overriding}) if self.late_deny else []
        return shown

    def digest(self) -> str:
        """What the document table keeps to see a change of access alone (the Solr fields'
        hash): "public" for a public document, else 32 hex digits."""
        if self.is_public:
            return PUBLIC
        shown = self.fields()
        if not shown[LATE_DENY_FIELD]:  # as before ordered ACLs: digests stored then still hold
            del shown[LATE_DENY_FIELD], shown[OVERRIDING_FIELD]
        return hashlib.sha256(json.dumps(shown, sort_keys=True).encode()).hexdigest()[:32]

    def to_data(self) -> dict[str, Any]:
        """As JSON (a request's meta, an agent's reference on its way to the download)."""
        return {
            "levels": [{"name": level.name, "allow": [[g.token, g.origin] for g in level.allow]} for level in self.levels],
            "deny": [[g.token, g.origin] for g in self.deny],
            "late_deny": [[g.token, g.origin] for g in self.late_deny],
            "overriding": [[g.token, g.origin] for g in self.overriding],
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Access:
        levels = tuple(
            Level(str(level["name"]), tuple(Grant.of(token, origin) for token, origin in level["allow"]))
            for level in data["levels"]
        )
        if not levels:
            raise AccessError("an access without a level")

        def grants(name: str) -> tuple[Grant, ...]:
            return tuple(Grant.of(token, origin) for token, origin in data.get(name, ()))

        return cls(levels, grants("deny"), late_deny=grants("late_deny"), overriding=grants("overriding"))


def unique_grants(grants: Iterable[Grant]) -> tuple[Grant, ...]:
    """Each token once, with the first origin given for it, in order."""
    seen: dict[str, Grant] = {}
    for grant in grants:
        seen.setdefault(grant.token, grant)
    return tuple(seen.values())
