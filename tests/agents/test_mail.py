"""The mail agent on real mbox files and Maildir folders written with Python's ``mailbox``."""

from __future__ import annotations

import base64
import logging
import mailbox
import os
import time
import tracemalloc
from email.message import EmailMessage
from pathlib import Path

import pytest
from pydantic import ValidationError

from searchcrawl.agents.base import AgentError, DocumentTooLarge, Reference
from searchcrawl.agents.mail import MailAgent, MailOptions, box_name
from searchcrawl.agents.messages import MAX_PARTS
from tests.conftest import unpack


def message(
    subject: str = "Hello",
    body: str | None = "Plain body",
    *,
    msgid: str | None = "<m1@example.org>",
    sender: str = "Ann Author <ann@example.org>",
    to: str = "dev@lists.example.org",
    html: str | None = None,
    **headers: str,
) -> EmailMessage:
    msg = EmailMessage()
    msg["Subject"] = subject
    msg["From"] = sender
    msg["To"] = to
    msg["Date"] = "Tue, 03 Nov 2026 10:20:30 +0100"
    if msgid:
        msg["Message-ID"] = msgid
    for name, value in headers.items():
        msg[name.replace("_", "-")] = value
    if body is not None:
        msg.set_content(body)
        if html is not None:
            msg.add_alternative(html, subtype="html")
    elif html is not None:
        msg.set_content(html, subtype="html")
    return msg


def mbox(path: Path, *messages: EmailMessage | bytes) -> str:
    box = mailbox.mbox(path)
    for msg in messages:
        box.add(msg)
    box.flush()
    box.close()
    return str(path)


def maildir(path: Path, *messages: EmailMessage | bytes) -> str:
    box = mailbox.Maildir(path)
    for msg in messages:
        box.add(msg)
    return str(path)


def agent(*paths: str, **options: object) -> MailAgent:
    return MailAgent("lists", MailOptions(paths=list(paths), **options))  # type: ignore[arg-type]


def listed(mail: MailAgent) -> list[Reference]:
    return list(mail.references(None))


def text(ref: Reference) -> str:
    assert ref.content is not None
    return ref.content.body.decode()


# -- options -------------------------------------------------------------------------------------


def test_options_are_validated() -> None:
    with pytest.raises(ValidationError, match="at least 1"):
        MailOptions(paths=[])
    with pytest.raises(ValidationError, match="not an absolute path"):
        MailOptions(paths=["archive.mbox"])
    with pytest.raises(ValidationError, match="format"):
        MailOptions(paths=["/a"], format="pst")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="extra"):
        MailOptions(paths=["/a"], folders=["x"])  # type: ignore[call-arg]
    assert MailOptions(paths=["/a"]).max_message_bytes == 10 * 1024 * 1024


def test_a_missing_or_wrong_mailbox_fails_the_listing(tmp_path: Path) -> None:
    with pytest.raises(AgentError, match="cannot be read"):
        listed(agent(str(tmp_path / "none.mbox")))
    with pytest.raises(AgentError, match="not a Maildir folder"):
        listed(agent(mbox(tmp_path / "a.mbox", message()), format="maildir"))
    with pytest.raises(AgentError, match="not an mbox file or a Maildir"):
        listed(agent(str(tmp_path)))


# -- messages ------------------------------------------------------------------------------------


@pytest.mark.parametrize("store", [mbox, maildir])
def test_a_plain_message_and_its_fields(tmp_path: Path, store) -> None:  # type: ignore[no-untyped-def]
    path = store(tmp_path / "box", message(Cc="Bob <bob@example.org>", List_Id="Dev list <dev.lists.example.org>"))
    mail = agent(path)
    [ref] = listed(mail)
    assert ref.key == f"{box_name(path)}/m1@example.org"
    assert mail.url_for(ref.key) == f"mail://lists/{box_name(path)}%2Fm1%40example.org"
    assert ref.content is not None and ref.content.content_type == "text/plain; charset=utf-8"
    assert text(ref) == "Plain body\n"
    assert ref.fields == {
        "title": "Hello",
        "author": "Ann Author",
        "sender_s": "ann@example.org",
        "recipients_ss": ["dev@lists.example.org", "bob@example.org"],
        "list_s": "dev.lists.example.org",
        "thread_s": "m1@example.org",
        "message_id_s": "m1@example.org",
        "last_modified": "2026-11-03T09:20:30Z",
        "has_attachments_b": False,
    }
    assert ref.modified is not None and ref.modified.isoformat() == "2026-11-03T09:20:30+00:00"
    assert ref.metadata["list-id"] == "Dev list <dev.lists.example.org>"
    assert len(ref.token or "") == 32
    assert mail.fetch(ref.key, 0) == ref.content


