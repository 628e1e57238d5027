"""Soft errors through real crawls into the real Solr (issue 57): a site that starts answering some
pages with its login page, a redirect to its single sign-on, a bot challenge or a maintenance
page, crawl after crawl, and then recovers; a site with soft 404s, learned by its answer to a URL
that cannot exist. The index keeps the good versions throughout, no soft error's link is
followed, and each is counted in the delta report. Where the source signs in to the site, a login
page is its lost session and never counts; where it does not, the page went private and leaves
after max_failures crawls."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from tests.conftest import Project, Site, solr_docs

LOGIN = (
    b'<html><head><title>Sign in</title></head><body><form method="post" action="/sso/login">'
    b'<input name="user"><input type="password" name="pw"></form><a href="/trap/forgot.html">Forgot?</a></body></html>'
)
CHALLENGE = (
    b"<html><head><title>Just a moment...</title></head><body>Checking your browser."
    b' <a href="/trap/challenge.html">more</a></body></html>'
)
MAINTENANCE = b"<html><head><title>Down for maintenance</title></head><body>Back soon.</body></html>"
HTML = {"Content-Type": "text/html"}


def write_pages(root: Path, texts: dict[str, str]) -> None:
    links = "".join(f'<a href="/{name}.html">{name}</a> ' for name in sorted(texts))
    (root / "index.html").write_text(f"<html><head><title>Index</title></head><body><p>The index.</p>{links}</body></html>")
    for name, text in texts.items():
        (root / f"{name}.html").write_text(f"<html><head><title>{name}</title></head><body><p>{text}</p></body></html>")


def crawl(project: Project, name: str) -> dict[str, list[str]]:
    result = project.scrapy("crawl", name, INTRANET_SECRET="not-a-real-password")
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(project.scrapy("report", name, "--json").stdout)["urls"]


def names(urls: list[str]) -> list[str]:
    return sorted(url.rsplit("/", 1)[1] for url in urls)


def contents(solr, name: str) -> dict[str, str]:
    return {doc["url"].rsplit("/", 1)[1]: doc.get("content", "") for doc in solr_docs(solr, name)}


def known(project: Project, name: str, site: Site, *paths: str) -> list[str]:
    table = project.table()
    try:
        return [path for path in paths if table.get(name, site.url + path.lstrip("/")) is not None]
    finally:
        table.database.close()


def test_login_walls_and_challenges_keep_the_good_versions_until_the_site_recovers(
    project: Project, serve, tmp_path: Path, solr
) -> None:
    root = tmp_path / "site"
    root.mkdir()
    texts = {"a": "Alpha policy.", "b": "Beta rota.", "c": "Gamma minutes.", "d": "Delta notes.", "e": "Epsilon plan."}
    write_pages(root, texts)
    site = serve(root)
    name = f"soft-{uuid.uuid4().hex[:8]}"
    signed_in = f'[[auth]]\norigins = ["{site.url.rstrip("/")}"]\ntype = "basic"\nuser = "crawler"\nsecret = "INTRANET_SECRET"\n'
    signed_in += "[access]\npublic = true\n"  # what the account reads, everyone may
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 2\n{signed_in}')
    report = crawl(project, name)
    assert len(report["new"]) == 6, report
    good = contents(solr, name)
    assert good["a.html"] == "Alpha policy."

    site.responses["/a.html"] = (200, HTML, LOGIN)  # a lost session: the login page in its place
    site.redirect("/b.html", 302, f"{site.url}sso/login?next=/b.html")  # single sign-on
    # a bot challenge (a 403 to the source's credentials would be their refusal, 936: the next test)
    site.responses["/c.html"] = (200, {**HTML, "cf-mitigated": "challenge"}, CHALLENGE)
    site.responses["/d.html"] = (200, HTML, MAINTENANCE)
    walled = ["a.html", "b.html", "c.html", "d.html"]
    # more crawls than max_failures (3): a login wall in a session is not counted, nothing leaves
    for _crawl in range(4):
        report = crawl(project, name)
        assert names(report["failed"]) == walled, report
        assert not report["deleted"] and not report["changed"] and not report["new"], report
        assert contents(solr, name) == good
        table = project.table()
        try:
            rows = {path: table.get(name, site.url + path) for path in walled}
        finally:
            table.database.close()
        assert {path: row["status"] for path, row in rows.items() if row} == dict.fromkeys(walled, 928)
        assert "a login page" in rows["a.html"]["reason"] and "sso/login" in rows["b.html"]["reason"]
        assert "a bot challenge" in rows["c.html"]["reason"] and "a maintenance page" in rows["d.html"]["reason"]
        assert known(project, name, site, "/trap/forgot.html", "/trap/challenge.html", "/sso/login?next=/b.html") == []

    site.responses.clear()  # the site recovers; one page changed meanwhile
    (root / "a.html").write_text("<html><head><title>a</title></head><body><p>Alpha policy, revised.</p></body></html>")
    report = crawl(project, name)
    assert names(report["changed"]) == ["a.html"], report
    assert not report["failed"] and not report["deleted"], report
    assert contents(solr, name) == {**good, "a.html": "Alpha policy, revised."}


def soft_404(path: str) -> tuple[int, dict[str, str], bytes]:
    """A site's answer to any path it does not have: a page, status 200, echoing the path."""
    body = (
        f"<html><head><title>Harbour intranet</title></head><body><nav>Home Ferries Tides</nav>"
        f"<main><h1>Oops</h1><p>We looked everywhere for {path} but it is not here. Try the search"
        f' or go back to the start page.</p><a href="/farm{len(path)}/x.html">related</a></main></body></html>'
    )
    return 200, HTML, body.encode()


