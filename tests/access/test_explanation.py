"""`scrapy explain-access`'s report (access/explanation.py) without a server."""

from __future__ import annotations

import json

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.access.explanation import (
    FROM_INDEX,
    FROM_TABLE,
    HeldDocument,
    access_of_fields,
    access_of_row,
    explain_access,
    explainable_url,
    indexed_forms,
)
from searchcrawl.access.tokens import Access, Grant, Level

URL = "file:///srv/hr/pay.txt"
ALICE = Principals.of(
    "alice",
    [
        Principal("user:alice", "uid of uid=alice,ou=people,dc=example,dc=org"),
        Principal(
            "group:finance", "cn of cn=finance,ou=groups,dc=example,dc=org; memberOf path: cn=finance <- uid=alice (member)"
        ),
    ],
)
PAY = Access(
    (
        Level("document", (Grant.of("group:finance", "POSIX ACL of /srv/hr/pay.txt: group:finance r--"),)),
        Level(
            "folder /srv/hr", (Grant.of("group:hr", "mode of /srv/hr: group hr r-x"), Grant.of("group:finance", "ACL of /srv/hr"))
        ),
    ),
    (Grant.of("user:mallory", "POSIX ACL of /srv/hr/pay.txt: user:mallory ---"),),
)


def test_a_granted_document_shows_each_token_principal_and_the_deciding_entries() -> None:
    lines = explain_access(ALICE, [HeldDocument("hr", URL, PAY, FROM_TABLE)], URL)
    assert lines == [
        "Searcher alice: 3 principals",
        "  public  <- every searcher",
        "  user:alice  <- uid of uid=alice,ou=people,dc=example,dc=org",
        "  group:finance  <- cn of cn=finance,ou=groups,dc=example,dc=org; memberOf path: cn=finance <- uid=alice (member)",
        "",
        f"Source hr: {URL}",
        "  access, from the document table:",
        "    document (one of these must be the searcher's):",
        "      allow group:finance  <- POSIX ACL of /srv/hr/pay.txt: group:finance r--",
        "    folder /srv/hr (one of these must be the searcher's):",
        "      allow group:hr  <- mode of /srv/hr: group hr r-x",
        "      allow group:finance  <- ACL of /srv/hr",
        "    deny user:mallory  <- POSIX ACL of /srv/hr/pay.txt: user:mallory ---",
        "  decision: GRANTED: granted: group:finance (POSIX ACL of /srv/hr/pay.txt: group:finance r--); "
        "group:finance (ACL of /srv/hr)",
    ]


def test_a_deny_and_a_level_without_the_searcher_refuse() -> None:
    mallory = Principals.of("mallory", [Principal("user:mallory", "uid of uid=mallory"), Principal("group:finance", "x")])
    lines = explain_access(mallory, [HeldDocument("hr", URL, PAY, FROM_TABLE)], URL)
    assert lines[-1] == (
        "  decision: REFUSED: denied: user:mallory (POSIX ACL of /srv/hr/pay.txt: user:mallory ---), "
        "the searcher's own (uid of uid=mallory)"
    )
    visitor = explain_access(Principals.anonymous(), [HeldDocument("hr", URL, PAY, FROM_TABLE)], URL)
    assert visitor[0] == "Searcher a visitor who is not signed in: 1 principals"
    assert visitor[-1] == "  decision: REFUSED: no principal of the searcher is allowed by document"


def test_the_index_fields_read_back_as_an_access_with_origin_index() -> None:
    fields = PAY.fields()
    read = access_of_fields(fields)
    assert read is not None and read.fields() == fields
    assert {grant.origin for level in read.levels for grant in level.allow} == {"index: access_allow", "index: access_allow_1"}
    assert access_of_fields({"id": "x"}) is None  # indexed without access
    lines = explain_access(ALICE, [HeldDocument("hr", URL, read, FROM_INDEX), HeldDocument("old", URL, None, FROM_INDEX)], URL)
    assert f"  access, from {FROM_INDEX}:" in lines
    assert lines[-2:] == ["  no access recorded (indexed without access tokens): shown to no one", "  decision: REFUSED"]


