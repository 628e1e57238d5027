"""`scrapy explain <source> <url>`: why a URL is (or is not) crawled and indexed, without crawling.

Prints every decision in the order the crawler takes them: the canonical form, the URL
rewriter, each boundary rule and the scope filter, the internal-address guard, robots.txt
(fetched now, with the group and line that matched), the display URL, what the document table
knows, and the verdict. Then, for a URL the crawl fetches, its content regions: which of the
source's ``[regions]`` apply to it and, the page fetched now (not with ``--no-fetch``), each region
of it they keep or drop and why, and how much of its text is kept.

Its answer is the crawl's answer because it is a crawl: the source's own spider class, with the
project's settings and the source's, built by Scrapy as `scrapy crawl` builds it, read-only
(``READ_ONLY_CRAWL``) and fetching nothing but robots.txt and the page explained. Its spider
(``explain_spider``) yields no request: its ``start`` runs the crawl's rule chain (rules/chain.py
``RuleChain.steps``), asks the internal-address guard, and gets robots.txt from the crawl's
``RobotsMiddleware``, which fetches it through the crawl's downloader (every downloader
middleware, the address guard included; its redirect limit, size cap and timeouts) and decides
with the same code. The page is fetched the same way (``page_lines``: the request the spider's
factory makes, through every downloader middleware, with the crawl's size cap and timeouts, once:
no retry, no conditional GET; no sitemap is read, its URLs would join no run), read as the spider
reads it (``parsed_part``, ``readable``), and its regions are the crawl's: ``ContentRegions.text``
(content/regions.py), asked to explain.

A URL the rules exclude that the document table records as a temporary redirect's target outside
the boundary is explained as the crawl fetches it: through that redirect, decided by the crawl's
redirect policy (``decide_redirect``).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

from scrapy import Request
from scrapy.commands import ScrapyCommand
from scrapy.crawler import Crawler
from scrapy.exceptions import UsageError
from scrapy.http import Response, TextResponse
from scrapy.settings import BaseSettings

from searchcrawl.commands import is_setup_error, on_failure
from searchcrawl.config.source import Source, SourceError
from searchcrawl.content.charsets import looks_binary
from searchcrawl.content.convert import sniff_kind
from searchcrawl.content.extract import body_of, mimetype_of
from searchcrawl.content.regions import ContentRegions, RegionDecision, RegionText, Selectors
from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.meta import ADMITTED, DONT_RETRY, KNOWN, LEAVES_BOUNDARY, NOT_FOUND_PAGE, PROXY
from searchcrawl.crawl.middlewares.address_guard import AddressGuardMiddleware
from searchcrawl.crawl.middlewares.robots import RobotsMiddleware, site_of
from searchcrawl.crawl.middlewares.sitemaps import SitemapMiddleware
from searchcrawl.crawl.requests import admission_of
from searchcrawl.crawl.spider import REFUSING, SourceSpider, fetch_record, seed_urls
from searchcrawl.crawl.stores import source_of, stores_of
from searchcrawl.ops.terminal import printable
from searchcrawl.rules.boundary import ScopeDecision
from searchcrawl.rules.chain import RuleChain, RuleStep
from searchcrawl.rules.display_urls import DisplayUrls
from searchcrawl.rules.lifecycle import Event
from searchcrawl.rules.navigation_pages import navigation_pattern
from searchcrawl.rules.redirect_policy import TEMPORARY, RedirectVerdict, decide_redirect
from searchcrawl.rules.status_codes import Status, describe, describe_failure, status_for_exception
from searchcrawl.rules.urls import canonical
from searchcrawl.store import DocumentTable, SchemaOutdated
from searchcrawl.store.frontier import Entry

# The settings explain's crawl runs with, over the project's and the source's: read-only (the
# document table opened without migrating, nothing written: SEARCHCRAWL_READ_ONLY), Scrapy's own
# scheduler (the durable frontier would start a run), no item pipeline (nothing reaches Solr), no
# progress line, no fleet reservations of a shared crawl, no log file of the source's.
READ_ONLY_CRAWL: dict[str, Any] = {
    "SEARCHCRAWL_READ_ONLY": True,
    "SCHEDULER": "scrapy.core.scheduler.Scheduler",
    "JOBDIR": None,
    "ITEM_PIPELINES": {},
    "SEARCHCRAWL_PROGRESS_INTERVAL": 0,
    "SEARCHCRAWL_SHARED_CRAWL": False,
    "SEARCHCRAWL_PROCESSES": 1,
    "LOG_FILE": None,
}
ROBOTS_NOT_CHECKED = "robots.txt not checked (--no-robots): it may still exclude it"
HTML_TYPES = ("text/html", "application/xhtml+xml")  # the types the crawl reads as a page's tree
EXCERPT_CHARS = 80  # of a region's text shown


@dataclass
class Explanation:
    """What explain's crawl found: the report's lines, whether the URL would be crawled, or the
    error that kept it from finding out."""

    lines: list[str] = field(default_factory=list)
    crawled: bool = False
    error: BaseException | None = None


def code_name(status: int) -> str:
    """``907 excluded_robots``: a crawler code with its name (an HTTP code with its phrase)."""
    try:
        return f"{status} {Status(status).name.lower()}"
    except ValueError:
        return f"{status} {describe(status)}"


def refused_verdict(refused: RequestRefused) -> str:
    """The verdict on a request a downloader middleware refused, as its row would say it."""
    if refused.outcome.event is not Event.FAILED:
        return f"verdict:       EXCLUDED ({code_name(refused.status)}): {refused.reason}"
    counted = "counted toward max_failures" if refused.outcome.counted else "not counted toward max_failures"
    return (
        f"verdict:       FAILS FOR NOW ({code_name(refused.status)}): {refused.reason}; a transient failure, "
        f"{counted}; nothing is removed for it alone"
    )


@dataclass
class Chain:
    """The rule chain's steps on a URL as the crawl meets it, and what they were taken with:
    ``rewriting`` (the rewriter's step; None for a seed), the depth and where it comes from, and
    the URL's row in the document table."""

    steps: list[RuleStep]
    rewriting: RuleStep | None
    depth: int
    recorded: str
    row: dict[str, Any] | None


@dataclass(frozen=True)
class ExplainedCrawl:
    """What explain reads of its crawl: the source, the crawl's rule chain (its admission's) and
    the document table."""

    source: Source
    chain: RuleChain
    documents: DocumentTable

    @classmethod
    def of(cls, crawler: Crawler) -> ExplainedCrawl:
        return cls(source_of(crawler), admission_of(crawler).chain, stores_of(crawler).documents)


def rule_chain(state: ExplainedCrawl, url: str, depth: int | None) -> Chain:
    """The rule chain as the crawl applies it (``RuleChain.steps``, every step): to a seed as
    written, at depth 0 (the spider's start); to any other URL as to a link: the rewriter first,
    then the rules on what it makes of it, at ``depth`` (else as the document table records)."""
    source = state.source
    if url in seed_urls(source):
        return Chain(state.chain.steps(url, 0, every=True), None, 0, " (a seed)", state.documents.get(source.name, url))
    steps = state.chain.steps(url, depth or 0, rewrite="link", every=True)
    rewriting = steps[0]  # with every step asked for, the rewriter's always comes first
    row = state.documents.get(source.name, rewriting.url) if rewriting.allowed else None
    if depth is not None:
        return Chain(steps, rewriting, depth, "", row)
    depth = row["depth"] if row and row["depth"] is not None else 0
    if depth:  # the chain again, at the depth the document table records
        steps = state.chain.steps(url, depth, rewrite="link", every=True)
    return Chain(steps, rewriting, depth, " (as recorded)" if row else " (assumed; use --depth)", row)


def chain_lines(rewriter: str | None, chain: Chain) -> list[str]:
    """The report's lines on the rewriter, the depth and each rule of the chain."""
    lines = []
    rewriting = chain.rewriting
    if rewriter:
        if rewriting is None:
            lines.append(f"rewriter:      {rewriter}: not applied to a seed")
        elif rewriting.allowed:
            lines.append(f"rewriter:      {rewriter} -> {rewriting.url}")
        elif rewriting.rule == "dropped by the URL rewriter":
            lines.append(f"rewriter:      {rewriter} drops it")
        else:
            lines.append(f"rewriter:      {rewriter}: {rewriting.rule}")
    if rewriting is None or rewriting.allowed:
        lines.append(f"depth:         {chain.depth}{chain.recorded}")
    for step in chain.steps if rewriting is None else chain.steps[1:]:
        lines.append(f"  {'ok ' if step.allowed else 'NO '} {step.rule}")
    return lines


async def downloader_verdict(crawler: Crawler, url: str, check_robots: bool, lines: list[str]) -> str | None:
    """The downloader middlewares a request of ``url`` meets, in their order: the address guard
    (it runs before RobotsMiddleware: a refused host's robots.txt is never fetched), robots.txt.
    What robots.txt said, for the verdict; None when one of them refuses (the lines say why)."""
    guard = crawler.get_downloader_middleware(AddressGuardMiddleware)
    if guard is not None:
        try:
            await guard.process_request(Request(url))
        except RequestRefused as refused:
            lines.append(f"address guard: NO  {refused.reason}")
            lines.append(refused_verdict(refused))
            return None
    robots = crawler.get_downloader_middleware(RobotsMiddleware)
    site = site_of(url)
    if not source_of(crawler).settings.obey_robots:
        lines.append("robots.txt:    not obeyed by this source (obey_robots = false)")
        return "robots.txt not obeyed"
    if robots is None:
        lines.append("robots.txt:    not obeyed: RobotsMiddleware is not in DOWNLOADER_MIDDLEWARES")
        return "robots.txt not obeyed"
    if site is None:
        lines.append("robots.txt:    not applicable")
        return "no robots.txt applies"
    if not check_robots:
        lines.append("robots.txt:    not fetched (--no-robots)")
        return ROBOTS_NOT_CHECKED
    return await robots_verdict(robots, site, url, lines)


async def robots_verdict(robots: RobotsMiddleware, site: str, url: str, lines: list[str]) -> str | None:
    """robots.txt of ``site`` on ``url``, as the crawl's RobotsMiddleware fetches and reads it."""
    record = await robots.record(site)
    lines.append(f"robots.txt:    {record.answer}")
    if record.unavailable is not None:
        lines.append(refused_verdict(robots.unavailable(site, record)))
        return None
    decision = record.robots.decide(robots.agent, url)
    lines.append(f"  agent token  {robots.agent}; group: {decision.group or 'none applies'}")
    lines.append(f"  {'ok ' if decision.allowed else 'NO '} {decision.line or 'no rule matches: allowed'}")
    robots_refusal = robots.refusal(site, decision)
    if robots_refusal is not None:
        lines.append(refused_verdict(robots_refusal))
        return None
    return "allowed by robots.txt"


def crawled_lines(
    state: ExplainedCrawl, url: str, row: dict[str, Any] | None, redirect: str | None, robots_said: str
) -> list[str]:
    """The report's last lines on a URL the crawl fetches: its display URL, its row, the verdict."""
    lines = [f"display URL:   {DisplayUrls(state.source.settings.display_urls).display_url(url)}"]
    if row:
        lines.append(
            f"document table: state {row['state']}, status {row['status']} ({describe(row['status'])})"
            + (f", {row['reason']}" if row["reason"] else "")
        )
    else:
        lines.append("document table: not met by a crawl yet")
    if state.chain.agent is not None:
        lines.append(
            "verdict:       CRAWLED when its agent lists it: a document of the source's agent (indexed if it has "
            "text; read again only when its change token changes)"
        )
        return lines
    where = "inside the boundary" if redirect is None else f"outside the boundary, as the target of {redirect}'s redirect"
    lines.append(
        f"verdict:       CRAWLED: {where}; {robots_said} (indexed if it answers 200 with indexable content and no noindex)"
    )
    return lines


async def explain(
    crawler: Crawler, url: str, depth: int | None, check_robots: bool = True, fetch: bool = True
) -> tuple[list[str], bool]:
    """The report's lines on ``url``, and whether it would be crawled, from a (running) crawl of
    its source: its rule chain, address guard and robots middleware decide; for a URL it would
    crawl, its content regions (``fetch``: on the page, fetched now)."""
    state = ExplainedCrawl.of(crawler)
    source = state.source
    lines = [f"source:        {source.name} ({source.origin})", f"URL:           {url}"]
    try:
        current = canonical(url)
    except ValueError as exc:  # as the spider takes such a link (a port out of range, ...)
        lines.append(f"verdict:       EXCLUDED ({code_name(Status.EXCLUDED_PORT)}): not a valid URL: {exc}")
        return lines, False
    lines.append(f"canonical:     {current}" + ("" if current != url else "  (unchanged)"))
    chain = rule_chain(state, current, depth)
    lines.extend(chain_lines(source.settings.url_rewriter, chain))
    verdict = chain.steps[-1].decision
    redirect = None
    if not verdict.allowed and chain.rewriting is not None:  # a link, not a seed: maybe a redirect's target
        redirect, verdict = as_redirect_target(state, current, verdict, lines)
    if not verdict.allowed:
        assert verdict.status is not None
        lines.append(f"verdict:       EXCLUDED ({code_name(verdict.status)}): {verdict.rule}")
        return lines, False
    if chain.rewriting is not None and redirect is None:
        current = chain.rewriting.url
    robots_said = await downloader_verdict(crawler, current, check_robots, lines)
    if robots_said is None:
        return lines, False
    lines.extend(crawled_lines(state, current, chain.row, redirect, robots_said))
    if state.chain.agent is None:  # an agent's documents are its own to fetch and read
        lines.append("")
        lines.extend(regions_lines(ContentRegions(source.settings.regions), current))
        if not fetch:
            lines.append("page:          not fetched (--no-fetch)")
        elif robots_said == ROBOTS_NOT_CHECKED:
            lines.append("page:          not fetched (--no-robots: the crawl's downloader would fetch robots.txt first)")
        else:
            lines.extend(await page_lines(crawler, current, chain.depth, leaves_boundary=redirect is not None))
    return lines, True


def as_redirect_target(
    state: ExplainedCrawl, url: str, refusal: ScopeDecision, lines: list[str]
) -> tuple[str | None, ScopeDecision]:
    """A URL the rules refuse may still be fetched: as the target of a temporary redirect that
    leads out of the boundary (``redirect_target``). Then the redirect policy decides, and the
    scope filter's URL rules, which apply to its document. Returns the URL whose redirect is
    followed to it (else None) and the decision; the lines say why."""
    found = redirect_target(state, url)
    if found is None:
        return None, refusal
    origin, redirect = found
    lines.append(f"redirect:      {'ok ' if redirect.follow else 'NO '} {redirect.reason}")
    if not redirect.follow:
        return None, ScopeDecision(False, redirect.reason, redirect.status or refusal.status)
    filtered = state.chain.scope_filter.check_url(url)
    lines.append(f"  {'ok ' if filtered.passed else 'NO '} {filtered.rule}")
    if not filtered.passed:
        return None, ScopeDecision(False, filtered.rule, Status.EXCLUDED_FILTER)
    return origin, ScopeDecision(True, redirect.reason)


def redirect_target(state: ExplainedCrawl, url: str) -> tuple[str, RedirectVerdict] | None:
    """The URL whose temporary redirect the document table says led the crawl out of the boundary
    to ``url`` (the row's ``via``, whose last answer was that redirect), and the redirect policy's
    verdict on it (``decide_redirect``, the crawl's own); None when no such redirect stands."""
    row = state.documents.get(state.source.name, url)
    via: str | None = row["via"] if row else None
    if via is None:
        return None
    origin = state.documents.get(state.source.name, via)
    if origin is None or origin["target"] != url or origin["status"] not in TEMPORARY:
        return None
    depth = origin["depth"] or 0
    left = not state.chain.boundary.check(via, depth).allowed  # only one step may leave the boundary
    verdict = decide_redirect(origin["status"], url, depth, [via], state.chain.boundary, left)
    return via, replace(verdict, reason=f"{via} answers {verdict.reason}, as the document table records")


def selector_parts(selectors: Selectors) -> list[str]:
    """``keep "main"``, ``drop "div.share", "nav"``: a table's or a rule's selectors."""
    return [
        kind + " " + ", ".join(f'"{selector}"' for selector in chosen)
        for kind, chosen in (("keep", selectors.keep), ("drop", selectors.drop))
        if chosen
    ]


def regions_lines(regions: ContentRegions, url: str) -> list[str]:
    """The report's lines on which content regions apply to ``url``: the ``[regions]`` table's,
    and the ``[[regions.rules]]`` entry whose pattern matches it (``ContentRegions.rule``)."""
    table = regions.table
    parts = ["landmarks dropped" if table.landmarks else "landmarks kept", *selector_parts(table)]
    if not table.link_lists:
        parts.insert(1, "link lists in snippets")
    lines = [f"regions:       [regions]: {'; '.join(parts)}"]
    if regions.rules:
        match = regions.rule(url)
        if match is None:
            lines.append("  rule         no [[regions.rules]] pattern matches this URL")
        else:
            added = "; ".join(selector_parts(match.rule)) or "no selector"
            lines.append(f"  rule         [[regions.rules]] {match.number} (pattern '{match.pattern}') adds {added}")
    return lines


async def page_lines(crawler: Crawler, url: str, depth: int, leaves_boundary: bool = False) -> list[str]:
    """The page at ``url``, fetched as the crawl fetches it: the request of the spider's factory
    (its render mode), admitted already (the chain above), through every downloader middleware
    (address guard, robots.txt, credentials, logins, the redirect policy; not the sitemaps'),
    with the crawl's size cap and timeouts; once (no retry) and whole (no conditional GET: a 304
    has no text). One line on its answer; for an HTML page, read as the spider reads it, what its
    content regions keep and drop (``region_lines``)."""
    spider = crawler.spider
    assert isinstance(spider, SourceSpider)
    response = await _fetched(crawler, spider, url, depth, leaves_boundary)
    if isinstance(response, str):
        return [f"page:          not fetched: {response}"]
    mimetype = mimetype_of(fetch_record(response)[1]["content_type"])
    answer = f"page:          HTTP {response.status}, {mimetype or 'no content type'}, {len(response.body)} bytes"
    if response.url != url:
        answer += f", from {response.url}"
    if response.status in REFUSING and isinstance(response, TextResponse):
        soft = soft_error_line(spider, response)
        if soft is not None:
            return [answer, soft]
    if response.status != 200:
        return [f"{answer}: no document, so no content regions"]
    if (
        mimetype not in HTML_TYPES
        or not isinstance(response, TextResponse)
        or sniff_kind(response.body)
        or looks_binary(response.body)
    ):
        return [f"{answer}: not an HTML page, so no content regions"]
    return _read_page_lines(spider, response, mimetype, answer)


async def _fetched(crawler: Crawler, spider: SourceSpider, url: str, depth: int, leaves_boundary: bool) -> Response | str:
    """The page's answer, or why it was not fetched (as the crawl's row would say)."""
    request = spider.requests(Entry(url, depth))
    request.meta.update({ADMITTED: url, KNOWN: None, DONT_RETRY: True})
    if leaves_boundary:  # the target of a temporary redirect the redirect policy lets out
        request.meta[LEAVES_BOUNDARY] = url
    try:
        response: Response = await crawler.engine.download_async(request)
    except RequestRefused as refused:
        return f"{code_name(refused.status)}: {refused.reason}"
    except Exception as exc:  # unreachable, a timeout, too large, ...: as the crawl's row would say
        status = getattr(exc, "status", None) or status_for_exception(exc, proxied=bool(request.meta.get(PROXY)))
        return f"{code_name(status)}: {describe_failure(exc)}"
    return response


def _read_page_lines(spider: SourceSpider, response: TextResponse, mimetype: str | None, answer: str) -> list[str]:
    """An HTML page read as the spider reads it: rendered or not, a soft error, a navigation
    page, noindex, main_text, and what its content regions keep and drop."""
    shell = spider.render_request(response) is not None  # render_js = "auto": an empty shell is rendered
    parsed, truncated = spider.parsed_part(response, mimetype)
    assert isinstance(parsed, TextResponse)  # a text response cut is one still
    response = spider.readable(parsed)
    lines = [answer + (f" ({truncated})" if truncated else "")]
    if shell:
        lines.append(
            "render:        an empty JavaScript shell: the crawl renders it in Chromium; these are the static page's regions"
        )
    soft = soft_error_line(spider, response)
    if soft is not None:  # the crawl reads no further: not indexed, no links followed
        return [*lines, soft]
    lines.append(f"soft error:    none{not_found_note(response)}")
    navigation = navigation_pattern(response.url, spider.source.settings.navigation_pages)
    if navigation is not None:
        lines.append(
            f"navigation:    a navigation page or a copy ({navigation!r} of navigation_pages): the crawl follows its links and does not index it (917)"
        )
    if "noindex" in spider.robots_directives(response):
        lines.append("robots meta:   noindex: the crawl follows its links and does not index it")
    if spider.source.settings.main_text:
        lines.append("main_text:     true: the page's main text (trafilatura) is indexed, these regions' only when it has none")
    regions = ContentRegions(spider.source.settings.regions)
    lines.extend(region_lines(regions.text(body_of(response.selector.root), response.url, explain=True), regions, response.url))
    return lines


def soft_error_line(spider: SourceSpider, response: TextResponse) -> str | None:
    """The line on a page that is not the page (content/soft_errors.py), decided as the crawl
    decides (``SourceSpider.soft_error``), or None."""
    soft = spider.soft_error(spider.page_of(response), response.meta)
    if soft is None:
        return None
    counted = "counted toward max_failures" if soft.counted else "not counted toward max_failures"
    return (
        f"soft error:    {code_name(soft.status)}: {printable(soft.reason)}: not indexed, its links not followed, "
        f"the indexed version kept ({counted})"
    )


def not_found_note(response: TextResponse) -> str:
    """What the site's answer to a URL that cannot exist taught (crawl/middlewares/not_found_probe.py)."""
    learned = response.meta.get(NOT_FOUND_PAGE)
    if learned is None:
        return " (the site has no soft 404s, or they were not probed)"
    return f" (not like the site's answer to {printable(learned.probe)}, its soft 404)"


def excerpt(text: str, width: int = EXCERPT_CHARS) -> str:
    """A region's text on one printable line: at most ``width`` characters of it, quoted, every
    control character escaped (``printable``: the page is the site's, and may be hostile)."""
    if not text:
        return "(no text)"
    cut = text if len(text) <= width else f"{text[: width - 3]}..."
    return printable(f'"{cut}"')


def region_lines(found: RegionText, regions: ContentRegions, url: str) -> list[str]:
    """The report's lines on a page's regions (``ContentRegions.text`` asked to explain): each
    region kept or dropped, by what, with the start of its text; the selectors that match only
    inside those regions, or nothing; how much of its text is kept, or that none was (its whole
    text is, then)."""
    lines = [
        f"  {_verb(decision)}  {decision.element} by {', '.join(decision.reasons)}: {excerpt(decision.text)}"
        for decision in found.decisions
    ]
    if not found.decisions:
        lines.append("  (no region of this page is kept or dropped)")
    shown = {reason for decision in found.decisions for reason in decision.reasons}
    keep, drop = regions.selectors(url)
    for kind, selectors, matched in (("keep", keep, found.kept), ("drop", drop, found.dropped)):
        for selector in dict.fromkeys(selectors):
            if selector not in matched:
                lines.append(f'  none  {kind} selector "{selector}" matches nothing on this page')
            elif f'selector "{selector}"' not in shown:
                lines.append(f'  inner {kind} selector "{selector}" matches only inside the regions above')
    chars = found.page_chars if found.page_chars is not None else len(found.text)
    if found.whole:
        lines.append(f"text:          the regions keep no text, so the whole text is kept ({chars} characters)")
    else:
        lines.append(f"text:          {len(found.text)} of {chars} characters kept")
    if found.prose is not None:
        lines.append(f"prose:         {len(found.prose)} characters: the text less its link lists (snippets, passages)")
    return lines


def _verb(decision: RegionDecision) -> str:
    """How a region is used: kept, dropped, or (a link list alone) ``snip``: in the text, kept
    out of snippets and passages."""
    return "keep" if decision.kept else "snip" if decision.prose_only else "drop"


def explain_spider(
    spidercls: type[SourceSpider],
    url: str,
    depth: int | None,
    check_robots: bool,
    explanation: Explanation,
    fetch: bool = True,
) -> type[SourceSpider]:
    """A subclass of the source's spider class for explain's crawl: the same source, components
    and settings (with ``READ_ONLY_CRAWL`` over them, and no sitemap middleware); its ``start``
    explains ``url`` into ``explanation`` (fetching robots.txt and the page itself) and yields no
    request, so the crawl ends once it has."""

    async def start(self: SourceSpider) -> AsyncIterator[Request]:
        try:
            explanation.lines, explanation.crawled = await explain(self.crawler, url, depth, check_robots, fetch)
        except Exception as exc:  # reported by the command, after the crawl
            explanation.error = exc
        return
        yield  # an async generator that yields nothing: no request

    def update_settings(cls: type[SourceSpider], settings: BaseSettings) -> None:
        spidercls.update_settings(settings)  # the source spider's own (a custom one's too)
        settings.setdict(custom_settings, priority="spider")
        # no sitemap is read: its URLs join a run (explain starts none), and the page would wait
        # for its site's sitemaps (up to SEARCHCRAWL_SITEMAP_MAX_SECONDS) for nothing
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", SitemapMiddleware, None)
        # and at the spider's priority, as custom_settings are: the crawler process merges its own
        # settings (the project's) into the crawler's where they are not set at a higher one
        settings.set("DOWNLOADER_MIDDLEWARES", settings.getdict("DOWNLOADER_MIDDLEWARES"), priority="spider")

    custom_settings = {**(getattr(spidercls, "custom_settings", None) or {}), **READ_ONLY_CRAWL}
    return type(
        f"Explain[{spidercls.__name__}]",
        (spidercls,),
        {
            "start": start,
            "update_settings": classmethod(update_settings),
            "custom_settings": custom_settings,
            "__module__": spidercls.__module__,
        },
    )


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "<source> <url> [--depth N] [--no-robots] [--no-fetch]"

    def short_desc(self) -> str:
        return "Explain, without crawling, why a URL is or is not crawled and indexed"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--depth", type=int, default=None, help="links from a seed (default: as recorded, else 0)")
        parser.add_argument("--no-robots", action="store_true", help="do not fetch robots.txt (nor the page)")
        parser.add_argument(
            "--no-fetch", action="store_true", help="do not fetch the page (its content regions are not shown, only their rules)"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 2:
            raise UsageError("expected a source name and a URL")
        assert self.settings is not None and self.crawler_process is not None
        try:
            spidercls = self.crawler_process.spider_loader.load(args[0])
        except SourceError as exc:
            print(f"searchcrawl: broken source: {exc}")
            self.exitcode = 2
            return
        except KeyError:
            print(f"searchcrawl: no source named {args[0]!r}")
            self.exitcode = 2
            return
        assert issubclass(spidercls, SourceSpider)
        explanation = Explanation()
        crawler = self.crawler_process.create_crawler(
            explain_spider(spidercls, args[1], opts.depth, not opts.no_robots, explanation, fetch=not opts.no_fetch)
        )
        errors: list[BaseException] = []
        on_failure(self.crawler_process.crawl(crawler), errors.append)
        self.crawler_process.start()
        error = explanation.error or (errors[0] if errors else None)
        if isinstance(error, SchemaOutdated):  # read-only: explain never migrates
            print(f"searchcrawl: {error}", file=sys.stderr)
            self.exitcode = 1
            return
        if error is not None and is_setup_error(error):  # a secret not set, ...: its message says it all
            print(f"searchcrawl: {args[0]} cannot be crawled: {error}", file=sys.stderr)
            self.exitcode = 1
            return
        if error is not None:
            print("searchcrawl: explain failed:", file=sys.stderr)
            traceback.print_exception(error, file=sys.stderr)
            self.exitcode = 1
            return
        if not explanation.lines:  # the crawl ended before its spider could explain
            print("searchcrawl: explain failed: the crawl ended before the URL was explained", file=sys.stderr)
            self.exitcode = 1
            return
        # robots.txt lines, reasons and the page's text: the sites' words
        print("\n".join(printable(line) for line in explanation.lines))
