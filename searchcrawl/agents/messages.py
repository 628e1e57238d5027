"""Mail messages as documents: what the ``mail`` (archives) and ``imap`` (servers) source types
share, so that a message reads the same wherever it is stored.

A message is one document: its title the subject, its content the plain-text body (its inline
text/plain parts, joined), or the HTML body when it has no plain part, with ``author`` and
``sender_s`` (From), ``recipients_ss`` (To and Cc), ``list_s``, ``thread_s`` (the Message-ID of the
thread's first message), ``message_id_s``, ``last_modified`` (the Date header) and
``has_attachments_b``. Each attachment (a part marked as one, or a non-text part with a file name)
is a document of its own, ``<message key>/attachment/<n>-<filename>``, numbered in the order
``attachments`` walks the parts, converted as a file of its type.

Hostile messages: at most MAX_PARTS MIME parts are walked, MAX_DEPTH levels deep; an attached
message (message/rfc822) is one attachment; header values are decoded, cut to MAX_HEADER_CHARS
characters and stripped of control characters; a body in an unknown charset is read as UTF-8; a
message whose MIME structure the parser cannot read (or larger than the source's limit) is
indexed by its headers with a note as its content.
"""

from __future__ import annotations

import email
import email.header
import email.policy
import email.utils
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import Message
from typing import Any

from searchcrawl.agents.base import Content

logger = logging.getLogger(__name__)

MAX_PARTS = 1000  # MIME parts walked per message: a hostile message may carry thousands
MAX_DEPTH = 20  # nesting levels of multiparts walked
MAX_HEADER_CHARS = 2000  # a header value's length kept (a Subject may be megabytes)
MAX_RECIPIENTS = 1000  # addresses kept from To and Cc
HEAD_BYTES = 256 * 1024  # headers are read from this many first bytes
TEXT = "text/plain; charset=utf-8"
HTML = "text/html; charset=utf-8"

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}")
_MSGID = re.compile(r"<([!-;=?-~]{1,250})>")  # printable ASCII but <>


@dataclass(frozen=True)
class Attachment:
    """An attachment of a message: its number (from 1, in the order of ``attachments``), its
    safe file name and its MIME part."""

    number: int
    filename: str
    part: Message


def header_fields(head: Message, own_id: str, list_name: str | None) -> tuple[dict[str, Any], dict[str, str], datetime | None]:
    """A message's Solr fields, its named metadata and its date, from its headers; ``own_id``:
    its Message-ID (or what stands for it); ``list_name``: the source's, else the List-Id."""
    subject = header_text(head, "subject")
    sender = addresses(head, "from")
    recipients = (addresses(head, "to") + addresses(head, "cc"))[:MAX_RECIPIENTS]
    fields: dict[str, Any] = {
        "title": subject or "(no subject)",
        "message_id_s": own_id,
        "thread_s": thread_root(head) or own_id,
    }
    if sender:
        fields["author"] = sender[0][0] or sender[0][1]
        fields["sender_s"] = sender[0][1]
    if recipients:
        fields["recipients_ss"] = [address for _, address in recipients]
    list_name = list_name or list_id(head)
    if list_name:
        fields["list_s"] = list_name
    modified = message_date(head)
    if modified is not None:
        fields["last_modified"] = modified.strftime("%Y-%m-%dT%H:%M:%SZ")
    metadata = {name: value for name in ("subject", "from", "to", "cc", "date", "list-id") if (value := header_text(head, name))}
    return fields, metadata, modified


INHERITED = ("author", "sender_s", "list_s", "thread_s", "last_modified")  # a message's fields its attachments carry


def attachment_fields(message_fields: dict[str, Any], attachment: Attachment, message_url: str) -> dict[str, Any]:
    """An attachment's fields: its file name as title, its message's URL, and the message's
    author, sender, list, thread and date."""
    inherited = {name: value for name, value in message_fields.items() if name in INHERITED}
    return {**inherited, "title": attachment.filename, "attachment_of_s": message_url}


def too_large(size: int, limit: int) -> Content:
    """What stands for the body of a message larger than the source's limit."""
    note = f"This message ({size} bytes) is larger than the crawl's limit of {limit} bytes: its body and attachments are not indexed."
    return Content(note.encode(), TEXT)


