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
from dataclasses import dataclass, field
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
from searchcrawl.crawl.items import ConvertedDocument, CrawledDocument
from searchcrawl.crawl.stores import source_of, stores_of
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


@dataclass(frozen=True)
class Extracted:
    """What a document's own form says, before the source's mapping: the named values found
    (meta tags, a converter's metadata), the attributes read, the main text when the checksum is
    taken over it, an HTML page's text by its regions (with its prose) and its field rules' values."""

    found: dict[str, str]
    attributes: dict[str, Any]
    main: str | None = None
    regioned: RegionText | None = None
    ruled: dict[str, Any] = field(default_factory=dict)


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
        """The attributes stage, in named steps: what the document's own form says, the source's
        mapping over it, the text to index (or the document dropped), then its frozen result."""
        if item.access_update:  # only its access changed: nothing to extract
            return item
        extracted = await self.extract(item)
        attributes = self.attributes_of(item, extracted)
        content = self.text_to_index(item, attributes)
        item.converted = self.converted_document(item, attributes, extracted.main, content)
        # read: its headers alone stay (the change check's); the checksum's basis holds the bytes
        # when it is taken over them
        item.fetched = item.fetched.headers_only()
        return item

    async def extract(self, item: CrawledDocument) -> Extracted:
        """What the document's own form says: an HTML page's tree, a converted file, plain text."""
        fetched = item.fetched
        if fetched.tree is not None:
            return self.from_html(item)
        if fetched.body is not None:
            found, attributes = await self.converted(item)
            return Extracted(found, attributes)
        return Extracted({}, text_attributes(fetched.text or "", item.url, fetched.headers))

    def from_html(self, item: CrawledDocument) -> Extracted:
        """An HTML page's meta tags, attributes, main text (when the source indexes it or takes
        the checksum over it), text by its regions and the source's field rules' values."""
        settings, tree = self.settings, item.fetched.tree
        ruled = self.field_rules.fields(tree, item.url)
        tags = meta_tags(tree)  # read once: the attributes' and the source's mapping's
        attributes, regioned = self.html(item, tags)
        main: str | None = None
        if settings.main_text or settings.checksum_of == "main_text":
            text = main_text(tree)
            if text and settings.main_text:
                attributes["content"] = text
            main = text if settings.checksum_of == "main_text" else None
        return Extracted(tags, attributes, main, regioned, ruled)

    def attributes_of(self, item: CrawledDocument, extracted: Extracted) -> dict[str, Any]:
        """The source's attribute mapping over the named values found (an agent's too), its field
        rules, what the agent knows (it wins over extraction), the prose; every field cleaned
        before anything reads it (the checksum, Solr)."""
        settings = self.settings
        found = {**extracted.found, **item.metadata} if item.metadata else extracted.found
        attributes = dict(extracted.attributes)
        attributes.update(mapped_attributes(found, settings.attributes, settings.search_attributes))
        attributes.update(extracted.ruled)
        attributes.update(item.given)
        regioned = extracted.regioned
        if regioned is not None and regioned.prose is not None and attributes.get("content") == regioned.text:
            # the text less its link lists, what snippets and passages are made of (never searched):
            # only where the content is still the regions' text (not main_text's, not an agent's)
            attributes.update(prose=regioned.prose, has_prose=True)
        return clean_fields(attributes)

    def text_to_index(self, item: CrawledDocument, attributes: dict[str, Any]) -> str:
        """The text to index (a converted text without a letter or digit is none); a document
        with neither text nor title is dropped, and so is a converted one without text (an
        image, an empty sheet, a scan without OCR) unless the source indexes its metadata and
        file name (``index_without_text``)."""
        content: str = attributes.get("content") or ""
        converted = item.fetched.body is not None
        if converted and content and not has_words(content):
            logger.debug("No letter or digit in the text of %s (%d characters): a document without text", item.url, len(content))
            content = attributes["content"] = ""
        if not content and not attributes.get("title"):
            self.drop(item, Status.EMPTY, "no text to index")
        if converted and not content:
            if not self.settings.index_without_text:
                self.drop(item, Status.EMPTY, "no text to index (index_without_text is false)")
            note = "indexed without text: its metadata and file name"
            item.note = f"{item.note}; {note}" if item.note else note
        return content

    def converted_document(
        self, item: CrawledDocument, attributes: dict[str, Any], main: str | None, content: str
    ) -> ConvertedDocument:
        """The stage's frozen result: the description fallback, the Solr document with its display
        URL, what the checksum is taken over, and whether the language is still to be detected."""
        settings = self.settings
        if settings.description_fallback and not attributes.get("description") and content:
            start = attributes.get("prose") or content  # a page's first words, not its first links
            attributes["description"] = start[:DESCRIPTION_FALLBACK_CHARS].rsplit(" ", 1)[0]
        body = item.fetched.body
        if body is not None and content and not identifies(content):
            logger.debug(
                "Text of %s too short to identify it (%d characters): indexed, its checksum over its bytes",
                item.url,
                len(content),
            )
        basis = checksum_basis(
            attributes.get("title") or "",
            (clean_text(main) if main else None) or content,
            body,
            settings.checksum_of == "raw",
        )
        display_url = item.given.get("display_url") or self.display_urls.display_url(item.url)
        fields = {**solr_document(item.source, item.url, attributes, item.fetched.headers), "display_url": display_url}
        return ConvertedDocument(fields, basis, display_url, settings.detect_language and not attributes.get("language"))

    def html(self, item: CrawledDocument, tags: dict[str, str] | None = None) -> tuple[dict[str, Any], RegionText | None]:
        """An HTML page's attributes (``tags``: its meta tags, read already), its text by the
        source's regions (read by the spider already, for its soft-error markers, or here), and
        that text with its prose (None: not read)."""
        fetched, url = item.fetched, item.url
        read = [fetched.region_text] if fetched.region_text is not None else []

        def region_text(body: Any) -> str:
            if not read:
                read.append(self.regions.text(body, url))
            return read[0].text

        attributes = html_attributes(fetched.tree, fetched.headers, region_text, tags)
        return attributes, read[0] if read else None

    async def converted(self, item: CrawledDocument) -> tuple[dict[str, str], dict[str, Any]]:
        """Text and attributes of a PDF, office or other file (in a worker process)."""
        fetched = item.fetched
        assert fetched.body is not None
        name = urlsplit(item.url).path.rstrip("/").rsplit("/", 1)[-1]  # as sent: the converter reads its extension
        mimetype = mimetype_of(fetched.headers.get("content-type"))
        converter = self.converter()
        if self._converting is None:
            self._converting = asyncio.Semaphore(converter.concurrency)
        try:
            # documents wait for the converter here, in the event loop, not in threads: the
            # default thread pool also serves the Solr push and the fleet's leases
            async with self._converting:
                document = await asyncio.to_thread(converter.convert, fetched.body, mimetype, name)
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
        if metadata.get("modified") and not fetched.headers.get("last-modified"):
            attributes["last_modified"] = metadata["modified"]  # the file's own date, when HTTP gives none
        return found, attributes

    def drop(self, item: CrawledDocument, status: Status, reason: str) -> None:
        raise NotIndexed(
            Outcome(Event.GONE, int(status), reason, item.depth, columns=item.record), f"Not indexed ({reason}): {item.url}"
        )
