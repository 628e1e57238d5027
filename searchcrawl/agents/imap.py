"""The ``imap`` source type: the folders of mail servers with RFC 4314 access lists and proxy
authorization (Dovecot, Cyrus), each folder's access list as who may read its messages.

```toml
type = "imap"

[imap]
server = "mail.example.org"
tls = "implicit"                        # "implicit" (port 993) | "starttls" (143) | "none" (loopback only)
ca_file = "/etc/ssl/certs/corp-ca.pem"  # a private CA; else the system's
username = "crawler"                    # the crawl's account
password_secret = "IMAP_CRAWLER_PASSWORD"
users = ["alice", "bob"]                # their own mailboxes, by proxy authorization
public_folders = false                  # the server's public namespaces, as the crawl's account sees them
exclude = ["Trash", "Junk", "Drafts"]   # folder names (include too), shell patterns
group_token = "group:{id}"              # a "$sales" identifier; user_token = "user:{id}" likewise
anyone_token = "public"                 # RFC 4314 "anyone"; authenticated_token: Dovecot's "authenticated"
```

Mailboxes: each user in ``users`` is logged in as, by SASL PLAIN with the user as the
authorization identity and the crawl's account as the authentication identity (RFC 4616: what
Dovecot calls a master user, Cyrus a proxy administrator); the folders of that user's personal
namespace are crawled (not those others share with the user: they are crawled under their
owner). ``public_folders``: the public (RFC 2342 "shared") namespaces, as the crawl's account
logged in as itself sees them. The crawl's account needs the rights ``l`` (see the folder), ``r``
(read its messages) and ``a`` (read its access list) on every folder it crawls: with Dovecot,
``* user=crawler lra`` in the global ACL file. It reads with EXAMINE and BODY.PEEK: no message is
marked seen, nothing is written.

Documents: each message, ``imap://<source>/<user>/<folder>/<UIDVALIDITY>/<UID>`` (``#public``
for public folders), with the fields of a mail archive's messages (``searchcrawl/agents/messages.py``:
subject, sender, recipients, thread, date) and ``folder_s``, ``mailbox_s`` (the user); each
attachment ``.../attachment/<n>-<filename>``, found in the server's BODYSTRUCTURE at listing and
read from the message when fetched. The display URL is the RFC 5092 IMAP URL of the message
(``display_url`` templates of the source may rewrite it to a webmail's).

Who may read (``gives_access``): the folder's access list (GETACL), read at every listing and
again with every message read, decided as Dovecot applies it by access/imap_acl.py
(``folder_access``; ``mailbox_access`` for a folder of a user's own mailbox, whose list is read
twice: under the owner's name and under the name the others see, ``others_names``). A folder whose
list cannot be read (the crawl account lacks ``a``) or holds an entry whose meaning as tokens is
not certain keeps its messages out of the index (status 927): never shown to all.

Changes: a message's token is its UIDVALIDITY and UID, which IMAP never reuses for other
content: a maintenance crawl reads the bodies of new messages only, and a folder whose rights
changed has its messages' access updated in Solr without reading them again (the 304 path of
every agent). Every crawl lists every folder completely (UIDs, sizes, structures and a few
headers: about a kilobyte a message, from the server's index): an expunged or moved message
leaves the index, a folder whose UIDVALIDITY changed is read again under new keys, a folder that
was deleted takes its messages. A server that cannot be reached, a login refused, or a folder
that fails to list fails the crawl: nothing is removed; a fetch that fails for any other reason
than "no such folder" keeps its document as it was.

Limits (hostile mail and servers): a message larger than ``max_message_bytes`` is indexed by its
headers with a note, and no more than that is read of any message whatever size the server
states; an attachment is read alone (its section); structures are cut (MAX_PARTS, MAX_DEPTH,
MAX_PARAMETERS); header fields are read from at most HEADER_BYTES bytes; everything a message
holds is read as in a mail archive. Connections: the listing logs in on its own; fetches share
``Connections`` (at most PER_USER per user, MAX_IDLE idle). Passwords never reach a log or an error message.
"""

from __future__ import annotations

import contextlib
import email.policy
import fnmatch
import imaplib
import logging
import re
import ssl
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from email.message import Message
from email.parser import BytesHeaderParser
from typing import TYPE_CHECKING, Any, ClassVar, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from searchcrawl.access.imap_acl import Unmappable, folder_access, mailbox_access
from searchcrawl.access.tokens import Access, AccessError, Grant
from searchcrawl.agents.base import Agent, AgentError, Content, DocumentTooLarge, Reference
from searchcrawl.agents.messages import (
    MAX_DEPTH,
    MAX_PARTS,
    Attachment,
    attachment_content,
    attachment_fields,
    attachment_key,
    attachments,
    clean_message_id,
    contents,
    header_fields,
    raw_header,
    too_large,
)
from searchcrawl.rules.addresses import is_loopback
from searchcrawl.system.secrets import SecretError, checked_secret_name, required_secret