def test_list_name_option_wins_and_missing_subject_and_date(tmp_path: Path) -> None:
    msg = message(List_Id="<other.example.org>")
    del msg["Subject"], msg["Date"]
    [ref] = listed(agent(mbox(tmp_path / "a.mbox", msg), list_name="dev"))
    assert ref.fields["list_s"] == "dev"
    assert ref.fields["title"] == "(no subject)"
    assert "last_modified" not in ref.fields and ref.modified is None


def test_html_only_and_alternative(tmp_path: Path) -> None:
    html_only = message(body=None, html="<p>Only <b>HTML</b> é</p>", msgid="<h@x>")
    alternative = message(body="plain wins", html="<p>html loses</p>", msgid="<a@x>")
    refs = {r.key.split("/", 1)[1]: r for r in listed(agent(mbox(tmp_path / "a.mbox", html_only, alternative)))}
    assert refs["h@x"].content is not None and refs["h@x"].content.content_type == "text/html; charset=utf-8"
    assert "<p>Only <b>HTML</b> é</p>" in text(refs["h@x"])
    assert text(refs["a@x"]) == "plain wins\n"


def test_charsets_latin1_and_unknown(tmp_path: Path) -> None:
    latin = message(msgid="<l@x>")
    latin.set_content("Café crème".encode("latin-1"), maintype="text", subtype="plain", cte="8bit")
    latin.set_param("charset", "iso-8859-1")
    unknown = message(msgid="<u@x>")
    unknown.set_content("naïve".encode(), maintype="text", subtype="plain", cte="base64")
    unknown.set_param("charset", "x-no-such-charset")
    not_text = message(msgid="<z@x>")
    not_text.set_content(b"abc", maintype="text", subtype="plain", cte="8bit")
    not_text.set_param("charset", "zlib")  # a codec, but not a text encoding
    refs = {r.key.split("/", 1)[1]: r for r in listed(agent(mbox(tmp_path / "a.mbox", latin, unknown, not_text)))}
    assert text(refs["l@x"]).strip() == "Café crème"
    assert text(refs["u@x"]).strip() == "naïve"
    assert text(refs["z@x"]).strip() == "abc"


def test_encoded_subject_and_sender(tmp_path: Path) -> None:
    raw = (
        b"From: =?iso-8859-1?q?Ren=E9?= <rene@example.org>\n"
        b"Subject: =?utf-8?b?" + base64.b64encode("Réunion été".encode()) + b"?=\n"
        b"Message-ID: <e@x>\n\nbody\n"
    )
    [ref] = listed(agent(mbox(tmp_path / "a.mbox", raw)))
    assert ref.fields["title"] == "Réunion été"
    assert ref.fields["author"] == "René"


def test_threads_reply_points_to_the_root(tmp_path: Path) -> None:
    root = message(msgid="<root@x>")
    reply = message("Re: Hello", msgid="<r1@x>", In_Reply_To="<root@x>")
    deeper = message("Re: Re: Hello", msgid="<r2@x>", In_Reply_To="<r1@x>", References="<root@x> <r1@x>")
    refs = listed(agent(maildir(tmp_path / "md", root, reply, deeper)))
    assert {r.fields["message_id_s"]: r.fields["thread_s"] for r in refs} == {
        "root@x": "root@x",
        "r1@x": "root@x",
        "r2@x": "root@x",
    }


# -- attachments -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def office(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Office documents of the textract corpus (skips, saying why, when ../shared/corpora is absent)."""
    return unpack("textract-tests.tar.xz", tmp_path_factory.mktemp("textract")) / "textract-tests" / "tests"


