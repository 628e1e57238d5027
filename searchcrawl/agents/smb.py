"""The ``smb`` source type: the documents on Windows file shares, read over SMB 2/3.

```toml
type = "smb"

[smb]
roots = ["smb://fs1.example.org/documents/policies"]   # server, share, folder (optional)
username = "EXAMPLE\\crawler"          # or crawler@example.org
password_secret = "SMB_CRAWLER_PASSWORD" # the variable (or SMB_CRAWLER_PASSWORD_FILE) holding it
auth = "negotiate"                     # "ntlm" | "kerberos" | "negotiate" (Kerberos when it can, else NTLM)
encrypt = false                        # true: encrypt every share; false: as each share asks
servers = []                           # DFS link targets the crawl may reach beside the roots' servers
share_permissions = "read"             # "ignore": the shares' own permissions restrict no one
display = "file"                       # the link searchers get: "file" (file://server/share/path) or "smb"
include = ["*.pdf", "*.docx"]          # exclude, max_depth and hidden as in a files source
```

The library is ``smbprotocol`` (its ``smbclient`` module): SMB 2 and 3, signing always, and
encryption when the share asks for it (``encrypt = true`` asks it of every share), NTLM through
pyspnego, Kerberos where a ticket and the gssapi package are at hand (``auth = "kerberos"``).

Documents: every regular file under a root, walked folder by folder (names sorted), with the
rules of a files source (``include``, ``exclude``, ``max_depth``, ``hidden``: a name starting with
``.``, or the Windows hidden or system attribute). A document's URL is
``smb://server/share/path`` (the server's name lower-cased, the path as listed); its
``display_url`` the link searchers open (``display``): ``file://server/share/path`` (what Windows
opens as ``\\\\server\\share\\path``), or the smb URL (Linux and macOS file managers); the
source's ``display_urls`` rules may rewrite either (a web front of the share).
Indexed fields are those of a files source (``path_s`` as the UNC path, ``folder_s``,
``file_name_s``, ``size_l``, ``last_modified``), and the attributes mapping sees ``path``,
``folder``, ``file_name`` and ``extension``.

Who may read a file (``gives_access``): its NTFS security descriptor, read over SMB with each
listing (searchcrawl/access/ntfs.py: read entries only, inheritance as the server resolved it),
as ``sid:`` tokens, behind the share's own permissions (``share_permissions = "read"``: the
share's descriptor, asked of the server's srvsvc once a listing, smb_share_security.py).
Windows lets anyone pass through folders (the "bypass traverse checking" right every user has):
a folder's permissions restrict its files only through the entries the files inherit. A file
whose descriptor cannot be read (refused, malformed), or whose share's descriptor holds an entry
of an unknown kind, gives ``access_unreadable``: the file is not indexed (status 927), never
shown to all. The crawl's account needs to read the descriptors (READ_CONTROL: any user who can
list the folder, on most shares) and the shares' permissions: a share whose permissions cannot be
asked (refused, answered without a descriptor, no srvsvc pipe) fails the crawl, which removes
nothing, and the error says what to set (SHARE_PERMISSIONS_ADVICE): an account that reads them
(Windows: an administrator of the file server; Samba: the domain's Administrator, the one account
it maps to root, since it answers any other without a descriptor until the Administrator has asked
through the same worker: smb_share_security.py), or ``share_permissions = "ignore"`` where the
shares let everyone read and NTFS decides. A descriptor the server gives is the share's
permissions (Samba's Everyone: full control for a share without its own is what it enforces); a
missing one is never "everyone" (NO_DESCRIPTOR), so the index never depends on who asked before.

Changes: a file's token is its size and last write time: a maintenance crawl reads again only
the files whose size or time changed (then, ``modified_when = ["checksum"]``, re-indexes only
those whose content did); a change of permissions alone updates the access in Solr without
reading the file. Deletions: every crawl lists the roots completely; a file not listed leaves the
index. A server that does not answer, a root that is missing, a share that refuses the crawler,
or a folder that fails to list for another reason than a refusal fails the crawl: nothing is
removed (a transient failure). A folder the crawler may not list is skipped (DEBUG), and its
files leave the index.

Hostile servers: only the roots' servers and those named in ``servers`` are ever connected to:
a DFS referral to another server is refused (WARNING), and so is its folder, whose files are not
indexed. Reparse points other than DFS links (symbolic links, junctions, mount points) are not
followed. A name holding ``/``, ``\\``, a NUL or a control character, or ``.`` and ``..``, is
skipped. A fetch reads at most the size limit plus one byte; the listing holds the names of the
folders on its descent path only, at most 256 levels deep.
"""

