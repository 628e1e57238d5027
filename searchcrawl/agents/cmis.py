"""The ``cmis`` source type: the documents of a CMIS 1.1 repository (Alfresco, Nuxeo, OpenText,
Apache Chemistry's InMemory server), over its browser binding (JSON), with each document's ACL
as who may read it.

```toml
type = "cmis"

[cmis]
url = "https://dms.example.org/alfresco/api/-default-/public/cmis/versions/1.1/browser"
repository = "-default-"                   # optional: else the first the service names
folder = "/Sites/harbour/documentLibrary"  # the folder crawled, and everything below (default "/")
username = "crawler"
password_secret = "CMIS_CRAWLER_PASSWORD"  # HTTP basic auth; over http:// only to loopback
group_prefix = "GROUP_"                    # a principal that is a group (Alfresco's GROUP_sales)
group_token = "group:{id}"                 # that group as a token (the prefix left out)
include = ["*.pdf", "*.docx"]              # exclude, max_depth and hidden as in a files source
```

Listing: the repository's information (its root folder's URL, its ``anyone`` and ``anonymous``
principals, the permissions that let a principal read), then folder by folder from ``folder``
(``cmisselector=children``, 500 at a time), with a files source's rules on the path below it. A
document filed in several folders is listed once (by object id). Each document's ACL is asked
(``cmisselector=acl``): a principal reads when one of its permissions is ``cmis:read``,
``cmis:write``, ``cmis:all`` or one the repository maps to reading properties or content;
``anyone`` and ``anonymous`` are ``anyone_token``; a principal starting with ``group_prefix`` is
``group_token``, any other ``user_token``; the crawl's own account is nobody's reader. CMIS has
no denies. An ACL that cannot be read, or a principal that is no token, keeps the document out of
the index (status 927). Only what the crawl's account may read is listed.

Documents: ``cmis://<source>/<object id>``, displayed at the repository's content URL of the
object (``display_urls`` rules may rewrite it to the repository's own page), with a files
source's fields (``path_s`` the repository path, ``folder_s``, ``file_name_s``, ``size_l``,
``last_modified``) and ``author`` (``cmis:createdBy``). Changes: a document's token is its
``cmis:changeToken`` (else its last modification date) and its path (a move changes no change
token): only changed or moved documents are read again,
and a changed ACL alone updates the access in Solr without reading the content. Every crawl
lists the folder whole (the repository's change log is not used yet: the InMemory server's is
incomplete, and an incremental listing must still see ACL changes, which change no token): a
deleted or moved-out document leaves the index. A repository that does not answer, refuses the
crawl's account, or fails a folder's listing fails the crawl: nothing is removed.
"""

from __future__ import annotations

import json
import logging
import mimetypes
import posixpath
import re
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, ClassVar
from urllib.parse import quote, urlsplit

import requests
from pydantic import Field, field_validator, model_validator

from searchcrawl.access.tokens import Access, AccessError, Grant
from searchcrawl.agents.base import Agent, AgentError, Content, DocumentTooLarge, Reference
from searchcrawl.agents.files import TreeRules, file_reference, out_of_scope
from searchcrawl.rules.addresses import is_loopback
from searchcrawl.system.secrets import SecretError, checked_secret_name, required_secret

logger = logging.getLogger(__name__)

TABLE = "cmis"
PAGE = 500  # children asked at once
MAX_ANSWER_BYTES = 32 * 1024 * 1024  # of one JSON answer
CHUNK = 64 * 1024
READING = frozenset({"cmis:read", "cmis:write", "cmis:all"})
READ_KEYS = ("canGetProperties.Object", "canGetContentStream.Document")  # permission mappings that read
IDENTITY = {"Accept-Encoding": "identity"}
_OBJECT_ID = re.compile(r"[^\x00-\x1f\x7f]{1,500}")


