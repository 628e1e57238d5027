"""The directory against a real OpenLDAP slapd (tests/directory_server.py): passwords, principals
with nested groups and numbers, the cache's lifetime, and a directory that does not answer."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from scrapy.settings import Settings

from searchcrawl.access.directory import FAILED_LOOKUP_SECONDS, DirectoryConfig, DirectoryUnavailable
from searchcrawl.access.directory_setting import directory_of
from searchcrawl.access.ldap_directory import LdapDirectory
from searchcrawl.dev.jvm_server import free_port
from tests.directory_server import DirectoryServer, SlowProxy

BASE = "ou=groups,dc=example,dc=org"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def config_of(server: DirectoryServer, **changes: object) -> DirectoryConfig:
    values: dict[str, object] = {
        "url": server.url,
        "user_base": server.user_base,
        "group_base": server.group_base,
        "bind_dn": server.bind_dn,
        "bind_password": server.bind_password,
        **changes,
    }
    return DirectoryConfig(**values)  # type: ignore[arg-type]


def test_a_password_is_checked_by_binding_as_the_user(directory_server: DirectoryServer) -> None:
    directory = LdapDirectory(config_of(directory_server))
    assert directory.authenticate("alice", directory_server.passwords["alice"])
    assert directory.authenticate("ALICE", directory_server.passwords["alice"])  # uid matches without case
    assert not directory.authenticate("alice", directory_server.passwords["bob"])
    assert not directory.authenticate("alice", "")
    assert not directory.authenticate("nobody", "whatever")
    assert not directory.authenticate("*", directory_server.passwords["alice"])  # the name is escaped, no wildcard
    assert not directory.authenticate("alice)(uid=*", directory_server.passwords["alice"])


def test_alices_principals_with_nested_groups_numbers_and_origins(directory_server: DirectoryServer) -> None:
    found = LdapDirectory(config_of(directory_server)).principals("alice")
    assert found.user == "alice" and not found.error
    assert found.tokens == {
        "public",
        "user:alice",
        "user:uid=alice,ou=people,dc=example,dc=org",
        "uid:1001",
        "gid:2000",
        *(f"group:cn={cn},{BASE}" for cn in ("accounting", "finance", "all-staff", "staff", "loop-a", "loop-b")),
        *(f"group:{cn}" for cn in ("accounting", "finance", "all-staff", "staff", "loop-a", "loop-b")),
        # Apache's ldap-group: by DN, through groupOfNames and groupOfUniqueNames only (not staff: memberUid)
        *(f"member:cn={cn},{BASE}" for cn in ("accounting", "finance", "all-staff", "loop-a", "loop-b")),
        # a group filter's (DokuWiki's authldap): the groups holding her themselves, by which attribute;
        # with "=" too, their cn being lower-case as stored (gitolite compares with case)
        *(
            f"direct:{eq}member{kind}:{cn}"
            for cn in ("accounting", "loop-a")
            for kind in ("", "/groupofnames")
            for eq in ("", "=")
        ),
        *(
            f"direct:{eq}{how}{kind}:staff"
            for how in ("memberuid", "gidnumber")
            for kind in ("", "/posixgroup")
            for eq in ("", "=")
        ),
    }
    assert found.origin(f"group:cn=all-staff,{BASE}") == (
        "memberOf path: cn=all-staff <- cn=finance <- cn=accounting <- uid=alice (member)"
    )
    assert found.origin("uid:1001") == "uidNumber of uid=alice,ou=people,dc=example,dc=org"
    assert found.origin("gid:2000") == "gidNumber (primary group) of uid=alice,ou=people,dc=example,dc=org"


def test_a_primary_posix_group_without_member_uid_and_a_unique_member(directory_server: DirectoryServer) -> None:
    found = LdapDirectory(config_of(directory_server)).principals("bob")
    assert {t for t in found.tokens if t.startswith(("group:", "member:", "direct:", "gid:", "uid:"))} == {
        "uid:1002",
        "gid:2001",
        f"group:cn=developers,{BASE}",
        "group:developers",
        f"group:cn=all-staff,{BASE}",
        "group:all-staff",
        f"member:cn=all-staff,{BASE}",  # not developers: his primary group, which Apache's ldap-group never counts
        *(f"direct:{eq}gidnumber{kind}:developers" for kind in ("", "/posixgroup") for eq in ("", "=")),
        *(f"direct:{eq}uniquemember{kind}:all-staff" for kind in ("", "/groupofuniquenames") for eq in ("", "=")),
    }
    assert found.origin("group:developers").endswith("memberOf path: cn=developers <- uid=bob (primary group)")
    assert found.origin("group:all-staff").endswith("(uniqueMember)")


def test_a_user_in_no_group_and_an_unknown_user(directory_server: DirectoryServer) -> None:
    directory = LdapDirectory(config_of(directory_server))
    assert directory.principals("carol").tokens == {
        "public",
        "user:carol",
        "user:uid=carol,ou=people,dc=example,dc=org",
        "uid:1003",
        "gid:2002",
    }
    unknown = directory.principals("*")
    assert unknown.tokens == {"public"} and "not in the directory" in unknown.error


def test_a_user_taken_out_of_a_group_loses_it_after_the_cache_lifetime(directory_server: DirectoryServer) -> None:
    clock = Clock()
    directory = LdapDirectory(config_of(directory_server, cache_seconds=300), clock=clock)
    assert "group:finance" in directory.principals("alice").tokens
    directory_server.remove_member("accounting", "alice")
    try:
        clock.now += 299
        assert "group:finance" in directory.principals("alice").tokens  # cached: still there
        clock.now += 2
        after = directory.principals("alice").tokens
        assert "group:accounting" not in after and "group:finance" not in after and "group:all-staff" not in after
        assert "group:loop-a" in after  # her other groups stay
    finally:
        directory_server.add_member("accounting", "alice")


def test_a_directory_that_does_not_answer_gives_public_only_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    down = LdapDirectory(DirectoryConfig(url=f"ldap://127.0.0.1:{free_port()}", user_base="dc=x", timeout=2))
    with caplog.at_level(logging.DEBUG, logger="searchcrawl.access.directory"):
        first, second = down.principals("alice"), down.principals("alice")
    assert first.tokens == second.tokens == {"public"} and first.user == "alice"
    assert "did not answer" in first.error
    assert [r.levelname for r in caplog.records if r.levelname == "ERROR"] == ["ERROR"]
    with pytest.raises(DirectoryUnavailable, match="did not answer"):
        down.authenticate("alice", "alice-password")


def test_a_refused_service_account_is_unavailable_and_names_no_password(directory_server: DirectoryServer) -> None:
    directory = LdapDirectory(config_of(directory_server, bind_password="wrong-service-password"))
    found = directory.principals("alice")
    assert found.tokens == {"public"} and "refused the service account (invalidCredentials)" in found.error
    assert "wrong-service-password" not in found.error
    with pytest.raises(DirectoryUnavailable):
        directory.authenticate("alice", directory_server.passwords["alice"])


def test_without_a_service_account_anonymous_searches_must_be_allowed(directory_server: DirectoryServer) -> None:
    # this slapd lets anonymous clients bind, never read: nobody is found, nobody signs in
    directory = LdapDirectory(config_of(directory_server, bind_dn="", bind_password=""))
    found = directory.principals("alice")
    assert found.tokens == {"public"} and "not in the directory" in found.error
    assert not directory.authenticate("alice", directory_server.passwords["alice"])


def test_directory_of_the_settings(directory_server: DirectoryServer, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = directory_server.settings()
    monkeypatch.setenv("SEARCHCRAWL_LDAP_BIND_PASSWORD", settings.pop("SEARCHCRAWL_LDAP_BIND_PASSWORD"))
    directory = directory_of(Settings(settings))
    assert directory is not None and "group:finance" in directory.principals("alice").tokens


def test_a_password_typed_as_the_user_name_reaches_no_log(
    directory_server: DirectoryServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A searcher who types the password into the name field: the name of a failed sign-in is
    logged nowhere, not even at DEBUG (a known user's failed bind names the entry's DN)."""
    directory = LdapDirectory(config_of(directory_server))
    with caplog.at_level(logging.DEBUG):
        assert not directory.authenticate("Typed-Pw-4711", "alice")
        assert not directory.authenticate("alice", "wrong-password")
    assert "Typed-Pw-4711" not in caplog.text and "wrong-password" not in caplog.text
    assert "a sign-in refused: no such user" in caplog.text
    assert f"a sign-in as {directory_server.user_dn('alice')} refused" in caplog.text


