"""Content regions measured on the shared corpora (issue 57): how much of the indexed text is
navigation with the landmarks kept and dropped, and what the regions cost per page.

For each site (the Sphinx-built Scipy Lecture Notes, the Nutch site with its Javadoc), every HTML
page is parsed once (lxml, as the crawl does) and its text read twice: whole (``landmarks =
false``) and by the default regions. "Menu words" are the words of the site's navigation that
appear on at least 90% of its pages with the whole text: a search for one finds every page. The
report gives, per site, the characters of text, the hits of the menu words (pages holding one),
the CPU time of reading the text per page, and that of four field rules (a CSS element's text, a
meta tag's attribute, a JSON-LD property, a regex on the URL), medians of three passes. And the
soft errors (content/soft_errors.py): how many of these real pages the default markers call a
login, challenge, maintenance or not-found page (every one would be a false positive), their CPU
per page (the kept text read already, as in the crawl), and, were a site to answer its probe with
its own home page, how many pages would be as like it as the default similarity (0.9) and what
the comparison costs per page.

    .venv/bin/python -m tests.benchmarks.regions
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from lxml import html

from searchcrawl.content.extract import visible_text
from searchcrawl.content.field_rules import FieldRule, FieldRules
from searchcrawl.content.regions import ContentRegions, RegionsTable
from searchcrawl.content.soft_errors import NotFoundPage, Page, SoftErrors, shingles
from tests.conftest import unpack

SITES = {"sphinx": "scipy-lectures-site.tar.xz", "nutch": "nutch-site.tar.xz"}
WORD = re.compile(r"[a-z]{4,}")


def bodies(folder: Path) -> list[Any]:
    found = []
    for path in sorted(folder.rglob("*.html")):
        try:
            root = html.fromstring(path.read_bytes())
        except (ValueError, SyntaxError):
            continue
        found.append(root)
    return found


def body_of(root: Any) -> Any:
    body = root.find("body")
    return body if body is not None else root


def timed(function: Any, pages: list[Any]) -> tuple[list[str], float]:
    """The texts, and the median over three passes of the CPU seconds per page."""
    runs = []
    texts: list[str] = []
    for _ in range(3):
        started = time.process_time()
        texts = [function(page) for page in pages]
        runs.append((time.process_time() - started) / max(len(pages), 1))
    return texts, statistics.median(runs)


def measure(roots: list[Any]) -> dict[str, Any]:
    pages = [body_of(root) for root in roots]
    regions = ContentRegions(RegionsTable())
    whole, whole_cpu = timed(visible_text, pages)
    rules = FieldRules(
        [
            FieldRule(name="heading", css="h1, h2.title"),
            FieldRule(name="generator", css="meta[name=generator]", attribute="content"),
            FieldRule(name="published", type="date", json_ld="datePublished"),
            FieldRule(name="section", url=True, regex=r"/([a-z]+)/[^/]*$"),
        ]
    )
    ruled, rules_cpu = timed(lambda page: rules.fields(page, "https://site/docs/page.html"), pages)
    kept, kept_cpu = timed(lambda page: regions.text(page, "https://site/").text, pages)
    counts: dict[str, int] = {}
    for text in whole:
        for word in set(WORD.findall(text.lower())):
            counts[word] = counts.get(word, 0) + 1
    menu = sorted(word for word, count in counts.items() if count >= 0.9 * len(pages))

    def hits(texts: list[str]) -> int:
        return sum(sum(1 for text in texts if word in set(WORD.findall(text.lower()))) for word in menu)

    soft = SoftErrors()
    read = [
        Page(f"https://site/{i}.html", {}, root, lambda text=text: text)
        for i, (root, text) in enumerate(zip(roots, kept, strict=True))
    ]
    flagged, soft_cpu = timed(soft.of_page, read)
    home = NotFoundPage.of("https://site/index.html", read[0].title, kept[0])
    prints, _ = timed(lambda page: shingles(page.title, page.text, page.url), read)
    assert home is not None
    like, like_cpu = timed(lambda page: soft.of_page(page, home), read)
    return {
        "pages": len(pages),
        "soft_errors_flagged": sorted(f"{found.kind}: {found.reason}" for found in flagged if found is not None),
        "cpu_ms_per_page_soft_error_markers": round(soft_cpu * 1000, 3),
        "pages_as_like_the_home_page_as_0.9": sum(1 for found in like[1:] if found is not None),
        "cpu_ms_per_page_markers_and_likeness": round(like_cpu * 1000, 3),
        "mean_shingles_per_page": round(statistics.mean(len(found) for found in prints), 1),
        "menu_words": menu[:40],
        "characters_whole": sum(map(len, whole)),
        "characters_kept": sum(map(len, kept)),
        "menu_word_hits_whole": hits(whole),
        "menu_word_hits_kept": hits(kept),
        "pages_changed_by_regions": sum(1 for a, b in zip(whole, kept, strict=True) if a != b),
        "cpu_ms_per_page_whole": round(whole_cpu * 1000, 3),
        "cpu_ms_per_page_regions": round(kept_cpu * 1000, 3),
        "cpu_ms_per_page_four_field_rules": round(rules_cpu * 1000, 3),
        "pages_with_a_heading_field": sum(1 for found in ruled if "heading_s" in found),
    }


def main() -> None:
    results = {}
    with tempfile.TemporaryDirectory(prefix="searchcrawl-regions-") as folder:
        for site, archive in SITES.items():
            results[site] = measure(bodies(unpack(archive, Path(folder) / site)))
            print(site, json.dumps({k: v for k, v in results[site].items() if k != "menu_words"}), flush=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
