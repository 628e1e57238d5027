"""`scrapy explain` says what the crawl says: it runs the crawl's own rule chain
(``RuleChain.steps``, whose first refusal the crawl's ``Admission`` takes), and gets robots.txt from the
crawl's RobotsMiddleware, through the crawl's downloader (the internal-address guard, at most 5
redirects). And it is read-only: the document table is opened without migrating, nothing is
written, no run is started.

For a URL it would crawl, explain fetches the page through the crawl's downloader too, and shows
what the source's content regions keep and drop of it: ``ContentRegions.text``, the crawl's own,
asked to explain.

The `scrapy explain` tests run it as a user does (a subprocess) against real servers on
127.0.0.1; none needs Solr."""

from __future__ import annotations

import re
import sqlite3
import uuid
from pathlib import Path

import pytest
from lxml import html
from scrapy.utils.misc import build_from_crawler

from searchcrawl.content.extract import visible_text
from searchcrawl.crawl.frontier_scheduler import FrontierScheduler
from searchcrawl.crawl.ledger_writer import LedgerWriter
from searchcrawl.crawl.requests import admission_of
from searchcrawl.rules.chain import ADMITTED
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.database import create_db_engine, schema_revisions, upgrade_schema
from searchcrawl.store.ledger import Ledger
from tests.components import close_stores, ledger_of, source_crawler, stores_of
from tests.conftest import Project, Site, solr_docs

ROBOTS = b"User-agent: *\nDisallow: /private/\n"
DISALLOW_ALL = b"User-agent: *\nDisallow: /\n"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def text(body: bytes) -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "text/plain"}, body


def explain(project: Project, name: str, url: str, *options: str) -> str:
    result = project.scrapy("explain", name, url, *options)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout


def verdict(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("verdict:"))


def section(out: str) -> list[str]:
    """The report's lines after the verdict: the content regions of a URL the crawl fetches."""
    lines = out.rstrip().splitlines()
    return lines[lines.index(verdict(out)) + 1 :]


def db_path(project: Project) -> Path:
    return project.data_dir / "documents.sqlite3"


def dump(project: Project) -> list[str]:
    """Every row of every table of the project's SQLite document table, as SQL."""
    with sqlite3.connect(db_path(project)) as connection:
        return list(connection.iterdump())


# --- one rule chain for the crawl and explain --------------------------------------------------

SOURCE = """seeds = ["http://h.test/", "http://h.test:8080/"]
max_depth = 2
url_rewriter = "strip_session"
paths = { "*" = { exclude = ["/private/"] } }
patterns = { exclude_glob = ["*.zip"] }
[filters.scope]
exclude_urls = ["*/drafts/*"]
"""
URLS = [
    "http://h.test/a.html",
    "http://h.test/private/a.html",
    "http://h.test/drafts/a.html",
    "http://h.test/a.zip",
    "http://h.test/q?x=1",
    "http://h.test/q?sessionid=1",
    "http://h.test/print/a.html",
    "http://h.test:8080/a.html",
    "http://h.test:9090/a.html",
    "http://other.test/a.html",
    "ftp://h.test/a.html",
    "http://[::1/a",
    "http://h.test/" + "x" * 3000,
]


@pytest.mark.parametrize("depth", [0, 2, 3])
def test_admit_and_known_take_the_first_refusal_of_the_explained_chain(tmp_path: Path, depth: int) -> None:
    crawler = source_crawler(tmp_path, SOURCE)
    admission = admission_of(crawler)
    chain = admission.chain
    for url in URLS:
        every = chain.steps(url, depth, every=True)
        assert [step.allowed for step in every[:-1]] == [True] * (len(every) - 1), (url, every)
        decisive = chain.steps(url, depth)
        assert [step for step in decisive if not step.allowed] == ([] if every[-1].allowed else [decisive[-1]])
        if every[-1].allowed:
            assert decisive == [] and every[-1].name == "scope_filter"
        else:  # the same refusal, named by its check when every step is asked for
            assert decisive[-1].decision == every[-1].decision, url
        admitted = admission.admit(url, depth)
        assert admitted.decision == (ADMITTED if every[-1].allowed else every[-1].decision), url
        assert chain.decide(url, depth).decision == admitted.decision, url

        known = chain.steps(url, depth, rewrite="known", every=True)
        assert known[0].name == "url_rewriter"
        refusal = next((step for step in known if not step.allowed), None)
        expected = None if refusal is None or refusal.status is None else (int(refusal.status), refusal.rule)
        assert chain.refusal(url, depth) == expected, url
        assert admission.known(url, depth) == expected, url
    close_stores(crawler)


