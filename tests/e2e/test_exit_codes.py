"""`scrapy crawl <source>` exits with a code that says how the crawl ended (README: Exit codes)."""

from __future__ import annotations

import uuid

import pytest

from searchcrawl.commands.crawl import ExitCode, exit_code
from searchcrawl.crawl.spider import SourceSpider
from searchcrawl.ops.local_fleet import RUN_SETTING
from searchcrawl.store.runs import Runs
from tests.conftest import HeldAnswers, wait_for


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


class FailingStartSpider(SourceSpider):
    """A source's own spider whose start fails (used through `spider_class`)."""

    async def start(self):  # noqa: ANN201
        raise RuntimeError("the seeds could not be read")
        yield  # an async generator, as Scrapy expects


# --- the decision ----------------------------------------------------------------------------------


@pytest.mark.parametrize("reason", ["finished", "suspended", "stopped", "shutdown", "closespider_pagecount"])
def test_a_crawl_that_ended_as_asked_exits_0(reason) -> None:
    assert exit_code(started=True, finish_reason=reason, not_indexed=0) == ExitCode.FINISHED == 0


@pytest.mark.parametrize("reason", ["start_error", "cancelled", "failed", "closespider_errorcount", None])
def test_a_crawl_that_failed_or_did_not_start_exits_1(reason) -> None:
    assert exit_code(started=True, finish_reason=reason, not_indexed=0) == ExitCode.FAILED == 1
    assert exit_code(started=False, finish_reason="finished", not_indexed=0) == ExitCode.FAILED


def test_refused_and_unindexed_crawls() -> None:
    assert exit_code(started=True, finish_reason="already_running", not_indexed=0) == ExitCode.ALREADY_RUNNING == 3
    assert exit_code(started=True, finish_reason="finished", not_indexed=7) == ExitCode.NOT_INDEXED == 4
    assert exit_code(started=True, finish_reason="suspended", not_indexed=7) == ExitCode.NOT_INDEXED
    assert exit_code(started=True, finish_reason="start_error", not_indexed=7) == ExitCode.FAILED  # failure first
    assert ExitCode.BROKEN_SOURCE == 2


def test_a_crawl_whose_model_its_passes_refused_failed_even_after_its_last_page() -> None:
    """The passes' process loads the model while the crawl runs (crawl/extensions/passage_sync.py):
    a refusal that comes after the last page still fails the crawl."""
    assert exit_code(started=True, finish_reason="finished", not_indexed=0, model_refused=True) == ExitCode.FAILED
    assert exit_code(started=True, finish_reason="embeddings_refused", not_indexed=0) == ExitCode.FAILED


# --- scrapy crawl ------------------------------------------------------------------------------------


def test_a_second_crawl_of_a_source_being_crawled_exits_3_and_a_normal_crawl_0(project, serve, tmp_path) -> None:
    root = tmp_path / "site"
    root.mkdir()
    pages = [f"p{number}.html" for number in range(6)]
    links = "".join(f'<a href="{page}">{page}</a>' for page in pages)
    (root / "index.html").write_text(f"<html><head><title>Home</title></head><body><p>Home.</p>{links}</body></html>")
    for page in pages:
        (root / page).write_text(f"<html><head><title>{page}</title></head><body><p>Page {page}.</p></body></html>")
    # the first crawl's answers wait until the others have been refused: it is still running then,
    # however long they took to start (answers of 0.5 s each once let it finish first)
    answers = HeldAnswers()
    site = serve(root, in_flight=answers)
    name = unique("busy")
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 1\nconcurrent_per_site = 1\n')
    first = project.popen("crawl", name)
    try:
        wait_for(answers.arrived.is_set, timeout=120, what="the first crawl's first request")

        second = project.scrapy("crawl", name)

        assert second.returncode == ExitCode.ALREADY_RUNNING, second.stderr[-3000:]
        assert "is being crawled by process" in second.stderr
        assert "Traceback" not in second.stderr, second.stderr[-3000:]
        assert [line for line in second.stderr.splitlines() if " ERROR: " in line] == [
            line for line in second.stderr.splitlines() if "is being crawled by process" in line
        ]
        assert "Spider opened" not in second.stderr  # refused before anything was opened

        # a crawl of two processes, refused: its other process, forked as it started, leaves
        # without crawling, and the crawl says why it was refused (not that a process failed)
        several = project.scrapy("crawl", name, "-s", "SEARCHCRAWL_PROCESSES=2")
        assert several.returncode == ExitCode.ALREADY_RUNNING, several.stderr[-3000:]
        assert "Started 1 more crawler processes" in several.stderr
        assert "opened no run; nothing crawled" in several.stderr, several.stderr[-3000:]
        assert "Spider opened" not in several.stderr and "Traceback" not in several.stderr
    finally:
        answers.released.set()
        output, _ = first.communicate(timeout=300)
    assert first.returncode == ExitCode.FINISHED, output[-3000:]
    assert Runs(project.table().database).latest(name)["state"] == "finished"


