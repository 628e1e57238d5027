"""Query analytics end to end (issue 59): `scrapy web` as a user starts it, against a real Solr
holding the crawled harbour corpus (tests/web_site.py): a series of searches and clicks, then
the analytics page and its CSV export; a search still answered at once when the database
cannot be written; a forged click link refused, never redirected."""

from __future__ import annotations

import csv
import html
import io
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from tests.conftest import Project, free_port, wait_for
from tests.web_site import PASSWORD, serve_web

MASTER = '"harbour master"'  # a phrase only this corpus holds: 24 hits
NOTHING = "zyxwvutqnothingq"  # one token no document holds ("zyxwvut-nothing" was two: "nothing" matched another test's page in the shared core)


@pytest.fixture
def server(harbour_corpus, tmp_path: Path) -> Iterator[tuple[str, Project, Path]]:
    """`scrapy web` over a database of its own (the analytics start empty), and its log."""
    project, _harbour = harbour_corpus
    project.data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    process = serve_web(project, port, SEARCHCRAWL_DB_URL=f"sqlite:///{tmp_path / 'analytics.sqlite3'}")
    yield f"http://127.0.0.1:{port}", project, project.data_dir.parent / f"web-{port}.log"
    stop(process)


class Client:
    """A browser-like client of the server (cookies kept), following no redirect by itself."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.session = requests.Session()

    def get(self, path: str, **kwargs: object) -> requests.Response:
        return self.session.get(self.base + path, allow_redirects=False, timeout=60, **kwargs)  # type: ignore[arg-type]

    def post(self, path: str, **kwargs: object) -> requests.Response:
        return self.session.post(self.base + path, allow_redirects=False, timeout=60, **kwargs)  # type: ignore[arg-type]


def stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


def hit_links(page: str) -> list[str]:
    return [html.unescape(link) for link in re.findall(r'<li class="hit">\s*<h2><a href="([^"]*)"', page)]


def login(web: Client) -> None:
    form = web.get("/admin/login")
    token = re.search(r'name="login_token" value="([^"]+)"', form.text)
    assert token is not None
    answer = web.post("/admin/login", data={"login_token": token[1], "username": "admin", "password": PASSWORD})
    assert answer.status_code == 303, answer.text


def cell(page: str, ident: str) -> str:
    found = re.search(rf'id="{ident}">([^<]*)<', page)
    assert found is not None, ident
    return found[1]


def test_searches_and_clicks_show_on_the_analytics_page_and_in_its_csv(server) -> None:
    url, _project, _log = server
    web = Client(url)
    first = web.get("/", params={"q": MASTER})
    links = hit_links(first.text)
    assert len(links) == 10 and all(link.startswith("/click?") for link in links)
    opened = web.get(links[0])  # the first hit
    target = parse_qs(urlsplit(links[0]).query)["u"][0]
    assert opened.status_code == 303 and opened.headers["location"] == target and target.startswith("http://127.0.0.1")
    assert requests.get(opened.headers["location"], timeout=60).status_code == 200  # the document itself
    second = web.get("/", params={"q": "Harbour   MASTER", "page": "2"})  # the same query as grouped, page 2
    page_two = hit_links(second.text)
    assert parse_qs(urlsplit(page_two[1]).query)["p"] == ["12"]
    assert web.get(page_two[1]).status_code == 303  # rank 12
    web.get("/", params={"q": MASTER, "type": "text/html"})
    for _ in range(2):
        assert "No document matches" in web.get("/", params={"q": NOTHING}).text
    web.get("/", params={"q": '=HYPERLINK("http://evil.example")'})  # a formula, as a query
    searches = 6

    login(web)

    def logged() -> bool:
        return cell(web.get("/admin/analytics", params={"days": "1"}).text, "total-searches") == str(searches)

    wait_for(logged, 30, "the searches to be logged")
    page = web.get("/admin/analytics", params={"days": "1"}).text
    assert cell(page, "total-clicked").startswith("2 ") and cell(page, "total-clicks") == "2"
    assert cell(page, "total-none") == "3"  # the nonsense twice, the formula once
    assert re.search(r"\d+ ms", cell(page, "total-median"))
    top = re.findall(r'<td class="query">([^<]*)</td><td class="number">(\d+)</td>', page.split('class="analytics-none"')[0])
    assert top[0] == ("&#34;harbour master&#34;", "2")  # searched twice: with and without a filter
    assert ("harbour master", "1") in top  # "Harbour   MASTER", grouped as typed without quotes
    assert (NOTHING, "2") in re.findall(
        r'<td class="query">([^<]*)</td><td class="number">(\d+)</td>', page.split('class="analytics-none"')[1]
    )
    assert '<a href="/admin/analytics">' in web.get("/admin").text  # linked from the overview

    exported = web.get("/admin/analytics.csv", params={"report": "top", "days": "1"})
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
    assert exported.headers["content-disposition"].startswith('attachment; filename="searchcrawl-top-')
    rows = list(csv.reader(io.StringIO(exported.text)))
    assert rows[0] == ["query", "searches", "average hits", "searches with a click", "click-through"]
    by_query = {row[0]: row for row in rows[1:]}
    assert by_query['"harbour master"'][1:] == ["2", "24.0", "1", "0.5"]
    either = re.search(r"([0-9]+) documents match", second.text)  # either word (other tests' documents too)
    assert either is not None and by_query["harbour master"][1:] == ["1", f"{either[1]}.0", "1", "1.0"]
    assert '\'=hyperlink("http://evil.example")' in by_query  # never a formula in a spreadsheet
    positions = list(csv.reader(io.StringIO(web.get("/admin/analytics.csv?report=positions&days=1").text)))
    assert positions[1] == ["1", "1", "0.5"] and positions[11] == ["11+", "1", "0.5"]
    period = urlencode({"from": time.strftime("%Y-%m-%d", time.gmtime()), "to": time.strftime("%Y-%m-%d", time.gmtime())})
    none = list(csv.reader(io.StringIO(web.get(f"/admin/analytics.csv?report=none&{period}").text)))
    assert [row[:2] for row in none[1:]] == [[NOTHING, "2"], ['\'=hyperlink("http://evil.example")', "1"]]


def test_a_forged_click_link_is_refused_not_redirected(server) -> None:
    url, _project, _log = server
    web = Client(url)
    link = hit_links(web.get("/", params={"q": MASTER}).text)[0]
    params = {key: values[0] for key, values in parse_qs(urlsplit(link).query).items()}
    for forged in (
        {**params, "u": "https://evil.example/"},
        {**params, "p": "2"},
        {**params, "k": "A" * len(params["k"])},
        {"s": params["s"], "p": "1", "u": "https://evil.example/"},
        {**params, "u": "javascript:alert(1)"},
    ):
        refused = web.get("/click", params=forged)
        assert refused.status_code == 404 and "location" not in refused.headers, forged
        assert "evil.example" not in refused.text
    assert web.get(link).status_code == 303  # the link itself still works


def test_a_search_is_answered_when_the_database_cannot_be_written(harbour_corpus, tmp_path: Path) -> None:
    """The database a file that is no database: every batch is refused, the searches are
    answered as before, and the log says (once) that records were not logged."""
    project, _harbour = harbour_corpus
    broken = tmp_path / "broken.sqlite3"
    broken.write_bytes(b"this is not a database\n" * 1000)
    port = free_port()
    process = serve_web(project, port, SEARCHCRAWL_DB_URL=f"sqlite:///{broken}")
    log = project.data_dir.parent / f"web-{port}.log"
    try:
        web = Client(f"http://127.0.0.1:{port}")
        for _ in range(5):
            started = time.monotonic()
            answer = web.get("/", params={"q": MASTER})
            assert answer.status_code == 200 and len(hit_links(answer.text)) == 10
            assert time.monotonic() - started < 10
        assert web.get(hit_links(answer.text)[0]).status_code == 303  # a click still opens its hit
        wait_for(lambda: "Query analytics:" in log.read_text() and "not logged" in log.read_text(), 30, "the warning")
        warnings = [line for line in log.read_text().splitlines() if "records not logged" in line]
        assert 1 <= len(warnings) <= 2 and "harbour master" not in log.read_text().split("Query analytics", 1)[1]
    finally:
        stop(process)


def test_signed_in_searchers_names_show_only_when_logged(harbour_corpus, tmp_path: Path) -> None:
    """SEARCHCRAWL_WEB_LOG_USERS on: the searches of users named by the trusted proxy's header
    (single sign-on, from loopback: one of SEARCHCRAWL_WEB_PROXIES) are reported by name, on the
    page and in its CSV; a visitor's search is counted but named nowhere."""
    project, _harbour = harbour_corpus
    project.data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    process = serve_web(
        project,
        port,
        # from the environment, as a systemd unit sets them (issue 79: they were ignored there)
        SEARCHCRAWL_WEB_LOG_USERS="True",
        SEARCHCRAWL_WEB_USER_HEADER="X-Remote-User",
        SEARCHCRAWL_DB_URL=f"sqlite:///{tmp_path / 'analytics.sqlite3'}",
    )
    try:
        web = Client(f"http://127.0.0.1:{port}")
        as_alice = {"X-Remote-User": "alice"}
        links = hit_links(web.get("/", params={"q": MASTER}, headers=as_alice).text)
        assert web.get(links[0], headers=as_alice).status_code == 303
        web.get("/", params={"q": NOTHING}, headers=as_alice)
        web.get("/", params={"q": MASTER}, headers={"X-Remote-User": "<b>bob</b>"})
        web.get("/", params={"q": MASTER})  # a visitor
        login(web)

        def logged() -> bool:
            return cell(web.get("/admin/analytics", params={"days": "1"}).text, "total-searches") == "4"

        wait_for(logged, 30, "the searches to be logged")
        page = web.get("/admin/analytics", params={"days": "1"}).text
        searchers = page.split('class="analytics-searchers"')[1]
        rows = re.findall(r'<td class="user">([^<]*)</td>((?:<td class="number">\d+</td>){3})', searchers)
        numbers = {user: re.findall(r">(\d+)<", cells) for user, cells in rows}
        assert numbers == {"alice": ["2", "1", "1"], "&lt;b&gt;bob&lt;/b&gt;": ["1", "0", "0"]}  # never markup
        exported = list(csv.reader(io.StringIO(web.get("/admin/analytics.csv?report=searchers&days=1").text)))
        assert exported[0][:4] == ["user", "searches", "searches with no hits", "searches with a click"]
        assert [row[:4] for row in exported[1:]] == [["alice", "2", "1", "1"], ["<b>bob</b>", "1", "0", "0"]]
    finally:
        stop(process)
