"""The ``dokuwiki`` source type: the pages of a DokuWiki, read through its XML-RPC interface, with
the wiki's own namespace rules as who may read each.

```toml
type = "dokuwiki"

[dokuwiki]
url = "https://wiki.example.org/"                 # the wiki's base URL (doku.php is below it)
username = "crawler"                              # a user the wiki's 'remoteuser' admits
password_secret = "WIKI_CRAWLER_PASSWORD"         # HTTP basic auth; over http:// only to loopback
namespace = ""                                    # only the pages below a namespace ("" every page)
acl_file = "/var/lib/dokuwiki/acl/acl.auth.php"   # who may read: the wiki's rules (else [access])
superuser = ["@admin"]                            # the wiki's 'superuser': they read every page
group_token = "group:{id}"                        # a wiki group's token (unset: groups read nothing)
# group_filter = "(&(objectClass=posixGroup)(|(gidNumber=%{gid})(memberUid=%{user})))"  # instead: authldap's groupfilter
authenticated_token = "group:cn=staff,ou=groups,dc=example,dc=org"  # @user, if every signed-in user is in it
case_sensitive = false                            # the wiki's names compare without case (LDAP, AD)
exclude = ["playground/*"]                        # include, exclude and max_depth on ns/sub/page
```

Listing: ``dokuwiki.getPagelist`` of the namespace (the pages on disk, not the search index of
the wiki, which may lag), with each page's revision and the MD5 of its text. Only the pages the
crawl's account may read are listed: make it a superuser, or give it read on every namespace
crawled. A page's key is its id (``ns:sub:page``), its URL ``dokuwiki://<source>/<id>``, its
display URL ``<url>doku.php?id=<id>``; the rules of a files source (``include``, ``exclude``,
``max_depth``) apply to the id written as a path (``ns/sub/page``).

A page is its latest revision, as the wiki renders it (``wiki.getPageHTML``), titled by its
first heading (else its id); ``namespace_s``, ``page_id_s`` and ``last_modified`` (the
revision's date) are indexed with it. Changes: its token is its revision and the MD5 of its text:
a maintenance crawl reads only the pages that changed. The revision is asked before and after the
page is read: a page saved meanwhile is read again next time. Every crawl lists the namespace
whole: a deleted page (DokuWiki deletes a page by saving it empty) leaves the index. A wiki that
does not answer or refuses the crawl's account fails the crawl, and nothing is removed.

Who may read (``gives_access`` with ``acl_file``): the rules of that file, read at each listing,
decided as DokuWiki decides (searchcrawl/access/dokuwiki_acl.py: what cannot be read for certain
keeps the page out of the index, status 927). The file is read rather than the rules the XML-RPC
``plugin.acl.listAcls`` answers: DokuWiki fills their ``%USER%`` wildcards in for the caller. A
change of rules alone updates the pages' access without reading them. ``case_sensitive`` (the
default, as the plain backend) says the wiki tells ``Bob`` from ``bob``: the index's tokens are
lower-case, so a rule naming ``Bob`` gives no read and denies as ``bob``'s; set it false for
LDAP or Active Directory, which compare without case. A wiki on LDAP (authldap) gives a user the
groups its ``groupfilter`` finds, one search, no nesting: ``group_filter``, that setting
verbatim, makes a wiki group the ``direct:`` tokens of that filter's relations (``filter_relations``
in access/tokens.py; a filter it cannot read fails the source's configuration, and so does
``case_sensitive`` left true: authldap compares without case), instead of
``group_token``, which means every group the directory reading gives (nested ones too). A page DokuWiki reads under another id
than the one it lists (an id its cleaning changes) is not a page. Without ``acl_file``, the
source's ``[access]`` table says (its rules match ``/<id>``). Media files are not crawled.
"""

from __future__ import annotations

import hashlib
import logging
import re
import xmlrpc.client
from collections.abc import Iterator
from datetime import UTC, datetime
from html import escape
from typing import Any, ClassVar, Self
from urllib.parse import quote, urlsplit
from xml.parsers.expat import ExpatError

from lxml import html as lxml_html
from pydantic import Field, field_validator, model_validator

