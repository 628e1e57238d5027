"""The directory's logic without a server: principals of entries, the walk up nested groups, the
settings. (Against a real slapd: tests/e2e/test_directory.py.)"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from scrapy.settings import Settings

from searchcrawl.access.decision import Principals
from searchcrawl.access.directory import (
    DirectoryConfig,
    DirectoryEntry,
    DirectoryUnavailable,
    Membership,
    binary_sids,
    compared_attributes,
    dn_member_walk,
    group_principals,
    named,
    path_text,
    principals_of,
    user_principals,
    walk_groups,
    windows_principals,
)
from searchcrawl.access.directory_setting import directory_of
from searchcrawl.access.ldap_directory import LdapDirectory
from searchcrawl.access.ntfs import sid_bytes
from tests.conftest import fresh_python

ALICE = DirectoryEntry.of("uid=alice,ou=people,dc=example,dc=org", {"uid": ["alice"], "uidNumber": 1001, "gidNumber": ["2000"]})


def group(cn: str, *classes: str, gid: str | None = None) -> DirectoryEntry:
    attributes: dict[str, object] = {"cn": [cn], "objectClass": list(classes) or ["groupOfNames"]}
    if gid is not None:
        attributes["gidNumber"] = [gid]
    return DirectoryEntry.of(f"cn={cn},ou=groups,dc=example,dc=org", attributes)


def test_a_users_own_principals_and_where_they_come_from() -> None:
    found = {p.token: p.origin for p in user_principals(ALICE, "Alice")}
    assert found == {
        "user:alice": "uid of uid=alice,ou=people,dc=example,dc=org",
        "user:uid=alice,ou=people,dc=example,dc=org": "DN of the directory entry of Alice",
        "uid:1001": "uidNumber of uid=alice,ou=people,dc=example,dc=org",
        "gid:2000": "gidNumber (primary group) of uid=alice,ou=people,dc=example,dc=org",
    }


def test_an_entry_without_numbers_gives_its_names_only() -> None:
    plain = DirectoryEntry.of("cn=Bob Smith,ou=people,dc=example,dc=org", {"uid": ["bob"]})
    assert [p.token for p in user_principals(plain, "bob")] == ["user:bob", "user:cn=Bob Smith,ou=people,dc=example,dc=org"]
    # no uid: the name signed in with is no principal (the directory may have matched it to
    # another spelling), the entry's DN is
    nameless = DirectoryEntry.of("cn=Bob Smith,ou=people,dc=example,dc=org", {"uid": []})
    assert [p.token for p in user_principals(nameless, "bob")] == ["user:cn=Bob Smith,ou=people,dc=example,dc=org"]


def test_a_stored_name_that_folds_to_another_gives_no_user_name_principal() -> None:
    """uid=bob@partner.example is not bob, nor is a name that reads as a DN another entry's DN."""
    for uid in ("bob@partner.example", "PARTNER\\bob", "uid=bob,ou=people,dc=example,dc=org", " bob"):
        entry = DirectoryEntry.of(f"cn=x{len(uid)},ou=people,dc=example,dc=org", {"uid": [uid]})
        assert [p.token for p in user_principals(entry, uid)] == [f"user:{entry.dn}"], uid
    account = DirectoryEntry.of("CN=Bob,CN=Users,DC=sc,DC=test", {"sAMAccountName": ["Bob"]})
    assert "user:bob" in windows_principals("SC\\bob", account, [], {}).tokens


def test_an_entry_is_named_by_a_compared_attribute_equal_under_the_tokens_folding() -> None:
    bob = DirectoryEntry.of("uid=bob,ou=people,dc=example,dc=org", {"uid": ["bob"], "mail": ["bob@example.org"]})
    assert named(bob, "bob", ["uid"]) and named(bob, "BOB", ["uid"])
    # what OpenLDAP's matching folds besides case is another name here
    for other in ("\uff42ob", "bob ", " bob", "bo\u0301b", "bob@example.org"):
        assert not named(bob, other, ["uid"]), repr(other)
    assert named(bob, "bob@example.org", ["uid", "mail"])
    account = DirectoryEntry.of(
        "CN=Bob,CN=Users,DC=sc,DC=test", {"samaccountname": ["bob"], "userprincipalname": ["bob@sc.test"]}
    )
    ad = ["samaccountname", "userprincipalname"]
    assert named(account, "bob", ad, True) and named(account, "SC\\bob", ad, True) and named(account, "bob@SC.TEST", ad, True)
    assert not named(account, "PARTNER\\bob", ad, True)  # another domain's bob is not this one
    assert not named(account, "bob@partner.example", ad, True)