if TYPE_CHECKING:
    from imapclient import IMAPClient

logger = logging.getLogger(__name__)

TABLE = "imap"
PUBLIC_FOLDERS = "#public"  # the user part of public folders' keys (no user name starts with #)
HEADERS = "SUBJECT FROM TO CC DATE MESSAGE-ID LIST-ID REFERENCES IN-REPLY-TO"
HEADER_BYTES = 64 * 1024  # of a message's header fields, read at listing
FETCH_BATCH = 100  # messages described per FETCH at listing
MAX_PARAMETERS = 64  # of a part's type or disposition, taken from its BODYSTRUCTURE
_HEADER_ITEM = f"BODY.PEEK[HEADER.FIELDS ({HEADERS})]<0.{HEADER_BYTES}>"
_KEY = re.compile(r"(?P<user>[^/]+)/(?P<folder>.+)/(?P<validity>\d+)/(?P<uid>\d+)(?:/attachment/(?P<number>\d+)-[^/]*)?")
_USER = re.compile(r"[^/#\s\x00-\x1f][^/\s\x00-\x1f]{0,254}")


class ImapOptions(BaseModel):
    """The ``[imap]`` table of a source of type ``imap``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    server: str = Field(min_length=1, max_length=253)
    port: int | None = Field(default=None, ge=1, le=65535)
    tls: Literal["implicit", "starttls", "none"] = "implicit"
    ca_file: str | None = None
    username: str = Field(min_length=1, max_length=255)
    password_secret: str
    users: list[str] = Field(default_factory=list)
    public_folders: bool = False
    include: list[str] = Field(default_factory=lambda: ["*"], min_length=1)
    exclude: list[str] = Field(default_factory=list)
    attachments: bool = True
    max_message_bytes: int = Field(default=10 * 1024 * 1024, gt=0)
    timeout: float = Field(default=60.0, gt=0, le=600)
    user_token: str = "user:{id}"
    group_token: str = "group:{id}"
    anyone_token: str | None = "public"
    authenticated_token: str | None = None

    @field_validator("server")
    @classmethod
    def _server(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9.:-]+|\[[0-9A-Fa-f:.]+\]", value):
            raise ValueError(f"expected a host name or address, got {value!r}")
        return value.strip("[]").lower()

    @field_validator("password_secret")
    @classmethod
    def _secret_name(cls, value: str) -> str:
        return checked_secret_name(value) or ""

    @field_validator("users")
    @classmethod
    def _users(cls, values: list[str]) -> list[str]:
        for value in values:
            if not _USER.fullmatch(value):
                raise ValueError(f"{value!r} is no user name (no '/', spaces or controls, not starting with '#')")
        if len(set(values)) != len(values):
            raise ValueError("a user is listed twice")
        return values

    @field_validator("user_token", "group_token")
    @classmethod
    def _template(cls, value: str) -> str:
        if value.count("{id}") != 1 or "{" in value.replace("{id}", "") or "}" in value.replace("{id}", ""):
            raise ValueError(
                f"expected a token with one {{id}}, such as 'group:cn={{id}},ou=groups,dc=example,dc=org', got {value!r}"
            )
        _token_of(value, "x")
        return value

    @field_validator("anyone_token", "authenticated_token")
    @classmethod
    def _token(cls, value: str | None) -> str | None:
        if value is not None:
            _token_of(value, None)
        return value

    @model_validator(mode="after")
    def _something_to_crawl(self) -> ImapOptions:
        if not self.users and not self.public_folders:
            raise ValueError("name the 'users' whose mailboxes are crawled, or set public_folders = true")
        if self.tls == "none" and not is_loopback(self.server):
            raise ValueError("tls = 'none' sends the password in clear: only to a server on this machine (127.0.0.1, ::1)")
        return self

    @property
    def port_number(self) -> int:
        return self.port or (993 if self.tls == "implicit" else 143)

    def takes(self, folder: str) -> bool:
        """Whether the folder is crawled: a name ``include`` matches and ``exclude`` does not."""
        return any(fnmatch.fnmatchcase(folder, pattern) for pattern in self.include) and not any(
            fnmatch.fnmatchcase(folder, pattern) for pattern in self.exclude
        )


def _token_of(template: str, identifier: str | None) -> str:
    """A token from a template and an identifier; ValueError when it is none."""
    text = template if identifier is None else template.replace("{id}", identifier)
    try:
        return Grant.of(text, "check").token
    except AccessError as error:
        raise ValueError(str(error)) from None


# -- access lists: read with GETACL, decided by access/imap_acl.py -----------------------------


def others_names(
    personal: Sequence[tuple[str, str]], other: Sequence[tuple[str, str]], owner: str, folder: str
) -> tuple[str, ...] | None:
    """The name ``owner``'s ``folder`` has to the other users (RFC 2342's Other Users' namespace:
    its prefix, the owner, its separator, the folder's name within its own namespace). An INBOX
    is the prefix and the owner alone only where the personal namespace is INBOX's children
    (Cyrus's ``INBOX.``: ``user.bob``, where ``user.bob.INBOX`` is bob's ``INBOX.INBOX``);
    elsewhere ``shared/bob/INBOX`` (Dovecot). None: the server announces no such namespace, nobody else can open it.
    Unmappable: several (which one a reader uses cannot be told); an owner whose name holds a
    separator (Dovecot reads the user back up to the first one: ``shared.john.smith.Reports`` is
    john's ``smith.Reports``); a folder whose name holds the others' separator where its own
    is another (``a/b`` is a child ``b`` to them)."""
    if not other:
        return None
    if len(other) > 1:
        raise Unmappable(f"the server announces {len(other)} namespaces of other users")
    prefix, separator = other[0]
    separators = {sep for _, sep in (*personal, *other) if sep}
    if any(sep in owner for sep in separators):
        raise Unmappable(f"the owner's name {owner[:80]!r} holds a hierarchy separator ({' '.join(sorted(separators))})")
    own_prefix, own_separator = max(
        ((name, sep) for name, sep in personal if folder.startswith(name)), key=lambda entry: len(entry[0]), default=("", "")
    )
    relative = folder[len(own_prefix) :]
    if separator and own_separator != separator:
        if separator in relative:
            raise Unmappable(f"the folder's name holds the others' separator {separator!r}, a level for them")
        if own_separator:
            relative = relative.replace(own_separator, separator)
    inbox_parent = any(name.upper() == f"INBOX{sep}" for name, sep in personal if sep)
    if relative.upper() == "INBOX" and inbox_parent:
        return (f"{prefix}{owner}",)
    return (f"{prefix}{owner}{separator}{relative}",)


# -- message structures ------------------------------------------------------------------------


def skeleton(
    structure: Any, sections: dict[int, str] | None = None, section: str = "", budget: list[int] | None = None
) -> Message:
    """A message of headers only, built from the server's BODYSTRUCTURE: the attachments found in
    it (``messages.attachments``) are those found in the message itself, numbered alike.
    ``sections``: filled with each part's IMAP section number (RFC 3501), by ``id`` of the part.
    At most MAX_PARTS parts in all, MAX_DEPTH deep, MAX_PARAMETERS parameters each (a hostile
    structure costs no more than a hostile message)."""
    budget = budget if budget is not None else [MAX_PARTS]
    budget[0] -= 1
    part = Message()
    if sections is not None:
        sections[id(part)] = section or "1"
    if budget[0] < 0 or section.count(".") >= MAX_DEPTH or not isinstance(structure, tuple | list) or not structure:
        part["Content-Type"] = "text/plain"
        return part
    if isinstance(structure[0], list | tuple):  # multipart: [parts...] subtype params disposition ...
        children, rest = _parts_of(structure)
        subtype = _text(rest[0]) if rest else "mixed"
        part["Content-Type"] = f"multipart/{subtype or 'mixed'}"
        prefix = f"{section}." if section else ""
        payload: list[Message | str] = []
        for number, child in enumerate(children[:MAX_PARTS], 1):
            if budget[0] <= 0:
                break
            payload.append(skeleton(child, sections, f"{prefix}{number}", budget))
        part.set_payload(payload)
        return part
    maintype, subtype = _text(structure[0]) or "application", _text(structure[1]) if len(structure) > 1 else "octet-stream"
    part["Content-Type"] = f"{maintype}/{subtype}" + _parameters(structure[2] if len(structure) > 2 else None)
    disposition = _disposition(structure, maintype, subtype)
    if disposition is not None:
        kind, parameters = disposition
        part["Content-Disposition"] = kind + _parameters(parameters)
    part.set_payload("")
    return part


def _parts_of(structure: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """A multipart BODYSTRUCTURE's parts (some servers send them as one list; at most MAX_PARTS,
    and a few more for the caller to cut), and what follows them (subtype, parameters, ...)."""
    children: list[Any] = []
    rest = list(structure)
    while rest and isinstance(rest[0], list | tuple) and len(children) <= MAX_PARTS:
        head = rest.pop(0)
        if isinstance(head, list):
            children.extend(head[:MAX_PARTS])
        else:
            children.append(head)
    return children, rest


def _disposition(structure: Sequence[Any], maintype: str, subtype: str) -> tuple[str, Any] | None:
    # single part: type subtype params id description encoding size [envelope body lines | lines] md5 disposition ...
    at = 9 if maintype == "text" else 11 if (maintype, subtype) == ("message", "rfc822") else 8
    value = structure[at] if len(structure) > at else None
    if isinstance(value, tuple | list) and value and isinstance(value[0], bytes | str):
        return _text(value[0]) or "inline", value[1] if len(value) > 1 else None
    return None


def _parameters(parameters: Any) -> str:
    if not isinstance(parameters, tuple | list):
        return ""
    text = ""
    for index in range(0, min(len(parameters) - 1, 2 * MAX_PARAMETERS), 2):
        name, value = _text(parameters[index]), _text(parameters[index + 1])
        if not re.fullmatch(r"[A-Za-z0-9*_.-]{1,64}", name):
            continue
        value = value.replace("\\", "").replace('"', "").replace("\r", " ").replace("\n", " ")[:1000]
        text += f"; {name}={value}" if name.endswith("*") else f'; {name}="{value}"'
    return text


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else ""


# -- the agent ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImapFolder:
    """A folder crawled, and whose mailbox it is."""

    user: str  # the mailbox's user, or PUBLIC_FOLDERS
    name: str  # as the server names it
    owner: str | None  # whose own mailbox it is


class ImapAgent(Agent):
    """Lists the messages (and attachments) of an IMAP server's folders, with their readers."""

    scheme: ClassVar[str] = "imap"
    Options: ClassVar[type[BaseModel]] = ImapOptions
    gives_access: ClassVar[bool] = True

    def __init__(self, source: str, options: BaseModel) -> None:
        super().__init__(source, options)
        self.imap = ImapOptions.model_validate(options)
        self._password: str | None = None
        self._skipped = 0
        self._namespaces: dict[str, Any] = {}  # by user: NAMESPACE's answer, to name a folder as others see it
        # the fetches' connections (the listing logs in on one of its own: a fetch's SELECT
        # must never move the folder a listing reads)
        self.connections = Connections(self._login)

    # -- the Agent interface ----------------------------------------------------------------

    def references(self, since: datetime | None) -> Iterator[Reference]:
        """Every message (and attachment) of every folder crawled (``since`` is ignored)."""
        self._skipped = 0
        for user in [*self.imap.users, *([PUBLIC_FOLDERS] if self.imap.public_folders else [])]:
            listing = _Listing(self, user)
            try:
                for folder in self._folders(listing.connection, user):
                    count = 0
                    for reference in self._folder_references(listing, folder):
                        count += reference.parent is None
                        yield reference
                    logger.info("imap: %d messages listed in %s of %s", count, folder.name, user)
            finally:
                listing.close()

    def skipped(self) -> int:
        return self._skipped

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        """The message, or one of its attachments, read with the folder's access list now."""
        match = _KEY.fullmatch(key)
        if match is None or self.refusal(key) is not None:
            return None
        user, name, uid = match["user"], match["folder"], int(match["uid"])
        folder = ImapFolder(user, name, None if user == PUBLIC_FOLDERS else user)
        with self.connections.use(user) as client, self._errors(f"folder {name} of {user}"):
            try:
                selected = client.select_folder(name, readonly=True)
            except imaplib.IMAP4.abort:
                raise
            except imaplib.IMAP4.error as error:
                if not _nonexistent(error):
                    raise
                logger.debug("imap: folder %s of %s is gone", name, user)
                return None
            if int(selected.get(b"UIDVALIDITY", 0)) != int(match["validity"]):
                return None  # renumbered: listed again under new keys
            access, unreadable = self._access(client, folder)
            if match["number"] is not None:
                content = self._attachment(client, key, uid, int(match["number"]))
            else:
                content = self._message(client, key, uid)
        if content is None:
            return None
        if max_bytes and len(content.body) > max_bytes:
            raise DocumentTooLarge(key)
        return Content(content.body, content.content_type, content.name, access=access, access_unreadable=unreadable)

    def refusal(self, key: str) -> str | None:
        """Why the listing would not name ``key``: a user or a folder the source does not crawl."""
        match = _KEY.fullmatch(key)
        if match is None:
            return "not a message's or an attachment's key (<user>/<folder>/<UIDVALIDITY>/<UID>)"
        user, folder = match["user"], match["folder"]
        if user == PUBLIC_FOLDERS and not self.imap.public_folders:
            return "public folders are not crawled (public_folders = false)"
        if user != PUBLIC_FOLDERS and user not in self.imap.users:
            return f"the mailbox of {user!r} is not crawled (not in users)"
        if not self.imap.takes(folder):
            return f"folder {folder!r} is not crawled (include/exclude)"
        if match["number"] is not None and not self.imap.attachments:
            return "attachments are not crawled (attachments = false)"
        return None

    def close(self) -> None:
        self.connections.close()

    # -- connections ------------------------------------------------------------------------

    def _login(self, user: str) -> IMAPClient:
        """A new connection logged in as ``user`` (the crawl's account itself for public folders)."""
        import imapclient  # only a crawl of an imap source needs it

        options = self.imap
        if self._password is None:
            try:
                self._password = required_secret(options.password_secret, TABLE)
            except SecretError as error:
                raise AgentError(str(error)) from None
        where = f"the IMAP server {options.server}:{options.port_number}"
        context = ssl.create_default_context(cafile=options.ca_file or None)
        try:
            client = imapclient.IMAPClient(
                options.server,
                port=options.port_number,
                ssl=options.tls == "implicit",
                ssl_context=context,
                timeout=options.timeout,
            )
            if options.tls == "starttls":
                client.starttls(context)
        except (OSError, ssl.SSLError, imaplib.IMAP4.error) as error:
            raise AgentError(f"{where} cannot be reached: {self._scrubbed(error)}") from None
        try:
            if user == PUBLIC_FOLDERS:
                client.plain_login(options.username, self._password)
            else:
                client.plain_login(options.username, self._password, authorization_identity=user)
        except (OSError, imaplib.IMAP4.error) as error:
            with contextlib.suppress(Exception):
                client.shutdown()
            who = "the crawl's account" if user == PUBLIC_FOLDERS else f"the crawl's account for the mailbox of {user!r}"
            raise AgentError(
                f"{where} refused {who} ({self._scrubbed(error)}): check username, password_secret and proxy rights,"
                " and the server's limit of connections per user"
            ) from None
        logger.debug("imap: logged in to %s as %s", where, options.username if user == PUBLIC_FOLDERS else f"{user} (proxy)")
        return client

    def _scrubbed(self, error: BaseException) -> str:
        text = " ".join(str(error).split())[:300] or type(error).__name__
        return text.replace(self._password, "***") if self._password else text

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """A connection's or a command's failure (a timeout, a BYE, an answer the client cannot
        read) as AgentError: the crawl fails or the document keeps its state, nothing is
        removed. The connection is given up (Connections.use), the next use logs in again."""
        try:
            yield
        except (OSError, ssl.SSLError, imaplib.IMAP4.error) as error:
            raise AgentError(f"the IMAP server failed while reading {what}: {self._scrubbed(error)}") from None

    # -- listing ----------------------------------------------------------------------------

    def _folders(self, client: IMAPClient, user: str) -> list[ImapFolder]:
        """The folders crawled of the user's personal namespace (or of the public namespaces)."""
        with self._errors(f"the folders of {user}"):
            namespaces = self._namespaces[user] = client.namespace()
            wanted = namespaces.shared if user == PUBLIC_FOLDERS else namespaces.personal
            others = [
                _text(prefix)
                for group in (namespaces.personal, namespaces.other, namespaces.shared)
                if group is not wanted
                for prefix, _separator in group or ()
            ]
            folders: list[ImapFolder] = []
            for prefix, _separator in wanted or ():
                for flags, _delimiter, name in client.list_folders("", _text(prefix) + "*"):
                    if any(_text(flag).lower() in ("\\noselect", "\\nonexistent") for flag in flags):
                        continue
                    if any(
                        prefix_other and name.startswith(prefix_other)
                        for prefix_other in others
                        if len(prefix_other) > len(_text(prefix))
                    ):
                        continue  # another namespace's, inside this one's prefix (Dovecot's shared/ under "")
                    if not self.imap.takes(name):
                        logger.debug("imap: folder %s of %s is not crawled (include/exclude)", name, user)
                        continue
                    folders.append(ImapFolder(user, name, None if user == PUBLIC_FOLDERS else user))
        return sorted(folders, key=lambda folder: folder.name)

    def _access(self, client: IMAPClient, folder: ImapFolder) -> tuple[Access | None, str | None]:
        """The folder's access; (None, why) when the server refuses a list (a NO: the crawl's
        account lacks ``a``). A user's own folder's list is read twice, under the owner's name and
        under the others' (``mailbox_access``). A connection that fails raises (the caller's ``_errors``)."""
        where = f"{folder.user}/{folder.name}" if folder.user != PUBLIC_FOLDERS else f"public folder {folder.name}"
        own = self._acl(client, (folder.name,), where)
        if isinstance(own, str):
            return None, own
        if folder.owner is None:
            return folder_access(own, self.imap, None, where)
        namespaces = self._namespaces.get(folder.user) or client.namespace()
        self._namespaces[folder.user] = namespaces
        try:
            names = others_names(
                [(_text(p), _text(s)) for p, s in namespaces.personal or ()],
                [(_text(p), _text(s)) for p, s in namespaces.other or ()],
                folder.owner,
                folder.name,
            )
        except Unmappable as error:
            return None, f"the name others see {where} under is not certain ({error})"
        others = None if names is None else self._acl(client, names, f"{where} as the others see it")
        if isinstance(others, str):
            return None, others
        return mailbox_access(own, others, self.imap, folder.owner, where)

    def _acl(self, client: IMAPClient, names: Sequence[str], where: str) -> list[tuple[str, str]] | str:
        """The entries of the first of ``names`` that exists (GETACL), or why none can be read."""
        for name in names:
            try:
                entries = client.getacl(name)
            except imaplib.IMAP4.abort:
                raise
            except imaplib.IMAP4.error as error:
                logger.debug("imap: the access list of %s (%s) cannot be read: %s", where, name, self._scrubbed(error))
                if _nonexistent(error):
                    continue
                return f"the crawl's account may not read the IMAP access list of {where} (it needs the right 'a')"
            return [(_text(who), _text(rights)) for who, rights in entries]
        return f"the IMAP access list of {where} cannot be read: no folder {' or '.join(names)}"

    def _folder_references(self, listing: _Listing, folder: ImapFolder) -> Iterator[Reference]:
        """A folder's messages, described FETCH_BATCH at a time; a batch the client cannot read
        (a hostile message's structure longer than imaplib's line limit) is described again one
        message at a time on a new connection, and a message that still cannot be is skipped."""
        what = f"folder {folder.name} of {folder.user}"
        with self._errors(what):
            validity, exists = listing.select(folder.name)
            access, unreadable = self._access(listing.connection, folder)
        uids = listing.uids(folder.name, validity) if exists else []
        failures = 0
        for start in range(0, len(uids), FETCH_BATCH):
            batch = uids[start : start + FETCH_BATCH]
            try:
                with self._errors(what):
                    described = listing.connection.fetch(batch, [*DESCRIBE])
            except AgentError:
                described = {}
                for uid in batch:
                    listing.renew(folder.name, validity)
                    try:
                        with self._errors(what):
                            described.update(listing.connection.fetch([uid], [*DESCRIBE]))
                    except AgentError as error:
                        failures += 1
                        self._skipped += 1
                        logger.warning("imap: message %d of %s cannot be described: skipped (%s)", uid, what, error)
                        if failures > MAX_FAILURES:
                            raise AgentError(f"more than {MAX_FAILURES} messages of {what} cannot be described") from None
                listing.renew(folder.name, validity)
            for uid in batch:
                data = described.get(uid)
                if data is not None:  # expunged since listed, or skipped
                    yield from self._message_references(folder, validity, uid, data, access, unreadable)

    def _message_references(
        self, folder: ImapFolder, validity: int, uid: int, data: dict[bytes, Any], access: Access | None, unreadable: str | None
    ) -> Iterator[Reference]:
        key = f"{folder.user}/{folder.name}/{validity}/{uid}"
        head_bytes = next((value for name, value in data.items() if name.startswith(b"BODY[HEADER.FIELDS")), b"")
        head = BytesHeaderParser(policy=email.policy.compat32).parsebytes(head_bytes if isinstance(head_bytes, bytes) else b"")
        own_id = clean_message_id(raw_header(head, "message-id")) or f"{folder.name}/{validity}/{uid}"
        fields, metadata, modified = header_fields(head, own_id, None)
        size = _size(data)
        found: list[tuple[Attachment, str]] = []
        if size <= self.imap.max_message_bytes:
            found = _attachments_of(data.get(b"BODYSTRUCTURE"), key)
        link = self._imap_url(folder, validity, uid)
        fields.update(folder_s=folder.name, mailbox_s=folder.user, has_attachments_b=bool(found), display_url=link)
        token = f"{validity}.{uid}"
        yield Reference(key, token, modified, fields, metadata, access=access, access_unreadable=unreadable)
        if not self.imap.attachments:
            return
        for attachment, section in found:
            own = attachment_fields(fields, attachment, self.url_for(key))
            own["display_url"] = f"{link}/;SECTION={section}"
            yield Reference(
                attachment_key(key, attachment), token, modified, own, {}, parent=key, access=access, access_unreadable=unreadable
            )

    # -- reading ----------------------------------------------------------------------------

    def _message(self, client: IMAPClient, key: str, uid: int) -> Content | None:
        """The message's body: its size asked first, then at most max_message_bytes + 1 bytes
        read (a server that states a smaller size than it sends is not believed)."""
        limit = self.imap.max_message_bytes
        found = client.fetch([uid], ["RFC822.SIZE"])
        if uid not in found:
            return None  # expunged
        size = _size(found[uid])
        if size > limit:
            return too_large(size, limit)
        raw = _item(client.fetch([uid], [f"BODY.PEEK[]<0.{limit + 1}>"]).get(uid, {}), b"BODY[]")
        if raw is None:
            return None
        if len(raw) > limit:
            return too_large(len(raw), limit)
        return contents(raw, key)[0]

    def _attachment(self, client: IMAPClient, key: str, uid: int, number: int) -> Content | None:
        """One attachment: its part found in the message's structure, its header and at most
        max_message_bytes (encoded: a third more) of its bytes read, not the whole message."""
        found = client.fetch([uid], ["RFC822.SIZE", "BODYSTRUCTURE"])
        if uid not in found or _size(found[uid]) > self.imap.max_message_bytes:
            return None
        wanted = [(attachment, section) for attachment, section in _attachments_of(found[uid].get(b"BODYSTRUCTURE"), key)]
        match = next(((attachment, section) for attachment, section in wanted if attachment.number == number), None)
        if match is None:
            return None
        attachment, section = match
        bound = self.imap.max_message_bytes * 4 // 3 + 4096
        read = client.fetch([uid], [f"BODY.PEEK[{section}.MIME]", f"BODY.PEEK[{section}]<0.{bound + 1}>"]).get(uid, {})
        head, body = _item(read, f"BODY[{section}.MIME]".encode()), _item(read, f"BODY[{section}]".encode())
        if head is None or body is None or len(body) > bound:
            logger.debug("imap: attachment %d of %s cannot be read or is too large: skipped", number, key)
            return None
        part = email.message_from_bytes(head + body, policy=email.policy.compat32)
        return attachment_content(key, Attachment(attachment.number, attachment.filename, part), self.imap.max_message_bytes)

    def _imap_url(self, folder: ImapFolder, validity: int, uid: int) -> str:
        """RFC 5092: imap://[user@]server[:port]/<folder>;UIDVALIDITY=<n>/;UID=<uid> (the user of
        a personal mailbox; a public folder's without one)."""
        port = "" if self.imap.port_number in (143, 993) else f":{self.imap.port_number}"
        host = f"[{self.imap.server}]" if ":" in self.imap.server else self.imap.server
        user = "" if folder.user == PUBLIC_FOLDERS else quote(folder.user, safe="") + "@"
        return f"imap://{user}{host}{port}/{quote(folder.name, safe='/')};UIDVALIDITY={validity}/;UID={uid}"


