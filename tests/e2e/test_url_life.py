"""A URL's life over several crawls of a changing site: each test is a defect of the first round
(issue 21), reproduced with real crawls, a real HTTP server and the real Solr."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from searchcrawl.rules.status_codes import Status
from searchcrawl.store.runs import Runs
from tests.conftest import InFlight, Site, popen_scrapy, solr_docs, wait_for

pytestmark = pytest.mark.usefixtures("solr")


def page(title: str, text: str, links: list[str] = (), head: str = "") -> str:
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return f"<html><head><title>{title}</title>{head}</head><body><p>{text}</p>{anchors}</body></html>"


def write(path: Path, html: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html)


def indexed(solr, name: str) -> set[str]:
    return {doc["url"] for doc in solr_docs(solr, name)}


def crawl(project, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    result = project.scrapy("crawl", name, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def report(project, name: str) -> dict:
    result = project.scrapy("report", name, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def source(project, site, **extra: str) -> str:
    name = f"life-{uuid.uuid4().hex[:8]}"
    lines = [f'seeds = ["{site.url}index.html"]', "max_delete_share = 1.0", *(f"{k} = {v}" for k, v in extra.items())]
    project.source(name, "\n".join(lines) + "\n")
    return name


def test_a_temporary_redirect_target_outside_the_boundary_stays_while_the_redirect_stands(project, serve, tmp_path, solr):
    root = tmp_path / "site"
    write(root / "index.html", page("home", "the index", ["/docs/moving.html"]))
    write(root / "docs" / "moving.html", page("moving", "a page that will move"))
    write(root / "other" / "landing.html", page("landing", "outside the source's paths"))
    site = serve(root)
    name = source(project, site, paths='{ "127.0.0.1" = { include = ["/index.html", "/docs/"] } }')
    target, moving = site.url + "other/landing.html", site.url + "docs/moving.html"
    crawl(project, name)
    assert moving in indexed(solr, name)
    site.redirect("/docs/moving.html", 302, "/other/landing.html")
    for number in range(3):  # crawl after crawl, nothing changes: the target stays
        crawl(project, name)
        assert target in indexed(solr, name), f"crawl {number + 2}"
        assert moving not in indexed(solr, name)
    del site.responses["/docs/moving.html"]  # the redirect goes
    crawl(project, name)
    assert indexed(solr, name) == {site.url + "index.html", moving}
    row = project.table().get(name, target)
    assert row["status"] == Status.EXCLUDED_PATH and "no URL of the source redirects to it any more" in row["reason"]
    assert target in report(project, name)["urls"]["deleted"]
    crawl(project, name)
    assert target not in indexed(solr, name)


def test_a_redirect_target_outside_the_boundary_fails_with_its_redirecting_url(project, serve, tmp_path, solr):
    root = tmp_path / "site"
    write(root / "index.html", page("home", "the index", ["/docs/moving.html"]))
    write(root / "other" / "landing.html", page("landing", "outside the source's paths"))
    site = serve(root)
    name = source(project, site, paths='{ "127.0.0.1" = { include = ["/index.html", "/docs/"] } }', max_failures="2")
    target = site.url + "other/landing.html"
    site.redirect("/docs/moving.html", 302, "/other/landing.html")
    crawl(project, name)
    assert target in indexed(solr, name)
    site.responses["/docs/moving.html"] = (503, {"Content-Type": "text/html"}, b"<html>later</html>")
    crawl(project, name)  # unknown whether it still redirects: the target stays, one failing crawl
    assert target in indexed(solr, name)
    assert project.table().get(name, target)["failures"] == 1
    crawl(project, name)  # max_failures consecutive failing crawls: it leaves
    assert target not in indexed(solr, name)


def test_a_redirect_target_outside_the_boundary_stays_while_any_redirect_to_it_stands(project, serve, tmp_path, solr):
    root = tmp_path / "site"
    write(root / "index.html", page("home", "the index", ["/docs/one.html", "/docs/two.html"]))
    write(root / "other" / "landing.html", page("landing", "outside the source's paths"))
    site = serve(root)
    name = source(project, site, paths='{ "127.0.0.1" = { include = ["/index.html", "/docs/"] } }')
    target = site.url + "other/landing.html"
    site.redirect("/docs/one.html", 302, "/other/landing.html")
    site.redirect("/docs/two.html", 307, "/other/landing.html")
    crawl(project, name)
    assert target in indexed(solr, name)
    write(root / "docs" / "one.html", page("one", "no longer redirects"))
    del site.responses["/docs/one.html"]
    crawl(project, name)  # the redirect from two.html still stands, whichever one it was reached by
    assert target in indexed(solr, name)
    write(root / "docs" / "two.html", page("two", "no longer redirects either"))
    del site.responses["/docs/two.html"]
    crawl(project, name)
    assert target not in indexed(solr, name)
    assert indexed(solr, name) == {site.url + path for path in ("index.html", "docs/one.html", "docs/two.html")}


def test_a_redirect_target_outside_the_boundary_that_duplicates_a_page_leaves_with_its_redirect(project, serve, tmp_path, solr):
    """Found by the sequence test (seed 2, crawls 29-30): a temporary redirect's target outside the
    boundary that was a duplicate (not in the index) kept its redirect's mark once the redirect
    went, so when its original left, the next crawl fetched it to take the original's place,
    indexed it and removed it again, and the report listed it as deleted."""
    root = tmp_path / "site"
    write(root / "index.html", page("home", "the index", ["/docs/moving.html", "/docs/original.html"]))
    write(root / "docs" / "original.html", page("same", "the same title and text"))
    write(root / "other" / "landing.html", page("same", "the same title and text"))
    site = serve(root)
    name = source(project, site, paths='{ "127.0.0.1" = { include = ["/index.html", "/docs/"] } }')
    target = site.url + "other/landing.html"
    site.redirect("/docs/moving.html", 302, "/other/landing.html")
    crawl(project, name)
    assert indexed(solr, name) == {site.url + "index.html", site.url + "docs/original.html"}  # the target: a duplicate
    write(root / "docs" / "moving.html", page("moving", "no longer redirects"))
    del site.responses["/docs/moving.html"]
    crawl(project, name)  # the redirect went: the target is outside the boundary, as any such URL
    row = project.table().get(name, target)
    assert row["status"] == Status.EXCLUDED_PATH and "no URL of the source redirects to it any more" in row["reason"]
    site.responses["/docs/original.html"] = (410, {"Content-Type": "text/html"}, b"<html>gone</html>")
    before = len(site.requests)
    crawl(project, name)  # the original leaves; the target outside the boundary does not take its place
    assert "/other/landing.html" not in [path for _m, _h, path in site.requests[before:]]
    assert indexed(solr, name) == {site.url + "index.html", site.url + "docs/moving.html"}
    urls = report(project, name)["urls"]
    assert urls.get("deleted") == [site.url + "docs/original.html"], urls
    assert target not in urls.get("excluded", []), urls


def redirected_out(project, serve, tmp_path: Path, code: int, answer: tuple[int, bytes]) -> tuple[Path, Site, str, str]:
    """A site whose index links /docs/moving.html, a ``code`` redirect to /other/landing.html
    (outside the source's paths), which answers ``answer`` (status, HTML); (root, site, source, target)."""
    root = tmp_path / "site"
    write(root / "index.html", page("home", "the index", ["/docs/moving.html"]))
    site = serve(root)
    name = source(project, site, paths='{ "127.0.0.1" = { include = ["/index.html", "/docs/"] } }')
    site.redirect("/docs/moving.html", code, "/other/landing.html")
    site.responses["/other/landing.html"] = (answer[0], {"Content-Type": "text/html"}, answer[1])
    return root, site, name, site.url + "other/landing.html"


NOINDEX_PAGE = page("landing", "not for the index", head='<meta name="robots" content="noindex">').encode()


@pytest.mark.parametrize(
    ("answer", "status"),
    [((503, b"<html>later</html>"), 503), ((200, NOINDEX_PAGE), Status.NOINDEX)],
    ids=["503", "noindex"],
)
def test_a_redirect_target_outside_the_boundary_not_indexed_is_excluded_when_its_redirect_goes(
    project, serve, tmp_path, solr, answer: tuple[int, bytes], status: int
):
    """Found by the sequence test (seed 1, crawls 79-81; seed 2, crawls 64-66): a target outside
    the boundary that answered 503, or a page marked noindex, through its redirect kept that
    status when the redirect went (its outcome did not note the redirect it came through), and
    the next crawl listed it as excluded, a change a crawl late."""
    root, site, name, target = redirected_out(project, serve, tmp_path, 302, answer)
    crawl(project, name)
    assert project.table().get(name, target)["status"] == status
    write(root / "docs" / "moving.html", page("moving", "no longer redirects"))
    del site.responses["/docs/moving.html"]
    crawl(project, name)
    assert project.table().get(name, target)["status"] == Status.EXCLUDED_PATH  # in the crawl the redirect went
    assert target in report(project, name)["urls"].get("excluded", [])
    crawl(project, name)
    assert target not in report(project, name)["urls"].get("excluded", [])  # the same status: not news again
    assert project.table().get(name, target)["status"] == Status.EXCLUDED_PATH


def test_a_redirect_target_outside_the_boundary_not_indexed_is_excluded_when_its_redirect_fails(project, serve, tmp_path, solr):
    """Found by the sequence test (seed 6, crawls 31-37): an indexed target is kept while the URL
    redirecting to it fails transiently; one that is not in the index (it answered 503) has
    nothing to keep, and is outside the boundary as soon as no redirect to it stands."""
    _root, site, name, target = redirected_out(project, serve, tmp_path, 307, (503, b"<html>later</html>"))
    crawl(project, name)
    assert project.table().get(name, target)["status"] == 503
    site.responses["/docs/moving.html"] = (503, {"Content-Type": "text/html"}, b"<html>later</html>")
    crawl(project, name)
    assert project.table().get(name, target)["status"] == Status.EXCLUDED_PATH


def test_a_redirect_target_leaving_at_the_runs_end_leaves_its_duplicate_to_the_next_crawl(project, serve, tmp_path, solr):
    """Found by the sequence test with two processes (seed 4, crawl 89), one process alike: an
    indexed redirect target outside the boundary left the index at the run's end and queued its
    duplicate to take its place, when nothing more was fetched; the run ended suspended, and the
    next crawl resumed it (fetching only the duplicate) instead of checking the site."""
    root = tmp_path / "site"
    write(root / "index.html", page("home", "the index", ["/docs/moving.html"]))
    same = page("same", "the same title and text")
    write(root / "other" / "landing.html", same.replace("</body>", '<a href="/docs/copy.html"></a></body>'))  # no anchor text
    write(root / "docs" / "copy.html", same)
    site = serve(root)
    name = source(project, site, paths='{ "127.0.0.1" = { include = ["/index.html", "/docs/"] } }')
    target, copy = site.url + "other/landing.html", site.url + "docs/copy.html"
    site.redirect("/docs/moving.html", 302, "/other/landing.html")
    crawl(project, name)
    assert indexed(solr, name) == {site.url + "index.html", target}  # the copy, reached from it: its duplicate
    write(root / "docs" / "moving.html", page("moving", "no longer redirects"))
    del site.responses["/docs/moving.html"]
    crawl(project, name)  # the target leaves at the run's end
    runs = Runs(project.table().database)
    assert runs.latest(name)["state"] == "finished"
    assert indexed(solr, name) == {site.url + "index.html", site.url + "docs/moving.html"}
    result = crawl(project, name)  # a maintenance crawl, not a resumed run: the copy takes the target's place
    assert "Resuming run" not in result.stderr
    assert runs.latest(name)["state"] == "finished"
    assert indexed(solr, name) == {site.url + "index.html", site.url + "docs/moving.html", copy}
    assert report(project, name)["urls"]["new"] == [copy]


def test_a_crawl_killed_between_a_temporary_redirect_and_its_target_fetches_the_target_when_resumed(
    project, serve, tmp_path, solr
):
    """The redirecting URL is done once its redirect is followed; its target goes through the run's
    frontier like any request (with the redirect it came through), so a crawl killed between the
    two answers leaves it leased, and the resumed run fetches it through the same redirect: it is
    indexed, outside the boundary, marked with its redirect."""
    root = tmp_path / "site"
    write(root / "index.html", page("home", "the index", ["/docs/moving.html"]))
    write(root / "other" / "landing.html", page("landing", "outside the source's paths"))
    site = serve(root)
    name = source(project, site, paths='{ "127.0.0.1" = { include = ["/index.html", "/docs/"] } }')
    target, moving = site.url + "other/landing.html", site.url + "docs/moving.html"
    site.redirect("/docs/moving.html", 302, "/other/landing.html")
    site.in_flight, site.slow = InFlight(), 1.0  # each answer takes a second: the kill lands before the target's
    crawl = project.popen("crawl", name)
    wait_for(lambda: "/docs/moving.html" in site.paths(), timeout=60, what="the redirect answered")
    table = project.table()  # made by the crawl by now: it recorded the index page
    wait_for(lambda: (table.get(name, moving) or {}).get("status") == 302, timeout=10, what="the redirect recorded")
    crawl.send_signal(signal.SIGKILL)
    crawl.communicate(timeout=60)
    site.in_flight, site.slow = None, 0.0
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Resuming run" in result.stderr + result.stdout
    assert indexed(solr, name) == {site.url + "index.html", target}
    assert project.table().get(name, target)["via"] == moving


def test_a_page_that_answered_404_comes_back_when_its_linking_page_answers_304(project, serve, tmp_path, solr):
    root = tmp_path / "site"
    write(root / "index.html", page("home", "the index", ["/a.html"]))
    write(root / "a.html", page("a", "page a"))
    site = serve(root)
    name = source(project, site)
    crawl(project, name)
    site.responses["/a.html"] = (404, {"Content-Type": "text/html"}, b"<html>not here</html>")
    crawl(project, name)
    assert site.url + "a.html" not in indexed(solr, name)
    del site.responses["/a.html"]
    site.requests.clear()
    crawl(project, name)
    assert "/index.html" in site.conditional  # the linking page answered 304: its links were not read
    assert site.url + "a.html" in indexed(solr, name)
    assert report(project, name)["urls"]["new"] == [site.url + "a.html"]


def test_a_robots_txt_outage_removes_nothing_and_counts_as_a_failure(project, serve, tmp_path, solr):
    root = tmp_path / "site"
    write(root / "index.html", page("home", "the index", ["/a.html", "/b.html"]))
    write(root / "a.html", page("a", "page a"))
    write(root / "b.html", page("b", "page b"))
    write(root / "robots.txt", "User-agent: *\nDisallow: /private/\n")
    site = serve(root)
    name = source(project, site, max_failures="2")
    crawl(project, name)
    everything = indexed(solr, name)
    assert len(everything) == 3
    site.responses["/robots.txt"] = (503, {"Content-Type": "text/plain"}, b"maintenance")
    crawl(project, name)
    assert indexed(solr, name) == everything
    row = project.table().get(name, site.url + "a.html")
    assert (row["status"], row["failures"], row["state"]) == (Status.ROBOTS_UNAVAILABLE, 1, "indexed")
    assert not report(project, name)["urls"].get("deleted")
    del site.responses["/robots.txt"]
    crawl(project, name)
    assert indexed(solr, name) == everything
    assert project.table().get(name, site.url + "a.html")["failures"] == 0


def test_duplicates_need_the_same_title_and_text(project, serve, tmp_path, solr):
    root = tmp_path / "site"
    write(root / "index.html", page("home", "the index", ["/a.html", "/b.html", "/c.html", "/d.html"]))
    write(root / "a.html", "<html><head><title>Alpha</title></head><body></body></html>")
    write(root / "b.html", "<html><head><title>Beta</title></head><body></body></html>")
    write(root / "c.html", page("Same", "same words"))
    write(root / "d.html", page("Same", "same words"))
    site = serve(root)
    name = source(project, site)
    crawl(project, name)
    urls = indexed(solr, name)
    assert {site.url + "a.html", site.url + "b.html"} <= urls
    assert len(urls & {site.url + "c.html", site.url + "d.html"}) == 1


def test_the_delta_report_says_what_happened(project, serve, tmp_path, solr):
    root = tmp_path / "site"
    links = ["/a.html", "/gone.html", "/rule/x.html", *(f"/p{i}.html" for i in range(4))]
    write(root / "index.html", page("home", "the index", links))
    for path in links:
        write(root / path.lstrip("/"), page(path, f"text of {path}"))
    site = serve(root)
    name = source(project, site)
    crawl(project, name)
    (root / "gone.html").unlink()
    crawl(project, name)
    assert report(project, name)["urls"]["deleted"] == [site.url + "gone.html"]
    crawl(project, name)  # a 404 removed long ago is not news
    urls = report(project, name)["urls"]
    assert not urls["failed"] and not urls["deleted"] and not urls["excluded"]
    # a rule change: its removals are deletions, with the rule as their reason
    rule = 'patterns = { exclude_regex = ["/rule/"] }'
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_delete_share = 1.0\n{rule}\n')
    crawl(project, name)
    urls = report(project, name)["urls"]
    assert urls["deleted"] == [site.url + "rule/x.html"] and not urls["excluded"]
    assert "rule" in project.table().get(name, site.url + "rule/x.html")["reason"]
    # the mass-deletion guard refuses: held, not deleted
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_delete_share = 0.3\n{rule}\n')
    for i in range(4):
        (root / f"p{i}.html").unlink()
    result = crawl(project, name)
    assert "Mass-deletion guard" in result.stderr
    urls = report(project, name)["urls"]
    assert sorted(urls["held"]) == [site.url + f"p{i}.html" for i in range(4)] and not urls["deleted"]


def test_the_delta_report_calls_redirects_redirected_and_unconvertible_documents_failed(project, serve, tmp_path, solr):
    """Issue 53: URLs that redirect (301, 302) and a document that cannot be converted (921) were
    listed as excluded, though no rule kept them out. A redirect is redirected (its target is
    new on its own), the broken PDF failed; neither is news again while it stays so. So is a 302
    to the URL itself (a loop, once excluded) and a 302 without Location (once failed)."""
    root = tmp_path / "site"
    links = ["/moved.html", "/for-now.html", "/broken.pdf", "/loop.html", "/nowhere.html"]
    write(root / "index.html", page("home", "the index", links))
    write(root / "a.html", page("a", "where the moved page went"))
    write(root / "b.html", page("b", "where the other one points for now"))
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\n" + os.urandom(2000))  # a PDF's magic, then noise
    site = serve(root)
    site.redirect("/moved.html", 301, "/a.html")
    site.redirect("/for-now.html", 302, "/b.html")
    site.redirect("/loop.html", 302, "/loop.html")  # to itself: a loop (940)
    site.responses["/nowhere.html"] = (302, {}, b"")  # no Location: the spider gets the 302
    name = source(project, site)
    crawl(project, name)
    assert project.table().get(name, site.url + "broken.pdf")["status"] == Status.CONVERSION_FAILED
    assert project.table().get(name, site.url + "loop.html")["status"] == Status.REDIRECT_LOOP
    urls = report(project, name)["urls"]
    assert urls["redirected"] == [site.url + url for url in ("for-now.html", "loop.html", "moved.html", "nowhere.html")], urls
    assert urls["failed"] == [site.url + "broken.pdf"] and not urls["excluded"], urls
    assert urls["new"] == [site.url + "a.html", site.url + "b.html", site.url + "index.html"], urls
    crawl(project, name)
    urls = report(project, name)["urls"]
    assert not urls["redirected"] and not urls["failed"] and not urls["excluded"], urls


def crawl_with_spider(project, serve, tmp_path, spider: str, special: str):
    """A crawl of a two-page site by ``spider`` (a registered name of tests/custom_spiders.py), which mistreats the
    page ``special``; returns the site, the source's name and the crawl's result."""
    root = tmp_path / "site"
    write(root / "index.html", page("home", "the index", [f"/{special}", "/fine.html"]))
    write(root / special, page("special", "the spider mistreats this page"))
    write(root / "fine.html", page("fine", "a fine page"))
    site = serve(root)
    name = f"life-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\nspider_class = "{spider}"\n')
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "finished" in project.scrapy("status", name).stdout
    return site, name, result


def test_a_url_whose_processing_raised_gets_a_status_and_the_run_finishes(project, serve, tmp_path, solr):
    site, name, _result = crawl_with_spider(project, serve, tmp_path, "raising", "boom.html")
    row = project.table().get(name, site.url + "boom.html")
    assert row["status"] == Status.PROCESSING_ERROR and "XPath error" in row["reason"]
    assert row["frontier"] == "done"
    assert "suspended" not in project.scrapy("status", name).stdout
    assert site.url + "fine.html" in indexed(solr, name)
    again = project.scrapy("crawl", name)  # a new maintenance run, not a resumed one
    assert "Maintenance crawl" in again.stderr and "Resuming" not in again.stderr


def test_a_url_whose_outcome_got_lost_gets_a_status_when_the_crawl_finishes(project, serve, tmp_path, solr):
    site, name, result = crawl_with_spider(project, serve, tmp_path, "losing", "lost.html")
    assert f"No outcome was recorded for {site.url}lost.html" in result.stderr
    row = project.table().get(name, site.url + "lost.html")
    assert (row["status"], row["frontier"], row["failures"]) == (Status.PROCESSING_ERROR, "done", 1)


def test_a_killed_run_shows_as_dead(project, serve, tmp_path):
    root = tmp_path / "site"
    write(root / "index.html", page("home", "the index", [f"/p{i}.html" for i in range(50)]))
    for i in range(50):
        write(root / f"p{i}.html", page(f"p{i}", f"page {i}"))
    site = serve(root, slow=0.2, in_flight=InFlight())
    name = source(project, site)
    with open(os.devnull, "w") as nowhere:
        process = popen_scrapy(["crawl", name], project.env(), stdout=nowhere, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: len(site.requests) > 5, timeout=120, what="the crawl to fetch pages")
    finally:
        process.kill()
        process.wait()  # reaped: its pid is gone
    status = project.scrapy("status", name)
    assert f"dead (marked running, but process {process.pid}" in status.stdout, status.stdout