def test_a_process_that_comes_up_after_its_run_ended_leaves_quietly(offline_project) -> None:
    """Regression: a crawl's other process (processes = N) that came up after a small site's run
    had ended logged "Scraper close failure ... Scraper slot not assigned" at ERROR: it refused
    from the scheduler's open(), and Scrapy then closes a scraper it never opened. It now leaves
    from spider_opened: nothing fetched, nothing sent to Solr (the project's Solr points nowhere:
    a push would have failed aloud), exit 0."""
    name = unique("ended")
    offline_project.source(name, 'seeds = ["http://127.0.0.1:9/"]\n')
    offline_project.data_dir.mkdir(parents=True, exist_ok=True)
    runs = Runs(offline_project.table().database)
    run = runs.start(name, owner="h:1")
    runs.end(run.id, "finished", {}, "finished")

    late = offline_project.scrapy("crawl", name, "-s", f"{RUN_SETTING}={run.id}")

    assert late.returncode == ExitCode.FINISHED, late.stderr[-3000:]
    assert f"Not joining: run {run.id} of {name} has ended" in late.stderr
    assert " ERROR: " not in late.stderr and "Traceback" not in late.stderr, late.stderr[-3000:]
    assert "Crawled (" not in late.stderr and "Indexing done" not in late.stderr
    assert runs.latest(name)["id"] == run.id  # no run of its own


def test_documents_left_unindexed_exit_4(offline_project, serve, tmp_path) -> None:
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text(
        '<html><head><title>Home</title></head><body><p>Home.</p><a href="a.html">a</a></body></html>'
    )
    (root / "a.html").write_text("<html><head><title>A</title></head><body><p>Page a.</p></body></html>")
    site = serve(root)
    name = unique("unindexed")
    offline_project.source(name, f'seeds = ["{site.url}index.html"]\n')

    crawl = offline_project.scrapy(
        "crawl", name, "-s", "SEARCHCRAWL_SOLR_RETRY_TIMES=1", "-s", "SEARCHCRAWL_SOLR_RETRY_BACKOFF=0.1"
    )

    assert crawl.returncode == ExitCode.NOT_INDEXED, crawl.stderr[-3000:]
    assert "2 documents of" in crawl.stderr and "stay cached and pending" in crawl.stderr
    assert offline_project.table().count_by(name, "state") == {"pending": 2}
    assert Runs(offline_project.table().database).latest(name)["state"] == "finished"  # crawled; only Solr is behind


def test_a_start_error_exits_1_and_leaves_the_run_unfinished(offline_project, serve, tmp_path) -> None:
    (tmp_path / "site").mkdir()
    site = serve(tmp_path / "site")
    name = unique("start-error")
    offline_project.source(name, f'seeds = ["{site.url}"]\nspider_class = "failing_start"\n')

    crawl = offline_project.scrapy("crawl", name)

    assert crawl.returncode == ExitCode.FAILED, crawl.stderr[-3000:]
    assert "the seeds could not be read" in crawl.stderr
    assert Runs(offline_project.table().database).latest(name)["state"] == "suspended"


@pytest.mark.parametrize(
    "table",
    [
        '[access]\npublic = true\n[[auth]]\norigins = ["http://127.0.0.1:9"]\ntype = "basic"\nuser = "crawler"\nsecret = "{secret}"\n',
        '[proxy]\nurl = "http://127.0.0.1:9"\nuser = "crawler"\nsecret = "{secret}"\n',
    ],
    ids=["auth", "proxy"],
)
def test_a_secret_that_is_not_set_is_one_error_line_and_exit_1(offline_project, table: str) -> None:
    """Regression: a source whose secret is not set ended in asyncio's "Task exception was never
    retrieved" and a traceback; now one ERROR line names the secret, and nothing is crawled."""
    name, secret = unique("no-secret"), f"UNSET_{uuid.uuid4().hex[:8].upper()}"
    offline_project.source(name, 'seeds = ["http://127.0.0.1:9/"]\n' + table.format(secret=secret))
    crawl = offline_project.scrapy("crawl", name)
    assert crawl.returncode == ExitCode.FAILED, crawl.stderr[-3000:]
    said = [line for line in crawl.stderr.splitlines() if secret in line]
    assert len(said) == 1 and f"ERROR: Source {name} cannot be crawled: the secret {secret}" in said[0], crawl.stderr[-3000:]
    assert "Traceback" not in crawl.stderr and "never retrieved" not in crawl.stderr
    explained = offline_project.scrapy("explain", name, "http://127.0.0.1:9/")  # a read-only crawl: the same
    assert explained.returncode == 1 and "Traceback" not in explained.stderr, explained.stderr[-3000:]
    assert explained.stderr.strip() == f"searchcrawl: {name} cannot be crawled: " + said[0].split(": ", 2)[2].removesuffix(
        "; nothing crawled"
    )