def test_the_user_filter_must_compare_an_attribute_with_the_name() -> None:
    assert compared_attributes("(uid={user})") == ("uid",)
    assert compared_attributes("(&(objectClass=user)(|(sAMAccountName={user})(userPrincipalName={user})))") == (
        "samaccountname",
        "userprincipalname",
    )
    with pytest.raises(ValueError, match="compares no attribute"):
        compared_attributes("(uid={user}*)")
    with pytest.raises(ValueError, match="SEARCHCRAWL_LDAP_USER_FILTER"):
        DirectoryConfig.from_settings(
            Settings({"SEARCHCRAWL_LDAP_URL": "ldap://x", "SEARCHCRAWL_LDAP_USER_FILTER": "(cn=*{user}*)"})
        )


def test_a_posix_groups_principals_carry_the_path() -> None:
    staff = group("staff", "posixGroup", gid="2000")
    membership = Membership(staff, (staff.dn,), "memberUid")
    found = {p.token: p.origin for p in group_principals(membership, ALICE.dn)}
    assert found == {
        "group:cn=staff,ou=groups,dc=example,dc=org": "memberOf path: cn=staff <- uid=alice (memberUid)",
        "group:staff": "cn of cn=staff,ou=groups,dc=example,dc=org; memberOf path: cn=staff <- uid=alice (memberUid)",
        "gid:2000": "gidNumber of posixGroup cn=staff,ou=groups,dc=example,dc=org; memberOf path: cn=staff <- uid=alice (memberUid)",
    }


def test_a_group_of_names_gives_no_gid_even_with_a_number() -> None:
    named = group("finance", "groupOfNames", gid="3000")
    tokens = [p.token for p in group_principals(Membership(named, (named.dn,), "member"), ALICE.dn)]
    assert tokens == ["group:cn=finance,ou=groups,dc=example,dc=org", "group:finance"]


def tree(parents: dict[str, list[str]]) -> tuple[Callable[[DirectoryEntry], list[DirectoryEntry]], list[str]]:
    """parents_of over a dict: group cn -> the cns of the groups it is a member of; counts calls."""
    asked: list[str] = []

    def parents_of(entry: DirectoryEntry) -> list[DirectoryEntry]:
        cn = entry.first("cn")
        asked.append(cn)
        return [group(name) for name in parents.get(cn, [])]

    return parents_of, asked


def test_nested_groups_are_walked_breadth_first_with_their_paths() -> None:
    parents_of, _asked = tree({"accounting": ["finance"], "finance": ["all-staff"], "staff": ["all-staff"]})
    found = walk_groups([(group("accounting"), "member"), (group("staff"), "memberUid")], parents_of)
    assert [(m.group.first("cn"), m.how) for m in found] == [
        ("accounting", "member"),
        ("staff", "memberUid"),
        ("finance", "member"),
        ("all-staff", "memberUid"),  # the shortest path: through staff, one step
    ]
    assert path_text(found[2], ALICE.dn) == "memberOf path: cn=finance <- cn=accounting <- uid=alice (member)"
    assert path_text(found[3], ALICE.dn) == "memberOf path: cn=all-staff <- cn=staff <- uid=alice (memberUid)"


def test_a_cycle_of_groups_ends() -> None:
    parents_of, asked = tree({"loop-a": ["loop-b"], "loop-b": ["loop-a"]})
    found = walk_groups([(group("loop-a"), "member")], parents_of)
    assert [m.group.first("cn") for m in found] == ["loop-a", "loop-b"]
    assert asked == ["loop-a", "loop-b"]