from __future__ import annotations

import logging
import mimetypes
import posixpath
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal
from urllib.parse import quote, unquote, urlsplit

import smbclient
from pydantic import BaseModel, Field, field_validator, model_validator
from smbclient._io import SMBFileTransaction, SMBRawIO  # the transaction smbclient's own stat() uses
from smbprotocol.exceptions import SMBException, SMBOSError, SMBResponseException
from smbprotocol.file_info import InfoType
from smbprotocol.open import FilePipePrinterAccessMask, SMB2QueryInfoRequest, SMB2QueryInfoResponse

from searchcrawl.access.ntfs import parse_descriptor, read_access, share_access
from searchcrawl.access.tokens import Access, AccessUnreadable
from searchcrawl.agents.base import Agent, AgentError, Content, DocumentTooLarge, Reference
from searchcrawl.agents.files import MAX_FOLDER_DEPTH, TreeRules, file_reference, out_of_scope, path_out_of_scope
from searchcrawl.agents.smb_share_security import ShareSecurityUnreadable, share_security_descriptor
from searchcrawl.system.secrets import SecretError, checked_secret_name, required_secret

logger = logging.getLogger(__name__)

TABLE = "[smb]"
QUIET_LOGGERS = ("smbprotocol", "smbclient", "spnego")  # unless a level is set for them: WARNING
READ_CHUNK = 1 << 20
# file attributes (MS-FSCC 2.6)
HIDDEN, SYSTEM, DIRECTORY, REPARSE_POINT = 0x2, 0x4, 0x10, 0x400
DFS_TAG = 0x8000000A  # a DFS link's reparse tag: followed (a referral), unlike links and junctions
OWNER_GROUP_DACL = 0x1 | 0x2 | 0x4  # the security information a descriptor is asked with
# what a descriptor may take: 64 KiB, one SMB credit (a larger ask needs several, which servers
# refuse for a query); a larger descriptor (an ACL of thousands of entries) is BUFFER_TOO_SMALL:
# its file is not indexed (status 927)
DESCRIPTOR_BUFFER = 65536
FILE_OPEN_REPARSE_POINT = 0x00200000  # open a link itself, never what it points to
MAX_FOLDER_ENTRIES = 1_000_000  # a folder listing more (a hostile server's endless answer) fails the crawl
# NT statuses (MS-ERREF): smbprotocol maps some to no errno, others to one that misleads
ACCESS_DENIED = 0xC0000022
BUFFER_TOO_SMALL = 0xC0000023
SHARING_VIOLATION = 0xC0000043
GONE_STATUSES = frozenset({0xC0000034, 0xC000003A, 0xC0000056, 0xC0000225})  # name, path not found; delete pending; not found
#: A share answered without a security descriptor (a NULL pointer at level 502) is never read as
#: "everyone may read". Samba (4.17, measured) answers so to every account but the one it maps to
#: root (the domain's Administrator), for every share whatever its permissions, until the srvsvc
#: worker answering has opened its share database for root; Windows, for a share without a
#: descriptor of its own, such as its administrative shares, which admit administrators only.
NO_DESCRIPTOR = (
    "the server answered without a descriptor (Samba does to an account other than its Administrator, "
    "Windows for an administrative share)"
)
#: What an admin can do when a share's permissions cannot be read (said with the crawl's error).
SHARE_PERMISSIONS_ADVICE = (
    "the crawl's account must be able to read a share's permissions (srvsvc, level 502: on Windows "
    "an administrator of the file server; on Samba the domain's Administrator, the one account it "
    'maps to root), or set share_permissions = "ignore" in the source\'s [smb] table: then the '
    "shares' own permissions restrict no one and the files' NTFS permissions alone decide who finds "
    "a file (right only where every share lets everyone read)"
)
_SERVER = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\]")
_SHARE = re.compile(r"[^\x00-\x1f\"/\\\[\]:|<>+=;,*?]{1,80}")
_BAD_NAME = re.compile(r"[\x00-\x1f/\\]")