def contents(raw: bytes, key: str) -> tuple[Content, list[Attachment]]:
    """The message's body and attachments; a note instead when its MIME structure breaks the
    parser (a hostile nesting): its headers are still indexed."""
    try:
        message = parse(raw)
        return body(message), list(attachments(message))
    except Exception as error:  # RecursionError on deep nesting, and whatever else a parser may raise
        logger.debug("mail: the MIME structure of %s cannot be read (%s): listed without its body", key, type(error).__name__)
        return Content(b"This message's MIME structure cannot be read: its body and attachments are not indexed.", TEXT), []


def attachment_content(message_key: str, attachment: Attachment, limit: int) -> Content | None:
    """An attachment's bytes as a document; None when they cannot be decoded or are larger than
    ``limit``."""
    data = attachment_bytes(attachment.part)
    if data is None:
        logger.debug("mail: attachment %d of %s cannot be decoded: skipped", attachment.number, message_key)
        return None
    if len(data) > limit:
        logger.debug("mail: attachment %d of %s is larger than max_message_bytes: skipped", attachment.number, message_key)
        return None
    return Content(data, content_type(attachment.part), attachment.filename)


def parse(raw: bytes) -> Message:
    """The message's MIME structure. The compat32 policy: parts are only asked their type,
    charset, file name and decoded bytes, which it answers from the raw headers, three times
    faster than the default policy (that parses every header it is asked for) and without its
    header parser's exceptions on hostile headers; the headers shown are decoded here (below)."""
    return email.message_from_bytes(raw, policy=email.policy.compat32)


def raw_header(message: Message, name: str) -> str | None:
    """A header's first value as it stands in the message, before any parsing."""
    for header, value in message.raw_items():
        if header.lower() == name:
            return str(value)
    return None


def clean_text(value: str) -> str:
    """One line of at most MAX_HEADER_CHARS characters: no CR/LF or other control characters;
    raw 8-bit bytes in headers (kept as surrogates by the parser) are read as UTF-8."""
    value = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return " ".join(_CONTROL.sub(" ", value).split())[:MAX_HEADER_CHARS]


def decoded(raw: str) -> str:
    """A header value with its RFC 2047 encoded words decoded; never raises."""
    raw = raw[: MAX_HEADER_CHARS * 4]
    try:
        return str(email.header.make_header(email.header.decode_header(raw)))
    except Exception:  # a malformed word or an unknown charset: the raw text is better than nothing
        logger.debug("mail: a header's encoded words cannot be decoded: kept raw")
        return raw


def decode_words(raw: str) -> str:
    """A header value decoded and cleaned (one line, bounded)."""
    return clean_text(decoded(raw))


def header_text(message: Message, name: str) -> str:
    """A header's first value, decoded and cleaned ("" when missing)."""
    raw = raw_header(message, name)
    return "" if raw is None else decode_words(raw)


def addresses(message: Message, name: str) -> list[tuple[str, str]]:
    """(display name, address) of every address in every ``name`` header; never raises."""
    found: list[tuple[str, str]] = []
    for header, value in message.raw_items():
        if header.lower() != name:
            continue
        for display, address in email.utils.getaddresses([str(value)[: MAX_HEADER_CHARS * 4]]):
            address = clean_text(address)
            if "@" in address:
                found.append((decode_words(display), address))
        if len(found) >= MAX_RECIPIENTS:
            break
    return found


def clean_message_id(value: str | None) -> str | None:
    """A Message-ID without its <>; None when missing or unusable (spaces, controls, too long)."""
    if not value:
        return None
    match = _MSGID.search(value[:1000])
    candidate = match.group(1) if match else value.strip()
    if not candidate or len(candidate) > 250 or not candidate.isascii() or not candidate.isprintable() or " " in candidate:
        return None
    return candidate


def thread_root(message: Message) -> str | None:
    """The thread's first message: the first of References, else In-Reply-To."""
    for name in ("references", "in-reply-to"):
        raw = raw_header(message, name)
        if raw:
            match = _MSGID.search(raw[:10000])
            if match:
                return match.group(1)
    return None


def list_id(message: Message) -> str | None:
    """The list's id from List-Id (``Name <dev.lists.example.org>``: the part in <>)."""
    raw = header_text(message, "list-id")
    match = re.search(r"<([^<>]+)>", raw)
    return (match.group(1).strip() if match else raw) or None


