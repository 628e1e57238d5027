"""The ``mail`` source type: mail archives (mbox files and Maildir folders) crawled as documents.

Each message is one document, ``mail://<source>/<mailbox>/<Message-ID>``: its title is the
subject, its content the plain-text body (its inline text/plain parts, joined), or the HTML body
when the message has no plain part, and it carries ``author`` and ``sender_s`` (From),
``recipients_ss`` (To and Cc), ``list_s`` (the ``list_name`` option, else the message's List-Id),
``thread_s`` (the Message-ID of the thread's first message: the first of References, else
In-Reply-To, else its own), ``message_id_s``, ``last_modified`` (the Date header; left out when
missing or unreadable) and ``has_attachments_b``. With ``attachments = true`` (the default) each
attachment (a part marked as one, or a non-text part with a file name) is a document of its own,
``.../attachment/<n>-<filename>``, converted as a file of its type, with ``attachment_of_s``
naming its message's URL and the message's author, sender, list, thread and date.

```toml
type = "mail"

[mail]
paths = ["/srv/archives/dev-list.mbox", "/home/archive/Maildir"]
format = "auto"            # "mbox" | "maildir"; auto: a folder with cur/, new/ and tmp/ is a Maildir
list_name = "dev"          # optional: else each message's List-Id
attachments = true
max_message_bytes = 10485760
readers = ["group:cn=developers,ou=groups,dc=example,dc=org"]   # every mailbox's, but those below

[mail.mailbox_readers]     # a mailbox's own readers, instead of readers
"/home/archive/Maildir" = ["user:archive", "group:cn=mail-admins,ou=groups,dc=example,dc=org"]
```

Readers: ``readers`` are the access tokens (``user:``, ``group:``, ``uid:``, ``gid:``,
``public``) of those who may read every mailbox's messages, ``mailbox_readers`` a mailbox's own
(its owner, the groups it is shared with), instead of ``readers``; with ``mailbox_readers`` but no ``readers``,
every mailbox must be in ``mailbox_readers``; with neither, the source's ``[access]`` table says. Tokens are checked when the source file is read. A
message's attachments have its readers. With either option the source's agent gives access
(``MailOptions.gives_access``): the source needs no ``[access]`` table; a change of readers is a change of
the source's options, which reads every message again.

Keys: ``<mailbox>/<Message-ID>``, where ``<mailbox>`` is the mailbox's file or folder name
followed by a short hash of its full path, and ``%``, ``/`` and ``#`` in the Message-ID are
percent-encoded (and a leading ``sha256-``), so a forged Message-ID such as
``<a@x/attachment/1-doc.txt>`` cannot take another document's key; a message without a usable
Message-ID is named by a hash of its bytes (``sha256-...``). Keys do not depend on a message's position, so deleting or
adding other messages changes no key; moving or renaming the mailbox re-indexes it. A second
message with the same Message-ID and the same bytes is a copy and is skipped; with other bytes it
is ``<mailbox>/<Message-ID>#<hash>``.

Changes and deletions: the listing is complete (not incremental): every crawl reads every
message, and a message no longer listed is deleted from the index. A message's token is a hash of
its bytes (its attachments share it), so a message whose bytes did not change is not processed
again, and an edited one is.

Limits (hostile archives): a message larger than ``max_message_bytes`` is listed with its
headers and a note as its content, without its body and attachments (so is a message whose MIME
structure Python's parser cannot read, such as parts nested a thousand deep). At most 1,000 MIME
parts of a message are walked, 20 levels deep. An attached message (message/rfc822) is one
attachment: its own attachments are not documents. Headers are read from the message's first
256 KiB, cut to 2,000 characters, control characters (CR, LF) replaced by spaces. A body in an
unknown charset is read as UTF-8, and undecodable bytes are replaced. An mbox is read in pieces
of at most 1 MiB: a line of gigabytes is never held.

Links: a mailbox path that is a symbolic link is the admin's choice: it is resolved once, when
the crawl starts (the agent is built), and the resolved path is opened without following a link,
so an mbox or Maildir swapped for a link during the crawl is not read (the fetch fails, the
document is kept). A Maildir's ``new`` and ``cur`` are opened relative to its folder without
following links: a ``cur`` or ``new`` that is a link fails the crawl (nothing is read from it,
nothing removed). Its message files are opened relative to them without following links, and
only regular files are read (a link or a FIFO is skipped).

Memory and cost: messages are read one at a time. An mbox is read in one pass, split as Python's
``mailbox.mbox`` splits it (at each line starting with ``From ``), and a Maildir's file names are
listed and sorted per folder; a short digest of each key is kept while a mailbox is listed, to spot
duplicate Message-IDs. ``fetch`` (used after a resumed crawl, when a listed content was not kept)
reads the mailbox again up to the message: O(n) per fetch. Only a Maildir's ``new`` and ``cur``
are read (not its sub-folders: list each folder you want in ``paths``). Mailboxes are read
without locking: a message written while the crawl reads is seen by the next crawl. The listing
and each fetch open their own handles, so fetches may run beside the listing in other threads.
"""