def test_office_attachments_are_documents_of_their_own(tmp_path: Path, office: Path) -> None:
    docx = (office / "docx" / "raw_text.docx").read_bytes()
    pdf = (office / "pdf" / "raw_text.pdf").read_bytes()
    msg = message(msgid="<att@x>", List_Id="<dev.x>")
    msg.add_attachment(
        docx,
        maintype="application",
        subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
        filename="report.docx",
    )
    msg.add_attachment(pdf, maintype="application", subtype="pdf", filename="../../etc/slides\x07.pdf")
    path = mbox(tmp_path / "a.mbox", msg)
    mail = agent(path)
    first, *attachments = listed(mail)
    assert first.fields["has_attachments_b"] is True
    assert [a.key for a in attachments] == [f"{first.key}/attachment/1-report.docx", f"{first.key}/attachment/2-slides.pdf"]
    docx_ref, pdf_ref = attachments
    assert docx_ref.content is not None and docx_ref.content.body == docx
    assert docx_ref.content.name == "report.docx"
    assert pdf_ref.content is not None and pdf_ref.content.body == pdf and pdf_ref.content.content_type == "application/pdf"
    assert pdf_ref.parent == first.key
    assert pdf_ref.fields["attachment_of_s"] == mail.url_for(first.key)
    assert pdf_ref.fields["title"] == "slides.pdf"
    assert pdf_ref.fields["list_s"] == "dev.x" and pdf_ref.fields["thread_s"] == "att@x"
    assert mail.fetch(pdf_ref.key, 0) == pdf_ref.content
    with pytest.raises(DocumentTooLarge):
        mail.fetch(pdf_ref.key, 100)
    assert mail.fetch(f"{first.key}/attachment/3-none.pdf", 0) is None
    assert [r.key for r in listed(agent(path, attachments=False))] == [first.key]


def test_an_attached_message_is_one_attachment(tmp_path: Path) -> None:
    inner = message("Inner", msgid="<inner@x>")
    inner.add_attachment(b"%PDF-1.4 inner", maintype="application", subtype="pdf", filename="deep.pdf")
    outer = message("Fwd", msgid="<outer@x>")
    outer.add_attachment(inner)  # message/rfc822
    refs = listed(agent(mbox(tmp_path / "a.mbox", outer)))
    assert [r.key.split("/", 1)[1] for r in refs] == ["outer@x", "outer@x/attachment/1-message-1.eml"]
    content = refs[1].content
    assert content is not None and content.content_type == "message/rfc822"
    assert b"Subject: Inner" in content.body and b"deep.pdf" in content.body


def test_broken_base64_is_not_fatal(tmp_path: Path) -> None:
    raw = (
        b"From: a@x\nMessage-ID: <b64@x>\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n"
        b"--B\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n!!!notbase64@@@=\n"
        b"--B\nContent-Type: application/pdf; name=x.pdf\nContent-Disposition: attachment; filename=x.pdf\n"
        b"Content-Transfer-Encoding: base64\n\nJVBERi0xLj?*Q=\n--B--\n"
    )
    refs = listed(agent(mbox(tmp_path / "a.mbox", raw)))
    assert [r.key.split("/", 1)[1] for r in refs] == ["b64@x", "b64@x/attachment/1-x.pdf"]
    assert refs[1].content is not None and refs[1].content.body.startswith(b"%PDF-1.")


# -- keys, tokens, deletions -------------------------------------------------------------------------


def test_keys_stay_when_an_earlier_message_is_deleted_and_tokens_follow_changes(tmp_path: Path) -> None:
    path = tmp_path / "a.mbox"
    no_id = message("no id", msgid=None)
    mbox(path, message(msgid="<1@x>"), message(msgid="<2@x>"), no_id, message(msgid="<3@x>"))
    mail = agent(str(path))
    before = {r.key: r.token for r in listed(mail)}
    assert len(before) == 4 and any("/sha256-" in k for k in before)
    box = mailbox.mbox(path)
    box.lock()
    box.remove(0)
    key_of_2 = next(k for k, m in box.iteritems() if m["Message-ID"] == "<2@x>")
    box[key_of_2] = message("edited", msgid="<2@x>")
    box.flush()
    box.unlock()
    box.close()
    after = {r.key: r.token for r in listed(mail)}
    first = f"{box_name(str(path))}/1@x"
    second = f"{box_name(str(path))}/2@x"
    assert set(after) == set(before) - {first}
    assert after[second] != before[second]
    assert {k: v for k, v in after.items() if k != second} == {k: v for k, v in before.items() if k not in (first, second)}
    assert mail.fetch(first, 0) is None
    assert mail.fetch("unknown-box/1@x", 0) is None


