"""Semantic search as a user runs it (issue 76): `scrapy crawl` with SEARCHCRAWL_EMBEDDINGS embeds its
pages' passages off its hot path (done when the crawl ends), `scrapy web` answers the search page and
the JSON API with hits found by meaning alone, and a model of the wrong dimension is refused at
start by the crawl, the web application and `scrapy embed` alike. With nothing set (issue 100) a
crawl embeds with the default model, bge-small, and search is hybrid; without that model
installed, words alone, said once."""

from __future__ import annotations

import html
import signal
import uuid
from pathlib import Path

import requests

from searchcrawl.index.solr_client import PASSAGES
from searchcrawl.system.processes import process_alive
from tests.conftest import children, free_port, run_scrapy, wait_for
from tests.e2e.test_api import api, make_token
from tests.web_site import serve_web

# wordllama's calibrated floor (0.675, docs/semantic-search.md) is for passages as long as the judged
# sets' are: a static model's similarities grow with a passage's length, and these pages are one
# sentence each ("kittens pets" and "Our office cats ..." 0.54). The setting's own floor, then:
# through the crawl, `scrapy embed` and `scrapy web` as an installation gives it.
WORDLLAMA = "wordllama?floor=0.5"
TOPICS = {
    "cats.html": ("Our office cats", "Whiskers and Tabby sleep on the radiator and chase the laser pointer all afternoon."),
    "bikes.html": ("Cycling to work", "Lock your bicycle in the shed behind building B; showers are on the second floor."),
    "pay.html": ("Salary dates", "Wages are transferred on the 25th; the payslip arrives by e-mail two days earlier."),
    "fire.html": ("Fire drill", "When the alarm sounds leave by the stairs and gather at the assembly point in the car park."),
}


def write_site(root, topics: dict[str, tuple[str, str]] = TOPICS) -> None:  # noqa: ANN001
    links = "".join(f'<li><a href="{name}">{title}</a></li>' for name, (title, _text) in topics.items())
    (root / "index.html").write_text(f"<html><head><title>Staff pages</title></head><body><ul>{links}</ul></body></html>")
    for name, (title, text) in topics.items():
        body = f"<h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>"
        (root / name).write_text(f"<html><head><title>{html.escape(title)}</title></head><body>{body}</body></html>")


def test_a_crawl_embeds_its_passages_and_the_search_page_and_api_find_by_meaning(project, serve, tmp_path) -> None:
    root = tmp_path / "site"
    root.mkdir()
    write_site(root)
    site = serve(root)
    name = f"sem-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    crawled = project.scrapy("crawl", name, SEARCHCRAWL_EMBEDDINGS=WORDLLAMA)
    assert crawled.returncode == 0, crawled.stderr[-3000:]
    assert "Passages of 5 documents up to date" in crawled.stderr
    status = project.scrapy("embed", name, "--status", SEARCHCRAWL_EMBEDDINGS=WORDLLAMA)
    assert status.returncode == 0 and f"{name}: 0 documents without passages" in status.stdout, status.stdout + status.stderr

    port = free_port()
    web = serve_web(project, port, SEARCHCRAWL_EMBEDDINGS=WORDLLAMA)
    try:
        base = f"http://127.0.0.1:{port}"
        # no word of the query is on the page: found by meaning (the hybrid page), not by words
        page = requests.get(base + "/", params={"q": "kittens pets", "source": name}, timeout=30)
        assert page.status_code == 200 and "Our office cats" in page.text, page.text[-2000:]
        assert "Whiskers and Tabby" in page.text  # its best passage, the snippet
        words = project.scrapy("search", "kittens pets", "--source", name)
        assert "0 documents match" in words.stdout  # `scrapy search`: the words query alone
        token = make_token(base, "semantic")
        answer = api(base, token, q="payday money", source=name).json()
        assert answer["hits"] and answer["hits"][0]["title"] == "Salary dates", answer
    finally:
        web.send_signal(signal.SIGTERM)
        web.wait(timeout=30)