def message_date(message: Message) -> datetime | None:
    """The Date header in UTC; None when missing or not a date."""
    raw = raw_header(message, "date")
    if not raw:
        return None
    try:
        parsed = email.utils.parsedate_to_datetime(clean_text(raw)[:200])
    except (TypeError, ValueError, IndexError, OverflowError):
        logger.debug("mail: an unreadable Date header is left out")
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        return None


def walk(message: Message) -> Iterator[Message]:
    """The message's leaf parts, depth first, at most MAX_PARTS and MAX_DEPTH deep; an attached
    message (message/rfc822) is a leaf."""
    stack: list[tuple[Message, int]] = [(message, 0)]
    walked = 0
    while stack:
        part, depth = stack.pop()
        walked += 1
        if walked > MAX_PARTS:
            logger.debug("mail: more than %d MIME parts: the rest is ignored", MAX_PARTS)
            return
        if part.is_multipart() and part.get_content_maintype() == "multipart":
            if depth >= MAX_DEPTH:
                logger.debug("mail: MIME parts nested deeper than %d are ignored", MAX_DEPTH)
                continue
            children = part.get_payload()
            if isinstance(children, list):
                stack.extend((child, depth + 1) for child in reversed(children[:MAX_PARTS]))
            continue
        yield part


def content_type(part: Message) -> str:
    """The part's type when it is a well-formed one (it becomes a response header), else
    application/octet-stream: converters sniff the bytes."""
    kind = part.get_content_type()
    return kind if _TYPE.fullmatch(kind) else "application/octet-stream"


def is_attachment(part: Message) -> bool:
    disposition = (part.get_content_disposition() or "").lower()
    if disposition == "attachment":
        return True
    return part.get_content_maintype() not in ("text", "multipart") and part.get_filename() is not None


def safefilename_of(name: str | None, number: int) -> str:
    """A file name from a message, safe in keys and for converters: no folders, no controls."""
    name = (name or "").encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = _CONTROL.sub("", name).strip().lstrip(".")[:200]
    return name or f"attachment-{number}"


def filename_of(part: Message, number: int) -> str:
    try:
        name = part.get_filename()
    except Exception:
        name = None
    if name:
        name = decoded(name)  # Outlook's RFC 2047 file names
    if not name and part.get_content_type() == "message/rfc822":
        name = f"message-{number}.eml"
    return safefilename_of(name, number)


def attachments(message: Message) -> Iterator[Attachment]:
    number = 0
    for part in walk(message):
        if part is not message and is_attachment(part):
            number += 1
            yield Attachment(number, filename_of(part, number), part)


def attachment_key(message_key: str, attachment: Attachment) -> str:
    return f"{message_key}/attachment/{attachment.number}-{attachment.filename}"


def attachment_bytes(part: Message) -> bytes | None:
    """An attachment's bytes; an attached message's bytes as they were (not opened)."""
    try:
        if part.is_multipart():  # message/rfc822: parsed by email, written back as bytes
            inner = part.get_payload(0)
            return inner.as_bytes(policy=email.policy.compat32)  # type: ignore[union-attr]
        payload = part.get_payload(decode=True)
    except Exception:
        return None
    return payload if isinstance(payload, bytes) else None


def decode_text(payload: bytes, charset: str | None) -> str:
    """Text in the part's charset; an unknown (or non-text) charset is read as UTF-8, and bytes
    that do not decode are replaced: never fatal."""
    try:
        return payload.decode((charset or "utf-8")[:40], errors="replace")
    except (LookupError, UnicodeError, ValueError, TypeError):
        logger.debug("mail: unknown charset %r: read as UTF-8", (charset or "")[:40])
        return payload.decode("utf-8", errors="replace")


def body(message: Message) -> Content:
    """The plain-text body (every inline text/plain part), else the first HTML part."""
    plain: list[str] = []
    html: str | None = None
    for part in walk(message):
        if is_attachment(part) or part.get_content_maintype() != "text":
            continue
        subtype = part.get_content_subtype()
        if subtype not in ("plain", "html"):
            continue
        try:
            payload = part.get_payload(decode=True)
            charset = part.get_content_charset()
        except Exception:
            continue
        if not isinstance(payload, bytes):
            continue
        text = decode_text(payload, charset)
        if subtype == "plain":
            plain.append(text)
        elif html is None:
            html = text
    if plain or html is None:
        return Content("\n\n".join(plain).encode("utf-8", errors="replace"), TEXT)
    return Content(html.encode("utf-8", errors="replace"), HTML)