DESCRIBE = ("RFC822.SIZE", "BODYSTRUCTURE", _HEADER_ITEM)
UID_PAGE = 50_000  # UIDs searched at once when a folder's whole answer is too long
MAX_FAILURES = 20  # messages of a folder that cannot be described before the listing fails


def _size(data: dict[bytes, Any]) -> int:
    """RFC822.SIZE; a message without one counts as too large to trust (never as 0)."""
    value = data.get(b"RFC822.SIZE")
    return int(value) if isinstance(value, int) else 1 << 62


def _item(data: dict[bytes, Any], name: bytes) -> bytes | None:
    """A FETCH item by its name, whatever partial range the server appends (``BODY[]<0>``)."""
    for item, value in data.items():
        if (item == name or item.startswith(name + b"<")) and isinstance(value, bytes):
            return value
    return None


def _nonexistent(error: BaseException) -> bool:
    """Whether a NO says the folder does not exist (RFC 5530's NONEXISTENT, or Dovecot's and
    Cyrus's words), and nothing else: any other failure must not read as "gone"."""
    text = str(error).lower()
    return "nonexistent" in text or "doesn't exist" in text or "does not exist" in text


def _attachments_of(structure: Any, key: str) -> list[tuple[Attachment, str]]:
    """The attachments a BODYSTRUCTURE shows, each with its IMAP section number."""
    sections: dict[int, str] = {}
    try:
        found = list(attachments(skeleton(structure, sections)))
    except Exception as error:  # noqa: BLE001 - a structure the skeleton cannot take: no attachments
        logger.debug("imap: the structure of %s cannot be read (%s): no attachments listed", key, type(error).__name__)
        return []
    return [(attachment, sections.get(id(attachment.part), "1")) for attachment in found]


