"""Sources of other types than web sites go through the crawl's machinery: an agent of the tests'
own (tests/custom_agents.py: a JSON file the test rewrites) is crawled again and again while a
seeded generator adds, changes and deletes its documents, and after every crawl Solr holds
exactly the repository (title and version), documents whose token did not change keep their
Solr ``_version_``, and the delta report names exactly what entered, changed and left. One crawl
is killed with SIGKILL while it fetches and resumed by the next. A listing that fails part-way
removes nothing; an incremental agent is asked only for what changed and which are gone."""

from __future__ import annotations

import json
import random
import signal
import time
from pathlib import Path

import pysolr
import pytest
from sqlalchemy import text

from searchcrawl.store.deltas import run_report
from searchcrawl.store.runs import Runs
from tests.conftest import CORPORA, Project, solr_docs, unpack


class Repository:
    """The oracle: the documents the JSON file holds, by key."""

    def __init__(self, path: Path, rng: random.Random) -> None:
        self.path, self.rng = path, rng
        self.documents: dict[str, dict] = {}
        self.next_key = 0
        for _ in range(30):
            self.add()
        self.write()

    def add(self) -> str:
        key = f"doc-{self.next_key:03d}"
        self.next_key += 1
        self.documents[key] = {"title": f"Title {key}", "body": self.body(key, 1), "version": 1}
        return key

    def body(self, key: str, version: int) -> str:
        words = " ".join(self.rng.choice(["alpha", "beta", "gamma", "delta", "omega"]) for _ in range(8))
        return f"<html><body><p>{key} version {version}: {words}</p></body></html>"

    def mutate(self) -> dict[str, set[str]]:
        """A seeded step: what is new, changed and deleted after it."""
        new = {self.add() for _ in range(self.rng.randint(0, 4))}
        keys = sorted(set(self.documents) - new)
        changed = set(self.rng.sample(keys, self.rng.randint(0, 5)))
        for key in changed:
            document = self.documents[key]
            document["version"] += 1
            document["title"] = f"Title {key} v{document['version']}"
            document["body"] = self.body(key, document["version"])
        deleted = set(self.rng.sample(sorted(set(keys) - changed), self.rng.randint(0, 3)))
        for key in deleted:
            del self.documents[key]
        self.write()
        return {"new": new, "changed": changed, "deleted": deleted}

    def write(self) -> None:
        self.path.write_text(json.dumps(self.documents), encoding="utf-8")

    def fetched(self) -> list[str]:
        log = Path(f"{self.path}.fetched")
        return log.read_text(encoding="utf-8").split() if log.exists() else []


def agent_source(project: Project, name: str, repository: Path, agent: str = "json_repository", **options: object) -> None:
    table = "".join(f"{key} = {json.dumps(value)}\n" for key, value in options.items())
    project.source(
        name,
        f'type = "agent"\nagent = "{agent}"\nmax_delete_share = 1.0\n'
        f'attributes = {{ owner = "owner" }}\n[access]\npublic = true\n[agent_options]\npath = "{repository}"\n{table}',
    )


def indexed(solr: pysolr.Solr, name: str) -> dict[str, tuple[str, int, int]]:
    """key -> (title, version, Solr _version_)"""
    prefix = f"repo://{name}/"
    return {doc["url"].removeprefix(prefix): (doc["title"], doc["version_i"], doc["_version_"]) for doc in solr_docs(solr, name)}


def text_documents(count: int, version: int) -> dict[str, dict]:
    """``doc-0`` ... of a repository: plain text, all modified long before any crawl."""
    return {
        f"doc-{n}": {
            "title": f"Doc {n}",
            "body": f"text {n}",
            "type": "text/plain",
            "version": version,
            "modified": "2026-01-01T00:00:00+00:00",
        }
        for n in range(count)
    }


def report_keys(project: Project, name: str, kind: str) -> set[str]:
    database = project.table().database
    try:
        report = run_report(database, name) or {}
    finally:
        database.close()
    return {url.removeprefix(f"repo://{name}/") for url in (report.get("urls") or {}).get(kind) or []}


