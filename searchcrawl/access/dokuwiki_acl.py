"""DokuWiki's access rules (``conf/acl.auth.php``) as who may read each page: what a ``dokuwiki``
source is indexed with (agents/dokuwiki.py), decided as DokuWiki decides (``auth_aclcheck``).

DokuWiki asks, for a page ``ns:sub:page``, the rules of ``ns:sub:page`` first, then ``ns:sub:*``,
``ns:*`` and ``*``: the first of these levels that names one of the reader's names (their user
name, ``@`` one of their groups, ``@ALL``) decides, and decides with the highest permission it
gives any of them (1, read, or more reads; 0 does not). A superuser (DokuWiki's ``superuser``
setting) reads everything.

As tokens (access/tokens.py), exact for the rules admins write:

- every name a level gives read is an allow token (``@ALL``: ``public``; ``@user``, the default
  group: ``authenticated_token`` where the admin says every signed-in user is in it (LDAP and
  Active Directory put everyone there; the plain backend only whom it was given to), else a group
  like any other; ``@group``: ``group_token``, or for a wiki on LDAP (``group_relations``, from its
  authldap ``groupfilter``: tokens.py ``filter_relations``) one ``direct:`` token per relation of the
  filter, the groups that one search finds, no nesting; a user: ``user_token``); a name no token stands
  for is left out (its readers are refused: fail closed). In a wiki that tells ``Bob`` from
  ``bob`` (``case_sensitive``, the default: the plain backend, which stores names lower-case, so
  that a rule naming ``Bob`` matches no one), a name with capitals gives no read and denies as
  its lower-case token;
- a name denied at a level above the first that gives read is a deny token; a name denied at
  that level or below is a late deny, and the names read from the first reading level to the
  first such deny's level are the overriding tokens: a reader denied there is refused unless a
  name of theirs reads at that level or above it. A name named at a level is not read again at
  the levels below it (it was decided), and nothing below a level naming ``@ALL`` is read.
  Conservative (``Access.notes`` says so): denies at two levels with a read between them (a
  reader the lower level decides, holding a name denied there and one reading between, is
  refused), and a superuser holding a name denied above every read when reads follow below;
- the superusers are allow and overriding tokens.

What cannot be read for certain keeps the page out of the index (status 927): a deny of a name no
token stands for, a deny of a group under ``group_relations`` other than by member or uniqueMember
of any class (``denies_exactly``: the wiki's search may find groups the directory reading does not), a permission that is not a number, a ``%USER%`` or ``%GROUP%`` anywhere (a
comment too: DokuWiki fills them in wherever they are) other than in a user's (a group's) own
namespace given to that user (group) or ``%USER%`` as a rule's name, or a deny of one. A
negative permission decides nothing, as in DokuWiki. The rules are
read from the file, not from DokuWiki's XML-RPC ``plugin.acl.listAcls``: that answer has the
``%USER%`` and ``%GROUP%`` rules already filled in for the caller, the crawl's account.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from searchcrawl.access.tokens import PUBLIC, Access, AccessError, Grant, Level, denies_exactly, direct_tokens, unique_grants

READ = 1
MAX_FILE_BYTES = 4 * 1024 * 1024
EVERYONE = "@ALL"
USER_WILDCARD = "%USER%"
GROUP_WILDCARD = "%GROUP%"
# a name that keeps its meaning in a token template (no DN syntax, no @, no control characters)
_PLAIN_NAME = re.compile(r"[\w.\-]+(?: [\w.\-]+)*")
_NUMBER = re.compile(r"-?[0-9]{1,4}")
PHP_BLANKS = " \t\n\r\x00\x0b"  # what PHP's trim() takes away
_ENCODED = re.compile(r"%([0-9a-f]{1,2})")


@dataclass(frozen=True)
class AclEntry:
    """One line of the rules: a scope (``ns:*``, a page id), a name and a permission (None: no
    number DokuWiki reads for certain)."""

    scope: str
    subject: str  # as written ("@sales", "alice", "@all%2dstaff", "@ALL", "%USER%")
    permission: int | None
    origin: str  # "acl.auth.php line 3: secret:* @sales 1"
    uncertain: str | None = None  # why the line cannot be read for certain, where it applies

    @property
    def template(self) -> str | None:
        """The wildcard of a scope that holds one (``users:%USER%:*``), else None."""
        for wildcard in (USER_WILDCARD, GROUP_WILDCARD):
            if wildcard in self.scope:
                return wildcard
        return None


@dataclass(frozen=True)
class WikiNames:
    """How the wiki's names become tokens, and who DokuWiki lets read everything."""

    user_token: str = "user:{id}"
    group_token: str | None = None  # "group:{id}"; unset: a group is no one's token
    # the wiki's groups are its authldap groupfilter's (filter_relations): a group is the direct:
    # tokens of these (attribute, objectClass or None), instead of group_token
    group_relations: tuple[tuple[str, str | None], ...] = ()
    authenticated_token: str | None = None  # every signed-in user (@user, %USER%)
    default_group: str = "user"  # DokuWiki's defaultgroup
    superusers: tuple[str, ...] = ()  # DokuWiki's superuser setting: names and @groups
    crawler: str | None = None  # the crawl's account: nobody's reader
    # the wiki's authentication tells "Bob" from "bob" (its isCaseSensitive(): plain, pdo): a
    # name with capitals gives no read (its token would be bob's too) and denies as bob's
    case_sensitive: bool = True