from __future__ import annotations

import contextlib
import email
import email.header
import email.policy
import email.utils
import errno
import hashlib
import logging
import os
import re
import stat
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from datetime import datetime
from email.message import Message
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import BinaryIO, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from searchcrawl.access.tokens import Access, AccessError, normal_token
from searchcrawl.agents.base import Agent, AgentError, Content, DocumentTooLarge, Reference
from searchcrawl.agents.grants import grants_of
from searchcrawl.agents.messages import (
    HEAD_BYTES,
    Attachment,
    attachment_content,
    attachment_fields,
    attachment_key,
    clean_message_id,
    contents,
    header_fields,
    raw_header,
    too_large,
)

logger = logging.getLogger(__name__)

CHUNK = 1024 * 1024


class MailOptions(BaseModel):
    """The ``[mail]`` table of a ``type = "mail"`` source."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    paths: list[str] = Field(min_length=1)
    format: Literal["auto", "mbox", "maildir"] = "auto"
    list_name: str | None = None
    attachments: bool = True
    max_message_bytes: int = Field(default=10 * 1024 * 1024, gt=0)
    readers: list[str] | None = Field(default=None, min_length=1)
    mailbox_readers: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("readers")
    @classmethod
    def _tokens(cls, readers: list[str] | None) -> list[str] | None:
        if readers is not None:
            _check_tokens(readers, "readers")
        return readers

    @field_validator("mailbox_readers")
    @classmethod
    def _mailbox_tokens(cls, mailboxes: dict[str, list[str]]) -> dict[str, list[str]]:
        for path, readers in mailboxes.items():
            if not readers:
                raise ValueError(f"mailbox {path!r}: expected at least one reader (public: everyone)")
            _check_tokens(readers, f"mailbox {path!r}")
        return mailboxes

    @model_validator(mode="after")
    def _every_mailbox_has_readers(self) -> MailOptions:
        unknown = [path for path in self.mailbox_readers if path not in self.paths]
        if unknown:
            raise ValueError(f"mailbox_readers names {unknown[0]!r}, which is not in paths")
        if self.mailbox_readers and self.readers is None:
            without = [path for path in self.paths if path not in self.mailbox_readers]
            if without:
                raise ValueError(
                    f"mailbox {without[0]!r} has no readers: name it in mailbox_readers, or give readers for the other mailboxes"
                )
        return self

    def local_paths(self) -> list[tuple[str, str]]:
        """The mailboxes the source reads, by key (config/own_places.py refuses the installation's own)."""
        return [("paths", path) for path in self.paths]

    @property
    def gives_access(self) -> bool:
        """Whether the options name the readers of every mailbox."""
        return self.readers is not None or bool(self.mailbox_readers)

    def access_of(self, path: str) -> Access | None:
        """The access of a mailbox's messages and attachments: its own readers, else the
        source's, else None (the source's ``[access]`` table decides)."""
        if path in self.mailbox_readers:
            return Access.of(grants_of(self.mailbox_readers[path], f"mailbox_readers of {path}"))
        if self.readers is not None:
            return Access.of(grants_of(self.readers, "readers of the mail source"))
        return None

    @field_validator("paths")
    @classmethod
    def _absolute(cls, paths: list[str]) -> list[str]:
        # A relative path would depend on the crawler's working directory.
        for path in paths:
            if not path or "\x00" in path or not os.path.isabs(path):
                raise ValueError(f"{path!r} is not an absolute path")
        if len(set(paths)) != len(paths):
            raise ValueError("a mailbox is listed twice")
        return paths


def _check_tokens(readers: list[str], where: str) -> None:
    for reader in readers:
        try:
            normal_token(reader)
        except AccessError as error:
            raise ValueError(f"{where}: {error}") from None


@dataclass(frozen=True)
class _Stored:
    """One message as read from its mailbox, before its body is parsed."""

    key: str
    token: str
    size: int
    raw: bytes | None  # None: larger than max_message_bytes
    head: Message  # its headers only
    message_id: str | None  # as in the message (the key's part is escaped)


class MailAgent(Agent):
    """Lists the messages (and attachments) of mbox files and Maildir folders."""

    scheme: ClassVar[str] = "mail"
    Options: ClassVar[type[BaseModel]] = MailOptions

    def __init__(self, source: str, options: BaseModel) -> None:
        super().__init__(source, options)
        self.mail = MailOptions.model_validate(options)  # the same object, typed
        self.boxes = {box_name(path): path for path in self.mail.paths}
        # A configured path that is a symbolic link is the admin's choice: resolved once, here;
        # the resolved path is then opened without following a link, so a mailbox swapped for
        # a link during the crawl (between the listing and a fetch) is never read.
        self.real = {path: os.path.realpath(path) for path in self.mail.paths}
        # who may read each mailbox's messages and their attachments (by the mailbox's name in keys)
        self.access = {name: self.mail.access_of(path) for name, path in self.boxes.items()}

    # -- the Agent interface ----------------------------------------------------------------

    def references(self, since: datetime | None) -> Iterator[Reference]:
        """Every message and attachment of every mailbox (``since`` is ignored: not incremental)."""
        for name, path in self.boxes.items():
            count = 0
            for stored in self._scan(name, path):
                count += 1
                yield from self._references_of(stored)
            logger.info("mail: %d messages listed in %s", count, path)

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        """Reads the mailbox again up to the message (O(n)); None when the message is gone."""
        name = key.split("/", 1)[0]
        path = self.boxes.get(name)
        if path is None:
            return None
        content: Content | None
        with contextlib.closing(self._scan(name, path)) as messages:
            for stored in messages:
                if key == stored.key:
                    content = self._message_content(stored)
                elif key.startswith(stored.key + "/attachment/"):
                    content = self._attachment_content(stored, key)
                else:
                    continue
                if content is not None and max_bytes and len(content.body) > max_bytes:
                    raise DocumentTooLarge(key)
                return content
        logger.debug("mail: %s is no longer in %s", key, path)
        return None

    # -- reading mailboxes ------------------------------------------------------------------

    def _scan(self, name: str, path: str) -> Generator[_Stored]:
        """The mailbox's messages one at a time, each with its key and token."""
        seen: set[bytes] = set()  # digests of keys and of key#token listed: duplicate Message-IDs
        for chunks in self._open_messages(path):
            try:
                stored = self._read(name, chunks)
            except OSError as error:
                raise AgentError(f"mailbox {path} cannot be read: {error.strerror}") from None
            copy = _digest(f"{stored.key}#{stored.token}")
            if copy in seen:
                logger.debug("mail: a copy of %s in %s is skipped", stored.key, path)
                continue
            if _digest(stored.key) in seen:
                logger.debug("mail: another message with the Message-ID of %s: keyed by its hash", stored.key)
                stored = _Stored(
                    f"{stored.key}#{stored.token}", stored.token, stored.size, stored.raw, stored.head, stored.message_id
                )
            seen.update((_digest(stored.key), copy))
            yield stored

    def _open_messages(self, path: str) -> Iterator[Iterator[bytes]]:
        """Each message of the mailbox as its bytes in chunks. The mailbox (its path resolved
        when the agent was built) is opened without following a link and without blocking."""
        try:
            fd = os.open(self.real[path], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as error:
            why = "it became a symbolic link" if error.errno == errno.ELOOP else error.strerror
            raise AgentError(f"mailbox {path} cannot be read: {why}") from None
        try:
            kind = self._format(fd, path)
            if kind == "maildir":
                yield from _maildir_messages(fd, path)
            else:
                with os.fdopen(fd, "rb", closefd=False) as file:
                    yield from _mbox_messages(file)
        finally:
            os.close(fd)

    def _format(self, fd: int, path: str) -> str:
        mode = os.fstat(fd).st_mode
        is_maildir = stat.S_ISDIR(mode) and all(_present(fd, sub) for sub in ("cur", "new", "tmp"))
        wanted = self.mail.format
        if wanted in ("auto", "maildir") and is_maildir:
            return "maildir"
        if wanted in ("auto", "mbox") and stat.S_ISREG(mode):
            return "mbox"
        expected = {"auto": "an mbox file or a Maildir folder", "mbox": "an mbox file", "maildir": "a Maildir folder"}
        raise AgentError(f"mailbox {path} is not {expected[wanted]}")

    def _read(self, name: str, chunks: Iterator[bytes]) -> _Stored:
        """Reads a message's bytes up to max_message_bytes; the rest of a larger one is only hashed."""
        limit = self.mail.max_message_bytes
        kept = bytearray()
        sha = hashlib.sha256()
        size = 0
        for chunk in chunks:
            sha.update(chunk)
            size += len(chunk)
            if len(kept) <= limit:
                kept += chunk[: limit + 1 - len(kept)]
        raw = bytes(kept)
        head = BytesHeaderParser(policy=email.policy.compat32).parsebytes(raw[:HEAD_BYTES])
        token = sha.hexdigest()[:32]
        message_id = clean_message_id(raw_header(head, "message-id"))
        key = f"{name}/{key_part(message_id) if message_id else 'sha256-' + token}"
        return _Stored(key, token, size, raw if size <= limit else None, head, message_id)

    # -- references -------------------------------------------------------------------------

    def _references_of(self, stored: _Stored) -> Iterator[Reference]:
        own_id = stored.message_id or stored.key.split("/", 1)[1]
        fields, metadata, modified = header_fields(stored.head, own_id, self.mail.list_name)
        body, attachments = self._contents(stored)
        if stored.raw is not None:
            fields["has_attachments_b"] = bool(attachments)
        access = self.access[stored.key.split("/", 1)[0]]  # the mailbox's: an attachment's too
        yield Reference(stored.key, stored.token, modified, fields, metadata, body, access=access)
        if not self.mail.attachments:
            return
        for attachment in attachments:
            content = attachment_content(stored.key, attachment, self.mail.max_message_bytes)
            if content is None:
                continue
            own = attachment_fields(fields, attachment, self.url_for(stored.key))
            key = attachment_key(stored.key, attachment)
            yield Reference(key, stored.token, modified, own, {}, content, parent=stored.key, access=access)

    def _contents(self, stored: _Stored) -> tuple[Content, list[Attachment]]:
        if stored.raw is None:
            logger.debug("mail: %s is larger than max_message_bytes (%d bytes): listed without its body", stored.key, stored.size)
            return too_large(stored.size, self.mail.max_message_bytes), []
        return contents(stored.raw, stored.key)

    def _message_content(self, stored: _Stored) -> Content:
        return self._contents(stored)[0]

    def _attachment_content(self, stored: _Stored, key: str) -> Content | None:
        if not self.mail.attachments:
            return None
        for attachment in self._contents(stored)[1]:
            if attachment_key(stored.key, attachment) == key:
                return attachment_content(stored.key, attachment, self.mail.max_message_bytes)
        return None


# -- mailboxes ---------------------------------------------------------------------------------


def box_name(path: str) -> str:
    """A mailbox's short stable name in keys: its file name and a hash of its full path (two
    mailboxes may share a file name; the order of ``paths`` may change)."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(path).name)[:40] or "mailbox"
    return f"{base}-{hashlib.sha256(path.encode()).hexdigest()[:8]}"


def _digest(key: str) -> bytes:
    """12 bytes standing for a key in the set of keys listed (a key may be 250 characters)."""
    return hashlib.sha1(key.encode(errors="surrogateescape")).digest()[:12]


def key_part(message_id: str) -> str:
    """A Message-ID as it stands in a key, unambiguous: ``%``, ``/`` and ``#`` percent-encoded
    (a ``/`` would let ``<a@x/attachment/1-doc.txt>`` take the key of an attachment of ``<a@x>``,
    a ``#`` a duplicate's key), and ``sha256-`` at its start too (the key of a message without
    a Message-ID)."""
    part = message_id.replace("%", "%25").replace("/", "%2F").replace("#", "%23")
    return "sha256%2D" + part[7:] if part.startswith("sha256-") else part


def _present(fd: int, name: str) -> bool:
    """Whether the folder holds ``name`` (a link counts: it is refused when opened)."""
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return False
    return True


def _is_link(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _mbox_messages(file: BinaryIO) -> Iterator[Iterator[bytes]]:
    """An mbox's messages (each without its From_ line), read in one pass as Python's
    ``mailbox.mbox`` splits them (at every line starting with ``From ``, the blank line before
    it dropped), but never more than CHUNK bytes of a line at once: a hostile mbox may hold a
    line of gigabytes. Each message must be read to its end before the next is asked for."""
    reader = _MboxReader(file)
    piece, start = reader.piece()
    while piece and not (start and piece.startswith(b"From ")):  # text before the first message
        piece, start = reader.piece()
    while piece:
        while piece and not piece.endswith(b"\n"):  # the rest of a long From_ line
            piece, _ = reader.piece()
        body = reader.body()
        yield body
        for _ in body:  # what the consumer left of it
            pass
        piece = reader.next_from


class _MboxReader:
    """An mbox file read in pieces of lines, each knowing whether it starts a line."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.at_start = True
        self.next_from = b""  # the From_ line that ended the last message, b"" at the end

    def piece(self) -> tuple[bytes, bool]:
        piece = self.file.readline(CHUNK)
        start, self.at_start = self.at_start, piece.endswith(b"\n")
        return piece, start

    def body(self) -> Iterator[bytes]:
        """The message's bytes in chunks of about CHUNK bytes (lines gathered)."""
        blank = False  # a blank line held back: it is dropped when a From_ line follows
        gathered: list[bytes] = []
        size = 0
        while True:
            piece, start = self.piece()
            if not piece or (start and piece.startswith(b"From ")):
                self.next_from = piece
                if gathered:
                    yield b"".join(gathered)
                return
            if blank:
                gathered.append(b"\n")
            blank = start and piece == b"\n"
            if not blank:
                gathered.append(piece)
                size += len(piece)
                if size >= CHUNK:
                    yield b"".join(gathered)
                    gathered, size = [], 0


def _file_chunks(file: BinaryIO) -> Iterator[bytes]:
    with file:
        while chunk := file.read(CHUNK):
            yield chunk


def _maildir_messages(fd: int, path: str) -> Iterator[Iterator[bytes]]:
    """A Maildir's messages (new/ then cur/, by file name). ``new`` and ``cur`` are opened
    relative to the Maildir's folder and message files relative to them, never following a
    link: a ``cur`` that is a link to another folder fails the listing (nothing read from
    it, nothing removed); a message file that is a link, or not a regular file, is skipped,
    and so is a file gone since the folder was listed."""
    for sub in ("new", "cur"):
        folder = os.path.join(path, sub)
        try:
            sub_fd = os.open(sub, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        except OSError as error:
            why = "a symbolic link, not followed" if _is_link(fd, sub) else error.strerror
            raise AgentError(f"mailbox folder {folder} cannot be listed: {why}") from None
        try:
            try:
                names = sorted(name for name in os.listdir(sub_fd) if not name.startswith("."))
            except OSError as error:
                raise AgentError(f"mailbox folder {folder} cannot be listed: {error.strerror}") from None
            for filename in names:
                file_path = os.path.join(folder, filename)
                try:
                    file_fd = os.open(filename, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=sub_fd)
                except OSError as error:
                    logger.debug("mail: %s cannot be opened (%s): skipped", file_path, error.strerror)
                    continue
                if not stat.S_ISREG(os.fstat(file_fd).st_mode):
                    os.close(file_fd)
                    logger.debug("mail: %s is not a regular file: skipped", file_path)
                    continue
                yield _file_chunks(os.fdopen(file_fd, "rb"))
        finally:
            os.close(sub_fd)