def test_a_site_with_soft_404s_is_learned_and_a_vanished_page_leaves_after_max_failures(
    project: Project, serve, tmp_path: Path, solr
) -> None:
    root = tmp_path / "site"
    root.mkdir()
    texts = {"tides": "High water at noon.", "berths": "Berth four is closed.", "ferries": "The ferry leaves at nine."}
    write_pages(root, texts)
    site = serve(root)
    site.missing = soft_404
    name = f"soft404-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 3\n')
    (root / "index.html").write_text((root / "index.html").read_text().replace("</body>", '<a href="/old.html">old</a></body>'))
    report = crawl(project, name)
    assert names(report["new"]) == ["berths.html", "ferries.html", "index.html", "tides.html"], report
    probes = [path for path in site.paths() if "searchcrawl-not-found-" in path]
    assert len(probes) == 1 and probes[0].endswith(".html"), probes
    table = project.table()
    try:
        old = table.get(name, site.url + "old.html")
    finally:
        table.database.close()
    assert old is not None and old["status"] == 929 and "searchcrawl-not-found-" in old["reason"]
    assert known(project, name, site, f"/farm{len('/old.html')}/x.html") == []  # the farm's links: not followed
    assert known(project, name, site, probes[0]) == []  # the probe has no row

    (root / "berths.html").unlink()  # the page goes: the site answers with its soft 404
    for crawl_number in (1, 2):
        report = crawl(project, name)
        assert "berths.html" in names(report["failed"]) and not report["deleted"], report
        assert contents(solr, name)["berths.html"] == "Berth four is closed.", crawl_number
    report = crawl(project, name)  # the third failing crawl: max_failures, it has gone
    assert names(report["deleted"]) == ["berths.html"], report
    assert "berths.html" not in contents(solr, name)
    assert len([path for path in site.paths() if "searchcrawl-not-found-" in path]) == 4  # one per crawl