def test_duplicate_message_ids(tmp_path: Path) -> None:
    same = message(msgid="<d@x>")
    other = message("different", msgid="<d@x>")
    refs = listed(agent(mbox(tmp_path / "a.mbox", same, same, other)))
    assert len(refs) == 2
    assert refs[0].key.endswith("/d@x") and refs[1].key == f"{refs[0].key}#{refs[1].token}"


def test_a_maildir_file_gone_before_fetch_and_links_not_followed(tmp_path: Path) -> None:
    path = maildir(tmp_path / "md", message(msgid="<a@x>"), message(msgid="<b@x>"))
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"Message-ID: <s@x>\n\nsecret\n")
    os.symlink(secret, tmp_path / "md" / "new" / "linked")
    mail = agent(path)
    refs = listed(mail)
    assert sorted(r.fields["message_id_s"] for r in refs) == ["a@x", "b@x"]
    for name in os.listdir(tmp_path / "md" / "new"):
        if name != "linked" and b"<a@x>" in (tmp_path / "md" / "new" / name).read_bytes():
            os.remove(tmp_path / "md" / "new" / name)
    assert mail.fetch(refs[0].key if refs[0].fields["message_id_s"] == "a@x" else refs[1].key, 0) is None
    assert {r.fields["message_id_s"] for r in listed(mail)} == {"b@x"}


def test_a_maildir_whose_cur_or_new_is_a_link_is_refused_and_nothing_outside_is_read(tmp_path: Path) -> None:
    elsewhere = maildir(tmp_path / "elsewhere", message("Secret", "secret body", msgid="<secret@x>"))
    for sub in ("cur", "new"):
        path = maildir(tmp_path / f"md-{sub}", message(msgid="<a@x>"))
        mail = agent(path)
        [genuine] = listed(mail)
        os.rename(Path(path) / sub, tmp_path / f"{sub}-moved")
        os.symlink(Path(elsewhere) / "new", Path(path) / sub)  # ln -s /some/other/folder Maildir/cur
        with pytest.raises(AgentError, match=f"{sub} cannot be listed: a symbolic link, not followed"):
            listed(mail)
        with pytest.raises(AgentError, match="a symbolic link, not followed"):
            mail.fetch(f"{genuine.key.split('/', 1)[0]}/secret@x", 0)


def test_a_mailbox_path_that_is_a_link_is_resolved_once_and_a_mailbox_swapped_for_a_link_is_not_read(
    tmp_path: Path,
) -> None:
    real = maildir(tmp_path / "real", message(msgid="<a@x>"))
    os.symlink(real, tmp_path / "linked")  # the admin's choice: followed
    assert [r.fields["message_id_s"] for r in listed(agent(str(tmp_path / "linked")))] == ["a@x"]
    path = mbox(tmp_path / "a.mbox", message(msgid="<a@x>"))
    mbox(tmp_path / "secret.mbox", message("Secret", "secret body", msgid="<a@x>"))
    mail = agent(path)
    [ref] = listed(mail)
    os.remove(path)
    os.symlink(tmp_path / "secret.mbox", path)  # swapped between the listing and a fetch
    with pytest.raises(AgentError, match="it became a symbolic link"):
        mail.fetch(ref.key, 0)


def test_a_40_mb_line_is_read_in_bounded_pieces(tmp_path: Path) -> None:
    path = tmp_path / "long.mbox"
    with open(path, "wb") as f:
        f.write(b"From a@x Mon Jan  1 00:00:00 2024\nMessage-ID: <long@x>\nSubject: long\n\n")
        for _ in range(40):
            f.write(b"x" * 1_000_000)  # 40 MB without a line end
        f.write(b"\nFrom b@x Mon Jan  1 00:00:00 2024\nMessage-ID: <next@x>\n\nnext\n")
    mail = agent(str(path), max_message_bytes=1_000_000)
    tracemalloc.start()
    try:
        refs = listed(mail)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [r.fields["message_id_s"] for r in refs] == ["long@x", "next@x"]
    assert "larger than the crawl's limit" in text(refs[0]) and text(refs[1]).strip() == "next"
    assert peak < 10_000_000, peak  # the line (40 MB) is never held