class _Listing:
    """The listing's own connection (never a fetch's): a fetch's SELECT must not move the folder
    it reads. ``renew`` logs in again after a command the client could not read, and selects
    the folder again, which must still have its UIDVALIDITY."""

    def __init__(self, agent: ImapAgent, user: str) -> None:
        self.agent, self.user = agent, user
        self.connection: IMAPClient = agent._login(user)  # noqa: SLF001 - the agent's own helper

    def select(self, folder: str) -> tuple[int, int]:
        try:
            selected = self.connection.select_folder(folder, readonly=True)
        except imaplib.IMAP4.abort:
            raise
        except imaplib.IMAP4.error as error:
            raise AgentError(f"folder {folder} of {self.user} cannot be opened: {self.agent._scrubbed(error)}") from None  # noqa: SLF001
        return int(selected.get(b"UIDVALIDITY", 0)), int(selected.get(b"EXISTS", 0))

    def uids(self, folder: str, validity: int) -> list[int]:
        """The folder's UIDs: one SEARCH, or, when its answer is longer than the client reads
        (imaplib's line limit: a folder of some 150,000 messages), UID ranges of UID_PAGE."""
        what = f"folder {folder} of {self.user}"
        try:
            with self.agent._errors(what):  # noqa: SLF001
                return sorted(self.connection.search("ALL"))
        except AgentError:
            self.renew(folder, validity)
        with self.agent._errors(what):  # noqa: SLF001
            following = int(self.connection.folder_status(folder, ["UIDNEXT"]).get(b"UIDNEXT", 0))
            found: list[int] = []
            for start in range(1, following, UID_PAGE):
                found.extend(self.connection.search(["UID", f"{start}:{min(start + UID_PAGE, following) - 1}"]))
        return sorted(set(found))

    def renew(self, folder: str, validity: int) -> None:
        self.close()
        self.connection = self.agent._login(self.user)  # noqa: SLF001
        with self.agent._errors(f"folder {folder} of {self.user}"):  # noqa: SLF001
            if self.select(folder)[0] != validity:
                raise AgentError(f"folder {folder} of {self.user} was renumbered while it was listed")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.connection.logout()


