"""Frontier benchmark: pages/s of a 1,011-page crawl with the durable frontier against Scrapy's
in-memory scheduler (same site, same run), and peak RSS with 100,000 URLs in the frontier.

    .venv/bin/python -m tests.benchmarks.frontier [--solr-url URL]

Needs a running Solr (default: the dev Solr at SOLR_URL or http://127.0.0.1:8983/solr/searchcrawl).
Not part of the test suite: timings on a shared machine are for ratios measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.benchmarks.measure import run_measured
from tests.conftest import ROOT, Site
from tests.sites import build_intranet

HUBS, LINKS_PER_HUB = 100, 1000  # 100,000 leaf URLs


class WideSite(BaseHTTPRequestHandler):
    """/ links to 100 hubs; each hub links to 1,000 leaves: the frontier fills to 100,000."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/robots.txt":
            body = b""
        elif self.path in ("/", "/index.html"):
            body = "".join(f'<a href="/hub/{i}">hub {i}</a> ' for i in range(HUBS)).encode()
        elif self.path.startswith("/hub/"):
            hub = int(self.path.rsplit("/", 1)[1])
            links = "".join(f'<a href="/leaf/{hub * LINKS_PER_HUB + j}">leaf</a> ' for j in range(LINKS_PER_HUB))
            body = f"<html><head><title>hub {hub}</title></head><body>{links}</body></html>".encode()
        else:
            body = f"<html><head><title>{self.path}</title></head><body><p>leaf {self.path}</p></body></html>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def crawl(name: str, sources: Path, data: Path, solr_url: str, *settings: str) -> tuple[float, int]:
    """Run `scrapy crawl`; returns (seconds, peak RSS in bytes of the crawl process)."""
    args = [sys.executable, "-m", "scrapy", "crawl", name, "-s", "LOG_LEVEL=WARNING"]
    for setting in settings:
        args += ["-s", setting]
    env = dict(
        os.environ, SEARCHCRAWL_SOURCES_DIR=str(sources), SEARCHCRAWL_DATA_DIR=str(data), SOLR_URL=solr_url, PYTHONPATH=str(ROOT)
    )
    measured = run_measured(args, ROOT, env)
    return measured.seconds, measured.peak_rss_bytes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--solr-url", default=os.environ.get("SOLR_URL", "http://127.0.0.1:8983/solr/searchcrawl"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-bench-"))
    sources = work / "sources"
    sources.mkdir()
    site_root = work / "site"
    site_root.mkdir()
    pages = build_intranet(site_root, sections=10, per_section=50)
    site = Site(site_root).start()
    wide = ThreadingHTTPServer(("127.0.0.1", 0), WideSite)
    threading.Thread(target=wide.serve_forever, daemon=True).start()
    results: dict[str, object] = {"pages": len(pages)}

    for label, extra in [("frontier", []), ("memory", ["SCHEDULER=scrapy.core.scheduler.Scheduler"]), ("frontier_again", [])]:
        name = f"bench-{label}"
        (sources / f"{name}.toml").write_text(f'seeds = ["{site.url}index.html"]\nmax_depth = 3\n')
        seconds, rss = crawl(name, sources, work / f"data-{label}", args.solr_url, *extra)
        results[label] = {
            "seconds": round(seconds, 2),
            "pages_per_s": round(len(pages) / seconds, 1),
            "peak_rss_mb": round(rss / 2**20, 1),
        }
    results["frontier_vs_memory"] = round(results["frontier"]["pages_per_s"] / results["memory"]["pages_per_s"], 2)

    port = wide.server_address[1]
    for label, extra in [("wide_frontier", []), ("wide_memory", ["SCHEDULER=scrapy.core.scheduler.Scheduler"])]:
        name = f"bench-{label}"
        (sources / f"{name}.toml").write_text(f'seeds = ["http://127.0.0.1:{port}/"]\nmax_depth = 2\n')
        seconds, rss = crawl(
            name, sources, work / f"data-{label}", args.solr_url, "CLOSESPIDER_PAGECOUNT=1500", "DEPTH_PRIORITY=1", *extra
        )
        results[label] = {"seconds": round(seconds, 2), "peak_rss_mb": round(rss / 2**20, 1)}
    print(json.dumps(results, indent=2))
    site.stop()
    wide.shutdown()


if __name__ == "__main__":
    main()
