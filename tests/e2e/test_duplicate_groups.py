"""A group of copies over a sequence of maintenance crawls (issue 53, item 26): a page A indexed; a
page B becomes an exact copy of A (no canonical); a few crawls later a page C, known but linked by
no page, becomes a copy of A naming A its ``rel=canonical``; later still C moves away (301).

After every crawl: every row the document table says is indexed is in Solr (a 304 on a member of
the group must not leave it out), and the group holds exactly one document in Solr: A, the named
canonical, while C names it; one of A and B once C is gone. The discovery order of A, B and C (which
member is "first seen") is varied: the result must not depend on it."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import solr_docs

SAME_TITLE, SAME_TEXT = "Travel policy", "budget travel policy holiday pension laptop"
OTHERS = [f"/p{i:02d}.html" for i in range(6)]  # the rest of the site, unchanged throughout


def page(title: str, text: str, links: Sequence[str] = (), head: str = "") -> str:
    anchors = "".join(f'<a href="{href}"></a>' for href in links)
    return f"<html><head><title>{title}</title>{head}</head><body><p>{text}</p>{anchors}</body></html>"


class ChangingSite:
    """The site's files, each rewritten only when its bytes change, with a later Last-Modified
    each time (HTTP dates have a resolution of one second): unchanged pages answer 304."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.written: dict[str, str] = {}
        self.mtimes: dict[str, float] = {}

    def write(self, pages: dict[str, str]) -> None:
        for path, html in pages.items():
            if self.written.get(path) == html:
                continue
            file = self.root / path.lstrip("/")
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(html, encoding="utf-8")
            mtime = max(self.mtimes.get(path, 0) + 2, time.time() + 2)
            os.utime(file, (mtime, mtime))
            self.mtimes[path], self.written[path] = mtime, html


# the discovery order of A, B and C (row ids): each of these failed before the fix
@pytest.mark.parametrize("order", ["BAC", "CBA", "BCA"], ids=lambda order: f"discovered {order}")
def test_a_group_of_copies_holds_one_document_the_named_canonical(project, serve, tmp_path, solr, order: str) -> None:
    root = tmp_path / "site"
    root.mkdir()
    files = ChangingSite(root)
    site = serve(root)
    url = lambda path: site.url + path.lstrip("/")  # noqa: E731
    copies = {"A": "/a.html", "B": "/b.html", "C": "/c.html"}
    same = page(SAME_TITLE, SAME_TEXT)

    def index(linked: str) -> str:
        return page("Home", "the start page", [copies[name] for name in order if name in linked] + OTHERS)

    pages = {"/index.html": index("ABC"), copies["A"]: same}
    pages.update({copies[name]: page(f"Page {name}", f"the own words of page {name}") for name in "BC"})
    pages.update({path: page(f"Other {path}", f"other words of {path}") for path in OTHERS})
    name = f"group-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    steps: list[str] = []

    def crawl(step: str) -> tuple[set[str], dict[str, dict], set[str]]:
        """One crawl; returns what Solr holds, the rows, and the paths requested conditionally."""
        files.write(pages)
        asked = len(site.conditional)
        result = project.scrapy("crawl", name, "-s", "SEARCHCRAWL_PUSH_INTERVAL=0.2")
        assert result.returncode == 0, result.stderr[-3000:]
        steps.append(step)
        in_solr = {doc["url"] for doc in solr_docs(solr, name)}
        table = project.table()
        try:
            rows = {row["url"]: table.get(name, row["url"]) or row for row in table.rows(name, limit=1000)}
        finally:
            table.database.close()
        indexed = {row_url for row_url, row in rows.items() if row["state"] == "indexed"}
        assert indexed == in_solr, (
            f"after {' -> '.join(steps)}: rows indexed but not in Solr: {sorted(indexed - in_solr)}, "
            f"in Solr but not indexed: {sorted(in_solr - indexed)}; "
            + "; ".join(f"{u}: {rows[u]['state']} {rows[u]['status']} {rows[u]['reason']}" for u in sorted(indexed ^ in_solr))
        )
        return in_solr, rows, set(site.conditional[asked:])

    def group(in_solr: set[str], members: str = "ABC") -> list[str]:
        return sorted(name for name in members if url(copies[name]) in in_solr)

    def held(in_solr: set[str], rows: dict[str, dict]) -> str:
        """What the group holds, and its rows: for the message of a failed check."""
        described = (
            f"{name}: {row['state']} {row['status']} {row['reason']!r} duplicate_of={row['duplicate_of']}"
            for name in "ABC"
            if (row := rows.get(url(copies[name]))) is not None
        )
        return f"after {' -> '.join(steps)}: the group holds {group(in_solr)}; " + "; ".join(described)

    in_solr, rows, _ = crawl("initial crawl")
    assert group(in_solr) == ["A", "B", "C"], held(in_solr, rows)
    pages["/index.html"] = index("AB")  # C: known, linked by no page from now on
    in_solr, rows, _ = crawl("C unlinked")
    assert group(in_solr) == ["A", "B", "C"], held(in_solr, rows)

    pages[copies["B"]] = same  # a copy of A, naming no canonical
    for step in ("B a copy of A", "unchanged"):
        in_solr, rows, _ = crawl(step)
        assert len(group(in_solr, "AB")) == 1, held(in_solr, rows)

    pages[copies["C"]] = page(SAME_TITLE, SAME_TEXT, head=f'<link rel="canonical" href="{copies["A"]}">')
    for step in ("C a copy naming A canonical", "unchanged", "unchanged"):
        in_solr, rows, conditional = crawl(step)
        assert group(in_solr) == ["A"], held(in_solr, rows)
    assert copies["A"] in conditional  # the holder answered 304 Not Modified, and stays in Solr

    pages["/moved.html"] = page("Moved", "the page C moved to")
    site.redirect(copies["C"], 301, url("/moved.html"))
    for step in ("C moved away (301)", "unchanged", "unchanged"):
        in_solr, rows, _ = crawl(step)
        assert len(group(in_solr)) == 1, held(in_solr, rows)
        assert url("/moved.html") in in_solr