def test_a_group_met_twice_directly_is_kept_once_with_the_first_reason() -> None:
    staff = group("staff", "posixGroup", gid="2000")
    found = walk_groups([(staff, "memberUid"), (staff, "primary group")], tree({})[0])
    assert [(m.group.first("cn"), m.how) for m in found] == [("staff", "memberUid")]


def test_the_walk_is_bounded_in_depth_and_count() -> None:
    chain = {f"g{i}": [f"g{i + 1}"] for i in range(100)}
    parents_of, _ = tree(chain)
    assert len(walk_groups([(group("g0"), "member")], parents_of, max_depth=3)) == 4  # g0 and three above
    wide = {"top": [f"w{i}" for i in range(50)]}
    parents_of, _ = tree(wide)
    assert len(walk_groups([(group("top"), "member")], parents_of, max_groups=10)) == 10


def test_member_principals_are_what_apaches_ldap_group_grants_by_default() -> None:
    """Issue 91 point 2: a posixGroup by memberUid, the primary group, and a posixGroup inside a
    groupOfNames give group: principals but no member:; a groupOfNames inside one does."""
    inspectors = group("inspectors", "posixGroup", gid="3000")
    benefits = group("benefits", "posixGroup", gid="2000")
    accounting, uniques = group("accounting"), group("uniques", "groupOfUniqueNames")
    kinds = {"inspectors": ("posixGroup",), "benefits": ("posixGroup",), "uniques": ("groupOfUniqueNames",)}
    # auditors (a groupOfNames) holds inspectors; finance holds accounting, staff holds uniques
    above = {"inspectors": ["auditors"], "benefits": ["auditors"], "accounting": ["finance"], "uniques": ["staff"]}

    def parents_of(entry: DirectoryEntry) -> list[DirectoryEntry]:
        return [group(cn, *kinds.get(cn, ())) for cn in above.get(entry.first("cn"), [])]

    direct = [(inspectors, "memberUid"), (benefits, "primary group"), (accounting, "member"), (uniques, "uniqueMember")]
    every = walk_groups(direct, parents_of)
    by_dn = dn_member_walk(direct, parents_of)
    assert {m.group.first("cn") for m in every} == {
        "inspectors",
        "benefits",
        "auditors",
        "accounting",
        "finance",
        "uniques",
        "staff",
    }
    assert [(m.group.first("cn"), m.how) for m in by_dn] == [
        ("accounting", "member"),
        ("uniques", "uniqueMember"),
        ("finance", "member"),
        ("staff", "uniqueMember"),
    ]
    found = principals_of("alice", ALICE, every, by_dn)
    members = sorted(token for token in found.tokens if token.startswith("member:"))
    assert members == [f"member:cn={cn},ou=groups,dc=example,dc=org" for cn in ("accounting", "finance", "staff", "uniques")]
    assert "group:cn=inspectors,ou=groups,dc=example,dc=org" in found.tokens
    origin = found.origin("member:cn=finance,ou=groups,dc=example,dc=org")
    assert origin == "memberOf path: cn=finance <- cn=accounting <- uid=alice (member)"


def test_direct_principals_are_what_one_search_by_a_group_filter_finds() -> None:
    """Issue 91 point 2 (DokuWiki's authldap): each group the user is in itself, by the attribute
    holding them, by its first cn, with and without each of its classes; nothing nested, and a
    group met twice directly (memberUid and primary group) by both attributes."""
    staff = group("staff", "posixGroup", gid="2000")
    accounting = DirectoryEntry.of(
        "cn=accounting,ou=groups,dc=example,dc=org", {"cn": ["Accounting", "acct"], "objectClass": ["top", "groupOfNames"]}
    )
    odd = group("cn=finance,ou=groups,dc=example,dc=org")  # a first cn that reads as a DN: none
    finance = group("finance")  # above accounting: not direct
    direct = [(staff, "memberUid"), (staff, "primary group"), (accounting, "member"), (odd, "uniqueMember")]
    every = [*walk_groups(direct, tree({})[0]), Membership(finance, (finance.dn, accounting.dn), "member")]
    found = principals_of("alice", ALICE, every, direct=direct)
    assert sorted(token for token in found.tokens if token.startswith("direct:")) == [
        "direct:=gidnumber/posixgroup:staff",  # a cn lower-case as stored: case-exact ones too
        "direct:=gidnumber:staff",
        "direct:=memberuid/posixgroup:staff",
        "direct:=memberuid:staff",
        "direct:gidnumber/posixgroup:staff",
        "direct:gidnumber:staff",
        "direct:member/groupofnames:accounting",  # "Accounting": no case-exact one
        "direct:member/top:accounting",
        "direct:member:accounting",
        "direct:memberuid/posixgroup:staff",
        "direct:memberuid:staff",
    ]
    origin = found.origin("direct:member:accounting")
    assert origin == "member of cn=accounting,ou=groups,dc=example,dc=org (its first cn, no nesting) <- " + ALICE.dn