def test_hostile_user_names_find_no_one_and_a_dn_with_an_empty_password_does_not_bind(
    directory_server: DirectoryServer,
) -> None:
    directory = LdapDirectory(config_of(directory_server))
    password = directory_server.passwords["alice"]
    for name in ("alice\x00", "alice\x00)(uid=*", "*", "al*", "alice)(|(uid=*", "\\2a", directory_server.user_dn("alice")):
        assert not directory.authenticate(name, password), repr(name)
        found = directory.principals(name)
        assert found.tokens == {"public"}, repr(name)
    # an unauthenticated bind (a DN with an empty password: RFC 4513 5.1.2) is never tried, and
    # a password of spaces is a password, which the directory refuses
    for empty in ("", " ", "\x00"):
        assert not directory.authenticate("alice", empty), repr(empty)


def test_ldaps_and_start_tls_verify_the_directorys_certificate(tmp_path) -> None:
    server = DirectoryServer(tmp_path, tls=True).start()
    try:
        for changes in ({"url": server.ldaps_url}, {"start_tls": True}):
            trusted = LdapDirectory(config_of(server, ca_file=server.ca_file, **changes))
            assert "group:finance" in trusted.principals("alice").tokens, changes
            assert trusted.authenticate("alice", server.passwords["alice"])
            unknown_ca = LdapDirectory(config_of(server, **changes))  # the system's CAs: not this one
            refused = unknown_ca.principals("alice")
            assert refused.tokens == {"public"} and refused.error, changes
            with pytest.raises(DirectoryUnavailable):
                unknown_ca.authenticate("alice", server.passwords["alice"])
    finally:
        server.stop()


