"""Access tokens and the decision alone (searchcrawl/access/tokens.py, decision.py): plain values,
no Solr. The Solr form of the decision is checked against ``decide`` in tests/e2e/test_access_filter.py."""

from __future__ import annotations

import random

import pytest

from searchcrawl.access.decision import Principal, Principals, decide, solr_trimming
from searchcrawl.access.tokens import (
    DENY_FIELD,
    LATE_DENY_FIELD,
    LEVEL_FIELDS,
    MAX_LEVELS,
    OVERRIDING_FIELD,
    PUBLIC,
    Access,
    AccessError,
    Grant,
    Level,
    direct_token,
    normal_token,
)

FINANCE = "group:cn=finance,ou=groups,dc=example,dc=org"


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("public", PUBLIC),
        (" PUBLIC ", PUBLIC),
        ("user:Alice", "user:alice"),
        ("user:EXAMPLE\\alice", "user:alice"),  # a domain user's two shapes: one token
        ("user:alice@example.org", "user:alice"),
        ("User:uid=Alice, ou=People,dc=example,dc=org", "user:uid=alice,ou=people,dc=example,dc=org"),
        ("group:CN=Finance , OU=Groups,DC=example,DC=org", FINANCE),
        ("group:finance", "group:finance"),
        ("Member:CN=Finance , OU=Groups,DC=example,DC=org", "member:" + FINANCE[len("group:") :]),
        ("Direct:memberUid/posixGroup:Inspectors", "direct:memberuid/posixgroup:inspectors"),
        ("direct:member:all staff", "direct:member:all staff"),
        ("direct:=memberUid:finance", "direct:=memberuid:finance"),
        ("uid:01001", "uid:1001"),
        ("gid:2001", "gid:2001"),
        ("sid:s-1-5-21-0010-2-3-1105", "sid:S-1-5-21-10-2-3-1105"),
        ("SID:S-1-1-0", "sid:S-1-1-0"),
    ],
)
def test_tokens_are_normalised_once(text: str, token: str) -> None:
    assert normal_token(text) == token


@pytest.mark.parametrize(
    "text",
    [
        *("", "alice", "role:admin", "user:", "uid:alice", "gid:-1", "user:a\nb", "user:" + "a" * 2000),
        *("user:a\x1fb", "group:\x1f", "group:a\x00", "uid:\u00b2", "uid:\u0661\u0662", "gid:\U0001d7d8"),
        *("sid:S-1", "sid:S-2-1-0", "sid:S-1-5-x", "sid:alice", "sid:S-1-" + "-1" * 20, "sid:S-1-\u0661"),
        *("sid:S-1-5-4294967296", "sid:S-1-281474976710656-1"),
        "member:finance",  # member: takes a group's DN
        *("direct:finance", "direct:member:cn=finance", "direct:member/posix group:finance", "direct:a/b/c:finance"),
        # issue 91 (review of point 2, finding 7): strict about blanks around a direct: cn
        *("direct:member: finance", "direct:member:finance ", " direct:member:finance", "direct:==member:finance"),
    ],
)
def test_what_is_not_a_token_is_refused(text: str) -> None:
    with pytest.raises(AccessError):
        normal_token(text)


def test_direct_tokens_of_names_with_blanks_or_capitals() -> None:
    """Issue 91 (review of point 2, findings 2 and 7): a cn with blanks around it is no server's
    name without them (DokuWiki encodes 'finance%20', gitolite splits on blanks): no token; a
    case-exact token only for a name that is lower-case already."""
    assert direct_token("member", None, "Finance") == "direct:member:finance"
    assert direct_token("member", "posixgroup", "finance", exact=True) == "direct:=member/posixgroup:finance"
    for cn, exact in (("finance ", False), (" finance", False), ("FINANCE", True), ("finance\t", True)):
        with pytest.raises(AccessError):
            direct_token("member", None, cn, exact)


def test_fields_hold_every_level_and_the_denies() -> None:
    access = Access.of([Grant.of(FINANCE, "acl")], [Grant.of("user:bob", "acl")]).within(
        Level("folder /srv/finance", (Grant.of("gid:2001", "mode 0750"),))
    )
    assert access.fields() == {
        "access_allow": [FINANCE],
        "access_allow_1": ["gid:2001"],
        "access_allow_2": [PUBLIC],
        "access_allow_3": [PUBLIC],
        DENY_FIELD: ["user:bob"],
        LATE_DENY_FIELD: [],
        OVERRIDING_FIELD: [],
    }
    assert set(access.fields()) == {*LEVEL_FIELDS, DENY_FIELD, LATE_DENY_FIELD, OVERRIDING_FIELD}


def test_open_and_repeated_levels_add_nothing() -> None:
    document = Access.of([Grant.of("gid:2001", "file")])
    assert document.within(Level("open folder", (Grant(PUBLIC, "o+x"),))).levels == document.levels
    assert document.within(Level("same folder", (Grant.of("gid:2001", "dir"),))).levels == document.levels
    assert Access.public("no rule").is_public and Access.public("x").digest() == PUBLIC
    assert not Access.public("x").within(Level("open", (Grant(PUBLIC, "o+x"),)), [Grant.of("uid:0", "owner")]).is_public


def test_digest_moves_with_the_tokens_only() -> None:
    one = Access.of([Grant.of("gid:1", "file a")])
    assert one.digest() == Access.of([Grant.of("gid:1", "another origin")]).digest()
    assert one.digest() != Access.of([Grant.of("gid:2", "file a")]).digest()
    assert one.digest() != Access.of([Grant.of("gid:1", "file a")], [Grant.of("uid:3", "x")]).digest()