class Uncertain(Exception):
    """A rule that cannot be read as tokens for certain: the page is not indexed (927)."""


@dataclass
class _Level:
    scope: str
    reads: dict[str, tuple[Grant, ...]] = field(default_factory=dict)  # name -> its tokens, (): none
    denies: dict[str, tuple[Grant, ...]] = field(default_factory=dict)


def _denied_above_every_read(name: str, allow: list[Grant], deny: list[Grant], superusers: list[Grant]) -> Access:
    """The access when no level below the first that reads denies: the readers, less who is denied
    above them (a superuser reads what names of theirs are denied)."""
    if deny and superusers:
        return Access((Level(name, unique_grants(allow)),), late_deny=unique_grants(deny), overriding=unique_grants(superusers))
    return Access.of(allow, deny, name=name)


def _denied_below_a_read(
    name: str, levels: list[_Level], grants: tuple[list[Grant], list[Grant], list[Grant]], first_read: int, first_deny: int
) -> Access:
    """The access when a level at or below the first that reads denies (``first_deny``): the
    denials below are late (a reader the levels above decided keeps reading), read conservatively
    where denies come at more than one level below a read."""
    allow, deny, superusers = grants
    notes: list[str] = []
    if deny and superusers:
        notes.append(f"{name}: a superuser holding a name denied before any read is refused")
    late = [grant for level in levels[first_deny:] for grants_of in level.denies.values() for grant in grants_of]
    reads_above = [g for level in levels[first_read : first_deny + 1] for grants_of in level.reads.values() for g in grants_of]
    if any(level.denies and any(other.reads for other in levels[first_deny + 1 : i + 1]) for i, level in enumerate(levels)):
        notes.append(
            f"{name}: denies at more than one level below a read, read conservatively (a reader the lower "
            f"level decides may be refused what it gives)"
        )
    return Access(
        (Level(name, unique_grants(allow)),),
        unique_grants(deny),
        tuple(notes),
        late_deny=unique_grants(late),
        overriding=unique_grants([*superusers, *reads_above]),
    )


