"""Single sign-on with Kerberos (issue 79 point 3: web/sign_on/kerberos.py) against the Samba Active
Directory domain controller the SMB tests start (tests/samba_domain.py: its KDC): this service's
principal and keytab made as a domain administrator makes them (``samba-tool spn add``,
``samba-tool domain exportkeytab``); a searcher's ticket, got with their password as a domain
machine would, sent as a browser sends it (``Authorization: Negotiate``, SPNEGO); their principals
from the domain's directory (their groups' SIDs), so they read what the domain lets them; an
administrator's role from the same; a forged, replayed or foreign ticket is refused."""

from __future__ import annotations

import base64
import re
import uuid
from pathlib import Path

import gssapi  # noqa: E402 - Debian's python3-gssapi, which deploy/bootstrap.sh kerberos links into .venv
import pysolr
import pytest
from scrapy.settings import Settings

from searchcrawl.access.directory_setting import directory_of
from searchcrawl.access.tokens import PUBLIC
from searchcrawl.system.secrets import LDAP_BIND_PASSWORD
from searchcrawl.web.app import create_app
from searchcrawl.web.roles import Role, RoleMap
from searchcrawl.web.sign_on.kerberos import KerberosConfig
from tests.conftest import Project
from tests.e2e.test_single_sign_on import corpus, titles
from tests.e2e.test_web import web_config
from tests.samba_domain import REALM, USERS, SambaDomain, _run

SERVICE_HOST = "search.sc.test"
SIBLING_HOST = "wiki.sc.test"
KERBEROS = "1.2.840.113554.1.2.2"


