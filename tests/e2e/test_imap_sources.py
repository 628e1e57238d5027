"""IMAP sources against a real Dovecot with its ACL plugin (tests/mail_server.py), issue 78.

The oracle is the server's own answer: after every crawl of a changing server (messages added,
some with attachments, expunged, moved; rights granted, taken, denied through a negative right or
a group; a folder deleted and made again under a new UIDVALIDITY; one crawl killed with SIGKILL
and resumed by the next), each user's trimmed search
finds exactly the messages (and their attachments) of the folders where Dovecot's MYRIGHTS
gives them ``r``; an unchanged message is never read again, and a change of rights alone
updates the access without reading a body. TLS (implicit and StartTLS with the server's CA),
a refused password that never shows, public folders, and `scrapy explain-access`.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pysolr
import pytest

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.access.tokens import DENY_FIELD, LATE_DENY_FIELD, OVERRIDING_FIELD
from searchcrawl.index.solr_client import SolrIndex
from tests.conftest import Project, run_scrapy, solr_docs
from tests.directory_server import DirectoryServer
from tests.e2e.test_secure_search import found_by
from tests.mail_server import CRAWLER, USERS, MailServer

SECRET = "IMAP_CRAWL_PASSWORD_TEST"
OWNERS = ("alice", "bob")  # whose mailboxes are crawled
# a document's access as the index holds it (a group listed without r: a late deny)
ACCESS_FIELDS = ("access_allow", DENY_FIELD, LATE_DENY_FIELD, OVERRIDING_FIELD)
WORDS = ("harbour", "budget", "ferry", "tender", "quay", "dredging", "pilot", "berth")


def principals(user: str) -> Principals:
    groups = USERS[user][1]
    return Principals.of(user, [Principal(f"user:{user}", "test"), *(Principal(f"group:{group}", "test") for group in groups)])


def imap_source(project: Project, name: str, server: MailServer, **extra: Any) -> None:
    lines = [
        'type = "imap"',
        "max_delete_share = 1.0",
        "[imap]",
        'server = "127.0.0.1"',
        f"port = {extra.pop('port', server.imaps_port)}",
        f'tls = "{extra.pop("tls", "implicit")}"',
        f'ca_file = "{extra.pop("ca_file", server.ca_file)}"',
        f'username = "{CRAWLER}"',
        f'password_secret = "{SECRET}"',
        f"users = {json.dumps(extra.pop('users', list(OWNERS)))}",
        f'include = ["{extra.pop("include")}"]',
        'exclude = ["*-trash"]',
        *(f"{key} = {value}" for key, value in extra.items()),
    ]
    project.source(name, "\n".join(lines) + "\n")


def crawl(project: Project, name: str, server: MailServer, password: str = "") -> Any:
    result = run_scrapy(["crawl", name], project.env(**{SECRET: password or server.crawler_password}))
    assert server.crawler_password not in result.stderr + result.stdout
    return result


class Mailboxes:
    """The server as its users change it, and what it holds: message id -> (owner, folder, attachment)."""

    def __init__(self, server: MailServer, rng: random.Random, tag: str) -> None:
        self.server, self.rng, self.tag = server, rng, tag
        self.messages: dict[str, tuple[str, str, str | None]] = {}
        # folders of this test's own (the server is the session's): the source includes "<tag>-*"
        self.folders = {owner: [f"{tag}-inbox", f"{tag}-projects", f"{tag}-board"] for owner in OWNERS}
        self.number = self.steps = 0
        for owner in OWNERS:
            with server.client(owner) as client:
                for folder in [*self.folders[owner], f"{tag}-trash"]:
                    client.create_folder(folder)
        for _ in range(10):
            self.add()

    def message(self, attachment: str | None) -> tuple[str, bytes]:
        self.number += 1
        message_id = f"{self.tag}-{self.number}@mail.example"
        message = EmailMessage()
        message["Message-ID"] = f"<{message_id}>"
        message["From"] = "Harbour Office <office@example.org>"
        message["To"] = "crew@example.org"
        message["Subject"] = f"{self.tag} note {self.number}: " + " ".join(self.rng.choice(WORDS) for _ in range(3))
        message["Date"] = "Tue, 03 Mar 2026 09:00:00 +0000"
        message.set_content(f"zebrafinch {self.tag} " + " ".join(self.rng.choice(WORDS) for _ in range(30)))
        if attachment:
            message.add_attachment(f"minutes of {message_id}: zebrafinch berth\n".encode(), "text", "plain", filename=attachment)
        return message_id, message.as_bytes()

    def add(self, owner: str | None = None, folder: str | None = None) -> str:
        owner = owner or self.rng.choice(OWNERS)
        folder = folder or self.rng.choice(self.folders[owner])
        attachment = f"minutes-{self.number + 1}.txt" if self.rng.random() < 0.3 else None
        message_id, raw = self.message(attachment)
        with self.server.client(owner) as client:
            client.append(folder, raw)
        self.messages[message_id] = (owner, folder, attachment)
        return message_id

    def uid_of(self, client: Any, message_id: str) -> int:
        (uid,) = client.search(["HEADER", "Message-ID", message_id])
        return int(uid)

    def expunge(self) -> str:
        message_id = self.rng.choice(sorted(self.messages))
        owner, folder, _ = self.messages.pop(message_id)
        with self.server.client(owner) as client:
            client.select_folder(folder)
            client.delete_messages([self.uid_of(client, message_id)])
            client.expunge()
        return message_id

    def move(self) -> str:
        message_id = self.rng.choice(sorted(self.messages))
        owner, folder, attachment = self.messages[message_id]
        target = self.rng.choice([name for name in self.folders[owner] if name != folder])
        with self.server.client(owner) as client:
            client.select_folder(folder)
            client.move([self.uid_of(client, message_id)], target)
        self.messages[message_id] = (owner, target, attachment)
        return message_id

    def regrant(self) -> str:
        """A folder's rights changed by its owner: a user or a group given or denied reading."""
        owner = self.rng.choice(OWNERS)
        folder = self.rng.choice(self.folders[owner])
        who = self.rng.choice([user for user in USERS if user != owner] + ["$sales", "$board", "anyone"])
        rights = self.rng.choice(["lr", "l", "", "-r"])
        with self.server.client(owner) as client:
            if rights == "":
                client.setacl(folder, who, "-lrwstipekxacd")  # every right taken: the entry goes
            elif rights == "-r":
                if who != "anyone":
                    client.setacl(folder, "-" + who, "r")
            else:
                client.setacl(folder, who, rights)
        return f"{owner}/{folder}: {who} {rights or 'removed'}"

    def renumber(self) -> str:
        """A folder deleted and made again: its messages come back under a new UIDVALIDITY."""
        owner = self.rng.choice(OWNERS)
        folder = self.rng.choice(self.folders[owner][1:])
        kept = {mid: entry for mid, entry in self.messages.items() if entry[:2] == (owner, folder)}
        with self.server.client(owner) as client:
            client.delete_folder(folder)
            client.create_folder(folder)
        for mid in kept:
            del self.messages[mid]
        self.add(owner, folder)
        return f"{owner}/{folder} renumbered"

    def step(self) -> list[str]:
        """Each kind of change in turn, and up to two more chosen at random."""
        kinds = [self.add, self.expunge, self.move, self.regrant, self.renumber]
        actions = [kinds[self.steps % len(kinds)], *self.rng.choices([*kinds, self.add, self.regrant], k=self.rng.randint(0, 2))]
        self.steps += 1
        return [f"{action.__name__}: {action()}" for action in actions]

    def readable(self, user: str) -> set[str]:
        """The message ids the server lets ``user`` read (MYRIGHTS with r)."""
        rights = self.server.folders_rights(user, [(owner, folder) for owner in OWNERS for folder in self.folders[owner]])
        return {mid for mid, (owner, folder, _) in self.messages.items() if "r" in rights[owner, folder]}