PARTNER = "bob@partner.example"


def test_an_entry_named_name_at_realm_is_its_own_user_not_the_name(directory_server: DirectoryServer) -> None:
    """An entry uid=bob@partner.example (its own password, no group) signed in and got
    user:bob, bob's documents: the tokens' folding of name@realm to name was applied to a second
    entry. The user token comes from the entry found, and a name that folds to another is none."""
    directory = LdapDirectory(config_of(directory_server))
    with directory_server.added_person(PARTNER, "partner-password") as dn:
        assert directory.authenticate(PARTNER, "partner-password")
        assert not directory.authenticate(PARTNER, directory_server.passwords["bob"])
        found = directory.principals(PARTNER)
        assert found.user == PARTNER and not found.error
        assert found.tokens == {"public", f"user:{dn}"}  # its DN; never user:bob
    assert "user:bob" in directory.principals("bob").tokens


def test_a_name_the_directory_folds_to_another_finds_no_one(directory_server: DirectoryServer) -> None:
    """OpenLDAP matches a fullwidth ｂob (and 'bob ') to uid=bob: the entry is taken only when its
    uid equals the name asked for, case aside, as the tokens fold names."""
    directory = LdapDirectory(config_of(directory_server))
    password = directory_server.passwords["bob"]
    for name in ("\uff42ob", "bob ", " bob", "\uff22\uff2f\uff22"):
        assert not directory.authenticate(name, password), repr(name)
        found = directory.principals(name)
        assert found.tokens == {"public"} and "not in the directory" in found.error, repr(name)
    assert directory.authenticate("BOB", password)  # case is no other name
    assert "user:bob" in directory.principals("BOB").tokens


@pytest.fixture
def hardened(tmp_path) -> Iterator[DirectoryServer]:
    """A slapd of its own where a user reads only their own entry, groups the service account alone."""
    server = DirectoryServer(tmp_path / "slapd", private_groups=True).start()
    try:
        yield server
    finally:
        server.stop()


def test_a_sign_in_reads_the_principals_as_the_service_account(hardened: DirectoryServer) -> None:
    """The sign-in read alice's principals through her own bind: no group came back, nothing was
    partial, and for the cache's lifetime a deny of her groups passed her by."""
    directory = LdapDirectory(config_of(hardened))
    assert directory.authenticate("alice", hardened.passwords["alice"])
    found = directory.principals("alice")
    assert {"group:accounting", "group:finance", "group:all-staff", "group:staff"} <= found.tokens
    assert not found.incomplete


