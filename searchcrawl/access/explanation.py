"""Why a searcher may (or may not) read a document: what `scrapy explain-access USER URL` prints,
and the administration page shows.

For each source that holds the URL: the document's access, each token with where it came from
(the document table's record of it, with the origins the crawl found; else the tokens Solr
holds, with the origin "index"), then the searcher's principals with theirs, then the decision
(decision.py ``decide``: the rule the search's Solr filters apply) and the entry that decided it.
Plain functions: the caller finds the documents (``HeldDocument``) and the principals.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote

from searchcrawl.access.decision import Principals, decide
from searchcrawl.access.ntfs import sid_name
from searchcrawl.access.tokens import (
    DENY_FIELD,
    LATE_DENY_FIELD,
    LEVEL_FIELDS,
    OVERRIDING_FIELD,
    PUBLIC,
    Access,
    AccessError,
    Grant,
    Level,
)
from searchcrawl.rules.urls import agent_url
from searchcrawl.system.translations import N_

ACCESS_COLUMN = "access"  # the document table's column of a document's Access.to_data() (JSON)
FROM_TABLE = "the document table"
FROM_INDEX = "the index (Solr's stored fields; the crawl's origins are not there)"
LEVEL_NAMES = ("document", "level 1 above it", "level 2 above it", "level 3 above it")


class IndexedDocuments(Protocol):
    """What is asked of the index (``SolrIndex.search`` of index/solr_client.py, handed in from above):
    its stored documents of a URL, untrimmed; an answer with their ``docs``."""

    def search(self, query: str, **params: Any) -> Any: ...


class DocumentRows(Protocol):
    """What is read of the document table (``DocumentTable.get``): a URL's row of a source."""

    def get(self, source: str, url: str) -> dict[str, Any] | None: ...


class SidNames(Protocol):
    """What is asked of the directory (``Directory.sid_names``): the names of Windows SIDs."""

    def sid_names(self, sids: Iterable[str]) -> dict[str, str]: ...


@dataclass(frozen=True)
class HeldDocument:
    """A source's document of the URL, and its access as read from ``where`` (None: it has
    none, and is shown to no one)."""

    source: str
    url: str
    access: Access | None
    where: str


def access_of_fields(fields: Mapping[str, Any]) -> Access | None:
    """The access a Solr document holds (its ``access_allow`` .. ``_3`` and ``access_deny``), each
    token's origin "index: <field>"; None when it has no ``access_allow`` (indexed without)."""
    if not fields.get(LEVEL_FIELDS[0]):
        return None
    levels = []
    for name, shown in zip(LEVEL_FIELDS, LEVEL_NAMES, strict=True):
        tokens = list(fields.get(name) or [])
        if name != LEVEL_FIELDS[0] and (not tokens or tokens == [PUBLIC]):
            continue  # no such level
        levels.append(Level(shown, tuple(Grant.of(token, f"index: {name}") for token in tokens)))

    def grants(name: str) -> tuple[Grant, ...]:
        return tuple(Grant.of(token, f"index: {name}") for token in fields.get(name) or [])

    return Access(tuple(levels), grants(DENY_FIELD), late_deny=grants(LATE_DENY_FIELD), overriding=grants(OVERRIDING_FIELD))


def access_of_row(value: Any) -> Access | None:
    """The access the document table records (``Access.to_data()``, as JSON text or decoded),
    None when there is none or it cannot be read."""
    if value in (None, "", {}):
        return None
    try:
        return Access.from_data(json.loads(value) if isinstance(value, str | bytes) else value)
    except (ValueError, KeyError, TypeError, AccessError):
        return None


def held_documents(index: IndexedDocuments, table: DocumentRows | None, url: str) -> list[HeldDocument]:
    """Each source's document of ``url`` in the index (all of them: what an administrator asks
    about, untrimmed), found by its URL in any form ``indexed_forms`` gives or by its display URL
    (what `scrapy search` prints); its access from the document table when it records one, else
    from the index's fields; IndexingError when Solr does not answer."""
    fields = ",".join(("source", "url", *LEVEL_FIELDS, DENY_FIELD, LATE_DENY_FIELD, OVERRIDING_FIELD))
    forms = {f"url{number}": form for number, form in enumerate(indexed_forms(url))}
    clauses = {f"clause{number}": f"{{!term f=url v=${name}}}" for number, name in enumerate(forms)}
    clauses["shown"] = "{!term f=display_url v=$asked}"
    found = index.search(
        "*:*",
        fq="{!bool " + " ".join(f"should=${name}" for name in clauses) + "}",
        fl=fields,
        rows=1000,
        sort="source asc",
        asked=url,
        **forms,
        **clauses,
    )
    held = []
    for doc in found.docs:
        source, own = str(doc.get("source") or ""), str(doc.get("url") or url)
        row = table.get(source, own) if table is not None and source else None
        recorded = access_of_row(row.get(ACCESS_COLUMN)) if row else None
        if recorded is not None:
            held.append(HeldDocument(source, own, recorded, FROM_TABLE))
        else:
            held.append(HeldDocument(source, own, access_of_fields(doc), FROM_INDEX))
    return held


# an agent's URL as the docs write it, its key as it is: scheme://source/key
_AGENT_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<source>[^/]+)/(?P<key>.+)", re.DOTALL)
_OWN_FORMS = frozenset({"http", "https", "ftp", "file", "smb"})  # URLs of their own making: taken as they are