@pytest.mark.parametrize("seed", [7])
def test_an_agent_source_follows_its_repository_crawl_after_crawl(project, solr, tmp_path, seed) -> None:
    rng = random.Random(seed)
    name = f"repo-{seed}"
    repository = Repository(tmp_path / "repository.json", rng)
    # content through fetch (not handed over with the listing), slow enough to be killed midway
    agent_source(project, name, repository.path, inline=False, fetch_delay=0.05)
    before: dict[str, tuple[str, int, int]] = {}
    kill_at = rng.randint(2, 4)
    for crawl in range(6):
        step = repository.mutate() if crawl else {"new": set(repository.documents), "changed": set(), "deleted": set()}
        fetched_before = len(repository.fetched())
        if crawl == kill_at:
            process = project.popen("crawl", name)
            deadline = time.monotonic() + 120
            while len(repository.fetched()) < fetched_before + 2:
                assert process.poll() is None, "the crawl ended before the kill"
                assert time.monotonic() < deadline, "no fetch began"
                time.sleep(0.02)
            process.send_signal(signal.SIGKILL)
            process.wait()
        result = project.scrapy("crawl", name)
        assert result.returncode == 0, result.stderr[-3000:]
        now = indexed(solr, name)
        expected = {key: (document["title"], document["version"]) for key, document in repository.documents.items()}
        assert {key: value[:2] for key, value in now.items()} == expected, f"crawl {crawl}: {step}"
        for key, (_title, _version, solr_version) in now.items():
            if key in before and key not in step["changed"]:
                assert solr_version == before[key][2], f"crawl {crawl}: {key} was indexed again, unchanged"
        fetched = repository.fetched()[fetched_before:]
        if crawl != kill_at:  # exactly what is new or changed is read; after a kill, what was in flight again
            assert sorted(fetched) == sorted(step["new"] | step["changed"]), f"crawl {crawl}"
            assert report_keys(project, name, "new") == step["new"]
            assert report_keys(project, name, "changed") == step["changed"]
            assert report_keys(project, name, "deleted") == step["deleted"]
        else:
            assert set(fetched) == step["new"] | step["changed"], f"crawl {crawl}: every change read once at least"
            assert len(fetched) - len(set(fetched)) <= 16, "only what was in flight at the kill is read twice"
        before = now
    table = project.table()
    try:
        assert {row for row in table.count_by(name, "status")} <= {200, 912, 916}
    finally:
        table.database.close()


def test_a_listing_that_fails_part_way_removes_nothing(project, solr, tmp_path) -> None:
    rng = random.Random(3)
    name = "repo-failing"
    repository = Repository(tmp_path / "repository.json", rng)
    agent_source(project, name, repository.path)
    assert project.scrapy("crawl", name).returncode == 0
    assert len(indexed(solr, name)) == 30
    agent_source(project, name, repository.path, fail_after=10)  # the repository goes away after 10
    result = project.scrapy("crawl", name)
    assert "The listing of repo-failing failed: the repository went away; nothing is removed" in result.stderr
    assert len(indexed(solr, name)) == 30
    database = project.table().database
    try:
        assert Runs(database).latest(name)["state"] == "failed"
    finally:
        database.close()
    agent_source(project, name, repository.path, crash_after=12)  # an error that is not an AgentError
    result = project.scrapy("crawl", name)
    assert "The listing of repo-failing failed: OSError: [Errno 116] Stale file handle; nothing is removed" in result.stderr
    assert len(indexed(solr, name)) == 30
    agent_source(project, name, repository.path)  # back: a deletion is seen again
    del repository.documents["doc-005"]
    repository.write()
    assert project.scrapy("crawl", name).returncode == 0
    assert set(indexed(solr, name)) == set(repository.documents)


def test_an_incremental_agent_is_asked_for_changes_and_for_what_is_gone(project, solr, tmp_path) -> None:
    name = "repo-incremental"
    path = tmp_path / "repository.json"
    documents = text_documents(10, version=1)
    path.write_text(json.dumps(documents), encoding="utf-8")
    agent_source(project, name, path, agent="incremental_json_repository", inline=False)
    assert project.scrapy("crawl", name).returncode == 0
    assert len(Path(f"{path}.fetched").read_text().split()) == 10
    documents["doc-1"].update(title="Doc 1 again", version=2, modified="2099-01-01T00:00:00+00:00")  # changed after the run
    del documents["doc-2"]
    path.write_text(json.dumps(documents), encoding="utf-8")
    result = project.scrapy("crawl", name, "-s", "LOG_LEVEL=DEBUG")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "changes since" in result.stderr
    assert Path(f"{path}.fetched").read_text().split()[10:] == ["doc-1"]  # only the change is read
    assert "Listed 1 documents" in result.stderr
    titles = {url.rsplit("/", 1)[-1]: title for url, title in ((d["url"], d["title"]) for d in solr_docs(solr, name))}
    assert titles["doc-1"] == "Doc 1 again" and "doc-2" not in titles and len(titles) == 9


def test_a_document_that_failed_is_read_again_with_its_fields_by_an_incremental_agent(project, solr, tmp_path) -> None:
    """An incremental listing does not name a document that failed to be read and has not changed
    since: the crawl asks for it again, and it used to do so without its reference, so the
    document went into Solr without the agent's fields (here its title and version_i)."""
    name = "repo-failed-once"
    path, failing = tmp_path / "repository.json", tmp_path / "failing-keys"
    documents = text_documents(5, version=3)
    path.write_text(json.dumps(documents), encoding="utf-8")
    failing.write_text("doc-3\n", encoding="utf-8")
    agent_source(project, name, path, agent="incremental_json_repository", inline=False, failing_keys=str(failing))
    assert project.scrapy("crawl", name).returncode == 0
    assert sorted(indexed(solr, name)) == ["doc-0", "doc-1", "doc-2", "doc-4"]
    failing.unlink()  # the repository answers again; nothing changed in it
    result = project.scrapy("crawl", name, "-s", "LOG_LEVEL=DEBUG")
    assert result.returncode == 0, result.stderr[-2000:]
    assert (
        "Listed 0 documents" in result.stderr
        and "1 documents of repo-failed-once that failed before are read again" in result.stderr
    )
    title, version, _ = indexed(solr, name)["doc-3"]
    assert (title, version) == ("Doc 3", 3)


