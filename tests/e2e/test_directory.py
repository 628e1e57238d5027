"""The directory against a real OpenLDAP slapd (tests/directory_server.py): passwords, principals
with nested groups and numbers, the cache's lifetime, and a directory that does not answer."""

from __future__ import annotations

import logging

import pytest
from scrapy.settings import Settings

from searchcrawl.access.directory import DirectoryConfig, DirectoryUnavailable, directory_of
from searchcrawl.access.ldap_directory import LdapDirectory
from searchcrawl.dev.jvm_server import free_port
from tests.directory_server import DirectoryServer

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
    }
    assert found.origin(f"group:cn=all-staff,{BASE}") == (
        "memberOf path: cn=all-staff <- cn=finance <- cn=accounting <- uid=alice (member)"
    )
    assert found.origin("uid:1001") == "uidNumber of uid=alice,ou=people,dc=example,dc=org"
    assert found.origin("gid:2000") == "gidNumber (primary group) of uid=alice,ou=people,dc=example,dc=org"


def test_a_primary_posix_group_without_member_uid_and_a_unique_member(directory_server: DirectoryServer) -> None:
    found = LdapDirectory(config_of(directory_server)).principals("bob")
    assert {t for t in found.tokens if t.startswith(("group:", "gid:", "uid:"))} == {
        "uid:1002",
        "gid:2001",
        f"group:cn=developers,{BASE}",
        "group:developers",
        f"group:cn=all-staff,{BASE}",
        "group:all-staff",
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
