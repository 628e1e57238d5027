"""WebDAV sources against a real Apache httpd with mod_dav (tests/webdav_server.py), its users
signed in against the tests' LDAP directory, issue 78 point 2.

The oracle is Apache's own answer: after every crawl of a changing tree (files written, edited,
deleted, moved across folders of other rules; a Location's rule changed and Apache reloaded),
each directory user's trimmed search finds exactly the files Apache lets them GET: a nested
LDAP group, a user, a Location without a slash (which governs ``board/`` and not its sibling
``boardroom/``: Apache matches whole segments), the Directory's own rule elsewhere. An unchanged file is never read again; a change of
rules alone updates the access without a GET; `scrapy explain-access` names the rule.
"""

from __future__ import annotations

import json
import random
import shutil

import pysolr
import pytest
from sqlalchemy import select, update

from searchcrawl.access.tokens import Access
from searchcrawl.crawl.pipelines.checksum import access_update, content_of, versioned
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.store.models import documents
from tests.conftest import Project, run_scrapy, solr_docs
from tests.directory_server import READING_GROUPS, DirectoryServer
from tests.e2e.test_secure_search import directory_of_server, found_by
from tests.webdav_server import ALL_STAFF, CRAWLER, WebdavServer

SECRET = "DAV_CRAWL_PASSWORD_TEST"
USERS = ("alice", "bob", "carol")
FOLDERS = ("open", "open/deep", "finance", "private", "board", "boardroom")
WORDS = ("quay", "ledger", "tender", "pilot", "berth", "invoice", "audit", "ferry")


def webdav_source(project: Project, name: str, server: WebdavServer) -> None:
    project.source(
        name,
        f"""type = "webdav"
max_delete_share = 1.0
[webdav]
root = "{server.url}"
username = "{CRAWLER}"
password_secret = "{SECRET}"
apache_config = ["{server.config_file}"]
exclude = ["*.tmp"]
""",
    )


def folder_source(project: Project, name: str, server: WebdavServer, folder: str) -> None:
    """A source of the server's ``folder`` alone, its readers by Apache's rules."""
    project.source(
        name,
        f'type = "webdav"\n[webdav]\nroot = "{server.url}{folder}"\nusername = "{CRAWLER}"\n'
        f'password_secret = "{SECRET}"\napache_config = ["{server.config_file}"]\n',
    )


def crawl(project: Project, name: str, server: WebdavServer) -> str:
    result = run_scrapy(["crawl", name], project.env(**{SECRET: server.crawler_password}))
    assert result.returncode == 0, result.stderr[-3000:]
    assert server.crawler_password not in result.stderr + result.stdout
    return result.stderr


class Tree:
    """The server's files as the test changes them: path -> text."""

    def __init__(self, server: WebdavServer, rng: random.Random) -> None:
        self.server, self.rng = server, rng
        self.number = 0
        for _ in range(12):
            self.add()
        server.write("open/scratch.tmp", "excluded zebrafinch")

    def text(self) -> str:
        self.number += 1
        return f"zebrafinch note {self.number}: " + " ".join(self.rng.choice(WORDS) for _ in range(20))

    def add(self) -> str:
        path = f"{self.rng.choice(FOLDERS)}/file-{self.number + 1}.txt"
        self.server.write(path, self.text())
        return path

    def edit(self) -> str:
        path = self.rng.choice(self.files())
        self.server.write(path, self.text())
        return path

    def delete(self) -> str:
        path = self.rng.choice(self.files())
        self.server.remove(path)
        return path

    def move(self) -> str:
        path = self.rng.choice(self.files())
        target = f"{self.rng.choice(FOLDERS)}/moved-{self.number}-{path.rsplit('/', 1)[1]}"
        self.number += 1
        self.server.move(path, target)
        return f"{path} -> {target}"

    def files(self) -> list[str]:
        return [path for path in self.server.paths() if not path.endswith(".tmp")]

    def step(self, number: int) -> list[str]:
        kinds = [self.add, self.edit, self.delete, self.move]
        actions = [kinds[number % len(kinds)], *self.rng.choices(kinds, k=self.rng.randint(0, 2))]
        return [f"{action.__name__}: {action()}" for action in actions]


