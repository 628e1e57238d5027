"""Semantic search as a user runs it (issue 76): `scrapy crawl` with SEARCHCRAWL_EMBEDDINGS embeds its
pages' passages off its hot path (done when the crawl ends), `scrapy web` answers the search page and
the JSON API with hits found by meaning alone, and a model of the wrong dimension is refused at
start by the crawl, the web application and `scrapy embed` alike."""

from __future__ import annotations

import html
import signal
import uuid

import requests

from tests.conftest import free_port
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


def write_site(root) -> None:
    links = "".join(f'<li><a href="{name}">{title}</a></li>' for name, (title, _text) in TOPICS.items())
    (root / "index.html").write_text(f"<html><head><title>Staff pages</title></head><body><ul>{links}</ul></body></html>")
    for name, (title, text) in TOPICS.items():
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