def indexed_forms(url: str) -> list[str]:
    """The URLs a document of ``url`` may be indexed under: ``url`` itself, and, for an agent's
    URL written with its key as it is (``imap://mail/bob/INBOX/17/4``, ``dokuwiki://wiki/ns:page``:
    as the docs write them), the form agents index it under (rules/urls.py ``agent_url``). A URL
    already in that form (``imap://mail/bob%2FINBOX%2F17%2F4``, what `scrapy search` prints) is
    taken as it is: encoding it again (``%252F``) could name another document, one whose key holds a ``%``."""
    match = _AGENT_URL.fullmatch(url)
    if match is None or match["scheme"].lower() in _OWN_FORMS:
        return [url]
    scheme, source = match["scheme"], unquote(match["source"])
    if agent_url(scheme, source, unquote(match["key"])) == url:  # already as indexed
        return [url]
    return [url, agent_url(scheme, source, match["key"])]


MAX_URL_CHARS = 8192
# The URLs documents are indexed under: http(s) and ftp, file: URLs, and every agent's
# ``scheme://source/key`` (sql://, mail://, smb://, a custom agent's: agents/base.py). The URL is
# only compared with the index's, never opened; ``javascript:`` and the like are no document's.
_DOCUMENT_URL = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://|file:)\S")
URL_WANTED = N_(
    "an absolute URL as its document is indexed (http://, https://, ftp://, file:, smb://, sql://, mail://, an agent's scheme://)"
)


def explainable_url(url: str) -> bool:
    """Whether ``url`` can be a document's URL: `scrapy explain-access` and the administration
    page take the same URLs."""
    return 0 < len(url) <= MAX_URL_CHARS and _DOCUMENT_URL.match(url) is not None


def access_lines(
    principals: Principals, directory: SidNames | None, index: IndexedDocuments, table: DocumentRows | None, url: str
) -> list[str]:
    """The whole report of ``url`` for ``principals``: each source's document of it
    (``held_documents``), the SIDs named by ``directory`` when there is one, the decision; what
    `scrapy explain-access` prints and the administration page shows. IndexingError when Solr
    does not answer."""
    documents = held_documents(index, table, url)
    names = directory.sid_names(sids_of(documents)) if directory is not None else {}
    return explain_access(principals, documents, url, names)


def sids_of(documents: Sequence[HeldDocument]) -> set[str]:
    """The Windows SIDs the documents' tokens name (what the report asks the directory to name)."""
    found: set[str] = set()
    for held in documents:
        if held.access is None:
            continue
        grants = [*held.access.deny, *held.access.late_deny, *held.access.overriding]
        grants.extend(grant for level in held.access.levels for grant in level.allow)
        found.update(grant.token[4:] for grant in grants if grant.token.startswith("sid:"))
    return found


def explain_access(
    principals: Principals, documents: Sequence[HeldDocument], url: str = "", names: Mapping[str, str] | None = None
) -> list[str]:
    """The report's lines (see the module's docstring); ``names`` of the SIDs the tokens hold
    (the directory's, ``sids_of``), shown beside them."""
    who = principals.user or "a visitor who is not signed in"
    lines = [f"Searcher {who}: {len(principals.entries)} principals"]
    lines.extend(f"  {entry.token}  <- {entry.origin}" for entry in principals.entries)
    if principals.error:
        lines.append(f"  (public only: {principals.error})")
    if principals.partial:
        lines.append(f"  (groups not all read: {principals.partial}; no document with a deny token is shown)")
    if not documents:
        lines.append(f"No source holds {url or 'this URL'} in the index: nothing to decide.")
        return [printable(line) for line in lines]
    for held in documents:
        lines.append("")
        lines.append(f"Source {held.source}: {held.url}")
        if held.access is None:
            lines.append("  no access recorded (indexed without access tokens): shown to no one")
            lines.append("  decision: REFUSED")
            continue
        lines.append(f"  access, from {held.where}:")
        lines.extend(_access_lines(held.access, names or {}))
        decision = decide(held.access, principals)
        lines.append(f"  decision: {'GRANTED' if decision.granted else 'REFUSED'}: {decision.reason}")
    return [printable(line) for line in lines]


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(line: str) -> str:
    """``line`` with its control characters shown as ``\\xNN``: an origin names a file, a row's
    key or a URL (a hostile file name's terminal escapes must not reach the administrator's
    terminal as escapes)."""
    return _CONTROL.sub(lambda found: f"\\x{ord(found[0]):02x}", line)


def _access_lines(access: Access, names: Mapping[str, str]) -> list[str]:
    indexed, levels = access.indexed_levels()
    lines: list[str] = []

    def shown(grant: Grant) -> str:
        name = sid_name(grant.token[4:], dict(names)) if grant.token.startswith("sid:") else ""
        return f"{grant.token}{f' ({name})' if name else ''}  <- {grant.origin}"

    for level in levels:
        lines.append(f"    {level.name} (one of these must be the searcher's):")
        lines.extend(f"      allow {shown(grant)}" for grant in level.allow)
        if not level.allow:
            lines.append("      (no token: no one)")
    lines.extend(f"    deny {shown(grant)}" for grant in access.deny)
    if access.late_deny:
        lines.append("    denied after the first allow entries, unless one of those is the searcher's:")
        lines.extend(f"      deny {shown(grant)}" for grant in access.late_deny)
        lines.extend(f"      unless {shown(grant)}" for grant in access.overriding)
    lines.extend(f"    note: {note}" for note in indexed.notes)
    return lines