def test_a_message_id_with_a_slash_cannot_take_an_attachment_s_key(tmp_path: Path) -> None:
    genuine = message(msgid="<a@x>")
    genuine.add_attachment(b"genuine", maintype="application", subtype="octet-stream", filename="doc.txt")
    forged = message("Forged", "forged body", msgid="<a@x/attachment/1-doc.txt>")
    hashed = message("Hash", "hash-like", msgid="<sha256-0123>")
    mail = agent(mbox(tmp_path / "a.mbox", genuine, forged, hashed, message(msgid="<b%2Fc#d@x>")))
    refs = listed(mail)
    box = refs[0].key.split("/", 1)[0]
    assert [r.key for r in refs] == [
        f"{box}/a@x",
        f"{box}/a@x/attachment/1-doc.txt",
        f"{box}/a@x%2Fattachment%2F1-doc.txt",
        f"{box}/sha256%2D0123",
        f"{box}/b%252Fc%23d@x",
    ]
    assert [r.fields.get("message_id_s") for r in refs] == ["a@x", None, "a@x/attachment/1-doc.txt", "sha256-0123", "b%2Fc#d@x"]
    assert mail.fetch(f"{box}/a@x/attachment/1-doc.txt", 0).body == b"genuine"  # type: ignore[union-attr]
    assert b"forged body" in mail.fetch(refs[2].key, 0).body  # type: ignore[union-attr]


# -- hostile messages -----------------------------------------------------------------------------


def test_hostile_headers(tmp_path: Path) -> None:
    huge = b"Subject: " + b"A" * 3_000_000 + b"\n"
    raw_huge = b"From: a@x\n" + huge + b"Message-ID: <huge@x>\n\nbody\n"
    crlf = b"From: a@x\nSubject: =?utf-8?q?one=0D=0AInjected: yes?=\nMessage-ID: <crlf@x>\n\nbody\n"
    garbage = b'From: <<<@@@>>> ,,, \x01\nTo: ;;;"\nDate: Not a date 99\nMessage-ID: not-closed <\nReferences: <\x00bad>\nSubject: \xff\xfe\x00\n\nbody\n'
    refs = listed(agent(mbox(tmp_path / "a.mbox", raw_huge, crlf, garbage)))
    assert len(refs) == 3
    for ref in refs:
        assert len(ref.fields["title"]) <= 2000
        assert all("\r" not in str(v) and "\n" not in str(v) for v in ref.fields.values())
    # headers are read from the first 256 KiB: the Message-ID after a 3 MB Subject is not seen
    assert refs[0].key.split("/", 1)[1].startswith("sha256-")
    assert refs[1].fields["title"] == "one Injected: yes"
    assert "last_modified" not in refs[2].fields


def test_raw_8bit_headers_and_encoded_file_names(tmp_path: Path) -> None:
    raw = (
        b"From: Jos\xc3\xa9 <jose@x>\nSubject: Caf\xc3\xa9 \xff\nMessage-ID: <caf\xc3\xa9@x>\nMIME-Version: 1.0\n"
        b"Content-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\nhi\n"
        b'--B\nContent-Type: application/x<script>\nContent-Disposition: attachment; filename="=?utf-8?q?..=2Fr=C3=A9sum=C3=A9.pdf?="\n\n%PDF\n--B--\n'
    )
    mail = agent(mbox(tmp_path / "a.mbox", raw))
    message_ref, attachment = listed(mail)
    assert message_ref.fields["title"] == "Café \ufffd" and message_ref.fields["author"] == "José"
    assert message_ref.key.split("/", 1)[1].startswith("sha256-")  # a non-ASCII Message-ID is not a key
    assert attachment.key.endswith("/attachment/1-résumé.pdf") and attachment.fields["title"] == "résumé.pdf"
    assert attachment.content is not None and attachment.content.content_type == "application/octet-stream"
    for ref in (message_ref, attachment):
        mail.url_for(ref.key).encode("ascii")
        assert mail.key_of(mail.url_for(ref.key)) == ref.key