@pytest.fixture
def kerberos(samba_domain: SambaDomain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KerberosConfig:
    """This service's principal in the domain, its keytab, and a krb5.conf naming the domain's KDC
    (the environment's, for this process: the acceptor and the tests' client alike)."""
    principal = f"HTTP/{SERVICE_HOST}"
    listed = _run(["samba-tool", "spn", "list", "crawler", "-s", str(samba_domain.config)]).stdout
    for name in (principal, f"HTTP/{SIBLING_HOST}"):  # a sibling service of the same account: the same key
        if name not in listed:
            _run(["samba-tool", "spn", "add", name, "crawler", "-s", str(samba_domain.config)])
    keytab = tmp_path / "search.keytab"
    _run(["samba-tool", "domain", "exportkeytab", str(keytab), f"--principal={principal}", "-s", str(samba_domain.config)])
    conf = tmp_path / "krb5.conf"
    conf.write_text(
        f"[libdefaults]\n default_realm = {REALM}\n dns_lookup_kdc = false\n dns_lookup_realm = false\n rdns = false\n"
        f" dns_canonicalize_hostname = false\n udp_preference_limit = 0\n\n"
        f"[realms]\n {REALM} = {{\n  kdc = {samba_domain.address}\n }}\n\n[domain_realm]\n .sc.test = {REALM}\n sc.test = {REALM}\n"
    )
    monkeypatch.setenv("KRB5_CONFIG", str(conf))
    monkeypatch.setenv("KRB5CCNAME", f"MEMORY:{uuid.uuid4().hex}")
    monkeypatch.setenv("KRB5RCACHEDIR", str(tmp_path))
    return KerberosConfig(keytab=str(keytab), realm=REALM, service=principal, name="the domain")


def negotiate(user: str, password: str, host: str = SERVICE_HOST) -> str:
    """The Authorization header a browser of a domain machine sends for ``user``: SPNEGO's first
    token (a NegTokenInit offering Kerberos, with its AP-REQ for HTTP/``host``), the service ticket
    got with the user's password, as Windows gets it at logon."""
    from spnego._spnego import NegTokenInit  # pyspnego's encoder of SPNEGO's tokens

    name = gssapi.Name(f"{user}@{REALM}", gssapi.NameType.kerberos_principal)
    acquired = gssapi.raw.acquire_cred_with_password(name, password.encode(), usage="initiate", mechs=[gssapi.MechType.kerberos])
    server = gssapi.Name(f"HTTP@{host}", gssapi.NameType.hostbased_service)
    context = gssapi.SecurityContext(
        name=server, creds=gssapi.Credentials(acquired.creds), usage="initiate", mech=gssapi.MechType.kerberos
    )
    first = NegTokenInit(mech_types=[KERBEROS], mech_token=context.step())
    return "Negotiate " + base64.b64encode(first.pack()).decode()


def app_of(project: Project, samba_domain: SambaDomain, kerberos: KerberosConfig, monkeypatch: pytest.MonkeyPatch, **changes):
    values = samba_domain.settings()
    monkeypatch.setenv(LDAP_BIND_PASSWORD, values.pop(LDAP_BIND_PASSWORD))
    return create_app(web_config(project, kerberos=kerberos, directory=directory_of(Settings(values)), **changes))


def test_a_searcher_signs_on_with_their_ticket_and_reads_what_the_domain_lets_them(
    project: Project,
    solr: pysolr.Solr,
    samba_domain: SambaDomain,
    kerberos: KerberosConfig,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from starlette.testclient import TestClient

    managers, staff = samba_domain.sid("managers"), samba_domain.sid("staff")
    source, word = corpus(solr, {"public": [PUBLIC], "managers": [f"sid:{managers}"], "staff": [f"sid:{staff}"]})
    app = app_of(project, samba_domain, kerberos, monkeypatch)
    for user, readable in (("alice", {"public", "managers", "staff"}), ("bob", {"public", "staff"}), ("carol", {"public"})):
        web = TestClient(app, base_url="http://127.0.0.1")
        assert "Sign in with the domain" in web.get("/login").text
        asked = web.get("/login/kerberos")
        assert asked.status_code == 401 and asked.headers["www-authenticate"] == "Negotiate"
        done = web.get("/login/kerberos", headers={"authorization": negotiate(user, USERS[user])})
        assert done.status_code == 200 and 'http-equiv="refresh"' in done.text, done.text[-1500:]
        page = web.get("/", params={"q": word, "source": source}).text
        assert f"Signed in as <strong>{user}</strong>" in page
        assert titles(page) == readable, user


def test_an_administrator_signs_on_with_a_ticket_and_a_bad_one_is_refused(
    project: Project, samba_domain: SambaDomain, kerberos: KerberosConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    from starlette.testclient import TestClient

    project.data_dir.mkdir(parents=True, exist_ok=True)
    roles = RoleMap.parse({Role.OPERATOR: [f"sid:{samba_domain.sid('managers')}"]})
    app = app_of(project, samba_domain, kerberos, monkeypatch, credentials=None, roles=roles)
    alice = TestClient(app, base_url="http://127.0.0.1")
    header = negotiate("alice", USERS["alice"])
    assert alice.get("/admin/login/kerberos", headers={"authorization": header}).status_code == 200
    assert alice.get("/admin/summary").status_code == 200 and alice.get("/admin/api").status_code == 403
    # the same ticket again: the replay cache refuses it
    replayed = TestClient(app, base_url="http://127.0.0.1").get("/admin/login/kerberos", headers={"authorization": header})
    assert replayed.status_code == 403
    # bob has no role; a ticket for another service; a forged token; not base64
    bob = TestClient(app, base_url="http://127.0.0.1")
    assert bob.get("/admin/login/kerberos", headers={"authorization": negotiate("bob", USERS["bob"])}).status_code == 403
    assert bob.get("/admin", follow_redirects=False).status_code == 303
    # a ticket a browser sent to a sibling service of the same account (MIT accepts it with the key)
    sibling = negotiate("alice", USERS["alice"], host=SIBLING_HOST)
    refused = TestClient(app, base_url="http://127.0.0.1").get("/admin/login/kerberos", headers={"authorization": sibling})
    assert refused.status_code == 403 and "another service" in refused.text
    cross_site = bob.get("/admin/login/kerberos", headers={"sec-fetch-site": "cross-site"})
    assert cross_site.status_code == 403 and "www-authenticate" not in cross_site.headers  # no ticket asked for
    other = negotiate("bob", USERS["bob"], host="dc1.sc.test")  # a service this keytab does not hold
    assert bob.get("/login/kerberos", headers={"authorization": other}).status_code == 403
    token = bytearray(base64.b64decode(negotiate("carol", USERS["carol"]).split()[1]))
    token[len(token) // 2] ^= 0xFF
    forged = bob.get("/login/kerberos", headers={"authorization": "Negotiate " + base64.b64encode(bytes(token)).decode()})
    assert forged.status_code == 403 and "Signed in as" not in bob.get("/").text
    assert bob.get("/login/kerberos", headers={"authorization": "Negotiate !!!"}).status_code == 401
    assert re.search("Sign in with the domain", bob.get("/login").text)
