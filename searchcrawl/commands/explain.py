"""`scrapy explain <source> <url>`: why a URL is (or is not) crawled and indexed, without crawling.

Prints every decision in the order the crawler takes them: the canonical form, the URL
rewriter, each boundary rule, robots.txt (fetched now, with the group and line that matched),
the display URL, what the document table knows, and the verdict. It uses the same objects as
the crawl, so its answer is the crawl's answer.
"""

from __future__ import annotations

import argparse
import urllib.error
import urllib.request

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.commands import open_database
from searchcrawl.config.source import Source, SourceError
from searchcrawl.crawl.middlewares.robots import site_of
from searchcrawl.ops.terminal import printable
from searchcrawl.rules.boundary import MAX_URL_LENGTH, Boundary
from searchcrawl.rules.boundary import ScopeDecision as Decision
from searchcrawl.rules.display_urls import DisplayUrls
from searchcrawl.rules.filters import FilterSet
from searchcrawl.rules.robots_txt import MAX_ROBOTS_BYTES, RobotsTxt, robots_for_response, robots_unreachable
from searchcrawl.rules.status_codes import Status, describe
from searchcrawl.rules.url_rewriter import load_rewriter
from searchcrawl.rules.urls import canonical
from searchcrawl.store import DocumentTable


def fetch_robots_txt(site: str, user_agent: str, timeout: float = 15) -> tuple[RobotsTxt, str, bool]:
    """The site's robots rules as the crawler would get them, what the fetch answered, and
    whether it is unavailable for now (robots_unreachable)."""
    url = f"{site}/robots.txt"
    request = urllib.request.Request(url, headers={"User-Agent": user_agent})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # follows redirects
            body = response.read(MAX_ROBOTS_BYTES)
            return (
                robots_for_response(response.status, body),
                f"{url}: HTTP {response.status}, {len(body)} bytes",
                robots_unreachable(response.status),
            )
    except urllib.error.HTTPError as exc:
        return robots_for_response(exc.code, b""), f"{url}: HTTP {exc.code}", robots_unreachable(exc.code)
    except (urllib.error.URLError, OSError) as exc:
        return robots_for_response(None, None), f"{url}: unreachable ({getattr(exc, 'reason', exc)})", True


def explain(
    source: Source,
    url: str,
    depth: int | None,
    table: DocumentTable | None,
    user_agent: str,
    check_robots: bool = True,
    max_url_length: int = MAX_URL_LENGTH,
) -> tuple[list[str], bool]:
    """The report's lines, and whether the URL would be crawled."""
    lines = [f"source:        {source.name} ({source.origin})", f"URL:           {url}"]
    settings = source.settings
    current = canonical(url)
    lines.append(f"canonical:     {current}" + ("" if current != url else "  (unchanged)"))
    if settings.url_rewriter:
        rewritten = load_rewriter(settings.url_rewriter)(current)
        if rewritten is None:
            lines.append(f"rewriter:      {settings.url_rewriter} drops it")
            lines.append("verdict:       EXCLUDED (909 excluded_rewriter): dropped by the URL rewriter")
            return lines, False
        lines.append(f"rewriter:      {settings.url_rewriter} -> {rewritten}")
        current = canonical(rewritten)
    row = table.get(source.name, current) if table is not None else None
    if depth is None:
        depth = row["depth"] if row and row["depth"] is not None else 0
        lines.append(f"depth:         {depth} ({'as recorded' if row else 'assumed; use --depth'})")
    else:
        lines.append(f"depth:         {depth}")
    boundary = Boundary(source.seed_urls, settings, max_url_length)
    steps = boundary.explain(current, depth)
    for step in steps:
        lines.append(f"  {'ok ' if step.allowed else 'NO '} {step.rule}")
    verdict = steps[-1]
    if verdict.allowed:
        filtered = FilterSet(settings.filters.scope, "scope").check_url(current)
        lines.append(f"  {'ok ' if filtered.passed else 'NO '} {filtered.rule}")
        if not filtered.passed:
            verdict = Decision(False, filtered.rule, Status.EXCLUDED_FILTER)
    allowed = verdict.allowed
    if not allowed:
        assert verdict.status is not None
        lines.append(f"verdict:       EXCLUDED ({int(verdict.status)} {verdict.status.name.lower()}): {verdict.rule}")
        return lines, False
    site = site_of(current)
    if not settings.obey_robots:
        lines.append("robots.txt:    not obeyed by this source (obey_robots = false)")
    elif site is None or not check_robots:
        lines.append("robots.txt:    not applicable")
    else:
        robots, fetched, unavailable = fetch_robots_txt(site, user_agent)
        decision = robots.decide(settings.robots_agent, current)
        lines.append(f"robots.txt:    {fetched}")
        if unavailable:
            lines.append(
                "verdict:       FAILS FOR NOW (935 robots_unavailable): a transient failure, counted "
                "toward max_failures; nothing is removed for it alone"
            )
            return lines, False
        lines.append(f"  agent token  {settings.robots_agent}; group: {decision.group or 'none applies'}")
        lines.append(f"  {'ok ' if decision.allowed else 'NO '} {decision.line or 'no rule matches: allowed'}")
        if not decision.allowed:
            lines.append(f"verdict:       EXCLUDED (907 excluded_robots): {decision.line}")
            return lines, False
    lines.append(f"display URL:   {DisplayUrls(settings.display_urls).display_url(current)}")
    if row:
        lines.append(
            f"document table: state {row['state']}, status {row['status']} ({describe(row['status'])})"
            + (f", {row['reason']}" if row["reason"] else "")
        )
    else:
        lines.append("document table: not met by a crawl yet")
    lines.append(
        "verdict:       CRAWLED: inside the boundary and allowed by robots.txt "
        "(indexed if it answers 200 with indexable content and no noindex)"
    )
    return lines, True


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "<source> <url> [--depth N] [--no-robots]"

    def short_desc(self) -> str:
        return "Explain, without crawling, why a URL is or is not crawled and indexed"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--depth", type=int, default=None, help="links from a seed (default: as recorded, else 0)")
        parser.add_argument("--no-robots", action="store_true", help="do not fetch robots.txt")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 2:
            raise UsageError("expected a source name and a URL")
        assert self.settings is not None and self.crawler_process is not None
        try:
            spider = self.crawler_process.spider_loader.load(args[0])
        except SourceError as exc:
            print(f"searchcrawl: broken source: {exc}")
            self.exitcode = 2
            return
        except KeyError:
            print(f"searchcrawl: no source named {args[0]!r}")
            self.exitcode = 2
            return
        with open_database(self.settings) as database:
            lines, _crawled = explain(
                spider.source,
                args[1],
                opts.depth,
                DocumentTable(database),
                self.settings.get("USER_AGENT"),
                not opts.no_robots,
                self.settings.getint("SEARCHCRAWL_MAX_URL_LENGTH"),
            )
        print("\n".join(printable(line) for line in lines))  # robots.txt lines and reasons: the sites' words
