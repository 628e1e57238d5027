"""Single sign-on with SAML 2.0 (issue 79 point 3: web/sign_on/saml.py) against a real identity provider
(Debian's SimpleSAMLphp under PHP's web server, tests/saml_server.py) and a real Solr: a searcher
signs in at the IdP and sees what the assertion's groups may read; an administrator's role comes
from them; a forged, replayed or stray answer is refused; this service provider's metadata is
served for the IdP's administrator."""

from __future__ import annotations

import base64
import re

import pysolr
import requests
from starlette.testclient import TestClient

from searchcrawl.access.tokens import PUBLIC
from searchcrawl.web.app import create_app
from searchcrawl.web.roles import Role, RoleMap
from searchcrawl.web.sign_on.saml import SamlConfig
from tests.conftest import Project
from tests.e2e.test_single_sign_on import corpus, titles
from tests.e2e.test_web import web_config
from tests.saml_server import USERS, SamlIdp

PUBLIC_ORIGIN = ("http://127.0.0.1",)  # SEARCHCRAWL_WEB_PUBLIC_URL's: SAML's endpoints come from it alone


def config(idp: SamlIdp) -> SamlConfig:
    return SamlConfig(idp_metadata=idp.metadata_url, name="the test IdP")


def answer_of(web: TestClient, idp: SamlIdp, user: str, start: str = "/login/saml") -> dict[str, str]:
    """The browser's way to the IdP and its sign-in there: the form the IdP hands back (to post)."""
    started = web.get(start, follow_redirects=False)
    assert started.status_code == 303, started.text[:1000]
    action, fields = idp.sign_in(requests.Session(), started.headers["location"], user, USERS[user][0])
    assert action == "http://127.0.0.1/login/saml/acs", action
    return fields


def sign_on(web: TestClient, idp: SamlIdp, user: str, start: str = "/login/saml") -> object:
    return web.post("/login/saml/acs", data=answer_of(web, idp, user, start), headers={"origin": idp.base.rstrip("/")})


def test_a_searcher_signs_on_with_saml_and_sees_what_their_groups_may_read(
    project: Project, solr: pysolr.Solr, saml_idp: SamlIdp
) -> None:
    source, word = corpus(solr, {"public": [PUBLIC], "finance": ["group:finance"], "bobs": ["user:bob"], "hidden": ["group:hr"]})
    app = create_app(web_config(project, saml=config(saml_idp), public_origins=PUBLIC_ORIGIN))
    for user, readable in (("alice", {"public", "finance"}), ("bob", {"public", "bobs"}), ("carol", {"public"})):
        web = TestClient(app, base_url="http://127.0.0.1")
        assert "Sign in with the test IdP" in web.get("/login").text
        done = sign_on(web, saml_idp, user)
        assert done.status_code == 200 and 'http-equiv="refresh"' in done.text, done.text[-1500:]
        page = web.get("/", params={"q": word, "source": source}).text
        assert f"Signed in as <strong>{user}</strong>" in page
        assert titles(page) == readable, user
    metadata = TestClient(app, base_url="http://127.0.0.1").get("/login/saml/metadata")
    assert metadata.status_code == 200 and "http://127.0.0.1/login/saml/acs" in metadata.text


def test_an_administrator_signs_on_with_saml_and_a_user_without_a_role_gets_no_session(
    project: Project, saml_idp: SamlIdp
) -> None:
    project.data_dir.mkdir(parents=True, exist_ok=True)
    roles = RoleMap.parse({Role.ADMINISTRATOR: ["group:search-admins"]})
    app = create_app(web_config(project, credentials=None, saml=config(saml_idp), roles=roles, public_origins=PUBLIC_ORIGIN))
    alice = TestClient(app, base_url="http://127.0.0.1")
    assert sign_on(alice, saml_idp, "alice", "/admin/login/saml").status_code == 200
    assert alice.get("/admin/api").status_code == 200
    bob = TestClient(app, base_url="http://127.0.0.1")
    refused = sign_on(bob, saml_idp, "bob", "/admin/login/saml")
    assert refused.status_code == 403 and bob.get("/admin", follow_redirects=False).status_code == 303