class CmisOptions(TreeRules):
    """The ``[cmis]`` table of a source of type ``cmis``."""

    url: str
    repository: str | None = None
    folder: str = "/"
    username: str | None = None
    password_secret: str | None = None
    ca_file: str | None = None
    timeout: float = Field(default=60.0, gt=0, le=600)
    user_token: str = "user:{id}"
    group_prefix: str | None = None
    group_token: str = "group:{id}"
    anyone_token: str | None = "public"

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.query or parts.fragment:
            raise ValueError(f"expected the http(s) URL of a browser binding, without user, query or fragment, got {value!r}")
        return value.strip().rstrip("/")

    @field_validator("folder")
    @classmethod
    def _folder(cls, value: str) -> str:
        if not value.startswith("/") or posixpath.normpath(value) != value.rstrip("/") and value != "/":
            raise ValueError(f"expected a repository path such as /Sites/harbour, got {value!r}")
        return value.rstrip("/") or "/"

    @field_validator("password_secret")
    @classmethod
    def _secret_name(cls, value: str | None) -> str | None:
        return checked_secret_name(value)

    @field_validator("user_token", "group_token")
    @classmethod
    def _template(cls, value: str) -> str:
        if value.count("{id}") != 1:
            raise ValueError(f"expected a token with one {{id}}, got {value!r}")
        try:
            Grant.of(value.replace("{id}", "x"), "check")
        except AccessError as error:
            raise ValueError(str(error)) from None
        return value

    @model_validator(mode="after")
    def _credentials(self) -> CmisOptions:
        if bool(self.username) != bool(self.password_secret):
            raise ValueError("'username' and 'password_secret' go together")
        if self.password_secret and self.url.startswith("http://") and not is_loopback(urlsplit(self.url).hostname or ""):
            raise ValueError("http:// sends the password in clear: use https://, or a repository on this machine")
        return self


