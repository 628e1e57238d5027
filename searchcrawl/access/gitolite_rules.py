"""Gitolite's rules (``conf/gitolite.conf``) as who may read each repository: what a ``git``
source is indexed with (agents/git.py), decided as gitolite decides ``gitolite access <repo>
<user> R any`` (Gitolite::Conf::Load's ``access``).

The rules of a repository are those of every ``repo`` line naming it (by name, by a group of
repositories, by a pattern, or ``@all``), in the file's order. A user reads it when a rule naming
them (their name, a group of theirs, ``@all``) has ``R`` in its permission (``R``, ``RW``,
``RW+``, ``RWCD`` ...: the refs a rule names do not matter to reading); deny rules (``-``) count
for reading only where the repository's ``option deny-rules = 1``: then the first rule naming the
user, a deny or one with ``R``, decides.

As tokens (access/tokens.py): a group the file defines (``@staff = alice bob @admins``) is its
members, each a ``user_token`` (a group is expanded where it is defined, with the members its
groups have then; ``@all`` in a group is no one, as in gitolite); with ``group_token`` (set it
where gitolite's ``GROUPLIST_PGM`` gives users their directory groups), a group is also that
token, gitolite joining both (or, with ``group_relations``, the ``direct:`` tokens of the
LDAP filter GROUPLIST_PGM searches: one search, no nesting; gitolite compares the printed cn with
case, so a read is a ``direct:=`` token, none for a name with capitals; a deny of such a group is
927, below); ``@all`` is ``authenticated_token`` (unset: no one). Repository
patterns match as Perl's ``/^pattern$/``; ``.git`` ends no repository's name; ``deny-rules`` is
on where ``option deny-rules`` or ``config gitolite-options.deny-rules`` is true as Perl reads it. With ``deny-rules``: the denies before any read are deny tokens, the later ones late
denies overridden by the reads before them (read conservatively beyond: ``Access.notes`` says
so). What cannot be read for certain keeps a repository's files out of the index (status 927): an
``include`` or ``subconf`` (the rules are elsewhere), a line gitolite would refuse, a character
other than ASCII's or a control character outside a comment (Perl and Python see blanks
differently), a pattern Python's regular expressions do not read, a role (``CREATOR``,
``READERS``, ``WRITERS``: wild repositories' own), a deny of a name no token stands for or of a
group under ``group_relations`` (``_direct_grants``); and
(agents/git.py) a gitolite.conf newer than what gitolite compiled from it fails the listing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from searchcrawl.access.tokens import Access, AccessError, Grant, Level, direct_tokens, unique_grants

logger = logging.getLogger(__name__)

MAX_FILE_BYTES = 16 * 1024 * 1024
EVERYONE = "@all"
ROLES = ("CREATOR", "READERS", "WRITERS")
# gitolite's own patterns: a plain repository or user name; anything else on a repo line is a pattern
_PLAIN = re.compile(r"@?[0-9a-zA-Z][-0-9a-zA-Z._@/+]*")
_RULE = re.compile(r"(-|C|R|RW\+?(?:C?D?|D?C?)M?) (.* )?= (.+)")  # gitolite's own, on a line of single blanks
_GROUP = re.compile(r"(@[0-9a-zA-Z][-0-9a-zA-Z._@/+]*)\s*=\s*(.*)")
_IGNORED = re.compile(r"(?:config|option)\s.*|(?:desc|owner|category)\s*=.*")
# deny-rules, as the option or the config line the option stands for
_DENY_RULES = re.compile(r"(?:option deny-rules|config gitolite-options\.deny-rules) ?= ?(.*)")
_BLANKS = re.compile(r"[ \t\n\x0b\f\r]+")  # Perl's \s on bytes
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class GitoliteNames:
    user_token: str = "user:{id}"
    group_token: str | None = None
    authenticated_token: str | None = None
    # GROUPLIST_PGM prints the groups one LDAP search by a filter of these relations finds
    # (tokens.filter_relations): a group is their direct: tokens, instead of group_token
    group_relations: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True)
class GitoliteRule:
    repos: tuple[str, ...]  # the repo line's names, groups and patterns
    permission: str
    who: tuple[str, ...]
    origin: str  # "gitolite.conf line 7: R = @staff"


@dataclass
class GitoliteRules:
    """The rules of one gitolite.conf; ``access_of`` a repository's name."""

    groups: dict[str, list[str]] = field(default_factory=dict)
    rules: list[GitoliteRule] = field(default_factory=list)
    deny_rules: list[tuple[tuple[str, ...], bool]] = field(default_factory=list)  # per repo line, in order
    uncertain: str | None = None

    def access_of(self, repo: str, names: GitoliteNames) -> tuple[Access | None, str | None]:
        """Who may read ``repo`` (see the module's docstring); (None, why) when it cannot be
        read for certain."""
        if self.uncertain is not None:
            return None, self.uncertain
        allow: list[Grant] = []
        deny: list[Grant] = []  # before any read
        late: list[Grant] = []  # after one
        overriding: list[Grant] = []  # the reads before the first late deny
        conservative = False
        try:
            deny_rules = False
            for specs, value in self.deny_rules:
                if self._names_repo(specs, repo):
                    deny_rules = value
            for rule in self.rules:
                if not self._names_repo(rule.repos, repo):
                    continue
                if rule.permission == "-" and deny_rules:
                    grants = self._grants(rule, names, denies=True)
                    conservative = conservative or bool(late) and len(overriding) < len(allow)
                    (late if allow else deny).extend(grants)
                elif "R" in rule.permission:
                    grants = self._grants(rule, names, denies=False)
                    allow.extend(grants)
                    if not late:
                        overriding.extend(grants)
        except _Uncertain as error:
            return None, str(error)
        name = f"gitolite rules of {repo}"
        level = Level(name, unique_grants(allow))
        notes = (f"{name}: denies between reads, read conservatively",) if conservative else ()
        return Access(
            (level,),
            unique_grants(deny),
            notes,
            late_deny=unique_grants(late),
            overriding=unique_grants(overriding) if late else (),
        ), None

    def _grants(self, rule: GitoliteRule, names: GitoliteNames, denies: bool) -> list[Grant]:
        grants = []
        for who in rule.who:
            if who in ROLES:
                raise _Uncertain(f"{rule.origin}: a role, a wild repository's own")
            tokens = list(self._tokens(who, rule, names, denies))
            if not tokens and denies:
                raise _Uncertain(f"{rule.origin}: denies {who[:80]}, which no token stands for")
            grants.extend(tokens)
        return grants

    def _tokens(self, who: str, rule: GitoliteRule, names: GitoliteNames, denies: bool = False) -> Iterator[Grant]:
        """The tokens of a name a rule gives: a group's members as the file defined it (each
        group is expanded where it is defined, as gitolite does), and, with ``group_token``, the
        group as GROUPLIST_PGM gives it (gitolite joins both). With ``group_relations``, gitolite
        compares the printed cn with case: a read is the ``direct:=`` tokens (none for a name
        with capitals: fail closed), a deny the ``direct:`` ones, every spelling of the name."""
        if who == EVERYONE:
            if names.authenticated_token:
                yield Grant.of(names.authenticated_token, rule.origin)
            return
        if not who.startswith("@"):
            yield _grant(names.user_token, who, rule.origin)
            return
        for member in self.groups.get(who, ()):
            if not member.startswith("@"):  # a group in a group is the users it had then, already here
                yield _grant(names.user_token, member, rule.origin)
        if names.group_relations:
            yield from _direct_grants(names.group_relations, who[1:], rule.origin, denies)
        elif names.group_token:
            yield _grant(names.group_token, who[1:], rule.origin)

    def _names_repo(self, specs: tuple[str, ...], repo: str) -> bool:
        """Whether a repo line's names, groups or patterns name ``repo`` (a pattern matched as
        Perl's ``/^$pattern$/``)."""
        for spec in specs:
            if spec in (repo, EVERYONE):
                return True
            if spec.startswith("@") and _PLAIN.fullmatch(spec):
                if any(_matches(member, repo) for member in self.groups.get(spec, ())):
                    return True
            elif _matches(spec, repo):
                return True
        return False