class Connections:
    """Logged-in connections by user, each used by one thread at a time (imapclient's are not
    thread-safe): at most PER_USER per user (a fetch waits for one: servers limit connections
    per user, Dovecot to 10), at most MAX_IDLE kept idle in all (the oldest logged out). A
    connection whose use raised is logged out, never used again."""

    PER_USER = 4
    MAX_IDLE = 8

    def __init__(self, login: Callable[[str], IMAPClient]) -> None:
        self.login = login
        self.condition = threading.Condition()
        self.idle: list[tuple[str, IMAPClient]] = []  # oldest first
        self.count: dict[str, int] = {}
        self.closed = False

    @contextlib.contextmanager
    def use(self, user: str) -> Iterator[IMAPClient]:
        client = self._take(user)
        try:
            yield client
        except BaseException:
            self._drop(user, client)
            raise
        self._give_back(user, client)

    def _take(self, user: str) -> IMAPClient:
        with self.condition:
            while True:
                for index, (owner, client) in enumerate(self.idle):
                    if owner == user:
                        del self.idle[index]
                        return client
                if self.count.get(user, 0) < self.PER_USER:
                    self.count[user] = self.count.get(user, 0) + 1
                    break
                self.condition.wait()
        try:
            return self.login(user)
        except BaseException:
            with self.condition:
                self.count[user] -= 1
                self.condition.notify_all()
            raise

    def _give_back(self, user: str, client: IMAPClient) -> None:
        surplus: list[tuple[str, IMAPClient]] = []
        with self.condition:
            if self.closed:
                surplus.append((user, client))
            else:
                self.idle.append((user, client))
                while len(self.idle) > self.MAX_IDLE:
                    surplus.append(self.idle.pop(0))
            for owner, _ in surplus:
                self.count[owner] -= 1
            self.condition.notify_all()
        for _, idle in surplus:
            with contextlib.suppress(Exception):
                idle.logout()

    def _drop(self, user: str, client: IMAPClient) -> None:
        with self.condition:
            self.count[user] -= 1
            self.condition.notify_all()
        with contextlib.suppress(Exception):
            client.shutdown()

    def close(self) -> None:
        with self.condition:
            self.closed = True
            idle, self.idle = self.idle, []
            for owner, _ in idle:
                self.count[owner] -= 1
            self.condition.notify_all()
        for _, client in idle:
            with contextlib.suppress(Exception):
                client.logout()