def test_too_large_message_is_listed_with_a_note(tmp_path: Path) -> None:
    big = message(msgid="<big@x>")
    big.add_attachment(os.urandom(50_000), maintype="application", subtype="octet-stream", filename="blob.bin")
    mail = agent(mbox(tmp_path / "a.mbox", big), max_message_bytes=20_000)
    [ref] = listed(mail)
    assert ref.fields["title"] == "Hello" and ref.key.endswith("/big@x")
    assert "larger than the crawl's limit of 20000 bytes" in text(ref)
    assert mail.fetch(ref.key, 0) == ref.content


def test_ten_thousand_parts_are_bounded(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    parts = b"".join(
        b"--B\nContent-Type: application/octet-stream\nContent-Disposition: attachment; filename=p%d.bin\n\nx\n" % i
        for i in range(10_000)
    )
    raw = b"From: a@x\nMessage-ID: <parts@x>\nContent-Type: multipart/mixed; boundary=B\n\n" + parts + b"--B--\n"
    with caplog.at_level(logging.DEBUG, logger="searchcrawl.agents"):
        refs = listed(agent(mbox(tmp_path / "a.mbox", raw)))
    assert len(refs) == MAX_PARTS  # the message walked (1) and 999 attachments
    assert "more than 1000 MIME parts" in caplog.text


def test_deep_nesting_is_bounded(tmp_path: Path) -> None:
    depth = 60
    head = b"".join(b"--B%d\nContent-Type: multipart/mixed; boundary=B%d\n\n" % (i, i + 1) for i in range(depth))
    tail = b"".join(b"--B%d--\n" % i for i in reversed(range(depth)))
    raw = (
        b"From: a@x\nMessage-ID: <deep@x>\nContent-Type: multipart/mixed; boundary=B0\n\n"
        + head
        + b"--B60\nContent-Type: text/plain\n\ndeep\n"
        + tail
    )
    [ref] = listed(agent(mbox(tmp_path / "a.mbox", raw)))
    assert ref.key.endswith("/deep@x") and text(ref) == ""
    # deeper still, Python's parser itself gives up (RecursionError): the message keeps its headers
    depth = 1500
    head = b"".join(b"--B%d\nContent-Type: multipart/mixed; boundary=B%d\n\n" % (i, i + 1) for i in range(depth))
    raw = b"From: a@x\nSubject: Deep\nMessage-ID: <deeper@x>\nContent-Type: multipart/mixed; boundary=B0\n\n" + head
    mail = agent(mbox(tmp_path / "b.mbox", raw))
    [ref] = listed(mail)
    assert ref.fields["title"] == "Deep" and "cannot be read" in text(ref)
    assert mail.fetch(ref.key, 0) == ref.content


def test_from_lines_in_bodies(tmp_path: Path) -> None:
    quoted = message(body="Hi\nFrom here on, it is quoted\n", msgid="<q@x>")
    path = mbox(tmp_path / "a.mbox", quoted)
    [ref] = listed(agent(path))
    assert "From here on" in text(ref)  # mailbox wrote it as ">From": one message
    # an unquoted From_ line splits a message: both halves are listed, nothing fails
    with open(path, "ab") as f:
        f.write(b"From x@y Mon Jan  1 00:00:00 2024\nMessage-ID: <u@x>\n\nbefore\nFrom nobody Tue Jan  2 00:00:00 2024\nafter\n")
    assert len(listed(agent(path))) == 3


# -- streaming -----------------------------------------------------------------------------------


def test_a_22_mb_mbox_of_1000_messages_is_streamed(tmp_path: Path) -> None:
    """The mbox is read a message at a time: tracemalloc's peak stays far below its size. The
    messages are one message's bytes with its number changed, their bodies long lines (the email
    package would take 20 s to build them, and a mailbox of short lines twice as long to list
    under tracemalloc); what is listed is parsed by the agent as any mailbox's."""
    path = tmp_path / "big.mbox"
    line = b"a line of a mailing-list message, long as a paragraph written without a break " * 6 + b"\n"
    template = message("Message NUMBER", "BODY", msgid="<NUMBER@x>", References="<0@x>").as_bytes()
    template = template.replace(b"BODY\n", line * 48)
    with open(path, "wb") as f:
        for i in range(1_000):
            f.write(b"From ann@example.org Tue Nov  3 10:20:30 2026\n")
            f.write(template.replace(b"NUMBER", str(i).encode()))
            f.write(b"\n")
    mail = agent(str(path))
    tracemalloc.start()
    started = time.perf_counter()
    count = 0
    for ref in mail.references(None):
        count += 1
        assert ref.fields["thread_s"] == "0@x"
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"1,000 messages ({path.stat().st_size / 1e6:.1f} MB) listed in {elapsed:.1f} s under tracemalloc: {count / elapsed:.0f}/s, peak {peak / 1e6:.1f} MB"
    )
    assert count == 1_000 and path.stat().st_size > 22_000_000
    assert peak < 12_000_000  # the mbox (22 MB) is never held: its offset table and the keys' digests are


