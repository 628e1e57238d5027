"""The imap source's logic alone (no server): its options, RFC 4314 access lists as access
tokens, keys, and attachments found in a BODYSTRUCTURE as they are found in the message.
tests/e2e/test_imap_sources.py crawls a real Dovecot."""

from __future__ import annotations

import imaplib
import threading
from email.message import EmailMessage
from typing import Any

import pytest
from imapclient.imapclient import Namespace
from imapclient.response_parser import parse_fetch_response
from pydantic import ValidationError

from searchcrawl.access.decision import Principal, Principals, decide
from searchcrawl.agents.base import AgentError
from searchcrawl.agents.imap import (
    _KEY,
    Connections,
    ImapAgent,
    ImapFolder,
    ImapOptions,
    Unmappable,
    folder_access,
    mailbox_access,
    others_names,
    skeleton,
)
from searchcrawl.agents.messages import attachments, contents

OPTIONS = {"server": "mail.example.org", "username": "crawler", "password_secret": "IMAP_PASSWORD", "users": ["alice"]}

# what Dovecot 2.3 answered for the message of nested_message() (its boundaries aside)
BODYSTRUCTURE = (
    b'2 (UID 2 BODYSTRUCTURE ((("text" "plain" ("charset" "utf-8") NIL NIL "7bit" 12 1 NIL NIL NIL NIL)'
    b'("text" "html" ("charset" "utf-8") NIL NIL "7bit" 18 1 NIL NIL NIL NIL) "alternative" ("boundary" "b1") NIL NIL NIL)'
    b'("application" "pdf" NIL NIL NIL "base64" 18 NIL ("attachment" ("filename*" "utf-8\'\'r%C3%A9port.pdf")) NIL NIL)'
    b'("message" "rfc822" NIL NIL NIL "8bit" 118 (NIL "fwd" NIL NIL NIL NIL NIL NIL NIL NIL) '
    b'("text" "plain" ("charset" "utf-8") NIL NIL "7bit" 7 1 NIL NIL NIL NIL) 6 NIL ("attachment" NIL) NIL NIL)'
    b'("text" "csv" ("charset" "us-ascii") NIL NIL "base64" 14 1 NIL ("attachment" ("filename" "data.csv")) NIL NIL)'
    b' "mixed" ("boundary" "b2") NIL NIL NIL))'
)


def options(**changes: Any) -> ImapOptions:
    return ImapOptions.model_validate({**OPTIONS, **changes})


def nested_message() -> bytes:
    message = EmailMessage()
    message["Subject"], message["Message-ID"] = "nested", "<n1@x>"
    message.set_content("plain body")
    message.add_alternative("<p>html body</p>", subtype="html")
    message.add_attachment(b"%PDF-1.4 x", maintype="application", subtype="pdf", filename="r\u00e9port.pdf")
    inner = EmailMessage()
    inner["Subject"] = "fwd"
    inner.set_content("inner")
    message.add_attachment(inner)
    message.add_attachment(b"a,b\n1,2\n", maintype="text", subtype="csv", filename="data.csv")
    return message.as_bytes()


def test_the_attachments_of_a_bodystructure_are_the_messages_own_numbered_alike() -> None:
    structure = parse_fetch_response([BODYSTRUCTURE])[2][b"BODYSTRUCTURE"]
    sections: dict[int, str] = {}
    listed = list(attachments(skeleton(structure, sections)))
    _body, read = contents(nested_message(), "k")
    assert [(a.number, a.filename) for a in listed] == [(a.number, a.filename) for a in read]
    assert [a.filename for a in listed] == ["r\u00e9port.pdf", "message-2.eml", "data.csv"]
    assert [sections[id(a.part)] for a in listed] == ["2", "3", "4"]  # RFC 3501 section numbers


@pytest.mark.parametrize("structure", [None, (), (b"text",), ([], b"mixed"), ((((((b"text",),),),),),), b"junk"])
def test_a_hostile_structure_lists_no_attachment_and_raises_nothing(structure: Any) -> None:
    assert list(attachments(skeleton(structure))) == []


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