def test_a_model_of_the_wrong_dimension_is_refused_at_start(project, serve, tmp_path) -> None:
    wrong = "openai:http://127.0.0.1:9/v1?model=m&dimension=300"  # no vector field has 300 dimensions
    name = f"sem-{uuid.uuid4().hex[:8]}"
    project.source(name, 'seeds = ["http://127.0.0.1:9/"]\n')
    crawl = project.scrapy("crawl", name, SEARCHCRAWL_EMBEDDINGS=wrong)
    assert crawl.returncode != 0 and "300 dimensions" in crawl.stderr
    embed = project.scrapy("embed", SEARCHCRAWL_EMBEDDINGS=wrong)
    assert embed.returncode == 2 and "300 dimensions" in embed.stderr
    off = project.scrapy("embed")
    assert off.returncode == 2 and "semantic search is off" in off.stdout
    port = free_port()
    try:
        serve_web(project, port, SEARCHCRAWL_EMBEDDINGS=wrong)
    except AssertionError as refused:
        assert "300 dimensions" in str(refused)
    else:
        raise AssertionError("scrapy web started with a model of the wrong dimension")


def maps(pid: int) -> str:
    """The files process ``pid`` has mapped (its libraries: a Python extension module is one)."""
    try:
        return Path(f"/proc/{pid}/maps").read_text()
    except OSError:  # it has ended
        return ""


def passes_process(crawl: int) -> int | None:
    """The crawl's passes' process (semantic/pass_process.py), if it runs."""
    for pid in children(crawl):
        try:
            if b"searchcrawl.semantic.pass_process" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except OSError:
            continue
    return None


def test_a_crawls_passes_run_in_a_process_of_their_own_that_ends_with_the_crawl(project, serve, solr, tmp_path) -> None:
    """Issues 100 and 102: the passes embed with bge-small in a process the crawl started, and the
    crawl's process never loads the model's runtime (no onnxruntime among its libraries, while
    its passes' process has it and has written passages); a crawl killed by SIGKILL leaves no
    passes' process behind."""
    root = tmp_path / "site"
    root.mkdir()
    topics = {f"page{number}.html": (f"Page {number}", f"{TOPICS['cats.html'][1]} Page {number}.") for number in range(200)}
    write_site(root, topics)
    site = serve(root, slow=0.3)  # about a minute of fetching: the crawl runs on while the test looks
    name = f"proc-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    crawl = project.popen(
        "crawl", name, "-s", "LOG_LEVEL=INFO", "-s", "CONCURRENT_REQUESTS=1",
        SEARCHCRAWL_EMBEDDINGS="bge-small", SEARCHCRAWL_EMBED_INTERVAL="1",
    )  # fmt: skip
    try:
        wait_for(lambda: passes_process(crawl.pid) is not None or crawl.poll() is not None, what="the passes' process")
        child = passes_process(crawl.pid)
        assert child is not None, "no passes' process"

        def embedded() -> bool:
            solr.commit(softCommit=True)
            return solr.search("*:*", fq=[PASSAGES, "{!term f=source}" + name], rows=0).hits > 0 or crawl.poll() is not None

        wait_for(embedded, what="passages written during the crawl")
        assert crawl.poll() is None, "the crawl ended before its passes wrote"
        assert "onnxruntime" in maps(child)
        assert "onnxruntime" not in maps(crawl.pid) and "tokenizers" not in maps(crawl.pid)
    finally:
        crawl.send_signal(signal.SIGKILL)
        crawl.wait()
    wait_for(lambda: not process_alive(child), timeout=60, what="the passes' process to end with its crawl")


