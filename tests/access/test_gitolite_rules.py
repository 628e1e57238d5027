"""gitolite's rules as tokens (searchcrawl/access/gitolite_rules.py), case by case; the e2e test
(tests/e2e/test_git_sources.py) checks them against ``gitolite access`` itself."""

from __future__ import annotations

import pytest

from searchcrawl.access.decision import Principal, Principals, decide
from searchcrawl.access.gitolite_rules import GitoliteNames, read_gitolite
from searchcrawl.access.tokens import filter_relations

NAMES = GitoliteNames(group_token="group:{id}", authenticated_token="group:staff")
CONF = """@leads = bob
@devs = alice @leads
@docs = handbook wiki
repo @docs
    R = @devs            # a group the file defines: its members
    RW+ master = carol   # a refex: reading is any ref
repo secret
    C = dave             # creating is no reading
    R = @finance         # a group the file does not define: the directory's
repo open
    R = @all
repo h.*
    R = erin
"""


def readers(repo: str, conf: str = CONF, names: GitoliteNames = NAMES) -> set[str]:
    access, why = read_gitolite(conf, "/srv/gitolite/conf/gitolite.conf").access_of(repo, names)
    assert access is not None, why
    return {grant.token for grant in access.levels[0].allow}


def principals(*tokens: str) -> Principals:
    return Principals.of("someone", [Principal(token, "test") for token in tokens])


def test_groups_repository_groups_patterns_and_all() -> None:
    # a group is its members, and with group_token the directory's group as gitolite's GROUPLIST_PGM gives it
    assert readers("handbook") == {"user:alice", "user:bob", "user:carol", "user:erin", "group:devs"}  # h.* too
    assert readers("wiki") == {"user:alice", "user:bob", "user:carol", "group:devs"}
    assert readers("wiki", names=GitoliteNames()) == {"user:alice", "user:bob", "user:carol"}
    assert readers("secret") == {"group:finance"}
    assert readers("open") == {"group:staff"}
    assert readers("open", names=GitoliteNames()) == set()  # @all without a token: no one
    assert readers("nothing") == set()


def test_a_grouplist_program_searching_ldap_gives_its_filters_groups() -> None:
    """Issue 91 point 2: a GROUPLIST_PGM that prints the groups one search by a filter finds: a
    group is the direct: tokens of its relations, never group: (nested groups, other relations)."""
    names = GitoliteNames(group_relations=filter_relations("(&(objectClass=posixGroup)(memberUid=%{user}))"))
    assert readers("secret", names=names) == {"direct:=memberuid/posixgroup:finance"}
    assert readers("wiki", names=names) == {"user:alice", "user:bob", "user:carol", "direct:=memberuid/posixgroup:devs"}
    access, _ = read_gitolite(CONF, "gitolite.conf").access_of("secret", names)
    assert access is not None and not decide(access, principals("group:finance")).granted


def test_a_grouplist_program_s_names_compare_with_case() -> None:
    """Issue 91 (review of point 2, finding 2): gitolite compares the cn GROUPLIST_PGM prints with
    case: a member of a group whose cn is FINANCE is not in @finance. A read is the case-exact
    direct:= token (a cn lower-case as stored); a read of @Finance reads nothing. (Finding 3) A deny
    of a group cannot be read for certain: gitolite splits the program's lines on blanks (cn
    'finance team' is in @finance), its search may find more groups: 927."""
    names = GitoliteNames(group_relations=filter_relations("(member=%{dn})"))
    conf = "repo pay\n    R = @finance\nrepo board\n    R = @Finance alice\nrepo hr\n    option deny-rules = 1\n    - = @finance\n    R = @all\n"
    upper = principals("direct:member:finance")  # a member of cn FINANCE: what the directory gives
    lower = principals("direct:member:finance", "direct:=member:finance")  # of cn finance
    access, _ = read_gitolite(conf, "gitolite.conf").access_of("pay", names)
    assert access is not None and decide(access, lower).granted and not decide(access, upper).granted
    assert readers("board", conf, names) == {"user:alice"}
    everyone = GitoliteNames(group_relations=names.group_relations, authenticated_token="group:staff")
    access, why = read_gitolite(conf, "gitolite.conf").access_of("hr", everyone)
    assert access is None and why == (
        "gitolite.conf line 7: - = @finance: denies @finance, a group GROUPLIST_PGM may give where the directory reading does not"
    )


