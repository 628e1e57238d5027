"""Redmine's issue visibility as tokens (searchcrawl/access/redmine_roles.py), against Redmine 5's
rule asked user by user (``User#roles_for_project``, ``User#allowed_to?``, ``Issue#visible?``,
app/models of Debian's redmine 5.0.4) on random projects, roles, memberships and issues: each
searcher, signed in or not, is granted exactly what Redmine shows them."""

from __future__ import annotations

import random

from searchcrawl.access.decision import Principal, Principals, decide
from searchcrawl.access.redmine_roles import (
    RedmineIssue,
    RedmineProject,
    RedmineRole,
    RedmineTokens,
    RedmineUsers,
    issue_access,
    role_sees,
)

USERS = {1: "ann", 2: "ben", 3: "cid", 4: "dee", 5: "eve", 6: "root"}
GROUPS = {10: frozenset({1, 2}), 11: frozenset({3})}
NON_MEMBER, ANONYMOUS = 1, 2


def redmine_sees(
    user: int | None, issue: RedmineIssue, project: RedmineProject, roles: dict[int, RedmineRole], users: RedmineUsers
) -> bool:
    """Redmine's own rule for one user (None: anonymous); a locked user sees what an anonymous one does."""
    if user is not None and user not in users.active:
        user = None
    if user is not None and user in users.admins:
        return True
    if user is not None and user in project.members:
        own_roles = project.members[user]
    elif project.public:
        own_roles = project.non_member_roles if user is not None else project.anonymous_roles
    else:
        own_roles = ()
    return any(role_sees(roles[r], issue, project, user, users, signed_in=user is not None) for r in own_roles)


def random_world(rng: random.Random) -> tuple[dict[int, RedmineRole], RedmineProject, RedmineUsers]:
    def role(role_id: int, builtin: bool = False) -> RedmineRole:
        trackers = None if rng.random() < 0.7 else frozenset(rng.sample((1, 2, 3), rng.randint(0, 2)))
        return RedmineRole(role_id, f"r{role_id}", rng.random() < 0.8, rng.choice(("all", "default", "own")), builtin, trackers)

    roles = {NON_MEMBER: role(NON_MEMBER, True), ANONYMOUS: role(ANONYMOUS, True), **{i: role(i) for i in (3, 4, 5)}}
    members = {user: tuple(rng.sample((3, 4, 5), rng.randint(1, 2))) for user in USERS if rng.random() < 0.4}
    project = RedmineProject(
        7, "p", rng.random() < 0.6, members,
        (rng.choice((NON_MEMBER, 3)),), (rng.choice((ANONYMOUS, 4)),),
    )  # fmt: skip
    active = frozenset(user for user in USERS if rng.random() < 0.9)  # the others locked
    admins = frozenset({6} & active) if rng.random() < 0.7 else frozenset()
    users = RedmineUsers(USERS, active, admins, frozenset(USERS), GROUPS)
    return roles, project, users


def principals_of(user: int | None, authenticated: str | None) -> Principals:
    if user is None:
        return Principals.anonymous()
    tokens = [f"user:{USERS[user]}", *([authenticated] if authenticated else [])]
    return Principals.of(USERS[user], [Principal(token, "test") for token in tokens])


def test_each_user_is_granted_exactly_what_redmine_shows_them() -> None:
    rng = random.Random(7805)
    shown = hidden = 0
    for _ in range(2000):
        roles, project, users = random_world(rng)
        issue = RedmineIssue(
            rng.randint(1, 999), 7, rng.choice((1, 2, 3)), rng.random() < 0.4,
            rng.choice((None, *USERS)), rng.choice((None, *USERS, 10, 11)),
        )  # fmt: skip
        for names in (RedmineTokens(), RedmineTokens(authenticated_token="group:staff", anonymous_token="public")):
            access, why = issue_access(issue, project, roles, users, names)
            assert access is not None, why
            for user in (None, *USERS):
                expected = redmine_sees(user, issue, project, roles, users)
                if user is None and not names.anonymous_token:
                    expected = False  # what Redmine shows anonymous users is no one's, unset
                if user is not None and user not in users.active and not names.anonymous_token:
                    expected = False
                granted = decide(access, principals_of(user, names.authenticated_token)).granted
                assert granted == expected, (USERS.get(user or 0), issue, project, roles, access)
                shown += granted
                hidden += not granted
    assert shown > 1000 and hidden > 1000


