"""Single sign-on with OpenID Connect (issue 79 point 3: web/sign_on/oidc.py) against a real provider
(panva's oidc-provider under Node.js, tests/oidc_server.py) and a real Solr: a searcher signs in at
the provider and sees what their principals (from the ID token's groups, or from the real LDAP
directory) may read; an administrator's role comes from the same principals, and a user without
one gets no session; a forged, replayed or foreign answer from the provider is refused."""

from __future__ import annotations

import re
import uuid
from urllib.parse import urlsplit

import pysolr
import pytest
import requests
from scrapy.settings import Settings
from starlette.testclient import TestClient

from searchcrawl.access.directory_setting import directory_of
from searchcrawl.access.tokens import LEVEL_FIELDS, PUBLIC
from searchcrawl.web.app import create_app
from searchcrawl.web.roles import Role, RoleMap
from searchcrawl.web.sign_on.oidc import OidcConfig
from tests.conftest import Project
from tests.directory_server import DirectoryServer
from tests.e2e.test_web import web_config
from tests.e2e.test_web_access import settings_of
from tests.oidc_server import OidcProvider


def corpus(solr: pysolr.Solr, readers: dict[str, list[str]]) -> tuple[str, str]:
    """Documents of a source of their own, each readable by the tokens ``readers`` gives it, all
    holding one word: (source, word)."""
    source, word = f"sso-{uuid.uuid4().hex[:8]}", "quaysso" + uuid.uuid4().hex[:8]
    docs = []
    for name, tokens in readers.items():
        url = f"https://intranet.example/{source}/{name}"
        doc: dict[str, object] = {
            "id": f"{source}!{url}",
            "url": url,
            "source": source,
            "title": name,
            "content": f"{word} {name}",
        }
        for index, field in enumerate(LEVEL_FIELDS):
            doc[field] = tokens if index == 0 else [PUBLIC]
        docs.append(doc)
    solr.add(docs)
    return source, word


def config(provider: OidcProvider, principals: str = "auto") -> OidcConfig:
    return OidcConfig(
        issuer=provider.issuer,
        client_id=provider.client_id,
        client_secret=provider.client_secret,
        scopes="openid profile groups",
        principals=principals,
        name="the test provider",
    )


def sign_on(web: TestClient, provider: OidcProvider, user: str, start: str = "/login/oidc") -> requests.Response | object:
    """The browser's round trip: to the provider, signed in there as ``user``, back with the code."""
    started = web.get(start, follow_redirects=False)
    assert started.status_code == 303, started.text[:1000]
    back = provider.sign_in(requests.Session(), started.headers["location"], user)
    parts = urlsplit(back)
    assert parts.path == "/login/oidc/callback", back
    return web.get(f"{parts.path}?{parts.query}", follow_redirects=False)


def titles(page: str) -> set[str]:
    return set(re.findall(r'<li class="hit">\s*<h2><a [^>]*>([^<]+)</a>', page))


def test_a_searcher_signs_on_and_sees_what_their_token_groups_may_read(
    project: Project, solr: pysolr.Solr, oidc_provider: OidcProvider
) -> None:
    source, word = corpus(solr, {"public": [PUBLIC], "finance": ["group:finance"], "bobs": ["user:bob"], "hidden": ["group:hr"]})
    app = create_app(web_config(project, oidc=config(oidc_provider)))
    for user, readable in (("alice", {"public", "finance"}), ("bob", {"public", "bobs"}), ("carol", {"public"})):
        web = TestClient(app, base_url="http://127.0.0.1")
        assert "Sign in with the test provider" in web.get("/login").text
        done = sign_on(web, oidc_provider, user)
        assert done.status_code == 200 and 'http-equiv="refresh"' in done.text  # a link of this site's own
        page = web.get("/", params={"q": word, "source": source}).text
        assert f"Signed in as <strong>{user}</strong>" in page
        assert titles(page) == readable, user
    assert titles(TestClient(app, base_url="http://127.0.0.1").get("/", params={"q": word, "source": source}).text) == {"public"}


def test_a_provider_giving_the_claims_at_its_userinfo_endpoint_alone_signs_searchers_on(
    project: Project, solr: pysolr.Solr
) -> None:
    """Issue 91: a provider that follows the standard (oidc-provider's default
    ``conformIdTokenClaims``: an ID token of ``sub`` alone, the profile's claims at the userinfo
    endpoint) was refused ("no preferred_username"). The claims are read there now, of the
    token's subject: the name and the groups."""
    source, word = corpus(solr, {"public": [PUBLIC], "finance": ["group:finance"], "hidden": ["group:hr"]})
    provider = OidcProvider(["http://127.0.0.1/login/oidc/callback"], conform=True).start()
    try:
        app = create_app(web_config(project, oidc=config(provider)))
        web = TestClient(app, base_url="http://127.0.0.1")
        done = sign_on(web, provider, "alice")
        assert done.status_code == 200 and 'http-equiv="refresh"' in done.text, done.text[:2000]
        page = web.get("/", params={"q": word, "source": source}).text
        assert "Signed in as <strong>alice</strong>" in page
        assert titles(page) == {"public", "finance"}
    finally:
        provider.stop()