def status_of(error: BaseException) -> int | None:
    """The NT status an smbprotocol error carries, if any."""
    status = getattr(error, "ntstatus", None)
    if status is None:
        status = getattr(error, "status", None)
    return status if isinstance(status, int) else None


class ServerNotAdmitted(SMBException):
    """A connection to a server the source does not name (a DFS referral elsewhere)."""


class SmbRoot(BaseModel):
    """A root, parsed: ``smb://server/share/folder`` (the folder optional)."""

    server: str
    share: str
    folder: str = ""  # "/"-separated, no leading or trailing "/"

    @property
    def unc(self) -> str:
        return "\\\\" + "\\".join(part for part in (self.server, self.share, self.folder.replace("/", "\\")) if part)

    @property
    def key(self) -> str:
        return "/".join(part for part in (self.server, self.share, self.folder) if part)


def parse_root(value: Any) -> SmbRoot:
    """A root URL's server, share and folder; ValueError saying what is expected."""
    expected = "expected smb://server/share or smb://server/share/folder"
    if not isinstance(value, str) or "\x00" in value:
        raise ValueError(f"{expected}, got {value!r}")
    parts = urlsplit(value.strip())
    if parts.scheme.lower() != "smb" or parts.query or parts.fragment or "@" in parts.netloc:
        raise ValueError(f"{expected} (no user, query or fragment: credentials are the secret's), got {value!r}")
    server = parts.netloc.lower()
    if not _SERVER.fullmatch(server):
        raise ValueError(f"{expected}: {server!r} is no server name, got {value!r}")
    segments = [unquote(segment) for segment in parts.path.split("/") if segment]
    if not segments or not _SHARE.fullmatch(segments[0]):
        raise ValueError(f"{expected}: a share name is missing or not one, got {value!r}")
    for segment in segments[1:]:
        if segment in (".", "..") or _BAD_NAME.search(segment):
            raise ValueError(f"{expected}: {segment!r} is no folder name, got {value!r}")
    return SmbRoot(server=server, share=segments[0], folder="/".join(segments[1:]))


class SmbOptions(TreeRules):
    """The ``[smb]`` table of a source of type ``smb``."""

    roots: list[str] = Field(min_length=1)
    username: str | None = None
    password_secret: str | None = None
    auth: Literal["negotiate", "ntlm", "kerberos"] = "negotiate"
    encrypt: bool = False
    port: int = Field(default=445, ge=1, le=65535)
    timeout: float = Field(default=30.0, gt=0, le=600)
    servers: list[str] = Field(default_factory=list)
    share_permissions: Literal["read", "ignore"] = "read"
    display: Literal["file", "smb"] = "file"

    @field_validator("roots")
    @classmethod
    def _roots(cls, values: list[str]) -> list[str]:
        return list(dict.fromkeys(f"smb://{parse_root(value).key}" for value in values))

    @field_validator("servers")
    @classmethod
    def _servers(cls, values: list[str]) -> list[str]:
        for value in values:
            if not _SERVER.fullmatch(value):
                raise ValueError(f"expected a server's name or address, got {value!r}")
        return [value.lower() for value in values]

    @field_validator("password_secret")
    @classmethod
    def _secret_name(cls, value: str | None) -> str | None:
        return checked_secret_name(value)

    @model_validator(mode="after")
    def _credentials(self) -> SmbOptions:
        if self.auth != "kerberos" and not (self.username and self.password_secret):
            raise ValueError("NTLM needs 'username' and 'password_secret' (or auth = 'kerberos' with a ticket)")
        if self.password_secret and not self.username:
            raise ValueError("'password_secret' needs 'username'")
        keys = [parse_root(root).key.lower() for root in self.roots]
        for key in keys:
            for other in keys:
                if other != key and (key + "/").startswith(other + "/"):
                    raise ValueError(f"root smb://{key} is inside root smb://{other}: list the outer one alone")
        return self

    @property
    def parsed_roots(self) -> list[SmbRoot]:
        return [parse_root(root) for root in self.roots]


