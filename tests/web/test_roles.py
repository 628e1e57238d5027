"""Administration roles without HTTP (issue 79: searchcrawl/web/roles.py): the roles' permissions,
a role map read from the settings' lists, fail closed when the directory cannot give principals;
and, from the syntax tree, every administration view asks its gate for a permission."""

from __future__ import annotations

import ast

import pytest

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.web.roles import AdminUser, Permission, Role, RoleError, RoleMap, may, principal_list
from tests.conftest import ROOT
from tests.syntax_trees import tree_of, walk


def test_each_role_grants_its_permissions() -> None:
    assert may([Role.ADMINISTRATOR], Permission.ADMINISTER) and may([Role.ADMINISTRATOR], Permission.OPERATE)
    assert may([Role.OPERATOR], Permission.OPERATE) and not may([Role.OPERATOR], Permission.RELEVANCE)
    assert may([Role.RELEVANCE_EDITOR], Permission.RELEVANCE) and not may([Role.RELEVANCE_EDITOR], Permission.OPERATE)
    assert all(may([role], Permission.VIEW) for role in Role)
    assert not may([Role.OPERATOR, Role.RELEVANCE_EDITOR], Permission.ADMINISTER)
    assert not may([], Permission.VIEW)
    assert AdminUser("x", "directory", frozenset()).role_names == "none"


def principals(user: str, *tokens: str, error: str = "") -> Principals:
    return Principals.of(user, [Principal(token, "test") for token in tokens], error)


def test_roles_come_from_principals_and_a_directory_that_fails_gives_none() -> None:
    mapped = RoleMap.parse(
        {
            Role.ADMINISTRATOR: ["user:carol", " "],
            Role.OPERATOR: ["group:cn=finance,ou=groups,dc=example,dc=org", "GROUP:ops"],
            Role.RELEVANCE_EDITOR: [],
        }
    )
    assert mapped.any
    assert mapped.roles_of(principals("carol", "user:carol")) == {Role.ADMINISTRATOR}
    assert mapped.roles_of(principals("alice", "user:alice", "group:cn=finance,ou=groups,dc=example,dc=org")) == {Role.OPERATOR}
    assert mapped.roles_of(principals("dave", "user:dave", "group:ops")) == {Role.OPERATOR}  # tokens are normalised alike
    assert mapped.roles_of(principals("carol", "user:carol", error="the directory does not answer")) == frozenset()
    assert mapped.roles_of(Principals.anonymous()) == frozenset()
    assert mapped.roles_of(principals("bob", "user:bob")) == frozenset()
    assert not RoleMap.parse({}).any


@pytest.mark.parametrize(
    "value", ["public", "PUBLIC", "nobody", "user:", "sid:S-1-1-0", "sid:s-1-5-11", "sid:S-1-5-2", "sid:S-1-5-15"]
)
def test_a_role_list_holding_no_principal_or_everyone_is_refused(value: str) -> None:
    with pytest.raises(RoleError, match="SEARCHCRAWL_WEB_OPERATORS"):
        RoleMap.parse({Role.OPERATOR: [value]})


def test_every_gate_asks_for_a_permission_by_name() -> None:
    """Syntax tree: every call of shared.admin_gate names the permission it asks (mypy holds that
    one is given); None, any session, only where logging out."""
    found = []
    web = ROOT / "searchcrawl" / "web"
    for path in sorted(web.rglob("*.py")):
        tree = tree_of(path)
        for function in walk(tree):
            if not isinstance(function, ast.AsyncFunctionDef | ast.FunctionDef):
                continue
            for node in walk(function):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "admin_gate":
                    given = {keyword.arg: keyword.value for keyword in node.keywords}
                    assert "permission" in given, f"{path.relative_to(web)}:{node.lineno}"
                    value = given["permission"]
                    if isinstance(value, ast.Constant) and value.value is None:
                        found.append(f"{path.relative_to(web).as_posix()}:{function.name}")
                    else:
                        assert isinstance(value, ast.Attribute) and getattr(value.value, "id", None) == "Permission", ast.unparse(
                            value
                        )
    assert found == ["views/sign_on_views.py:logout"]


def test_a_role_setting_splits_at_the_commas_that_begin_a_principal() -> None:
    """A group's DN holds commas: `scrapy web` refused group:cn=finance,ou=groups,... as "ou=groups"."""
    given = "user:carol, group:cn=ops,ou=groups,dc=example,dc=org,GROUP:editors ,uid:1002"
    assert principal_list(given) == ["user:carol", "group:cn=ops,ou=groups,dc=example,dc=org", "GROUP:editors", "uid:1002"]
    assert principal_list(["user:a", " "]) == ["user:a"] and principal_list(None) == principal_list("") == []


def test_one_users_logins_end_their_own_oldest_sessions_never_anothers() -> None:
    """A hostile review: 1,000 logins of one user ended every other administrator's session."""
    from searchcrawl.web.sign_on.sessions import MAX_SESSIONS_PER_USER, Sessions

    sessions = Sessions(("admin", "pw"), max_sessions=1000)
    other = sessions.login("carol", "directory")
    tokens = [sessions.login("bob", "directory") for _ in range(MAX_SESSIONS_PER_USER + 5)]
    assert sessions.get(other) is not None
    assert [sessions.get(token) is not None for token in tokens] == [False] * 5 + [True] * MAX_SESSIONS_PER_USER