@pytest.mark.parametrize("processes", [1, 2], ids=["one process", "two processes"])
def test_a_copy_fetched_before_its_holder_changes_holds_the_content_in_that_crawl(
    project, serve, tmp_path, solr, processes: int
) -> None:
    """Issue 99, point 12: A holds a content and B, discovered after it, is its copy. In the crawl
    in which A's text changes, B is fetched before A (B is linked from the start page, A only
    from a page linked there: breadth first, B goes first): B was compared with A still holding
    the content and recorded its duplicate, then A changed, and B, the content's only copy now,
    entered the index only in the next crawl. It must be in Solr at the end of that very crawl.
    With two processes the two pages may also go through at once, in either order."""
    root = tmp_path / "site"
    root.mkdir()
    files = ChangingSite(root)
    site = serve(root)
    url = lambda path: site.url + path.lstrip("/")  # noqa: E731
    same, changed = page(SAME_TITLE, SAME_TEXT), page(SAME_TITLE, "the holder's new words")
    pages = {
        "/index.html": page("Home", "the start page", ["/hub.html"]),
        "/hub.html": page("Hub", "the hub page", ["/a.html"]),  # A at depth 2
        "/a.html": same,
        "/b.html": same,
    }
    name = f"changed-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n' + (f"processes = {processes}\n" if processes > 1 else ""))
    steps: list[str] = []
    # one request at a time in each process, the frontier's order (by depth, then discovery)
    settings = ("-s", "CONCURRENT_REQUESTS=1", "-s", "SEARCHCRAWL_FRONTIER_BATCH=1", "-s", "SEARCHCRAWL_PUSH_INTERVAL=0.2")

    def crawl(step: str) -> tuple[dict[str, str], dict[str, dict]]:
        """One crawl; returns what Solr holds (each URL's content) and the rows of A and B."""
        files.write(pages)
        result = project.scrapy("crawl", name, *settings)
        assert result.returncode == 0, result.stderr[-3000:]
        steps.append(step)
        in_solr = {doc["url"]: doc.get("content", "") for doc in solr_docs(solr, name)}
        table = project.table()
        try:
            rows = {path: table.get(name, url(path)) or {} for path in ("/a.html", "/b.html")}
        finally:
            table.database.close()
        return in_solr, rows

    def held(in_solr: dict[str, str], rows: dict[str, dict]) -> str:
        described = (
            f"{path}: {row.get('state')} {row.get('status')} {row.get('reason')!r} duplicate_of={row.get('duplicate_of')}"
            for path, row in rows.items()
        )
        return f"after {' -> '.join(steps)}: Solr holds {sorted(in_solr)}; " + "; ".join(described)

    in_solr, rows = crawl("A alone")
    assert url("/a.html") in in_solr and url("/b.html") not in in_solr, held(in_solr, rows)
    pages["/index.html"] = page("Home", "the start page", ["/hub.html", "/b.html"])  # B at depth 1, found after A
    in_solr, rows = crawl("B, a copy of A, found")
    assert url("/a.html") in in_solr and url("/b.html") not in in_solr, held(in_solr, rows)
    assert rows["/b.html"]["duplicate_of"] == url("/a.html"), held(in_solr, rows)

    pages["/a.html"] = changed  # B goes before A in this crawl
    in_solr, rows = crawl("A changed")
    assert in_solr.get(url("/b.html")) == SAME_TEXT, held(in_solr, rows)  # the content's only copy now
    assert in_solr.get(url("/a.html")) == "the holder's new words", held(in_solr, rows)
    assert (rows["/b.html"]["state"], rows["/b.html"]["duplicate_of"]) == ("indexed", None), held(in_solr, rows)
