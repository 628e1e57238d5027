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
active user who is no member, as a user token), with the members who do not see it as deny
tokens; what it shows anonymous users is ``anonymous_token`` (unset: no one). Exact for the
users Redmine has when the crawl reads them: a user added later is found by the next crawl.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from searchcrawl.access.tokens import Access, Grant, unique_grants

VISIBILITIES = ("all", "default", "own")


@dataclass(frozen=True)
class Role:
    """A role as Redmine keeps it: ``trackers`` None when its ``view_issues`` covers every tracker."""

    id: int
    name: str
    views_issues: bool
    visibility: str
    builtin: bool = False
    trackers: frozenset[int] | None = None


@dataclass(frozen=True)
class Project:
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
class Issue:
    id: int
    project: int
    tracker: int
    private: bool
    author: int | None
    assignee: int | None  # a user's or a group's id


@dataclass(frozen=True)
class Directory:
    """Redmine's active users (id -> login), its administrators, and its groups' members."""

    logins: Mapping[int, str]
    admins: frozenset[int]
    groups: Mapping[int, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class TokenNames:
    user_token: str = "user:{id}"
    authenticated_token: str | None = None
    anonymous_token: str | None = None


def issue_access(issue: Issue, project: Project, roles: Mapping[int, Role], users: Directory, names: TokenNames) -> Access:
    """Who may read ``issue`` (see the module's docstring)."""
    where = f"Redmine issue #{issue.id} of {project.identifier}"

    def user(user_id: int, why: str) -> Grant:
        return Grant.of(names.user_token.replace("{id}", users.logins[user_id]), f"{where}: {why}")

    def sees(role_ids: tuple[int, ...], user_id: int | None, signed_in: bool = True) -> Role | None:
        for role_id in role_ids:
            role = roles.get(role_id)
            if role is not None and role_sees(role, issue, project, user_id, users, signed_in):
                return role
        return None

    allow = [user(admin, "an administrator") for admin in sorted(users.admins) if admin in users.logins]
    members = {member: ids for member, ids in project.members.items() if member in users.logins and member not in users.admins}
    blind = []
    for member, role_ids in sorted(members.items()):
        role = sees(role_ids, member)
        if role is not None:
            allow.append(user(member, f"member, role {role.name}"))
        else:
            blind.append(member)
    shown_to_others = False
    if project.public:
        role = sees(project.non_member_roles, None)
        if role is not None:
            shown_to_others = True
            origin = f"{where}: public project, role {role.name} (every signed-in user who is no member)"
            if names.authenticated_token:
                allow.append(Grant.of(names.authenticated_token, origin))
            else:
                others = sorted(set(users.logins) - set(members) - users.admins)
                allow.extend(user(other, f"public project, role {role.name}, no member") for other in others)
        else:  # what a non-member sees of their own issues (a private issue they wrote)
            for other in (issue.author, *assignees(issue, users)):
                if other is not None and other in users.logins and other not in members and other not in users.admins:
                    own = sees(project.non_member_roles, other)
                    if own is not None:
                        allow.append(user(other, f"public project, role {own.name}, their own issue"))
        anonymous = sees(project.anonymous_roles, None, signed_in=False)
        if anonymous is not None and names.anonymous_token:
            shown_to_others = True
            allow.append(Grant.of(names.anonymous_token, f"{where}: public project, role {anonymous.name} (anonymous users)"))
    deny = [user(member, "member, no role of theirs shows it") for member in blind] if shown_to_others else []
    return Access.of(unique_grants(allow), deny, name=where)


def role_sees(role: Role, issue: Issue, project: Project, user_id: int | None, users: Directory, signed_in: bool = True) -> bool:
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


def assignees(issue: Issue, users: Directory) -> tuple[int, ...]:
    """The users an issue is assigned to: the user, or the members of the group."""
    if issue.assignee is None:
        return ()
    return tuple(sorted(users.groups.get(issue.assignee, frozenset({issue.assignee}))))
