"""Sources edited in the browser (issue 79 point 1: web/views/source_editor_views.py, web/source_editor.py), on a
source crawled for real into the test Solr: an administrator opens it, gets the crawl loader's
one-line error beside the text, explains a URL and runs a test crawl against the unsaved text,
reviews the change (the diff, the documents a narrower scope takes out, the recrawl a changed
indexing rule forces), saves it (the previous version kept, the change audited), and creates,
copies, disables, enables and deletes sources; a save without review, a stale text, a forged form,
a name that is a path, markup in the text are all refused or shown as text. The same in Chromium."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from httpx import Response
from playwright.sync_api import Browser
from starlette.testclient import TestClient

from searchcrawl.rules.urls import canonical
from searchcrawl.web import source_editor
from searchcrawl.web.app import create_app
from tests.conftest import FORK_SERVER, ROOT, Project, run_scrapy, wait_for
from tests.e2e.test_crawl import source_text, unique
from tests.e2e.test_web import login, web_config
from tests.e2e.test_web_browser import browser, pytestmark  # noqa: F401 - the fixture, Chromium's check
from tests.sites import build_intranet
from tests.web_site import browser_login, web_served


@pytest.fixture(autouse=True)
def forked_test_crawls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test crawls of the web application these tests run in their own process (TestClient)
    are forks of the worker's fork server, as every other `scrapy` command of the tests
    (tests/forkserver.py): a test crawl is two commands, the crawl and its report, each a fresh
    interpreter otherwise (some 2.5 s of CPU to import Scrapy and searchcrawl). The test crawls
    of `scrapy web` (web_served) still start ``python -P -m scrapy`` as the product does, and
    tests/e2e/test_launchers.py tests that command."""
    if FORK_SERVER is None:
        return

    def forked(project_dir: Path, environ: dict[str, str], timeout: float, *args: str) -> Any:
        assert project_dir == ROOT, project_dir
        return run_scrapy(list(args), environ, timeout=timeout)

    monkeypatch.setattr(source_editor, "run_command", forked)


@pytest.fixture
def crawled(project: Project, serve: Any, tmp_path: Path) -> tuple[Project, str, str]:
    """A site of 2 sections crawled into the test Solr by a source of its own: (project, name, site URL)."""
    root = tmp_path / "site"
    root.mkdir()
    site = serve(root)
    build_intranet(root, sections=2, per_section=2)
    name = unique("edit")
    project.source(name, "# crawled nightly\n" + source_text(site.url + "index.html", max_depth=3))
    done = project.scrapy("crawl", name)
    assert done.returncode == 0, done.stderr[-3000:]
    return project, name, site.url


def editor_client(project: Project, local_seeds: bool = False) -> tuple[TestClient, str]:
    """An administrator's client of the editor; ``local_seeds`` (SEARCHCRAWL_WEB_LOCAL_SEEDS) for a
    new source whose seed is a test site on 127.0.0.1."""
    config = web_config(project, sources_dir=project.sources_dir, explain_environ=project.env(), local_seeds=local_seeds)
    web = TestClient(create_app(config), base_url="http://127.0.0.1")
    return web, login(web)


def form_of(page: str) -> dict[str, str]:
    """The editor's hidden fields and text, as the browser sends them back."""
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page))
    text = re.search(r'<textarea id="source-text" name="text"[^>]*>(.*?)</textarea>', page, re.DOTALL)
    assert text is not None, page[:3000]
    return {**{key: html.unescape(value) for key, value in fields.items()}, "text": html.unescape(text[1])}


def reported(web: TestClient, started: Response) -> Response:
    """The page of the test crawl ``started`` (the form's answer, followed) once its report is there:
    meanwhile it says what the crawl is doing, and refreshes itself."""
    assert started.status_code == 200 and started.url.path == "/admin/test-crawl", started.text[-3000:]
    page = started

    def done() -> bool:
        nonlocal page
        if 'http-equiv="refresh"' in page.text:
            page = web.get("/admin/test-crawl")
        return 'http-equiv="refresh"' not in page.text

    wait_for(done, what="the test crawl's report")
    return page