def test_without_a_service_account_principals_without_any_group_are_partial(hardened: DirectoryServer) -> None:
    """No service account, and an anonymous client sees no group: the groups are unknown, not
    none, so every document with a deny token is refused (Principals.partial)."""
    directory = LdapDirectory(config_of(hardened, bind_dn="", bind_password=""))
    assert directory.authenticate("alice", hardened.passwords["alice"])  # anonymous finds her entry
    found = directory.principals("alice")
    assert "user:alice" in found.tokens and not found.error
    assert "shows an anonymous bind no group" in found.partial and found.incomplete


def test_a_slow_directory_gets_one_deadline_and_a_failure_is_remembered(directory_server: DirectoryServer) -> None:
    """A directory answering each question just within the timeout held a lookup for as many
    timeouts as it asked questions (36-40 s at 5 s). Now the whole lookup (binds, the user's
    entry, groups, nested groups) has three timeouts, and a failed one is not asked again for
    a few seconds."""
    ahead = [0.0]

    def now() -> float:  # real time (the deadline's), moved on by the test (the cache's)
        return time.monotonic() + ahead[0]

    with SlowProxy(directory_server.url, delay=1.6) as slow:
        directory = LdapDirectory(config_of(directory_server, url=slow.url, timeout=2), clock=now)
        began = time.monotonic()
        found = directory.principals("alice")
        took = time.monotonic() - began
        assert took < 6 + 2, took  # three timeouts of 2 s, and some slack for a busy machine
        assert found.tokens == {"public"} and "did not answer within 6 s" in found.error
        asked = slow.connections
        began = time.monotonic()
        assert directory.principals("alice").error == found.error  # remembered: not asked again
        assert time.monotonic() - began < 1 and slow.connections == asked
        slow.delay = 0
        ahead[0] += FAILED_LOOKUP_SECONDS + 1
        assert "group:finance" in directory.principals("alice").tokens  # asked again: answers
        assert slow.connections > asked


# --- review of issue 72 points 3, 4, 7 and 8 (a hostile insider) ---

MANAGE_DSA_IT = ("2.16.840.1.113730.3.4.2", False, None)  # add a referral object as an entry


@pytest.fixture
def own_server(tmp_path) -> Iterator[DirectoryServer]:
    """A slapd of this test's own: the test adds entries the others must not see."""
    server = DirectoryServer(tmp_path / "slapd").start()
    try:
        yield server
    finally:
        server.stop()


def as_root(server: DirectoryServer):  # noqa: ANN201 - an ldap3 Connection
    import ldap3

    from tests.directory_server import ROOT_PASSWORD

    return ldap3.Connection(ldap3.Server(server.url), server.root_dn, ROOT_PASSWORD, auto_bind=True)


def test_a_group_whose_cn_reads_as_another_groups_dn_gives_no_such_principal(own_server: DirectoryServer) -> None:
    """The manual: group:<DN> "matches that one group", the way out of group:<cn> matching any
    group of that name in any branch. A group a department or a partner created for itself, with
    a cn (cn takes several values) spelling the DN of cn=finance, gave its members
    group:cn=finance,ou=groups,...: finance's documents. A cn with '=' reads as a DN: none."""
    finance = own_server.group_dn("finance")
    root = as_root(own_server)
    assert root.add(f"ou=partner,{own_server.group_base}", ["organizationalUnit"], {"ou": "partner"}), root.result
    team = f"cn=p-team,ou=partner,{own_server.group_base}"
    cns = ["p-team", finance, f"CN = Finance , OU=groups,{own_server.suffix}"]
    assert root.add(team, ["groupOfNames"], {"cn": cns, "member": [own_server.user_dn("carol")]}), root.result
    found = LdapDirectory(config_of(own_server)).principals("carol")
    assert f"group:{finance}" not in found.tokens
    assert {f"group:{team}", "group:p-team"} <= found.tokens  # its own DN and its plain name stay
    assert f"group:{finance}" in LdapDirectory(config_of(own_server)).principals("alice").tokens