class _AdmittedConnections(dict[str, Any]):
    """smbclient's connection cache (a documented argument of its calls), which refuses to make
    a connection to a server the source does not admit: smbclient asks it for a connection
    before it opens one, to any server a DFS referral names."""

    def __init__(self, servers: set[str]) -> None:
        super().__init__()
        self.servers = servers

    def get(self, key: str, default: Any = None) -> Any:
        server = key.rsplit(":", 1)[0].lower()
        if server not in self.servers:
            raise ServerNotAdmitted(f"{server!r} is not a server of this source (add it to 'servers' to crawl it)")
        return super().get(key, default)


class SmbAgent(Agent):
    """Lists the regular files under ``smb://`` roots, with their NTFS permissions."""

    scheme: ClassVar[str] = "smb"
    Options: ClassVar[type[BaseModel]] = SmbOptions
    gives_access: ClassVar[bool] = True

    def __init__(self, source: str, options: BaseModel) -> None:
        super().__init__(source, options)
        self.smb = SmbOptions.model_validate(options)
        self.roots = self.smb.parsed_roots
        servers = {root.server for root in self.roots} | set(self.smb.servers)
        self.connections = _AdmittedConnections(servers)
        self._password: str | None = None
        self._lock = threading.Lock()
        # one SMB operation at a time on the agent's connections: the listing and the fetches run
        # in threads, and smbprotocol runs out of credits when they interleave (the library's
        # Python, not the network, is what a crawl of a share waits for)
        self._io = threading.RLock()
        self._shares: dict[tuple[str, str], Access | str] = {}  # the share's access, or why unreadable
        for name in QUIET_LOGGERS:  # a line per SMB message at INFO: the library's own, kept for DEBUG
            library = logging.getLogger(name)
            if library.level == logging.NOTSET:
                library.setLevel(logging.WARNING)
        if not mimetypes.inited:
            mimetypes.init()

    # -- connections ----------------------------------------------------------------------------

    def _kwargs(self) -> dict[str, Any]:
        """smbclient's arguments: the credentials (the secret read at first use), the port,
        encryption, the timeout and the admitted connections."""
        with self._lock:
            if self.smb.password_secret and self._password is None:
                try:
                    self._password = required_secret(self.smb.password_secret, TABLE)
                except SecretError as exc:
                    raise AgentError(str(exc)) from None
        return {
            "username": self.smb.username,
            "password": self._password,
            "port": self.smb.port,
            "encrypt": True if self.smb.encrypt else None,
            "connection_timeout": self.smb.timeout,
            "connection_cache": self.connections,
            "auth_protocol": self.smb.auth,
        }

    def close(self) -> None:
        smbclient.reset_connection_cache(fail_on_error=False, connection_cache=self.connections)

    def _failure(self, what: str, error: Exception, advice: str = "") -> AgentError:
        """An error of the server as AgentError naming what failed (and what to do), never a secret."""
        text = str(error)
        if self._password:
            text = text.replace(self._password, "***")
        return AgentError(f"{what}: {type(error).__name__}: {text[:300]}" + (f"; {advice}" if advice else ""))

    # -- URLs -----------------------------------------------------------------------------------

    def url_for(self, key: str) -> str:
        return "smb://" + quote(key, safe="/")

    def key_of(self, url: str) -> str | None:
        parts = urlsplit(url)
        if parts.scheme != "smb" or parts.query or parts.fragment:
            return None
        key = unquote(parts.netloc + parts.path)
        return key if self._locate(key) else None

    def _locate(self, key: str) -> tuple[SmbRoot, str] | None:
        """The root a key is under and its path relative to it."""
        if "\x00" in key or "\\" in key or posixpath.normpath(key) != key:
            return None
        for root in self.roots:
            if key.lower().startswith(root.key.lower() + "/"):
                return root, key[len(root.key) + 1 :]
        return None

    def refusal(self, key: str) -> str | None:
        located = self._locate(key)
        if located is None:
            return "not below a root"
        return path_out_of_scope(located[1], self.smb)

    @staticmethod
    def unc(key: str) -> str:
        return "\\\\" + key.replace("/", "\\")

    def display_url(self, key: str) -> str:
        if self.smb.display == "smb":
            return self.url_for(key)
        return "file://" + quote(key, safe="/")

    # -- listing --------------------------------------------------------------------------------

    def references(self, since: datetime | None) -> Iterator[Reference]:
        for root in self.roots:
            count = 0
            share = self._share_access(root)
            for reference in self._walk(root, share):
                count += 1
                yield reference
            logger.info("smb %s: %d files listed under %s", self.source, count, root.unc)

    def _share_access(self, root: SmbRoot) -> Access | str | None:
        """The share's permissions as access (None: ignored), or why they cannot be read (its
        files are then not indexed)."""
        if self.smb.share_permissions == "ignore":
            return None
        cached = self._shares.get((root.server, root.share.lower()))
        if cached is not None:
            return cached
        found: Access | str
        try:
            with self._io:
                descriptor = share_security_descriptor(root.server, root.share, **self._kwargs())
            if descriptor is None:  # never "everyone": see NO_DESCRIPTOR
                raise ShareSecurityUnreadable(NO_DESCRIPTOR)
            found = read_access(parse_descriptor(descriptor), f"permissions of share \\\\{root.server}\\{root.share}")
            logger.debug("smb %s: the permissions of share \\\\%s\\%s read", self.source, root.server, root.share)
        except ShareSecurityUnreadable as exc:
            # refused, no descriptor, no srvsvc pipe, a fault: the crawl fails, removes nothing and
            # says what to set; so a server that answers now with, now without a descriptor
            # (Samba) never moves the share's files out of the index and back, nor guesses
            raise self._failure(
                f"the permissions of share \\\\{root.server}\\{root.share} cannot be read", exc, SHARE_PERMISSIONS_ADVICE
            ) from None
        except AccessUnreadable as exc:
            found = f"the permissions of share \\\\{root.server}\\{root.share} cannot be read: {exc}"
            logger.warning("smb %s: %s; its files are not indexed", self.source, found)
        except (SMBException, OSError, ValueError) as exc:
            raise self._failure(f"share {root.server}\\{root.share} cannot be asked for its permissions", exc) from None
        self._shares[(root.server, root.share.lower())] = found
        return found

    def _walk(self, root: SmbRoot, share: Access | str | None) -> Iterator[Reference]:
        try:
            names = self._names(root.unc, root.unc)
        except (SMBException, OSError, ValueError) as exc:
            raise self._failure(f"root smb://{root.key} cannot be listed", exc) from None
        if names is None:
            raise AgentError(f"root smb://{root.key} cannot be listed: access denied")
        # each folder's files are behind the permissions of the share they are on: the root's, or
        # the share a DFS link leads to
        stack: list[tuple[str, Iterator[tuple[str, Any]], Access | str | None]] = [("", names, share)]
        while stack:
            rel, entries, folder_share = stack[-1]
            item = next(entries, None)
            if item is None:
                stack.pop()
                continue
            name, info = item
            child = f"{rel}/{name}" if rel else name
            attributes = info.file_attributes
            reason = self._skipped(name, attributes, info.ea_size)
            if reason is None:
                reason = out_of_scope(child, bool(attributes & DIRECTORY), self.smb)
            if reason is not None:
                deep = bool(attributes & DIRECTORY) and child.count("/") + 1 > MAX_FOLDER_DEPTH
                (logger.warning if deep else logger.debug)("smb %s: %r skipped: %s", self.source, child, reason)
                continue
            key = f"{root.key}/{child}"
            if attributes & DIRECTORY:
                try:
                    found = self._names(self.unc(key), key)
                except ServerNotAdmitted as exc:
                    logger.warning("smb %s: folder %s not crawled: a DFS referral to %s", self.source, self.unc(key), exc)
                    continue
                except (SMBException, OSError, ValueError) as exc:
                    raise self._failure(f"folder {self.unc(key)} cannot be listed", exc) from None
                if found is not None:
                    stack.append((child, found, self._linked_share(self.unc(key), folder_share)))
                continue
            reference = self._reference(key, info, folder_share)
            if reference is not None:
                yield reference

    def _linked_share(self, unc: str, above: Access | str | None) -> Access | str | None:
        """The share permissions of a folder's files: those of the share a DFS link at ``unc``
        leads to (smbclient's referral, cached when the folder was listed), else ``above``."""
        if self.smb.share_permissions == "ignore":
            return None
        parts = [part for part in unc.split("\\") if part]
        referral = smbclient.ClientConfig().lookup_referral(parts)
        if referral is None or [p for p in referral.dfs_path.split("\\") if p] != parts:
            return above  # not a link itself (below one, the link's own answer holds)
        target = [part for part in referral.target_hint.target_path.split("\\") if part]
        if len(target) < 2:
            return f"the DFS link {unc} leads nowhere readable ({referral.target_hint.target_path!r})"
        logger.debug("smb %s: %s is a DFS link to %s", self.source, unc, referral.target_hint.target_path)
        return self._share_access(SmbRoot(server=target[0].lower(), share=target[1]))

    def _skipped(self, name: str, attributes: int, tag: int) -> str | None:
        if name in (".", "..") or _BAD_NAME.search(name):
            return "a name no Windows file has"
        if attributes & REPARSE_POINT and not (attributes & DIRECTORY and tag == DFS_TAG):
            return "a reparse point (a link, a junction or a mount point): not followed"
        if not self.smb.hidden and attributes & (HIDDEN | SYSTEM):
            return "hidden (its Windows attribute)"
        return None

    def _names(self, unc: str, key: str) -> Iterator[tuple[str, Any]] | None:
        """A folder's entries, sorted by name, with their directory information; None when the
        crawler may not list it."""
        entries = []
        try:
            with self._io:
                listed = list(smbclient.scandir(unc, **self._kwargs()))
            for entry in listed:
                entries.append((entry.name, entry.smb_info))
                if len(entries) > MAX_FOLDER_ENTRIES:
                    raise AgentError(f"folder {unc} lists more than {MAX_FOLDER_ENTRIES} entries: not crawled")
        except (SMBOSError, SMBResponseException) as exc:
            if status_of(exc) == ACCESS_DENIED:  # a folder closed to the crawler (a sharing violation is not)
                logger.debug("smb %s: folder %s skipped: access denied", self.source, unc)
                return None
            raise
        return iter(sorted(entries, key=lambda entry: entry[0]))

    def _reference(self, key: str, info: Any, share: Access | str | None) -> Reference | None:
        unc = self.unc(key)
        access: Access | None = None
        unreadable: str | None = None
        try:
            if isinstance(share, str):
                raise AccessUnreadable(share)
            with self._io:
                descriptor = self._descriptor(unc)
            access = read_access(parse_descriptor(descriptor), f"NTFS ACL of {unc}")
            if share is not None:
                access = share_access(access, share)
        except AccessUnreadable as exc:
            unreadable = str(exc)
        except (SMBOSError, SMBResponseException) as exc:
            status = status_of(exc)
            if status == ACCESS_DENIED:
                unreadable = f"the NTFS ACL of {unc} cannot be read: access denied"
            elif status == BUFFER_TOO_SMALL:
                unreadable = f"the NTFS ACL of {unc} is larger than a descriptor can be"
            elif status in GONE_STATUSES:
                logger.debug("smb %s: %s vanished while listed", self.source, unc)
                return None
            else:  # a sharing violation, a server in trouble: the crawl fails, nothing is removed
                raise self._failure(f"the NTFS ACL of {unc} cannot be read", exc) from None
        except (SMBException, OSError, ValueError) as exc:  # ValueError: smbprotocol's "Failed to connect"
            raise self._failure(f"the NTFS ACL of {unc} cannot be read", exc) from None
        if unreadable:
            logger.debug("smb %s: %s not indexed: %s", self.source, unc, unreadable)
        folder, name = unc.rsplit("\\", 1)
        modified = info.last_write_time
        if modified.tzinfo is None:
            modified = modified.replace(tzinfo=UTC)
        return file_reference(
            key=key,
            token=f"{info.end_of_file}:{int(modified.timestamp() * 1_000_000)}",
            path=unc,
            folder=folder,
            name=name,
            size=info.end_of_file,
            modified=modified,
            display_url=self.display_url(key),
            access=access,
            unreadable=unreadable,
        )

    def _descriptor(self, unc: str) -> bytes:
        """The file's security descriptor (owner and DACL), in one compound request: open with
        READ_CONTROL, query, close (as smbclient's own stat())."""
        raw = SMBRawIO(unc, mode="r", share_access="rwd", desired_access=FilePipePrinterAccessMask.READ_CONTROL, **self._kwargs())
        with SMBFileTransaction(raw) as transaction:
            request = SMB2QueryInfoRequest()
            request["info_type"] = InfoType.SMB2_0_INFO_SECURITY
            request["output_buffer_length"] = DESCRIPTOR_BUFFER
            request["additional_information"] = OWNER_GROUP_DACL
            request["file_id"] = raw.fd.file_id

            def receive(sent: Any) -> bytes:
                response = raw.fd.connection.receive(sent)
                answer = SMB2QueryInfoResponse()
                answer.unpack(response["data"].get_value())
                return bytes(answer["buffer"].get_value())

            transaction += (request, receive)
        assert transaction.results is not None
        return bytes(transaction.results[0])

    # -- fetching -------------------------------------------------------------------------------

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        """The file's bytes, when the listing would list it now; None when it is gone."""
        located = self._locate(key)
        if located is None:
            logger.debug("smb %s: fetch of %r refused: not under a root", self.source, key)
            return None
        reason = path_out_of_scope(located[1], self.smb)
        if reason:
            logger.debug("smb %s: fetch of %r refused: %s", self.source, key, reason)
            return None
        unc = self.unc(key)
        with self._io:
            body = self._read(unc, max_bytes)
        if body is None:
            return None
        size = len(body)
        if max_bytes and size > max_bytes:
            raise DocumentTooLarge(f"{unc} has more than {max_bytes} bytes")
        name = key.rsplit("/", 1)[-1]
        content_type = mimetypes.guess_type(name, strict=False)[0] or "application/octet-stream"
        return Content(body=body, content_type=content_type, name=name)

    def _read(self, unc: str, max_bytes: int) -> bytes | None:
        """The file's bytes (at most ``max_bytes`` plus one), None when it is gone or is a link
        or a folder now."""
        try:
            # the file itself, never where a link swapped in since the listing points
            opened = smbclient.open_file(
                unc, mode="rb", buffering=0, share_access="rwd", create_options=FILE_OPEN_REPARSE_POINT, **self._kwargs()
            )
            with opened as handle:
                if (handle.fd.file_attributes or 0) & (REPARSE_POINT | DIRECTORY):
                    logger.debug("smb %s: %s refused: a link or a folder now", self.source, unc)
                    return None
                chunks: list[bytes] = []
                size = 0
                while not max_bytes or size <= max_bytes:
                    chunk = handle.read(READ_CHUNK if not max_bytes else min(READ_CHUNK, max_bytes + 1 - size))
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                return b"".join(chunks)
        except (SMBOSError, SMBResponseException) as exc:
            if status_of(exc) in GONE_STATUSES:
                logger.debug("smb %s: %s is gone", self.source, unc)
                return None
            raise self._failure(f"{unc} cannot be read", exc) from None
        except ServerNotAdmitted as exc:
            logger.warning("smb %s: %s not read: a DFS referral to %s", self.source, unc, exc)
            return None
        except (SMBException, OSError, ValueError) as exc:
            raise self._failure(f"{unc} cannot be read", exc) from None