def test_data_round_trip_keeps_origins() -> None:
    access = Access.of([Grant.of(FINANCE, "column readers of row 4")], [Grant.of("user:bob", "deny")]).within(
        Level("folder", (Grant.of("gid:7", "mode 0750"),))
    )
    again = Access.from_data(access.to_data())
    assert again == access and [g.origin for g in again.levels[0].allow] == ["column readers of row 4"]
    with pytest.raises(AccessError):
        Access.from_data({"levels": [{"name": "x", "allow": [["role:x", "o"]]}]})


def principals(*tokens: str) -> Principals:
    return Principals.of("alice", [Principal(token, "test") for token in tokens])


def test_deny_wins_and_says_which_entry() -> None:
    access = Access.of([Grant.of(FINANCE, "acl")], [Grant.of("user:alice", "deny rule /hr/")])
    decision = decide(access, principals("user:alice", FINANCE))
    assert not decision.granted and decision.entries[0].origin == "deny rule /hr/"
    assert decide(access, principals("user:bob", FINANCE)).granted


def test_a_deny_entry_is_not_deny_all() -> None:
    access = Access.public("site").within(Level("open", (Grant(PUBLIC, "o+x"),)), [Grant.of("user:bob", "deny")])
    assert decide(access, Principals.anonymous()).granted
    assert decide(access, principals("user:carol")).granted
    assert not decide(access, principals("user:bob")).granted


def test_every_level_needs_one_principal() -> None:
    access = Access.of([Grant.of("gid:20", "file")]).within(Level("folder", (Grant.of("gid:10", "dir"),)))
    assert not decide(access, principals("gid:20")).granted
    assert "folder" in decide(access, principals("gid:20")).reason
    both = decide(access, principals("gid:20", "gid:10"))
    assert both.granted and [g.origin for g in both.entries] == ["file", "dir"]


def test_anonymous_searchers_read_public_documents_only() -> None:
    assert decide(Access.public("site"), Principals.anonymous()).granted
    assert not decide(Access.of([Grant.of(FINANCE, "x")]), Principals.anonymous()).granted
    assert not decide(Access.of([]), principals(FINANCE)).granted  # a level that allows nobody


def test_levels_beyond_the_index_fold_conservatively() -> None:
    """More restricting levels than the index holds: a reader of the folded level needs a token
    all of them allow. Checked against the exact rule (every level) on random cases: folding may
    refuse a reader the levels admit, never admit one they refuse."""
    pool = [f"gid:{n}" for n in range(6)]
    generator = random.Random(55)
    refused_more = 0
    for _case in range(500):
        access = Access.of([Grant(generator.choice(pool), "file")])
        for depth in range(generator.randint(0, 6)):
            allow = tuple(Grant(token, f"dir {depth}") for token in generator.sample(pool, generator.randint(1, 3)))
            access = access.within(Level(f"dir {depth}", allow))
        reader = principals(*generator.sample(pool, generator.randint(0, 4)))
        exact = all(level.tokens & reader.tokens for level in access.levels)
        folded = decide(access, reader).granted
        assert not folded or exact
        refused_more += exact and not folded
        _indexed, levels = access.indexed_levels()
        assert len(levels) <= MAX_LEVELS
    assert refused_more  # the fold is exercised


def test_trimming_sends_the_principals_once() -> None:
    filters, params = solr_trimming(principals(FINANCE, "gid:2001"))
    assert len(filters) == len(LEVEL_FIELDS) + 2
    assert sorted(params["access_tokens"].split(params["access_separator"])) == sorted(["public", FINANCE, "gid:2001"])
    assert all("$access_tokens" in fq for fq in filters[:-2]) and "access_deny" in params["access_denied"]


def test_incomplete_principals_are_refused_every_document_with_a_deny_token() -> None:
    """A user whose groups were not all read (a bound of the walk) or could not be read (the
    directory did not answer) may lack the very group a deny token names: fail closed."""
    denied = Access.of([Grant.of(FINANCE, "acl")], [Grant.of("group:contractors", "deny")])
    public_but_bob = Access.of([Grant.of(PUBLIC, "site")], [Grant.of("user:bob", "deny")])
    plain = Access.of([Grant.of(FINANCE, "acl")])
    partial = Principals.of("alice", [Principal(FINANCE, "test")], partial="more than 1000 groups")
    assert partial.incomplete == "more than 1000 groups"
    assert not decide(denied, partial).granted and "incomplete" in decide(denied, partial).reason
    assert decide(plain, partial).granted
    unanswered = Principals("bob", Principals.anonymous().entries, error="the directory did not answer")
    assert not decide(public_but_bob, unanswered).granted
    assert decide(public_but_bob, Principals.anonymous()).granted  # a visitor: nothing to lack
    assert not Principals.anonymous().incomplete and not principals(FINANCE).incomplete
    filters, _params = solr_trimming(partial)
    assert filters[-2:] == ["*:* -access_deny:[* TO *]", "*:* -access_deny_late:[* TO *]"]
    assert len(solr_trimming(principals(FINANCE))[0]) == len(LEVEL_FIELDS) + 2


def test_a_value_that_is_no_token_never_reaches_the_solr_filter() -> None:
    """The terms filter splits the principals on \\x1f: a principal holding it (a hostile cn) is
    refused as a token, so it can never stand for two."""
    with pytest.raises(AccessError):
        Principals.of("eve", [Principal("group:staff\x1fgroup:hr", "a hostile cn")])
    filters, params = solr_trimming(principals("group:staff"))
    assert params["access_tokens"].split(params["access_separator"]) == ["group:staff", "public"]