from searchcrawl.access.dokuwiki_acl import MAX_FILE_BYTES, WikiAcl, WikiNames, read_acl
from searchcrawl.access.tokens import Access
from searchcrawl.agents.base import Agent, AgentError, Content, DocumentTooLarge, Reference
from searchcrawl.agents.files import path_out_of_scope
from searchcrawl.agents.http_repository import (
    GroupOptions,
    HttpClient,
    HttpRepositoryOptions,
    checked_token,
    folder_url,
    server_file,
)

logger = logging.getLogger(__name__)

TABLE = "dokuwiki"
MAX_ANSWER_BYTES = 256 * 1024 * 1024  # of the page list (a wiki of a million pages answers ~150 MB)
MAX_PAGE_BYTES = 64 * 1024 * 1024  # of one page's text or HTML, when the crawl sets no limit
SMALL_ANSWER_BYTES = 64 * 1024  # of a page's information, of the sign-in
# a page id as DokuWiki's cleanID leaves it: lower-case words, dots, dashes, colons
_PAGE_ID = re.compile(r"[\w.\-]+(?::[\w.\-]+)*")
_NAMESPACE = re.compile(r"(?:[\w.\-]+(?::[\w.\-]+)*)?")
FAULT_DENIED, FAULT_MISSING = 111, 121  # DokuWiki's codes: no read permission, no such page


