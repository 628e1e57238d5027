"""Administration roles and the audit log (issue 79 point 2: web/roles.py, store/audit_log.py)
against a real LDAP directory (slapd, tests/directory_server.py) and a real Solr: directory users
log in by name with their directory password, each gets the pages and forms of their role and a
403 on every other administration route of the route table (read from the application itself, so
a route added later is checked too); a role granted through nested groups; a user with no role
cannot log in; a role taken away is gone at the next request; every change is on the audit page,
who with which roles, what and when."""

from __future__ import annotations

import re
from typing import Any

import pytest
from scrapy.settings import Settings
from starlette.routing import Route
from starlette.testclient import TestClient

from searchcrawl.access.directory_setting import directory_of
from searchcrawl.web.app import create_app
from searchcrawl.web.roles import Role, RoleMap
from tests.conftest import Project
from tests.directory_server import DirectoryServer
from tests.e2e.test_web import PASSWORD, web_config
from tests.e2e.test_web_access import settings_of

SOURCE = "roles-site"
# the permission each administration page asks, by its path (the documented matrix of web/roles.py)
OPERATE, RELEVANCE, ADMINISTER, VIEW = "operate", "relevance", "administer", "view"
PAGES = {
    "/admin": VIEW,
    "/admin/runs/{run:int}": OPERATE,
    "/admin/sources/{name}": OPERATE,
    "/admin/sources/{name}/documents": OPERATE,
    "/admin/sources/{name}/explain": OPERATE,
    "/admin/sources/{name}/control": OPERATE,
    "/admin/summary": OPERATE,
    "/admin/relevance": RELEVANCE,
    "/admin/relevance/measure": RELEVANCE,
    "/admin/why": RELEVANCE,
    "/admin/analytics": RELEVANCE,
    "/admin/analytics.csv": RELEVANCE,
    "/admin/explain-access": ADMINISTER,
    "/admin/explain-answer": ADMINISTER,
    "/admin/api": ADMINISTER,
    "/admin/api/{token:int}/revoke": ADMINISTER,
    "/admin/backup": ADMINISTER,
    "/admin/backup/export": ADMINISTER,
    "/admin/backup/import": ADMINISTER,
    "/admin/backup/restore": ADMINISTER,
    "/admin/audit": ADMINISTER,
    "/admin/source-files": ADMINISTER,
    "/admin/new-source": ADMINISTER,
    "/admin/source-files/{name}": ADMINISTER,
    "/admin/source-files/{name}/{action}": ADMINISTER,
    "/admin/test-crawl": ADMINISTER,
}
# the login forms, single sign-on's starts, and logging out (any session)
OPEN = {"/admin/login", "/admin/logout", "/admin/login/oidc", "/admin/login/saml", "/admin/login/kerberos"}
GRANTS = {
    "alice": {VIEW, OPERATE},  # an operator through accounting, which is in finance
    "bob": {VIEW, RELEVANCE},
    "carol": {VIEW, OPERATE, RELEVANCE, ADMINISTER},
    "admin": {VIEW, OPERATE, RELEVANCE, ADMINISTER},  # the configured account
}


def roles(server: DirectoryServer) -> RoleMap:
    return RoleMap.parse(
        {
            Role.ADMINISTRATOR: ["user:carol"],
            Role.OPERATOR: [f"group:{server.group_dn('finance')}"],
            Role.RELEVANCE_EDITOR: ["user:bob"],
        }
    )


@pytest.fixture
def settings(directory_server: DirectoryServer, monkeypatch: pytest.MonkeyPatch) -> Settings:
    return settings_of(directory_server, monkeypatch)


def app_of(project: Project, settings: Settings, server: DirectoryServer, **changes: Any) -> Any:
    project.source(SOURCE, 'seeds = ["http://127.0.0.1:9/"]\n')
    project.data_dir.mkdir(parents=True, exist_ok=True)
    config = web_config(project, roles=roles(server), **changes)
    config.directory = directory_of(settings)
    return create_app(config)


def log_in(web: TestClient, user: str, password: str) -> tuple[int, str]:
    """The login form as a browser sends it: its status, and the session's CSRF token."""
    form = web.get("/admin/login")
    token = re.search(r'name="login_token" value="([^"]+)"', form.text)
    assert token is not None, form.text[:2000]
    answer = web.post(
        "/admin/login", data={"login_token": token[1], "username": user, "password": password}, follow_redirects=False
    )
    if answer.status_code != 303:
        return answer.status_code, answer.text
    page = web.get("/admin")
    found = re.search(r'name="csrf" value="([^"]+)"', page.text) or re.search(
        r'name="csrf" value="([^"]+)"', web.get("/admin/audit").text
    )
    return 303, found[1] if found else ""


def admin_routes(app: Any) -> list[tuple[str, set[str]]]:
    return [
        (route.path, set(route.methods or ()))
        for route in app.routes
        if isinstance(route, Route) and route.path.startswith("/admin")
    ]


def concrete(path: str) -> str:
    return path.replace("{name}", SOURCE).replace("{run:int}", "1").replace("{token:int}", "1").replace("{action}", "nothing")