def _matches(spec: str, repo: str) -> bool:
    if spec == repo:
        return True
    if _PLAIN.fullmatch(spec):
        return False
    try:
        return re.search("^" + spec + "$", repo) is not None
    except re.error:
        raise _Uncertain(f"the repository pattern {spec[:80]!r} cannot be read") from None


class _Uncertain(Exception):
    pass


def _direct_grants(relations: tuple[tuple[str, str | None], ...], name: str, origin: str, denies: bool) -> list[Grant]:
    """A group's ``direct:=`` grants (``GitoliteRules._tokens``), none for a name with capitals;
    a deny cannot be read for certain: gitolite splits what GROUPLIST_PGM prints on blanks (a cn
    ``finance team`` puts its members in ``@finance``), and the program's search may find groups
    the directory reading does not (``denies_exactly``)."""
    if denies:
        raise _Uncertain(f"{origin}: denies @{name[:80]}, a group GROUPLIST_PGM may give where the directory reading does not")
    if name != name.lower():
        logger.debug("gitolite: %s: @%s has capitals, which no direct:= token stands for: no read", origin, name[:80])
        return []
    return [_grant(template, name, origin) for template in direct_tokens(relations, "{id}", exact=True)]


def _grant(template: str, name: str, origin: str) -> Grant:
    """``name`` in ``template``: a name that keeps its meaning in a token (no @, no DN syntax)."""
    if not re.fullmatch(r"[0-9a-zA-Z][-0-9a-zA-Z._]*", name):
        raise _Uncertain(f"{origin}: {name[:80]!r} is no plain name")
    try:
        return Grant.of(template.replace("{id}", name), origin)
    except AccessError:
        raise _Uncertain(f"{origin}: {name[:80]!r} is no token") from None