class WikiFault(AgentError):
    """The wiki answered a call with an XML-RPC fault."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(f"the wiki answered fault {code}: {' '.join(text.split())[:200]}")
        self.code = code


class DokuwikiOptions(HttpRepositoryOptions, GroupOptions):
    """The ``[dokuwiki]`` table of a source of type ``dokuwiki``."""

    url: str
    namespace: str = ""
    acl_file: str | None = None
    superuser: list[str] = Field(default_factory=list)
    authenticated_token: str | None = None
    default_group: str = "user"
    case_sensitive: bool = True

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return folder_url(value, "the wiki")

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        value = value.strip().strip(":")
        if not _NAMESPACE.fullmatch(value) or value != value.lower():
            raise ValueError(f"expected a namespace such as 'projects:alpha', got {value!r}")
        return value

    @field_validator("acl_file")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and (not value.startswith("/") or "\x00" in value):
            raise ValueError(f"{value!r} is not an absolute path")
        return value

    @field_validator("superuser")
    @classmethod
    def _names(cls, values: list[str]) -> list[str]:
        names = [part.strip() for value in values for part in value.split(",") if part.strip()]
        for name in names:
            if not re.fullmatch(r"@?[\w.\- ]{1,128}", name):
                raise ValueError(f"expected a user name or an @group, got {name!r}")
        return names

    @field_validator("authenticated_token")
    @classmethod
    def _token(cls, value: str | None) -> str | None:
        return checked_token(value)

    @model_validator(mode="after")
    def _ldap_compares_without_case(self) -> Self:
        """authldap compares names without case: with ``case_sensitive`` (the default) a rule's
        ``@Finance`` would silently read nothing."""
        if self.group_filter is not None and self.case_sensitive:
            raise ValueError(
                "group_filter is authldap's groupfilter, which compares names without case: set case_sensitive = false"
            )
        return self

    def server_urls(self) -> list[str]:
        return [self.url]

    @property
    def gives_access(self) -> bool:
        """Whether the wiki's rules say who may read (else the source's [access] table)."""
        return bool(self.acl_file)


class DokuwikiAgent(Agent):
    """Lists the pages of a DokuWiki, with its namespace rules as their readers."""

    scheme: ClassVar[str] = "dokuwiki"
    Options = DokuwikiOptions

    def __init__(self, source: str, options: Any) -> None:
        super().__init__(source, options)
        self.wiki = DokuwikiOptions.model_validate(options)
        parts = urlsplit(self.wiki.url)
        self.http = HttpClient(self.wiki, TABLE, f"the wiki {parts.scheme}://{parts.netloc}")
        self.endpoint = self.wiki.url + "lib/exe/xmlrpc.php"
        self.names = WikiNames(
            user_token=self.wiki.user_token,
            group_token=self.wiki.group_token,
            group_relations=self.wiki.group_relations,
            authenticated_token=self.wiki.authenticated_token,
            default_group=self.wiki.default_group,
            superusers=tuple(self.wiki.superuser),
            crawler=self.wiki.username,
            case_sensitive=self.wiki.case_sensitive,
        )
        self._rules: WikiAcl | None = None

    # -- the Agent interface ----------------------------------------------------------------

    def references(self, since: datetime | None) -> Iterator[Reference]:
        """Every page of the namespace (``since`` is ignored: every crawl lists it whole)."""
        self._rules = self._read_rules() if self.wiki.gives_access else None
        self._signed_in()
        pages = self.call("dokuwiki.getPagelist", self.wiki.namespace, {"depth": 0, "hash": True}, what="the page list")
        if not isinstance(pages, list):
            raise AgentError(f"{self.http.where} answered the page list with no list")
        listed, seen = 0, set()
        for page in pages:
            page_id = page.get("id") if isinstance(page, dict) else None
            if not isinstance(page_id, str):
                logger.debug("dokuwiki: an entry without an id left out")
                continue
            reason = "listed twice" if page_id in seen else self.refusal(page_id)
            if reason is not None:
                logger.debug("dokuwiki: %r not listed: %s", str(page_id)[:200], reason)
                continue
            seen.add(page_id)
            listed += 1
            yield self._reference(page_id, page)
        logger.info("dokuwiki: %d pages listed in %s", listed, self.wiki.namespace or "the wiki")

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        """The page's latest revision as the wiki renders it; None when it is gone. Its revision
        is asked before and after: a page saved meanwhile fails this read (read again next time)."""
        before = self._revision(key)
        if before is None:
            return None
        limit = max_bytes or MAX_PAGE_BYTES
        text = self.call("wiki.getPage", key, what=f"page {key}", limit=limit, document=key)
        rendered = self.call("wiki.getPageHTML", key, what=f"page {key}", limit=limit, document=key)
        if self._revision(key) != before:
            raise AgentError(f"page {key} changed while it was read: read again next time")
        if not isinstance(text, str) or not isinstance(rendered, str):
            raise AgentError(f"{self.http.where} answered page {key} with no text")
        body = page_html(key, rendered).encode("utf-8")
        if max_bytes and len(body) > max_bytes:
            raise DocumentTooLarge(key)
        access, unreadable = self._access(key) if self.wiki.gives_access else (None, None)
        token = f"{before}|{text_hash(text)}"
        return Content(body, "text/html; charset=utf-8", key, access=access, access_unreadable=unreadable, token=token)

    def refusal(self, key: str) -> str | None:
        if not _PAGE_ID.fullmatch(key) or key != key.lower() or len(key) > 255 or ":." in ":" + key:
            return "not a page id"
        namespace = self.wiki.namespace
        if namespace and not key.startswith(namespace + ":"):
            return f"not in namespace {namespace}"
        return path_out_of_scope(key[len(namespace) + 1 if namespace else 0 :].replace(":", "/"), self.wiki)

    # -- XML-RPC ----------------------------------------------------------------------------

    def call(self, method: str, *params: Any, what: str, limit: int = MAX_ANSWER_BYTES, document: str | None = None) -> Any:
        """One XML-RPC call's answer, read to at most ``limit`` bytes (beyond: DocumentTooLarge
        for a ``document``'s call, else AgentError); WikiFault for a fault, AgentError when it
        cannot be had."""
        request = xmlrpc.client.dumps(params, method, encoding="utf-8").encode("utf-8")
        headers = {"Content-Type": "text/xml; charset=utf-8"}
        body = self.http.answer("POST", self.endpoint, what, limit, data=request, headers=headers)
        if body is None:
            raise DocumentTooLarge(document) if document else AgentError(f"{what} is larger than {limit} bytes")
        return answer_of(body, f"{self.http.where} answered {what}")

    def _signed_in(self) -> None:
        """AgentError unless the wiki takes the crawl's account: a wiki that does not takes the
        call as an anonymous reader's, and would list only the public pages (the others would
        leave the index)."""
        if not self.wiki.username:
            return
        auth = self.http.session().auth
        password = auth[1] if isinstance(auth, tuple) else ""
        if self.call("dokuwiki.login", self.wiki.username, password, what="the sign-in", limit=SMALL_ANSWER_BYTES) is not True:
            raise AgentError(f"{self.http.where} refused the crawl's account {self.wiki.username!r}")

    def _revision(self, key: str) -> int | None:
        """The page's current revision; None when there is no such page (any more)."""
        try:
            info = self.call("wiki.getPageInfo", key, what=f"page {key}", limit=SMALL_ANSWER_BYTES)
        except WikiFault as fault:
            if fault.code == FAULT_MISSING:
                return None
            raise
        if not isinstance(info, dict):
            raise AgentError(f"{self.http.where} answered page {key} with no page information")
        version = info.get("version")  # DokuWiki answers an empty struct for a page there is not
        if info.get("name") != key:
            # DokuWiki cleans the id it is asked (pages/_/secret/x.txt is listed as _:secret:x,
            # and read as secret:x): a page listed under an id it does not answer to is none
            logger.debug("dokuwiki: %r answers as %r: not a page of its own", key, str(info.get("name"))[:200])
            return None
        return version if isinstance(version, int) else None

    # -- references and access --------------------------------------------------------------

    def _reference(self, page_id: str, page: dict[str, Any]) -> Reference:
        revision, digest = page.get("rev"), page.get("hash")
        token = f"{revision}|{digest}" if isinstance(revision, int) and isinstance(digest, str) else None
        namespace = page_id.rpartition(":")[0]
        fields: dict[str, Any] = {"display_url": self.display_url(page_id), "page_id_s": page_id, "namespace_s": namespace}
        modified = datetime.fromtimestamp(revision, tz=UTC) if isinstance(revision, int) and 0 < revision < 1e11 else None
        if modified is not None:
            fields["last_modified"] = modified.strftime("%Y-%m-%dT%H:%M:%SZ")
        access, unreadable = self._access(page_id) if self.wiki.gives_access else (None, None)
        metadata = {"page_id": page_id, "namespace": namespace}
        return Reference(
            key=page_id,
            token=token,
            modified=modified,
            fields=fields,
            metadata={name: value for name, value in metadata.items() if value},
            access=access,
            access_unreadable=unreadable,
        )

    def display_url(self, page_id: str) -> str:
        return f"{self.wiki.url}doku.php?id={quote(page_id, safe=':')}"

    def _access(self, page_id: str) -> tuple[Access | None, str | None]:
        rules = self._rules if self._rules is not None else self._read_rules()
        self._rules = rules
        return rules.access_of(page_id, self.names)

    def _read_rules(self) -> WikiAcl:
        """The wiki's rules, read at each listing (a change of rules is seen by the next crawl)."""
        path = self.wiki.acl_file or ""
        # as PHP reads it: bytes, a byte order mark a scope's first bytes
        return read_acl(server_file(path, "the wiki's rules", MAX_FILE_BYTES).decode("utf-8", errors="replace"), path)