def test_the_table_column_reads_as_json_or_decoded_and_a_broken_one_as_none() -> None:
    assert access_of_row(json.dumps(PAY.to_data())) == PAY
    assert access_of_row(PAY.to_data()) == PAY
    assert access_of_row(None) is None and access_of_row("{not json") is None and access_of_row('{"levels": []}') is None


def test_a_url_no_source_holds() -> None:
    assert explain_access(ALICE, [], URL)[-1] == f"No source holds {URL} in the index: nothing to decide."


def test_a_directory_error_is_shown() -> None:
    down = Principals("alice", Principals.anonymous().entries, error="the directory at ldap://x did not answer")
    assert "  (public only: the directory at ldap://x did not answer)" in explain_access(down, [], URL)


def test_a_hostile_origin_reaches_no_terminal_as_escapes_and_partial_groups_are_said() -> None:
    """A file named with terminal escapes (or a row's key) is in its tokens' origins: the report
    shows them as \\xNN. A searcher whose groups were not all read is told why a deny refuses."""
    name = "/srv/hr/\x1b]0;pwned\x07\x1b[2Jpay\r\n.txt"
    hostile = Access.of([Grant.of("group:finance", f"POSIX ACL of {name}: group r")], [Grant.of("user:x", "deny")])
    partial = Principals.of("alice", [Principal("group:finance", "test")], partial="more than 1000 groups")
    lines = explain_access(partial, [HeldDocument("hr", URL + "\x1b[0m", hostile, FROM_TABLE)], URL)
    text = "\n".join(lines)
    assert not any(ord(char) < 32 and char != "\n" for char in text) and "\x7f" not in text
    assert "\\x1b]0;pwned\\x07\\x1b[2Jpay\\x0d\\x0a.txt" in text
    assert "(groups not all read: more than 1000 groups; no document with a deny token is shown)" in text
    assert "decision: REFUSED: refused: it denies some readers" in text


def test_every_sources_urls_can_be_explained_and_nothing_else() -> None:
    """Issue 72: the command and the administration page take the same URLs, every agent's too."""
    for url in (
        "https://intranet.example/a",
        "ftp://files.example/x",
        URL,
        "file:/srv/x",
        "sql://notes/42",
        "mail://inbox/INBOX/%3Cid%40mail.example%3E",
        "smb://files.example/share/plan.txt",
        "agent://custom/key",
    ):
        assert explainable_url(url), url
    for url in ("", "javascript:alert(1)", "data:text/html,x", "/relative/path", "intranet.example/a", "https://" + "x" * 8200):
        assert not explainable_url(url), url


def test_an_agents_url_as_the_docs_write_it_is_looked_up_as_agents_index_it() -> None:
    """Issue 91: agents index their key percent-encoded whole (rules/urls.py agent_url); the docs
    and people write it as it is. A web, file or smb URL is taken as it is: its %2F is its own."""
    assert indexed_forms("imap://mail/bob/INBOX/17/4") == ["imap://mail/bob/INBOX/17/4", "imap://mail/bob%2FINBOX%2F17%2F4"]
    assert indexed_forms("imap://mail/#public/Public/Notices/3/1")[1] == "imap://mail/%23public%2FPublic%2FNotices%2F3%2F1"
    assert indexed_forms("dokuwiki://wiki/ops:start")[1] == "dokuwiki://wiki/ops%3Astart"
    # a Message-ID's key holds escapes of its own: taken as written
    assert indexed_forms("mail://inbox/INBOX/%3Cid%40x%3E")[1] == "mail://inbox/INBOX%2F%253Cid%2540x%253E"
    for url in ("https://intranet.example/a/b", "smb://fs/share/a b.txt", "file:///srv/a", "sql://notes/42"):
        assert indexed_forms(url) == [url]
    # issue 91 review: a URL as indexed is not encoded again (%252F: another key, one holding a %)
    for url in ("imap://mail/bob%2FINBOX%2F17%2F4", "mail://inbox/INBOX%2F%253Cid%2540x%253E", "dokuwiki://wiki/ops%3Astart"):
        assert indexed_forms(url) == [url]