def test_direct_principals_of_names_with_blanks_and_of_entries_with_several_uids() -> None:
    """Issue 91 (review of point 2, findings 2 and 6): a cn with a blank around it gives no direct:
    token (DokuWiki encodes it as 'finance%20', gitolite splits on it); an entry of several uids
    gets no memberUid group (a filter's %{uid} is its first uid, %{user} the name typed), its
    member groups still."""
    spaced = DirectoryEntry.of("cn=finance\\20,ou=groups,dc=example,dc=org", {"cn": ["finance "], "objectClass": ["posixGroup"]})
    found = principals_of("alice", ALICE, [], direct=[(spaced, "memberUid")])
    assert not [token for token in found.tokens if token.startswith("direct:")]
    twice = DirectoryEntry.of(ALICE.dn, {"uid": ["mallory", "alice"], "gidNumber": ["2000"]})
    inspectors, accounting = group("inspectors", "posixGroup"), group("accounting")
    found = principals_of("alice", twice, [], direct=[(inspectors, "memberUid"), (accounting, "member")])
    assert sorted(token for token in found.tokens if token.startswith("direct:")) == [
        "direct:=member/groupofnames:accounting",
        "direct:=member:accounting",
        "direct:member/groupofnames:accounting",
        "direct:member:accounting",
    ]


def test_principals_of_a_user_normalised_once_each_with_public() -> None:
    accounting = group("Accounting")
    found = principals_of("ALICE", ALICE, [Membership(accounting, (accounting.dn,), "member")])
    assert found.user == "alice"
    assert found.tokens == {
        "public",
        "user:alice",
        "user:uid=alice,ou=people,dc=example,dc=org",
        "uid:1001",
        "gid:2000",
        "group:cn=accounting,ou=groups,dc=example,dc=org",
        "group:accounting",
    }
    assert found.origin("group:accounting").startswith("cn of cn=Accounting")


def test_a_value_that_is_no_token_is_left_out() -> None:
    odd = DirectoryEntry.of("uid=x,dc=org", {"uid": ["x"], "uidNumber": ["not-a-number"]})
    assert "uid:not-a-number" not in principals_of("x", odd, []).tokens


def test_the_ldap_client_is_imported_where_a_directory_is_set_alone() -> None:
    """The commands that build a directory import no LDAP client (Scrapy imports every command
    module on each `scrapy` command); ``directory_of`` imports it where SEARCHCRAWL_LDAP_URL is
    set, from a module above directory.py and ldap_directory.py (no import circle of the two)."""
    code = (
        "import importlib, sys\nfrom scrapy.settings import Settings\n"
        "for name in ('search', 'web', 'explain-access'):\n    importlib.import_module('searchcrawl.commands.' + name)\n"
        "from searchcrawl.access.directory_setting import directory_of\nprint('ldap3' in sys.modules)\n"
        "directory_of(Settings({'SEARCHCRAWL_LDAP_URL': 'ldap://127.0.0.1:1', 'SEARCHCRAWL_LDAP_USER_BASE': 'dc=x'}))\n"
        "print('ldap3' in sys.modules)\n"
    )
    assert fresh_python(code) == ["False", "True"]


