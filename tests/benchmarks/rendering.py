"""Rendering benchmark: rendered pages/s with 1, 2 and 4 pages at once, and the crawler's RSS
after 100 and after 1,000 rendered pages (memory must stay steady).

    .venv/bin/python -m tests.benchmarks.rendering [--solr-url URL] [--pages 1000]

A synthetic site whose pages write their text and links with JavaScript, served on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.conftest import ROOT

TEMPLATE = """<html><head><title>page {n}</title></head><body><div id="app"></div><script>
var words = "enterprise search crawler renders javascript pages for the index".split(" ");
var text = ""; for (var i = 0; i < 200; i++) {{ text += words[(i * {n}) % words.length] + " "; }}
document.getElementById("app").innerHTML = "<p>page {n}: " + text + "</p>" + {links};
</script></body></html>"""


class JsSite(BaseHTTPRequestHandler):
    pages = 1000

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        match = re.fullmatch(r"/p/(\d+)", self.path)
        if self.path == "/robots.txt" or not match:
            self.send_response(404)
            self.end_headers()
            return
        n = int(match.group(1))
        children = [c for c in (2 * n + 1, 2 * n + 2) if c < self.pages]
        links = " + ".join(f"'<a href=\"/p/{c}\">next</a> '" for c in children) or "''"
        body = TEMPLATE.format(n=n, links=links).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def run(work: Path, port: int, solr_url: str, name: str, pages_at_once: int, limit: int) -> dict:
    sources = work / "sources"
    sources.mkdir(exist_ok=True)
    (sources / f"{name}.toml").write_text(
        f'seeds = ["http://127.0.0.1:{port}/p/0"]\nrender_js = true\nrender_pages = {pages_at_once}\nmax_depth = 20\n'
    )
    env = dict(
        os.environ,
        SEARCHCRAWL_SOURCES_DIR=str(sources),
        SEARCHCRAWL_DATA_DIR=str(work / f"data-{name}"),
        SOLR_URL=solr_url,
        PYTHONPATH=str(ROOT),
    )
    args = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        name,
        "-s",
        "LOG_LEVEL=INFO",
        "-s",
        f"CLOSESPIDER_PAGECOUNT={limit}",
        "-s",
        "SEARCHCRAWL_PROGRESS_INTERVAL=5",
        "-s",
        f"CONCURRENT_REQUESTS={max(pages_at_once, 2)}",
    ]
    started = time.monotonic()
    process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rss_at: dict[int, float] = {}
    pages = 0

    def sample() -> None:
        while process.poll() is None:
            try:
                status = Path(f"/proc/{process.pid}/status").read_text()
                rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024
            except (OSError, AttributeError):
                break
            for mark in (100, 1000):
                if pages >= mark and mark not in rss_at:
                    rss_at[mark] = round(rss, 1)
            time.sleep(0.5)

    threading.Thread(target=sample, daemon=True).start()
    output_lines = []
    for line in process.stdout:  # type: ignore[union-attr]
        output_lines.append(line)
        found = re.search(r"Progress of \S+: (\d+) pages", line)
        if found:
            pages = int(found.group(1))
    process.wait()
    seconds = time.monotonic() - started
    crawled = sum(1 for line in output_lines if "Crawled (200)" in line) or pages
    stats = "".join(output_lines)
    count = re.search(r"'response_received_count': (\d+)", stats)
    total = int(count.group(1)) if count else crawled
    return {
        "pages_at_once": pages_at_once,
        "pages": total,
        "seconds": round(seconds, 1),
        "pages_per_s": round(total / seconds, 2),
        "rss_mb_at": rss_at,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--solr-url", default=os.environ.get("SOLR_URL", "http://127.0.0.1:8983/solr/searchcrawl"))
    parser.add_argument("--pages", type=int, default=1000)
    args = parser.parse_args()
    JsSite.pages = 100_000
    server = ThreadingHTTPServer(("127.0.0.1", 0), JsSite)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-render-"))
    port = server.server_address[1]
    results = [run(work, port, args.solr_url, f"render{n}", n, 120) for n in (1, 2, 4)]
    results.append(run(work, port, args.solr_url, "render-long", 4, args.pages))
    print(json.dumps(results, indent=2))
    server.shutdown()


if __name__ == "__main__":
    main()
