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


def test_a_changed_rule_reaches_the_pages_answered_304_once(project: Project, serve, tmp_path: Path, solr) -> None:
    """Issue 72: a changed [regions], a new [[fields]] rule and a new [[display_urls]] rule never
    reached the pages the site answered 304, crawl after crawl (only -a recrawl=force applied
    them). A change of a rule that makes what is indexed of an unchanged page forces a recrawl,
    saying why: every page is indexed again with the new rule; the crawl after it is a
    maintenance crawl that re-indexes nothing."""
    root = tmp_path / "site"
    root.mkdir()
    write_site(root, "Ferry times", {"tides": "High water at noon.", "berths": "Berth four is closed."})
    site = serve(root)
    name = f"rules-{uuid.uuid4().hex[:8]}"
    base = f'seeds = ["{site.url}index.html"]\nmax_depth = 2\n'
    project.source(name, base)
    assert len(crawl(project, name)["new"]) == 3
    before = {doc["url"]: doc for doc in solr_docs(solr, name)}
    assert all("Share this page" in doc["content"] and "notice_s" not in doc for doc in before.values())
    assert_not_modified(project, name)  # the site answers 304 to every page

    rules = '[regions]\ndrop = ["div.share"]\n[[fields]]\nname = "notice"\ncss = "span.docno"\n'
    rules += f'[[display_urls]]\nprefix = "{site.url}"\nreplace = "https://harbour.example/"\n'
    project.source(name, base + rules)
    result = project.scrapy("crawl", name, "-s", "LOG_LEVEL=INFO")
    assert result.returncode == 0, result.stderr[-3000:]
    for why in ("the [regions] rules changed", "the [[fields]] rules changed", "the [[display_urls]] rules changed"):
        assert f"Forced recrawl of {name}:" in result.stderr and why in result.stderr, result.stderr[-3000:]
    after = {doc["url"]: doc for doc in solr_docs(solr, name)}
    assert set(after) == set(before) and all(after[url]["_version_"] != before[url]["_version_"] for url in after)
    tides = after[f"{site.url}tides.html"]
    assert "Share this page" not in tides["content"] and tides["notice_s"] == "HB-5"
    assert tides["display_url"] == "https://harbour.example/tides.html"

    assert_not_modified(project, name)  # the site and the rules as they were: nothing to do
    assert {doc["url"]: doc["_version_"] for doc in solr_docs(solr, name)} == {
        url: doc["_version_"] for url, doc in after.items()
    }


def assert_not_modified(project: Project, name: str) -> None:
    """A crawl of ``name`` is a maintenance crawl whose three pages are answered 304, no recrawl forced."""
    result = project.scrapy("crawl", name)
    assert result.returncode == 0 and "Forced recrawl" not in result.stderr, result.stderr[-3000:]
    delta = json.loads(project.scrapy("report", name, "--json").stdout)
    counts = delta["counts"]
    assert delta["mode"] == "maintenance" and (counts["not_modified"], counts["new"], counts["changed"]) == (3, 0, 0), counts