class CmisAgent(Agent):
    """Lists the documents below a CMIS folder, with their ACLs as their readers."""

    scheme: ClassVar[str] = "cmis"
    Options = CmisOptions
    gives_access: ClassVar[bool] = True

    def __init__(self, source: str, options: Any) -> None:
        super().__init__(source, options)
        self.cmis = CmisOptions.model_validate(options)
        self._password: str | None = None
        self._local = threading.local()
        self._repository: dict[str, Any] | None = None
        self._paths: dict[str, str] = {}  # object id -> its path, as listed (for explain)

    # -- the Agent interface ----------------------------------------------------------------

    def references(self, since: datetime | None) -> Iterator[Reference]:
        """Every document below the folder (``since`` is ignored: every crawl lists it whole)."""
        repository = self.repository()
        root = repository["rootFolderUrl"]
        pending = deque([self.cmis.folder])
        seen: set[str] = set()
        listed = 0
        while pending:
            folder = pending.popleft()
            for item in self._children(root, folder):
                properties = item.get("succinctProperties") or {}
                object_id = properties.get("cmis:objectId")
                name = properties.get("cmis:name")
                if not isinstance(object_id, str) or not _OBJECT_ID.fullmatch(object_id) or not isinstance(name, str):
                    continue
                if "/" in name or name in (".", "..") or not name:
                    logger.debug("cmis: %r in %s is no file name: left out", name[:200], folder)
                    continue
                path = posixpath.join(folder, name)
                rel = path[len(self.cmis.folder) :].lstrip("/")
                kind = properties.get("cmis:baseTypeId")
                if kind == "cmis:folder":
                    if object_id not in seen and out_of_scope(rel, True, self.cmis) is None:
                        seen.add(object_id)
                        pending.append(path)
                    continue
                if kind != "cmis:document" or object_id in seen:
                    continue
                seen.add(object_id)
                reason = out_of_scope(rel, False, self.cmis)
                if reason is not None:
                    logger.debug("cmis: %s not listed: %s", path, reason)
                    continue
                listed += 1
                yield self._reference(object_id, path, properties)
        logger.info("cmis: %d documents listed below %s", listed, self.cmis.folder)

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        """The document's content stream, read with its ACL now; None when it is gone."""
        response = self._get(self._object_root(), {"objectId": key, "cmisselector": "content"})
        with response:
            if response.status_code == 404:
                return None
            if response.status_code != 200:
                raise AgentError(f"{self._where()} answered HTTP {response.status_code} for object {key}")
            body = self._read(response, max_bytes, f"object {key}")
            if body is None:
                raise DocumentTooLarge(key)
        name = posixpath.basename(self._paths.get(key, "")) or self._name(key)
        kind = mimetypes.guess_type(name, strict=False)[0] or "application/octet-stream"  # as files and shares
        access, unreadable = self._access(key)
        return Content(body, kind, name, access=access, access_unreadable=unreadable)

    def refusal(self, key: str) -> str | None:
        return None if _OBJECT_ID.fullmatch(key) else "not an object id"

    # -- the repository ---------------------------------------------------------------------

    def repository(self) -> dict[str, Any]:
        """The repository's information (asked once per crawl)."""
        if self._repository is None:
            answer = self._json(self.cmis.url, {}, "the repository's information")
            if not isinstance(answer, dict) or not answer:
                raise AgentError(f"{self._where()} names no repository")
            wanted = self.cmis.repository or next(iter(answer))
            info = answer.get(wanted)
            if not isinstance(info, dict) or not isinstance(info.get("rootFolderUrl"), str):
                raise AgentError(f"{self._where()} has no repository {wanted!r}")
            for field in ("rootFolderUrl", "repositoryUrl"):
                if not _same_origin(info.get(field, ""), self.cmis.url):
                    raise AgentError(f"{self._where()} names its {field} on another origin: not followed")
            self._repository = info
        return self._repository

    def reading_permissions(self) -> frozenset[str]:
        """The permissions that let a principal read: the basic ones, and those the repository
        maps to reading properties or content."""
        mapping = (self.repository().get("aclCapabilities") or {}).get("permissionMapping") or []
        mapped = {
            permission
            for entry in mapping
            if isinstance(entry, dict) and entry.get("key") in READ_KEYS
            for permission in entry.get("permission") or []
            if isinstance(permission, str)
        }
        return READING | mapped

    def _children(self, root: str, folder: str) -> Iterator[dict[str, Any]]:
        """A folder's objects, PAGE at a time; a repository whose pages bring nothing new (a
        hostile or broken paging) fails the listing rather than loop."""
        skip = 0
        ids: set[str] = set()
        while True:
            params = {"cmisselector": "children", "succinct": "true", "maxItems": str(PAGE), "skipCount": str(skip)}
            answer = self._json(root + quote(folder, safe="/"), params, f"folder {folder}")
            items = answer.get("objects") if isinstance(answer, dict) else None
            if not isinstance(items, list):
                raise AgentError(f"{self._where()} answered folder {folder} without its objects")
            fresh = 0
            for entry in items:
                if isinstance(entry, dict) and isinstance(entry.get("object"), dict):
                    object_id = str((entry["object"].get("succinctProperties") or {}).get("cmis:objectId"))
                    fresh += object_id not in ids
                    ids.add(object_id)
                    yield entry["object"]
            if not answer.get("hasMoreItems") or not items:
                return
            if not fresh:
                raise AgentError(f"{self._where()} pages folder {folder} without end (a page brought nothing new)")
            skip += len(items)

    def _reference(self, object_id: str, path: str, properties: dict[str, Any]) -> Reference:
        self._paths[object_id] = path
        modified = _date(properties.get("cmis:lastModificationDate"))
        change = properties.get("cmis:changeToken")
        version = str(change)[:200] if change not in (None, "") else (modified.isoformat() if modified else None)
        # its path too: a move changes no change token, and the path is a field the listing gives
        token = f"{version}|{path}" if version else None
        size = properties.get("cmis:contentStreamLength")
        access, unreadable = self._access(object_id)
        folder, _, name = path.rpartition("/")
        reference = file_reference(
            key=object_id,
            token=token or "",
            path=path,
            folder=folder or "/",
            name=name,
            size=size if isinstance(size, int) and size >= 0 else 0,
            modified=modified,
            access=access,
            unreadable=unreadable,
            display_url=self.display_url(object_id),
        )
        author = properties.get("cmis:createdBy")
        if isinstance(author, str) and author:
            reference = replace(reference, fields={**reference.fields, "author": author[:200]})
        return reference

    def _access(self, object_id: str) -> tuple[Access | None, str | None]:
        """The document's ACL as its access; (None, why) when it cannot be read for certain."""
        where = f"object {object_id}"
        try:
            params = {"objectId": object_id, "cmisselector": "acl", "onlyBasicPermissions": "false"}
            answer = self._json(self._object_root(), params, where)
        except AgentError as error:
            return None, f"the repository's ACL of {where} cannot be read ({error})"
        aces = answer.get("aces") if isinstance(answer, dict) else None
        if not isinstance(aces, list):
            return None, f"the repository answered no ACL for {where}"
        return ace_access(aces, self.cmis, self.repository(), self.reading_permissions(), where)

    # -- HTTP -------------------------------------------------------------------------------

    def _object_root(self) -> str:
        """Where an object is asked by its id (``?objectId=...``)."""
        return str(self.repository()["repositoryUrl"]).rstrip("/") + "/root"

    def display_url(self, object_id: str) -> str:
        return self._object_root() + "?objectId=" + quote(object_id, safe="") + "&cmisselector=content"

    def _name(self, object_id: str) -> str:
        """The object's name, asked (a fetch after a resume, before any listing of this process)."""
        answer = self._json(
            self._object_root(), {"objectId": object_id, "cmisselector": "object", "succinct": "true"}, "an object"
        )
        name = (answer.get("succinctProperties") or {}).get("cmis:name") if isinstance(answer, dict) else None
        return name if isinstance(name, str) and "/" not in name else object_id

    def _where(self) -> str:
        parts = urlsplit(self.cmis.url)
        return f"the CMIS repository {parts.scheme}://{parts.netloc}"

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            session.trust_env = False
            if self.cmis.username:
                if self._password is None:
                    try:
                        self._password = required_secret(self.cmis.password_secret or "", TABLE)
                    except SecretError as error:
                        raise AgentError(str(error)) from None
                session.auth = (self.cmis.username, self._password)
            session.verify = self.cmis.ca_file or True
            self._local.session = session
        return session

    def _get(self, url: str, params: dict[str, str]) -> requests.Response:
        try:
            return self._session().get(
                url, params=params, stream=True, allow_redirects=False, timeout=self.cmis.timeout, headers=IDENTITY
            )
        except requests.RequestException as error:
            raise AgentError(f"{self._where()} cannot be reached: {type(error).__name__}") from None

    def _json(self, url: str, params: dict[str, str], what: str) -> Any:
        response = self._get(url, params)
        with response:
            if response.status_code in (401, 403):
                raise AgentError(f"{self._where()} refused the crawl's account (HTTP {response.status_code}) for {what}")
            if response.status_code != 200:
                raise AgentError(f"{self._where()} answered HTTP {response.status_code} for {what}")
            body = self._read(response, MAX_ANSWER_BYTES, what)
        if body is None:
            raise AgentError(f"{self._where()} answered more than {MAX_ANSWER_BYTES} bytes for {what}")
        try:
            return json.loads(body)
        except ValueError:
            raise AgentError(f"{self._where()} answered {what} with no JSON") from None

    def _read(self, response: requests.Response, limit: int, what: str) -> bytes | None:
        deadline = time.monotonic() + self.cmis.timeout * 10
        body = bytearray()
        for chunk in response.iter_content(CHUNK):
            body += chunk
            if limit and len(body) > limit:
                return None
            if time.monotonic() > deadline:
                raise AgentError(f"{self._where()} took longer than {self.cmis.timeout * 10:.0f} s sending {what}")
        return bytes(body)


