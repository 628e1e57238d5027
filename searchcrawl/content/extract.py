"""Attributes of a document, from its HTTP headers and its HTML. Plain logic, no Scrapy.

The search attributes (title, author, description, subject, mimetype, language, host,
last_modified) come from, in order of preference: the HTML's own metadata (``<title>``,
``<meta name>``, Dublin Core ``dc.*``, ``<html lang>``), then HTTP headers. description comes
only from a description meta tag: a body-text fallback is a per-source choice (later).
"""

from __future__ import annotations

import email.utils
import logging
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from itertools import islice
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

from lxml import etree

logger = logging.getLogger(__name__)

META_ATTRIBUTES = {
    "title": ("dc.title", "dcterms.title"),
    "description": ("description", "dc.description", "dcterms.description", "dcterms.abstract"),
    "subject": ("keywords", "dc.subject", "dcterms.subject"),
    "author": ("author", "dc.creator", "dcterms.creator"),
    "language": ("dc.language", "dcterms.language", "content-language"),
}


def http_date(value: str | None) -> datetime | None:
    """An HTTP date (Last-Modified) as an aware datetime, or None if absent or unparseable."""
    if not value:
        return None
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def http_date_to_iso(value: str | None) -> str | None:
    """An HTTP date (Last-Modified) as Solr's ISO-8601 UTC form, or None if unparseable."""
    parsed = http_date(value)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if parsed else None


def solr_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


def mimetype_of(content_type: str | None) -> str | None:
    if not content_type:
        return None
    return content_type.split(";", 1)[0].strip().lower() or None


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    value = " ".join(value.split())
    return value or None


def meta_tags(root: Any) -> dict[str, str]:
    """``<meta name|http-equiv|property=... content=...>`` as a dict of lower-case names (first wins)."""
    tags: dict[str, str] = {}
    for meta in root.iter("meta"):
        name = meta.get("name") or meta.get("http-equiv") or meta.get("property")
        content = meta.get("content")
        if name and content is not None:
            tags.setdefault(name.strip().lower(), content)
    return tags


def split_keywords(value: str | None) -> list[str]:
    if not value:
        return []
    separator = ";" if ";" in value and "," not in value else ","
    return [word for word in (_clean(part) for part in value.split(separator)) if word]


# The text of a page as html-text's extract_text(guess_layout=False) gives it (the tests compare
# the two on the shared corpora), but in C: html-text walks every element in Python, 5-7 ms for a
# 40 KB page of 800 elements, a fifth of a crawl's CPU. Here libxml2's XPath collects the visible
# text nodes (script, style, applets and frames dropped with their content, as html-text's cleaner
# does), then they are joined with a marker between them, and each marker becomes a space unless
# the node before it ends in "(" or the one after it starts with closing punctuation; whitespace is
# collapsed. Script and style hold only text, so their text nodes are found by their parent; the
# slower ancestor test is for the rare page with applets or frames. Two regular expressions that
# begin with a literal (fast to find) and str.split do the putting together: four expressions, one
# with a look-behind at every position, took 0.40 ms of a Sphinx page's 0.81 ms, these 0.18
# (tests/content/test_extract.py compares the result with html-text's for random nodes too).
_HIDDEN_WITH_CHILDREN = ("applet", "frame", "frameset", "noframes")
_TEXT_NODES = etree.XPath("descendant-or-self::text()[not(parent::script or parent::style)]", smart_strings=False)
_TEXT_NODES_CAREFUL = etree.XPath(
    "descendant-or-self::text()[not(ancestor::script or ancestor::style or ancestor::applet or ancestor::frame"
    " or ancestor::frameset or ancestor::noframes)]",
    smart_strings=False,
)
_SEP = "\ue000"  # a private-use character between text nodes (taken out of the nodes first)
_GAP_AFTER_OPENING = re.compile(rf"\({_SEP}[\s{_SEP}]*")  # "(" then the gap: no space
# the gap, then closing punctuation: none; but not before a dot that begins a word or a path
# (".NET", "../index.html", "..."): a link text "security.html" then "../index.html" stays two
_GAP_BEFORE_CLOSING = re.compile(rf'{_SEP}[\s{_SEP}]*(?=[,:;!?")]|\.(?![\w./]))')
# A gap from its first separator on, made that one separator before the two above read it: each
# of them then tries each separator once. Read as it was, a gap of many separators that closing
# punctuation does not follow (a page of blank elements, ``<i> </i>`` over and over) was read to
# its end from each of its separators: n blank nodes took n² steps (8,000 took 1.9 s; a 7 MB page,
# hours of the crawl's thread). The text is the same: what follows the first separator is
# whitespace and separators, which the last step makes one space anyway (issue 102; on the Nutch
# Javadoc 91 -> 65 us a page)
_GAP_FROM_ITS_SEPARATOR = re.compile(rf"{_SEP}[\s{_SEP}]++")