def test_an_administrator_edits_a_crawled_source_and_sees_what_the_change_does(crawled) -> None:
    project, name, site = crawled
    web, csrf = editor_client(project)
    path = f"/admin/source-files/{name}"
    opened = web.get(path)
    assert opened.status_code == 200 and "# crawled nightly" in opened.text and "<code>max_depth</code>" in opened.text
    form = form_of(opened.text)
    saved = form["text"]
    # the crawl loader's one-line error, beside the text; nothing written
    broken = web.post(path, data={**form, "text": saved + "max_dept = 2\n", "action": "check"})
    assert broken.status_code == 400 and f"{name}.toml: key &#39;max_dept&#39;: unknown key" in broken.text
    # a narrower scope, unsaved: explained, test-crawled, reviewed
    narrower = saved + '\n[paths."*"]\nexclude = ["/section1/"]\n'
    explained = web.post(path, data={**form, "text": narrower, "action": "explain", "url": site + "section1/topic0.html"})
    assert explained.status_code in (200, 400) and "section1" in explained.text and "exclude" in explained.text.lower(), (
        explained.text[-3000:]
    )
    tested = reported(web, web.post(path, data={**form, "text": narrower, "action": "test"}))
    assert tested.status_code == 200 and "Test crawl" in tested.text and "new" in tested.text, tested.text[-3000:]
    reviewed = web.post(path, data={**form, "text": narrower, "action": "review"})
    assert reviewed.status_code == 200
    assert re.search(r"(\d+) indexed documents are outside the new rules: the next crawl takes them out", reviewed.text)
    leaving = int(re.search(r"(\d+) indexed documents are outside", reviewed.text)[1])
    assert leaving == 5  # section1/: its index, its 2 topics and their 2 deep pages
    assert f"{site}section1/" in reviewed.text and '<span class="added">+[paths.&#34;*&#34;]</span>' in reviewed.text.replace(
        "&#39;", "'"
    )
    # a save needs the review of this very text
    unreviewed = web.post(
        path, data={**form, "text": narrower + "# more\n", "action": "save", "reviewed": form_of(reviewed.text)["reviewed"]}
    )
    assert unreviewed.status_code == 400 and "Review the change before it is saved." in unreviewed.text
    assert (project.sources_dir / f"{name}.toml").read_text() == saved
    done = web.post(path, data={**form_of(reviewed.text), "action": "save"}, follow_redirects=False)
    assert done.status_code == 303, done.text[-2000:]
    assert (project.sources_dir / f"{name}.toml").read_text() == narrower
    history = list((project.sources_dir / ".history").iterdir())
    assert len(history) == 1 and history[0].read_text() == saved
    assert "saved. The previous version is" in web.get(path).text
    # the form read before the save is stale now
    stale = web.post(path, data={**form, "text": saved, "action": "save", "reviewed": ""})
    assert stale.status_code == 400  # review first; and then:
    stale = web.post(
        path, data={**form_of(web.post(path, data={**form, "text": saved, "action": "review"}).text), "action": "save"}
    )
    assert stale.status_code == 409 and "was changed by someone else since you opened it" in stale.text
    # a rule documents depend on: every document fetched again, said before the save
    current = form_of(web.get(path).text)
    recrawl = web.post(path, data={**current, "text": "main_text = true\n" + current["text"], "action": "review"})
    assert "Every document will be fetched and indexed again: main_text changed" in html.unescape(recrawl.text), re.findall(
        r"<p class=\"warning\">[^<]*", recrawl.text
    )
    # a key that runs code is not changed here (a hostile review ran os.system through it)
    pwned = project.data_dir / "pwned"
    evil = f'url_rewriter = "os.system"\nlog_file = "{pwned}"\n' + current["text"]
    for action in ("check", "review", "test", "explain"):
        refused = web.post(path, data={**current, "text": evil, "action": action, "url": site + "index.html;touch " + str(pwned)})
        assert refused.status_code == 400 and "url_rewriter, log_file: changed in the browser" in html.unescape(refused.text)
    assert not pwned.exists()
    audit = web.get("/admin/audit").text
    assert "source:save" in audit and name in audit
    assert csrf