class WikiAcl:
    """The rules of one acl.auth.php; ``access_of`` a page id."""

    def __init__(self, entries: Sequence[AclEntry]) -> None:
        self.by_scope: dict[str, list[AclEntry]] = {}
        self.templates: list[tuple[re.Pattern[str], AclEntry]] = []
        for entry in entries:
            if entry.template is None:
                self.by_scope.setdefault(entry.scope, []).append(entry)
            else:
                pattern = re.escape(entry.scope)
                for wildcard in (USER_WILDCARD, GROUP_WILDCARD):
                    pattern = pattern.replace(re.escape(wildcard), "(.+)")
                self.templates.append((re.compile(pattern), entry))

    def access_of(self, page: str, names: WikiNames) -> tuple[Access | None, str | None]:
        """Who may read ``page`` (see the module's docstring); (None, why) when the rules that
        decide it cannot be read for certain."""
        try:
            levels = self._levels(page, names)
        except Uncertain as error:
            return None, str(error)
        superusers = [grant for name in names.superusers for grant in _superuser(name, names)]
        allow = [*superusers, *(grant for level in levels for grants in level.reads.values() for grant in grants)]
        name = f"DokuWiki ACL of {page}"
        first_read = next((i for i, level in enumerate(levels) if level.reads), len(levels))
        # denied before any level reads: refused, whatever reads below
        deny = [grant for level in levels[:first_read] for grants in level.denies.values() for grant in grants]
        first_deny = next((i for i in range(first_read, len(levels)) if levels[i].denies), None)
        if first_deny is None:
            return _denied_above_every_read(name, allow, deny, superusers), None
        return _denied_below_a_read(name, levels, (allow, deny, superusers), first_read, first_deny), None

    def _levels(self, page: str, names: WikiNames) -> list[_Level]:
        """The levels DokuWiki asks for ``page``, each with the names first named there."""
        decided: set[str] = set()
        levels = []
        for scope in scopes_of(page):
            highest: dict[str, tuple[int, AclEntry, tuple[Grant, ...]]] = {}  # name -> its permission here
            for entry, value in self._entries_at(scope):
                if entry.uncertain is not None:
                    raise Uncertain(f"{entry.origin}: {entry.uncertain}")
                if entry.permission is not None and entry.permission < 0:
                    continue  # never above DokuWiki's -1: it decides nothing
                key, tokens = _name_of(entry, value, names)
                if key is None or key in decided:
                    continue  # the crawl's account, or a name a level above decided
                if entry.permission is None:
                    raise Uncertain(f"{entry.origin}: the permission is not a number")
                held = highest.get(key)
                if held is None or entry.permission > held[0] or entry.permission == held[0] and not held[2]:
                    highest[key] = (entry.permission, entry, tokens)
            level = _Level(scope)
            for key, (permission, entry, tokens) in highest.items():
                if permission >= READ:
                    level.reads[key] = tokens
                elif not tokens:
                    raise Uncertain(f"{entry.origin}: denies a name no token stands for")
                else:
                    level.denies[key] = tokens
            decided.update(highest)
            if highest:
                levels.append(level)
            if EVERYONE in highest:
                break  # everyone is decided here
        return levels

    def _entries_at(self, scope: str) -> Iterator[tuple[AclEntry, str | None]]:
        """The entries of ``scope``: its own lines, and the wildcard lines it fills in (with the
        value the wildcard takes)."""
        for entry in self.by_scope.get(scope, ()):
            yield entry, None
        for pattern, entry in self.templates:
            match = pattern.fullmatch(scope)
            if match is None:
                continue
            yield entry, match.group(1)


def scopes_of(page: str) -> list[str]:
    """The scopes DokuWiki asks for a page id, the page's own first."""
    scopes = [page]
    namespace = page.rpartition(":")[0]
    while namespace:
        scopes.append(namespace + ":*")
        namespace = namespace.rpartition(":")[0]
    scopes.append("*")
    return scopes


def read_acl(text: str, path: str) -> WikiAcl:
    """The rules of an acl.auth.php (``path`` names it in origins), read as DokuWiki reads them
    (``auth_loadACL``, ``auth_aclcheck_cb``): lines end at ``\\n`` alone and are trimmed of
    PHP's blanks; a line beginning with ``#`` is a comment; a line applies to the scope of its
    first field when a blank, a second field and a blank follow; ``#`` then begins a comment, and
    the second and third fields, what is left, are the name and the permission."""
    entries = []
    label = path.rsplit("/", 1)[-1]
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip(PHP_BLANKS)
        if not line or line.startswith("#"):
            continue
        scope = re.match(r"([^ \t]+)[ \t]+[^ \t]+[ \t]+", line)
        if scope is None:
            continue  # DokuWiki's match needs a blank after the name: such a line is ignored
        fields = re.split(r"[ \t]+", re.sub(r"#.*$", "", line))
        subject = fields[1] if len(fields) > 1 else ""
        if not subject:
            continue  # the name was a comment: the line matches no one
        permission = int(fields[2]) if len(fields) > 2 and _NUMBER.fullmatch(fields[2]) else None
        origin = f"{label} line {number}: {' '.join(line.split())[:200]}"
        entries.append(AclEntry(scope.group(1), subject, permission, origin, _wildcards(line, scope.group(1), subject)))
    return WikiAcl(entries)


def _wildcards(line: str, scope: str, subject: str) -> str | None:
    """Why a line's wildcards cannot be read for certain (DokuWiki fills them in wherever the
    line holds them, a comment too): None for a line without, a user's (a group's) own
    namespace given to them (``users:%USER%:* %USER% 8``), and ``%USER%`` as the name alone."""
    counts = {wildcard: line.count(wildcard) for wildcard in (USER_WILDCARD, GROUP_WILDCARD)}
    if not any(counts.values()):
        return None
    for wildcard, count in counts.items():
        others = sum(counts.values()) - count
        if count == 2 and not others and wildcard in scope and subject == wildcard and scope.count(wildcard) == 1:
            return None
    if counts[USER_WILDCARD] == 1 and not counts[GROUP_WILDCARD] and subject == USER_WILDCARD:
        return None
    return "a wildcard DokuWiki fills in other than in a user's (a group's) own namespace"


