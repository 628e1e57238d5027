"""The access tokens the built-in agents read (searchcrawl/agents/grants.py): plain logic."""

from __future__ import annotations

import pytest

from searchcrawl.access.decision import Principal, Principals, decide
from searchcrawl.access.tokens import Access, AccessError, Grant
from searchcrawl.agents.grants import MAX_REASON_CHARS, grants_of, split_tokens, unreadable, unreadable_reason


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("user:alice", ["user:alice"]),
        ("user:alice\tgroup:b\n uid:1 ;gid:2,public", ["user:alice", "group:b", "uid:1", "gid:2", "public"]),
        ("group:cn=Sales, OU=Groups, dc=example,dc=org", ["group:cn=Sales, OU=Groups, dc=example,dc=org"]),
        ("group:Domain Users user:bob", ["group:Domain Users", "user:bob"]),
        ("group:public relations", ["group:public relations"]),  # public inside a value, not after a separator
        ("USER : alice, Group:x", ["USER : alice", "Group:x"]),
        ("group:a\\, user:b", ["group:a\\, user:b"]),
        ("alice, user:bob", ["alice", "user:bob"]),
        ("user:a -group:b", ["user:a", "-group:b"]),
        ("user:a, publicity", ["user:a, publicity"]),  # not the token public
        # member: (Apache's ldap-group, issue 91) and sid: begin tokens as every namespace does
        ("group:staff member:cn=audit,dc=org", ["group:staff", "member:cn=audit,dc=org"]),
        ("user:a sid:S-1-5-21-1-2-3-1105", ["user:a", "sid:S-1-5-21-1-2-3-1105"]),
    ],
)
def test_split_tokens(text: str, expected: list[str]) -> None:
    assert split_tokens(text) == expected


def test_grants_of_normalises_or_refuses() -> None:
    grants = grants_of(split_tokens("USER:EXAMPLE\\Alice group:CN=Sales, OU=Groups"), "column readers of row '1'")
    assert grants == (
        Grant("user:alice", "column readers of row '1'"),
        Grant("group:cn=sales,ou=groups", "column readers of row '1'"),
    )
    for text in ("alice", "user:a -group:b", "uid:abc", "user:"):
        with pytest.raises(AccessError):
            grants_of(split_tokens(text), "x")


def test_unreadable_access_is_shown_to_no_one_and_says_why() -> None:
    access = unreadable("the access query failed:\n  relation acl does not exist " + "x" * 1000)
    reason = unreadable_reason(access)
    assert reason is not None and reason.startswith("the access query failed: relation acl does not exist x")
    assert len(reason) == MAX_REASON_CHARS
    assert access.fields()["access_allow"] == [] and not access.is_public
    for principals in (Principals.anonymous(), Principals.of("alice", [Principal("user:alice", "directory")])):
        assert not decide(access, principals).granted
    assert Access.from_data(access.to_data()) == access  # it travels with the request as the others do
    assert unreadable_reason(None) is None
    assert unreadable_reason(Access.public("x")) is None
    assert unreadable_reason(Access.of(())) is None  # no reader, but not unreadable