def test_steps_of_a_link_follow_the_rewriter(tmp_path: Path) -> None:
    crawler = source_crawler(tmp_path, SOURCE)
    chain = admission_of(crawler).chain
    steps = chain.steps("http://h.test/q?sessionid=1&x=2", 0, rewrite="link", every=True)
    assert steps[0].name == "url_rewriter" and steps[0].url == "http://h.test/q?x=2"
    assert steps[0].rule == "the URL rewriter makes it http://h.test/q?x=2"
    assert {step.url for step in steps[1:]} == {"http://h.test/q?x=2"}
    assert steps[-1].rule == "query string and index_dynamic_pages is false"
    dropped = chain.steps("http://h.test/print/a.html", 0, rewrite="link")
    assert [(step.name, step.status, step.rule) for step in dropped] == [
        ("url_rewriter", Status.EXCLUDED_REWRITER, "dropped by the URL rewriter")
    ]
    known = chain.refusal("http://h.test/q?sessionid=1&x=2", 0)
    assert known == (int(Status.EXCLUDED_REWRITER), "the URL rewriter makes it http://h.test/q?x=2")
    close_stores(crawler)


def test_the_crawl_records_exclusions_from_the_chain(tmp_path: Path) -> None:
    crawler = source_crawler(tmp_path, SOURCE)
    admission = admission_of(crawler)
    assert not admission.admit("http://h.test/drafts/a.html", 1).allowed
    assert not admission.admit("http://other.test/", 1).allowed
    assert admission.admit("http://h.test/a.html", 1).allowed
    assert crawler.stats.get_value("searchcrawl/excluded/excluded_filter") == 1
    assert crawler.stats.get_value("searchcrawl/excluded/excluded_domain") == 1
    assert [(url, status) for url, status, _depth, _rule in admission.excluded] == [
        ("http://h.test/drafts/a.html", Status.EXCLUDED_FILTER),
        ("http://other.test/", Status.EXCLUDED_DOMAIN),
    ]
    admission.flush()  # urls_excluded: the ledger writer records them
    row = ledger_of(crawler).table.get("unit", "http://other.test/")
    assert row is not None and row["status"] == Status.EXCLUDED_DOMAIN
    close_stores(crawler)


def test_a_read_only_crawl_writes_nothing(tmp_path: Path) -> None:
    crawler = source_crawler(tmp_path, SOURCE, SEARCHCRAWL_READ_ONLY=True, SCHEDULER="scrapy.core.scheduler.Scheduler")
    stores = stores_of(crawler)
    assert stores.read_only and crawler.get_extension(LedgerWriter) is None
    assert not (tmp_path / "cache").exists()  # no document cache opened
    with pytest.raises(RuntimeError, match="read-only"):
        _ = stores.cache
    admission = admission_of(crawler)
    assert not admission.admit("http://other.test/", 1).allowed
    admission.flush()  # nobody records it
    assert admission.excluded == []
    assert stores.documents.get("unit", "http://other.test/") is None
    close_stores(crawler)


def test_a_read_only_crawl_refuses_the_durable_frontier(tmp_path: Path) -> None:
    crawler = source_crawler(tmp_path, SOURCE, SEARCHCRAWL_READ_ONLY=True)
    with pytest.raises(RuntimeError, match="starts no run"):
        build_from_crawler(FrontierScheduler, crawler)  # as the engine builds its scheduler
    close_stores(crawler)


# --- robots.txt: fetched through the crawl's downloader -------------------------------------------


def robots_source(offline_project: Project, site: Site) -> str:
    name = unique("explain")
    offline_project.source(name, f'seeds = ["{site.url}"]\nmax_depth = 2\n')
    return name


