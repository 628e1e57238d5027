"""Who may read each document, through real crawls into the real Solr (issue 55).

A files source: a file only a group may read gets gid tokens, a folder 750 adds a level, a
``setfacl`` between two crawls re-indexes the file's access fields without reading it again (its
content changed on disk with the same size and time: Solr still holds the old text, its
``_version_`` moved, the delta says changed), and an ACL that cannot be read gives 927 and takes
the document out of the index. A web site behind basic credentials, whose documents' access comes
from the source's [access] rules: a rule changed between two crawls re-indexes the pages it covers
on the site's 304s, and a page no rule covers is never indexed (927).
"""

from __future__ import annotations

import base64
import json
import os
import posixpath
import subprocess
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest

from searchcrawl.access.decision import Principal, Principals, decide
from searchcrawl.access.explanation import access_of_fields
from searchcrawl.access.tokens import Access
from tests.access.test_posix import READERS, kernel_reads, linked_tree, principals_of
from tests.conftest import Project, run_scrapy, solr_docs

PASSWORD = "pw-access-Zq81"  # noqa: S105 - the test's own secret


def crawl(project: Project, name: str, **env: str) -> dict[str, list[str]]:
    result = run_scrapy(["crawl", name], project.env(**env))
    assert result.returncode == 0, result.stderr[-3000:]
    report = project.scrapy("report", name, "--json")
    urls: dict[str, list[str]] = json.loads(report.stdout)["urls"]
    return urls


def by_url(solr, name: str) -> dict[str, dict]:
    return {doc["url"]: doc for doc in solr_docs(solr, name)}


def chowned(path: Path, mode: int, uid: int, gid: int) -> Path:
    os.chown(path, uid, gid)
    os.chmod(path, mode)
    return path


def agent_source(agent: str, root: Path, exclude: str, more: str = "") -> str:
    """A files source read by one of the tests' files agents (tests/custom_agents.py)."""
    return f'type = "agent"\nagent = "{agent}"\n{more}[agent_options]\nroots = ["{root}"]\nexclude = ["{exclude}"]\n'


def written(path: Path, text: str, mode: int, uid: int = 1001, gid: int = 2001) -> Path:
    path.write_text(text)
    return chowned(path, mode, uid, gid)


