"""Sources other than web sites, measured: an initial crawl of at least 10,000 documents of each
type, then a maintenance crawl with nothing changed and one after 1% of the documents changed,
each a real `scrapy crawl` into the dev Solr, with the SQLite default.

- files: the shared corpora's textract documents (PDF, office, text, HTML ...) replicated into a
  tree of 100 folders;
- database: a generated SQLite table (title, body, a typed attribute, a modified column);
- mail: an mbox of generated messages (one in ten with an attachment from the corpora).

    .venv/bin/python -m tests.benchmarks.repositories [--documents 10000] [--types files,database,mail]
"""

from __future__ import annotations

import argparse
import json
import mailbox
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from tests.benchmarks.measure import run_measured, solr_updates
from tests.conftest import ROOT, unpack

WORDS = "budget meeting roadmap archive invoice policy travel safety intranet quarterly review".split()
FORMATS = ("pdf", "docx", "odt", "xlsx", "pptx", "txt", "html", "rtf", "ods", "doc", "xls")


def words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count))


@dataclass
class Repository:
    kind: str
    build: Callable[[Path, int], str]  # makes the repository; returns its source file's text
    change: Callable[[Path, float], int]  # changes a share of it; returns how many documents


def corpus_documents(work: Path) -> list[Path]:
    tests = unpack("textract-tests.tar.xz", work / "corpus") / "textract-tests" / "tests"
    return [path for kind in FORMATS for path in sorted((tests / kind).glob(f"*.{kind}")) if path.stat().st_size < 2_000_000]


def build_files(work: Path, count: int) -> str:
    documents = corpus_documents(work)
    root = work / "share"
    for number in range(count):
        original = documents[number % len(documents)]
        target = root / f"folder-{number % 100:02d}" / f"{number:05d}-{original.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        if original.suffix in (".txt", ".html"):  # distinct texts, not thousands of duplicates
            target.write_text(original.read_text(errors="replace") + f"\n<p>copy {number}</p>\n")
        else:
            shutil.copyfile(original, target)
    return f'type = "files"\nmax_delete_share = 1.0\n[files]\nroots = ["{root}"]\n'


def change_files(work: Path, share: float) -> int:
    texts = sorted((work / "share").rglob("*.txt"))
    changed = texts[: max(1, int(len(list((work / "share").rglob("*"))) * share))]
    for path in changed:
        path.write_text(path.read_text() + "\nchanged\n")
    return len(changed)


def build_database(work: Path, count: int) -> str:
    rng = random.Random(1)
    path = work / "records.sqlite3"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE records (id INTEGER PRIMARY KEY, title TEXT, body TEXT, pages INTEGER, modified TEXT)")
        connection.executemany(
            "INSERT INTO records VALUES (?, ?, ?, ?, ?)",
            [
                (n, f"Record {n} {words(rng, 3)}", words(rng, 200), rng.randint(1, 500), "2026-01-01 00:00:00")
                for n in range(count)
            ],
        )
    return (
        'type = "database"\nmax_delete_share = 1.0\n[database]\n'
        f'url = "sqlite:///{path}"\nquery = "SELECT id, title, body, pages, modified FROM records"\n'
        'key = "id"\ntitle = "title"\ncontent = ["body"]\nmodified_column = "modified"\n'
        'attributes = { pages = "pages_i" }\ndisplay_url = "https://records.example.com/{id}"\n'
    )


def change_database(work: Path, share: float) -> int:
    with sqlite3.connect(work / "records.sqlite3") as connection:
        count = connection.execute("SELECT count(*) FROM records").fetchone()[0]
        changed = max(1, int(count * share))
        connection.execute(
            "UPDATE records SET body = body || ' changed', modified = ? WHERE id < ?",
            (time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() + 60)), changed),
        )
    return changed