@pytest.mark.parametrize("internal_host", ["127.0.0.1", "127.0.0.2"])  # another port; another address
def test_a_robots_txt_redirecting_to_an_internal_address_is_not_followed(
    offline_project: Project, serve, tmp_path: Path, internal_host: str
) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "internal").mkdir()
    site = serve(tmp_path / "site")
    internal = serve(tmp_path / "internal", host=internal_host)  # an internal service the source does not admit
    internal.responses["/robots.txt"] = text(ROBOTS)
    site.redirect("/robots.txt", 302, f"{internal.url}robots.txt")
    name = robots_source(offline_project, site)

    out = explain(offline_project, name, f"{site.url}private/a.html")
    assert internal.requests == []  # the guard held, as in the crawl (the old urllib fetch followed it)
    assert f"robots.txt:    {site.url}robots.txt is unreachable (RequestRefused: " in out, out
    assert "is an internal address" in out
    assert verdict(out).startswith("verdict:       FAILS FOR NOW (935 robots_unavailable)"), out
    assert site.paths() == ["/robots.txt"]


def test_a_robots_txt_redirecting_more_than_5_times_is_unavailable(offline_project: Project, serve, tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    site = serve(tmp_path / "site")
    hops = ["/robots.txt", *(f"/hop{number}.txt" for number in range(1, 7))]
    for source, target in zip(hops, hops[1:], strict=False):
        site.redirect(source, 301, f"{site.url}{target.lstrip('/')}")
    site.responses[hops[-1]] = text(DISALLOW_ALL)  # 6 redirects away: the crawl never reads it
    name = robots_source(offline_project, site)

    out = explain(offline_project, name, f"{site.url}a.html")
    assert f"robots.txt:    {site.url}robots.txt redirects more than 5 times" in out, out
    assert verdict(out).startswith("verdict:       FAILS FOR NOW (935 robots_unavailable)"), out
    assert site.paths() == hops[:-1]  # 6 fetches, 5 redirects followed, the 6th not

    site.requests.clear()
    site.redirect("/hop1.txt", 301, f"{site.url}hop6.txt")  # now 2 redirects: followed, and obeyed
    out = explain(offline_project, name, f"{site.url}a.html")
    assert f"robots.txt:    {site.url}hop6.txt: HTTP 200, {len(DISALLOW_ALL)} bytes (after 2 redirects)" in out, out
    assert (
        verdict(out)
        == f"verdict:       EXCLUDED (907 excluded_robots): robots.txt of {site.url[:-1]}: User-agent: *: line 2: Disallow: /"
    )


def test_explain_and_the_crawl_agree_on_an_unavailable_robots_txt(offline_project: Project, serve, tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "internal").mkdir()
    site = serve(tmp_path / "site")
    internal = serve(tmp_path / "internal", host="127.0.0.2")
    internal.responses["/robots.txt"] = text(b"User-agent: *\nAllow: /\n")
    site.redirect("/robots.txt", 302, f"{internal.url}robots.txt")
    site.responses["/index.html"] = 200, {"Content-Type": "text/html"}, b"<html><body><p>home</p></body></html>"
    name = unique("agree")
    offline_project.source(name, f'seeds = ["{site.url}index.html"]\n')

    out = explain(offline_project, name, f"{site.url}index.html")
    crawl = offline_project.scrapy("crawl", name)
    assert "Traceback" not in crawl.stderr, crawl.stderr[-3000:]
    row = offline_project.table().get(name, f"{site.url}index.html")
    assert row is not None and row["status"] == Status.ROBOTS_UNAVAILABLE, row
    assert verdict(out).startswith(f"verdict:       FAILS FOR NOW ({int(Status.ROBOTS_UNAVAILABLE)} robots_unavailable)")
    assert internal.requests == []


# --- read-only: no migration, nothing written ---------------------------------------------------


def test_explain_refuses_an_outdated_schema_and_leaves_it_as_it_is(offline_project: Project, serve, tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    site = serve(tmp_path / "site")
    name = robots_source(offline_project, site)
    offline_project.data_dir.mkdir(parents=True)
    engine = create_db_engine(f"sqlite:///{db_path(offline_project)}")
    upgrade_schema(engine, "0009")  # a document table of an older searchcrawl
    before = dump(offline_project)

    result = offline_project.scrapy("explain", name, f"{site.url}a.html")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "is at revision 0009, this searchcrawl needs" in result.stderr, result.stderr
    assert "a crawl of any source brings it up to date" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert schema_revisions(engine)[0] == "0009"  # not migrated
    assert dump(offline_project) == before
    assert site.requests == []  # refused before anything was fetched
    engine.dispose()


def test_explain_writes_nothing(offline_project: Project, serve, tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "internal").mkdir()
    site = serve(tmp_path / "site")
    other = serve(tmp_path / "internal", host="127.0.0.2")
    site.responses["/robots.txt"] = text(ROBOTS)
    other.redirect("/robots.txt", 302, f"{site.url}robots.txt")
    name = unique("readonly")
    offline_project.source(
        name,
        f'seeds = ["{site.url}"]\nmax_depth = 1\n'
        f'domains = {{ include = ["127.0.0.1", "127.0.0.2"] }}\npaths = {{ "*" = {{ exclude = ["/internal/"] }} }}\n',
    )
    offline_project.data_dir.mkdir(parents=True)
    table = DocumentTable(Database(f"sqlite:///{db_path(offline_project)}"))  # a crawled source's table
    Ledger(table, name).record(f"{site.url}failed.html", Outcome(Event.FAILED, 503, "answered 503", depth=1))
    Ledger(table, name).record_excluded([(f"{site.url}internal/x.html", int(Status.EXCLUDED_PATH), 1, "path rule")])
    table.database.close()
    before = dump(offline_project)

    outs = [
        explain(offline_project, name, f"{site.url}failed.html"),  # crawled
        explain(offline_project, name, f"{site.url}private/x.html"),  # robots.txt: a crawl records 907
        explain(offline_project, name, f"{site.url}internal/x.html", "--depth", "1"),  # the boundary: 903
        explain(offline_project, name, f"{site.url}a.html", "--depth", "2"),  # 905, not met before
        explain(offline_project, name, f"{other.url}x.html"),  # robots.txt redirects to another site
    ]
    assert "depth:         1 (as recorded)" in outs[0] and verdict(outs[0]).startswith("verdict:       CRAWLED")
    assert "document table: state failed, status 503" in outs[0]
    assert verdict(outs[1]).startswith("verdict:       EXCLUDED (907 excluded_robots)")
    assert verdict(outs[2]).startswith("verdict:       EXCLUDED (903 excluded_path)")
    assert verdict(outs[3]).startswith("verdict:       EXCLUDED (905 excluded_depth)")
    assert f"robots.txt:    {site.url}robots.txt: HTTP 200, {len(ROBOTS)} bytes (after 1 redirect)" in outs[4], outs[4]
    assert dump(offline_project) == before  # no row, no exclusion, no run
    assert not (offline_project.data_dir / "cache").exists()  # no document cache opened
    with sqlite3.connect(db_path(offline_project)) as connection:
        assert connection.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_explain_asks_the_internal_address_guard(offline_project: Project, tmp_path: Path) -> None:
    """A link inside a file source's seed folder to a file outside it: the boundary sees a path
    below the folder, the guard (as in the crawl) the real path outside it."""
    docs, secret = tmp_path / "docs", tmp_path / "secret"
    docs.mkdir()
    secret.mkdir()
    (docs / "index.html").write_text("<html><body>docs</body></html>")
    (secret / "passwd.html").write_text("<html><body>secret</body></html>")
    (docs / "escape.html").symlink_to(secret / "passwd.html")
    name = unique("guard")
    offline_project.source(name, f'seeds = ["file://{docs}/index.html"]\n')

    out = explain(offline_project, name, f"file://{docs}/escape.html")
    assert f'  ok  file path below seed folder "{docs}/"' in out, out
    assert f"address guard: NO  file://{docs}/escape.html is (or links to) a file outside the seeds' folders" in out
    assert verdict(out) == (
        f"verdict:       EXCLUDED (903 excluded_path): file://{docs}/escape.html is (or links to) a file outside the seeds' folders"
    )
    out = explain(offline_project, name, f"file://{docs}/index.html")
    assert "robots.txt:    not applicable" in out
    assert verdict(out).startswith("verdict:       CRAWLED")


def test_a_seed_is_explained_as_the_crawl_requests_it_not_rewritten(offline_project: Project, serve, tmp_path: Path) -> None:
    """The spider requests its seeds as written, at depth 0 (the rewriter is for links): explain
    says so, where it judged every URL as a link (and found this seed dropped by the rewriter)."""
    (tmp_path / "site" / "print").mkdir(parents=True)
    site = serve(tmp_path / "site")
    name = unique("seed")
    offline_project.source(name, f'seeds = ["{site.url}print/a.html"]\nurl_rewriter = "strip_session"\n')

    out = explain(offline_project, name, f"{site.url}print/a.html")
    assert "rewriter:      strip_session: not applied to a seed" in out, out
    assert "depth:         0 (a seed)" in out, out
    assert "EXCLUDED" not in out, out
    link = explain(offline_project, name, f"{site.url}print/b.html")  # the same rule for a link
    assert verdict(link) == "verdict:       EXCLUDED (909 excluded_rewriter): dropped by the URL rewriter", link


# --- what the crawl fetched through a temporary redirect; what --no-robots leaves open ----------


def test_explain_says_crawled_for_a_temporary_redirects_target_outside_the_boundary(
    project: Project, serve, tmp_path: Path, solr
) -> None:
    """Issue 53: explain said EXCLUDED (903) for the 302/307 targets outside the path rules that
    the crawl had fetched and indexed; with --no-robots it still concluded "allowed by robots.txt"."""
    root = tmp_path / "site"
    (root / "other").mkdir(parents=True)
    site = serve(root)
    (root / "index.html").write_text('<html><body><p>home</p><a href="/go302">a</a> <a href="/go307">b</a></body></html>')
    for name in ("a", "b"):
        (root / "other" / f"{name}.html").write_text(f"<html><body><p>landing {name}</p></body></html>")
    site.redirect("/go302", 302, "/other/a.html")
    site.redirect("/go307", 307, "/other/b.html")
    name = unique("targets")
    project.source(name, f'seeds = ["{site.url}index.html"]\npaths = {{ "127.0.0.1" = {{ exclude = ["/other/"] }} }}\n')
    crawl = project.scrapy("crawl", name)
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    indexed = {doc["url"] for doc in solr_docs(solr, name)}
    assert {f"{site.url}other/a.html", f"{site.url}other/b.html"} <= indexed, indexed

    for path, origin, status in [("other/a.html", "go302", 302), ("other/b.html", "go307", 307)]:
        out = explain(project, name, site.url + path)
        assert '  NO  path exclude "/other/" on 127.0.0.1' in out, out
        assert (
            f"redirect:      ok  {site.url}{origin} answers {status} to {site.url}{path} (outside the boundary: "
            f'path exclude "/other/" on 127.0.0.1), as the document table records'
        ) in out, out
        assert verdict(out) == (
            f"verdict:       CRAWLED: outside the boundary, as the target of {site.url}{origin}'s redirect; allowed by "
            "robots.txt (indexed if it answers 200 with indexable content and no noindex)"
        ), out
        # fetched as the crawl fetches it, let out of the boundary by that redirect: its regions
        page = f"<html><body><p>landing {path[6]}</p></body></html>"
        assert section(out)[-4:] == [
            f"page:          HTTP 200, text/html, {len(page)} bytes",
            "soft error:    none (the site has no soft 404s, or they were not probed)",  # no probe outside the boundary
            "  (no region of this page is kept or dropped)",
            f"text:          {len('landing a')} of {len('landing a')} characters kept",
        ], out
    never = explain(project, name, f"{site.url}other/c.html")  # no redirect leads there
    assert "redirect:" not in never and verdict(never).startswith("verdict:       EXCLUDED (903 excluded_path)"), never

    out = explain(project, name, f"{site.url}index.html", "--no-robots")
    assert "robots.txt:    not fetched (--no-robots)" in out, out
    assert verdict(out) == (
        "verdict:       CRAWLED: inside the boundary; robots.txt not checked (--no-robots): it may still exclude it "
        "(indexed if it answers 200 with indexable content and no noindex)"
    ), out
    assert "page:          not fetched (--no-robots: the crawl's downloader would fetch robots.txt first)" in out, out


# --- content regions: the page, fetched through the crawl's downloader ----------------------------

REGIONS = """seeds = ["{url}"]
[regions]
drop = ["div.share", "#gone"]

[[regions.rules]]
patterns = ["/news/"]
keep = ["article"]
"""
TIDES = """<html><head><title>Tides</title></head><body>
<header><a href="/">Home</a></header>
<nav><a href="/berths.html">Berths</a> Ferry times</nav>
<main><article><h1>Tides</h1><p>High water at noon.</p><div class="share">Share this page</div></article>
<div data-searchcrawl-exclude>Cookie notice</div></main>
<footer>Copyright the harbour board</footer>
</body></html>"""


def regions_site(offline_project: Project, serve, tmp_path: Path, pages: dict[str, str]) -> tuple[Site, str]:
    root = tmp_path / "site"
    (root / "news").mkdir(parents=True)
    for path, page in pages.items():
        (root / path).write_text(page, encoding="utf-8")
    site = serve(root)
    name = unique("regions")
    offline_project.source(name, REGIONS.format(url=site.url))
    return site, name


def test_explain_shows_what_the_content_regions_keep_and_drop_of_the_page(
    offline_project: Project, serve, tmp_path: Path
) -> None:
    site, name = regions_site(offline_project, serve, tmp_path, {"news/tides.html": TIDES})
    (tmp_path / "site" / "robots.txt").write_text(f"User-agent: *\nAllow: /\nSitemap: {site.url}sitemap.xml\n")
    offline_project.data_dir.mkdir(parents=True)
    DocumentTable(Database(f"sqlite:///{db_path(offline_project)}")).database.close()  # a crawled source's table
    before = dump(offline_project)

    out = explain(offline_project, name, f"{site.url}news/tides.html")
    assert verdict(out).startswith("verdict:       CRAWLED: inside the boundary; allowed by robots.txt"), out
    whole = visible_text(html.fromstring(TIDES).find("body"))  # the crawl's reading of the whole page
    assert section(out) == [
        "",
        'regions:       [regions]: landmarks dropped; drop "div.share", "#gone"',
        "  rule         [[regions.rules]] 1 (pattern '/news/') adds keep \"article\"",
        f"page:          HTTP 200, text/html, {len(TIDES)} bytes",
        "soft error:    none (the site has no soft 404s, or they were not probed)",  # the probe answered 404
        '  drop  <header> by landmark <header>: "Home"',
        '  drop  <nav> by landmark <nav>: "Berths Ferry times"',
        '  keep  <article> by selector "article": "Tides High water at noon."',
        '  drop  <div class="share"> by selector "div.share": "Share this page"',
        '  drop  <div> by data-searchcrawl-exclude: "Cookie notice"',
        '  drop  <footer> by landmark <footer>: "Copyright the harbour board"',
        '  none  drop selector "#gone" matches nothing on this page',
        f"text:          {len('Tides High water at noon.')} of {len(whole)} characters kept",
    ], out
    # robots.txt once, the not-found probe beside the page (as the crawl would), then the page: no sitemap
    assert [re.sub("[0-9a-f]{16}", "*", path) for path in site.paths()] == [
        "/robots.txt",
        "/news/searchcrawl-not-found-*.html",
        "/news/tides.html",
    ]
    assert dump(offline_project) == before  # read-only still: no row for the page
    assert not (offline_project.data_dir / "cache").exists()

    out = explain(offline_project, name, f"{site.url}other.html")  # no rule applies; the page is not there
    assert "  rule         no [[regions.rules]] pattern matches this URL" in section(out), out
    assert section(out)[-1].startswith("page:          HTTP 404, text/html, "), out
    assert section(out)[-1].endswith(" bytes: no document, so no content regions"), out


def test_a_pages_hostile_text_is_printed_harmlessly(offline_project: Project, serve, tmp_path: Path) -> None:
    long = " ".join(["tide"] * 40)
    hostile = f"<html><body><nav>\x1b]0;pwned\x07menu\x1b[2J</nav><article><p>\x1b[31mred\u202e{long}</p></article></body></html>"
    site, name = regions_site(offline_project, serve, tmp_path, {"news/evil.html": hostile})

    out = explain(offline_project, name, f"{site.url}news/evil.html")
    assert not any(character in out for character in "\x1b\x07\u202e\r"), out  # nothing the terminal obeys
    lines = section(out)
    assert '  drop  <nav> by landmark <nav>: "\\x1b]0;pwned\\x07menu\\x1b[2J"' in lines, out
    kept = next(line for line in lines if line.startswith("  keep  <article>"))
    shown = f"\x1b[31mred\u202e{long}"[:77]  # 80 characters at most, the excerpt cut with "..."
    assert (
        kept
        == '  keep  <article> by selector "article": "' + shown.replace("\x1b", "\\x1b").replace("\u202e", "\\u202e") + '..."'
    )


def test_explain_no_fetch_shows_the_regions_rules_only_and_other_pages_say_why_they_have_none(
    offline_project: Project, serve, tmp_path: Path
) -> None:
    (tmp_path / "internal").mkdir()
    internal = serve(tmp_path / "internal", host="127.0.0.2")  # an internal service the source does not admit
    site, name = regions_site(offline_project, serve, tmp_path, {"news/tides.html": TIDES})
    site.responses["/notes.txt"] = text(b"plain notes")
    site.redirect("/moved.html", 302, f"{internal.url}secret.html")

    out = explain(offline_project, name, f"{site.url}news/tides.html", "--no-fetch")
    assert verdict(out).startswith("verdict:       CRAWLED"), out
    assert section(out) == [
        "",
        'regions:       [regions]: landmarks dropped; drop "div.share", "#gone"',
        "  rule         [[regions.rules]] 1 (pattern '/news/') adds keep \"article\"",
        "page:          not fetched (--no-fetch)",
    ], out
    assert site.paths() == ["/robots.txt"]

    out = explain(offline_project, name, f"{site.url}notes.txt")
    assert (
        section(out)[-1]
        == f"page:          HTTP 200, text/plain, {len(b'plain notes')} bytes: not an HTML page, so no content regions"
    )
    out = explain(offline_project, name, f"{site.url}moved.html")  # the redirect's target meets the address guard
    refused = f"page:          not fetched: {int(Status.INTERNAL_ADDRESS)} internal_address: {internal.url[7:-1]} is an internal address"
    assert section(out)[-1].startswith(refused), out
    assert internal.requests == []


def test_explain_says_when_a_page_is_a_soft_error_as_the_crawl_decides(offline_project: Project, serve, tmp_path: Path) -> None:
    login = "<html><head><title>Sign in</title></head><body><form><input name=u><input type=password name=p></form></body></html>"
    site, name = regions_site(offline_project, serve, tmp_path, {"news/login.html": login, "news/tides.html": TIDES})

    def soft_404(path: str) -> tuple[int, dict[str, str], bytes]:
        body = f"<html><body><main><p>We looked everywhere for {path} but found nothing, sorry.</p></main></body></html>"
        return 200, {"Content-Type": "text/html"}, body.encode()

    site.missing = soft_404
    out = section(explain(offline_project, name, f"{site.url}news/login.html"))
    assert out[-1].startswith("soft error:    928 soft_error: a login page (a default marker: title 'Sign in', 0 characters"), out
    # the source signs in nowhere: the page went private, and counts toward max_failures
    assert out[-1].endswith("not indexed, its links not followed, the indexed version kept (counted toward max_failures)")

    out = section(explain(offline_project, name, f"{site.url}news/gone.html"))  # not there: the site's soft 404
    assert out[-1].startswith("soft error:    929 soft_not_found: a not-found page (as like the site's answer to "), out
    assert out[-1].endswith("(counted toward max_failures)"), out

    out = section(explain(offline_project, name, f"{site.url}news/tides.html"))
    soft = next(line for line in out if line.startswith("soft error:"))
    assert soft.startswith(f"soft error:    none (not like the site's answer to {site.url}news/searchcrawl-not-found-"), out