def test_deny_rules_decide_in_order_only_where_the_option_says() -> None:
    conf = """repo pay
    R = alice
    - = @all-staff
    R = bob
repo board
    option deny-rules = 1
    - = carol
    R = alice carol
repo hr
    option deny-rules = 1
    R = alice
    - = @all-staff
    R = bob
"""
    rules = read_gitolite(conf, "gitolite.conf")
    pay, _ = rules.access_of("pay", NAMES)
    assert pay is not None and not pay.deny and not pay.late_deny  # no option: denies do not count for reading
    board, _ = rules.access_of("board", NAMES)
    assert board is not None and [g.token for g in board.deny] == ["user:carol"]
    hr, _ = rules.access_of("hr", NAMES)
    assert hr is not None and [g.token for g in hr.late_deny] == ["group:all-staff"]
    assert [g.token for g in hr.overriding] == ["user:alice"]
    in_staff = ("group:all-staff",)
    assert decide(hr, principals("user:alice", *in_staff)).granted  # her rule comes first
    assert not decide(hr, principals("user:bob", *in_staff)).granted  # the deny comes before his
    assert decide(hr, principals("user:bob")).granted


@pytest.mark.parametrize(
    ("conf", "why"),
    [
        ('include "more.conf"\nrepo a\n    R = alice\n', "rules in another file"),
        ("repo a\n    R = CREATOR\n", "a role"),
        ("repo a\n    option deny-rules = 1\n    - = @all\n    R = bob\n", "which no token stands for"),
        ("repo a\n    R = cn=admins,dc=example\n", "no plain name"),
        ("repo a\n    RX = alice\n", "a line gitolite's rules do not read"),
        ("repo a[\n    R = alice\n", "cannot be read"),
    ],
)
def test_what_cannot_be_read_for_certain_keeps_the_files_out(conf: str, why: str) -> None:
    access, reason = read_gitolite(conf, "gitolite.conf").access_of("a", GitoliteNames())
    assert access is None and reason is not None and why in reason


def test_origins_name_the_line() -> None:
    access, _ = read_gitolite(CONF, "/srv/gitolite/conf/gitolite.conf").access_of("secret", NAMES)
    assert access is not None and access.levels[0].allow[0].origin == "gitolite.conf line 9: R = @finance"


@pytest.mark.parametrize(
    ("conf", "repo", "readers_of"),
    [
        # found by a hostile review, each against gitolite's own answer
        ("@a = alice\n@b = @a\n@a = mallory\nrepo r\n    R = @b\n", "r", {"user:alice"}),  # expanded where defined
        ("@g = @all\nrepo r\n    R = @g\n", "r", set()),  # @all in a group is no one
        ("@r1 = pub\n@r2 = @r1\n@r1 = sec\nrepo @r2\n    R = alice\n", "sec", set()),
        ("repo sec.git\n    R = alice\n", "sec", {"user:alice"}),  # .git ends no name
        ("repo secret-x|zzz\n    R = alice\n", "secret-xy", {"user:alice"}),  # Perl's /^secret-x|zzz$/
    ],
)
def test_groups_names_and_patterns_as_gitolite_reads_them(conf: str, repo: str, readers_of: set[str]) -> None:
    assert readers(repo, conf, GitoliteNames()) == readers_of


def test_deny_rules_as_config_and_perl_truth_and_odd_blanks() -> None:
    for switch in ("config gitolite-options.deny-rules = 1", "option deny-rules = yes"):
        access, _ = read_gitolite(f"repo r\n    {switch}\n    - = mallory\n    R = alice mallory\n", "c").access_of("r", NAMES)
        assert access is not None and [g.token for g in access.deny] == ["user:mallory"], switch
    access, why = read_gitolite("repo r\n    R = alice\n    R\x1c= mallory\n", "c").access_of("r", NAMES)
    assert access is None and why is not None and "a character gitolite reads otherwise" in why