def test_each_role_gets_its_pages_and_a_403_on_every_other_admin_route(
    project: Project, settings: Settings, directory_server: DirectoryServer
) -> None:
    app = app_of(project, settings, directory_server)
    routes = admin_routes(app)
    assert {path for path, _methods in routes} == set(PAGES) | OPEN, "a new administration route: give it its permission here"
    passwords = {**directory_server.passwords, "admin": PASSWORD}
    for user, granted in GRANTS.items():
        web = TestClient(app, base_url="http://127.0.0.1")
        status, csrf = log_in(web, user, passwords[user])
        assert status == 303, (user, csrf[:500])
        for path, methods in routes:
            if path in OPEN:
                continue
            allowed = PAGES[path] in granted
            for method in sorted(methods - {"HEAD"}):
                if method == "GET":
                    answer = web.get(concrete(path), follow_redirects=False)
                else:
                    answer = web.post(concrete(path), data={"csrf": csrf}, follow_redirects=False)
                assert (answer.status_code != 403) == allowed, (user, method, path, answer.status_code, answer.text[:300])
                if not allowed:
                    assert "do not allow this page" in answer.text
        overview = web.get("/admin").text
        assert ('href="/admin/api"' in overview) == (ADMINISTER in granted), user
        assert ('href="/admin/relevance"' in overview) == (RELEVANCE in granted), user
        assert ('class="inline control"' in overview or 'name="action"' in overview) == (OPERATE in granted), user


def test_a_directory_user_with_no_role_cannot_log_in_and_a_role_taken_away_is_gone_at_once(
    project: Project, settings: Settings, directory_server: DirectoryServer
) -> None:
    app = app_of(project, settings, directory_server)
    web = TestClient(app, base_url="http://127.0.0.1")
    status, text = log_in(web, "alice", "wrong-password")
    assert status == 403 and "Wrong user name or password, or no administration role." in text
    # carol's password is right; without a role she is told so, and no session is made
    app.state.web.config.roles = RoleMap.parse({Role.OPERATOR: ["user:alice"]})
    status, text = log_in(web, "carol", directory_server.passwords["carol"])
    assert status == 403 and "Wrong user name or password, or no administration role." in text  # no word that it was right
    assert web.get("/admin", follow_redirects=False).status_code == 303  # to the login form
    status, _csrf = log_in(web, "alice", directory_server.passwords["alice"])
    assert status == 303 and web.get("/admin/summary").status_code == 200
    app.state.web.config.roles = RoleMap.parse({Role.RELEVANCE_EDITOR: ["user:alice"]})  # her role changed
    assert web.get("/admin/summary").status_code == 403
    assert web.get("/admin/relevance").status_code == 200


def test_every_change_is_on_the_audit_page_who_with_which_roles_what_and_when(
    project: Project, settings: Settings, directory_server: DirectoryServer
) -> None:
    app = app_of(project, settings, directory_server)
    passwords = directory_server.passwords
    alice, bob, carol = (TestClient(app, base_url="http://127.0.0.1") for _ in range(3))
    _s, alice_csrf = log_in(alice, "alice", passwords["alice"])
    _s, bob_csrf = log_in(bob, "bob", passwords["bob"])
    _s, carol_csrf = log_in(carol, "carol", passwords["carol"])
    alice.post(f"/admin/sources/{SOURCE}/control", data={"csrf": alice_csrf, "action": "start"}, follow_redirects=False)
    assert bob.post("/admin/relevance", data={"csrf": bob_csrf, "action": "add-stopword", "word": "quayside"}).status_code in (
        200,
        303,
    )
    refused = bob.post(f"/admin/sources/{SOURCE}/control", data={"csrf": bob_csrf, "action": "stop"}, follow_redirects=False)
    assert refused.status_code == 403  # refused: no change, nothing recorded
    carol.post("/admin/api", data={"csrf": carol_csrf, "name": "portal <b>x</b>"}, follow_redirects=False)
    page = carol.get("/admin/audit").text
    rows = re.findall(
        r"<tr>\s*<td><time datetime=\"[^\"]+\">([^<]+)</time></td>\s*<td><a [^>]*>([^<]+)</a></td>\s*<td>([^<]*)</td>\s*"
        r'<td class="action">([^<]+)</td>\s*<td>([^<]*)</td>',
        page,
    )
    actions = [(user, roles, action, target) for _at, user, roles, action, target in rows]
    assert ("alice", "operator (directory)", "control:start", SOURCE) in actions
    assert ("bob", "relevance editor (directory)", "relevance:add-stopword", "stopword") in actions
    assert any(
        (user, roles, action) == ("carol", "administrator (directory)", "token:make")
        and target.endswith(" portal &lt;b&gt;x&lt;/b&gt;")
        for user, roles, action, target in actions
    )
    assert {("alice", "login"), ("bob", "login"), ("carol", "login")} <= {(user, action) for user, _r, action, _t in actions}
    assert not any(user == "bob" and action.startswith("control") for user, _r, action, _t in actions)
    english = r"[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d\d:\d\d\u202f[AP]M"  # CLDR English: Nov 27, 2026, 5:42:41 PM
    assert all(re.fullmatch(english, at) for at, *_rest in rows)
    assert carol.get("/admin/audit", params={"user": "bob"}).text.count('<td class="action">') == 2  # login, stopword
    assert bob.get("/admin/audit").status_code == 403