# -- readers (issue 55) ----------------------------------------------------------------------------


def allowed(ref: Reference) -> list[str]:
    assert ref.access is not None and not ref.access.deny
    return ref.access.fields()["access_allow"]


def test_readers_of_the_source_and_of_each_mailbox_and_their_attachments(tmp_path: Path) -> None:
    shared = message("Shared", msgid="<s@x>")
    shared.add_attachment(b"%PDF-1.4 plan", maintype="application", subtype="pdf", filename="plan.pdf")
    list_box = mbox(tmp_path / "dev.mbox", shared)
    private = maildir(tmp_path / "alice", message("Private", msgid="<p@x>"))
    other = mbox(tmp_path / "other.mbox", message("Other", msgid="<o@x>"))
    mail = agent(
        list_box,
        private,
        other,
        readers=["group:cn=Developers, ou=Groups,dc=example,dc=org"],
        mailbox_readers={private: ["user:EXAMPLE\\Alice", "group:assistants"], other: ["public"]},
    )
    assert mail.mail.gives_access is True and agent(list_box).mail.gives_access is False
    refs = {ref.key.split("/", 1)[1]: ref for ref in listed(mail)}
    assert set(refs) == {"s@x", "s@x/attachment/1-plan.pdf", "p@x", "o@x"}
    assert (
        allowed(refs["s@x"]) == allowed(refs["s@x/attachment/1-plan.pdf"]) == ["group:cn=developers,ou=groups,dc=example,dc=org"]
    )
    assert refs["s@x/attachment/1-plan.pdf"].access == refs["s@x"].access  # an attachment has its message's readers
    assert refs["s@x"].access is not None and refs["s@x"].access.levels[0].allow[0].origin == "readers of the mail source"
    assert allowed(refs["p@x"]) == ["group:assistants", "user:alice"]
    assert refs["p@x"].access is not None and refs["p@x"].access.levels[0].allow[0].origin == f"mailbox_readers of {private}"
    assert refs["o@x"].access is not None and refs["o@x"].access.is_public
    assert all(ref.access is None for ref in listed(agent(list_box)))  # no readers: the source's [access] says


def test_readers_are_validated() -> None:
    with pytest.raises(ValidationError, match="'alice' is not an access token"):
        MailOptions(paths=["/a"], readers=["alice"])
    with pytest.raises(ValidationError, match="at least 1"):
        MailOptions(paths=["/a"], readers=[])
    with pytest.raises(ValidationError, match=r"mailbox '/a': '-user:bob' is not an access token"):
        MailOptions(paths=["/a"], mailbox_readers={"/a": ["-user:bob"]})
    with pytest.raises(ValidationError, match="at least one reader"):
        MailOptions(paths=["/a"], mailbox_readers={"/a": []})
    with pytest.raises(ValidationError, match="names '/b', which is not in paths"):
        MailOptions(paths=["/a"], readers=["public"], mailbox_readers={"/b": ["user:x"]})
    with pytest.raises(ValidationError, match="mailbox '/b' has no readers"):
        MailOptions(paths=["/a", "/b"], mailbox_readers={"/a": ["user:x"]})
    both = MailOptions(paths=["/a", "/b"], mailbox_readers={"/a": ["user:x"], "/b": ["gid:0100"]})
    access = both.access_of("/b")
    assert both.gives_access and access is not None and access.fields()["access_allow"] == ["gid:100"]