def test_an_idp_that_signs_with_sha1_is_refused(project: Project, saml_idp: SamlIdp) -> None:
    """pysaml2 accepts an answer signed with RSA-SHA1 (SHA-1 collisions are practical): such an IdP's
    answers are refused, saying why; the same IdP signing with SHA-256 (saml_idp's) is believed."""
    weak = SamlIdp(saml_idp.sp_entity_id, saml_idp.acs_url, "http://www.w3.org/2000/09/xmldsig#rsa-sha1").start()
    try:
        web = TestClient(
            create_app(web_config(project, saml=config(weak), public_origins=PUBLIC_ORIGIN)), base_url="http://127.0.0.1"
        )
        fields = answer_of(web, weak, "alice")
        assert b"xmldsig#rsa-sha1" in base64.b64decode(fields["SAMLResponse"])  # the IdP did sign with SHA-1
        refused = web.post("/login/saml/acs", data=fields, headers={"origin": weak.base.rstrip("/")})
        assert refused.status_code == 403 and "rsa-sha1, which is too weak" in refused.text
        assert "Signed in as" not in web.get("/").text
    finally:
        weak.stop()
    strong = TestClient(
        create_app(web_config(project, saml=config(saml_idp), public_origins=PUBLIC_ORIGIN)), base_url="http://127.0.0.1"
    )
    assert sign_on(strong, saml_idp, "alice").status_code == 200


def test_a_forged_replayed_or_stray_saml_answer_is_refused(project: Project, saml_idp: SamlIdp) -> None:
    app = create_app(web_config(project, saml=config(saml_idp), public_origins=PUBLIC_ORIGIN))
    web = TestClient(app, base_url="http://127.0.0.1")
    fields = answer_of(web, saml_idp, "alice")
    # the assertion changed after the IdP signed it: another user
    forged_xml = base64.b64decode(fields["SAMLResponse"]).replace(b">alice<", b">carol<")
    forged = web.post("/login/saml/acs", data={**fields, "SAMLResponse": base64.b64encode(forged_xml).decode()})
    assert forged.status_code == 403 and "cannot be believed" in forged.text
    assert "Signed in as" not in web.get("/").text
    # the pending sign-in is spent: the real answer is not taken after the forged one
    assert web.post("/login/saml/acs", data=fields).status_code == 403
    # an answer brought to another browser
    fields = answer_of(web, saml_idp, "alice")
    stranger = TestClient(app, base_url="http://127.0.0.1")
    assert stranger.post("/login/saml/acs", data=fields).status_code == 403
    # a RelayState that is not this browser's sign-in
    fields = answer_of(web, saml_idp, "alice")
    assert web.post("/login/saml/acs", data={**fields, "RelayState": "x"}).status_code == 403
    assert "Signed in as" not in web.get("/").text
    # the same answer once more, with its own cookie spent: refused (no replay)
    fields = answer_of(web, saml_idp, "alice")
    assert web.post("/login/saml/acs", data=fields).status_code == 200
    assert web.post("/login/saml/acs", data=fields).status_code == 403
    assert re.search(r"Signed in as <strong>alice</strong>", web.get("/").text)


def test_the_hostile_reviews_saml_answers_are_refused(project: Project, saml_idp: SamlIdp) -> None:
    """A Host header chose the service provider the answer had to be for (an answer to another
    service provider of the same IdP was taken); a 500 KB answer inflated to 400 MB; a page of
    another site posting a wrong RelayState cancelled the sign-in in progress."""
    import zlib

    app = create_app(web_config(project, saml=config(saml_idp), public_origins=PUBLIC_ORIGIN))
    web = TestClient(app, base_url="http://127.0.0.1")
    started = web.get("/login/saml", headers={"host": "evil.example"}, follow_redirects=False)
    assert started.status_code == 303 and "evil.example" not in started.headers["location"]
    # a deflate bomb: refused before pysaml2 sees it
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    bomb = deflater.compress(b"<" + b" " * 50_000_000) + deflater.flush()
    answer = {"RelayState": web.cookies.get("searchcrawl_saml"), "SAMLResponse": base64.b64encode(bomb).decode()}
    refused = web.post("/login/saml/acs", data=answer)
    assert refused.status_code == 403 and "inflates to more than an answer may be" in refused.text
    # a wrong RelayState (a page of another site) cancels nothing: the real answer is still taken
    fields = answer_of(web, saml_idp, "alice")
    assert web.post("/login/saml/acs", data={**fields, "RelayState": "x"}).status_code == 403
    assert web.post("/login/saml/acs", data=fields).status_code == 200
    assert "Signed in as <strong>alice</strong>" in web.get("/").text
    # no public URL: no SAML at all (never endpoints from the request)
    bare = TestClient(create_app(web_config(project, saml=config(saml_idp))), base_url="http://127.0.0.1")
    assert bare.get("/login/saml", follow_redirects=False).status_code == 503
    assert bare.get("/login/saml/metadata").status_code == 503
