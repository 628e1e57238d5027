"""Nonsense finds nothing (issue 100): a query that shares one word with a crawled site ("how to
train a dragon to breathe fire" and the fire drill's page) has no hit, on the search page, the
JSON API and `scrapy search` alike (one ``run_search``), while a real query finds its page;
words alone the rule is opt-in (SEARCHCRAWL_SEARCH_COORDINATION, off by default: "" turns it off).
With the default model (its default): nothing about
it above the model's floor and no page holding enough of its asked words (_HYBRID) is no hit."""

from __future__ import annotations

import signal
import uuid

import requests

from tests.conftest import free_port, run_scrapy
from tests.e2e.test_api import api, make_token
from tests.e2e.test_semantic_crawls import QUESTION, SECURITY, default_env, write_site
from tests.web_site import serve_web

WORDS_RULE = {"SEARCHCRAWL_SEARCH_COORDINATION": "2<-1 4<60%"}  # words alone: opt-in
NONSENSE = "how to train a dragon to breathe fire"  # "fire": the fire drill's page, by that word alone
REAL = "where do I lock my bicycle"  # the cycling page holds both its asked words


def test_nonsense_finds_nothing_on_the_page_the_api_and_the_command_while_a_real_query_does(project, serve, tmp_path) -> None:
    root = tmp_path / "site"
    root.mkdir()
    write_site(root)
    site = serve(root)
    name = f"non-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    crawled = project.scrapy("crawl", name)  # the suite's own settings: words alone
    assert crawled.returncode == 0, crawled.stderr[-3000:]
    off = project.scrapy("search", NONSENSE, "--source", name)
    assert "1. Fire drill" in off.stdout, off.stdout + off.stderr  # the default, words alone: found by "fire"
    command = project.scrapy("search", NONSENSE, "--source", name, **WORDS_RULE)
    assert command.returncode == 0 and "0 documents match" in command.stdout, command.stdout + command.stderr
    found = project.scrapy("search", REAL, "--source", name, **WORDS_RULE)
    assert "1. Cycling to work" in found.stdout, found.stdout + found.stderr

    port = free_port()
    web = serve_web(project, port, **WORDS_RULE)
    try:
        base = f"http://127.0.0.1:{port}"
        page = requests.get(base + "/", params={"q": NONSENSE, "source": name}, timeout=30)
        assert page.status_code == 200 and "No document matches" in page.text and "Fire drill" not in page.text
        real = requests.get(base + "/", params={"q": REAL, "source": name}, timeout=30)
        assert "Cycling to work" in real.text, real.text[-2000:]
        token = make_token(base, "nonsense")
        answer = api(base, token, q=NONSENSE, source=name).json()
        assert (answer["total"], answer["hits"]) == (0, []), answer
        assert api(base, token, q=REAL, source=name).json()["hits"][0]["title"] == "Cycling to work"
    finally:
        web.send_signal(signal.SIGTERM)
        web.wait(timeout=30)


def test_with_the_default_model_nonsense_finds_nothing_by_meaning_or_by_a_word(project, serve, tmp_path) -> None:
    """bge-small finds nothing about it above its floor, and no page holds 3 of its 4 asked words."""
    root = tmp_path / "site"
    root.mkdir()
    write_site(root, SECURITY)
    site = serve(root)
    name = f"non-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    crawled = run_scrapy(["crawl", name], default_env(project))
    assert crawled.returncode == 0 and "Passages of 4 documents up to date" in crawled.stderr, crawled.stderr[-3000:]
    nonsense = "what is the price of a new desk lamp"  # "desk": the security guidelines, by that word alone
    rule_off = {"SEARCHCRAWL_SEARCH_COORDINATION": "", "SEARCHCRAWL_SEARCH_COORDINATION_HYBRID": ""}
    off = run_scrapy(["search", nonsense, "--source", name], default_env(project, **rule_off))
    assert "1. Security guidelines" in off.stdout, off.stdout + off.stderr
    silent = run_scrapy(["search", nonsense, "--source", name], default_env(project))
    assert silent.returncode == 0 and "0 documents match" in silent.stdout, silent.stdout + silent.stderr
    found = run_scrapy(["search", QUESTION, "--source", name], default_env(project))  # by meaning alone
    assert "1. Security guidelines" in found.stdout, found.stdout + found.stderr