def test_settings_make_a_directory_or_none() -> None:
    assert directory_of(Settings({"SEARCHCRAWL_LDAP_URL": ""})) is None
    config = DirectoryConfig.from_settings(
        Settings({"SEARCHCRAWL_LDAP_URL": "ldap://127.0.0.1:1", "SEARCHCRAWL_LDAP_USER_BASE": "ou=people,dc=x"})
    )
    assert config.group_base == "ou=people,dc=x"  # groups below the users' base without their own
    assert config.filter == "(uid={user})" and config.cache_seconds == 300
    assert "bind_password" not in repr(config)


def test_a_walk_cut_at_a_bound_says_so_and_a_whole_walk_does_not() -> None:
    chain = {f"g{i}": [f"g{i + 1}"] for i in range(100)}
    parents_of, _ = tree(chain)
    cut: list[str] = []
    assert len(walk_groups([(group("g0"), "member")], parents_of, max_depth=3, cut=cut)) == 4
    assert cut == ["groups in groups deeper than 3"]
    wide = {"top": [f"w{i}" for i in range(50)]}
    cut = []
    assert len(walk_groups([(group("top"), "member")], tree(wide)[0], max_groups=10, cut=cut)) == 10
    assert cut == ["more than 10 groups"]
    cut = []
    direct = [(group(f"d{i}"), "member") for i in range(12)]
    assert len(walk_groups(direct, tree({})[0], max_groups=10, cut=cut)) == 10 and cut == ["more than 10 groups"]
    cut = []  # exactly at the bounds, nothing left out
    assert len(walk_groups([(group("g98"), "member")], parents_of, max_depth=2, cut=cut)) == 3 and not cut


def test_a_connection_follows_no_referral() -> None:
    """ldap3 follows referrals to any host by default, binding there with the same credentials."""
    from searchcrawl.access.ldap_directory import LdapDirectory

    directory = LdapDirectory(DirectoryConfig(url="ldap://127.0.0.1:1", user_base="dc=x"))
    connection = directory._connection("uid=alice,dc=x", "secret")  # not opened: no socket
    assert connection.auto_referrals is False
    assert connection.closed


class SlowConnection:
    """An ldap3 connection's search as a slow directory answers it: each within the timeout,
    ``step`` seconds of ``clock`` each; every group is in two new groups (a large graph)."""

    def __init__(self, clock: list[float], step: float) -> None:
        self.clock, self.step = clock, step
        self.result: dict[str, object] = {"result": 0}
        self.response: list[dict[str, object]] = []
        self.searches = 0

    def search(self, base: str, query: str, **options: object) -> bool:
        self.clock[0] += self.step
        self.searches += 1
        n = self.searches
        self.response = [
            {"type": "searchResEntry", "dn": f"cn=g{n}-{i},dc=x", "attributes": {"cn": [f"g{n}-{i}"]}} for i in range(2)
        ]
        return True


def test_a_slow_directory_gives_up_the_walk_after_its_budget() -> None:
    import pytest

    from searchcrawl.access.directory import LOOKUP_TIMEOUTS
    from searchcrawl.access.ldap_directory import DirectoryUnavailableLdap, LdapDirectory

    now = [0.0]
    directory = LdapDirectory(DirectoryConfig(url="ldap://127.0.0.1:1", user_base="dc=x", timeout=2), clock=lambda: now[0])
    connection = SlowConnection(now, step=1.0)
    with pytest.raises(DirectoryUnavailableLdap, match="did not answer within 6 s"), directory._asking():
        directory._lookup_with(connection, "alice", ALICE)
    assert connection.searches == LOOKUP_TIMEOUTS * 2  # no search begins past the deadline
    now[0], fast = 0.0, SlowConnection(now, step=0.001)  # the same graph answered fast: cut at its bounds
    with directory._asking():
        found = directory._lookup_with(fast, "alice", ALICE)
    assert found.partial and len(found.tokens) > 1000


class Broken(LdapDirectory):
    def lookup(self, user: str) -> Principals:
        raise RuntimeError("a bug, or a library's surprise")


def test_whatever_fails_a_searcher_gets_public_only_logged_at_error_once(caplog: pytest.LogCaptureFixture) -> None:
    directory = Broken(DirectoryConfig(url="ldap://directory.invalid", user_base="dc=x"))
    with caplog.at_level(logging.DEBUG, logger="searchcrawl.access.directory"):
        first, second = directory.principals("alice"), directory.principals("alice")
    assert first.tokens == second.tokens == {"public"} and first.user == "alice"
    assert first.error == "the directory at ldap://directory.invalid could not be asked (RuntimeError)"
    assert [record.levelname for record in caplog.records].count("ERROR") == 1