def test_a_model_that_does_not_load_fails_the_crawl(project, serve, tmp_path) -> None:
    """What only the loaded model tells (here: an ``onnx:`` file that is not there) is said by the
    passes' process once it tries; the crawl, which did not wait for it, exits 1 and says why."""
    root = tmp_path / "site"
    root.mkdir()
    write_site(root)
    site = serve(root)
    name = f"sem-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    crawled = project.scrapy("crawl", name, SEARCHCRAWL_EMBEDDINGS=f"onnx:{tmp_path / 'missing.onnx'}")
    assert crawled.returncode == 1, crawled.stderr[-3000:]
    refused = [line for line in crawled.stderr.splitlines() if "Semantic search's model is refused" in line]
    assert len(refused) == 1 and "ERROR" in refused[0] and "missing.onnx" in refused[0], crawled.stderr[-3000:]


# issue 100: a site whose answer to a question shares no word with it
SECURITY = {
    "security.html": (
        "Security guidelines",
        "Use a password manager, lock your laptop when you leave your desk and report phishing mails to the security desk.",
    ),
    "cats.html": TOPICS["cats.html"],
    "pay.html": TOPICS["pay.html"],
}
QUESTION = "protect my computer from hackers"  # no word of it on any page: found by meaning alone


def default_env(project, **extra: str) -> dict[str, str]:  # noqa: ANN001
    """The project's environment with semantic search as a new installation has it: the suite's
    own SEARCHCRAWL_EMBEDDINGS (off, tests/conftest.py) left out, so the settings' default serves."""
    env = project.env(**extra)
    del env["SEARCHCRAWL_EMBEDDINGS"]
    return env


def test_with_the_default_settings_a_crawl_embeds_with_bge_small_and_search_is_hybrid(project, serve, tmp_path) -> None:
    """Issue 100: semantic search on by default. A crawl with nothing set embeds its passages with
    bge-small; `scrapy search` then finds by meaning a page that shares no word with the question,
    and `scrapy doctor` names the model that serves."""
    root = tmp_path / "site"
    root.mkdir()
    write_site(root, SECURITY)
    site = serve(root)
    name = f"def-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    crawled = run_scrapy(["crawl", name], default_env(project))
    assert crawled.returncode == 0, crawled.stderr[-3000:]
    assert "Passages of 4 documents up to date" in crawled.stderr, crawled.stderr[-3000:]
    found = run_scrapy(["search", QUESTION, "--source", name], default_env(project))
    assert found.returncode == 0 and "1. Security guidelines" in found.stdout, found.stdout + found.stderr
    words = project.scrapy("search", QUESTION, "--source", name)  # the suite's own: semantic search off
    assert "0 documents match" in words.stdout, words.stdout
    doctor = run_scrapy(["doctor"], default_env(project))
    assert "bge-small serves, searches are hybrid: onnx/bge-small-en-v1.5-q/" in doctor.stdout, doctor.stdout


def test_without_the_default_model_installed_a_crawl_is_words_only_and_says_so(project, serve, tmp_path) -> None:
    """Issue 100: an installation without the default model's jar (a `pip install` without the
    bootstrap) crawls and searches by words alone, with one WARNING naming the command that
    installs it; `scrapy doctor` says so too. Nothing fails."""
    root = tmp_path / "site"
    root.mkdir()
    write_site(root, SECURITY)
    site = serve(root)
    name = f"def-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    no_cache = default_env(project, XDG_CACHE_HOME=str(tmp_path / "empty-cache"))  # no model's jar there
    crawled = run_scrapy(["crawl", name], no_cache)
    assert crawled.returncode == 0, crawled.stderr[-3000:]
    said = [line for line in crawled.stderr.splitlines() if "bge-small: its jar is not installed" in line]
    assert len(said) == 1 and "WARNING" in said[0] and "bash deploy/bootstrap.sh semantic" in said[0], crawled.stderr[-3000:]
    assert "Passages of" not in crawled.stderr
    found = run_scrapy(["search", "Security guidelines", "--source", name], no_cache)
    assert found.returncode == 0 and "1. Security guidelines" in found.stdout, found.stdout + found.stderr
    doctor = run_scrapy(["doctor"], no_cache)
    assert "bge-small: its jar is not installed" in doctor.stdout and "bash deploy/bootstrap.sh semantic" in doctor.stdout
