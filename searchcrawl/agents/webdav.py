"""The ``webdav`` source type: the files of a WebDAV server (Apache httpd's mod_dav, Nextcloud,
SharePoint's WebDAV, a NAS), listed with PROPFIND, read with GET, and, where Apache serves them,
Apache's own ``Require`` rules as who may read each.

```toml
type = "webdav"

[webdav]
root = "https://files.example.org/dav/projects/"   # a collection: everything below is crawled
username = "crawler"
password_secret = "DAV_CRAWLER_PASSWORD"           # HTTP basic auth; over http:// only to loopback
ca_file = "/etc/ssl/certs/corp-ca.pem"              # a private CA; else the system's
apache_config = ["/etc/apache2/sites-enabled/dav.conf"]  # who may read: Apache's rules (else [access])
group_token = "group:files-{id}"                    # a group file's group (unset: not read)
authenticated_token = "group:cn=staff,ou=groups,dc=example,dc=org"  # Require valid-user
include = ["*.pdf", "*.docx"]                       # exclude, max_depth and hidden as in a files source
```

Listing: collection by collection from ``root`` (PROPFIND, Depth 1: servers refuse Depth
infinity), with the rules of a files source on the path below the root. Only entries below the
root on the root's own origin are taken (a server's answer naming another host, port, scheme or
a path outside the root is left out), each answer is read to at most MAX_LISTING_BYTES, without
DTDs or entities. A document's URL is ``webdav://<source>/<path below the root>``, its display
URL the file's http(s) URL; its fields those of a files source (``path_s`` the URL path,
``folder_s``, ``file_name_s``, ``size_l``, ``last_modified``).

Changes: a file's token is its strong ETag (else its size and Last-Modified; a weak ETag is no
token): a maintenance crawl reads only files whose token changed. Every crawl lists the tree whole: a file deleted or moved leaves
the index (a moved one comes back under its new path, found a duplicate of its old self first,
and takes its place). A server that does not answer, refuses the crawl's account, or fails a
collection's listing fails the crawl: nothing is removed; a file that fails to read keeps its
document (status 933).

Who may read (``gives_access`` with ``apache_config``): the Require rules of the Apache files
named, decided as Apache decides for each file's URL path (searchcrawl/access/apache_rules.py;
what it cannot read for certain keeps the documents out of the index, status 927). The crawl's
account (``username``) is nobody's reader. Without ``apache_config``, the source's ``[access]``
table says (its rules match ``/<path below the root>``).
"""

from __future__ import annotations

import logging
import mimetypes
import posixpath
import re
from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar
from urllib.parse import quote, unquote, urljoin, urlsplit

from lxml import etree
from pydantic import Field, field_validator

from searchcrawl.access.apache_rules import MAX_FILE_BYTES, ApacheRules, TokenNames, read_rules
from searchcrawl.access.tokens import Access
from searchcrawl.agents.base import Agent, AgentError, Content, DocumentTooLarge, Reference
from searchcrawl.agents.files import file_reference, out_of_scope, path_out_of_scope
from searchcrawl.agents.http_repository import (
    HttpClient,
    HttpRepositoryOptions,
    checked_token,
    folder_url,
    server_file,
    token_template,
)

logger = logging.getLogger(__name__)

TABLE = "webdav"
MAX_LISTING_BYTES = 64 * 1024 * 1024  # of one collection's PROPFIND answer
DAV = "{DAV:}"
PROPFIND = b"""<?xml version="1.0" encoding="utf-8"?>
<propfind xmlns="DAV:"><prop><resourcetype/><getetag/><getlastmodified/><getcontentlength/><getcontenttype/></prop></propfind>"""
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


