"""Maintenance crawls against a local server whose pages the tests change between runs."""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path

import pysolr
import pytest

from searchcrawl.rules.status_codes import Status
from searchcrawl.store.runs import Runs
from tests.conftest import not_found_probe

KINDS = ("lm", "etag", "plain")  # Last-Modified (If-Modified-Since), ETag (If-None-Match), no validator


def page(title: str, text: str, links: list[str] = (), head: str = "") -> str:
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return f"<html><head><title>{title}</title>{head}</head><body><p>{text}</p>{anchors}</body></html>"


def write(path: Path, html: str, bump: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html)
    if bump:  # a new Last-Modified, surely different from the old one (HTTP dates have 1 s resolution)
        later = time.time() + 5
        os.utime(path, (later, later))


def versions(client: pysolr.Solr, source: str) -> dict[str, int]:
    client.commit(softCommit=True)  # visible, as solr_docs makes them: no fsync of the index (0.2-0.5 s each under load)
    return {doc["url"]: doc["_version_"] for doc in client.search(f'source:"{source}"', rows=1000, fl="url,_version_")}


@pytest.fixture
def site(serve, tmp_path):
    root = tmp_path / "site"
    links = [f"/{kind}/p{i}.html" for kind in KINDS for i in range(10)]
    write(root / "index.html", page("home", "the index", links))
    for kind in KINDS:
        for i in range(10):
            write(root / kind / f"p{i}.html", page(f"{kind} {i}", f"page {i} served with {kind} validators"))
    served = serve(root)
    served.root_dir = root
    return served