def test_sources_are_created_copied_disabled_enabled_and_deleted(project: Project) -> None:
    project.data_dir.mkdir(parents=True, exist_ok=True)
    web, csrf = editor_client(project)
    new = web.get("/admin/new-source")
    form = form_of(new.text)
    text = 'seeds = ["https://intranet.example/"]\ndescription = "<script>alert(1)</script>"\n'
    for name in ("../evil", "a/b", ".hidden"):
        refused = web.post("/admin/new-source", data={**form, "name": name, "text": text, "action": "review"})
        assert refused.status_code in (400, 404) and not any(project.sources_dir.parent.glob("evil*"))
    reviewed = web.post("/admin/new-source", data={**form, "name": "wiki", "text": text, "action": "review"})
    assert reviewed.status_code == 200 and "<script>alert" not in reviewed.text and "&lt;script&gt;" in reviewed.text
    saved = web.post(
        "/admin/new-source", data={**form_of(reviewed.text), "name": "wiki", "action": "save"}, follow_redirects=False
    )
    assert saved.status_code == 303 and (project.sources_dir / "wiki.toml").read_text() == text
    again = web.post("/admin/new-source", data={**form_of(reviewed.text), "name": "wiki", "action": "save"})
    assert again.status_code == 400 and "exists already" in again.text
    assert (
        web.post("/admin/source-files/wiki/copy", data={"csrf": csrf, "new_name": "wiki-2"}, follow_redirects=False).status_code
        == 303
    )
    assert web.post("/admin/source-files/wiki/copy", data={"csrf": csrf, "new_name": "../x"}).status_code == 409
    assert web.post("/admin/source-files/wiki-2/disable", data={"csrf": csrf}, follow_redirects=False).status_code == 303
    listing = web.get("/admin/source-files").text
    assert re.search(r"wiki-2</a></td>\s*<td>disabled", listing) and re.search(r"wiki</a></td>\s*<td>enabled", listing)
    assert "wiki-2" not in web.get("/admin").text  # not a source of the crawl
    assert web.post("/admin/source-files/wiki-2/enable", data={"csrf": csrf}, follow_redirects=False).status_code == 303
    assert web.post("/admin/source-files/wiki-2/delete", data={"csrf": csrf}, follow_redirects=False).status_code == 303
    # a disabled file the editor refuses (put there by hand, or by a restore) is not made live here (issue 91 review)
    (project.sources_dir / "evil.toml.disabled").write_text('type = "files"\n[files]\nroots = ["/etc/ssh"]\n')
    for action, form in (("enable", {}), ("copy", {"new_name": "evil-2"})):
        refused = web.post(f"/admin/source-files/evil/{action}", data={"csrf": csrf, **form})
        assert refused.status_code == 409, refused.text
        assert (
            "evil.toml.disabled is not made a live source in the browser, as the source editor refuses its text: type, files"
            in (html.unescape(refused.text))
        )
    (project.sources_dir / "evil.toml.disabled").unlink()
    assert sorted(path.name for path in project.sources_dir.glob("*.toml")) == ["wiki.toml"]
    forged = web.post("/admin/source-files/wiki/delete", data={"csrf": "forged"})
    assert forged.status_code == 403 and (project.sources_dir / "wiki.toml").is_file()
    assert [action for action in re.findall(r'<td class="action">([^<]+)</td>', web.get("/admin/audit").text)][:5] == [
        "source:delete",
        "source:enable",
        "source:disable",
        "source:copy",
        "source:create",
    ]


