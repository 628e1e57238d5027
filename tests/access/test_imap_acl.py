"""IMAP's access lists (RFC 4314, as Dovecot applies them) as access tokens: access/imap_acl.py
alone, with the names an imap source reads them with (agents/imap.py ``ImapOptions``: the crawl's
account and the token templates) as a plain value. tests/e2e/test_imap_sources.py checks them on a
real Dovecot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from searchcrawl.access.decision import Principal, Principals, decide
from searchcrawl.access.imap_acl import MailboxNames, folder_access, mailbox_access


@dataclass(frozen=True)
class Names:
    """An imap source's names with ImapOptions' defaults (the crawl's account: ``crawler``)."""

    username: str = "crawler"
    user_token: str = "user:{id}"
    group_token: str = "group:{id}"
    anyone_token: str | None = "public"
    authenticated_token: str | None = None


def options(**changes: Any) -> MailboxNames:
    return Names(**changes)


def searcher(user: str, *groups: str) -> Principals:
    return Principals.of(user, [Principal(f"user:{user}", "t"), *(Principal(f"group:{g}", "t") for g in groups)])


def test_rights_to_tokens_as_rfc_4314_says() -> None:
    entries = [("$sales", "lr"), ("bob", "lr"), ("-carol", "r"), ("dave", "l"), ("#crawler", "alr"), ("erin", "lrs")]
    access, why = folder_access(entries, options(), "alice", "alice/Projects")
    assert why is None and access is not None
    granted = {
        user
        for user, groups in [
            ("alice", ()),
            ("bob", ()),
            ("carol", ("sales",)),
            ("dave", ()),
            ("frank", ("sales",)),
            ("erin", ()),
            ("crawler", ()),
        ]
        if decide(access, searcher(user, *groups)).granted
    }
    # the owner implicitly; a negative right wins over the group; lookup alone reads nothing; the crawler is no reader
    assert granted == {"alice", "bob", "frank", "erin"}
    assert any("IMAP ACL of alice/Projects: -carol r" in grant.origin for grant in access.deny)


def test_an_owner_listed_without_read_and_the_special_identifiers() -> None:
    access, _ = folder_access([("alice", "l"), ("anyone", "lr"), ("authenticated", "lr")], options(), "alice", "alice/Inbox")
    assert access is not None and decide(access, searcher("bob")).granted  # anyone: public by default
    assert not decide(access, searcher("alice")).granted  # Dovecot: the owner's own user entry replaces her rights
    access, _ = folder_access([("owner", "l"), ("authenticated", "lr")], options(), "alice", "alice/Inbox")
    assert (
        access is not None and not decide(access, searcher("alice")).granted
    )  # authenticated: left out by default; owner not reading
    staff = options(authenticated_token="group:staff", group_token="group:cn={id},ou=groups,dc=example,dc=org")
    access, _ = folder_access([("authenticated", "lr"), ("$sales", "r")], staff, None, "public folder Notices")
    assert access is not None and decide(access, searcher("x", "staff")).granted
    assert decide(access, searcher("y", "cn=sales,ou=groups,dc=example,dc=org")).granted
    assert not decide(access, searcher("alice")).granted  # a public folder has no owner


def test_a_global_entry_of_a_users_mailbox_grants_its_owner_alone() -> None:
    """Issue 91: ``Reports group=sales lr`` in Dovecot's global file shows as ``#$sales lr`` to the
    crawl logged in for bob, but Dovecot matches it against the name each reader sees: alice
    (in sales) sees ``shared/bob/Reports``, which it does not match, and may not read."""
    entries = [("#$sales", "lr"), ("#crawler", "lra"), ("-#carol", "r"), ("dave", "lr")]
    access, why = folder_access(entries, options(), "bob", "bob/Reports")
    assert why is None and access is not None
    readers = {
        user
        for user, groups in [("alice", ("sales",)), ("bob", ("sales",)), ("dave", ())]
        if decide(access, searcher(user, *groups)).granted
    }
    assert readers == {"bob", "dave"}  # the owner; the folder's own entry applies to every name
    assert {grant.token for grant in access.deny} == {"user:carol"}  # a global deny is kept: fail closed
    for own in ("#owner", "#bob"):
        access, _ = folder_access([(own, "l"), ("dave", "lr")], options(), "bob", "bob/Reports")
        assert access is not None and not decide(access, searcher("bob")).granted  # the owner's own global entry counts
    # a public folder's name is the same to everyone: its global entries are read as they are
    access, _ = folder_access([("#$sales", "lr")], options(), None, "public folder Public/Notices")
    assert access is not None and decide(access, searcher("alice", "sales")).granted


def readers(access: Any, *people: tuple[str, tuple[str, ...]]) -> set[str]:
    return {user for user, groups in people if decide(access, searcher(user, *groups)).granted}


def test_an_entry_without_read_takes_it_as_dovecot_replaces_rights_kind_by_kind() -> None:
    """Issue 91 review: Dovecot applies a reader's matching entries by kind (anyone, authenticated,
    groups, owner, user), the folder's own before the global file's, each kind replacing the
    rights of the kinds before (groups add up); a global entry replaces even the owner's. So an
    entry without ``r`` takes reading from whom it names, where skipping it granted them."""
    people = [("intern", ("staff",)), ("erin", ("staff",)), ("frank", ())]
    # `* user=intern l` in the global file, `$staff lr` in the folder's own list: intern has l only
    for entries in ([("#intern", "l"), ("$staff", "lr")], [("intern", "l"), ("$staff", "lr")]):
        for owner, where in (("bob", "bob/Reports"), (None, "public folder Public/Notices")):
            access, why = folder_access(entries, options(), owner, where)
            assert why is None and access is not None
            assert readers(access, *people) == {"erin"}, (entries, where)
    # a group without r refuses its members what anyone gives them, not what a user or group entry gives
    entries = [("anyone", "lr"), ("$interns", "l"), ("$staff", "lr"), ("erin", "lr")]
    access, _ = folder_access(entries, options(), None, "public folder Public/Notices")
    people = [("ida", ("interns",)), ("ian", ("interns", "staff")), ("erin", ("interns",)), ("frank", ())]
    assert access is not None and readers(access, *people) == {"ian", "erin", "frank"}
    # authenticated without r: every searcher (logged in) is refused what anyone gives
    access, _ = folder_access([("anyone", "lr"), ("authenticated", "l"), ("$staff", "lr")], options(), None, "Public/x")
    assert access is not None and readers(access, ("ida", ()), ("erin", ("staff",))) == {"erin"}
    # anyone without r takes nothing (nothing comes before it)
    access, _ = folder_access([("anyone", "l"), ("$staff", "lr")], options(), None, "Public/x")
    assert access is not None and readers(access, ("ida", ()), ("erin", ("staff",))) == {"erin"}


def test_a_global_entry_without_read_takes_it_from_the_owner_too() -> None:
    """Issue 91 review: `Reports group=sales l` (``#$sales l`` to the crawl logged in for bob)
    replaces bob's own rights when he is in sales; a global ``anyone`` replaces everyone's."""
    access, _ = folder_access([("#$sales", "l"), ("dave", "lr")], options(), "bob", "bob/Reports")
    assert access is not None and readers(access, ("bob", ("sales",)), ("dave", ())) == {"dave"}
    assert decide(access, searcher("bob")).granted  # not in sales: his owner's rights
    for everyone in ("#anyone", "#authenticated"):
        access, _ = folder_access([(everyone, "l"), ("dave", "lr")], options(), "bob", "bob/Reports")
        assert access is not None and readers(access, ("bob", ()), ("dave", ())) == set()
        access, _ = folder_access([(everyone, "l"), ("$staff", "lr")], options(), None, "Public/x")
        assert access is not None and readers(access, ("erin", ("staff",))) == set()


MEASURED_OWN = [("dave", "lr"), ("#$sales", "lr"), ("#crawler", "alr")]
# Dovecot 2.3's GETACL of bob's Reports under the name others see, with `shared/bob/* user=carol lr`,
# `shared/bob/Reports user=dave l`, `Reports group=sales lr` and `shared/* group=board lr` in its global file
MEASURED_OTHERS = [("dave", "lr"), ("#$board", "lr"), ("#carol", "lr"), ("#crawler", "alr"), ("#dave", "l")]
PEOPLE = (("alice", ("sales",)), ("bob", ("sales",)), ("carol", ()), ("dave", ("board",)), ("erin", ("board",)))


def test_a_users_folder_is_read_by_each_reader_as_the_name_they_see() -> None:
    """Issue 91: Dovecot matches its global file's patterns against each reader's name: bob's
    ``Reports``, ``shared/bob/Reports`` to the others. Lines only the others' name matches (here
    carol's grant, dave's ``l`` and board's grant) never show under bob's: the others' list decides
    for them (measured MYRIGHTS: alice none, bob lr, carol lr, dave l, erin lr)."""
    access, why = mailbox_access(MEASURED_OWN, MEASURED_OTHERS, options(), "bob", "bob/Reports")
    assert why is None and access is not None
    assert readers(access, *PEOPLE) == {"bob", "carol", "erin"}
    assert any("as the others see it: #carol lr" in grant.origin for grant in access.levels[0].allow)
    # the server has no namespace of other users: nobody but the owner opens the folder
    access, _ = mailbox_access(MEASURED_OWN, None, options(), "bob", "bob/Reports")
    assert access is not None and readers(access, *PEOPLE) == {"bob"}
    # the others' entries for the owner are not his: he reads as his own name lets him
    access, _ = mailbox_access([("dave", "lr")], [("#bob", "l"), ("owner", "l"), ("$sales", "lr")], options(), "bob", "x")
    assert access is not None and readers(access, *PEOPLE) == {"alice", "bob"}


def test_the_owners_reading_that_depends_on_his_groups_is_refused_him() -> None:
    """One rule for all readers: where bob's own list takes reading from a group or everyone
    (`Reports group=sales l`, Dovecot: bob reads unless in sales), bob is refused, in sales or
    not, and the others read as their own name lets them (alice, in sales: the others' list)."""
    own, others = [("#$sales", "l"), ("$sales", "lr")], [("$sales", "lr")]
    access, _ = mailbox_access(own, others, options(), "bob", "bob/Reports")
    assert access is not None and readers(access, ("bob", ()), ("bob", ("sales",)), ("alice", ("sales",))) == {"alice"}
    # his own entry without r, a group of his reading: refused (fail closed)
    access, _ = mailbox_access([("owner", "l"), ("$sales", "lr")], others, options(), "bob", "bob/Reports")
    assert access is not None and readers(access, ("bob", ("sales",)), ("alice", ("sales",))) == {"alice"}
    # a deny both lists hold is everyone's: the owner too reads unless in that group
    both = [("-$board", "r"), ("dave", "lr")]
    access, _ = mailbox_access(both, both, options(), "bob", "bob/Reports")
    assert access is not None and readers(access, ("bob", ()), ("dave", ())) == {"bob", "dave"}
    assert readers(access, ("bob", ("board",)), ("dave", ("board",))) == set()
    # an own list whose entry is no token, or a crawl's account that does not read, is no one's
    for broken in ([("-", "r")], [("#crawler", "l")]):
        assert mailbox_access(broken, others, options(), "bob", "x")[0] is None
        assert mailbox_access([], broken, options(), "bob", "x")[0] is None


def test_an_identifier_that_is_no_token_keeps_the_folder_from_everyone() -> None:
    access, why = folder_access([("bob", "lr"), ("-", "r")], options(user_token="user:{id}"), "alice", "alice/x")
    assert access is None and why is not None and "no token" in why


@pytest.mark.parametrize(
    "entries",
    [
        [("anyone", "lr"), ("-authenticated", "r")],  # a deny that has no token
        [("bob", "lr"), ("!$tempdisabled", "")],  # Dovecot's group-override beats user entries
        [("bob", "lr"), ("-crawler", "r")],  # the crawl's own account, denied: Dovecot's rewritten "owner"?
        [("bob", "lr"), ("crawler", "l")],
        [("bob@partner.example", "lr")],  # a token drops domains: another bob
        [("$cn=x,ou=groups", "lr")],  # DN syntax in a group's name
    ],
)
def test_an_entry_whose_meaning_as_tokens_is_uncertain_keeps_the_folder_from_everyone(entries: list[tuple[str, str]]) -> None:
    access, why = folder_access(entries, options(), "alice", "alice/x")
    assert access is None and why is not None


def test_cyrus_identifiers_and_a_public_folders_owner() -> None:
    access, _ = folder_access([("group:sales", "lr"), ("-group:temps", "r"), ("anonymous", "lr")], options(), None, "f")
    assert access is not None and {grant.token for grant in access.deny} == {"group:temps"}
    assert {grant.token for level in access.levels for grant in level.allow} == {"group:sales", "public"}
    access, why = folder_access([("-owner", "r")], options(), None, "public folder f")
    assert access is None and why is not None  # no owner to deny
