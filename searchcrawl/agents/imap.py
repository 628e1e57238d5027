"""The ``imap`` source type: the folders of mail servers (Dovecot, Cyrus, Exchange's IMAP), with
each folder's RFC 4314 access list as who may read its messages.

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
again with every message read. An identifier with the ``r`` right reads; one with a negative
``r`` (``-bob``) is denied, whatever the groups grant; the crawl's account is nobody's reader.
``$name`` (a Dovecot group) is ``group_token``, ``anyone`` ``anyone_token``, ``authenticated``
``authenticated_token`` (none by default: such a grant is left out), ``owner`` and every other
identifier ``user_token``. In a user's own mailbox the user reads unless the list says otherwise
(Dovecot hides the owner's implicit entry from other logins). A folder whose list cannot be read
(the crawl account lacks ``a``, or an identifier is no token) keeps its messages out of the
index (status 927): never shown to all.

Changes: a message's token is its UIDVALIDITY and UID, which IMAP never reuses for other
content: a maintenance crawl reads the bodies of new messages only, and a folder whose rights
changed has its messages' access updated in Solr without reading them again (the 304 path of
every agent). Every crawl lists every folder completely (UIDs, sizes, structures and a few
headers: about a kilobyte a message, from the server's index): an expunged or moved message
leaves the index, a folder whose UIDVALIDITY changed is read again under new keys, a folder that
was deleted takes its messages. A server that cannot be reached, a login refused, or a folder
that fails to list fails the crawl: nothing is removed.

Limits (hostile mail): a message larger than ``max_message_bytes`` is indexed by its headers with
a note; header fields are read from at most HEADER_BYTES bytes; everything a message holds is
read as in a mail archive. Passwords never reach a log or an error message.
"""

from __future__ import annotations

