"""Maintenance benchmark: a 1,011-page site crawled initially, then again unchanged, by two
sources in one run: one reading the site's sitemap (robots.txt names it; every page with its
file's time as ``lastmod``), one not (``sitemaps_from_robots = false``). For each: wall times,
the ratio maintenance / initial, the requests each crawl sent (pages, and robots.txt plus
sitemaps), and the Solr updates the maintenance crawl made (must be 0).

    .venv/bin/python -m tests.benchmarks.maintenance [--solr-url URL]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.benchmarks.frontier import crawl
from tests.benchmarks.measure import solr_updates
from tests.conftest import Site
from tests.sites import build_intranet

OVERHEAD = ("/robots.txt", "/sitemap.xml")


def write_sitemap(root: Path, site_url: str) -> int:
    """sitemap.xml listing every HTML page with its file's modification time; robots.txt naming it."""
    entries = []
    for path in sorted(root.rglob("*.html")):
        lastmod = datetime.fromtimestamp(path.stat().st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        entries.append(f"<url><loc>{site_url}{path.relative_to(root).as_posix()}</loc><lastmod>{lastmod}</lastmod></url>")
    xmlns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    (root / "sitemap.xml").write_text(f'<?xml version="1.0"?><urlset {xmlns}>{"".join(entries)}</urlset>')
    (root / "robots.txt").write_text(f"User-agent: *\nAllow: /\n\nSitemap: {site_url}sitemap.xml\n")
    return len(entries)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--solr-url", default=os.environ.get("SOLR_URL", "http://127.0.0.1:8983/solr/searchcrawl"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-bench-"))
    (work / "sources").mkdir()
    (work / "site").mkdir()
    pages = build_intranet(work / "site", sections=10, per_section=50)
    site = Site(work / "site").start()
    listed = write_sitemap(work / "site", site.url)
    results: dict[str, Any] = {"pages": len(pages), "in_sitemap": listed}
    for variant, extra in (("without_sitemap", "sitemaps_from_robots = false\n"), ("with_sitemap", "")):
        name = f"bench-maintenance-{variant.replace('_', '-')}"
        (work / "sources" / f"{name}.toml").write_text(f'seeds = ["{site.url}index.html"]\nmax_depth = 3\n{extra}')
        adds = solr_updates(args.solr_url)
        measured: dict[str, Any] = {}
        for label in ("initial", "maintenance"):
            site.requests.clear()
            seconds, rss = crawl(name, work / "sources", work / f"data-{variant}", args.solr_url)
            now = solr_updates(args.solr_url)
            paths = site.paths()
            measured[label] = {
                "seconds": round(seconds, 2),
                "pages_per_s": round(len(pages) / seconds, 1),
                "peak_rss_mb": round(rss / 2**20, 1),
                "page_requests": sum(1 for path in paths if path not in OVERHEAD),
                "robots_and_sitemap_requests": sum(1 for path in paths if path in OVERHEAD),
                "solr_updates": now - adds,
            }
            adds = now
        measured["maintenance_vs_initial"] = round(measured["maintenance"]["seconds"] / measured["initial"]["seconds"], 3)
        results[variant] = measured
    print(json.dumps(results, indent=2))
    site.stop()


if __name__ == "__main__":
    main()
