"""Scope features end to end: rewriter, display URLs, robots meta, changed rules, `scrapy explain`."""

from __future__ import annotations

import uuid

from lxml import html

from searchcrawl.content.extract import meta_tags
from searchcrawl.rules.display_urls import DisplayUrlRule, DisplayUrls
from searchcrawl.rules.robots_meta import robots_directives
from searchcrawl.rules.status_codes import Status
from tests.conftest import not_found_probe, solr_docs


def page(text: str, links: list[str] = (), head: str = "") -> str:
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return f"<html><head><title>{text}</title>{head}</head><body><p>{text} text</p>{anchors}</body></html>"


def test_robots_directives() -> None:
    meta = meta_tags(html.document_fromstring('<html><head><meta name="ROBOTS" content="NoIndex, follow"></head></html>'))
    assert robots_directives(meta, [], "searchcrawl") == {"noindex"}
    assert robots_directives({"searchcrawl": "none"}, [], "searchcrawl") == {"noindex", "nofollow"}
    assert robots_directives({"otherbot": "noindex"}, [], "searchcrawl") == set()
    assert robots_directives({}, ["nofollow"], "searchcrawl") == {"nofollow"}
    assert robots_directives({}, ["otherbot: noindex", "searchcrawl: nofollow"], "searchcrawl") == {"nofollow"}
    assert robots_directives({}, ["unavailable_after: 25 Jun 2030 15:00:00 PST"], "searchcrawl") == set()


def test_display_url_rules() -> None:
    rules = DisplayUrls(
        [
            DisplayUrlRule(prefix="http://mirror.internal/", replace="https://docs.example.com/"),
            DisplayUrlRule(regex=r"^http://([a-z]+)\.internal/", replace=r"https://\1.example.com/"),
        ]
    )
    assert rules.display_url("http://mirror.internal/a?b=1") == "https://docs.example.com/a?b=1"
    assert rules.display_url("http://wiki.internal/x") == "https://wiki.example.com/x"
    assert rules.display_url("http://other/x") == "http://other/x"


def test_rewriter_display_urls_and_robots_meta(project, serve, tmp_path, solr) -> None:
    root = tmp_path / "site"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    (root / "print").mkdir()
    site = serve(root)
    (root / "index.html").write_text(
        page(
            "home",
            [
                "a/page.html?sessionid=123",
                "print/page.html",
                "a/same.html",
                "b/same.html",
                "noindex.html",
                "nofollow.html",
                "header-noindex.html",
            ],
        )
    )
    (root / "a" / "page.html").write_text(page("a page"))
    (root / "print" / "page.html").write_text(page("print"))
    (root / "a" / "same.html").write_text(page("same a"))
    (root / "b" / "same.html").write_text(page("same b"))
    (root / "noindex.html").write_text(
        page("noindex", ["linked-from-noindex.html"], head='<meta name="robots" content="noindex">')
    )
    (root / "linked-from-noindex.html").write_text(page("reached through a noindex page"))
    (root / "nofollow.html").write_text(page("nofollow", ["hidden.html"], head='<meta name="searchcrawl" content="nofollow">'))
    (root / "hidden.html").write_text(page("hidden"))
    site.responses["/header-noindex.html"] = (
        200,
        {"Content-Type": "text/html", "X-Robots-Tag": "noindex"},
        page("header noindex").encode(),
    )
    name = f"scope-{uuid.uuid4().hex[:8]}"
    project.source(
        name,
        f"""seeds = ["{site.url}index.html"]
url_rewriter = "strip_session"

[[display_urls]]
regex = '^http://127\\.0\\.0\\.1:{site.port}/[ab]/'
replace = 'https://docs.example.com/'

[[display_urls]]
prefix = "{site.url}"
replace = "https://docs.example.com/"
""",
    )
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    docs = {doc["url"]: doc for doc in solr_docs(solr, name)}
    table = project.table()
    assert f"{site.url}a/page.html" in docs and f"{site.url}a/page.html?sessionid=123" not in docs
    assert table.get(name, f"{site.url}print/page.html")["status"] == Status.EXCLUDED_REWRITER
    assert "/print/page.html" not in site.paths()
    # two access URLs, one display URL: indexed once, the conflict recorded
    same = [u for u in docs if u.endswith("same.html")]
    assert len(same) == 1 and docs[same[0]]["display_url"] == "https://docs.example.com/same.html"
    loser = f"{site.url}b/same.html" if same[0].endswith("a/same.html") else f"{site.url}a/same.html"
    row = table.get(name, loser)
    assert row["status"] == Status.DISPLAY_URL_CONFLICT and same[0] in row["reason"]
    assert docs[f"{site.url}index.html"]["display_url"] == "https://docs.example.com/index.html"
    # robots meta and X-Robots-Tag
    assert f"{site.url}noindex.html" not in docs and f"{site.url}header-noindex.html" not in docs
    assert table.get(name, f"{site.url}noindex.html")["status"] == Status.NOINDEX
    assert f"{site.url}linked-from-noindex.html" in docs  # noindex still follows links
    assert f"{site.url}nofollow.html" in docs and "/hidden.html" not in site.paths()