def report(project, name: str) -> dict:
    result = project.scrapy("report", name, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def crawl_site(project, site, solr, prefix: str) -> tuple[str, dict[str, int]]:
    """A new source of the site, crawled once: its name and its documents' Solr versions."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    assert project.scrapy("crawl", name).returncode == 0
    before = versions(solr, name)
    assert len(before) == 31
    return name, before


def test_maintenance_crawl(project, site, solr) -> None:
    root: Path = site.root_dir
    name, before = crawl_site(project, site, solr, "maint")
    assert report(project, name)["counts"]["new"] == 31

    # k = 3 changed (one of each kind; lm/p0 now also links to the n = 2 new pages),
    # d = 2 deleted, one answers 500, one redirects permanently.
    write(root / "lm" / "p0.html", page("lm 0", "changed lm text", ["/new/a.html", "/new/b.html"]), bump=True)
    write(root / "etag" / "p0.html", page("etag 0", "changed etag text"))
    write(root / "plain" / "p0.html", page("plain 0", "changed plain text"))
    write(root / "new" / "a.html", page("new a", "a new page"))
    write(root / "new" / "b.html", page("new b", "another new page"))
    (root / "lm" / "p1.html").unlink()
    (root / "plain" / "p1.html").unlink()
    site.responses["/plain/p2.html"] = (500, {"Content-Type": "text/html"}, b"<html>oops</html>")
    site.redirect("/etag/p2.html", 301, "/etag/p3.html")
    site.requests.clear()

    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    after = versions(solr, name)
    url = lambda path: site.url + path.lstrip("/")  # noqa: E731
    changed = {url(f"/{kind}/p0.html") for kind in KINDS}
    new = {url("/new/a.html"), url("/new/b.html")}
    gone = {url("/lm/p1.html"), url("/plain/p1.html"), url("/etag/p2.html")}
    assert set(after) == (set(before) - gone) | new
    assert {u for u in after if after[u] != before.get(u)} == changed | new  # exactly n new and k changed written
    assert url("/plain/p2.html") in after  # the 500 page is kept for now

    delta = report(project, name)
    counts = delta["counts"]
    row = project.table().get(name, url("/plain/p2.html"))
    assert (counts["new"], counts["changed"], counts["deleted"], counts["failed"]) == (2, 3, 3, 1), (row, delta)
    assert counts["not_modified"] == 8 + 8 + 1  # lm and etag pages (and the index) answered 304
    assert counts["unchanged"] == 7  # plain pages: compared by checksum
    assert set(delta["urls"]["deleted"]) == gone
    assert "Delta of run" in result.stderr and "new 2, changed 3" in result.stderr
    table = project.table()
    assert table.get(name, url("/etag/p2.html"))["status"] == 301
    assert table.get(name, url("/lm/p4.html"))["status"] == Status.UNCHANGED
    assert "failing crawl 1 of 3" in table.get(name, url("/plain/p2.html"))["reason"]

    # the 500 page leaves the index on its third failing crawl, not before
    assert project.scrapy("crawl", name).returncode == 0
    assert url("/plain/p2.html") in versions(solr, name)
    assert project.scrapy("crawl", name).returncode == 0
    assert url("/plain/p2.html") not in versions(solr, name)
    assert "3 consecutive failing crawls" in table.get(name, url("/plain/p2.html"))["reason"]
    # an unchanged site: nothing written to Solr
    steady = versions(solr, name)
    assert project.scrapy("crawl", name).returncode == 0
    assert versions(solr, name) == steady


def test_mass_deletion_guard(project, site, solr) -> None:
    root: Path = site.root_dir
    name = f"guard-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    assert project.scrapy("crawl", name).returncode == 0
    for kind in KINDS:
        for i in range(4):
            (root / kind / f"p{i}.html").unlink()  # 12 of 31: 39% > 30%
    result = project.scrapy("crawl", name)
    assert result.returncode == 0
    assert "Mass-deletion guard" in result.stderr and "refusing to delete 12 of 31" in result.stderr
    assert len(versions(solr, name)) == 31  # nothing deleted
    assert project.table().count_by(name, "state")["removing"] == 12
    confirmed = project.scrapy("crawl", name, "-a", "delete=force")
    assert confirmed.returncode == 0
    assert len(versions(solr, name)) == 19


def test_forced_recrawl_by_hand_and_by_settings(project, site, solr) -> None:
    name = f"forced-{uuid.uuid4().hex[:8]}"
    base = f'seeds = ["{site.url}index.html"]\n'
    project.source(name, base + 'attributes = { author = "creator", revision = "version" }\n')
    assert project.scrapy("crawl", name).returncode == 0
    last = versions(solr, name)

    def recrawl(*args: str, why: str | None = None) -> None:
        nonlocal last
        site.conditional.clear()
        result = project.scrapy("crawl", name, *args)
        assert result.returncode == 0, result.stderr[-3000:]
        if why is not None:
            assert f"Forced recrawl of {name}: {why}" in result.stderr
        now = versions(solr, name)
        assert set(now) == set(last) and all(now[u] != last[u] for u in now)  # every document re-indexed
        assert site.conditional == []  # no validators sent
        assert Runs(project.table().database).latest(name)["mode"] == "forced"
        # pushed again, but the same title and text: unchanged, not changed (issue 53)
        counts = report(project, name)["counts"]
        assert (counts["changed"], counts["unchanged"], counts["new"]) == (0, len(now), 0), counts
        last = now

    recrawl("-a", "recrawl=force")
    project.source(name, base + 'attributes = { author = "creator" }\n')
    recrawl(why="attribute 'revision' was removed from the attribute mapping")
    project.source(name, base + 'attributes = { author = "writer" }\n')
    recrawl(why="attribute 'author' was remapped from 'creator' to 'writer'")
    project.source(name, base + 'attributes = { author = "writer" }\nindex_dynamic_pages = true\n')
    recrawl(why="index_dynamic_pages went from false to true")
    result = project.scrapy("crawl", name)  # nothing changed since: a maintenance crawl
    assert "Forced recrawl" not in result.stderr
    assert versions(solr, name) == last


def test_duplicates_and_canonical_handover(project, serve, tmp_path, solr) -> None:
    root = tmp_path / "site"
    same = "the same words on several pages"
    write(root / "index.html", page("home", "index", ["/a.html", "/b.html", "/x.html", "/y.html"]))
    write(root / "a.html", page("Same", same))  # duplicates: the same title and text
    write(root / "b.html", page("Same", same))
    write(root / "x.html", page("Canon", "canonical content", head='<link rel="canonical" href="/y.html">'))
    write(root / "y.html", page("Canon", "canonical content"))
    site = serve(root)
    name = f"dups-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    assert project.scrapy("crawl", name).returncode == 0
    url = lambda path: site.url + path  # noqa: E731
    assert set(versions(solr, name)) == {url("index.html"), url("a.html"), url("y.html")}
    table = project.table()
    assert (table.get(name, url("b.html"))["status"], table.get(name, url("b.html"))["duplicate_of"]) == (
        Status.DUPLICATE,
        url("a.html"),
    )
    assert table.get(name, url("x.html"))["duplicate_of"] == url("y.html")  # the canonical target won
    assert report(project, name)["counts"]["duplicate"] == 2
    (root / "a.html").unlink()  # the indexed copy disappears: its duplicate takes its place
    result = project.scrapy("crawl", name, "-a", "delete=force")
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(versions(solr, name)) == {url("index.html"), url("b.html"), url("y.html")}


def test_test_mode_reports_and_changes_nothing(project, site, solr) -> None:
    root: Path = site.root_dir
    name = f"testmode-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    assert project.scrapy("crawl", name).returncode == 0
    before = versions(solr, name)
    states = project.table().count_by(name, "state")
    write(root / "plain" / "p3.html", page("plain 3", "edited"))
    (root / "plain" / "p4.html").unlink()
    result = project.scrapy("crawl", name, "-a", "test_mode=1")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "test mode: nothing sent to Solr" in result.stderr
    counts = report(project, name)["counts"]
    assert (counts["changed"], counts["deleted"]) == (1, 1)
    assert versions(solr, name) == before
    assert project.table().count_by(name, "state") == states
    assert not list((project.data_dir / "cache" / name).glob("*.spool"))
    result = project.scrapy("crawl", name)  # the real crawl still sees both
    counts = report(project, name)["counts"]
    assert (counts["changed"], counts["deleted"]) == (1, 1)
    assert len(versions(solr, name)) == 30


def test_orphans_are_kept_or_deleted(project, serve, tmp_path, solr) -> None:
    root = tmp_path / "site"
    write(root / "index.html", page("home", "index", ["/a.html", "/b.html", "/c.html"]))
    for name_ in "abc":
        write(root / f"{name_}.html", page(name_, f"page {name_}"))
    site = serve(root)
    name = f"orphans-{uuid.uuid4().hex[:8]}"
    base = f'seeds = ["{site.url}index.html"]\nmax_delete_share = 0.5\n'
    project.source(name, base)
    assert project.scrapy("crawl", name).returncode == 0
    write(root / "index.html", page("home", "index, no link to c any more", ["/a.html", "/b.html"]))
    site.requests.clear()
    assert project.scrapy("crawl", name).returncode == 0  # orphans = "keep": re-checked and kept
    assert "/c.html" in site.paths()
    assert site.url + "c.html" in versions(solr, name)
    project.source(name, base + 'orphans = "delete"\n')
    assert project.scrapy("crawl", name).returncode == 0
    assert set(versions(solr, name)) == {site.url + p for p in ("index.html", "a.html", "b.html")}
    row = project.table().get(name, site.url + "c.html")
    assert (row["state"], row["status"], row["reason"]) == ("removed", Status.ORPHAN, "no longer linked")


def test_an_unchanged_sites_recrawl_is_answered_304_throughout_navigation_pages_included(project, serve, tmp_path, solr) -> None:
    """Issue 91: a held-back Javadoc site's maintenance crawl got 4,538 answers 200 of 8,851, its
    navigation pages (917, kept out of the index) requested without validators every time. They
    keep theirs now: an unchanged site is answered 304 throughout, and a page reached only
    through a navigation page is still checked (the maintenance plan queues every known URL)."""
    root = tmp_path / "javadoc"
    write(root / "index.html", page("API", "the overview", ["/api/overview-tree.html", "/api/Injector.html"]))
    write(root / "api" / "overview-tree.html", page("Hierarchy", "the class tree", ["/api/class-use/Injector.html"]))
    write(root / "api" / "class-use" / "Injector.html", page("Uses of Injector", "uses", ["/api/Module.html"]))
    write(root / "api" / "Injector.html", page("Injector", "builds the object graph"))
    write(root / "api" / "Module.html", page("Module", "contributes bindings, linked from a class-use page only"))
    site = serve(root)
    name = f"javadoc-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    assert project.scrapy("crawl", name).returncode == 0
    navigation = {"/api/overview-tree.html", "/api/class-use/Injector.html"}
    indexed = {site.url + path.lstrip("/") for path in ("/index.html", "/api/Injector.html", "/api/Module.html")}
    before = versions(solr, name)
    assert set(before) == indexed
    site.requests.clear()
    site.conditional.clear()

    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    pages = {path for path in site.paths() if path.endswith(".html") and not not_found_probe(path)}
    assert pages == navigation | {"/index.html", "/api/Injector.html", "/api/Module.html"}
    assert set(site.conditional) >= pages  # every page asked conditionally: the server answered 304
    assert report(project, name)["counts"]["not_modified"] == 3
    table = project.table()
    for path in navigation:
        row = table.get(name, site.url + path.lstrip("/"))
        assert (row["state"], row["status"]) == ("fetched", Status.NAVIGATION_PAGE), row
        assert row["last_modified"], row
    assert versions(solr, name) == before  # nothing written to Solr


def test_a_new_document_table_takes_over_what_solr_holds_of_its_source(project, site, solr) -> None:
    """The data directory lost (a new machine, a container without its volume, SQLite swapped for
    PostgreSQL): the next crawl starts from an empty document table over an index that holds the
    source's documents. It takes them over from Solr, so that a page deleted from the site since
    leaves the index (it would otherwise stay there for good: no row, no recheck), and the delta
    report says what changed, not that every page is new. What made the documents in Solr is
    unknown, so that crawl indexes them again (a forced recrawl); the next one is as usual."""
    root: Path = site.root_dir
    name, before = crawl_site(project, site, solr, "adopt")
    shutil.rmtree(project.data_dir)
    url = lambda path: site.url + path.lstrip("/")  # noqa: E731
    write(root / "plain" / "p0.html", page("plain 0", "changed plain text"))
    (root / "plain" / "p1.html").unlink()

    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Forced recrawl of {name}: the document table knew nothing of it; took over the 31 documents" in result.stderr
    after = versions(solr, name)
    assert set(after) == set(before) - {url("/plain/p1.html")}
    delta = report(project, name)
    assert delta["mode"] == "forced", delta
    counts = delta["counts"]
    # pushed again, each: the one whose text changed meanwhile is changed, the others unchanged
    assert (counts["new"], counts["changed"], counts["unchanged"], counts["deleted"]) == (0, 1, 29, 1), delta
    assert set(delta["urls"]["deleted"]) == {url("/plain/p1.html")}
    assert delta["urls"]["changed"] == [url("/plain/p0.html")]

    # The next crawl is a maintenance crawl as any other: nothing changed, nothing pushed; and
    # Solr is not read again: a document added to it by hand under the source is not taken over.
    solr.add([{"id": f"{name}!{url('/plain/by-hand.html')}", "url": url("/plain/by-hand.html"), "source": name}])
    steady = versions(solr, name)
    result = project.scrapy("crawl", name)
    assert result.returncode == 0 and "took over" not in result.stderr, result.stderr[-3000:]
    assert versions(solr, name) == steady
    delta = report(project, name)
    assert delta["mode"] == "maintenance" and (delta["counts"]["new"], delta["counts"]["changed"]) == (0, 0), delta
    assert project.table().get(name, url("/plain/by-hand.html")) is None


def test_a_test_mode_crawl_over_a_new_table_takes_over_too(project, site, solr) -> None:
    """A test-mode crawl of a source the table does not know takes over what Solr holds (it
    reports what a crawl would do), and changes nothing in Solr."""
    name, before = crawl_site(project, site, solr, "adopt-test")
    shutil.rmtree(project.data_dir)
    (site.root_dir / "plain" / "p1.html").unlink()
    result = project.scrapy("crawl", name, "-a", "test_mode=1")
    assert result.returncode == 0 and "took over the 31 documents" in result.stderr, result.stderr[-3000:]
    assert versions(solr, name) == before
    delta = report(project, name)
    assert delta["mode"] == "test" and delta["counts"]["new"] == 0 and delta["counts"]["deleted"] == 1, delta