def test_a_test_crawl_sends_five_requests_not_five_answers(project: Project, serve: Any, tmp_path: Path) -> None:
    """Issue 91: the test crawl "5 pages, nothing indexed" fetched 8 pages of a 9-page site
    (CLOSESPIDER_PAGECOUNT counts answers: the requests in flight when the fifth came still went
    out). Now it hands 5 requests over, and no more."""
    project.data_dir.mkdir(parents=True, exist_ok=True)
    root = tmp_path / "site"
    root.mkdir()
    links = "".join(f'<li><a href="page{n}.html">Page {n}</a></li>' for n in range(8))
    (root / "index.html").write_text(f"<html><head><title>Nine pages</title></head><body><ul>{links}</ul></body></html>")
    for n in range(8):
        (root / f"page{n}.html").write_text(f"<html><head><title>Page {n}</title></head><body><p>Page {n}.</p></body></html>")
    site = serve(root)
    web, _csrf = editor_client(project, local_seeds=True)  # the site's seed is on 127.0.0.1
    form = form_of(web.get("/admin/new-source").text)
    text = source_text(site.url + "index.html", max_depth=1)
    started = web.post("/admin/new-source", data={**form, "name": unique("nine"), "text": text, "action": "test"})
    # the page says what the crawl does while it runs (it was blank for 20 s), then its report
    assert "Crawling at most 5 pages" in started.text or "writing its report" in started.text, started.text[-3000:]
    tested = reported(web, started)
    assert tested.status_code == 200 and re.search(r"Test crawl \(\d+ s\)", tested.text), tested.text[-3000:]
    assert 'value="nine' in tested.text and "index.html" in tested.text  # the editor, with the text tested
    # robots.txt and the soft-404 probe are fetched beside the pages, as every crawl fetches them
    pages = [path for path in site.paths() if path != "/robots.txt" and not path.startswith("/searchcrawl-not-found-")]
    assert pages[0] == "/index.html" and len(set(pages)) == len(pages) == 5, site.paths()  # 4 links of 8, any 4
    assert not any(project.sources_dir.iterdir())  # unsaved


def test_a_source_is_created_in_a_browser(browser: Browser, project: Project) -> None:  # noqa: F811
    project.data_dir.mkdir(parents=True, exist_ok=True)
    with web_served(project) as base:
        page = browser.new_page()
        browser_login(page, base)
        page.click("a >> text=Source files")
        page.click("a >> text=New source")
        page.fill("input[name=name]", "handbook")
        page.fill("textarea[name=text]", 'seeds = ["https://handbook.example/"]\nmax_depth = -1\n')
        page.click("button >> text=Check")
        assert "handbook.toml: key 'max_depth'" in page.inner_text(".source-error")
        page.fill("textarea[name=text]", 'seeds = ["https://handbook.example/"]\nmax_depth = 2\n')
        page.click("button >> text=Review the change")
        assert "+max_depth = 2" in page.inner_text("pre.diff")
        page.click("button >> text=Save")
        page.wait_for_url(re.compile(r"/admin/source-files/handbook$"))
        assert "handbook saved." in page.inner_text(".flash")
        assert (project.sources_dir / "handbook.toml").read_text() == 'seeds = ["https://handbook.example/"]\nmax_depth = 2\n'
        page.goto(base + "/admin")
        assert page.locator("a >> text=handbook").count() == 1  # a source of the crawl at once
        page.close()


