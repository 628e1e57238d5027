"""CMIS sources against a real repository: Apache Chemistry's OpenCMIS InMemory server
(tests/cmis_server.py), issue 78 point 3.

The oracle is the repository's own answer: after every crawl of a changing repository
(documents added, rewritten, deleted, moved between folders; ACLs restricted to some users and
opened to all), each user's trimmed search finds exactly the documents the repository lets them
read; an unchanged document is not read again; an ACL change alone updates the access without
reading the content; `scrapy explain-access` names the ACL entry.
"""

from __future__ import annotations

import random

import pysolr

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.index.solr_client import SolrIndex
from tests.cmis_server import CRAWLER, CmisRepository
from tests.conftest import Project, run_scrapy, solr_docs
from tests.directory_server import DirectoryServer
from tests.e2e.test_secure_search import found_by

SECRET = "CMIS_CRAWL_PASSWORD_TEST"
USERS = ("alice", "bob", "carol")
WORDS = ("quay", "ledger", "tender", "pilot", "berth", "invoice", "audit", "ferry")


def principals(user: str) -> Principals:
    return Principals.of(user, [Principal(f"user:{user}", "test")])


class Repository:
    """The repository as the test changes it: object id -> (folder, name, text)."""

    def __init__(self, cmis: CmisRepository, rng: random.Random, top: str) -> None:
        self.cmis, self.rng, self.top = cmis, rng, top
        self.folders = {top: cmis.folder(top)}
        for name in ("projects", "board", "projects/old"):
            self.folders[f"{top}/{name}"] = cmis.folder(f"{top}/{name}")
        self.documents: dict[str, tuple[str, str, str]] = {}
        self.number = self.steps = 0
        for _ in range(10):
            self.add()

    def text(self) -> str:
        self.number += 1
        return f"zebrafinch memo {self.number}: " + " ".join(self.rng.choice(WORDS) for _ in range(20))

    def add(self) -> str:
        folder = self.rng.choice(sorted(self.folders))
        name = f"memo-{self.number + 1}.txt"
        text = self.text()
        object_id = self.cmis.document(folder, name, text)
        self.documents[object_id] = (folder, name, text)
        if self.rng.random() < 0.5:
            self.cmis.restrict(object_id, self.rng.sample(USERS, self.rng.randint(0, 2)))
        return name

    def rewrite(self) -> str:
        object_id = self.rng.choice(sorted(self.documents))
        folder, name, _ = self.documents[object_id]
        text = self.text()
        self.cmis.write(object_id, text)
        self.documents[object_id] = (folder, name, text)
        return name

    def delete(self) -> str:
        object_id = self.rng.choice(sorted(self.documents))
        self.cmis.delete(object_id)
        return self.documents.pop(object_id)[1]

    def move(self) -> str:
        object_id = self.rng.choice(sorted(self.documents))
        folder, name, text = self.documents[object_id]
        target = self.rng.choice([other for other in sorted(self.folders) if other != folder])
        self.cmis.move(object_id, self.folders[folder], self.folders[target])
        self.documents[object_id] = (target, name, text)
        return f"{name} -> {target}"

    def regrant(self) -> str:
        object_id = self.rng.choice(sorted(self.documents))
        if self.rng.random() < 0.3:
            self.cmis.open_to_all(object_id)
            return f"{self.documents[object_id][1]}: anyone"
        readers = self.rng.sample(USERS, self.rng.randint(0, 2))
        self.cmis.restrict(object_id, readers)
        return f"{self.documents[object_id][1]}: {readers}"

    def step(self) -> list[str]:
        kinds = [self.add, self.rewrite, self.delete, self.move, self.regrant]
        actions = [kinds[self.steps % len(kinds)], *self.rng.choices(kinds, k=self.rng.randint(0, 2))]
        self.steps += 1
        return [f"{action.__name__}: {action()}" for action in actions]


def crawl(project: Project, name: str) -> str:
    result = run_scrapy(["crawl", name], project.env(**{SECRET: "crawler-cmis-password"}))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "crawler-cmis-password" not in result.stderr + result.stdout
    return result.stderr


def test_each_user_finds_exactly_what_the_repository_lets_them_read(
    project: Project, solr: pysolr.Solr, cmis_repository: CmisRepository, directory_server: DirectoryServer
) -> None:
    rng = random.Random(783)
    repository = Repository(cmis_repository, rng, "/harbour")
    name = "dms"
    project.source(
        name,
        f"""type = "cmis"
max_delete_share = 1.0
[cmis]
url = "{cmis_repository.url}"
folder = "/harbour"
username = "{CRAWLER}"
password_secret = "{SECRET}"
anyone_token = "public"
exclude = ["projects/old/**"]
""",
    )
    client = SolrIndex(project.solr_url, timeout=30)
    before: dict[str, dict] = {}
    for number in range(6):
        step = repository.step() if number else ["first crawl"]
        crawl(project, name)
        docs = {doc["url"].rsplit("/", 1)[1]: doc for doc in solr_docs(solr, name)}
        expected = {oid for oid, (folder, _, _) in repository.documents.items() if not folder.startswith("/harbour/projects/old")}
        assert set(docs) == expected, (number, step)
        for object_id, doc in docs.items():
            folder, file_name, text = repository.documents[object_id]
            assert doc["path_s"] == f"{folder}/{file_name}" and doc["content"] == text, (number, step)
            old = before.get(object_id)
            if old is not None and old["content"] == doc["content"] and old["path_s"] == doc["path_s"]:
                same_access = (old.get("access_allow"), old.get("access_deny")) == (
                    doc.get("access_allow"),
                    doc.get("access_deny"),
                )
                if same_access:
                    assert old["_version_"] == doc["_version_"], (number, step, object_id)  # unchanged: not pushed again
        for user in USERS:
            oracle = {object_id for object_id in docs if cmis_repository.can_read(user, object_id)}
            found = {object_id for object_id, doc in docs.items() if doc["id"] in found_by(client, principals(user), name)}
            assert found == oracle, (number, step, user, sorted(found ^ oracle))
        before = docs

    # an ACL changed, and nothing else: the access is updated without reading the content
    object_id = sorted(before)[0]
    cmis_repository.restrict(object_id, ["carol"])
    log = crawl(project, name)
    assert "'downloader/response_status_count/200'" not in log and "'searchcrawl/access_updates'" in log, log[-3000:]
    assert before[object_id]["id"] in found_by(client, principals("carol"), name)
    explained = run_scrapy(["explain-access", "carol", before[object_id]["url"]], project.env())
    assert "CMIS ACL of object" in explained.stdout or explained.returncode != 0