def test_the_name_a_folder_has_to_the_other_users() -> None:
    dovecot = [("", "/")], [("shared/", "/")]
    assert others_names(*dovecot, "bob", "Reports/2026") == ("shared/bob/Reports/2026",)
    # the prefix and the owner alone is Dovecot's namespace root, never bob's INBOX
    assert others_names(*dovecot, "bob", "INBOX") == ("shared/bob/INBOX",)
    cyrus = [("INBOX.", ".")], [("user.", ".")]
    assert others_names(*cyrus, "bob", "INBOX.Reports") == ("user.bob.Reports",)
    # where the folders are INBOX's children, INBOX is the owner's root: user.bob.INBOX is bob's INBOX.INBOX
    assert others_names(*cyrus, "bob", "INBOX") == ("user.bob",)
    assert others_names([("", ".")], [("Other/", "/")], "bob", "a.b") == ("Other/bob/a/b",)
    assert others_names([("", "/")], [], "bob", "Reports") is None
    with pytest.raises(Exception, match="2 namespaces"):
        others_names([("", "/")], [("shared/", "/"), ("users/", "/")], "bob", "Reports")


def test_an_owner_whose_name_holds_a_separator_has_no_certain_name_to_the_others() -> None:
    # Dovecot reads the user back up to the first separator: shared.john.smith.Reports is john's smith.Reports
    maildir = [("", ".")], [("shared.", ".")]
    for folder in ("Reports", "INBOX"):
        with pytest.raises(Unmappable, match="separator"):
            others_names(*maildir, "john.smith", folder)
    assert others_names(*maildir, "john_smith", "Reports") == ("shared.john_smith.Reports",)
    # any separator the server announces, the personal one too
    with pytest.raises(Unmappable, match="separator"):
        others_names([("", ".")], [("Other/", "/")], "john.smith", "Reports")


def test_a_folder_name_holding_the_others_separator_is_another_folder_to_them() -> None:
    with pytest.raises(Unmappable, match="separator"):
        others_names([("", ".")], [("Other/", "/")], "bob", "a/b")  # bob's one folder a/b is folder a's child b
    with pytest.raises(Unmappable, match="separator"):
        others_names([("", "")], [("Other/", "/")], "bob", "a/b")
    assert others_names([("", "/")], [("shared/", "/")], "bob", "a/b") == ("shared/bob/a/b",)


def test_the_agent_keeps_a_folder_of_an_owner_named_with_a_separator_from_everyone() -> None:
    class MaildirClient(FakeClient):
        def namespace(self) -> Any:
            return Namespace(((b"", b"."),), ((b"shared.", b"."),), None)

        def getacl(self, name: str) -> list[tuple[bytes, bytes]]:
            # john's own folder smith.Reports, shared with everyone, answers for shared.john.smith.Reports
            return [(b"john", b"lrwstipekxa"), (b"anyone", b"lr")]

    agent = agent_with(MaildirClient())
    access, why = agent._access(MaildirClient(), ImapFolder("john.smith", "Reports", "john.smith"))  # type: ignore[arg-type]
    assert access is None and why is not None and "not certain" in why


def test_an_identifier_that_is_no_token_keeps_the_folder_from_everyone() -> None:
    access, why = folder_access([("bob", "lr"), ("-", "r")], options(user_token="user:{id}"), "alice", "alice/x")
    assert access is None and why is not None and "no token" in why


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"tls": "none"}, "password in clear"),
        ({"users": []}, "name the 'users'"),
        ({"users": ["a/b"]}, "no user name"),
        ({"users": ["#public"]}, "no user name"),
        ({"group_token": "group:sales"}, "one {id}"),
        ({"password_secret": "not a name"}, "NAME of an environment variable"),
        ({"server": "mail.example.org/x"}, "host name"),
    ],
)
def test_options_refused_with_one_line_each(changes: dict[str, Any], error: str) -> None:
    with pytest.raises(ValidationError, match=error.replace("{", r"\{").replace("}", r"\}")):
        options(**changes)


def test_plain_imap_only_to_this_machine_and_ports_by_tls() -> None:
    assert options(tls="none", server="127.0.0.1").port_number == 143
    assert options().port_number == 993 and options(tls="starttls").port_number == 143
    assert options(include=["Archive/*"], exclude=["Archive/Old"]).takes("Archive/2026")
    assert not options(include=["Archive/*"], exclude=["Archive/Old"]).takes("Archive/Old")


def test_keys_name_their_folder_whatever_its_name() -> None:
    agent = ImapAgent("mail", options())
    for key, parts in [
        ("alice/INBOX/17/4", ("alice", "INBOX", "17", "4", None)),
        ("alice/a/1/2/attachment/3-y/7/9", ("alice", "a/1/2/attachment/3-y", "7", "9", None)),
        ("alice/F/7/9/attachment/1-a.pdf", ("alice", "F", "7", "9", "1")),
    ]:
        match = _KEY.fullmatch(key)
        assert match is not None and (match["user"], match["folder"], match["validity"], match["uid"], match["number"]) == parts
        assert agent.key_of(agent.url_for(key)) == key
    assert _KEY.fullmatch("alice/INBOX/x/4") is None
    assert agent.fetch("mallory/INBOX/1/1", 0) is None  # a user the source does not name: never logged in as


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