def test_the_editor_refuses_new_local_seeds_and_its_test_crawl_the_installations_solr(
    project: Project, serve: Any, tmp_path: Path
) -> None:
    """Issue 91: the editor took a seed of SOLR_URL's own /select (every document, as one public
    page) and its test crawl fetched 169.254.169.254. A new loopback or link-local seed is refused
    (SEARCHCRAWL_WEB_LOCAL_SEEDS allows it); the test crawl refuses the installation's Solr (944)
    whatever the text says: as a seed the setting let in, and as a redirect's target."""
    root = tmp_path / "site"
    root.mkdir()
    site = serve(root)
    (root / "index.html").write_text('<html><head><title>home</title></head><body><a href="/to-solr">solr</a></body></html>')
    site.redirect("/to-solr", 302, f"{project.solr_url}/select?q=secret&wt=json")
    name = unique("local")
    project.source(name, source_text(site.url + "index.html", max_depth=2, extra="index_dynamic_pages = true\n"))
    project.data_dir.mkdir(parents=True, exist_ok=True)
    web, _csrf = editor_client(project)
    path = f"/admin/source-files/{name}"
    form = form_of(web.get(path).text)
    dump = f"{project.solr_url}/select?fl=url,content&q=*:*&wt=csv"
    for seed in (dump, "http://169.254.169.254/latest/meta-data/"):
        text = form["text"].replace(f'seeds = ["{site.url}index.html"]', f'seeds = ["{site.url}index.html", "{seed}"]')
        assert text != form["text"]
        refused = web.post(path, data={**form, "text": text, "action": "test"})
        assert refused.status_code == 400 and "loopback or link-local address" in refused.text, refused.text[-2000:]
    allowed = TestClient(
        create_app(web_config(project, sources_dir=project.sources_dir, local_seeds=True)), base_url="http://127.0.0.1"
    )
    login(allowed)
    text = form["text"].replace(f'seeds = ["{site.url}index.html"]', f'seeds = ["{site.url}index.html", "{dump}"]')
    tested = reported(allowed, allowed.post(path, data={**form_of(allowed.get(path).text), "text": text, "action": "test"}))
    assert tested.status_code == 200 and "Test crawl" in tested.text, tested.text[-3000:]
    said = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html.unescape(tested.text)))
    refused = f"{canonical(dump)} {project.solr_url}/select?q=secret&wt=json"  # the seed, the redirect's target
    assert f"new: 1 {site.url}index.html" in said and f"excluded: 2 {refused}" in said, said[:3000]


def test_a_test_crawl_refuses_the_web_application_that_started_it(project: Project, serve: Any, tmp_path: Path) -> None:
    """`scrapy web --port N` tells the crawls it starts where it listens (and its -s settings):
    a test crawl took the web application for 127.0.0.1:8080 and fetched its pages on port N."""
    import httpx

    from tests.web_site import PASSWORD as WEB_PASSWORD
    from tests.web_site import web_served

    root = tmp_path / "site"
    root.mkdir()
    site = serve(root)
    name = unique("self")
    with web_served(project) as base:
        (root / "index.html").write_text(
            f'<html><head><title>home</title></head><body><a href="{base}/">search</a></body></html>'
        )
        project.source(name, source_text(site.url + "index.html", max_depth=2, extra='domains = { include = ["127.0.0.1"] }\n'))
        with httpx.Client(base_url=base, timeout=300) as web:
            login(web, password=WEB_PASSWORD)  # type: ignore[arg-type]  # an httpx client, as TestClient is one
            path = f"/admin/source-files/{name}"
            started = web.post(path, data={**form_of(web.get(path).text), "action": "test"}, follow_redirects=True)
            tested = reported(web, started)  # type: ignore[arg-type]  # an httpx client, as TestClient is one
    assert tested.status_code == 200 and "Test crawl" in tested.text, tested.text[-3000:]
    said = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html.unescape(tested.text)))
    assert f"new: 1 {site.url}index.html" in said and f"excluded: 1 {base}/" in said, said[:3000]


@pytest.mark.parametrize("end", ["\r", "\x85", "\u2028", "\x0c"], ids=["lone CR", "NEL", "U+2028", "form feed"])
def test_a_text_the_guard_cannot_read_is_refused_never_saved(project: Project, end: str) -> None:
    """Issue 99: a new source whose lines end in a lone CR (``type = "files"\\r[files]\\rroots =
    [...]``) was no TOML to the editor's guard, which passed it on; the loader read the same bytes
    through universal newlines as a files source over a server folder, and the editor saved it.
    Now the editor refuses it, with the line and the character, and writes nothing."""
    project.data_dir.mkdir(parents=True, exist_ok=True)
    project.sources_dir.mkdir(parents=True, exist_ok=True)
    web, _csrf = editor_client(project)
    form = form_of(web.get("/admin/new-source").text)
    lines = ['type = "files"', "[files]", f'roots = ["{project.sources_dir.parent}"]', "[access]", "public = true"]
    for action in ("check", "review", "save"):
        refused = web.post("/admin/new-source", data={**form, "name": "server", "text": end.join(lines) + end, "action": action})
        assert refused.status_code == 400 and "line 1: " in html.unescape(refused.text), refused.text[-2000:]
    assert not list(project.sources_dir.glob("server*"))