class WebdavOptions(HttpRepositoryOptions):
    """The ``[webdav]`` table of a source of type ``webdav``."""

    root: str
    apache_config: list[str] = Field(default_factory=list)
    group_token: str | None = None
    authenticated_token: str | None = None

    @field_validator("root")
    @classmethod
    def _root(cls, value: str) -> str:
        return folder_url(value, "a collection")

    @field_validator("apache_config")
    @classmethod
    def _absolute(cls, values: list[str]) -> list[str]:
        for value in values:
            if not value.startswith("/") or "\x00" in value:
                raise ValueError(f"{value!r} is not an absolute path")
        return values

    @field_validator("group_token")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        return token_template(value)

    @field_validator("authenticated_token")
    @classmethod
    def _token(cls, value: str | None) -> str | None:
        return checked_token(value)

    def server_urls(self) -> list[str]:
        return [self.root]

    @property
    def gives_access(self) -> bool:
        """Whether Apache's rules say who may read (else the source's [access] table)."""
        return bool(self.apache_config)


class WebdavAgent(Agent):
    """Lists the files below a WebDAV collection, with Apache's rules as their readers."""

    scheme: ClassVar[str] = "webdav"
    Options = WebdavOptions

    def __init__(self, source: str, options: Any) -> None:
        super().__init__(source, options)
        self.dav = WebdavOptions.model_validate(options)
        self.root = urlsplit(self.dav.root)
        self.port = self.root.port or (443 if self.root.scheme == "https" else 80)
        self.http = HttpClient(self.dav, TABLE, f"the WebDAV server {self.root.scheme}://{self.root.netloc}")
        self._rules: ApacheRules | None = None
        self.names = TokenNames(
            self.dav.user_token,
            self.dav.group_token,
            self.dav.authenticated_token,
            frozenset([self.dav.username] if self.dav.username else []),
        )

    # -- the Agent interface ----------------------------------------------------------------

    def references(self, since: datetime | None) -> Iterator[Reference]:
        """Every file below the root (``since`` is ignored: every crawl lists the tree). A
        collection's answer is taken for its own entries only (a server naming another folder's
        files, or a collection twice, is not followed)."""
        self._rules = self._read_rules()
        pending = deque([""])
        seen = {""}
        listed = 0
        while pending:
            folder = pending.popleft()
            for rel, is_collection, props in self._propfind(folder):
                if posixpath.dirname(rel) != folder or rel in seen:
                    logger.debug("webdav: %s is not an entry of /%s: left out", rel[:200], folder[:200])
                    continue
                seen.add(rel)
                reason = out_of_scope(rel, is_collection, self.dav)
                if reason is not None:
                    logger.debug("webdav: %s not listed: %s", rel, reason)
                elif is_collection:
                    pending.append(rel)
                else:
                    listed += 1
                    yield self._reference(rel, props)
        logger.info("webdav: %d files listed below %s", listed, self.dav.root)

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        """The file, by GET (no redirect followed); None when the server says it is gone."""
        url = self.http_url(key)
        response = self.http.request("GET", url)
        with response:
            if response.status_code in (404, 410):
                return None
            if response.status_code != 200:
                raise AgentError(f"{self.http.where} answered HTTP {response.status_code} for {key}")
            body = self.http.read(response, max_bytes, key)
            if body is None:
                raise DocumentTooLarge(key)
            name = key.rsplit("/", 1)[-1]
            kind = mimetypes.guess_type(name, strict=False)[0] or "application/octet-stream"  # as files and shares
            access, unreadable = self._access(key) if self.dav.gives_access else (None, None)
            token = _etag(response.headers.get("ETag"))
            return Content(body, kind, name, access=access, access_unreadable=unreadable, token=token)

    def refusal(self, key: str) -> str | None:
        return path_out_of_scope(key, self.dav) if key and not key.startswith("/") else "not a path below the root"

    # -- HTTP -------------------------------------------------------------------------------

    def http_url(self, key: str) -> str:
        return self.dav.root + quote(key, safe="/")

    def _propfind(self, folder: str) -> Iterator[tuple[str, bool, dict[str, str]]]:
        """A collection's entries: (path below the root, is a collection, properties)."""
        url = self.http_url(folder + "/" if folder else "")
        headers = {"Depth": "1", "Content-Type": "application/xml; charset=utf-8"}
        body = self.http.answer(
            "PROPFIND", url, f"the listing of /{folder}", MAX_LISTING_BYTES, 207, data=PROPFIND, headers=headers
        )
        if body is None:
            raise AgentError(f"the listing of /{folder} is larger than {MAX_LISTING_BYTES} bytes")
        try:
            tree = etree.fromstring(body, _PARSER)
        except etree.XMLSyntaxError as error:
            raise AgentError(f"the listing of /{folder} is not XML ({error})") from None
        for answer in tree.iter(f"{DAV}response"):
            rel = self._relative(url, answer.findtext(f"{DAV}href") or "")
            if rel is None or rel.rstrip("/") == folder.rstrip("/"):
                continue
            props: dict[str, str] = {}
            collection = False
            for propstat in answer.iter(f"{DAV}propstat"):
                if " 200 " not in (propstat.findtext(f"{DAV}status") or "") + " ":
                    continue
                for prop in propstat.iter(f"{DAV}prop"):
                    collection = collection or prop.find(f"{DAV}resourcetype/{DAV}collection") is not None
                    for name in ("getetag", "getlastmodified", "getcontentlength", "getcontenttype"):
                        value = prop.findtext(f"{DAV}{name}")
                        if value:
                            props[name] = value.strip()[:1000]
            yield rel.rstrip("/"), collection, props

    def _relative(self, base: str, href: str) -> str | None:
        """An href as a path below the root; None for anything elsewhere (another origin, a path
        outside the root, ``..``, control characters)."""
        target = urlsplit(urljoin(base, href.strip()))
        if (target.scheme, target.netloc.lower()) != (self.root.scheme, self.root.netloc):
            logger.debug("webdav: an entry of another origin is left out: %s", href[:200])
            return None
        path = unquote(target.path)
        if not path.startswith(unquote(self.root.path)) or re.search(r"[\x00-\x1f\x7f]", path):
            logger.debug("webdav: an entry outside the root is left out: %s", href[:200])
            return None
        rel = path[len(unquote(self.root.path)) :]
        if posixpath.normpath("/" + rel) != "/" + rel.rstrip("/") and rel:
            return None
        return rel

    # -- references and access --------------------------------------------------------------

    def _reference(self, rel: str, props: dict[str, str]) -> Reference:
        modified = _http_date(props.get("getlastmodified"))
        size = int(props["getcontentlength"]) if props.get("getcontentlength", "").isdigit() else 0
        etag = props.get("getetag", "")
        weak = etag.startswith("W/")
        token = _etag(etag) or (f"{props.get('getlastmodified', '')}|{size}" if modified and not weak else None)
        access, unreadable = self._access(rel) if self.dav.gives_access else (None, None)
        url_path = urlsplit(self.http_url(rel)).path
        folder, _, name = url_path.rpartition("/")
        return file_reference(
            key=rel,
            token=token or "",
            path=url_path,
            folder=folder or "/",
            name=name,
            size=size,
            modified=modified,
            access=access,
            unreadable=unreadable,
            display_url=self.http_url(rel),
        )

    def _access(self, rel: str) -> tuple[Access | None, str | None]:
        rules = self._rules if self._rules is not None else self._read_rules()
        self._rules = rules
        return rules.access_of(urlsplit(self.http_url(rel)).path, self.names, self.root.hostname or "", self.port)

    def _read_rules(self) -> ApacheRules:
        """The Apache files named, read at each listing (a change of rules is seen by the next crawl)."""
        files = [
            (path, server_file(path, "Apache's configuration", MAX_FILE_BYTES).decode("utf-8-sig", errors="replace"))
            for path in self.dav.apache_config
        ]
        return read_rules(files)


def _etag(value: str | None) -> str | None:
    """A strong ETag as a change token; a weak one is none (Apache calls an ETag weak while the
    file may still change within the second: the file is read again next time)."""
    value = (value or "").strip()
    return None if not value or value.startswith("W/") else value[:200]


def _http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        moment = parsedate_to_datetime(value[:100])
    except (TypeError, ValueError, IndexError):
        return None
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