def test_an_entry_with_several_uids_is_the_user_of_the_name_asked_only(own_server: DirectoryServer) -> None:
    """uid takes several values, and user:<name> was the entry's first: an entry uid=mallory
    whose uid values are (alice, mallory) signed in as mallory (her own password) and got
    user:alice and alice's posixGroup staff (memberUid alice) with its gid:2000. The name that
    found the entry (one entry: the directory has no other of that name) is its user name."""
    root = as_root(own_server)
    attributes = {"uid": ["alice", "mallory"], "cn": "M", "sn": "M", "userPassword": "mallory-password"}
    assert root.add(own_server.user_dn("mallory"), ["inetOrgPerson"], attributes), root.result
    directory = LdapDirectory(config_of(own_server))
    assert directory.authenticate("mallory", "mallory-password")
    found = directory.principals("mallory")
    assert found.user == "mallory" and not found.error
    assert found.tokens == {"public", "user:mallory", f"user:{own_server.user_dn('mallory')}"}


def test_a_referral_among_the_groups_makes_the_principals_partial(own_server: DirectoryServer) -> None:
    """Referrals are not followed (right: ldap3 would bind to any host with the service account's
    password). But a group search whose answer refers part of the group base to another server
    (a continuation reference, result 0) was taken as the whole answer: the groups held there
    were not read, and a document denying one of them was shown. Those groups are not all read."""
    root = as_root(own_server)
    remote = f"ou=remote,{own_server.group_base}"
    attributes = {"ou": "remote", "ref": f"ldap://127.0.0.9:389/{remote}"}
    assert root.add(remote, ["referral", "extensibleObject"], attributes, controls=[MANAGE_DSA_IT]), root.result
    found = LdapDirectory(config_of(own_server)).principals("alice")
    assert "group:finance" in found.tokens and not found.error
    assert found.incomplete and "referr" in found.partial


def test_one_searchers_requests_on_a_slow_directory_do_not_hold_another_whose_principals_are_cached(
    directory_server: DirectoryServer, tmp_path
) -> None:
    """The manual: "one searcher's lookup does not hold another's". The web application asks the
    directory in 64 threads of its own, and a searcher whose principals are cached asked for a
    thread too, to read the cache. One signed-in searcher's 64 requests at once, on a directory
    that answers each question just within the timeout (each waits out the deadline: a searcher's requests before their
    first answer each ask), held alice's search, her principals cached, for the whole deadline.

    Here the directory holds every answer until the test has measured alice (then it closes):
    an answer held "just within the timeout" (1.6 s of 2 s) came late on a loaded CI machine,
    bob's first lookup failed, was remembered, and his later requests never asked, so the test
    waited for 64 lookups that would not come."""
    import requests

    from searchcrawl.web.app import create_app
    from searchcrawl.web.context import DIRECTORY_THREADS
    from tests.conftest import wait_for
    from tests.e2e.test_web_proxies import served
    from tests.web.test_app import unit_config

    with SlowProxy(directory_server.url, delay=0) as slow, ThreadPoolExecutor(DIRECTORY_THREADS) as pool:
        directory = LdapDirectory(config_of(directory_server, url=slow.url, timeout=20))  # deadline: 60 s
        assert "group:finance" in directory.principals("alice").tokens  # cached
        slow.delay = None  # no answer until the proxy closes: bob's lookups hold their threads
        app = create_app(unit_config(tmp_path, directory=directory, user_header="x-remote-user", proxies=("127.0.0.1",)))
        with served(app) as site:

            def page(user: str) -> float:
                began = time.monotonic()
                requests.get(site + "/", headers={"x-remote-user": user}, timeout=60)
                return time.monotonic() - began

            asked = slow.connections
            held = [pool.submit(page, "bob") for _ in range(DIRECTORY_THREADS)]
            wait_for(lambda: slow.connections >= asked + DIRECTORY_THREADS, timeout=30, what="bob's lookups")
            took = page("alice")
            slow.close()  # bob's lookups end: no answer, public only
            assert took < 3, f"alice, her principals cached, waited {took:.1f} s behind bob's lookups"
            for search in held:
                assert search.result() < 60