def test_a_malformed_directory_url_is_unavailable() -> None:
    directory = LdapDirectory(DirectoryConfig(url="ldap://[not-an-address", user_base="dc=x"))
    assert directory.principals("alice").tokens == {"public"}
    with pytest.raises(DirectoryUnavailable):
        directory.authenticate("alice", "a password")


def test_active_directory_settings_and_its_user_filter() -> None:
    config = DirectoryConfig.from_settings(
        Settings(
            {
                "SEARCHCRAWL_LDAP_URL": "ldaps://dc1",
                "SEARCHCRAWL_LDAP_USER_BASE": "dc=sc,dc=test",
                "SEARCHCRAWL_LDAP_KIND": "active_directory",
            }
        )
    )
    assert config.active_directory and "sAMAccountName={user}" in config.filter and "userPrincipalName" in config.filter
    with pytest.raises(ValueError, match="SEARCHCRAWL_LDAP_KIND"):
        DirectoryConfig.from_settings(Settings({"SEARCHCRAWL_LDAP_URL": "ldap://x", "SEARCHCRAWL_LDAP_KIND": "novell"}))


def test_a_windows_users_principals_are_its_sids_its_groups_and_the_network_logons() -> None:
    domain = "S-1-5-21-7-8-9"
    user = DirectoryEntry.of("CN=alice,CN=Users,DC=sc,DC=test", {"sAMAccountName": ["alice"]})
    managers = DirectoryEntry("CN=managers,CN=Users,DC=sc,DC=test", {"cn": ("managers",), "samaccountname": ("managers",)})
    principals = windows_principals(
        "SC\\alice", user, [f"{domain}-1102", f"{domain}-1105", "S-1-5-32-545"], {f"{domain}-1105": managers}
    )
    tokens = principals.tokens
    assert {f"sid:{domain}-1102", f"sid:{domain}-1105", "sid:S-1-5-32-545", "user:alice"} <= tokens
    assert {"sid:S-1-1-0", "sid:S-1-5-11", "sid:S-1-5-2", "sid:S-1-5-15"} <= tokens  # Everyone, Authenticated Users ...
    assert {"group:managers", "group:cn=managers,cn=users,dc=sc,dc=test"} <= tokens
    assert principals.origin(f"sid:{domain}-1105") == "tokenGroups of CN=alice: managers"
    assert principals.origin("sid:S-1-5-32-545") == "tokenGroups of CN=alice: BUILTIN\\Users"


def test_binary_sids_that_do_not_parse_are_left_out() -> None:
    good = sid_bytes("S-1-5-21-1-2-3-500")
    assert binary_sids([good, b"\x01\x05", good + b"x", b""]) == ["S-1-5-21-1-2-3-500"]


def test_a_windows_group_whose_name_reads_as_a_dn_gives_no_such_principal() -> None:
    """As on OpenLDAP (tests/e2e/test_directory.py): a group's cn or sAMAccountName that reads as
    another group's DN is no group:<DN> principal; its own DN and plain name are."""
    user = DirectoryEntry.of("CN=Mallory,CN=Users,DC=sc,DC=test", {"sAMAccountName": ["mallory"]})
    sid = "S-1-5-21-1-2-3-1200"
    fake = DirectoryEntry.of(
        "CN=p-team,OU=Partner,DC=sc,DC=test",
        {"cn": ["p-team", "CN=Finance,CN=Users,DC=sc,DC=test"], "sAMAccountName": ["cn=finance,cn=users,dc=sc,dc=test"]},
    )
    tokens = windows_principals("mallory", user, ["S-1-5-21-1-2-3-1105", sid], {sid: fake}).tokens
    assert "group:cn=finance,cn=users,dc=sc,dc=test" not in tokens
    assert {"group:cn=p-team,ou=partner,dc=sc,dc=test", "group:p-team"} <= tokens