def test_each_directory_user_finds_exactly_the_files_apache_lets_them_read(
    project: Project, solr: pysolr.Solr, webdav_server: WebdavServer, directory_server: DirectoryServer
) -> None:
    rng = random.Random(782)
    tree = Tree(webdav_server, rng)
    name = "file-server"
    webdav_source(project, name, webdav_server)
    client = SolrIndex(project.solr_url, timeout=30)
    directory = directory_of_server(directory_server)
    before: dict[str, dict] = {}
    for number in range(6):
        step = tree.step(number) if number else ["first crawl"]
        crawl(project, name, webdav_server)
        docs = {doc["url"]: doc for doc in solr_docs(solr, name)}
        by_path = {doc["display_url"][len(webdav_server.url) :]: doc for doc in docs.values()}
        assert sorted(by_path) == tree.files(), (number, step)
        for path, doc in by_path.items():
            assert doc["content"].startswith("zebrafinch note") and doc["path_s"] == f"/dav/{path}"
            old = before.get(path)
            if old is not None and old["content"] == doc["content"]:
                assert old["_version_"] == doc["_version_"], (
                    number,
                    step,
                    path,
                    {k: (old.get(k), doc.get(k)) for k in set(old) | set(doc) if old.get(k) != doc.get(k)},
                )  # unchanged: not pushed again
        for user in USERS:
            oracle = {path for path in by_path if webdav_server.can_read(user, path)}
            found = {path for path, doc in by_path.items() if doc["id"] in found_by(client, directory.principals(user), name)}
            assert found == oracle, (number, step, user, sorted(found ^ oracle))
        before = by_path
    assert any(webdav_server.can_read("carol", path) for path in before)  # the board rule names her
    room = [path for path in before if path.startswith("boardroom/")]
    assert room and not any(webdav_server.can_read("carol", path) for path in room)  # /dav/board is not /dav/boardroom

    # a rule changed, and nothing else: the access is updated without a GET
    webdav_server.set_rule("private/", ["user bob", "user alice"])
    log = crawl(project, name, webdav_server)
    assert "'downloader/response_status_count/200'" not in log and "'searchcrawl/access_updates'" in log, log[-3000:]
    private = {doc["id"] for path, doc in before.items() if path.startswith("private/")}
    assert private and private <= found_by(client, directory.principals("alice"), name)

    # explain-access names the rule that decided
    url = next(doc["url"] for path, doc in before.items() if path.startswith("finance/"))
    explained = run_scrapy(["explain-access", "alice", url], project.env(**directory_server.settings()))
    assert explained.returncode == 0, explained.stderr
    assert "<Location /dav/finance/> Require ldap-group cn=finance" in explained.stdout
    assert explained.stdout.splitlines()[-1].startswith("  decision: GRANTED")


def test_a_listing_outside_the_root_or_refused_removes_nothing(
    project: Project, solr: pysolr.Solr, webdav_server: WebdavServer
) -> None:
    webdav_server.write("lone/one.txt", "zebrafinch lone")
    name = "file-server-refused"
    project.source(
        name,
        f"""type = "webdav"
max_delete_share = 1.0
[access]
public = true
[webdav]
root = "{webdav_server.url}lone/"
username = "{CRAWLER}"
password_secret = "{SECRET}"
""",
    )
    crawl(project, name, webdav_server)
    assert [doc["file_name_s"] for doc in solr_docs(solr, name)] == ["one.txt"]
    refused = run_scrapy(["crawl", name], project.env(**{SECRET: "not-the-password-42"}))
    assert refused.returncode != 0 and "refused the crawl's account (HTTP 401)" in refused.stderr
    assert "not-the-password-42" not in refused.stderr
    assert [doc["file_name_s"] for doc in solr_docs(solr, name)] == ["one.txt"]


def test_ldap_group_grants_exactly_whom_apache_answers(
    project: Project, solr: pysolr.Solr, webdav_server: WebdavServer, directory_server: DirectoryServer
) -> None:
    """``Require ldap-group`` as mod_authnz_ldap reads it by default: a posixGroup bob is in by
    memberUid, the posixGroup of his primary gidNumber (developers) and a posixGroup inside a
    groupOfNames give him 401, a groupOfNames inside a groupOfNames 200; his trimmed search finds
    the same files, and explain-access cites no memberUid path."""
    folders = {name: directory_server.group_dn(name) for name in ("inspectors", "auditors", "reviewers", "developers")}
    name = "file-server-groups"
    try:
        with directory_server.added_groups(READING_GROUPS):
            for folder, dn in folders.items():
                webdav_server.write(f"groups/{folder}/{folder}.txt", f"zebrafinch {folder}")
                webdav_server.set_rule(f"groups/{folder}/", [f"ldap-group {dn}"])
            folder_source(project, name, webdav_server, "groups/")
            crawl(project, name, webdav_server)
            client, directory = SolrIndex(project.solr_url, timeout=30), directory_of_server(directory_server)
            by_path = {doc["display_url"][len(webdav_server.url) :]: doc for doc in solr_docs(solr, name)}
            assert sorted(by_path) == sorted(f"groups/{folder}/{folder}.txt" for folder in folders)
            for user in USERS:
                oracle = {path for path in by_path if webdav_server.can_read(user, path)}
                found = {path for path, doc in by_path.items() if doc["id"] in found_by(client, directory.principals(user), name)}
                assert found == oracle, (user, sorted(found ^ oracle))
            assert {path for path in by_path if webdav_server.can_read("bob", path)} == {"groups/reviewers/reviewers.txt"}
            url = by_path["groups/inspectors/inspectors.txt"]["url"]
            explained = run_scrapy(["explain-access", "bob", url], project.env(**directory_server.settings()))
            assert explained.returncode == 0, explained.stderr
            assert explained.stdout.splitlines()[-1].startswith("  decision: REFUSED"), explained.stdout
            assert f"  member:{folders['inspectors']}  <-" not in explained.stdout  # bob's memberUid is no member: of it
    finally:
        for folder in folders:
            if f"groups/{folder}/" in webdav_server.rules:
                webdav_server.set_rule(f"groups/{folder}/", None)
        shutil.rmtree(webdav_server.files / "groups", ignore_errors=True)