def test_a_group_assignee_a_tracker_and_a_private_issue() -> None:
    roles = {
        NON_MEMBER: RedmineRole(NON_MEMBER, "Non member", True, "default", True),
        ANONYMOUS: RedmineRole(ANONYMOUS, "Anonymous", False, "default", True),
        3: RedmineRole(3, "Reporter", True, "default"),
        4: RedmineRole(4, "Auditor", True, "all", trackers=frozenset({3})),
    }
    project = RedmineProject(7, "harbour", True, {1: (3,), 3: (4,)}, (NON_MEMBER,), (ANONYMOUS,))
    users = RedmineUsers(USERS, frozenset(USERS), frozenset({6}), frozenset(USERS), GROUPS)
    private = RedmineIssue(5, 7, 1, True, author=4, assignee=10)  # assigned to a group of ann and ben
    access, _ = issue_access(private, project, roles, users, RedmineTokens())
    assert access is not None
    readers = {grant.token: grant.origin for grant in access.levels[0].allow}
    assert set(readers) == {"user:root", "user:ann", "user:ben", "user:dee"}
    assert readers["user:ann"] == "Redmine issue #5 of harbour: member, role Reporter"
    assert readers["user:ben"].endswith("public project, role Non member, their own issue")
    support = RedmineIssue(6, 7, 3, False, author=None, assignee=None)
    access, _ = issue_access(support, project, roles, users, RedmineTokens(authenticated_token="group:staff"))
    assert access is not None
    assert {g.token for g in access.levels[0].allow} == {"user:root", "user:ann", "user:cid", "group:staff"}
    assert not access.deny
    bug = RedmineIssue(8, 7, 1, False, author=None, assignee=None)
    access, _ = issue_access(bug, project, roles, users, RedmineTokens(authenticated_token="group:staff"))
    assert access is not None
    assert [g.token for g in access.deny] == ["user:cid"]  # a member whose roles do not cover the tracker


def test_a_login_that_is_no_token_of_its_own_refuses_rather_than_shows() -> None:
    roles = {
        NON_MEMBER: RedmineRole(NON_MEMBER, "Non member", True, "all", True),
        ANONYMOUS: RedmineRole(ANONYMOUS, "Anonymous", False, "default", True),
        3: RedmineRole(3, "Watcher", True, "own"),
    }
    logins = {uid: login for uid, login in USERS.items() if uid != 2}  # ben's login is "ben@partner"
    users = RedmineUsers(logins, frozenset(USERS), frozenset(), frozenset(USERS), GROUPS)
    project = RedmineProject(7, "harbour", True, {2: (3,)}, (NON_MEMBER,), (ANONYMOUS,))
    issue = RedmineIssue(9, 7, 1, False, author=1, assignee=None)
    access, why = issue_access(issue, project, roles, users, RedmineTokens(authenticated_token="group:staff"))
    assert access is None and why is not None and "user #2" in why  # ben must be refused: no token says so
    private = RedmineProject(7, "harbour", False, {2: (3,), 3: (3,)}, (NON_MEMBER,), (ANONYMOUS,))
    own = RedmineIssue(10, 7, 1, False, author=2, assignee=3)
    access, _ = issue_access(own, private, roles, users, RedmineTokens())
    assert access is not None and {g.token for g in access.levels[0].allow} == {"user:cid"}  # ben's read left out
    locked = RedmineUsers(USERS, frozenset(USERS) - {4}, frozenset(), frozenset(USERS), GROUPS)
    access, _ = issue_access(issue, project, roles, locked, RedmineTokens(authenticated_token="group:staff"))
    assert access is not None and "user:dee" in {g.token for g in access.deny}  # may not sign in
