"""Content regions through real crawls into the real Solr (issue 57): a page's text leaves out the
site's menu, banner and footer, yet the menu's links are followed; a changed menu changes no page
(their checksums are the kept text's), a changed article changes its page only; a source's own
selectors and the site owners' marks apply."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

from tests.conftest import Project, solr_docs

MENU = '<header><a href="/index.html">Home</a></header><nav>{links} {extra}</nav>'
FOOTER = "<footer>Copyright the harbour board</footer>"


def write_site(root: Path, extra: str, articles: dict[str, str]) -> None:
    """The site's pages, each with a Last-Modified later than any before (HTTP dates have 1 s
    resolution: a crawl within the second of the last writing would be answered 304)."""
    stamp = max([file.stat().st_mtime for file in root.glob("*.html")] + [time.time()]) + 2
    links = " ".join(f'<a href="/{name}.html">{name}</a>' for name in sorted(articles))
    for name, text in {"index": "Welcome to the harbour intranet.", **articles}.items():
        body = f"{MENU.format(links=links, extra=extra)}<main><article><h1>{name}</h1><p>{text}</p>"
        body += f'<p>Notice <span class="docno">HB-{len(name)}</span> <time datetime="2026-0{len(name) % 9 + 1}-01">x</time></p></article>'
        body += f'<div class="share">Share this page</div><div data-searchcrawl-exclude>Cookie notice</div></main>{FOOTER}'
        (root / f"{name}.html").write_text(f"<html><head><title>{name}</title></head><body>{body}</body></html>")
        os.utime(root / f"{name}.html", (stamp, stamp))


def crawl(project: Project, name: str) -> dict[str, list[str]]:
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(project.scrapy("report", name, "--json").stdout)["urls"]


def test_the_menu_is_not_the_text_and_a_changed_menu_changes_no_page(project: Project, serve, tmp_path: Path, solr) -> None:
    root = tmp_path / "site"
    root.mkdir()
    articles = {"tides": "High water at noon.", "berths": "Berth four is closed for repairs."}
    write_site(root, "Ferry times", articles)
    site = serve(root)
    name = f"regions-{uuid.uuid4().hex[:8]}"
    regions = '[regions]\ndrop = ["div.share"]\n'
    fields = '[[fields]]\nname = "notice"\ncss = "span.docno"\n'
    fields += '[[fields]]\nname = "issued"\ntype = "date"\nxpath = "//time/@datetime"\n'
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 2\nmodified_when = ["checksum"]\n{regions}{fields}')
    report = crawl(project, name)
    assert len(report["new"]) == 3, report  # the pages the menu links to: followed
    docs = {doc["url"].rsplit("/", 1)[1]: doc for doc in solr_docs(solr, name)}
    assert docs["tides.html"]["content"] == "tides High water at noon. Notice HB-5 x"
    assert (docs["tides.html"]["notice_s"], docs["tides.html"]["issued_dt"]) == ("HB-5", "2026-06-01T00:00:00Z")
    assert [doc["url"] for doc in solr.search("notice_s:HB-6", fq=f'source:"{name}"')] == [site.url + "berths.html"]
    for word in ("Ferry", "Copyright", "Share", "Cookie", "Home"):
        assert not [doc for doc in docs.values() if word in doc["content"]], word
    hits = solr.search("content:ferry", fq=f'source:"{name}"')
    assert len(hits) == 0

    articles["berths"] = "Berth four is open again."
    write_site(root, "Ferry times and the new canteen menu", articles)  # the menu changes on every page
    report = crawl(project, name)
    changed = sorted(url.rsplit("/", 1)[1] for url in report["changed"])
    assert changed == ["berths.html"], report
    now = {doc["url"].rsplit("/", 1)[1]: doc for doc in solr_docs(solr, name)}
    assert now["tides.html"]["_version_"] == docs["tides.html"]["_version_"]
    assert now["berths.html"]["content"] == "berths Berth four is open again. Notice HB-6 x"