def as_messages(docs: dict[str, dict]) -> dict[str, str]:
    """Solr id -> the message id it is (an attachment: its message's, with '#attachment')."""
    by_url = {doc["url"]: doc for doc in docs.values()}
    named = {}
    for key, doc in docs.items():
        if "attachment_of_s" in doc:
            named[key] = (
                by_url[doc["attachment_of_s"]]["message_id_s"] + "#attachment"
                if doc["attachment_of_s"] in by_url
                else str(sorted(by_url)[:3])
            )
        else:
            named[key] = doc["message_id_s"]
    return named


def test_each_user_finds_exactly_what_dovecot_lets_them_read_crawl_after_crawl(
    project: Project, solr: pysolr.Solr, mail_server: MailServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(78)
    mailboxes = Mailboxes(mail_server, rng, "seq")
    with mail_server.client("alice") as client:
        client.setacl("seq-projects", "$sales", "lr")
        client.setacl("seq-projects", "-carol", "r")  # carol is in sales, and denied
        client.setacl("seq-board", "$board", "lr")
    name = "mail-server"
    imap_source(project, name, mail_server, include="seq-*")
    client = SolrIndex(project.solr_url, timeout=30)
    before: dict[str, dict] = {}
    done: list[str] = []
    for number in range(7):
        step = mailboxes.step() if number else ["first crawl"]
        done += step
        if number == 3:  # killed part-way: the next crawl resumes it, losing nothing
            monkeypatch.setenv(SECRET, mail_server.crawler_password)
            project.killed_crawl(name, 2.0, delay=0.4)
            monkeypatch.delenv(SECRET)
        result = crawl(project, name, mail_server)
        assert result.returncode == 0, result.stderr[-3000:]
        docs = {doc["id"]: doc for doc in solr_docs(solr, name)}
        named = as_messages(docs)
        expected = set(mailboxes.messages) | {mid + "#attachment" for mid, entry in mailboxes.messages.items() if entry[2]}
        assert sorted(named.values()) == sorted(expected), (number, step)
        for key, doc in docs.items():
            if "attachment_of_s" not in doc:
                owner, folder, _ = mailboxes.messages[doc["message_id_s"]]
                assert (doc["mailbox_s"], doc["folder_s"]) == (owner, folder), (number, step)
                assert doc["display_url"].startswith(f"imap://{owner}@127.0.0.1:{mail_server.imaps_port}/{folder};UIDVALIDITY=")
            else:
                assert "zebrafinch berth" in doc["content"] and doc["display_url"].endswith("/;SECTION=2")
            if key in before and all(before[key].get(field) == doc.get(field) for field in ACCESS_FIELDS):
                assert doc["_version_"] == before[key]["_version_"], (number, step, key)  # unchanged: not pushed again
        for user in USERS:
            oracle = mailboxes.readable(user)
            oracle |= {mid + "#attachment" for mid in oracle if mailboxes.messages[mid][2]}
            found = {named[key] for key in found_by(client, principals(user), name)}
            assert found == oracle, (number, step, user, sorted(found ^ oracle))
        before = docs
    assert {line.split(":")[0] for line in done[1:]} == {"add", "expunge", "move", "regrant", "renumber"}, done
    assert any(mailboxes.readable(user) - {m for m, e in mailboxes.messages.items() if e[0] == user} for user in USERS)

    # a change of rights alone: the access is updated in Solr, no body read again
    with mail_server.client("bob") as bob:
        bob.setacl("seq-inbox", "dave", "lr")
    result = crawl(project, name, mail_server)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "'downloader/response_status_count/200'" not in result.stderr, result.stderr[-3000:]
    assert "'searchcrawl/access_updates'" in result.stderr
    found = {
        as_messages({doc["id"]: doc for doc in solr_docs(solr, name)})[key] for key in found_by(client, principals("dave"), name)
    }
    assert {mid for mid, entry in mailboxes.messages.items() if entry[:2] == ("bob", "seq-inbox")} <= found


def test_tls_refusals_and_public_folders(
    project: Project, solr: pysolr.Solr, mail_server: MailServer, directory_server: DirectoryServer, tmp_path: Path
) -> None:
    rng = random.Random(7)
    mailboxes = Mailboxes(mail_server, rng, "tls")
    name = "mail-starttls"
    imap_source(project, name, mail_server, port=str(mail_server.imap_port), tls="starttls", users=["bob"], include="tls-*")
    result = crawl(project, name, mail_server)
    assert result.returncode == 0, result.stderr[-3000:]
    bobs = {mid for mid, entry in mailboxes.messages.items() if entry[0] == "bob"}
    assert {doc["message_id_s"] for doc in solr_docs(solr, name) if "attachment_of_s" not in doc} == bobs

    # a wrong password: the crawl fails, says why without the password, removes nothing
    refused = crawl(project, name, mail_server, password="not-the-password-123")
    assert refused.returncode != 0
    assert "refused the crawl's account" in refused.stderr and "not-the-password-123" not in refused.stderr
    assert {doc["message_id_s"] for doc in solr_docs(solr, name) if "attachment_of_s" not in doc} == bobs

    # a certificate of another CA: refused before any login
    other_ca = tmp_path / "other-ca.pem"
    import trustme

    trustme.CA().cert_pem.write_to_path(str(other_ca))
    imap_source(project, name, mail_server, ca_file=str(other_ca), users=["bob"], include="tls-*")
    untrusted = crawl(project, name, mail_server)
    assert untrusted.returncode != 0 and "cannot be reached" in untrusted.stderr
    assert len([doc for doc in solr_docs(solr, name) if "attachment_of_s" not in doc]) == len(bobs)

    # public folders, read as the crawl's account, with their own access lists
    with mail_server.client("alice") as alice:
        alice.append("Public/Notices", mailboxes.message(None)[1])
    public = "mail-public"
    imap_source(project, public, mail_server, users=[], public_folders="true", include="Public/*")
    result = crawl(project, public, mail_server)
    assert result.returncode == 0, result.stderr[-3000:]
    docs = solr_docs(solr, public)
    assert docs and all(doc["mailbox_s"] == "#public" for doc in docs)
    index = SolrIndex(project.solr_url, timeout=30)
    assert found_by(index, principals("alice"), public) == {doc["id"] for doc in docs}  # the folder's own list
    assert not found_by(index, principals("bob"), public)

    # explain-access names the folder's entries
    url = next(doc["url"] for doc in solr_docs(solr, name) if "attachment_of_s" not in doc)
    explained = run_scrapy(["explain-access", "bob", url], project.env(**directory_server.settings()))
    assert explained.returncode == 0, explained.stderr
    assert "own mailbox" in explained.stdout and explained.stdout.splitlines()[-1].startswith("  decision: GRANTED")
    explained = project.scrapy("explain", name, url)
    assert explained.returncode == 0, explained.stderr
    assert "ok  a document of the source's agent" in explained.stdout and "state indexed" in explained.stdout
    trash = url.replace("tls-board", "tls-trash")
    explained = project.scrapy("explain", name, trash)
    assert "folder 'tls-trash' is not crawled (include/exclude)" in explained.stdout, explained.stdout


def test_a_global_acl_line_grants_as_dovecot_applies_it_to_each_reader(
    project: Project, solr: pysolr.Solr, mail_server: MailServer, directory_server: DirectoryServer
) -> None:
    """Issue 91: ``<folder> group=sales lr`` in Dovecot's global ACL file shows as ``#$sales lr``
    to the crawl logged in for bob; Dovecot matches it against the name each reader sees, so carol
    (in sales), to whom the folder is ``shared/bob/<folder>``, is told it does not exist: the index
    agrees with Dovecot's answer to every user. The folder's own entries apply to every name.
    Also (point 16): explain-access finds a message by the URL the docs write and by its display URL."""
    tag = f"glob{random.Random().randrange(10**6)}"
    reports = f"{tag}-reports"
    mailboxes = Mailboxes(mail_server, random.Random(91), tag)
    with mail_server.client("bob") as bob:
        bob.create_folder(reports)
        bob.setacl(reports, "dave", "lr")  # the folder's own list: every reader's name
    mailboxes.folders["bob"].append(reports)
    message_id = mailboxes.add("bob", reports)
    global_acl = mail_server.folder / "global-acl"
    before = global_acl.read_text()
    global_acl.write_text(before + f"{reports} group=sales lr\n")
    try:
        # in force in bob's own view (bob is in sales: its lr is all he has now) ...
        assert mail_server.folder_rights("bob", "bob", reports) == "lr"
        with mail_server.client("carol") as carol, pytest.raises(carol.Error, match="doesn't exist"):
            carol.select_folder(f"shared/bob/{reports}", readonly=True)  # ... not in carol's (in sales too)
        name = "mail-global-acl"
        imap_source(project, name, mail_server, users=["bob"], include=f"{tag}-*")
        result = crawl(project, name, mail_server)
        assert result.returncode == 0, result.stderr[-3000:]
        docs = {doc["id"]: doc for doc in solr_docs(solr, name)}
        named = as_messages(docs)
        index = SolrIndex(project.solr_url, timeout=30)
        for user in USERS:
            oracle = {mid for mid in mailboxes.readable(user) if mailboxes.messages[mid][0] == "bob"}
            oracle |= {mid + "#attachment" for mid in oracle if mailboxes.messages[mid][2]}
            found = {named[key] for key in found_by(index, principals(user), name)}
            assert found == oracle, (user, sorted(found ^ oracle))
        assert message_id not in {named[key] for key in found_by(index, principals("carol"), name)}
        assert message_id in {named[key] for key in found_by(index, principals("dave"), name)}
    finally:
        global_acl.write_text(before)

    # explain-access: the stored URL, the one the docs write, and the display URL `scrapy search` prints
    doc = next(doc for doc in docs.values() if doc.get("message_id_s") == message_id)
    written = doc["url"].replace("%2F", "/")
    assert written.startswith(f"imap://{name}/bob/{reports}/") and doc["display_url"] != doc["url"]
    for url in (doc["url"], written, doc["display_url"]):
        explained = run_scrapy(["explain-access", "bob", url], project.env(**directory_server.settings()))
        assert explained.returncode == 0, explained.stderr
        assert f"Source {name}: {doc['url']}" in explained.stdout, (url, explained.stdout)
        assert explained.stdout.splitlines()[-1].startswith("  decision: GRANTED"), (url, explained.stdout)


@contextlib.contextmanager
def global_lines(
    server: MailServer, tag: str, seed: int, grantees: dict[str, str], lines: str
) -> Iterator[tuple[Mailboxes, dict[str, str]]]:
    """bob's folders ``<tag>-<name>`` of a test (``grantees``: name -> who its own list gives
    ``lr``), one message each (name -> its message id), while ``lines`` are in Dovecot's global
    ACL file."""
    mailboxes = Mailboxes(server, random.Random(seed), tag)
    mailboxes.folders["bob"] += [f"{tag}-{name}" for name in grantees]
    with server.client("bob") as bob:
        for name, grantee in grantees.items():
            bob.create_folder(f"{tag}-{name}")
            bob.setacl(f"{tag}-{name}", grantee, "lr")
    added = {name: mailboxes.add("bob", f"{tag}-{name}") for name in grantees}
    global_acl = server.folder / "global-acl"
    before = global_acl.read_text()
    global_acl.write_text(before + lines)
    try:
        yield mailboxes, added
    finally:
        global_acl.write_text(before)


def crawl_of_bob(project: Project, solr: pysolr.Solr, server: MailServer, mailboxes: Mailboxes, name: str) -> dict[str, set[str]]:
    """Crawls bob's folders of the test; every user's search equals Dovecot's MYRIGHTS on them.
    Returns what each user finds (message ids)."""
    imap_source(project, name, server, users=["bob"], include=f"{mailboxes.tag}-*")
    result = crawl(project, name, server)
    assert result.returncode == 0, result.stderr[-3000:]
    named = as_messages({doc["id"]: doc for doc in solr_docs(solr, name)})
    index = SolrIndex(project.solr_url, timeout=30)
    found = {user: {named[key] for key in found_by(index, principals(user), name)} for user in USERS}
    wrong = {}
    for user in USERS:
        oracle = {mid for mid in mailboxes.readable(user) if mailboxes.messages[mid][0] == "bob"}
        oracle |= {mid + "#attachment" for mid in oracle if mailboxes.messages[mid][2]}
        wrong.update({user: sorted(found[user] ^ oracle)} if found[user] != oracle else {})
    assert not wrong, wrong
    return found


def test_a_global_entry_without_read_takes_it_as_dovecot_does(
    project: Project, solr: pysolr.Solr, mail_server: MailServer
) -> None:
    """Issue 91 review: Dovecot applies a global entry after the folder's own and in place of
    them: `* user=carol l` leaves carol (in board) only ``l`` on a folder whose own list grants
    ``$board lr``, and `<folder> group=sales l` takes reading from bob, in sales, on his own
    folder. The crawl skipped entries without ``r``: carol found the first folder's messages, bob
    the second's. Now every user's search equals Dovecot's MYRIGHTS."""
    tag = f"take{random.Random().randrange(10**6)}"
    lines = f"* user=carol l\n{tag}-own group=sales l\n"
    with global_lines(mail_server, tag, 92, {"team": "$board", "own": "dave"}, lines) as (mailboxes, added):
        assert mail_server.folder_rights("carol", "bob", f"{tag}-team") == "l"  # not her board's lr
        assert mail_server.folder_rights("dave", "bob", f"{tag}-team") == "lr"
        assert mail_server.folder_rights("bob", "bob", f"{tag}-own") == "l"  # not his owner's rights
        with mail_server.client("carol") as carol, pytest.raises(carol.Error):
            carol.select_folder(f"shared/bob/{tag}-team", readonly=True)
        # the old code: carol found the team folder's message, bob his own folder's
        found = crawl_of_bob(project, solr, mail_server, mailboxes, "mail-global-take")
        assert added["team"] not in found["carol"] and added["own"] not in found["bob"] and added["own"] in found["dave"]


CHECKED = (("carol", "team"), ("alice", "given"), ("bob", "team"), ("bob", "given"))


def test_global_lines_of_the_name_others_see_count_for_them(project: Project, solr: pysolr.Solr, mail_server: MailServer) -> None:
    """Issue 91: a global line whose pattern matches only the name the other users see
    (``shared/bob/...``) never shows to the crawl logged in for bob, who sees ``Reports``. The
    crawl read only that name: carol (in sales) found the messages of a folder whose own list gives
    ``$sales lr`` and `shared/bob/<folder> user=carol l` leaves her ``l``, and alice did not find
    those of a folder a `shared/bob/<folder> user=alice lr` line opens to her. Now each folder's
    list is read under the others' name too, and every user's search equals Dovecot's MYRIGHTS."""
    tag = f"seen{random.Random().randrange(10**6)}"
    lines = f"shared/bob/{tag}-t* user=carol l\nshared/bob/{tag}-given user=alice lr\n"
    with global_lines(mail_server, tag, 93, {"team": "$sales", "given": "dave"}, lines) as (mailboxes, added):
        with mail_server.client("bob") as bob:  # a deny in both names' lists: bob, not in board, still reads
            bob.setacl(f"{tag}-given", "-$board", "r")
        # carol, in sales: not her group's lr; alice: given by the others' name; bob: his own
        rights = [mail_server.folder_rights(who, "bob", f"{tag}-{name}") for who, name in CHECKED]
        assert rights[:2] == ["l", "lr"] and all("r" in own for own in rights[2:]), rights
        # the old code: carol found the team folder's message, alice not the given one's
        found = crawl_of_bob(project, solr, mail_server, mailboxes, "mail-others-name")
        assert added["team"] not in found["carol"] and added["given"] in found["alice"] and added["given"] not in found["dave"]
        assert set(added.values()) <= found["bob"]
