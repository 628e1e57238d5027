"""The generic source spider: fetches a source's seeds, follows links within its boundary and
gives every URL it meets a status in the document table."""

from __future__ import annotations

import logging
import mimetypes
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import replace
from functools import cached_property
from typing import Any, ClassVar
from urllib.parse import urlsplit

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.linkextractors import IGNORED_EXTENSIONS
from scrapy.settings import BaseSettings
from scrapy.utils.response import get_base_url, get_meta_refresh
from twisted.python.failure import Failure

from searchcrawl.access.source_rules import DocumentAccess
from searchcrawl.access.tokens import Access, AccessUnreadable
from searchcrawl.agents.base import Agent
from searchcrawl.config.source import Source
from searchcrawl.content.anchors import Anchor, page_anchors
from searchcrawl.content.charsets import choose_encoding, looks_binary
from searchcrawl.content.convert import detect_kind, sniff_kind
from searchcrawl.content.extract import body_of, http_date, meta_tags, mimetype_of
from searchcrawl.content.links import DocumentLinks
from searchcrawl.content.nesting import MAX_DEPTH, flatten, too_deep
from searchcrawl.content.regions import ContentRegions, RegionText
from searchcrawl.content.soft_errors import Page, SoftError, SoftErrors
from searchcrawl.crawl.exceptions import RequestRefused, Unsent
from searchcrawl.crawl.items import CrawledDocument, Fetched
from searchcrawl.crawl.meta import (
    CONNECTION_REFUSALS,
    DEPTH,
    FETCH_RECORDS,
    LEAVES_BOUNDARY,
    NOT_FOUND_PAGE,
    PLAYWRIGHT,
    PREVIOUS,
    PROXY,
    REDIRECT_URLS,
    RENDER,
)
from searchcrawl.crawl.pipelines.checksum import access_update, content_of, versioned
from searchcrawl.crawl.requests import Admission, BoundedSet, RequestFactory, admission_of
from searchcrawl.crawl.signals import url_outcome
from searchcrawl.crawl.stores import tika_configured
from searchcrawl.rules.chain import RuleStep
from searchcrawl.rules.filters import FilterSet
from searchcrawl.rules.lifecycle import REDIRECT_STATUSES, Delta, Event, Outcome
from searchcrawl.rules.navigation_pages import navigation_pattern
from searchcrawl.rules.rendering import empty_shell
from searchcrawl.rules.robots_meta import robots_directives
from searchcrawl.rules.status_codes import UNCOUNTED_FAILURES, Status, describe_failure, status_for_exception, status_for_ignored
from searchcrawl.rules.urls import canonical

logger = logging.getLogger(__name__)