def test_principals_come_from_the_directory_when_there_is_one(
    project: Project,
    solr: pysolr.Solr,
    oidc_provider: OidcProvider,
    directory_server: DirectoryServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """alice's token says finance and search-admins; the directory says accounting (in finance)."""
    settings: Settings = settings_of(directory_server, monkeypatch)
    source, word = corpus(
        solr, {"by-directory": [f"group:{directory_server.group_dn('accounting')}"], "by-token": ["group:search-admins"]}
    )
    changes = {"oidc": config(oidc_provider), "directory": directory_of(settings)}
    web = TestClient(create_app(web_config(project, **changes)), base_url="http://127.0.0.1")
    assert sign_on(web, oidc_provider, "alice").status_code == 200
    assert titles(web.get("/", params={"q": word, "source": source}).text) == {"by-directory"}
    token = TestClient(
        create_app(web_config(project, **{**changes, "oidc": config(oidc_provider, "token")})), base_url="http://127.0.0.1"
    )
    assert sign_on(token, oidc_provider, "alice").status_code == 200
    assert titles(token.get("/", params={"q": word, "source": source}).text) == {"by-token"}


def test_an_administrator_signs_on_with_a_role_and_a_user_without_one_gets_no_session(
    project: Project, oidc_provider: OidcProvider
) -> None:
    project.data_dir.mkdir(parents=True, exist_ok=True)
    roles = RoleMap.parse({Role.ADMINISTRATOR: ["group:search-admins"], Role.OPERATOR: ["user:bob"]})
    app = create_app(web_config(project, credentials=None, oidc=config(oidc_provider), roles=roles))
    alice = TestClient(app, base_url="http://127.0.0.1")
    assert "Log in with the test provider" in alice.get("/admin/login").text
    assert sign_on(alice, oidc_provider, "alice", "/admin/login/oidc").status_code == 200
    assert alice.get("/admin/api").status_code == 200  # an administrator through her token's group
    bob = TestClient(app, base_url="http://127.0.0.1")
    assert sign_on(bob, oidc_provider, "bob", "/admin/login/oidc").status_code == 200
    assert bob.get("/admin/summary").status_code == 200 and bob.get("/admin/api").status_code == 403
    carol = TestClient(app, base_url="http://127.0.0.1")
    refused = sign_on(carol, oidc_provider, "carol", "/admin/login/oidc")
    assert refused.status_code == 403 and "You have no administration role." in refused.text
    assert carol.get("/admin", follow_redirects=False).status_code == 303  # to the login form: no session
    audit = alice.get("/admin/audit").text
    assert re.search(r"alice</a></td>\s*<td>administrator \(oidc\)</td>\s*<td class=\"action\">login</td>", audit)


def test_a_forged_replayed_or_stray_answer_is_refused(project: Project, oidc_provider: OidcProvider) -> None:
    app = create_app(web_config(project, oidc=config(oidc_provider)))
    web = TestClient(app, base_url="http://127.0.0.1")
    started = web.get("/login/oidc", follow_redirects=False)
    back = oidc_provider.sign_in(requests.Session(), started.headers["location"], "alice")
    parts = urlsplit(back)
    forged = web.get(f"{parts.path}?{parts.query.replace('state=', 'state=x')}", follow_redirects=False)
    assert forged.status_code == 403 and "its state differs" in forged.text
    # that pending sign-in is gone with the forged answer: the real one is not taken after it
    again = web.get(f"{parts.path}?{parts.query}", follow_redirects=False)
    assert again.status_code == 403 and "no sign-in of this browser is waiting" in again.text
    # an answer brought to another browser (no pending sign-in of its own) is refused
    started = web.get("/login/oidc", follow_redirects=False)
    back = urlsplit(oidc_provider.sign_in(requests.Session(), started.headers["location"], "alice"))
    stranger = TestClient(app, base_url="http://127.0.0.1")
    assert stranger.get(f"{back.path}?{back.query}", follow_redirects=False).status_code == 403
    assert "Signed in as" not in stranger.get("/").text
    # the provider's refusal is said, and signs nobody in
    refused = web.get("/login/oidc/callback", params={"error": "access_denied", "state": "x"}, follow_redirects=False)
    assert refused.status_code == 403