def visible_text(element: Any) -> str:
    """The element's visible text on one line, words separated as a reader sees them."""
    careful = next(element.iter(*_HIDDEN_WITH_CHILDREN), None) is not None
    return joined_text((_TEXT_NODES_CAREFUL if careful else _TEXT_NODES)(element))


def joined_text(nodes: list[str]) -> str:
    """Text nodes on one line, as a reader sees them (``visible_text``'s joining)."""
    joined = _SEP.join(nodes)
    if joined.count(_SEP) != len(nodes) - 1:  # the marker in the text itself (rare): taken out
        joined = _SEP.join(node.replace(_SEP, "") for node in nodes)
    joined = _GAP_FROM_ITS_SEPARATOR.sub(_SEP, joined)
    joined = _GAP_AFTER_OPENING.sub("(", joined)
    joined = _GAP_BEFORE_CLOSING.sub("", joined)
    return " ".join(joined.replace(_SEP, " ").split())


def body_of(root: Any) -> Any:
    """A page's <body> (the root when it has none): what its text is read from."""
    body = root.find("body")
    return body if body is not None else root


def html_attributes(
    root: Any, headers: Mapping[str, str], text: Callable[[Any], str] = visible_text, tags: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Search attributes of an HTML page, from its parsed tree (lxml) and its response headers;
    ``text`` reads the body's text (a source's content regions: content/regions.py); ``tags``:
    the page's ``meta_tags`` when the caller has read them already."""
    tags = meta_tags(root) if tags is None else tags

    def first(names: tuple[str, ...]) -> str | None:
        for name in names:
            value = _clean(tags.get(name))
            if value:
                return value
        return None

    title_element = root.find(".//title")
    title = _clean(title_element.text_content() if title_element is not None else None) or first(META_ATTRIBUTES["title"])
    language = _clean(root.get("lang") or root.get("{http://www.w3.org/XML/1998/namespace}lang"))
    language = language or first(META_ATTRIBUTES["language"]) or _clean(headers.get("content-language"))
    # each keyword once, in the order given (a list's ``in`` made 16,000 keywords take a second)
    subjects = list(dict.fromkeys(s for name in META_ATTRIBUTES["subject"] for s in split_keywords(tags.get(name))))
    body = body_of(root)
    return {
        "title": title,
        "description": first(META_ATTRIBUTES["description"]),
        "subject": subjects,
        "author": first(META_ATTRIBUTES["author"]),
        "language": language.split(",")[0].strip().lower() if language else None,
        "content": text(body),
        "outline": outline(body),
    }


MAX_HEADINGS, MAX_HEADING_CHARS = 200, 200
HEADINGS = ("h1", "h2", "h3")


def holds_another(element: Any, tags: tuple[str, ...]) -> bool:
    """Whether ``element`` has one of ``tags`` inside it (itself aside): a heading in a heading, a
    link in a link, which no HTML allows and libxml2 nests as written; read up to the first."""
    return next(islice(element.iter(*tags), 1, None), None) is not None