def answer_of(body: bytes, where: str) -> Any:
    """An XML-RPC answer's value (``where`` begins the errors: "the wiki ... answered page x");
    WikiFault for a fault, AgentError for what is no answer. An answer with a document type is
    not parsed (no entity of a hostile server is ever expanded)."""
    if b"<!DOCTYPE" in body.upper() or b"<!ENTITY" in body.upper():
        raise AgentError(f"{where} with a document type: not read")
    try:
        # dates stay DateTime: DokuWiki writes them in ISO 8601, which the builtin type refuses
        return xmlrpc.client.loads(body)[0][0]
    except xmlrpc.client.Fault as fault:
        code = fault.faultCode if isinstance(fault.faultCode, int) else 0
        raise WikiFault(code, str(fault.faultString)) from None
    except (ExpatError, xmlrpc.client.ResponseError, ValueError, TypeError, IndexError, OverflowError):
        raise AgentError(f"{where} with no XML-RPC answer") from None


def text_hash(text: str) -> str:
    """The MD5 DokuWiki lists for a page's text (``md5(trim(rawWiki($id)))``)."""
    return hashlib.md5(text.strip(" \t\n\r\x00\x0b").encode("utf-8"), usedforsecurity=False).hexdigest()


def page_html(page_id: str, rendered: str) -> str:
    """The wiki's rendering of a page as a document titled by its first heading (else its id)."""
    title = page_id
    try:
        fragment = lxml_html.fragment_fromstring(rendered, create_parent="div") if rendered.strip() else None
    except (ValueError, lxml_html.etree.ParserError):
        fragment = None
    heading = fragment.find(".//h1") if fragment is not None else None
    if heading is None and fragment is not None:
        heading = next(iter(fragment.xpath(".//h2|.//h3")), None)
    if heading is not None and heading.text_content().strip():
        title = " ".join(heading.text_content().split())[:500]
    return f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{escape(title)}</title></head><body>{rendered}</body></html>'