def test_a_file_share_carries_its_posix_access_and_follows_its_changes(project: Project, solr, tmp_path: Path) -> None:
    root = tmp_path / "share"
    root.mkdir()
    chowned(root, 0o755, 0, 0)
    (root / "team").mkdir()
    (root / "hr").mkdir()
    chowned(root / "team", 0o755, 0, 0)
    chowned(root / "hr", 0o750, 0, 2002)  # root and group 2002 may pass: one more level
    written(root / "open.txt", "a memo everyone may read", 0o644)
    written(root / "team" / "finance.txt", "the finance forecast, old text", 0o040)  # its group only: the owner is refused
    written(root / "hr" / "pay.txt", "the salary scale", 0o644)
    written(root / "gone.txt", "a file whose ACL will not read", 0o644)
    name = "share-access"
    project.source(name, agent_source("broken_acl_files", root, "*.broken-acl", "max_delete_share = 1.0\n"))
    url = {path: (root / path).as_uri() for path in ("open.txt", "team/finance.txt", "hr/pay.txt", "gone.txt")}

    report = crawl(project, name)
    assert sorted(report["new"]) == sorted(url.values())
    docs = by_url(solr, name)
    opened, finance, pay = docs[url["open.txt"]], docs[url["team/finance.txt"]], docs[url["hr/pay.txt"]]
    assert opened["access_allow"] == ["gid:2001", "public", "uid:1001"] and "access_deny" not in opened
    assert finance["access_allow"] == ["gid:2001"] and finance["access_deny"] == ["uid:1001"]
    assert finance["access_allow_1"] == finance["access_allow_2"] == finance["access_allow_3"] == ["public"]
    assert pay["access_allow"] == ["gid:2001", "public", "uid:1001"] and pay["access_allow_1"] == ["gid:2002", "uid:0"]
    assert pay["access_allow_2"] == ["public"]
    # the document table keeps the access with where each token came from
    row = project.table().get(name, url["team/finance.txt"])
    assert row is not None
    access = Access.from_data(json.loads(row["access"]))
    assert [grant.origin for grant in access.levels[0].allow] == [
        f"POSIX ACL of {root / 'team' / 'finance.txt'}: owning group (gid 2001) r"
    ]

    # The ACL changes, and so does the content, on disk, with the same size and modification
    # time: the token's inode change time, which nobody sets, differs, so the file is read again,
    # with its new access (size and time alone once hid the new text: the old one stayed indexed).
    stat = (root / "team" / "finance.txt").stat()
    (root / "team" / "finance.txt").write_text("the finance forecast, NEW text")
    os.utime(root / "team" / "finance.txt", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    subprocess.run(["setfacl", "-m", "g:3000:r", str(root / "team" / "finance.txt")], check=True)
    (root / "gone.txt.broken-acl").write_text("")
    report = crawl(project, name)
    assert report["changed"] == [url["team/finance.txt"]], report
    assert sorted(report["not_modified"]) == sorted([url["open.txt"], url["hr/pay.txt"]]), report
    assert report["deleted"] == [url["gone.txt"]], report
    now = by_url(solr, name)
    assert url["gone.txt"] not in now  # its ACL cannot be read: out of the index, never public
    updated = now[url["team/finance.txt"]]
    assert updated["access_allow"] == ["gid:2001", "gid:3000"] and updated["access_deny"] == ["uid:1001"]
    assert updated["_version_"] != finance["_version_"]
    assert "NEW text" in updated["content"]  # read again
    assert updated["title"] == finance["title"] and updated["size_l"] == finance["size_l"]
    assert now[url["open.txt"]]["_version_"] == opened["_version_"]
    assert now[url["hr/pay.txt"]]["_version_"] == pay["_version_"]
    gone = project.table().get(name, url["gone.txt"])
    assert gone is not None and gone["status"] == 927 and "cannot be read" in gone["reason"]
    # the new text is found, under the new access only
    assert [doc["url"] for doc in solr.search('content:"NEW text"', fq=f'source:"{name}" AND access_allow:"gid:3000"')] == [
        url["team/finance.txt"]
    ]

    # nothing changed since: all answered not modified, nothing pushed
    report = crawl(project, name)
    assert not report["changed"] and not report["new"] and url["team/finance.txt"] in report["not_modified"], report
    assert by_url(solr, name)[url["team/finance.txt"]]["_version_"] == updated["_version_"]


REDIRECT = "redirect to "  # a page so written answers 302 to the rest of it


class ConditionalSite:
    """A site on 127.0.0.1 behind basic credentials whose pages have ETags and answer a matching
    If-None-Match with 304; ``served`` logs (path, status) of every answer."""

    def __init__(self, pages: dict[str, str]) -> None:
        self.pages = pages
        self.served: list[tuple[str, int]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                expected = "Basic " + base64.b64encode(f"crawler:{PASSWORD}".encode()).decode()
                body = site.pages.get(self.path)
                etag = f'"{abs(hash(body))}"'
                if self.headers.get("Authorization") != expected:
                    status, body = 401, "log in"
                elif body is None:
                    status, body = 404, ""
                elif self.headers.get("If-None-Match") == etag:
                    status, body = 304, ""
                elif body.startswith(REDIRECT):
                    status = 302
                else:
                    status = 200
                site.served.append((self.path, status))
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html")
                if status in (200, 304):
                    self.send_header("ETag", etag)
                if status == 401:
                    self.send_header("WWW-Authenticate", 'Basic realm="intranet"')
                if status == 302:
                    self.send_header("Location", body[len(REDIRECT) :])
                    data = b""
                if status != 304:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if status != 304:
                    self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def page(title: str, links: str = "") -> str:
    return f"<html><head><title>{title}</title></head><body><p>The text of {title}.</p>{links}</body></html>"


@pytest.fixture
def site():
    links = '<a href="/hr/pay.html">pay</a> <a href="/board/q1.html">q1</a> <a href="/misc.html">misc</a>'
    started = ConditionalSite(
        {
            "/index.html": page("Home", links),
            "/hr/pay.html": page("Pay scale"),
            "/board/q1.html": page("Board minutes"),
            "/misc.html": page("Misc"),
        }
    )
    yield started
    started.stop()


def web_source(site: ConditionalSite, access: str) -> str:
    return (
        f'seeds = ["{site.url}index.html"]\nobey_robots = false\nmax_delete_share = 1.0\n'
        f'[[auth]]\norigins = ["{site.url.rstrip("/")}"]\ntype = "basic"\nuser = "crawler"\nsecret = "ACCESS_SECRET"\n'
        f"{access}"
    )


def test_a_site_behind_credentials_gets_its_access_from_the_sources_rules(project: Project, solr, site) -> None:
    name = f"intranet-{uuid.uuid4().hex[:6]}"
    rules = '[[access.rules]]\npaths = ["/hr/"]\nallow = ["group:hr"]\n[[access.rules]]\npatterns = ["/board/"]\n'
    project.source(name, web_source(site, f'[access]\nallow = ["group:staff"]\n{rules}allow = ["group:board"]\n'))
    url = {path: f"{site.url}{path}" for path in ("index.html", "hr/pay.html", "board/q1.html", "misc.html")}
    report = crawl(project, name, ACCESS_SECRET=PASSWORD)
    assert sorted(report["new"]) == sorted(url.values())
    docs = by_url(solr, name)
    assert {path: docs[link]["access_allow"] for path, link in url.items()} == {
        "index.html": ["group:staff"],
        "hr/pay.html": ["group:hr"],
        "board/q1.html": ["group:board"],
        "misc.html": ["group:staff"],
    }
    assert all(doc["access_allow_1"] == ["public"] and "access_deny" not in doc for doc in docs.values())

    # the board's rule changes: its page is re-indexed on the site's 304, its content not sent again
    site.served.clear()
    changed = rules + 'allow = ["group:board", "user:ceo"]\ndeny = ["user:intern"]\n'
    project.source(name, web_source(site, f'[access]\nallow = ["group:staff"]\n{changed}'))
    report = crawl(project, name, ACCESS_SECRET=PASSWORD)
    assert report["changed"] == [url["board/q1.html"]], report
    assert sorted(report["not_modified"]) == sorted(link for path, link in url.items() if path != "board/q1.html")
    assert ("/board/q1.html", 304) in site.served and not [s for s in site.served if s[1] == 200], site.served
    now = by_url(solr, name)
    board = now[url["board/q1.html"]]
    assert board["access_allow"] == ["group:board", "user:ceo"] and board["access_deny"] == ["user:intern"]
    assert board["_version_"] != docs[url["board/q1.html"]]["_version_"]
    assert board["content"] == docs[url["board/q1.html"]]["content"] and board["title"] == "Board minutes"
    assert now[url["hr/pay.html"]]["_version_"] == docs[url["hr/pay.html"]]["_version_"]

    # no source-wide allow any more: the pages no rule covers leave the index (927), on 304s too
    project.source(name, web_source(site, f"[access]\n{changed}"))
    report = crawl(project, name, ACCESS_SECRET=PASSWORD)
    assert sorted(report["deleted"]) == sorted([url["index.html"], url["misc.html"]]), json.dumps(report)
    assert sorted(by_url(solr, name)) == sorted([url["hr/pay.html"], url["board/q1.html"]])
    row = project.table().get(name, url["misc.html"])
    assert row is not None and row["status"] == 927 and "no rule of the source's [access] table covers it" in row["reason"]


def test_a_site_behind_credentials_without_access_refuses_to_start(project: Project, site) -> None:
    name = f"noaccess-{uuid.uuid4().hex[:6]}"
    project.source(name, web_source(site, ""))
    result = project.scrapy("crawl", name, ACCESS_SECRET=PASSWORD)
    assert result.returncode != 0
    assert "[[auth]] fetches its documents with credentials, so they are not public: add an [access] table" in result.stderr
    assert not site.served  # nothing was fetched


class ResolvingPages(dict[str, str]):
    """A server's pages as nginx on a case-insensitive file system finds them: the path
    percent-decoded (``%2F`` too), ``\\`` as ``/``, dot segments and repeated slashes resolved,
    without case, the query ignored."""

    def get(self, path: str, default: str | None = None) -> str | None:  # type: ignore[override]
        path = unquote(path.split("?", 1)[0]).replace("\\", "/").lower()
        resolved = posixpath.normpath("/" + path.lstrip("/"))
        return super().get(resolved, default)


def test_a_restricted_page_linked_under_a_looser_rules_path_keeps_its_restriction(project: Project, solr) -> None:
    """Links a public page may hold (a hostile page author): each one reaches the HR page on this
    server, while as written it matches the public rule or the source-wide allow."""
    tricks = [
        "/public/..%2Fhr/pay.html",
        "/public/..%2F/hr/pay.html",
        "/HR/pay.html",
        "/public/%2e%2e%5Chr/pay.html",
        "/hr/pay.html?x=1",
    ]
    links = " ".join(f'<a href="{link}">pay</a>' for link in tricks)
    site = ConditionalSite(ResolvingPages({"/public/index.html": page("Home", links), "/hr/pay.html": page("Pay scale")}))
    try:
        name = f"tricks-{uuid.uuid4().hex[:6]}"
        rules = '[[access.rules]]\npaths = ["/public/"]\nallow = ["public"]\n[[access.rules]]\npaths = ["/hr/"]\nallow = ["group:hr"]\n'
        source = web_source(site, f'[access]\nallow = ["group:staff"]\n{rules}')
        project.source(name, source.replace(f"{site.url}index.html", f"{site.url}public/index.html"))
        report = crawl(project, name, ACCESS_SECRET=PASSWORD)
        served = {path for path, status in site.served if status == 200 and "pay" in path}
        assert len(served) == 4, site.served  # each link reached the server's HR page
        pay = [doc for doc in solr_docs(solr, name) if doc["title"] == "Pay scale"]
        # every trick is indexed, or a duplicate of a copy with the same readers (never merged
        # into one with other readers: the checksum holds them)
        assert len({doc["url"] for doc in pay} | set(report["duplicate"])) == 4, report
        staff = Principals.of("eve", [Principal("group:staff", "test")])
        hr = Principals.of("ann", [Principal("group:staff", "test"), Principal("group:hr", "test")])
        for doc in pay:
            held = access_of_fields(doc)
            assert held is not None and not decide(held, staff).granted, doc["url"]
            assert not decide(held, Principals.anonymous()).granted and decide(held, hr).granted, doc["url"]
    finally:
        site.stop()


def test_a_redirect_from_a_public_path_to_a_restricted_one_indexes_the_target_with_its_access(project: Project, solr) -> None:
    """The document is the redirect's target, under the target's URL: the rules see that URL (the
    response's), never the public one that led to it."""
    links = '<a href="/public/go">pay</a> <a href="/public/back">home</a>'
    pages = {
        "/public/index.html": page("Home", links),
        "/public/go": REDIRECT + "/hr/pay.html",
        "/hr/pay.html": page("Pay scale"),
        "/hr/back": page("Back"),
        "/public/back": REDIRECT + "/hr/back",
    }
    site = ConditionalSite(pages)
    try:
        name = f"redirects-{uuid.uuid4().hex[:6]}"
        rules = '[[access.rules]]\npaths = ["/public/"]\nallow = ["public"]\n[[access.rules]]\npaths = ["/hr/"]\nallow = ["group:hr"]\n'
        source = web_source(site, f'[access]\nallow = ["group:staff"]\n{rules}')
        project.source(name, source.replace(f"{site.url}index.html", f"{site.url}public/index.html"))
        crawl(project, name, ACCESS_SECRET=PASSWORD)
        assert ("/public/go", 302) in site.served and ("/hr/pay.html", 200) in site.served, site.served
        docs = by_url(solr, name)
        assert sorted(docs) == sorted(f"{site.url}{path}" for path in ("public/index.html", "hr/pay.html", "hr/back"))
        assert docs[f"{site.url}hr/pay.html"]["access_allow"] == ["group:hr"]
        assert docs[f"{site.url}hr/back"]["access_allow"] == ["group:hr"]
    finally:
        site.stop()


def test_a_file_made_private_and_rewritten_after_the_listing_is_indexed_with_the_access_it_had_when_read(
    project: Project, solr, tmp_path: Path
) -> None:
    """Issue 72: a file listed as 0644, then made 0600 and rewritten before its turn, was indexed
    with its new text and its old public access. The race is made certain: the test agent
    changes the file between the listing and the fetch. Indexed with what was read: the new
    text, readable by its owner only."""
    root = tmp_path / "share"
    root.mkdir()
    chowned(root, 0o755, 0, 0)
    memo = written(root / "memo.txt", "the public memo", 0o644)
    (root / "memo.txt.race").write_text("the secret memo, for its owner alone")
    written(root / "open.txt", "a memo everyone may read", 0o644)
    name = "share-race"
    project.source(name, agent_source("racing_files", root, "*.race"))
    report = crawl(project, name)
    assert sorted(report["new"]) == sorted([memo.as_uri(), (root / "open.txt").as_uri()]), report
    indexed = by_url(solr, name)[memo.as_uri()]
    assert "secret memo" in indexed["content"]
    assert indexed["access_allow"] == ["uid:1001"] and "access_deny" not in indexed
    assert not decide(access_of_fields(indexed), Principals.anonymous()).granted  # type: ignore[arg-type]
    assert by_url(solr, name)[(root / "open.txt").as_uri()]["access_allow"] == ["gid:2001", "public", "uid:1001"]
    # the next crawls: the listing says what the fetch read; the size and time the first crawl
    # indexed were the listing's (before the change): corrected once, the access as it was
    crawl(project, name)
    again = by_url(solr, name)[memo.as_uri()]
    assert again["access_allow"] == ["uid:1001"] and again["content"] == indexed["content"] and again["size_l"] == 36
    report = crawl(project, name)
    assert sorted(report["not_modified"]) == sorted([memo.as_uri(), (root / "open.txt").as_uri()]), report
    assert by_url(solr, name)[memo.as_uri()]["_version_"] == again["_version_"]


def test_a_followed_link_into_a_folder_nobody_may_enter_is_indexed_for_no_one(project: Project, solr, passable: Path) -> None:
    """Issue 72: with follow_links, a link in an open folder to a file inside a 0700 folder was
    indexed as public. Every document indexed admits exactly the readers the kernel lets read
    its path (``setpriv``), links included; a visitor finds the open file alone."""
    root = passable / "share"
    links = linked_tree(root)
    name = "share-links"
    project.source(name, f'type = "files"\n[files]\nroots = ["{root}"]\nfollow_links = true\n')
    crawl(project, name)
    docs = by_url(solr, name)
    assert links[2].as_uri() in docs  # a link bob's group may pass: other readers than its target's
    for url, doc in docs.items():
        held = access_of_fields(doc)
        assert held is not None, url
        path = Path(unquote(url.removeprefix("file://")))
        for uid in READERS:
            assert decide(held, principals_of(uid)).granted == kernel_reads(uid, path), (url, uid, doc)
    visitor = {url for url, doc in docs.items() if decide(access_of_fields(doc), Principals.anonymous()).granted}  # type: ignore[arg-type]
    assert visitor == {(root / "open" / "doc.txt").as_uri()}


def granted_to_a_reader_the_kernel_refuses(docs: dict[str, dict], secret: str, source: Path) -> list[tuple[str, int]]:
    """The (url, uid) pairs whose document holds ``secret`` (the text of the file ``source``)
    while its access admits a reader the kernel refuses ``source`` to."""
    leaks = []
    for url, doc in docs.items():
        if secret not in doc.get("content", ""):
            continue
        held = access_of_fields(doc)
        for uid in READERS:
            if held is not None and decide(held, principals_of(uid)).granted and not kernel_reads(uid, source):
                leaks.append((url, uid))
    return leaks


def test_review_a_link_repointed_between_the_listing_and_the_fetch_cannot_make_a_locked_file_public(
    project: Project, solr, passable: Path
) -> None:
    """Review of issue 72: the ETag indexed is the listing's token, the content the fetch's. A
    local user's link to their open file, repointed into a folder only root may enter while it is
    fetched and back after, gets the locked file's text indexed (rightly, for root alone) under
    the open file's token: the next crawl finds that token unchanged (304) and puts the open
    file's access, public, on the locked text."""
    root = passable / "share"
    for folder, mode in (("", 0o755), ("open", 0o777), ("locked", 0o700)):
        (root / folder).mkdir(exist_ok=True)
        chowned(root / folder, mode, 0, 0)
    secret = written(root / "locked" / "pay.txt", "the salary scale of the board", 0o644, 0, 0)
    written(root / "open" / "mine.txt", "my open notes", 0o644, 1002, 2001)
    link = root / "open" / "notes.txt"
    link.symlink_to("mine.txt")
    os.lchown(link, 1002, 2001)
    (root / "open" / "notes.txt.swap").write_text(str(secret))
    name = "share-swap"
    project.source(name, agent_source("swapping_files", root, "*.swap", "max_delete_share = 1.0\n") + "follow_links = true\n")
    crawl(project, name)
    docs = by_url(solr, name)
    assert "salary" in docs[link.as_uri()]["content"]  # read through the link while it pointed there
    assert granted_to_a_reader_the_kernel_refuses(docs, "salary", secret) == []  # so far, root alone
    crawl(project, name)  # the link is back on mine.txt: its token, the one indexed
    docs = by_url(solr, name)
    assert granted_to_a_reader_the_kernel_refuses(docs, "salary", secret) == [], docs[link.as_uri()]


def test_review_another_file_with_the_same_size_and_time_at_a_path_is_read_again(project: Project, solr, passable: Path) -> None:
    """Review of issue 72: the token is the size and time alone, and both are the owner's to set
    (utime). A local user's link to another user's 0600 file (in a folder they may pass: they
    may stat it), then to a public file of their own given its size and time: the crawl finds
    the token unchanged (304) and puts the public access on the private text."""
    root = passable / "share"
    (root / "open").mkdir(parents=True)
    chowned(root, 0o755, 0, 0)
    chowned(root / "open", 0o777, 0, 0)
    private = written(root / "open" / "diary.txt", "alice private diary entry", 0o600, 1001, 2000)
    link = root / "open" / "notes.txt"
    link.symlink_to("diary.txt")
    name = "share-forged"
    project.source(name, f'type = "files"\nmax_delete_share = 1.0\n[files]\nroots = ["{root}"]\nfollow_links = true\n')
    crawl(project, name)
    docs = by_url(solr, name)
    assert "diary" in docs[link.as_uri()]["content"]
    assert granted_to_a_reader_the_kernel_refuses(docs, "diary", private) == []
    # user 1002 stats the diary through the folder they may pass, and forges their own file
    info = os.stat(private)
    forged = written(root / "open" / "forged.txt", "x" * info.st_size, 0o644, 1002, 2001)
    os.utime(forged, ns=(info.st_atime_ns, info.st_mtime_ns))
    (root / "open" / "notes.tmp").symlink_to("forged.txt")
    (root / "open" / "notes.tmp").rename(link)
    crawl(project, name)
    docs = by_url(solr, name)
    assert granted_to_a_reader_the_kernel_refuses(docs, "diary", private) == [], docs[link.as_uri()]
