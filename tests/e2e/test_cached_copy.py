"""A hit's cached copy (issue 79 point 7: search/cached_copy.py, /cached), against a real Solr core
and a real LDAP directory: each searcher opens the cached copy of exactly the documents they may
read (a withheld one answers as a missing one does); the query's words are marked by Solr's own
analysis (a stemmed form too); a hostile page's text is shown as text, never markup; a long text
is cut where documented and says so; the search page links each hit's copy."""

from __future__ import annotations

import html
import re
import uuid

import pysolr
import pytest
from scrapy.settings import Settings

from searchcrawl.access.tokens import LEVEL_FIELDS, PUBLIC
from searchcrawl.search.cached_copy import CACHED_CHARS
from tests.conftest import Project
from tests.directory_server import DirectoryServer
from tests.e2e.test_web_access import Corpus, corpus, server, settings, web_of  # noqa: F401 - fixtures
from tests.web.test_searcher import sign_in

MISSING = "No such document is in the index, or you may not read it."


def cached_text(page: str) -> str:
    """The copy's text as the page holds it (markup included)."""
    found = re.search(r'<div class="cached-text">(.*?)</div>', page, re.DOTALL)
    assert found is not None, page[:3000]
    return found[1]


def test_each_searcher_opens_the_cached_copy_of_what_they_may_read_only(
    project: Project,
    settings: Settings,  # noqa: F811
    corpus: Corpus,  # noqa: F811
    server: DirectoryServer,  # noqa: F811
) -> None:
    for user, readable in corpus.readers.items():
        web = web_of(project, settings)
        if user is not None:
            assert sign_in(web, user, server.passwords[user]) == 303
        for name in corpus.access:
            doc_id = f"{corpus.source}!https://intranet.example/{corpus.source}/{name}"
            page = web.get("/cached", params={"id": doc_id, "q": corpus.word})
            if name in readable:
                assert page.status_code == 200, (user, name)
                text = cached_text(page.text)
                assert f"The <mark>{corpus.word}</mark> document {name} of the harbour office." in text, (user, name)
                assert f"https://intranet.example/{corpus.source}/{name}" in page.text
            else:
                assert page.status_code == 404 and MISSING in page.text, (user, name)
                assert corpus.secret not in page.text and f"document {name} " not in page.text, (user, name)
        missing = web.get("/cached", params={"id": f"{corpus.source}!https://intranet.example/none", "q": corpus.word})
        assert missing.status_code == 404 and MISSING in missing.text
    # the search page links each hit's copy, with the search's words
    visitor = web_of(project, settings)
    page = visitor.get("/", params={"q": corpus.word, "source": corpus.source})
    links = [html.unescape(link) for link in re.findall(r'<a class="cached" href="([^"]*)"', page.text)]
    assert len(links) == 1 and visitor.get(links[0]).status_code == 200
    assert f"q={corpus.word}" in links[0]


@pytest.fixture
def hostile(solr: pysolr.Solr) -> dict[str, str]:
    """Public documents of a source of their own: a page whose text is markup and script, one
    longer than a cached copy shows, and one with the words a stemmed query finds."""
    source = f"cached-{uuid.uuid4().hex[:8]}"
    word = "quaycached" + uuid.uuid4().hex[:6]
    texts = {
        "markup": f'{word} <script>alert(1)</script> <img src=x onerror="alert(2)"> &amp; <b>bold</b>',
        "long": f"{word} " + "harbour " * (CACHED_CHARS // 8 + 1000) + "tailword",
        "stemmed": f"{word}: the pilots were docking their boats at dawn.",
    }
    docs = []
    for name, text in texts.items():
        url = f"https://intranet.example/{source}/{name}"
        doc: dict[str, object] = {
            "id": f"{source}!{url}",
            "url": url,
            "source": source,
            "title": f"<i>{name}</i>",
            "content": text,
        }
        for field in LEVEL_FIELDS:
            doc[field] = [PUBLIC]
        docs.append(doc)
    solr.add(docs)
    return {"source": source, "word": word, **{name: str(doc["id"]) for name, doc in zip(texts, docs, strict=True)}}


def test_a_cached_copy_is_text_marked_by_solrs_analysis_and_cut_where_documented(
    project: Project,
    settings: Settings,  # noqa: F811
    hostile: dict[str, str],
) -> None:
    web = web_of(project, settings)
    markup = web.get("/cached", params={"id": hostile["markup"], "q": hostile["word"]})
    assert markup.status_code == 200
    text = cached_text(markup.text)
    assert "<script" not in markup.text and "<img" not in text and "<b>" not in text and "<i>" not in markup.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "&amp;amp;" in text
    assert f"<mark>{hostile['word']}</mark>" in text
    assert "script-src 'none'" in markup.headers["content-security-policy"]
    # a stemmed query marks the words its analysis finds: "docked" finds "docking"
    stemmed = cached_text(web.get("/cached", params={"id": hostile["stemmed"], "q": "docked pilot"}).text)
    assert "<mark>docking</mark>" in stemmed and "<mark>pilots</mark>" in stemmed and "<mark>boats</mark>" not in stemmed
    plain = cached_text(web.get("/cached", params={"id": hostile["stemmed"]}).text)
    assert "<mark>" not in plain and "the pilots were docking" in plain
    # query syntax is the search's: no local parameters, no nested query, no error
    for query in ("{!func}docfreq(content,'secret')", '_query_:"{!lucene}*:*"', "pilots AND (", "content:/.*/"):
        answered = web.get("/cached", params={"id": hostile["stemmed"], "q": query})
        assert answered.status_code == 200, query
        assert "the pilots were docking" in re.sub(r"</?mark>", "", cached_text(answered.text)), query
    # a long text: its first CACHED_CHARS characters, and the page says so
    long = web.get("/cached", params={"id": hostile["long"], "q": "tailword"})
    shown = html.unescape(re.sub(r"</?mark>", "", cached_text(long.text)))
    assert len(shown) == CACHED_CHARS and "tailword" not in shown
    assert f"The first {CACHED_CHARS:,} characters of " in long.text
    marked = cached_text(web.get("/cached", params={"id": hostile["long"], "q": hostile["word"]}).text)
    assert marked.startswith(f"<mark>{hostile['word']}</mark> harbour harbour")
    assert len(html.unescape(re.sub(r"</?mark>", "", marked))) == CACHED_CHARS


def test_a_cached_copy_for_a_signed_in_searcher_is_kept_by_no_cache(
    project: Project,
    settings: Settings,  # noqa: F811
    corpus: Corpus,  # noqa: F811
    server: DirectoryServer,  # noqa: F811
) -> None:
    web = web_of(project, settings)
    assert sign_in(web, "alice", server.passwords["alice"]) == 303
    page = web.get("/cached", params={"id": f"{corpus.source}!https://intranet.example/{corpus.source}/alice-own"})
    assert page.status_code == 200 and corpus.secret in page.text
    assert page.headers["cache-control"] == "private, no-store"