def _name_of(entry: AclEntry, value: str | None, names: WikiNames) -> tuple[str | None, tuple[Grant, ...]]:
    """The name ``entry`` gives its permission to, as a key of a level (None: the crawl's own
    account, nobody's reader, or a name written as DokuWiki never writes one), and its tokens (none: no token stands for it). Uncertain when a
    wildcard rule gives it to another name than the wildcard's own, or denies it."""
    subject = entry.subject
    reads = entry.permission is not None and entry.permission >= READ
    if entry.template is not None:
        subject = _templated(entry, value, reads)
    elif subject == USER_WILDCARD:
        subject = "@" + names.default_group  # every signed-in user
    elif subject == GROUP_WILDCARD:
        if not reads:
            raise Uncertain(f"{entry.origin}: denies each group of each reader")
        return "%group", ()
    elif subject != EVERYONE:
        written = _decoded_name(entry, subject, reads)
        if written is None:
            return None, ()
        subject = written
    if names.crawler and subject.lower() == names.crawler.lower():
        return None, ()
    if names.case_sensitive and subject != EVERYONE and subject != subject.lower() and reads:
        return None, ()  # "Bob" is not bob, whose token it would be: a read left out (fail closed)
    tokens = _token_of(subject, names, entry.origin)
    if not reads and any(grant.token.startswith("direct:") for grant in tokens) and not denies_exactly(names.group_relations):
        raise Uncertain(f"{entry.origin}: denies a group the wiki's groupfilter may find where the directory reading does not")
    return subject.lower() if subject != EVERYONE else EVERYONE, tokens


def _templated(entry: AclEntry, value: str | None, reads: bool) -> str:
    """The name a wildcard rule (``%USER%``, ``@%GROUPS%`` in a namespace's name) gives its
    permission to: the wildcard's own, and only to read (anything else is Uncertain)."""
    if entry.subject != entry.template:
        raise Uncertain(f"{entry.origin}: a wildcard rule for a name other than the wildcard's own")
    if not reads:
        raise Uncertain(f"{entry.origin}: a wildcard rule that denies")
    return ("@" if entry.template == GROUP_WILDCARD else "") + (value or "")


def _decoded_name(entry: AclEntry, subject: str, reads: bool) -> str | None:
    """A user's or group's name as written in the ACL (URL-encoded), decoded; None when DokuWiki
    matches no one by it (a character it would have encoded) or a read by a name it would not
    write this way is left out (its readers are refused: fail closed); a denial by such a name
    is Uncertain."""
    name = subject.removeprefix("@")
    if any(ord(c) < 0x80 and not c.isalnum() and c != "%" for c in name):
        return None  # DokuWiki compares encoded names: one written otherwise matches no one
    decoded = _ENCODED.sub(_decoded, name)
    if name_encoded(decoded) != name:
        if reads:
            return None
        raise Uncertain(f"{entry.origin}: a name DokuWiki would not write this way")
    return subject[: len(subject) - len(name)] + decoded


def name_encoded(name: str) -> str:
    """A name as DokuWiki writes it in its rules (``auth_nameencode``): every ASCII character but
    letters and digits as ``%`` and its code in lower-case hex, without a leading zero (``_`` is
    ``%5f``); other characters as they are."""
    return "".join(f"%{ord(c):x}" if ord(c) < 0x80 and not c.isalnum() else c for c in name)


def _decoded(match: re.Match[str]) -> str:
    value = int(match.group(1), 16)
    return chr(value) if value < 0x80 else chr(int(match.group(1)[0], 16)) + match.group(1)[1]


def _token_of(subject: str, names: WikiNames, origin: str) -> tuple[Grant, ...]:
    """The tokens of a name (``@ALL``, a group, a user); none where no token stands for it."""
    if subject == EVERYONE:
        return (Grant(PUBLIC, origin),)
    if subject.lower() == "@" + names.default_group.lower() and names.authenticated_token:
        tokens = [names.authenticated_token]  # the admin says every signed-in user is in it
    else:
        name = subject.removeprefix("@")
        if not _PLAIN_NAME.fullmatch(name) or len(name) > 128:
            return ()
        if subject.startswith("@") and names.group_relations:  # as the wiki's groupfilter finds it
            tokens = direct_tokens(names.group_relations, name)
        else:
            template = names.group_token if subject.startswith("@") else names.user_token
            tokens = [template.replace("{id}", name)] if template is not None else []
    try:
        return tuple(Grant.of(token, origin) for token in tokens)
    except AccessError:
        return ()


def _superuser(name: str, names: WikiNames) -> tuple[Grant, ...]:
    name = name.strip()
    return _token_of(name, names, f"DokuWiki superuser (option superuser): {name}") if name else ()
