"""A ``files`` source over a folder tree built from the shared corpora's office documents and
text files of the test's own, crawled again and again while a seeded generator edits, touches,
adds, renames and deletes files and changes their modification times. After every crawl Solr
holds exactly the files in scope (with their text); a file whose content did not change keeps its
Solr ``_version_`` (a touched file is read again, not pushed again); one crawl is killed with
SIGKILL and resumed by the next, losing nothing."""

from __future__ import annotations

import json
import os
import random
import shutil
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import CORPORA, Project, solr_docs, unpack
from tests.e2e.test_attributes import SHORT_FILES

OFFICE = ("pdf", "docx", "odt", "xlsx", "pptx", "doc")
WORDS = ("budget", "meeting", "roadmap", "archive", "invoice", "policy", "travel", "safety", "intranet")


class Tree:
    """The oracle: relative path -> a token of its content (None: an office file, its text its own)."""

    def __init__(self, root: Path, documents: Path, rng: random.Random) -> None:
        self.root, self.rng = root, rng
        self.files: dict[str, str] = {}
        self.next = 0
        for kind in OFFICE:
            for name in ("raw_text", "standardized_text"):
                source = documents / kind / f"{name}.{kind}"
                if source.exists():
                    target = root / "office" / kind / source.name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(source, target)
                    self.files[str(target.relative_to(root))] = f"office:{kind}:{name}"
        for _ in range(25):
            self.new_text()
        (root / "skip").mkdir()
        (root / "skip" / "notes.tmp").write_text("excluded by name")
        (root / ".cache").mkdir()
        (root / ".cache" / "hidden.txt").write_text("a hidden folder")

    def words(self) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(12))

    def new_text(self) -> str:
        folder = self.rng.choice(["", "team", "team/minutes", "projects/alpha"])
        suffix = self.rng.choice(["txt", "html"])
        path = f"{folder}/file-{self.next:03d}.{suffix}".lstrip("/")
        self.next += 1
        self.write(path, f"file {path}: {self.words()}")
        return path

    def write(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.endswith(".html"):
            target.write_text(f"<html><head><title>{path}</title></head><body><p>{text}</p></body></html>")
        else:
            target.write_text(text)
        self.files[path] = text

    def texts(self) -> list[str]:
        return sorted(path for path in self.files if not path.startswith("office/"))

    def mutate(self) -> dict[str, set[str]]:
        """A seeded step: which paths are new, changed (content), touched (time only) and gone."""
        step: dict[str, set[str]] = {"new": set(), "changed": set(), "touched": set(), "gone": set()}
        for _ in range(self.rng.randint(0, 3)):
            step["new"].add(self.new_text())
        for path in self.rng.sample(self.texts(), 3):
            if path in step["new"]:
                continue
            action = self.rng.choice(["edit", "touch", "delete", "rename"])
            if action == "edit":
                self.write(path, f"file {path} edited: {self.words()}")
                step["changed"].add(path)
            elif action == "touch":
                later = time.time() + self.rng.randint(60, 6000)
                os.utime(self.root / path, (later, later))
                step["touched"].add(path)
            elif action == "delete":
                (self.root / path).unlink()
                del self.files[path]
                step["gone"].add(path)
            else:  # renamed: its old path leaves, its new one enters, with the same content
                renamed = path.replace("file-", "renamed-")
                (self.root / path).rename(self.root / renamed)
                self.files[renamed] = self.files.pop(path)
                step["gone"].add(path)
                step["new"].add(renamed)
        return step


def indexed(solr, name: str, root: Path) -> dict[str, tuple[str, int]]:
    prefix = root.as_uri() + "/"
    return {doc["url"].removeprefix(prefix): (doc.get("content", ""), doc["_version_"]) for doc in solr_docs(solr, name)}


@pytest.mark.skipif(not CORPORA.exists(), reason="the shared corpora (../shared/corpora) are absent")
@pytest.mark.parametrize("seed", [11])
def test_a_file_share_is_followed_crawl_after_crawl(project: Project, solr, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    documents = unpack("textract-tests.tar.xz", tmp_path / "corpus") / "textract-tests" / "tests"
    root = tmp_path / "share"
    root.mkdir()
    tree = Tree(root, documents, rng)
    name = f"share-{seed}"
    project.source(
        name,
        f'type = "files"\nmax_delete_share = 1.0\n'
        f'display_urls = [{{ prefix = "{root.as_uri()}/", replace = "https://files.example.com/" }}]\n'
        f'[files]\nroots = ["{root}"]\nexclude = ["*.tmp"]\n',
    )
    before: dict[str, tuple[str, int]] = {}
    kill_at = rng.randint(2, 4)
    for crawl in range(6):
        step = tree.mutate() if crawl else {"new": set(tree.files), "changed": set(), "touched": set(), "gone": set()}
        if crawl == kill_at:
            project.killed_crawl(name, 4 + rng.random() * 2)  # past the start (about 2 s), into the fetching
        result = project.scrapy("crawl", name)
        assert result.returncode == 0, result.stderr[-3000:]
        now = indexed(solr, name, root)
        assert set(now) == set(tree.files), f"crawl {crawl}: {step}"
        for path, text in tree.files.items():
            if not text.startswith("office:"):
                assert text.split(": ", 1)[1] in now[path][0], f"crawl {crawl}: {path} holds its old text"
        for path in set(now) & set(before):
            if path not in step["changed"]:  # the same content: not pushed again (touched ones too)
                assert now[path][1] == before[path][1], f"crawl {crawl}: {path} was pushed again ({step})"
            else:
                assert now[path][1] != before[path][1], f"crawl {crawl}: {path} changed and was not pushed"
        before = now
    docs = {doc["url"]: doc for doc in solr_docs(solr, name)}
    pdf = docs[(root / "office/pdf/raw_text.pdf").as_uri()]
    assert pdf["display_url"] == "https://files.example.com/office/pdf/raw_text.pdf"
    assert pdf["file_name_s"] == "raw_text.pdf" and pdf["size_l"] == (root / "office/pdf/raw_text.pdf").stat().st_size
    assert "skip/notes.tmp" not in docs and not any(".cache" in url for url in docs)
    # explain runs the listing's own rules on a path
    excluded = project.scrapy("explain", name, (root / "skip" / "notes.tmp").as_uri())
    assert "its agent does not list it: excluded by '*.tmp'" in excluded.stdout
    hidden = project.scrapy("explain", name, (root / ".cache" / "hidden.txt").as_uri())
    assert "folder '.cache' hidden" in hidden.stdout
    outside = project.scrapy("explain", name, "file:///etc/passwd")
    assert "EXCLUDED (900 excluded_scheme): not a document of the source's agent" in outside.stdout
    crawled = project.scrapy("explain", name, (root / "office/pdf/raw_text.pdf").as_uri())
    assert "CRAWLED when its agent lists it" in crawled.stdout and "state indexed" in crawled.stdout


def test_a_touched_file_is_read_once_then_answered_not_modified(project: Project, solr, tmp_path: Path) -> None:
    """A file whose modification time changes and whose content does not (touched, or every file
    after a restore that reset the time stamps) is read once, reported unchanged and not pushed;
    its new size/time token is kept, so the next crawl answers not_modified without reading it."""
    root = tmp_path / "share"
    root.mkdir()
    (root / "kept.txt").write_text("a file whose content stays the same")
    (root / "other.txt").write_text("a file nobody touches")
    project.source("touched", f'type = "files"\n[files]\nroots = ["{root}"]\n')
    url = (root / "kept.txt").as_uri()

    def crawl() -> dict:
        result = project.scrapy("crawl", "touched")
        assert result.returncode == 0, result.stderr[-3000:]
        report = project.scrapy("report", "touched", "--json")
        return json.loads(report.stdout)["urls"]

    assert url in crawl()["new"]
    version = {doc["url"]: doc["_version_"] for doc in solr_docs(solr, "touched")}[url]
    later = time.time() + 3600
    os.utime(root / "kept.txt", (later, later))
    assert url in crawl()["unchanged"]  # read again (a new token), the same text: not pushed
    assert {doc["url"]: doc["_version_"] for doc in solr_docs(solr, "touched")}[url] == version
    urls = crawl()
    assert url in urls["not_modified"] and (root / "other.txt").as_uri() in urls["not_modified"], urls


def test_one_and_two_word_files_are_found_by_their_words(project: Project, solr, tmp_path: Path) -> None:
    """Issue 72 point 12: a one-word RTF ("Übersicht") and a two-word ODT ("Test text") were
    indexed without their text (fewer than MIN_TEXT_CHARS letters or digits) and could not be
    found by their words. Crawled into the real Solr they are found by a search now; two different
    files that both say "Test" are two documents, a copy of one is its duplicate (the identity of a
    short text is its bytes), and a file of bullets alone is a document without text."""
    root = tmp_path / "share"
    for name, (body, _text) in SHORT_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        (root / name).write_bytes(body)
    for folder in (root, *(path for path in root.rglob("*") if path.is_dir())):
        folder.chmod(0o755)  # every reader passes: the files are public
    project.source("short", f'type = "files"\n[files]\nroots = ["{root}"]\n')
    result = project.scrapy("crawl", "short")
    assert result.returncode == 0, result.stderr[-3000:]
    docs = {doc["url"]: doc for doc in solr_docs(solr, "short")}
    url = {name: (root / name).as_uri() for name in SHORT_FILES}
    assert set(docs) == set(url.values()) - {url["c/test.rtf"]}
    copy = project.table().get("short", url["c/test.rtf"])
    assert copy is not None and copy["duplicate_of"] == url["a/test.rtf"], copy
    assert "content" not in docs[url["bullets.rtf"]]

    def found(*words: str) -> set[str]:
        searched = project.scrapy("search", *words, "--source", "short")
        assert searched.returncode == 0, searched.stderr
        return {name for name, address in url.items() if address in searched.stdout.split()}

    assert found("Übersicht") == {"uebersicht.rtf"}
    assert found("text") == {"test-text.odt"}
    assert {"test-text.odt"} <= found("Test text")
    assert found("test") == {"test-text.odt", "a/test.rtf", "b/test.rtf"}


def test_a_file_name_that_is_not_utf8_is_indexed_with_one_reading(project: Project, solr, tmp_path: Path) -> None:
    """Issue 72: a Latin-1 file name got a good title ("café.txt") but a mangled file_name_s
    ("caf\ufffd.txt"); both now read the name alike (content/extract.py's decode_name)."""
    root = tmp_path / "share"
    root.mkdir()
    with open(os.fsencode(root) + b"/caf\xe9 menu.txt", "wb") as handle:
        handle.write(b"The cafeteria menu of the week.")
    name = f"latin-{uuid.uuid4().hex[:8]}"
    project.source(name, f'type = "files"\n[files]\nroots = ["{root}"]\n')

    result = project.scrapy("crawl", name)

    assert result.returncode == 0, result.stderr[-3000:]
    [doc] = solr_docs(solr, name)
    assert doc["title"] == doc["file_name_s"] == "café menu.txt", doc
    assert doc["path_s"] == f"{root}/café menu.txt" and doc["url"].endswith("/caf%E9%20menu.txt")