def test_changed_rules_remove_documents_from_the_index(project, serve, tmp_path, solr) -> None:
    root = tmp_path / "site"
    (root / "keep").mkdir(parents=True)
    (root / "drop").mkdir()
    site = serve(root)
    (root / "index.html").write_text(page("home", ["keep/1.html", "drop/1.html", "drop/2.html"]))
    for path in ["keep/1.html", "drop/1.html", "drop/2.html"]:
        (root / path).write_text(page(path))
    name = f"rules-{uuid.uuid4().hex[:8]}"
    seeds = f'seeds = ["{site.url}index.html"]\nmax_delete_share = 0.9\n'  # half of this small site goes
    project.source(name, seeds)
    assert project.scrapy("crawl", name).returncode == 0
    assert len(solr_docs(solr, name)) == 4
    project.source(name, seeds + 'paths = { "*" = { exclude = ["/drop/"] } }\n')
    result = project.scrapy("crawl", name)
    assert result.returncode == 0
    assert "2 known URLs of" in result.stderr and "outside the source's rules now" in result.stderr
    assert {doc["url"] for doc in solr_docs(solr, name)} == {f"{site.url}index.html", f"{site.url}keep/1.html"}
    row = project.table().get(name, f"{site.url}drop/1.html")
    assert (row["state"], row["status"]) == ("removed", Status.EXCLUDED_PATH)
    assert 'path exclude "/drop/"' in row["reason"]


def test_explain(project, serve, tmp_path) -> None:
    root = tmp_path / "site"
    root.mkdir()
    site = serve(root)
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n\nUser-agent: searchcrawl\nDisallow: /secret/\n")
    project.source(
        "explained",
        f"""seeds = ["{site.url}"]
max_depth = 2
url_rewriter = "strip_session"
paths = {{ "127.0.0.1" = {{ exclude = ["/internal/"] }} }}
display_urls = [{{ prefix = "{site.url}", replace = "https://www.example.com/" }}]
""",
    )

    def explain(url: str, *options: str) -> str:
        result = project.scrapy("explain", "explained", url, *options)
        assert result.returncode == 0, result.stderr
        return result.stdout

    out = explain(f"{site.url}docs/a.html?sessionid=9")
    assert f"rewriter:      strip_session -> {site.url}docs/a.html" in out
    assert "display URL:   https://www.example.com/docs/a.html" in out
    assert "agent token  searchcrawl; group: User-agent: searchcrawl" in out
    assert "verdict:       CRAWLED" in out
    assert "page:          HTTP 404" in out  # the page, fetched for its content regions: not there
    out = explain(f"{site.url}secret/x.html")
    assert (
        f"verdict:       EXCLUDED (907 excluded_robots): robots.txt of {site.url[:-1]}: User-agent: searchcrawl: line 5: Disallow: /secret/"
        in out
    ), out
    out = explain(f"{site.url}private/x.html")  # our own group replaces '*': allowed
    assert "verdict:       CRAWLED" in out
    out = explain(f"{site.url}internal/x.html")
    assert 'EXCLUDED (903 excluded_path): path exclude "/internal/" on 127.0.0.1' in out
    out = explain("http://other.example.org/")
    assert "EXCLUDED (901 excluded_domain)" in out
    out = explain(f"{site.url}a.html", "--depth", "3")
    assert "EXCLUDED (905 excluded_depth): depth 3 > max_depth 2" in out
    out = explain(f"{site.url}print/x.html")
    assert "EXCLUDED (909 excluded_rewriter)" in out
    # explain fetches robots.txt, and the pages it says are crawled (their content regions) only
    # (and, as a crawl does, the not-found probe beside each page it fetches)
    pages = {path for path in site.paths() if not not_found_probe(path)}
    assert pages == {"/robots.txt", "/docs/a.html", "/private/x.html"}, site.paths()


# Issue 53: a spelling nginx, a servlet container or IIS maps onto the excluded folder /enc/secret/
# (or, climbing out of the included /enc/, onto /private/)
SPELLINGS = [
    "/enc//secret/k.html",
    "/enc/secret%2Fl.html",
    "/enc/..%2Fprivate/h.html",
    "/enc/secret;x/n.html",
    "/enc/SECRET/b.html",
    "/enc/%u0073ecret/u.html",  # %uNNNN: an "s" to IIS and Jetty
    "/enc/secret./d.html",  # a trailing dot: the folder to Windows
]


def test_path_rules_exclude_every_spelling_a_server_maps_onto_an_excluded_folder(project, serve, tmp_path, solr) -> None:
    root = tmp_path / "site"
    (root / "enc").mkdir(parents=True)
    site = serve(root)
    (root / "enc" / "index.html").write_text(page("home", [*SPELLINGS, "/enc/public.html"]))
    (root / "enc" / "public.html").write_text(page("public"))
    for path in SPELLINGS:  # the server serves the secret folder for each spelling, as those servers do
        site.responses[path] = (200, {"Content-Type": "text/html"}, page(f"secret {path}").encode())
    name = f"spellings-{uuid.uuid4().hex[:8]}"
    project.source(
        name,
        f"""seeds = ["{site.url}enc/index.html"]

[paths."127.0.0.1"]
include = ["/enc/"]
exclude = ["/enc/secret/"]
case_insensitive = true
""",
    )
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    table = project.table()
    for path in SPELLINGS:
        row = table.get(name, site.url + path.lstrip("/"))
        assert row is not None and row["status"] == Status.EXCLUDED_PATH, (path, row)
    assert not set(site.paths()) & set(SPELLINGS), site.paths()  # none was requested
    assert {doc["url"] for doc in solr_docs(solr, name)} == {f"{site.url}enc/index.html", f"{site.url}enc/public.html"}
    for path, rule in [
        (
            "/enc/secret%2Fl.html",
            'path exclude "/enc/secret/" on 127.0.0.1 (path /enc/secret%2Fl.html read as /enc/secret/l.html)',
        ),
        (
            "/enc/..%2Fprivate/h.html",
            "path /enc/..%2Fprivate/h.html, read as /private/h.html, is not below a path include prefix",
        ),
    ]:
        out = project.scrapy("explain", name, site.url + path.lstrip("/")).stdout
        assert f"verdict:       EXCLUDED (903 excluded_path): {rule}" in out, out