def build_mail(work: Path, count: int) -> str:
    rng = random.Random(2)
    attachments = [path for path in corpus_documents(work) if path.suffix in (".pdf", ".docx")]
    box = mailbox.mbox(work / "list.mbox")
    box.lock()
    try:
        for number in range(count):
            message = EmailMessage()
            message["From"] = f"person{number % 50}@example.com"
            message["To"] = "list@example.com"
            message["Subject"] = f"Thread {number // 5}: {words(rng, 4)}"
            message["Message-ID"] = f"<m{number}@example.com>"
            message["Date"] = "Mon, 02 Feb 2026 10:00:00 +0000"
            if number % 5:
                message["In-Reply-To"] = f"<m{number - number % 5}@example.com>"
            message.set_content(words(rng, 120))
            if number % 10 == 0:
                attachment = attachments[number % len(attachments)]
                message.add_attachment(
                    attachment.read_bytes(), maintype="application", subtype="octet-stream", filename=attachment.name
                )
            box.add(message)
    finally:
        box.flush()
        box.unlock()
    return f'type = "mail"\nmax_delete_share = 1.0\n[mail]\npaths = ["{work / "list.mbox"}"]\n'


def change_mail(work: Path, share: float) -> int:
    box = mailbox.mbox(work / "list.mbox")
    box.lock()
    try:
        keys = list(box.keys())
        removed = keys[: max(1, int(len(keys) * share))]
        for key in removed:
            box.remove(key)
    finally:
        box.flush()
        box.unlock()
    return len(removed)


REPOSITORIES = {
    "files": Repository("files", build_files, change_files),
    "database": Repository("database", build_database, change_database),
    "mail": Repository("mail", build_mail, change_mail),
}


def crawl(name: str, work: Path, solr_url: str, **extra_env: str) -> dict[str, Any]:
    """One measured `scrapy crawl` of a source of ``work``'s sources folder (``extra_env``: a
    password secret, say)."""
    args = [sys.executable, "-m", "scrapy", "crawl", name, "-s", "LOG_LEVEL=WARNING"]
    env = dict(
        os.environ,
        SEARCHCRAWL_SOURCES_DIR=str(work / "sources"),
        SEARCHCRAWL_DATA_DIR=str(work / "data"),
        SOLR_URL=solr_url,
        PYTHONPATH=str(ROOT),
        **extra_env,
    )
    measured = run_measured(args, ROOT, env)
    return {
        "seconds": round(measured.seconds, 1),
        "cpu_seconds": round(measured.cpu_seconds, 1),
        "peak_rss_mb": measured.peak_rss_bytes >> 20,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--solr-url", default=os.environ.get("SOLR_URL", "http://127.0.0.1:8983/solr/searchcrawl"))
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--types", default="files,database,mail")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for kind in args.types.split(","):
        repository = REPOSITORIES[kind]
        work = Path(tempfile.mkdtemp(prefix=f"searchcrawl-bench-{kind}-"))
        (work / "sources").mkdir()
        name = f"bench-{kind}"
        (work / "sources" / f"{name}.toml").write_text(repository.build(work, args.documents))
        before = solr_updates(args.solr_url)
        initial = crawl(name, work, args.solr_url)
        initial["documents_pushed"] = solr_updates(args.solr_url) - before
        initial["documents_per_second"] = round(initial["documents_pushed"] / initial["seconds"], 1)
        before = solr_updates(args.solr_url)
        unchanged = crawl(name, work, args.solr_url)
        unchanged["solr_updates"] = solr_updates(args.solr_url) - before
        unchanged["ratio_to_initial"] = round(unchanged["seconds"] / initial["seconds"], 3)
        changed_count = repository.change(work, 0.01)
        before = solr_updates(args.solr_url)
        changed = crawl(name, work, args.solr_url)
        changed["documents_changed"] = changed_count
        changed["solr_updates"] = solr_updates(args.solr_url) - before
        changed["ratio_to_initial"] = round(changed["seconds"] / initial["seconds"], 3)
        results[kind] = {"initial": initial, "maintenance_unchanged": unchanged, "maintenance_1_percent": changed}
        print(json.dumps({kind: results[kind]}), flush=True)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