def outline(body: Any) -> list[str]:
    """The page's headings (h1-h3, in order, at most MAX_HEADINGS of MAX_HEADING_CHARS each):
    where its passages begin (semantic/passages.py), stored with the document, never searched."""
    headings: list[str] = []
    # lxml's iteration by tag, in the page's order (an XPath testing every element's name cost
    # twice as much, issue 102); the body itself is no heading of its own. A heading with a
    # heading inside it (no HTML allows one; libxml2 nests them as written) is none of its own:
    # its inner ones are. Read whole, each of n nested headings read all those inside it again,
    # and a page of 2,000 blank ones took 21 s (a hostile-input review, issue 102).
    for element in body.iter(*HEADINGS):
        if element is body or holds_another(element, HEADINGS):
            continue
        heading = visible_text(element)[:MAX_HEADING_CHARS]
        if heading:
            headings.append(heading)
            if len(headings) >= MAX_HEADINGS:
                break
    return headings


DEFAULT_ATTRIBUTES = frozenset({"title", "author", "description", "subject", "language"})
# Search attributes beyond the defaults are Solr dynamic fields: their type gives the suffix.
TYPE_SUFFIXES = {
    "string": "_s",
    "strings": "_ss",
    "text": "_t",
    "int": "_i",
    "long": "_l",
    "double": "_d",
    "date": "_dt",
    "boolean": "_b",
}


# Solr's int and long (pint, plong): a number beyond them is not wrapped here (Solr would store
# 99999999999 as 1215752191) but left out
INT_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}


def integer_in_range(value: int, kind: str) -> int:
    """``value`` as Solr's ``kind`` (int or long) holds it: ValueError beyond its range."""
    low, high = INT_RANGES[kind]
    if not low <= value <= high:
        raise ValueError(f"{value} is beyond Solr's {kind} ({low} to {high})")
    return value


def typed_value(value: str, kind: str) -> Any:
    """A source attribute's text as a value of its search attribute's type (ValueError if it is
    not one, or a number beyond its type's range)."""
    if kind in ("string", "text"):
        return value
    if kind == "strings":
        return split_keywords(value)
    if kind in INT_RANGES:
        return integer_in_range(int(value.strip()), kind)
    if kind == "double":
        return float(value.strip())
    if kind == "boolean":
        lowered = value.strip().lower()
        if lowered not in ("true", "false", "yes", "no", "1", "0"):
            raise ValueError(f"not a boolean: {value!r}")
        return lowered in ("true", "yes", "1")
    if kind == "date":
        iso = http_date_to_iso(value) or _iso_date(value)
        if iso is None:
            raise ValueError(f"not a date: {value!r}")
        return iso
    raise ValueError(f"unknown type {kind!r}")


def _iso_date(value: str) -> str | None:
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def mapped_attributes(found: Mapping[str, str], mapping: Mapping[str, str], types: Mapping[str, str]) -> dict[str, Any]:
    """The source's own attributes (``attributes = { revision = "version" }``: the ``revision``
    meta tag, or a converted file's own ``revision`` property) under their search attribute
    names. Beyond the defaults they are Solr dynamic fields of their declared type
    (``search_attributes = { version = "string" }`` -> ``version_s``; string when undeclared), so
    documents from different sources are queried by one attribute. Values that are not of the
    type are left out."""
    result: dict[str, Any] = {}
    for name, target in mapping.items():
        value = _clean(found.get(name))
        if not value:
            continue
        if target in DEFAULT_ATTRIBUTES:
            result[target] = split_keywords(value) if target == "subject" else value
            continue
        kind = types.get(target, "string")
        try:
            result[target + TYPE_SUFFIXES[kind]] = typed_value(value, kind)
        except ValueError as exc:
            logger.debug("Attribute %r left out, not of its type %s: %s", target, kind, exc)
            continue
    return result