def test_a_hostile_structure_costs_what_a_hostile_message_costs() -> None:
    wide = (
        [(b"application", b"pdf", None, None, None, b"base64", 1, None, (b"attachment", (b"filename", b"x.pdf")))] * 5000,
        b"mixed",
    )
    assert len(list(attachments(skeleton(wide)))) < 1000
    many = (b"application", b"pdf", tuple(b"p%d" % (n // 2) for n in range(20000)), None, None, b"base64", 1)
    assert skeleton(many)["Content-Type"].count(";") == 64


class FakeClient:
    """Answers as a server would, or fails as one does."""

    def __init__(self, select: BaseException | None = None, size: int = 10, body: bytes = b"") -> None:
        self.select, self.size, self.body, self.closed = select, size, body, False

    def select_folder(self, name: str, readonly: bool) -> dict[bytes, Any]:
        if self.select is not None:
            raise self.select
        return {b"UIDVALIDITY": 7, b"EXISTS": 1}

    def getacl(self, name: str) -> list[tuple[bytes, bytes]]:
        return [(b"bob", b"lr")]

    def namespace(self) -> Any:
        return Namespace(((b"", b"/"),), ((b"shared/", b"/"),), None)

    def fetch(self, uids: list[int], items: list[str]) -> dict[int, dict[bytes, Any]]:
        if items == ["RFC822.SIZE"]:
            return {uids[0]: {b"RFC822.SIZE": self.size}}
        (item,) = items
        return {uids[0]: {b"BODY[]<0>": self.body}}

    def logout(self) -> None:
        self.closed = True

    shutdown = logout


def agent_with(client: FakeClient) -> ImapAgent:
    agent = ImapAgent("mail", options(max_message_bytes=100))
    agent.connections = Connections(lambda user: client)  # type: ignore[arg-type,return-value]
    return agent


def test_only_a_folder_that_does_not_exist_is_gone_any_other_failure_keeps_the_document() -> None:
    gone = agent_with(FakeClient(select=imaplib.IMAP4.error("select failed: [NONEXISTENT] Mailbox doesn't exist")))
    assert gone.fetch("alice/INBOX/7/1", 0) is None
    for failure in (imaplib.IMAP4.abort("socket error: EOF"), imaplib.IMAP4.error("[UNAVAILABLE] busy"), TimeoutError()):
        client = FakeClient(select=failure)
        with pytest.raises(AgentError):
            agent_with(client).fetch("alice/INBOX/7/1", 0)
        assert client.closed  # a connection that failed is never used again


def test_a_server_that_sends_more_than_it_said_is_not_believed() -> None:
    content = agent_with(FakeClient(size=10, body=b"x" * 101)).fetch("alice/INBOX/7/1", 0)
    assert content is not None and b"larger than the crawl's limit" in content.body
    content = agent_with(FakeClient(size=10, body=b"Subject: s\r\n\r\nhello")).fetch("alice/INBOX/7/1", 0)
    assert content is not None and content.body == b"hello" and content.access is not None


def test_connections_per_user_are_bounded_and_a_failed_one_is_dropped() -> None:
    made: list[FakeClient] = []

    def login(user: str) -> FakeClient:
        made.append(FakeClient())
        return made[-1]

    pool = Connections(login)  # type: ignore[arg-type]
    held = [pool._take("alice") for _ in range(Connections.PER_USER)]  # noqa: SLF001
    waiting = threading.Thread(target=lambda: pool._give_back("alice", pool._take("alice")))  # noqa: SLF001
    waiting.start()
    waiting.join(0.2)
    assert waiting.is_alive() and len(made) == Connections.PER_USER  # the fifth waits for one
    pool._give_back("alice", held.pop())  # noqa: SLF001
    waiting.join(10)
    assert not waiting.is_alive() and len(made) == Connections.PER_USER
    with pytest.raises(RuntimeError), pool.use("bob"):
        raise RuntimeError("a command failed")
    assert made[-1].closed and pool.count["bob"] == 0
    pool.close()
    assert all(client.closed for client in made if client not in held)