def ace_access(
    aces: list[Any], options: CmisOptions, repository: dict[str, Any], reading: frozenset[str], where: str
) -> tuple[Access | None, str | None]:
    """A CMIS ACL as an access: each principal whose permissions read; (None, why) when an entry
    cannot be read for certain."""
    anyone = {repository.get("principalIdAnyone") or "anyone", repository.get("principalIdAnonymous") or "anonymous"}
    allow: list[Grant] = []
    try:
        for ace in aces:
            principal = ace.get("principal", {}).get("principalId") if isinstance(ace, dict) else None
            permissions = ace.get("permissions") if isinstance(ace, dict) else None
            if not isinstance(principal, str) or not principal or not isinstance(permissions, list):
                return None, f"the ACL of {where} holds an entry that cannot be read"
            if not reading.intersection(p for p in permissions if isinstance(p, str)):
                continue
            origin = f"CMIS ACL of {where}: {principal[:100]} {', '.join(str(p) for p in permissions)[:200]}"
            if principal in anyone:
                if options.anyone_token:
                    allow.append(Grant.of(options.anyone_token, origin))
            elif principal == options.username:
                continue  # the crawl's own account is nobody's reader
            elif options.group_prefix and principal.startswith(options.group_prefix):
                allow.append(Grant.of(_token(options.group_token, principal[len(options.group_prefix) :]), origin))
            else:
                allow.append(Grant.of(_token(options.user_token, principal), origin))
    except (AccessError, ValueError) as error:
        return None, f"the ACL of {where} names a principal that is no token ({error})"
    return Access.of(allow, name=f"CMIS {where}"), None


def _token(template: str, name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,128}", name):  # no @, \\ or DN syntax: a token keeps its meaning
        raise ValueError(f"{name[:80]!r} is not a plain name")
    return template.replace("{id}", name)


def _same_origin(url: str, other: str) -> bool:
    first, second = urlsplit(url), urlsplit(other)
    return (first.scheme, first.netloc.lower()) == (second.scheme, second.netloc.lower())


def _date(value: Any) -> datetime | None:
    """A CMIS date of the browser binding (milliseconds since the epoch)."""
    if isinstance(value, int | float) and 0 < value < 1e14:
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    return None