def main_text(root: Any) -> str | None:
    """The page's main text without navigation, footers and other boilerplate (trafilatura)."""
    import trafilatura
    from lxml import html as lxml_html

    extracted = trafilatura.extract(
        lxml_html.tostring(root, encoding="unicode"), include_comments=False, include_tables=True, favor_recall=True
    )
    return extracted.strip() if extracted else None


def file_name(url: str) -> str:
    """The last segment of ``url``'s path as a reader names the file: percent-decoded
    (``meeting%20notes.txt`` is "meeting notes.txt"), as UTF-8, else as windows-1252 (an old
    server's Latin-1 name, ``%FCbersicht.txt``); "" when the path ends in "/"."""
    return decode_name(unquote_to_bytes(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]))


def decode_name(raw: bytes) -> str:
    """A file or folder name's bytes as a reader names them, the one rule for a document's title
    and for the files agent's ``file_name_s``, ``path_s`` and ``folder_s``: UTF-8; a name that is
    not UTF-8 as windows-1252 (the legacy encoding such names come in from old Windows, Samba and
    Latin-1 systems: ``caf\xe9`` is "café"), the five bytes windows-1252 leaves undefined (0x81,
    0x8D, 0x8F, 0x90, 0x9D) as U+FFFD. A path is decoded name by name (``decode_path``)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", "replace")


def decode_path(raw: bytes) -> str:
    """A path's bytes, each of its names decoded by ``decode_name``: a Latin-1 file name in a
    folder named in UTF-8 keeps both right."""
    return "/".join(decode_name(part) for part in raw.split(b"/"))


def text_attributes(text: str, url: str, headers: Mapping[str, str]) -> dict[str, Any]:
    """Search attributes of a plain-text document: its file name stands in for a title."""
    name = file_name(url) or url
    language = _clean(headers.get("content-language"))
    return {"title": name, "content": text.strip(), "language": language.lower() if language else None}


# ports a URL need not name: the host facet shows a host alone on them
DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21, "smb": 445}


def host_of(url: str) -> str | None:
    """The ``host`` field of ``url``'s document: its host name in lower case, with the port when
    the URL names one that is not its scheme's default (``127.0.0.1:8080``), so that two
    services of one machine are two values of the host facet; an IPv6 address is bracketed when
    a port follows it. None for a URL without a host (``file:///...``)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced bracket ("http://[::1/"): no host to name
        return None
    host = (parts.hostname or "").lower()
    if not host:
        return None
    try:
        port = parts.port
    except ValueError:  # not a number, or out of range: the URL's host alone
        return host
    if port is None or port == DEFAULT_PORTS.get(parts.scheme.lower()):
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def solr_id(source: str, url: str) -> str:
    """The Solr uniqueKey of ``source``'s document at ``url``: ``<source>!<url>``.

    Sources are independent in Solr: two sources crawling one URL hold two documents, and one
    source's updates and deletions never touch the other's (the ``url`` field is the URL for
    both). The ``!`` is SolrCloud's compositeId separator, so a collection routes a source's
    documents by the source name. Everything that refers to a document in Solr by id uses this.
    """
    return f"{source}!{url}"


def solr_document(source: str, url: str, attributes: dict[str, Any], headers: Mapping[str, str]) -> dict[str, Any]:
    """The Solr document for one page: identity fields, header fields, then its attributes."""
    document: dict[str, Any] = {
        "id": solr_id(source, url),
        "url": url,
        "display_url": url,
        "source": source,
        "host": host_of(url),
        "mimetype": mimetype_of(headers.get("content-type")),
        "last_modified": http_date_to_iso(headers.get("last-modified")),
        "crawled_at": solr_now(),
    }
    document.update(attributes)
    document["id"] = solr_id(source, url)  # never an attribute's; still the first key, as the push expects
    return {key: value for key, value in document.items() if value not in (None, "", [])}
