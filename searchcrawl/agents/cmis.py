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
group_token = "group:alfresco-{id}"        # that group as a token (the prefix left out)
anyone_token = "group:cn=staff,ou=groups,dc=example,dc=org"  # the repository's "anyone" (unset: no one)
include = ["*.pdf", "*.docx"]              # exclude, max_depth and hidden as in a files source
```

Listing: the repository's information, then folder by folder from ``folder`` by object id
(``cmisselector=children``, 500 at a time, ordered by name where the repository can), with a
files source's rules on the path below it; working copies and older versions are not
documents; a document filed in several folders is listed once. Each document's ACL is asked at
every listing and, with its change token, before and after its content is read: a principal
reads when a permission of its is one the repository maps to reading content (``READ_KEYS``,
``reading_permissions``) or ``cmis:all``; ``anyone`` is ``anyone_token`` and ``anonymous``
``anonymous_token`` (both unset by default: no one); a principal starting with ``group_prefix``
is ``group_token``, any other ``user_token``; the crawl's own account is nobody's reader. An ACL
that cannot be read or is not exact, a role, or a principal that is no plain name keeps the
document out of the index (status 927). Only what the crawl's account may read is listed.

Documents: ``cmis://<source>/<object id>``, displayed at the repository's content URL of the
object (``display_urls`` rules may rewrite it to the repository's own page), with a files
source's fields and ``author`` (``cmis:createdBy``). Changes: a document's token is its
``cmis:changeToken`` (else its last modification date) and its path (a move changes no change
token): only changed or moved documents are read again, and a changed ACL alone updates the
access in Solr without reading the content. Every crawl lists the folder whole, each document's
ACL asked (one request a document): a deleted or moved-out document leaves the index. The change
log is not read: CMIS leaves logging ACL changes (``security`` events) optional, and they move no
change token, so a crawl from the log alone could go on showing a document to a reader taken off
its ACL; and the one server the tests can run, OpenCMIS InMemory, answers a hard-coded dummy log
(docs/non-web-sources.md). A repository that does not answer, refuses the
crawl's account, or fails a folder's listing fails the crawl: nothing is removed.
"""

from __future__ import annotations

import json
import logging
import mimetypes
import posixpath
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, ClassVar
from urllib.parse import quote, urlsplit

import requests
from pydantic import field_validator

from searchcrawl.access.tokens import Access, AccessError, Grant
from searchcrawl.agents.base import Agent, AgentError, Content, DocumentTooLarge, Reference
from searchcrawl.agents.files import file_reference, out_of_scope
from searchcrawl.agents.http_repository import HttpClient, HttpRepositoryOptions, checked_token, server_url, token_template

logger = logging.getLogger(__name__)

TABLE = "cmis"
PAGE = 500  # children asked at once
MAX_PAGES = 2000  # of one folder: a million objects
PROPERTIES = ",".join(
    (
        "cmis:objectId", "cmis:name", "cmis:baseTypeId", "cmis:changeToken", "cmis:lastModificationDate",
        "cmis:contentStreamLength", "cmis:createdBy", "cmis:isPrivateWorkingCopy", "cmis:isLatestVersion",
    )
)  # fmt: skip
MAX_ANSWER_BYTES = 32 * 1024 * 1024  # of one JSON answer
READING = frozenset({"cmis:read", "cmis:all"})  # without a mapping: what reads by CMIS's basic permissions
READ_KEYS = ("canGetContentStream.Document", "canGetProperties.Object")  # the mapping that says, in this order
_OBJECT_ID = re.compile(r"[^\x00-\x1f\x7f]{1,500}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class CmisOptions(HttpRepositoryOptions):
    """The ``[cmis]`` table of a source of type ``cmis``."""

    url: str
    repository: str | None = None
    folder: str = "/"
    group_prefix: str | None = None
    group_token: str = "group:{id}"
    anyone_token: str | None = None
    anonymous_token: str | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        server_url(value, "a browser binding")
        return value.strip().rstrip("/")

    @field_validator("folder")
    @classmethod
    def _folder(cls, value: str) -> str:
        if not value.startswith("/") or posixpath.normpath(value) != value.rstrip("/") and value != "/":
            raise ValueError(f"expected a repository path such as /Sites/harbour, got {value!r}")
        return value.rstrip("/") or "/"

    @field_validator("anyone_token", "anonymous_token")
    @classmethod
    def _token(cls, value: str | None) -> str | None:
        return checked_token(value)

    @field_validator("group_token")
    @classmethod
    def _template(cls, value: str) -> str:
        return token_template(value) or value

    def server_urls(self) -> list[str]:
        return [self.url]


class CmisAgent(Agent):
    """Lists the documents below a CMIS folder, with their ACLs as their readers."""

    scheme: ClassVar[str] = "cmis"
    Options = CmisOptions
    gives_access: ClassVar[bool] = True

    def __init__(self, source: str, options: Any) -> None:
        super().__init__(source, options)
        self.cmis = CmisOptions.model_validate(options)
        parts = urlsplit(self.cmis.url)
        self.http = HttpClient(self.cmis, TABLE, f"the CMIS repository {parts.scheme}://{parts.netloc}")
        self._repository: dict[str, Any] | None = None

    # -- the Agent interface ----------------------------------------------------------------

    def references(self, since: datetime | None) -> Iterator[Reference]:
        """Every document below the folder (``since`` is ignored: every crawl lists it whole).
        Folders are walked by object id (two folders of one name stay two); private working
        copies and versions that are not the latest are not documents."""
        folder_url = str(self.repository()["rootFolderUrl"]).rstrip("/") + quote(self.cmis.folder, safe="/")
        top = self._json(folder_url, {"cmisselector": "object", "succinct": "true"}, "the folder")
        top_id = (top.get("succinctProperties") or {}).get("cmis:objectId") if isinstance(top, dict) else None
        if not isinstance(top_id, str):
            raise AgentError(f"{self.http.where} has no folder {self.cmis.folder}")
        pending = deque([(top_id, self.cmis.folder)])
        seen: set[str] = {top_id}
        listed = 0
        while pending:
            folder_id, folder = pending.popleft()
            for item in self._children(folder_id, folder):
                properties = item.get("succinctProperties") or {}
                object_id = properties.get("cmis:objectId")
                name = properties.get("cmis:name")
                if not isinstance(object_id, str) or not _OBJECT_ID.fullmatch(object_id) or not isinstance(name, str):
                    continue
                if "/" in name or name in (".", "..") or not name or _CONTROL.search(name):
                    logger.debug("cmis: %r in %s is no file name: left out", name[:200], folder)
                    continue
                path = posixpath.join(folder, name)
                rel = path[len(self.cmis.folder) :].lstrip("/")
                kind = properties.get("cmis:baseTypeId")
                if object_id in seen or kind not in ("cmis:folder", "cmis:document"):
                    continue
                seen.add(object_id)
                reason = out_of_scope(rel, kind == "cmis:folder", self.cmis)
                if reason is not None:
                    logger.debug("cmis: %s not listed: %s", path, reason)
                elif kind == "cmis:folder":
                    pending.append((object_id, path))
                elif properties.get("cmis:isPrivateWorkingCopy") is True or properties.get("cmis:isLatestVersion") is False:
                    logger.debug("cmis: %s is a working copy or an older version: not a document", path)
                else:
                    listed += 1
                    yield self._reference(object_id, path, properties, item.get("exactACL"))
        logger.info("cmis: %d documents listed below %s", listed, self.cmis.folder)

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        """The document's content stream, with its ACL and change token asked before and after:
        a document changed while it was read fails this read (its indexed version stays, the next
        crawl reads it again), so no content is indexed with another version's readers."""
        before = self._state(key)
        if before is None:
            return None
        response = self._get(self._object_root(), {"objectId": key, "cmisselector": "content"})
        with response:
            if response.status_code == 404:
                return None
            if response.status_code != 200:
                raise AgentError(f"{self.http.where} answered HTTP {response.status_code} for object {key}")
            body = self.http.read(response, max_bytes, f"object {key}")
            if body is None:
                raise DocumentTooLarge(key)
        if self._state(key) != before:
            raise AgentError(f"object {key} changed while it was read: read again next time")
        name, exact = before[0], before[2]
        kind = mimetypes.guess_type(name, strict=False)[0] or "application/octet-stream"  # as files and shares
        access, unreadable = self._access(key, exact)
        return Content(body, kind, name, access=access, access_unreadable=unreadable)

    def _state(self, object_id: str) -> tuple[str, str, Any, Any] | None:
        """The object's name, change token, exactness and ACL as the repository says now (None: gone)."""
        params = {"objectId": object_id, "cmisselector": "object", "succinct": "true", "includeACL": "true"}
        response = self._get(self._object_root(), params)
        with response:
            if response.status_code == 404:
                return None
        answer = self._json(self._object_root(), params, f"object {object_id}")
        if not isinstance(answer, dict):
            raise AgentError(f"{self.http.where} answered object {object_id} with no object")
        properties = answer.get("succinctProperties") or {}
        name = properties.get("cmis:name")
        name = name if isinstance(name, str) and "/" not in name else object_id
        return name, str(properties.get("cmis:changeToken")), answer.get("exactACL"), self._acl(object_id)

    def refusal(self, key: str) -> str | None:
        return None if _OBJECT_ID.fullmatch(key) else "not an object id"

    # -- the repository ---------------------------------------------------------------------

    def repository(self) -> dict[str, Any]:
        """The repository's information (asked once per crawl)."""
        if self._repository is None:
            answer = self._json(self.cmis.url, {}, "the repository's information")
            if not isinstance(answer, dict) or not answer:
                raise AgentError(f"{self.http.where} names no repository")
            wanted = self.cmis.repository or next(iter(answer))
            info = answer.get(wanted)
            if not isinstance(info, dict) or not isinstance(info.get("rootFolderUrl"), str):
                raise AgentError(f"{self.http.where} has no repository {wanted!r}")
            for field in ("rootFolderUrl", "repositoryUrl"):
                if not _same_origin(info.get(field, ""), self.cmis.url):
                    raise AgentError(f"{self.http.where} names its {field} on another origin: not followed")
            self._repository = info
        return self._repository

    def reading_permissions(self) -> frozenset[str]:
        """The permissions that let a principal read the content: those the repository maps to
        ``canGetContentStream.Document`` (else, a repository that maps no such key, to
        ``canGetProperties.Object``; else ``cmis:read``), and ``cmis:all``. ``cmis:write`` reads
        only where the repository maps it so (CMIS lets it not include reading)."""
        mapping = (self.repository().get("aclCapabilities") or {}).get("permissionMapping") or []
        keys = {entry.get("key"): entry.get("permission") for entry in mapping if isinstance(entry, dict)}
        for key in READ_KEYS:
            mapped = keys.get(key)
            if isinstance(mapped, list) and mapped:
                return frozenset(p for p in mapped if isinstance(p, str)) | {"cmis:all"}
        return READING

    def _children(self, folder_id: str, folder: str) -> Iterator[dict[str, Any]]:
        """A folder's objects, PAGE at a time, in the order of their names where the repository
        can order (pages shift less while it changes); a repository whose pages bring nothing
        new, or more than MAX_PAGES of them, fails the listing rather than loop."""
        skip = 0
        ids: set[str] = set()
        ordered = (self.repository().get("capabilities") or {}).get("capabilityOrderBy") not in (None, "none")
        for _page in range(MAX_PAGES):
            params = {
                "objectId": folder_id,
                "cmisselector": "children",
                "succinct": "true",
                "includeACL": "true",
                "filter": PROPERTIES,
                "maxItems": str(PAGE),
                "skipCount": str(skip),
                **({"orderBy": "cmis:name ASC"} if ordered else {}),
            }
            answer = self._json(self._object_root(), params, f"folder {folder}")
            items = answer.get("objects") if isinstance(answer, dict) else None
            if not isinstance(items, list):
                raise AgentError(f"{self.http.where} answered folder {folder} without its objects")
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
                raise AgentError(f"{self.http.where} pages folder {folder} without end (a page brought nothing new)")
            skip += len(items)
        raise AgentError(f"folder {folder} has more than {MAX_PAGES * PAGE} objects: not listed whole")

    def _reference(self, object_id: str, path: str, properties: dict[str, Any], exact: Any) -> Reference:
        modified = _date(properties.get("cmis:lastModificationDate"))
        change = properties.get("cmis:changeToken")
        version = str(change)[:200] if change not in (None, "") else (modified.isoformat() if modified else None)
        # its path too: a move changes no change token, and the path is a field the listing gives
        token = f"{version}|{path}" if version else None
        size = properties.get("cmis:contentStreamLength")
        access, unreadable = self._access(object_id, exact)
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

    def _acl(self, object_id: str) -> Any:
        """The object's ACL answer, or the reason it cannot be read (a string)."""
        params = {"objectId": object_id, "cmisselector": "acl", "onlyBasicPermissions": "false"}
        try:
            return self._json(self._object_root(), params, f"the ACL of object {object_id}")
        except AgentError as error:
            return str(error)

    def _access(self, object_id: str, exact: Any) -> tuple[Access | None, str | None]:
        """The document's ACL as its access; (None, why) when it cannot be read for certain: an
        ACL the repository does not call exact (``exactACL``, ``isExact``) may hide denies,
        blocked inheritance or other constraints."""
        where = f"object {object_id}"
        answer = self._acl(object_id)
        if isinstance(answer, str):
            return None, f"the repository's ACL of {where} cannot be read ({answer})"
        aces = answer.get("aces") if isinstance(answer, dict) else None
        if not isinstance(aces, list):
            return None, f"the repository answered no ACL for {where}"
        if exact is not True or answer.get("isExact", True) is not True:
            return None, f"the repository does not call the ACL of {where} exact: other rules may apply"
        return ace_access(aces, self.cmis, self.repository(), self.reading_permissions(), where)

    # -- HTTP -------------------------------------------------------------------------------

    def _object_root(self) -> str:
        """Where an object is asked by its id (``?objectId=...``)."""
        return str(self.repository()["repositoryUrl"]).rstrip("/") + "/root"

    def display_url(self, object_id: str) -> str:
        return self._object_root() + "?objectId=" + quote(object_id, safe="") + "&cmisselector=content"

    def _get(self, url: str, params: dict[str, str]) -> requests.Response:
        return self.http.request("GET", url, params=params)

    def _json(self, url: str, params: dict[str, str], what: str) -> Any:
        body = self.http.answer("GET", url, what, MAX_ANSWER_BYTES, params=params)
        if body is None:
            raise AgentError(f"{self.http.where} answered more than {MAX_ANSWER_BYTES} bytes for {what}")
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            raise AgentError(f"{self.http.where} answered {what} with no JSON") from None


def ace_access(
    aces: list[Any], options: CmisOptions, repository: dict[str, Any], reading: frozenset[str], where: str
) -> tuple[Access | None, str | None]:
    """A CMIS ACL as an access: each principal whose permissions read; (None, why) when an entry
    cannot be read for certain (a malformed entry, a role such as Alfresco's ROLE_OWNER, a name
    that is no plain name)."""
    special = {
        repository.get("principalIdAnyone"): options.anyone_token,
        repository.get("principalIdAnonymous"): options.anonymous_token,
    }
    special.pop(None, None)
    allow: list[Grant] = []
    try:
        for ace in aces:
            principal_data = ace.get("principal") if isinstance(ace, dict) else None
            principal = principal_data.get("principalId") if isinstance(principal_data, dict) else None
            permissions = ace.get("permissions") if isinstance(ace, dict) else None
            if not isinstance(principal, str) or not principal or not isinstance(permissions, list):
                return None, f"the ACL of {where} holds an entry that cannot be read"
            if not reading.intersection(p for p in permissions if isinstance(p, str)):
                continue
            origin = f"CMIS ACL of {where}: {principal[:100]} {', '.join(str(p) for p in permissions)[:200]}"
            if principal in special:
                token = special[principal]
                if token:
                    allow.append(Grant.of(token, origin))
            elif options.username and principal.lower() == options.username.lower():
                continue  # the crawl's own account is nobody's reader
            elif principal.startswith("ROLE_"):
                return None, f"the ACL of {where} grants a role ({principal[:80]}), which is no searcher's token"
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
