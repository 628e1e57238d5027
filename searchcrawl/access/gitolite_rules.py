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
members, each a ``user_token``; a group it does not define (one gitolite's ``GROUPLIST_PGM``
gives, from a directory) ``group_token`` (unset: no one); ``@all`` ``authenticated_token`` (unset:
no one). With ``deny-rules``: the denies before any read are deny tokens, the later ones late
denies overridden by the reads before them (read conservatively beyond: ``Access.notes`` says
so). What cannot be read for certain keeps a repository's files out of the index (status 927): an
``include`` or ``subconf`` (the rules are elsewhere), a line gitolite would refuse, a pattern
Python's regular expressions do not read, a role (``CREATOR``, ``READERS``, ``WRITERS``: wild
repositories' own), or a deny of a name no token stands for.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from searchcrawl.access.tokens import Access, AccessError, Grant, Level, unique_grants

MAX_FILE_BYTES = 16 * 1024 * 1024
EVERYONE = "@all"
ROLES = ("CREATOR", "READERS", "WRITERS")
# gitolite's own patterns: a plain repository or user name; anything else on a repo line is a pattern
_PLAIN = re.compile(r"@?[0-9a-zA-Z][-0-9a-zA-Z._@/+]*")
_RULE = re.compile(r"(-|C|R|RW\+?(?:C?D?|D?C?)M?) (.* )?= (.+)")  # gitolite's own, on a line of single blanks
_GROUP = re.compile(r"(@[0-9a-zA-Z][-0-9a-zA-Z._@/+]*)\s*=\s*(.*)")
_IGNORED = re.compile(r"(?:config|option(?!\s+deny-rules\b))\s.*|(?:desc|owner|category)\s*=.*")
_DENY_RULES = re.compile(r"option\s+deny-rules\s*=\s*(\S+)")


@dataclass(frozen=True)
class GitoliteNames:
    user_token: str = "user:{id}"
    group_token: str | None = None
    authenticated_token: str | None = None


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
            tokens = list(self._tokens(who, rule, names))
            if not tokens and denies:
                raise _Uncertain(f"{rule.origin}: denies {who[:80]}, which no token stands for")
            grants.extend(tokens)
        return grants

    def _tokens(self, who: str, rule: GitoliteRule, names: GitoliteNames, seen: frozenset[str] = frozenset()) -> Iterator[Grant]:
        """The tokens of a name a rule gives (a group's members, each once)."""
        if who == EVERYONE:
            if names.authenticated_token:
                yield Grant.of(names.authenticated_token, rule.origin)
            return
        if not who.startswith("@"):
            yield _grant(names.user_token, who, rule.origin)
            return
        members = self.groups.get(who)
        if members is None:  # a group gitolite gets elsewhere (GROUPLIST_PGM)
            if names.group_token:
                yield _grant(names.group_token, who[1:], rule.origin)
            return
        for member in members:
            if member not in seen:
                yield from self._tokens(member, rule, names, seen | {who})

    def _names_repo(self, specs: tuple[str, ...], repo: str, seen: frozenset[str] = frozenset()) -> bool:
        """Whether a repo line's names, groups or patterns name ``repo``."""
        for spec in specs:
            if spec in (repo, EVERYONE):
                return True
            if spec.startswith("@") and _PLAIN.fullmatch(spec):
                if spec not in seen and self._names_repo(tuple(self.groups.get(spec, ())), repo, seen | {spec}):
                    return True
            elif not _PLAIN.fullmatch(spec):
                try:
                    if re.fullmatch(spec, repo):
                        return True
                except re.error:
                    raise _Uncertain(f"the repository pattern {spec[:80]!r} cannot be read") from None
        return False


class _Uncertain(Exception):
    pass


def _grant(template: str, name: str, origin: str) -> Grant:
    """``name`` in ``template``: a name that keeps its meaning in a token (no @, no DN syntax)."""
    if not re.fullmatch(r"[0-9a-zA-Z][-0-9a-zA-Z._]*", name):
        raise _Uncertain(f"{origin}: {name[:80]!r} is no plain name")
    try:
        return Grant.of(template.replace("{id}", name), origin)
    except AccessError:
        raise _Uncertain(f"{origin}: {name[:80]!r} is no token") from None


def read_gitolite(text: str, path: str) -> GitoliteRules:
    """The rules of a gitolite.conf (``path`` names it in origins)."""
    rules = GitoliteRules()
    label = path.rsplit("/", 1)[-1]
    repos: tuple[str, ...] = ()
    for number, raw in enumerate(text.split("\n"), start=1):
        line = " ".join(raw.split("#", 1)[0].split())
        if not line:
            continue
        origin = f"{label} line {number}: {line[:200]}"
        words = line.split()
        if words[0] == "repo":
            repos = tuple(words[1:])
        elif words[0] in ("include", "subconf"):
            rules.uncertain = f"{origin}: rules in another file are not read"
        elif group := _GROUP.fullmatch(line):
            rules.groups.setdefault(group.group(1), []).extend(group.group(2).split())
        elif rule := _RULE.fullmatch(line):
            if not repos:
                rules.uncertain = f"{origin}: a rule before any repo line"
            rules.rules.append(GitoliteRule(repos, rule.group(1), tuple(rule.group(3).split()), origin))
        elif deny := _DENY_RULES.fullmatch(line):
            rules.deny_rules.append((repos, deny.group(1) == "1"))
        elif not _IGNORED.fullmatch(line):
            rules.uncertain = rules.uncertain or f"{origin}: a line gitolite's rules do not read"
    return rules