def test_a_site_that_answers_unknown_urls_with_its_home_page_is_crawled_whole(
    project: Project, serve, tmp_path: Path, solr
) -> None:
    """A single-page app's fallback, or a "404 to home page" plugin: the site answers any unknown
    URL with its home page, a copy or a redirect to it. Its probe's answer was the home page, so
    the seed was a soft 404 (929, counted) and its links were never followed: nothing of the
    site was indexed, and the home page left after max_failures crawls."""
    root = tmp_path / "site"
    root.mkdir()
    write_pages(root, {"a": "Alpha policy.", "b": "Beta rota."})
    site = serve(root)
    home = (root / "index.html").read_bytes()
    for name, answer in (
        (f"home-copy-{uuid.uuid4().hex[:8]}", (200, HTML, home)),
        (f"home-redirect-{uuid.uuid4().hex[:8]}", (302, {"Location": "/index.html"}, b"")),
    ):
        site.missing = lambda _path, answer=answer: answer
        project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 2\n')
        report = crawl(project, name)
        assert names(report["new"]) == ["a.html", "b.html", "index.html"] and not report["failed"], (name, report)
        assert sorted(contents(solr, name)) == ["a.html", "b.html", "index.html"]


def test_a_page_behind_a_login_where_the_source_has_no_session_leaves_after_max_failures(
    project: Project, serve, tmp_path: Path, solr
) -> None:
    """Fail closed: the page went private, and who may read it now is unknown. A challenge still
    says nothing of the page: its copy stays."""
    root = tmp_path / "site"
    root.mkdir()
    texts = {"a": "Alpha policy.", "b": "Beta rota.", "c": "Gamma minutes."}
    texts.update({f"p{number}": f"Page {number} of the handbook." for number in range(8)})  # the deletion guard: 2 of 12
    write_pages(root, texts)
    site = serve(root)
    name = f"private-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 2\n')
    crawl(project, name)
    site.responses["/a.html"] = (200, HTML, LOGIN)
    site.redirect("/b.html", 302, f"{site.url}sso/login?next=/b.html")
    site.responses["/c.html"] = (403, {**HTML, "cf-mitigated": "challenge"}, CHALLENGE)
    for _crawl in range(2):
        report = crawl(project, name)
        assert names(report["failed"]) == ["a.html", "b.html", "c.html"] and not report["deleted"], report
    report = crawl(project, name)  # the third failing crawl: max_failures
    assert names(report["deleted"]) == ["a.html", "b.html"], report
    assert "a.html" not in contents(solr, name) and "b.html" not in contents(solr, name)
    assert contents(solr, name)["c.html"] == "Gamma minutes."


def test_the_delta_report_says_why_a_soft_error_failed_and_keeps_it_after_the_next_run(
    offline_project: Project, serve, tmp_path: Path
) -> None:
    """Issue 72: `scrapy report` (text and --json) names each failed URL's status and reason, as
    its row had them in that run, also once a later run has changed the row. Solr is out of
    reach here: the report is the document table's."""
    root = tmp_path / "site"
    root.mkdir()
    write_pages(root, {"a": "Alpha policy.", "b": "Beta rota."})
    site = serve(root)
    name = f"soft-report-{uuid.uuid4().hex[:8]}"
    offline_project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 1\n')
    site.responses["/a.html"] = (200, HTML, LOGIN)
    first = offline_project.scrapy("crawl", name)
    assert first.returncode == 4, first.stderr[-3000:]  # Solr out of reach: documents pending
    site.responses.clear()
    (root / "a.html").unlink()  # now a plain 404
    assert offline_project.scrapy("crawl", name).returncode == 4

    text = offline_project.scrapy("report", name, "--run", "1")
    data = json.loads(offline_project.scrapy("report", name, "--run", "1", "--json").stdout)
    latest = json.loads(offline_project.scrapy("report", name, "--json").stdout)

    assert names(data["urls"]["failed"]) == ["a.html"], data
    why = data["reasons"][f"{site.url}a.html"]
    assert why["status"] == 928 and why["reason"].startswith("a login page (a default marker: title 'Sign in'"), why
    lines = text.stdout.splitlines()
    at = lines.index(f"               {site.url}a.html")
    assert lines[at + 1].startswith("                 928 soft_error: a login page (a default marker"), lines
    assert f"{site.url}index.html" not in data["reasons"]  # what entered the index needs no reason
    assert latest["reasons"][f"{site.url}a.html"]["status"] == 404, latest
