"""Administration roles (issue 79): who may do what on the administration pages, without HTTP.

Three roles, each a set of permissions; every administration view asks its gate for one
permission (shared.admin_gate's required ``permission``; tests/web/test_views_shape.py holds that
every /admin route does):

* **administrator**: everything: the API tokens, backup and restore, explain-access and
  explain-answer (they show anyone's principals), the audit page, and all the others' pages;
* **operator**: the crawls: start, suspend, resume and stop, the sources' and runs' pages, their
  documents and explanations, the daily summary (reports and notifications);
* **relevance editor**: best bets, boosts and demotions, synonyms and stopwords, the judged sets'
  measures, "why is this hit here" and the query analytics.

Every role sees the overview. Roles come from the directory: SEARCHCRAWL_WEB_ADMINISTRATORS,
SEARCHCRAWL_WEB_OPERATORS and SEARCHCRAWL_WEB_RELEVANCE_EDITORS each list principals in the access
tokens' own form (``user:alice``, ``group:search-admins``, ``group:cn=search-admins,ou=groups,...``:
whatever `scrapy explain-access` shows as a user's principals), so several administrators sign in
by name with their directory password, and a group grants its members a role. A user's roles are
those whose lists hold one of their principals, asked again (from the directory's cache) on every
request: a user taken out of a group loses the role within the cache's lifetime. A directory that
cannot give a user's principals gives no role (fail closed). The account of
SEARCHCRAWL_WEB_USERNAME and SEARCHCRAWL_WEB_PASSWORD(_FILE), when set, is an administrator: the
account that works when the directory does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from searchcrawl.access.decision import Principals
from searchcrawl.access.ntfs import NETWORK_LOGON_SIDS
from searchcrawl.access.tokens import PUBLIC, AccessError, normal_token
from searchcrawl.system.translations import N_
from searchcrawl.system.translations import gettext as _


class Role(StrEnum):
    ADMINISTRATOR = "administrator"
    OPERATOR = "operator"
    RELEVANCE_EDITOR = "relevance editor"


class Permission(StrEnum):
    VIEW = "view"  # the overview
    OPERATE = "operate"  # the crawls: control, sources, runs, documents, explain, the daily summary
    RELEVANCE = "relevance"  # the relevance rules, their measures, why a hit is there, the query analytics
    ADMINISTER = "administer"  # API tokens, backup, explain-access and -answer, the audit page


GRANTS: dict[Role, frozenset[Permission]] = {
    Role.ADMINISTRATOR: frozenset(Permission),
    Role.OPERATOR: frozenset({Permission.VIEW, Permission.OPERATE}),
    Role.RELEVANCE_EDITOR: frozenset({Permission.VIEW, Permission.RELEVANCE}),
}
# each role as people read it on a page (worded where shown); the role's own value is what the
# settings, the log and the audit log name
ROLE_TITLES: dict[Role, str] = {
    Role.ADMINISTRATOR: N_("administrator"),
    Role.OPERATOR: N_("operator"),
    Role.RELEVANCE_EDITOR: N_("relevance editor"),
}
# the settings that list each role's principals
ROLE_SETTINGS = {
    Role.ADMINISTRATOR: "SEARCHCRAWL_WEB_ADMINISTRATORS",
    Role.OPERATOR: "SEARCHCRAWL_WEB_OPERATORS",
    Role.RELEVANCE_EDITOR: "SEARCHCRAWL_WEB_RELEVANCE_EDITORS",
}


# a comma that begins the next principal: a group's DN holds commas of its own (cn=ops,ou=groups,...)
NEXT_PRINCIPAL = re.compile(r",\s*(?=(?:user|group|uid|gid|sid)\s*:)", re.IGNORECASE)


def principal_list(value: str | Iterable[str] | None) -> list[str]:
    """A role setting's principals: a list as it is, or a text split at the commas that begin a
    principal (``user:carol, group:cn=ops,ou=groups,dc=example,dc=org`` is two)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in NEXT_PRINCIPAL.split(value) if part.strip()]
    return [str(part).strip() for part in value if str(part).strip()]


class RoleError(ValueError):
    """A role's list holds something that is no principal; the message names the setting."""


def may(roles: Iterable[Role], permission: Permission) -> bool:
    """Whether any of ``roles`` grants ``permission``."""
    return any(permission in GRANTS[role] for role in roles)


@dataclass(frozen=True)
class RoleMap:
    """Each role's principals (normal tokens)."""

    members: dict[Role, frozenset[str]]

    @classmethod
    def parse(cls, lists: dict[Role, Iterable[str]]) -> RoleMap:
        """The map of each role's listed principals, each checked as a token; ``public`` is
        refused (it would make every visitor an administrator of some kind)."""
        members: dict[Role, frozenset[str]] = {}
        for role, values in lists.items():
            tokens = set()
            for value in values:
                if not value.strip():
                    continue
                try:
                    token = normal_token(value.strip())
                except AccessError as exc:
                    raise RoleError(f"{ROLE_SETTINGS[role]}: {value.strip()!r} is not a principal: {exc}") from None
                if token == PUBLIC or token.removeprefix("sid:").upper() in NETWORK_LOGON_SIDS:
                    # public, and the SIDs every Windows user holds (Everyone, Authenticated Users, ...)
                    raise RoleError(f"{ROLE_SETTINGS[role]}: {value.strip()!r} would give the role to everyone")
                tokens.add(token)
            members[role] = frozenset(tokens)
        return cls(members)

    @property
    def any(self) -> bool:
        """Whether any role lists anyone (then directory users may log in to the administration)."""
        return any(self.members.values())

    def roles_of(self, principals: Principals) -> frozenset[Role]:
        """The roles of a user with ``principals``: none for a visitor or when the directory could
        not give them (``error``: fail closed); a partial list (a group walk cut) grants what it
        holds, as it can only lack roles, never add one."""
        if principals.user is None or principals.error:
            return frozenset()
        tokens = principals.tokens - {PUBLIC}
        return frozenset(role for role, listed in self.members.items() if listed & tokens)


@dataclass(frozen=True)
class AdminUser:
    """Who is on the administration pages: their name, how they logged in (``local``: the
    configured account; ``directory``) and their roles now."""

    name: str
    kind: str
    roles: frozenset[Role]

    def may(self, permission: Permission | str) -> bool:
        return may(self.roles, Permission(permission))

    @property
    def role_names(self) -> str:
        """The roles by their own names (``operator, relevance editor``): for the log and the audit
        log, in English whatever a page's language."""
        return ", ".join(sorted(self.roles)) or "none"

    @property
    def shown_roles(self) -> str:
        """The roles as a page shows them, in its language (``role_names`` in English)."""
        return ", ".join(_(ROLE_TITLES[role]) for role in sorted(self.roles)) or _("none")