def test_a_test_crawl_reports_what_left_the_repository_and_removes_nothing(project, solr, tmp_path) -> None:
    name = "repo-test-mode"
    repository = Repository(tmp_path / "repository.json", random.Random(4))
    agent_source(project, name, repository.path)
    assert project.scrapy("crawl", name).returncode == 0
    del repository.documents["doc-003"]
    repository.write()
    tested = project.scrapy("crawl", name, "-a", "test_mode=1")
    assert tested.returncode == 0
    # the log says what a crawl would do, not that the index changed
    said = f"1 documents of {name} are no longer in its repository: they would leave the index (test mode"
    assert said in tested.stderr and "they leave the index" not in tested.stderr, tested.stderr[-3000:]
    assert report_keys(project, name, "deleted") == {"doc-003"}
    assert "doc-003" in indexed(solr, name)  # a test crawl changes nothing
    assert project.scrapy("crawl", name).returncode == 0
    assert "doc-003" not in indexed(solr, name) and report_keys(project, name, "deleted") == {"doc-003"}


def test_an_agents_documents_are_downloaded_from_their_locations_on_its_fetch_origins(project, solr, serve, tmp_path) -> None:
    served = tmp_path / "dms"
    served.mkdir()
    (served / "a.html").write_text("<html><head><title>Served A</title></head><body><p>alpha from the dms</p></body></html>")
    documents = unpack("textract-tests.tar.xz", tmp_path / "corpus") / "textract-tests" / "tests" if CORPORA.exists() else None
    if documents is not None:
        (served / "b.pdf").write_bytes((documents / "pdf" / "raw_text.pdf").read_bytes())
    dms, elsewhere = serve(served), serve(served)
    dms.redirect("/moved.html", 302, elsewhere.url + "a.html")
    repository = {
        "a": {"title": "A", "body": "", "location": dms.url + "a.html"},
        "gone": {"title": "Gone", "body": "", "location": dms.url + "absent.html"},
        "moved": {"title": "Moved", "body": "", "location": dms.url + "moved.html"},
        "outside": {"title": "Outside", "body": "", "location": elsewhere.url + "a.html"},
        **({"b": {"title": "B", "body": "", "location": dms.url + "b.pdf"}} if documents is not None else {}),
    }
    path = tmp_path / "repository.json"
    path.write_text(json.dumps(repository), encoding="utf-8")
    name = "repo-locations"
    agent_source(project, name, path)
    project.source(name, f'fetch_origins = ["{dms.url}"]\n' + (project.sources_dir / f"{name}.toml").read_text())
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    docs = {doc["url"].rsplit("/", 1)[-1]: doc for doc in solr_docs(solr, name)}
    assert docs["a"]["title"] == "A" and "alpha from the dms" in docs["a"]["content"]  # the agent's title wins
    if documents is not None:
        assert docs["b"]["mimetype"] == "application/pdf" and len(docs["b"]["content"]) > 100
    assert set(docs) == {"a", "b"} if documents is not None else {"a"}
    assert not elsewhere.requests, "nothing is downloaded from an origin not in fetch_origins, nor redirected to"
    table = project.table()
    try:
        rows = {key: table.get(name, f"repo://{name}/{key}") for key in ("gone", "moved", "outside")}
    finally:
        table.database.close()
    assert rows["gone"]["status"] == 404
    assert rows["moved"]["status"] == 302 and "answered HTTP 302" in rows["moved"]["reason"]
    assert rows["outside"]["status"] == 901 and "fetch_origins" in rows["outside"]["reason"]


def test_a_change_of_the_agents_options_reads_every_document_again(project, solr, tmp_path) -> None:
    name = "repo-options"
    repository = Repository(tmp_path / "repository.json", random.Random(6))
    agent_source(project, name, repository.path)
    assert project.scrapy("crawl", name).returncode == 0
    table = project.table()
    try:  # a finished document's request data (its content, for an agent) is not kept in its frontier entry
        with table.engine.connect() as connection:
            kept = connection.execute(text("SELECT count(*) FROM frontier WHERE request IS NOT NULL")).scalar()
        assert kept == 0
    finally:
        table.database.close()
    before = indexed(solr, name)
    agent_source(project, name, repository.path, inline=False)  # another option: documents may differ
    result = project.scrapy("crawl", name)
    assert "Forced recrawl of repo-options: the agent or its options changed" in result.stderr
    after = indexed(solr, name)
    assert set(after) == set(before) and all(after[key][2] != before[key][2] for key in after)
