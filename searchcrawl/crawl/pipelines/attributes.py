"""Turns a fetched document into its Solr document: text and search attributes.

HTML pages are read from their parsed tree; PDF, office and other files are converted to text in
worker processes (searchcrawl/content/convert), with their own metadata as attributes. Then the source's
attribute mapping, every field cleaned (searchcrawl/content/clean_text.py), the description
fallback, whether its language is to be detected (nothing declares one: LanguagePipeline detects
it, after the change check), and the text the checksum is taken over (``checksum_of``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from scrapy.crawler import Crawler

from searchcrawl.config.source import SourceSettings
from searchcrawl.content.clean_text import clean_fields, clean_text
from searchcrawl.content.convert import ConversionError, ConverterUnavailable, DocumentConverter
from searchcrawl.content.convert.core import TRANSIENT_STATUSES, has_words, identifies
from searchcrawl.content.extract import (
    file_name,
    html_attributes,
    main_text,
    mapped_attributes,
    meta_tags,
    mimetype_of,
    solr_document,
    split_keywords,
    text_attributes,
    typed_value,
)
from searchcrawl.content.field_rules import FieldRules
from searchcrawl.content.regions import ContentRegions, RegionText
from searchcrawl.crawl.exceptions import NotIndexed
from searchcrawl.crawl.extensions.stores import source_of, stores_of
from searchcrawl.crawl.items import CrawledDocument
from searchcrawl.rules.display_urls import DisplayUrls
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status

logger = logging.getLogger(__name__)

DESCRIPTION_FALLBACK_CHARS = 300
CONVERSION_STATUS = {"too_large": Status.TOO_LARGE, "no_text": Status.EMPTY}  # else CONVERSION_FAILED


def page_count(pages: object) -> int | None:
    """A converter's page count as Solr's int, or None (left out: none, not a number, beyond an
    int, which Solr would wrap)."""
    if not isinstance(pages, str):
        return None
    try:
        return int(typed_value(pages, "int"))
    except ValueError as exc:
        logger.debug("Page count %r left out: %s", pages[:50], exc)
        return None


def checksum_basis(title: str, text: str, body: bytes | None, raw: bool) -> str | bytes:
    """What a document's checksum (what change and duplicate detection compare) is taken over:
    what is indexed about it, its title and text (two pages are duplicates only if both are the
    same); for a converted file (``body``), its bytes when the source says ``checksum_of = "raw"``
    or when its text is too short to tell it from another (``identifies``: no text, or fewer than
    MIN_TEXT_CHARS letters or digits): two files that both say "Test" are two documents, and only
    the same bytes make a duplicate. The short text itself is indexed and found all the same."""
    if body is not None and (raw or not identifies(text)):
        return body
    return f"{title}\n{text}"


class AttributesPipeline:
    """Title, text and attributes of each document (see the module's docstring), by the source's
    settings, its display URL rules, and the converter for files other than HTML (made on first use)."""

    def __init__(self, settings: SourceSettings, converter: Callable[[], DocumentConverter]) -> None:
        self.settings = settings
        self.display_urls = DisplayUrls(settings.display_urls)
        self.regions = ContentRegions(settings.regions)
        self.field_rules = FieldRules(settings.fields)
        self.converter = converter
        self._converting: asyncio.Semaphore | None = None  # made in the reactor's loop, on first use

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AttributesPipeline:
        stores = stores_of(crawler)
        return cls(source_of(crawler).settings, lambda: stores.converter)

    async def process_item(self, item: CrawledDocument) -> CrawledDocument:
        if item.access_update:  # only its access changed: nothing to extract
            return item
        settings = self.settings
        basis: str | None = None  # the main text, when the checksum is taken over it
        regioned: RegionText | None = None  # the page's text by its regions, and its prose
        ruled: dict[str, Any] = {}  # the source's field rules' values (HTML only)
        if item.tree is not None:
            ruled = self.field_rules.fields(item.tree, item.url)
            found = meta_tags(item.tree)
            attributes, regioned = self.html(item)
            if settings.main_text or settings.checksum_of == "main_text":
                main = main_text(item.tree)
                if main and settings.main_text:
                    attributes["content"] = main
                basis = main if settings.checksum_of == "main_text" else None
            item.tree = item.region_text = None  # the tree can be large; nothing after this needs it
        elif item.body is not None:
            found, attributes = await self.converted(item)
        else:
            found, attributes = {}, text_attributes(item.text or "", item.url, item.headers)
            item.text = None
        if item.metadata:  # an agent's named values, mapped as meta tags are
            found = {**found, **item.metadata}
        attributes.update(mapped_attributes(found, settings.attributes, settings.search_attributes))
        attributes.update(ruled)
        attributes.update(item.given)  # what the agent knows wins over what extraction found
        if regioned is not None and regioned.prose is not None and attributes.get("content") == regioned.text:
            # the text less its link lists, what snippets and passages are made of (never searched):
            # only where the content is still the regions' text (not main_text's, not an agent's)
            attributes.update(prose=regioned.prose, has_prose=True)
        attributes = clean_fields(attributes)  # before anything reads it: the checksum, Solr
        basis = clean_text(basis) if basis else basis
        content = attributes.get("content") or ""
        if item.body is not None and content and not has_words(content):
            logger.debug("No letter or digit in the text of %s (%d characters): a document without text", item.url, len(content))
            content = attributes["content"] = ""
        if not content and not attributes.get("title"):
            self.drop(item, Status.EMPTY, "no text to index")
        # a converted document without text (an image, an empty sheet, a scan without OCR): its
        # metadata and file name, when the source indexes such documents
        without_text = item.body is not None and not content
        if without_text and not settings.index_without_text:
            self.drop(item, Status.EMPTY, "no text to index (index_without_text is false)")
        if without_text:
            note = "indexed without text: its metadata and file name"
            item.note = f"{item.note}; {note}" if item.note else note
        if settings.description_fallback and not attributes.get("description") and content:
            start = attributes.get("prose") or content  # a page's first words, not its first links
            attributes["description"] = start[:DESCRIPTION_FALLBACK_CHARS].rsplit(" ", 1)[0]
        item.detect_language = settings.detect_language and not attributes.get("language")
        if item.body is not None and content and not identifies(content):
            logger.debug(
                "Text of %s too short to identify it (%d characters): indexed, its checksum over its bytes",
                item.url,
                len(content),
            )
        item.checksum_basis = checksum_basis(
            attributes.get("title") or "", basis or content, item.body, settings.checksum_of == "raw"
        )
        item.body = None
        item.fields = solr_document(item.source, item.url, attributes, item.headers)
        item.fields["display_url"] = item.given.get("display_url") or self.display_urls.display_url(item.url)
        return item

    def html(self, item: CrawledDocument) -> tuple[dict[str, Any], RegionText | None]:
        """An HTML page's attributes, its text by the source's regions (read by the spider already,
        for its soft-error markers, or here), and that text with its prose (None: not read)."""
        url, read = item.url, [item.region_text] if item.region_text is not None else []

        def region_text(body: Any) -> str:
            if not read:
                read.append(self.regions.text(body, url))
            return read[0].text

        attributes = html_attributes(item.tree, item.headers, region_text)
        return attributes, read[0] if read else None

    async def converted(self, item: CrawledDocument) -> tuple[dict[str, str], dict[str, Any]]:
        """Text and attributes of a PDF, office or other file (in a worker process)."""
        assert item.body is not None
        name = urlsplit(item.url).path.rstrip("/").rsplit("/", 1)[-1]  # as sent: the converter reads its extension
        mimetype = mimetype_of(item.headers.get("content-type"))
        converter = self.converter()
        if self._converting is None:
            self._converting = asyncio.Semaphore(converter.concurrency)
        try:
            # documents wait for the converter here, in the event loop, not in threads: the
            # default thread pool also serves the Solr push and the fleet's leases
            async with self._converting:
                document = await asyncio.to_thread(converter.convert, item.body, mimetype, name)
        except ConversionError as exc:
            status = CONVERSION_STATUS.get(exc.status, Status.CONVERSION_FAILED)
            if exc.status in TRANSIENT_STATUSES:  # perhaps the converter's load: counted, tried again
                outcome = Outcome(Event.FAILED, int(status), f"{exc.status}: {exc}", item.depth)
                raise NotIndexed(outcome, f"Not converted ({exc.status}: {exc}): {item.url}", log_level="WARNING") from None
            self.drop(item, status, f"{exc.status}: {exc}")
        except ConverterUnavailable as exc:
            # not the document's fault: no validators or checksum of this fetch are kept, so the
            # next crawl fetches and converts it again; the indexed version stays meanwhile
            outcome = Outcome(Event.FAILED, int(Status.CONVERTER_UNAVAILABLE), str(exc), item.depth, counted=False)
            raise NotIndexed(outcome, f"Not converted ({exc}): {item.url}", log_level="WARNING") from None
        if document.warning:
            item.note = f"{item.note}; {document.warning}" if item.note else document.warning
        metadata = document.metadata
        found = {key.lower(): value if isinstance(value, str) else ", ".join(value) for key, value in metadata.items()}
        found = {**document.properties, **found}  # a converter's own names (Tika's dc:creator, ...) too
        keywords = metadata.get("keywords") or []
        subjects = split_keywords(keywords) if isinstance(keywords, str) else list(keywords)
        subject = metadata.get("subject")
        if isinstance(subject, str) and subject not in subjects:
            subjects.append(subject)
        attributes = {
            "title": metadata.get("title") or file_name(item.url),
            "author": metadata.get("author"),
            "subject": subjects,
            "language": metadata.get("language"),
            "content": document.text.strip(),
            "document_kind_s": document.kind,
            "page_count_i": page_count(metadata.get("pages")),
            "created_dt": metadata.get("created"),
        }
        if metadata.get("modified") and not item.headers.get("last-modified"):
            attributes["last_modified"] = metadata["modified"]  # the file's own date, when HTTP gives none
        return found, attributes

    def drop(self, item: CrawledDocument, status: Status, reason: str) -> None:
        raise NotIndexed(
            Outcome(Event.GONE, int(status), reason, item.depth, columns=item.record), f"Not indexed ({reason}): {item.url}"
        )
