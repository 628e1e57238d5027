"""The imap source's logic alone (no server): its options, keys, the name a folder has to the other
users, and attachments found in a BODYSTRUCTURE as they are found in the message (its access
lists as tokens: tests/access/test_imap_acl.py).
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

from searchcrawl.access.imap_acl import Unmappable
from searchcrawl.agents.base import AgentError
from searchcrawl.agents.imap import _KEY, Connections, ImapAgent, ImapFolder, ImapOptions, others_names, skeleton
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