def _define_group(rules: GitoliteRules, name: str, listed: list[str]) -> None:
    """A group line, expanded where it is defined (its groups' members as they are then)."""
    members = rules.groups.setdefault(name, [])
    for member in listed:
        if member == EVERYONE:
            continue  # gitolite looks a user's groups up by the user: @all in a group is no one
        members.extend(rules.groups.get(member, [member]) if member.startswith("@") else [member])


def read_gitolite(text: str, path: str) -> GitoliteRules:
    """The rules of a gitolite.conf (``path`` names it in origins), read as gitolite reads it:
    ``#`` begins a comment, blanks are ASCII's; a group is expanded where it is defined (its
    groups' members then; ``@all`` in a group is no one); ``.git`` ends no repository's name."""
    rules = GitoliteRules()
    label = path.rsplit("/", 1)[-1]
    repos: tuple[str, ...] = ()
    for number, raw in enumerate(text.split("\n"), start=1):
        content = raw.split("#", 1)[0]
        words = [word for word in _BLANKS.split(content) if word]
        if not words:
            continue
        line = " ".join(words)
        origin = f"{label} line {number}: {line[:200]}"
        if not line.isascii() or _CONTROL.search(line):
            rules.uncertain = rules.uncertain or f"{origin}: a character gitolite reads otherwise"
        elif words[0] == "repo":
            repos = tuple(word.removesuffix(".git") for word in words[1:])
        elif words[0] in ("include", "subconf"):
            rules.uncertain = rules.uncertain or f"{origin}: rules in another file are not read"
        elif group := _GROUP.fullmatch(line):
            _define_group(rules, group.group(1), group.group(2).split())
        elif rule := _RULE.fullmatch(line):
            if not repos:
                rules.uncertain = rules.uncertain or f"{origin}: a rule before any repo line"
            rules.rules.append(GitoliteRule(repos, rule.group(1), tuple(rule.group(3).split()), origin))
        elif deny := _DENY_RULES.fullmatch(line):
            value = deny.group(1).strip().strip("'\"")
            rules.deny_rules.append((repos, value not in ("", "0")))  # Perl's truth
        elif not _IGNORED.fullmatch(line):
            rules.uncertain = rules.uncertain or f"{origin}: a line gitolite's rules do not read"
    return rules
