"""Redmine's issue visibility as who may read each issue: what a ``redmine`` source is indexed with
(agents/redmine.py), decided as Redmine 5 decides (``Issue#visible?``, ``User#allowed_to?``,
``User#roles_for_project``).

A user may see an issue of an active project with the issue tracking module when they are an
administrator, or when one of their roles in the project lets them: the roles of their
membership (their own and their groups', which Redmine copies to each member), or, in a public
project, the Non member role (or the roles the project gives its "Non member users"), for a
user who is no member. A role lets them when it has ``view_issues`` (a Non member or Anonymous
role only in a public project), covers the issue's tracker, and its issues visibility allows:
``all`` every issue, ``default`` every issue but private ones they did not write and are not
assigned (themselves or a group of theirs), ``own`` only those they wrote or are assigned.

As tokens (access/tokens.py): each administrator and each member who sees the issue is a
``user_token``; what a public project shows non-members is ``authenticated_token`` (unset: each
active user who is no member, as a user token), with the members who do not see it, and the
users who may not sign in (locked, not yet activated), as deny tokens; what it shows anonymous
users (where Redmine lets them in) is ``anonymous_token`` (unset: no one), with each user who
does not see it signed in as a deny token (Redmine may show an issue to anonymous users and not
to signed-in non-members, if its roles say so). A user Redmine refuses must have a token of
their own: a login that is no token, or would be another's (``bob@partner`` is ``user:bob``),
keeps the issue out of the index (status 927) where that user would have to be refused, and
gives no read where they would be shown it. Exact for the users Redmine has when the crawl reads
them: a user added later is found by the next crawl.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from searchcrawl.access.tokens import Access, Grant, unique_grants

VISIBILITIES = ("all", "default", "own")


@dataclass(frozen=True)
class RedmineRole:
    """A role as Redmine keeps it: ``trackers`` None when its ``view_issues`` covers every tracker."""

    id: int
    name: str
    views_issues: bool
    visibility: str
    builtin: bool = False
    trackers: frozenset[int] | None = None


@dataclass(frozen=True)
class RedmineProject:
    """A project: public or not, its members' roles (user id -> role ids, groups' copied in) and
    what its non-members and anonymous users have (Redmine's built-in roles, or the roles the
    project gives "Non member users" and "Anonymous users")."""

    id: int
    identifier: str
    public: bool
    members: Mapping[int, tuple[int, ...]]
    non_member_roles: tuple[int, ...]
    anonymous_roles: tuple[int, ...]


@dataclass(frozen=True)
class RedmineIssue:
    id: int
    project: int
    tracker: int
    private: bool
    author: int | None
    assignee: int | None  # a user's or a group's id


@dataclass(frozen=True)
class RedmineUsers:
    """Redmine's users: the logins that are tokens of their own (id -> login), who may sign in
    (``active``), its administrators (active ones), every user's id, and its groups' members."""

    logins: Mapping[int, str]
    active: frozenset[int]
    admins: frozenset[int]
    known: frozenset[int] = frozenset()
    groups: Mapping[int, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class RedmineTokens:
    user_token: str = "user:{id}"
    authenticated_token: str | None = None
    anonymous_token: str | None = None
    anonymous_open: bool = True  # Redmine lets anonymous users in (no login_required)


class _NoToken(Exception):
    """A user who must be denied has no token of their own."""


def issue_access(
    issue: RedmineIssue, project: RedmineProject, roles: Mapping[int, RedmineRole], users: RedmineUsers, names: RedmineTokens
) -> tuple[Access | None, str | None]:
    """Who may read ``issue`` (see the module's docstring); (None, why) when a user who must be
    refused has no token of their own (a login that is no token, or another's)."""
    asked = _Asked(issue, project, roles, users, names)
    allow, members, blind = _admins_and_members(asked)
    others = sorted(users.active - set(members) - users.admins) if project.public else []
    broad = project.public and _non_members(asked, others, allow)
    anonymous = asked.sees(project.anonymous_roles, None, signed_in=False) if project.public else None
    if anonymous is not None and names.anonymous_token and names.anonymous_open:
        allow.append(Grant.of(names.anonymous_token, f"{asked.where}: public project, role {anonymous.name} (anonymous users)"))
        readers = {grant.token for grant in allow}
        # shown to anonymous users: each signed-in user it is not shown to is refused
        if not broad:
            blind.update(o for o in others if o not in users.logins or asked.user(o, "").token not in readers)
    elif broad and names.authenticated_token:
        blind.update(users.known - users.active)  # who cannot sign in sees nothing a signed-in user sees
    else:
        blind = set()  # nothing is shown to all: who is not named is not shown it
    try:
        deny = [asked.denied(user_id) for user_id in sorted(blind)]
    except _NoToken as error:
        return None, str(error)
    return Access.of(unique_grants(allow), deny, name=asked.where), None


def _admins_and_members(asked: _Asked) -> tuple[list[Grant], dict[int, tuple[int, ...]], set[int]]:
    """The administrators (who read every issue) and the project's members a role of theirs
    shows the issue to; the members (active, not administrators) by their roles; and the members
    no role shows it to."""
    users = asked.users
    allow = [asked.user(admin, "an administrator") for admin in sorted(users.admins) if admin in users.logins]
    members = {m: ids for m, ids in asked.project.members.items() if m in users.active and m not in users.admins}
    blind = set()
    for member, role_ids in sorted(members.items()):
        role = asked.sees(role_ids, member)
        if role is None:
            blind.add(member)
        elif member in users.logins:
            allow.append(asked.user(member, f"member, role {role.name}"))
    return allow, members, blind


@dataclass(frozen=True)
class _Asked:
    """One issue's question, and what answers it."""

    issue: RedmineIssue
    project: RedmineProject
    roles: Mapping[int, RedmineRole]
    users: RedmineUsers
    names: RedmineTokens

    @property
    def where(self) -> str:
        return f"Redmine issue #{self.issue.id} of {self.project.identifier}"

    def user(self, user_id: int, why: str) -> Grant:
        return Grant.of(self.names.user_token.replace("{id}", self.users.logins[user_id]), f"{self.where}: {why}")

    def denied(self, user_id: int) -> Grant:
        if user_id not in self.users.logins:
            raise _NoToken(f"{self.where}: user #{user_id}, who may not read it, has a login that is no token of their own")
        why = "no role of theirs shows it to them" if user_id in self.users.active else "may not sign in"
        return self.user(user_id, why)

    def sees(self, role_ids: tuple[int, ...], user_id: int | None, signed_in: bool = True) -> RedmineRole | None:
        """The first of these roles that shows the issue to the user (None: to any user)."""
        for role_id in role_ids:
            role = self.roles.get(role_id)
            if role is not None and role_sees(role, self.issue, self.project, user_id, self.users, signed_in):
                return role
        return None


def _non_members(asked: _Asked, others: list[int], allow: list[Grant]) -> bool:
    """What a public project shows the signed-in users who are no member, added to ``allow``;
    whether it shows the issue to all of them (the token of every signed-in user, or each)."""
    role = asked.sees(asked.project.non_member_roles, None)
    if role is not None:
        origin = f"{asked.where}: public project, role {role.name} (every signed-in user who is no member)"
        if asked.names.authenticated_token:
            allow.append(Grant.of(asked.names.authenticated_token, origin))
        else:
            allow.extend(asked.user(o, f"public project, role {role.name}, no member") for o in others if o in asked.users.logins)
        return True
    for other in (asked.issue.author, *assignees(asked.issue, asked.users)):  # a private issue of theirs
        if other in others and other in asked.users.logins:
            own = asked.sees(asked.project.non_member_roles, other)
            if own is not None:
                allow.append(asked.user(other, f"public project, role {own.name}, their own issue"))
    return False


def role_sees(
    role: RedmineRole,
    issue: RedmineIssue,
    project: RedmineProject,
    user_id: int | None,
    users: RedmineUsers,
    signed_in: bool = True,
) -> bool:
    """Whether ``role`` shows ``issue`` to the user ``user_id`` (None: any user, for a role that
    shows it whoever they are), as Redmine's ``Issue#visible?`` asks it."""
    if not role.views_issues or (role.builtin and not project.public):
        return False
    if role.trackers is not None and issue.tracker not in role.trackers:
        return False
    if not signed_in:
        return not issue.private
    own = user_id is not None and (user_id == issue.author or user_id in assignees(issue, users))
    if role.visibility == "all":
        return True
    if role.visibility == "default":
        return not issue.private or own
    return role.visibility == "own" and own


def assignees(issue: RedmineIssue, users: RedmineUsers) -> tuple[int, ...]:
    """The users an issue is assigned to: the user, or the members of the group."""
    if issue.assignee is None:
        return ()
    return tuple(sorted(users.groups.get(issue.assignee, frozenset({issue.assignee}))))
