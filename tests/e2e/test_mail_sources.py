"""A ``mail`` source over an mbox file and a Maildir folder made with Python's ``mailbox``,
crawled again and again while a seeded generator adds messages (some replies, some with an
office document from the shared corpora attached) and deletes others: after every crawl Solr
holds exactly the messages (subject as title, sender, thread) and their attachments (converted,
linked to their message; one file attached to several messages is one document, a duplicate); a message left alone keeps its Solr ``_version_``; one crawl killed
with SIGKILL is resumed by the next, losing nothing."""

from __future__ import annotations

import mailbox
import random
from email.message import EmailMessage
from pathlib import Path

import pytest

from tests.conftest import CORPORA, Project, solr_docs, unpack

WORDS = ("release", "patch", "review", "merge", "build", "crash", "fix", "vote")


class Archive:
    """The oracle: Message-ID -> (subject, attachment file name or None), per mailbox."""

    def __init__(self, root: Path, attachments: list[Path], rng: random.Random) -> None:
        self.rng, self.attachments = rng, attachments
        self.boxes: dict[str, mailbox.Mailbox] = {
            "mbox": mailbox.mbox(root / "dev.mbox"),
            "maildir": mailbox.Maildir(root / "Maildir", create=True),
        }
        self.messages: dict[str, tuple[str, str, str | None]] = {}  # id -> (box, subject, attachment)
        self.keys: dict[str, str] = {}  # id -> the mailbox's own key
        self.next = 0
        for _ in range(12):
            self.add()

    def add(self) -> str:
        number = self.next
        self.next += 1
        box = self.rng.choice(sorted(self.boxes))
        message = EmailMessage()
        message_id = f"m{number}@lists.example"
        message["Message-ID"] = f"<{message_id}>"
        message["From"] = f"Dev {number % 4} <dev{number % 4}@example.com>"
        message["To"] = "dev@lists.example"
        subject = f"Thread {number}: " + " ".join(self.rng.choice(WORDS) for _ in range(4))
        message["Subject"] = subject
        message["Date"] = "Tue, 03 Mar 2026 09:00:00 +0000"
        replies = [known for known in self.messages if self.messages[known][0] == box]
        if replies and self.rng.random() < 0.4:
            message["In-Reply-To"] = f"<{self.rng.choice(replies)}>"
        message.set_content("Body of message " + " ".join(self.rng.choice(WORDS) for _ in range(20)))
        attachment = None
        if self.attachments and self.rng.random() < 0.3:
            document = self.rng.choice(self.attachments)
            message.add_attachment(document.read_bytes(), maintype="application", subtype="octet-stream", filename=document.name)
            attachment = document.name
        self.keys[message_id] = self.boxes[box].add(message)
        self.boxes[box].flush()
        self.messages[message_id] = (box, subject, attachment)
        return message_id

    def delete(self) -> str:
        message_id = self.rng.choice(sorted(self.messages))
        box = self.messages.pop(message_id)[0]
        self.boxes[box].remove(self.keys.pop(message_id))
        self.boxes[box].flush()
        if box == "mbox":  # positional keys: read them again
            self.keys = {(message["Message-ID"] or "").strip("<>"): key for key, message in self.boxes["mbox"].items()} | {
                mid: key for mid, key in self.keys.items() if self.messages[mid][0] == "maildir"
            }
        return message_id

    def mutate(self) -> dict[str, set[str]]:
        step = {"new": {self.add() for _ in range(self.rng.randint(0, 3))}, "deleted": set()}
        for _ in range(self.rng.randint(0, 2)):
            step["deleted"].add(self.delete())
        step["new"] -= step["deleted"]
        return step


def indexed(solr, name: str) -> dict[str, dict]:
    """The indexed messages (not their attachments) by Message-ID."""
    messages = [doc for doc in solr_docs(solr, name) if "attachment_of_s" not in doc]
    assert all("message_id_s" in doc for doc in messages), [doc for doc in messages if "message_id_s" not in doc]
    return {doc["message_id_s"]: doc for doc in messages}


@pytest.mark.skipif(not CORPORA.exists(), reason="the shared corpora (../shared/corpora) are absent")
def test_a_mail_archive_is_followed_crawl_after_crawl(project: Project, solr, tmp_path: Path) -> None:
    rng = random.Random(17)
    documents = unpack("textract-tests.tar.xz", tmp_path / "corpus") / "textract-tests" / "tests"
    attachments = [documents / "pdf" / "raw_text.pdf", documents / "docx" / "raw_text.docx"]
    archive = Archive(tmp_path, attachments, rng)
    name = "dev-list"
    project.source(
        name,
        f'type = "mail"\nmax_delete_share = 1.0\n[access]\npublic = true\n[mail]\npaths = ["{tmp_path / "dev.mbox"}", "{tmp_path / "Maildir"}"]\n'
        'list_name = "dev"\n',
    )
    before: dict[str, dict] = {}
    for crawl in range(5):
        step = archive.mutate() if crawl else {"new": set(archive.messages), "deleted": set()}
        if crawl == 2:
            project.killed_crawl(name, 3.5, delay=0.5)
        result = project.scrapy("crawl", name)
        assert result.returncode == 0, result.stderr[-3000:]
        messages = indexed(solr, name)
        assert set(messages) == set(archive.messages), f"crawl {crawl}: {step}"
        docs = solr_docs(solr, name)
        for message_id, (_box, subject, _attachment) in archive.messages.items():
            doc = messages[message_id]
            assert doc["title"] == subject and doc["list_s"] == "dev"
            if message_id in before:
                assert doc["_version_"] == before[message_id]["_version_"], f"crawl {crawl}: {message_id} pushed again"
        # an attachment is a document of its own, converted; the same file attached to several
        # messages is one document (a duplicate: same title and text), attached to one of them
        attached = {doc["title"]: doc for doc in docs if "attachment_of_s" in doc}
        carried = {attachment for _box, _subject, attachment in archive.messages.values() if attachment}
        assert set(attached) == carried, f"crawl {crawl}: {step}"
        for title, doc in attached.items():
            owner = doc["attachment_of_s"]
            assert any(m["url"] == owner and archive.messages[mid][2] == title for mid, m in messages.items()), title
            assert "quick brown fox" in doc["content"].lower() or len(doc["content"]) > 100
        assert len(docs) == len(archive.messages) + len(carried), "nothing else"
        before = messages
    replies = [doc for doc in before.values() if doc["thread_s"] != doc["message_id_s"]]
    assert replies, "some messages are replies, threaded under their first message"
    # nothing changed: nothing is read again, not even the attachments that are duplicates
    unchanged = project.scrapy("crawl", name)
    assert unchanged.returncode == 0
    assert "'downloader/response_status_count/200'" not in unchanged.stderr, unchanged.stderr[-3000:]
