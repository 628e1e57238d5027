"""The device kit's wide site (../shared/device-kit/gen_site.py: pages of about 1 KB, five links
each) spread over H host names of one server, for issue 94's site of many hosts: page n lives on
127.0.0.(n mod H + 2), its links lead to their pages' own hosts, and each host has its own
document root ``ROOT/<address>/`` with its sitemap index and robots.txt.

    python -m tests.benchmarks.kit_hosts ROOT N PORT H

Served by one nginx with a ``listen 127.0.0.<k>:PORT;`` for each host and ``root
ROOT/$server_addr;``; the source lists the H roots as its seeds and their ``sitemap_index.xml``
as its sitemaps (tests/benchmarks/README.md, "A site of 100 hosts").
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

WORDS = (
    "river harbour ledger policy travel oracle search crawler index document table frontier "
    "robots sitemap access token group folder share report delta archive schedule"
).split()


def build(root: Path, total: int, port: int, hosts: int) -> None:
    def host(page: int) -> str:
        return f"127.0.0.{page % hosts + 2}"

    def url(page: int) -> str:
        return f"http://{host(page)}:{port}/p/{page // 1000}/{page}.html"

    rng = random.Random(total)
    pages: dict[str, list[str]] = {host(number): [] for number in range(hosts)}
    for number in range(total):
        folder = root / host(number) / "p" / str(number // 1000)
        folder.mkdir(parents=True, exist_ok=True)
        links = [(number + 1) % total, (number + 2) % total, *(rng.randrange(total) for _ in range(3))]
        title = f"{WORDS[number % len(WORDS)].title()} note {number}"
        anchors = "".join(f'<li><a href="{url(link)}">{WORDS[link % len(WORDS)]} {link}</a></li>' for link in links)
        (folder / f"{number}.html").write_text(
            f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head><body>'
            f"<h1>{title}</h1><p>Note {number}: {' '.join(rng.choices(WORDS, k=90))}.</p><ul>{anchors}</ul></body></html>"
        )
        pages[host(number)].append(url(number))
    for address, urls in pages.items():
        base = f"http://{address}:{port}/"
        (root / address / "sitemaps").mkdir(parents=True, exist_ok=True)
        entries = "".join(f"<url><loc>{page}</loc></url>\n" for page in urls)
        (root / address / "sitemaps" / "0.xml").write_text(
            '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            f"{entries}</urlset>\n"
        )
        (root / address / "sitemap_index.xml").write_text(
            '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            f"<sitemap><loc>{base}sitemaps/0.xml</loc></sitemap>\n</sitemapindex>\n"
        )
        (root / address / "robots.txt").write_text(f"User-agent: *\nAllow: /\n\nSitemap: {base}sitemap_index.xml\n")
        (root / address / "index.html").write_text(
            f'<html><head><title>{address}</title></head><body><a href="{urls[0] if urls else "/"}">first</a></body></html>'
        )


if __name__ == "__main__":
    build(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