import contextlib
import email.policy
import fnmatch
import ipaddress
import logging
import re
import ssl
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from email.message import Message
from email.parser import BytesHeaderParser
from typing import TYPE_CHECKING, Any, ClassVar, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from searchcrawl.access.tokens import Access, AccessError, Grant
from searchcrawl.agents.base import Agent, AgentError, Content, DocumentTooLarge, Reference
from searchcrawl.agents.messages import (
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
from searchcrawl.system.secrets import SecretError, required_secret

if TYPE_CHECKING:
    from imapclient import IMAPClient

logger = logging.getLogger(__name__)

TABLE = "imap"
PUBLIC_FOLDERS = "#public"  # the user part of public folders' keys (no user name starts with #)
HEADERS = "SUBJECT FROM TO CC DATE MESSAGE-ID LIST-ID REFERENCES IN-REPLY-TO"
HEADER_BYTES = 64 * 1024  # of a message's header fields, read at listing
FETCH_BATCH = 100  # messages described per FETCH at listing
_HEADER_ITEM = f"BODY.PEEK[HEADER.FIELDS ({HEADERS})]<0.{HEADER_BYTES}>"
_KEY = re.compile(r"(?P<user>[^/]+)/(?P<folder>.+)/(?P<validity>\d+)/(?P<uid>\d+)(?:/attachment/(?P<number>\d+)-[^/]*)?")
_USER = re.compile(r"[^/#\s\x00-\x1f][^/\s\x00-\x1f]{0,254}")
_SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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
        if not _SECRET_NAME.fullmatch(value):
            raise ValueError("expected the NAME of an environment variable holding the password (letters, digits, '_')")
        return value

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
        if self.tls == "none" and not _loopback(self.server):
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


def _loopback(server: str) -> bool:
    if server == "localhost":
        return True
    try:
        return ipaddress.ip_address(server).is_loopback
    except ValueError:
        return False


# -- access lists ------------------------------------------------------------------------------


def folder_access(
    entries: Sequence[tuple[str, str]], options: ImapOptions, owner: str | None, where: str
) -> tuple[Access | None, str | None]:
    """The access of a folder's messages from its RFC 4314 entries (identifier, rights): its
    readers and those denied; ``owner``: the user whose own mailbox it is. (None, why) when an
    identifier cannot be a token: the folder's messages are shown to no one."""
    allow: list[Grant] = []
    deny: list[Grant] = []
    owner_listed = False
    try:
        for identifier, rights in entries:
            negative = identifier.startswith("-")
            name = identifier[1:] if negative else identifier
            name = name[1:] if name.startswith("#") else name  # Dovecot: an entry of its global ACL file
            if name == options.username:
                continue  # the crawl's own account reads everything it indexes: nobody's reader
            if owner is not None and name in ("owner", owner):
                owner_listed = owner_listed or not negative
            if "r" not in rights:
                continue
            token = _identifier_token(name, options, owner)
            if token is None:
                logger.debug("imap: %s: %r reads, and is no one's token (authenticated_token is not set): left out", where, name)
                continue
            grant = Grant.of(token, f"IMAP ACL of {where}: {identifier} {rights}")
            (deny if negative else allow).append(grant)
        if owner is not None and not owner_listed:
            allow.append(Grant.of(options.user_token.replace("{id}", owner), f"IMAP: {where} is {owner}'s own mailbox"))
    except AccessError as error:
        return None, f"the IMAP access list of {where} holds an identifier that is no token ({error})"
    return Access.of(allow, deny, name=f"IMAP folder {where}"), None


def _identifier_token(name: str, options: ImapOptions, owner: str | None) -> str | None:
    if name == "anyone":
        return options.anyone_token
    if name == "authenticated":
        return options.authenticated_token
    if name == "owner":
        return options.user_token.replace("{id}", owner) if owner else None
    if name.startswith("$"):
        return options.group_token.replace("{id}", name[1:])
    return options.user_token.replace("{id}", name)


# -- message structures ------------------------------------------------------------------------


def skeleton(structure: Any, sections: dict[int, str] | None = None, section: str = "", depth: int = 0) -> Message:
    """A message of headers only, built from the server's BODYSTRUCTURE: the attachments found in
    it (``messages.attachments``) are those found in the message itself, numbered alike.
    ``sections``: filled with each part's IMAP section number (RFC 3501), by ``id`` of the part."""
    part = Message()
    if sections is not None:
        sections[id(part)] = section or "1"
    if depth > 20 or not isinstance(structure, tuple | list) or not structure:
        part["Content-Type"] = "text/plain"
        return part
    if isinstance(structure[0], list | tuple):  # multipart: [parts...] subtype params disposition ...
        children, rest = [], list(structure)
        while rest and isinstance(rest[0], list | tuple):
            head = rest.pop(0)
            if isinstance(head, list):
                children.extend(head)
            else:
                children.append(head)
        subtype = _text(rest[0]) if rest else "mixed"
        part["Content-Type"] = f"multipart/{subtype or 'mixed'}"
        prefix = f"{section}." if section else ""
        part.set_payload(
            [skeleton(child, sections, f"{prefix}{number}", depth + 1) for number, child in enumerate(children[:1000], 1)]
        )
        return part
    maintype, subtype = _text(structure[0]) or "application", _text(structure[1]) if len(structure) > 1 else "octet-stream"
    part["Content-Type"] = f"{maintype}/{subtype}" + _parameters(structure[2] if len(structure) > 2 else None)
    disposition = _disposition(structure, maintype, subtype)
    if disposition is not None:
        kind, parameters = disposition
        part["Content-Disposition"] = kind + _parameters(parameters)
    part.set_payload("")
    return part


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
    for index in range(0, len(parameters) - 1, 2):
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
        self._local = threading.local()  # each thread's connections, by user: imapclient's are not thread-safe
        self._open: list[Any] = []
        self._lock = threading.Lock()

    # -- the Agent interface ----------------------------------------------------------------

    def references(self, since: datetime | None) -> Iterator[Reference]:
        """Every message (and attachment) of every folder crawled (``since`` is ignored)."""
        for user in [*self.imap.users, *([PUBLIC_FOLDERS] if self.imap.public_folders else [])]:
            client = self._client(user)
            for folder in self._folders(client, user):
                count = 0
                for reference in self._folder_references(client, folder):
                    count += reference.parent is None
                    yield reference
                logger.info("imap: %d messages listed in %s of %s", count, folder.name, user)

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        """The message, or one of its attachments, read with the folder's access list now."""
        match = _KEY.fullmatch(key)
        if match is None:
            return None
        user, name, uid = match["user"], match["folder"], int(match["uid"])
        if user not in self.imap.users and not (user == PUBLIC_FOLDERS and self.imap.public_folders):
            return None
        client = self._client(user)
        folder = ImapFolder(user, name, None if user == PUBLIC_FOLDERS else user)
        with self._errors(f"folder {name} of {user}"):
            try:
                selected = client.select_folder(name, readonly=True)
            except client.Error:
                logger.debug("imap: folder %s of %s is gone", name, user)
                return None
            if int(selected.get(b"UIDVALIDITY", 0)) != int(match["validity"]):
                return None  # renumbered: listed again under new keys
            access, unreadable = self._access(client, folder)
            found = client.fetch([uid], ["RFC822.SIZE"])
            if uid not in found:
                return None  # expunged
            size = int(found[uid].get(b"RFC822.SIZE", 0))
            parts: list[Attachment] = []
            if size > self.imap.max_message_bytes:
                body, parts = too_large(size, self.imap.max_message_bytes), []
            else:
                raw = client.fetch([uid], ["BODY.PEEK[]"]).get(uid, {}).get(b"BODY[]")
                if not isinstance(raw, bytes):
                    return None
                body, parts = contents(raw, key)
        content: Content | None = body
        if match["number"] is not None:
            content = self._attachment(key, parts, int(match["number"]))
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
        with self._lock:
            clients, self._open = self._open, []
        for client in clients:
            with contextlib.suppress(Exception):
                client.logout()

    # -- connections ------------------------------------------------------------------------

    def _client(self, user: str) -> IMAPClient:
        """This thread's connection logged in as ``user`` (the crawl's account for public folders)."""
        clients: dict[str, Any] = self._local.__dict__.setdefault("clients", {})
        if user not in clients:
            clients[user] = self._login(user)
            with self._lock:
                self._open.append(clients[user])
        return clients[user]

    def _login(self, user: str) -> IMAPClient:
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
        except (OSError, ssl.SSLError, imapclient.exceptions.IMAPClientError) as error:
            raise AgentError(f"{where} cannot be reached: {self._scrubbed(error)}") from None
        try:
            if user == PUBLIC_FOLDERS:
                client.plain_login(options.username, self._password)
            else:
                client.plain_login(options.username, self._password, authorization_identity=user)
        except (OSError, imapclient.exceptions.IMAPClientError) as error:
            with contextlib.suppress(Exception):
                client.shutdown()
            who = "the crawl's account" if user == PUBLIC_FOLDERS else f"the crawl's account for the mailbox of {user!r}"
            raise AgentError(
                f"{where} refused {who} ({self._scrubbed(error)}): check username, password_secret and proxy rights"
            ) from None
        logger.debug("imap: logged in to %s as %s", where, options.username if user == PUBLIC_FOLDERS else f"{user} (proxy)")
        return client

    def _scrubbed(self, error: BaseException) -> str:
        text = " ".join(str(error).split())[:300] or type(error).__name__
        return text.replace(self._password, "***") if self._password else text

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """A connection's failure as AgentError (the crawl fails, nothing removed); the
        connection is dropped, the next use logs in again."""
        try:
            yield
        except (TimeoutError, OSError, ssl.SSLError) as error:
            self._local.__dict__.get("clients", {}).clear()
            raise AgentError(f"the IMAP server failed while reading {what}: {self._scrubbed(error)}") from None

    # -- listing ----------------------------------------------------------------------------

    def _folders(self, client: IMAPClient, user: str) -> list[ImapFolder]:
        """The folders crawled of the user's personal namespace (or of the public namespaces)."""
        with self._errors(f"the folders of {user}"):
            namespaces = client.namespace()
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
        where = f"{folder.user}/{folder.name}" if folder.user != PUBLIC_FOLDERS else f"public folder {folder.name}"
        try:
            entries = client.getacl(folder.name)
        except client.Error as error:
            logger.debug("imap: the access list of %s cannot be read: %s", where, self._scrubbed(error))
            return None, f"the crawl's account may not read the IMAP access list of {where} (it needs the right 'a')"
        return folder_access([(_text(who), _text(rights)) for who, rights in entries], self.imap, folder.owner, where)

    def _folder_references(self, client: IMAPClient, folder: ImapFolder) -> Iterator[Reference]:
        with self._errors(f"folder {folder.name} of {folder.user}"):
            try:
                selected = client.select_folder(folder.name, readonly=True)
            except client.Error as error:
                raise AgentError(f"folder {folder.name} of {folder.user} cannot be opened: {self._scrubbed(error)}") from None
            validity = int(selected.get(b"UIDVALIDITY", 0))
            access, unreadable = self._access(client, folder)
            uids = sorted(client.search("ALL"))
        for start in range(0, len(uids), FETCH_BATCH):
            batch = uids[start : start + FETCH_BATCH]
            with self._errors(f"folder {folder.name} of {folder.user}"):
                described = client.fetch(batch, ["RFC822.SIZE", "BODYSTRUCTURE", _HEADER_ITEM])
            for uid in batch:
                data = described.get(uid)
                if data is not None:  # expunged since the search
                    yield from self._message_references(folder, validity, uid, data, access, unreadable)

    def _message_references(
        self, folder: ImapFolder, validity: int, uid: int, data: dict[bytes, Any], access: Access | None, unreadable: str | None
    ) -> Iterator[Reference]:
        key = f"{folder.user}/{folder.name}/{validity}/{uid}"
        head_bytes = next((value for name, value in data.items() if name.startswith(b"BODY[HEADER.FIELDS")), b"")
        head = BytesHeaderParser(policy=email.policy.compat32).parsebytes(head_bytes if isinstance(head_bytes, bytes) else b"")
        own_id = clean_message_id(raw_header(head, "message-id")) or f"{folder.name}/{validity}/{uid}"
        fields, metadata, modified = header_fields(head, own_id, None)
        size = int(data.get(b"RFC822.SIZE", 0))
        found: list[Attachment] = []
        sections: dict[int, str] = {}
        if size <= self.imap.max_message_bytes:
            try:
                found = list(attachments(skeleton(data.get(b"BODYSTRUCTURE"), sections)))
            except Exception as error:  # noqa: BLE001 - a structure the skeleton cannot take: no attachments
                logger.debug("imap: the structure of %s cannot be read (%s): no attachments listed", key, type(error).__name__)
        link = self._imap_url(folder, validity, uid)
        fields.update(folder_s=folder.name, mailbox_s=folder.user, has_attachments_b=bool(found), display_url=link)
        token = f"{validity}.{uid}"
        yield Reference(key, token, modified, fields, metadata, access=access, access_unreadable=unreadable)
        if not self.imap.attachments:
            return
        for attachment in found:
            own = attachment_fields(fields, attachment, self.url_for(key))
            own["display_url"] = f"{link}/;SECTION={sections.get(id(attachment.part), '1')}"
            yield Reference(
                attachment_key(key, attachment), token, modified, own, {}, parent=key, access=access, access_unreadable=unreadable
            )

    def _attachment(self, key: str, parts: list[Attachment], number: int) -> Content | None:
        if not self.imap.attachments:
            return None
        for attachment in parts:
            if attachment.number == number:
                return attachment_content(key, attachment, self.imap.max_message_bytes)
        return None

    def _imap_url(self, folder: ImapFolder, validity: int, uid: int) -> str:
        """RFC 5092: imap://[user@]server[:port]/<folder>;UIDVALIDITY=<n>/;UID=<uid> (the user of
        a personal mailbox; a public folder's without one)."""
        port = "" if self.imap.port_number in (143, 993) else f":{self.imap.port_number}"
        host = f"[{self.imap.server}]" if ":" in self.imap.server else self.imap.server
        user = "" if folder.user == PUBLIC_FOLDERS else quote(folder.user, safe="") + "@"
        return f"imap://{user}{host}{port}/{quote(folder.name, safe='/')};UIDVALIDITY={validity}/;UID={uid}"