def as_indexed_before_member_tokens(project: Project, solr: pysolr.Solr, name: str) -> None:
    """The source's documents as a searchcrawl older than the member: token left them: each
    ``Require ldap-group <DN>`` indexed as ``group:<DN>`` (its row's access and checksum, Solr's
    access fields)."""
    database = project.table().database
    with database.engine.begin() as connection:
        rows = connection.execute(
            select(documents.c.id, documents.c.url, documents.c.checksum, documents.c.access).where(documents.c.source == name)
        ).all()
        updates = []
        for row in rows:
            old = Access.from_data(json.loads(row.access.replace('"member:', '"group:')))
            checksum = versioned(content_of(row.checksum), old)
            connection.execute(
                update(documents).where(documents.c.id == row.id).values(checksum=checksum, access=json.dumps(old.to_data()))
            )
            updates.append(access_update(name, row.url, checksum, old))
    solr.add(updates, commit=True)


def test_documents_indexed_with_group_tokens_before_the_member_token_take_it_at_the_next_crawl(
    project: Project, solr: pysolr.Solr, webdav_server: WebdavServer, directory_server: DirectoryServer
) -> None:
    """Issue 91 review: an index made before ``ldap-group`` became ``member:<DN>`` holds the wider
    ``group:<DN>`` (bob, in inspectors by memberUid alone, finds its file, which Apache refuses
    him). The next crawl of the source reads the rules with the listing and updates the access in
    Solr, without reading the files again: no other step after upgrading."""
    dn = directory_server.group_dn("inspectors")
    name = "file-server-upgrade"
    try:
        with directory_server.added_groups({"inspectors": READING_GROUPS["inspectors"]}):
            webdav_server.write("upgrade/inspectors/report.txt", "zebrafinch inspectors")
            webdav_server.set_rule("upgrade/inspectors/", [f"ldap-group {dn}"])
            folder_source(project, name, webdav_server, "upgrade/")
            crawl(project, name, webdav_server)
            client, directory = SolrIndex(project.solr_url, timeout=30), directory_of_server(directory_server)
            (doc,) = solr_docs(solr, name)
            assert not webdav_server.can_read("bob", "upgrade/inspectors/report.txt")
            assert doc["id"] not in found_by(client, directory.principals("bob"), name)

            as_indexed_before_member_tokens(project, solr, name)
            assert doc["id"] in found_by(client, directory.principals("bob"), name)  # the older index's wider grant

            log = crawl(project, name, webdav_server)
            assert "'downloader/response_status_count/200'" not in log and "'searchcrawl/access_updates'" in log, log[-3000:]
            assert doc["id"] not in found_by(client, directory.principals("bob"), name)
            row = project.table().get(name, doc["url"])
            assert row is not None and f'"member:{dn.lower()}' in row["access"] and '"group:' not in row["access"], row
    finally:
        if "upgrade/inspectors/" in webdav_server.rules:
            webdav_server.set_rule("upgrade/inspectors/", None)
        shutil.rmtree(webdav_server.files / "upgrade", ignore_errors=True)


@pytest.fixture(autouse=True)
def _rules_as_they_were(webdav_server: WebdavServer) -> None:
    """Each test starts from the server's first rules."""
    if webdav_server.rules.get("private/") != ["user bob"]:
        webdav_server.set_rule("private/", ["user bob"])
    assert webdav_server.rules["board"] == [f"ldap-group {ALL_STAFF}", "user carol"]