DOCUMENT_EXTENSIONS = {"pdf", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp", "rtf", "txt"}
# Links to these are followed too when a Tika server converts: the office variants, images (read
# by OCR when the source asks, else indexed by name and metadata) and archives (their members are
# embedded documents). Audio, video, executables, scripts and disk images stay unfollowed.
TIKA_EXTENSIONS = {
    *("docb", "docm", "dotm", "dotx", "xlsm", "xltm", "xltx", "pps", "pptm", "potm", "potx", "odg"),
    *("bmp", "gif", "jpeg", "jpg", "png", "tif", "tiff", "webp"),
    *("7z", "bz2", "rar", "tar", "tar.gz", "xz", "zip"),
}


def ignored_suffixes(followed: set[str]) -> tuple[str, ...]:
    """The path endings of Scrapy's ignored extensions other than ``followed``: links to these
    are not followed (as Scrapy's ``LinkExtractor`` drops them by default)."""
    return tuple(f".{ext}" for ext in IGNORED_EXTENSIONS if ext not in followed)


GONE = (404, 410)  # the document no longer exists: it leaves the index
# answers without a document that may be a bot challenge (a soft error, kept); a login page
# answered so is the site's refusal: the page went private, and leaves the index
REFUSING = (401, 403)
TRANSIENT = (408, 429)  # come back later: counted toward max_failures (as 5xx are)
INDEXED_TYPES = ("text/html", "application/xhtml+xml", "text/plain")
RECORDED_HEADERS = ("content-type", "content-language", "last-modified", "etag", "content-length")


def redirected_from(meta: Mapping[str, Any], url: str) -> str | None:
    """The URL whose temporary redirect led out of the boundary to ``url`` (RedirectMiddleware
    lets only such a last step out), else None. Kept with every outcome of ``url`` (the row's
    ``via``), whatever it answered: once nothing redirects to it any more, the end of the run
    excludes it by the boundary (DocumentTable.drop_stale_targets)."""
    urls = meta.get(REDIRECT_URLS)
    return str(urls[-1]) if urls and meta.get(LEAVES_BOUNDARY) == url else None


def same_readers(spider: Spider | None, url: str, meta: Mapping[str, Any], checksum: str | None) -> bool:
    """Whether the document at ``url`` (its request's ``meta``) has the readers its indexed ``checksum`` holds
    (crawl/pipelines/checksum.py), by its spider's ``access_of``: what lets a request be spared
    (a duplicate unchanged, a page its sitemap says is unchanged) only while they are the same.
    An access that cannot be known now is not the same (the request goes on, and the document
    leaves the index: 927)."""
    access_of = getattr(spider, "access_of", None)
    if not checksum or access_of is None:
        return True
    try:
        access = access_of(url, meta)
    except AccessUnreadable:
        return False
    return bool(versioned(content_of(checksum), access) == checksum)


class FlattenedResponse(HtmlResponse):
    """A page nested too deep, written again flattened (content.nesting), with the response as it
    was served (``original``): its base URL and meta refresh, read from the first 4,096 characters
    (Scrapy's window, which flattening would fill with more of the page: a far <base href> would
    apply), and its encoding (the copy is UTF-8: a cp1252 link's ``?q=%E9`` would become
    ``?q=%C3%A9``) are the original's."""

    attributes: tuple[str, ...] = (*HtmlResponse.attributes, "original")

    def __init__(self, *args: Any, original: TextResponse, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.original = original

    @classmethod
    def of(cls, response: HtmlResponse) -> FlattenedResponse:
        return response.replace(cls=cls, body=flatten(response.text).encode("utf-8"), encoding="utf-8", original=response)

    def urljoin(self, url: str) -> str:
        return self.original.urljoin(url)


def as_served(response: TextResponse) -> TextResponse:
    """The response as it was served: what its base URL, meta refresh and encoding are read from."""
    return response.original if isinstance(response, FlattenedResponse) else response


def fetch_record(response: Response) -> tuple[dict[str, str], dict[str, Any]]:
    """What a fetch says of a URL: the recorded headers (the content type guessed from the URL
    when the site sends none), and the columns its row keeps (type, size, validators, ``via``)."""
    headers = {name: value.decode("latin-1") for name in RECORDED_HEADERS if (value := response.headers.get(name)) is not None}
    content_type = headers.get("content-type") or mimetypes.guess_type(response.url)[0]
    if content_type:
        headers["content-type"] = content_type
    record: dict[str, Any] = {
        "content_type": content_type,
        "content_length": len(response.body),
        "last_modified": headers.get("last-modified"),
        "etag": headers.get("etag"),
        "via": redirected_from(response.meta, response.url),
    }
    return headers, record


# seeds a crawl names in WARNINGs when the source's own rules exclude them (a seed file may hold
# thousands: one more line gives their number)
SEED_WARNINGS = 10


def seed_urls(source: Source) -> Iterator[str]:
    """The source's seeds as the crawl requests them: canonical, at depth 0, not rewritten (the URL
    rewriter is for links); `scrapy explain` tells a seed by them. One at a time: a seed file may
    hold many."""
    return (canonical(url) for url in source.seed_urls)


class SourceSpider(Spider):
    """Crawl one source. Subclass it (registered by name, ``spider_class`` in the source file) for custom parsing:
    override ``parse_document`` and keep calling ``super()`` for the bookkeeping."""

    source: ClassVar[Source]
    max_parse_bytes: int = 4 * 1024 * 1024
    arguments: dict[str, Any]  # the crawl's arguments (-a name=value): crawl/run.py CrawlArguments
    reported: BoundedSet  # URLs whose outcome this spider reported lately
    renders: ClassVar[bool] = True  # its requests follow the source's render rules
    page_links: DocumentLinks  # a page's links (content/links.py), with its cache of resolved links
    agent: Agent | None = None  # a source of another type than web sites: its agent (crawl/agent_spider.py)

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        """The source's settings (custom_settings), and Chromium's path into Playwright's launch
        options: SEARCHCRAWL_CHROMIUM_PATH is a setting like any other (``-s``, the environment),
        not a value the settings module copied when it was imported."""
        super().update_settings(settings)
        options = settings.getdict("PLAYWRIGHT_LAUNCH_OPTIONS")
        path = settings.get("SEARCHCRAWL_CHROMIUM_PATH")
        if path and options.get("executable_path") != path:
            priority = max(
                settings.getpriority("PLAYWRIGHT_LAUNCH_OPTIONS") or 0, settings.getpriority("SEARCHCRAWL_CHROMIUM_PATH") or 0
            )
            settings.set("PLAYWRIGHT_LAUNCH_OPTIONS", {**options, "executable_path": path}, priority=priority)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SourceSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.arguments = dict(kwargs)
        spider.max_parse_bytes = crawler.settings.getint("SEARCHCRAWL_MAX_PARSE_BYTES")
        spider.reported = BoundedSet(10_000)
        followed = DOCUMENT_EXTENSIONS | TIKA_EXTENSIONS if tika_configured(crawler.settings) else DOCUMENT_EXTENSIONS
        spider.page_links = DocumentLinks(ignored_suffixes(followed))
        return spider

    @cached_property
    def admission(self) -> Admission:
        """How a URL enters the crawl (crawl/requests.py): the source's rules on it, once. An
        extension, built after the spider: found on use."""
        return admission_of(self.crawler)

    @cached_property
    def document_access(self) -> DocumentAccess:
        """Who may read the source's documents (searchcrawl/access/source_rules.py)."""
        return DocumentAccess(f"source {self.source.name}", self.source.source_access(), agent=self.agent is not None)

    def access_of(self, url: str, meta: Mapping[str, Any]) -> Access:
        """The access of the document at ``url`` (its request's ``meta``); AccessUnreadable when
        it cannot be known. A web page's comes from the source's [access] table (public without)."""
        return self.document_access.of(url)

    def with_access(self, item: CrawledDocument, meta: Mapping[str, Any]) -> CrawledDocument:
        """``item`` with its access, or why it cannot be known (the access pipeline drops it: 927)."""
        try:
            item.access = self.access_of(item.url, meta)
        except AccessUnreadable as exc:
            item.access_error = str(exc)
        return item

    @cached_property
    def result_filter(self) -> FilterSet:
        """What keeps a document out of the index while its links are followed (the source's ``[filters.result]``)."""
        return FilterSet(self.source.settings.filters.result, "result")

    @cached_property
    def regions(self) -> ContentRegions:
        """Which parts of a page are its text (the source's ``[regions]``): what soft errors read."""
        return ContentRegions(self.source.settings.regions)

    @cached_property
    def soft_errors(self) -> SoftErrors:
        """What tells a page that is not the page (the source's ``[soft_errors]``)."""
        settings = self.source.settings
        return SoftErrors(settings.soft_errors, settings.signed_in_origins)

    @cached_property
    def requests(self) -> RequestFactory:
        """The one factory of this crawl's requests (crawl/requests.py); the frontier's too."""
        return RequestFactory(self, self.admission, renders=self.renders)

    async def start(self) -> AsyncIterator[Request]:
        excluded = 0
        for url in seed_urls(self.source):
            entry, step = self.admission.seed(url)
            if entry is None:
                self.admission.flush()  # its row, with the rule that keeps it out
                self.warn_excluded(url, step, excluded)
                excluded += 1
                continue
            yield self.requests(entry)
        if excluded > SEED_WARNINGS:
            logger.warning(
                "%d seeds of source %s in all are outside its own rules (the first %d named above); they are not crawled",
                excluded,
                self.source.name,
                SEED_WARNINGS,
            )

    def warn_excluded(self, seed: str, step: RuleStep, excluded: int) -> None:
        """A WARNING naming ``seed`` and the rule of its source's that excludes it (``step``),
        while ``excluded`` (those found before) is under ``SEED_WARNINGS``: a seed its own source
        keeps out is a mistake of the source file, which the status of its row alone would hide."""
        if excluded < SEED_WARNINGS:
            assert step.status is not None  # every refusal has its code
            logger.warning(
                "Seed %s of source %s is outside its own rules, not crawled: %s (%d %s)",
                seed,
                self.source.name,
                step.rule,
                step.status,
                step.status.name.lower(),
            )

    def report(
        self,
        url: str,
        event: Event,
        status: int,
        reason: str | None = None,
        depth: int | None = None,
        kind: Delta | None = None,
        counted: bool = True,
        **columns: Any,
    ) -> None:
        """What happened to ``url``: sent to the ledger writer (crawl/ledger_writer.py)."""
        outcome = Outcome(event, int(status), reason, depth, kind, columns, counted=counted)
        self.reported.add(url)
        self.crawler.signals.send_catch_log(url_outcome, url=url, outcome=outcome)

    # --- responses ------------------------------------------------------------------------

    def parse(self, response: Response) -> Iterator[Any]:
        """Every response of the crawl's pages: its outcome when it has no document (an answer
        without one, a filter's refusal, an unsupported type), else its document and links."""
        depth = response.meta.get(DEPTH, 0)
        headers, record = fetch_record(response)
        if response.status == 304 and response.meta.get(PREVIOUS):
            yield from self.not_modified(response, depth, record["via"])
            return
        if not self.answered(response, depth, record):
            return
        again = self.render_request(response)
        if again is not None:  # render it: the browser's fetch finishes this URL
            yield again
            return
        mimetype = mimetype_of(record["content_type"])
        response, truncated = self.parsed_part(response, mimetype)
        # The page is finished once its links are queued and its document cached (or its outcome
        # reported); what was fetched goes with the document (CrawledDocument.record).
        record.update(fetched_with="browser" if response.meta.get(PLAYWRIGHT) else "static")
        indexed = self.filtered(response, mimetype, depth, headers, record)
        if indexed is None:
            return
        if mimetype in INDEXED_TYPES and isinstance(response, TextResponse):
            yield from self.parse_text(response, depth, headers, record, truncated, indexed)
        elif indexed:
            yield from self.parse_file(response, mimetype, depth, headers, record)

    def answered(self, response: Response, depth: int, record: dict[str, Any]) -> bool:
        """Whether the response holds a document (200); else its outcome is reported: a transient
        failure, or no document (404, 410, 401, ...)."""
        via = record["via"]
        if response.status >= 500 or response.status in TRANSIENT:
            self.report(response.url, Event.FAILED, response.status, f"HTTP {response.status}", depth, via=via)
            return False
        if response.status in REFUSING and len(response.body) <= self.max_parse_bytes:
            soft = self.soft_error(self.page_of(response), response.meta)
            if soft is not None and soft.kind == "challenge":  # a bot challenge answered 401/403: the page is still there
                self.report_soft_error(response, soft, depth, via)
                return False
        if response.status != 200:
            # 404 and 410, and any other answer without a document (401, 403, 204, a redirect
            # not followed ...): the URL has no document now, and leaves the index if it was in;
            # a redirect (not to be followed, or without a Location) is redirected (default_kind)
            reason = "gone" if response.status in GONE else f"HTTP {response.status}: no document"
            kind = None if response.status in REDIRECT_STATUSES else Delta.FAILED
            self.report(response.url, Event.GONE, response.status, reason, depth, kind, **record)
            logger.debug("Not indexed (HTTP %d): %s", response.status, response.url)
            return False
        return True

    def not_modified(self, response: Response, depth: int, via: str | None) -> Iterator[CrawledDocument]:
        """A 304 to a conditional GET: its content is the indexed one, its access is compared with
        the indexed access (the indexed checksum holds it, pipelines/checksum.py). The same: not
        modified. Another: an atomic update of its access fields alone, cached and pushed as any
        document, its content not read again (changed). Unknown: it leaves the index (927)."""
        url = response.url
        if self.kept_out_as_navigation(url, depth, via=via):  # a rule newer than its indexing
            return
        try:
            access = self.access_of(url, response.meta)
        except AccessUnreadable as exc:
            self.report(url, Event.GONE, Status.ACCESS_UNREADABLE, str(exc), depth, via=via)
            logger.debug("Not indexed (access: %s): %s", exc, url)
            return
        previous = response.meta[PREVIOUS]
        indexed = previous.get("checksum")
        checksum = versioned(content_of(indexed), access) if indexed else None
        if checksum is None or checksum == indexed:
            self.report(url, Event.UNCHANGED, Status.UNCHANGED, "304 Not Modified", depth, Delta.NOT_MODIFIED, via=via)
            logger.debug("Unchanged (304): %s", url)
            return
        logger.debug("Access changed, content not modified (304): %s", url)
        fields = access_update(self.source.name, url, checksum, access)
        yield CrawledDocument(
            self.source.name,
            url,
            depth,
            fields=fields,
            previous=previous,
            record={"via": via},
            access=access,
            access_update=True,
        )

    def render_request(self, response: Response) -> Request | None:
        """The page once more, through the browser, when its render mode is ``auto`` and the
        static page looks like a JavaScript shell; else None. The same request, admitted already
        (meta ``ADMITTED``), at its depth."""
        if response.meta.get(RENDER) != "auto" or response.meta.get(PLAYWRIGHT) or not isinstance(response, HtmlResponse):
            return None
        shell = empty_shell(response.selector.root, self.source.settings.render_min_text, self.source.settings.render_selector)
        if not shell:
            return None
        logger.debug("Rendering %s: the static page looks like a JavaScript shell (%s)", response.url, shell)
        assert response.request is not None  # a response reaching a callback has its request
        meta = {key: value for key, value in response.meta.items() if key not in FETCH_RECORDS}
        return response.request.replace(meta={**meta, RENDER: "browser"}, dont_filter=True)

    def parsed_part(self, response: Response, mimetype: str | None) -> tuple[Response, str | None]:
        """The response as it is parsed, and the note when it was cut: lxml's tree of a page costs
        many times its size, so only the first ``max_parse_bytes`` are parsed and the crawler's
        memory stays bounded whatever a page holds."""
        size = len(response.body)
        if mimetype not in INDEXED_TYPES or not isinstance(response, TextResponse) or size <= self.max_parse_bytes:
            return response, None
        truncated = f"truncated: the first {self.max_parse_bytes} of {size} bytes were parsed"
        logger.info("Page %s is %d bytes: %s", response.url, size, truncated)
        return response.replace(body=response.body[: self.max_parse_bytes]), truncated

    def filtered(
        self, response: Response, mimetype: str | None, depth: int, headers: dict[str, str], record: dict[str, Any]
    ) -> bool | None:
        """The scope and result filters on the document: None when the scope filter keeps it out
        (its outcome reported), False when the result filter keeps it out of the index (its links
        are still followed), True when it may be indexed."""
        modified = http_date(headers.get("last-modified"))
        scope_filter, result_filter = self.admission.chain.scope_filter, self.result_filter
        scope = scope_filter.check_document(response.url, mimetype, len(response.body), modified)
        if not scope.passed:
            self.report(response.url, Event.GONE, Status.EXCLUDED_FILTER, scope.rule, depth, **record)
            logger.debug("Excluded (%s): %s", scope.rule, response.url)
            return None
        result = result_filter.check_document(response.url, mimetype, len(response.body), modified)
        if not result.passed:  # crawled (its links followed) but kept out of the index
            self.report(response.url, Event.GONE, Status.EXCLUDED_FILTER, result.rule, depth, **record)
            logger.debug("Not indexed (%s): %s", result.rule, response.url)
        return result.passed

    def parse_text(
        self,
        response: TextResponse,
        depth: int,
        headers: dict[str, str],
        record: dict[str, Any],
        truncated: str | None,
        indexed: bool,
    ) -> Iterator[Any]:
        """An HTML or text page: its document (unless ``indexed`` is False: links only) and its
        links, as ``parse_document`` yields them; a file served as text is a file."""
        if sniff_kind(response.body):
            # a PDF or office file served as text: its magic bytes say what it is
            yield self.document(response, depth, headers, record, body=response.body)
            return
        if looks_binary(response.body):
            reason = f"binary content served as {mimetype_of(record['content_type'])}"
            self.report(response.url, Event.GONE, Status.UNSUPPORTED_TYPE, reason, depth, **record)
            logger.debug("Not indexed (%s): %s", reason, response.url)
            return
        response = self.readable(response)
        # the page's prose (content/regions.py) only where its document may be indexed: a
        # navigation page's text is read for the soft-error markers alone (issue 102)
        indexable = indexed and navigation_pattern(response.url, self.source.settings.navigation_pages) is None
        page = self.page_of(response, prose=indexable)
        soft = self.soft_error(page, response.meta)
        if soft is not None:
            self.report_soft_error(response, soft, depth, record["via"])
            return
        documents = 0
        for output in self.parse_document(response, depth, headers):
            if isinstance(output, CrawledDocument):
                documents += 1
                if not indexed:  # result-filtered: links only
                    continue
                fetched = output.fetched
                if (
                    indexable
                    and page is not None
                    and page.text_read
                    and fetched.tree is page.root
                    and isinstance(page.read, RegionText)
                ):
                    output.fetched = replace(fetched, region_text=page.read)  # read once: the attributes pipeline takes it
                output.record, output.note = {**record, **output.record}, truncated
                if output.access is None and output.access_error is None:
                    self.with_access(output, response.meta)
            yield output
        if not documents and response.url not in self.reported:
            # a custom parse_document chose not to index the page: that is its outcome
            self.report(response.url, Event.GONE, 200, "fetched; the spider yielded no document", depth, **record)

    def page_of(self, response: Response, prose: bool = False) -> Page | None:
        """What the soft-error markers read of an HTML response (None: not HTML); its text, the
        source's content regions', read only when a marker asks for it, with its prose when asked
        (``prose``: a page whose document the attributes pipeline then takes, text read once)."""
        if not isinstance(response, HtmlResponse):
            return None
        root, url = response.selector.root, response.url
        headers = {name.decode("latin-1"): [v.decode("latin-1") for v in values] for name, values in response.headers.items()}
        return Page(url, headers, root, lambda: self.regions.text(body_of(root), url, prose=prose))

    def soft_error(self, page: Page | None, meta: Mapping[str, Any]) -> SoftError | None:
        """Whether the page is not the page: a login page, a challenge, a maintenance or not-found
        page (content/soft_errors.py), by the source's markers and the site's not-found page
        (learned by crawl/middlewares/not_found_probe.py)."""
        if page is None:
            return None
        return self.soft_errors.of_page(page, meta.get(NOT_FOUND_PAGE))

    def report_soft_error(self, response: Response, soft: SoftError, depth: int, via: str | None) -> None:
        """A soft error's outcome: a transient failure (the indexed version stays), its links not followed."""
        status = soft.status
        self.report(response.url, Event.FAILED, status, soft.reason, depth, counted=soft.counted, via=via)
        self.crawler.stats.inc_value(f"searchcrawl/soft_errors/{soft.kind}")
        logger.debug("Not indexed, links not followed (%d %s): %s: %s", status, status.name.lower(), response.url, soft.reason)

    def readable(self, response: TextResponse) -> TextResponse:
        """The page decoded as its bytes and declarations say (``choose_encoding``), and flattened
        when nested deeper than libxml2 parses."""
        raw_type = response.headers.get("Content-Type")
        encoding = choose_encoding(
            raw_type.decode("latin-1") if raw_type else None, response.body, self.source.settings.default_charset
        )
        if encoding and encoding != response.encoding:
            logger.debug("Decoding %s as %s (declared: %s)", response.url, encoding, response.encoding)
            response = response.replace(encoding=encoding)
        if isinstance(response, HtmlResponse) and too_deep(response.selector.root):
            # libxml2 stops at 2,048 nested elements: what lies below, and after, would be lost
            logger.debug("Nested over %d deep, parsed again flattened: %s", MAX_DEPTH, response.url)
            response = FlattenedResponse.of(response)
        return response

    def parse_file(
        self, response: Response, mimetype: str | None, depth: int, headers: dict[str, str], record: dict[str, Any]
    ) -> Iterator[Any]:
        """A PDF, office or other file: its document for the converters (AttributesPipeline), no
        links followed out of it; or, of a type not read, its outcome."""
        file_name = urlsplit(response.url).path.rsplit("/", 1)[-1]
        if self.kept_out_as_navigation(response.url, depth, **record):
            return
        if tika_configured(self.crawler.settings) or detect_kind(response.body, mimetype, file_name) is not None:
            yield self.document(response, depth, headers, record, body=response.body)
            return
        reason = f"content type {mimetype or 'unknown'} is not indexed"
        self.report(response.url, Event.GONE, Status.UNSUPPORTED_TYPE, reason, depth, **record)
        logger.debug("Not indexed (%s): %s", reason, response.url)

    def parse_document(self, response: TextResponse, depth: int, headers: dict[str, str]) -> Iterator[Any]:
        """Yield the document's item and the requests for its links, as its robots directives allow."""
        previous = response.meta.get(PREVIOUS)
        # what the fetch says of the page (its validators, type, size), as a file's record says it
        navigation = self.kept_out_as_navigation(response.url, depth, **fetch_record(as_served(response))[1])
        if mimetype_of(headers.get("content-type")) == "text/plain":
            if not navigation:
                fetched = Fetched(headers, text=response.text)
                yield CrawledDocument(self.source.name, response.url, depth, fetched, previous=previous, anchors=())
            return
        directives = self.robots_directives(response)
        resolved = None if "nofollow" in directives else self.resolved_links(response)
        if navigation:
            pass  # its links are followed below
        elif "noindex" in directives:
            via = redirected_from(response.meta, response.url)
            self.report(response.url, Event.GONE, Status.NOINDEX, "robots noindex", depth, via=via)
        else:
            canonical_href = response.css('link[rel~="canonical"]::attr(href)').get()
            yield CrawledDocument(
                self.source.name,
                response.url,
                depth,
                Fetched(headers, tree=response.selector.root),
                previous=previous,
                canonical_url=canonical(response.urljoin(canonical_href.strip())) if canonical_href else None,
                # a page that asks its links not be followed vouches for none of them
                anchors=() if "nofollow" in directives else self.anchors(response, resolved),
            )
        if "nofollow" in directives:
            logger.debug("Links not followed (robots nofollow): %s", response.url)
            return
        for url in self.links(response, resolved):
            request = self.link_request(url, depth + 1)
            if request is not None:
                yield request

    def kept_out_as_navigation(self, url: str, depth: int, **record: Any) -> bool:
        """Whether ``url`` is a navigation page or a copy (the source's ``navigation_pages``,
        rules/navigation_pages.py): then reported as kept out of the index (917), with what its
        fetch learned (``record``: ``fetch_record``'s, its validators among them, which the next
        crawl's conditional GET sends; ``via`` alone from a 304, whose row keeps those it was asked with)."""
        pattern = navigation_pattern(url, self.source.settings.navigation_pages)
        if pattern is None:
            return False
        reason = f"navigation page or copy (navigation_pages: {pattern})"
        self.report(url, Event.GONE, Status.NAVIGATION_PAGE, reason, depth, **record)
        logger.debug("Not indexed (navigation page, %s): %s", pattern, url)
        return True

    def robots_directives(self, response: TextResponse) -> frozenset[str]:
        if not self.source.settings.obey_robots_meta:
            return frozenset()
        headers = [value.decode("latin-1") for value in response.headers.getlist("X-Robots-Tag")]
        return robots_directives(meta_tags(response.selector.root), headers, self.source.settings.robots_agent)

    def link_request(self, url: str, depth: int) -> Request | None:
        """A request for a link found ``depth`` links from a seed, if the source's rules admit it
        (canonical, through the URL rewriter: ``Admission.link``) and it is not queued already."""
        entry = self.admission.link(url, depth)
        return None if entry is None else self.requests(entry)

    def resolved_links(self, response: TextResponse) -> dict[str, str | None]:
        """Each link attribute value of the page with its link (``DocumentLinks.resolved``; <base
        href> honoured): what ``links`` and ``anchors`` read, made once a page."""
        served = as_served(response)  # a flattened page's base and encoding are the page's as served
        return self.page_links.resolved(response.selector.root, response.url, get_base_url(served), served.encoding)

    def anchors(self, response: TextResponse, resolved: dict[str, str | None] | None = None) -> tuple[Anchor, ...]:
        """The page's anchors (content/anchors.py): each link's words and the URL the document
        table knows its target by, resolved as its links are (``resolved``, the page's
        ``resolved_links``) and made canonical as the admission makes a link (``Admission.target``)."""
        resolved = self.resolved_links(response) if resolved is None else resolved
        admission = self.admission

        def target(href: str) -> str | None:
            url = resolved.get(href)
            return None if url is None else admission.target(url)

        return page_anchors(response.selector.root, response.url, target)

    def links(self, response: TextResponse, resolved: dict[str, str | None] | None = None) -> Iterator[str]:
        """The page's links (a, area, frame, iframe; <base href> honoured; ``resolved``, the
        page's ``resolved_links``) and its meta refresh target."""
        _interval, refresh = get_meta_refresh(as_served(response))  # a flattened page's refresh is the page's as served
        if refresh:
            yield refresh
        yield from DocumentLinks.followed_in(self.resolved_links(response) if resolved is None else resolved)

    def document(
        self, response: Response, depth: int, headers: dict[str, str], record: dict[str, Any], **content: Any
    ) -> CrawledDocument:
        """The item of a fetched document, with what the fetch learned (validators, type, size)
        and who may read it."""
        fetched, previous = Fetched(headers, **content), response.meta.get(PREVIOUS)
        item = CrawledDocument(
            self.source.name, response.url, depth, fetched, previous=previous, record=record, anchors=()
        )  # a file's links are not read
        return self.with_access(item, response.meta)

    def failed(self, failure: Failure) -> None:
        """Every request that ends without a response ends here, and its URL gets a status: a
        rule's refusal (RequestRefused), a response one of Scrapy's safety middlewares dropped,
        or a download failure."""
        request = failure.request  # type: ignore[attr-defined]
        depth = request.meta.get(DEPTH, 0)
        via = redirected_from(request.meta, request.url)
        error = failure.value
        assert error is not None  # Twisted types it Optional: None only while a Failure is being built
        if int(getattr(error, "status", 0) or 0) in (Status.TLS_FAILED, Status.PROXY_FAILED):
            self.crawler.stats.inc_value(CONNECTION_REFUSALS)  # pages not seen: their links unknown
        if isinstance(error, Unsent):  # given back as the crawl closes: queued again, no outcome
            logger.debug("Not sent, back to the queue: %s", request.url)
            return
        if isinstance(error, RequestRefused):
            # the refusal's own outcome (whether it counts, too), at the request's depth
            outcome = replace(error.outcome, depth=depth, columns={**error.outcome.columns, "via": via})
            self.crawler.signals.send_catch_log(url_outcome, url=request.url, outcome=outcome)
            logger.debug("Refused (%s): %s: %s", error.status, request.url, error.reason)
            return
        if isinstance(error, IgnoreRequest):  # from one of Scrapy's own middlewares
            status = status_for_ignored(error)
            self.report(request.url, Event.GONE, status, f"dropped by Scrapy: {error}", depth, via=via)
            logger.info("Dropped (%s): %s: %s", status.name, request.url, error)
            return
        status = status_for_exception(error, proxied=bool(request.meta.get(PROXY)))
        reason = describe_failure(error) if status == Status.TLS_FAILED else f"{type(error).__name__}: {error}"
        if status in (Status.TLS_FAILED, Status.PROXY_FAILED):
            self.crawler.stats.inc_value(CONNECTION_REFUSALS)
        if status in (Status.DNS_FAILURE, Status.TOO_LARGE):  # gone, or never indexable: not transient
            self.report(request.url, Event.GONE, status, reason, depth, Delta.FAILED, via=via)
        else:
            self.report(request.url, Event.FAILED, status, reason, depth, counted=status not in UNCOUNTED_FAILURES, via=via)
        logger.info("Failed (%s): %s: %s", status.name, request.url, error)
