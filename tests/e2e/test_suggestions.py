"""Suggestions while typing (GET /suggest, web/suggestions.py) against a real Solr core and a real
LDAP directory (slapd): each searcher is offered the titles of the documents they may read and
no other (deny wins, an incomplete set of principals sees nothing that denies), a past query
only when it finds a document they may read now, and hostile text typed is answered safely.
The documents are test_web_access.py's Corpus: a source of their own, each title holding a word
no other test's documents hold."""

from __future__ import annotations

import dataclasses
import uuid

import pysolr
import pytest
from scrapy.settings import Settings
from starlette.testclient import TestClient

from searchcrawl.access.decision import Principals
from searchcrawl.access.directory_setting import directory_of
from searchcrawl.access.tokens import Access
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.search.suggestions import MAX_SUGGESTIONS, suggest
from searchcrawl.search.trimmed_index import TrimmedIndex
from tests.conftest import Project, wait_for
from tests.directory_server import DirectoryServer
from tests.e2e.test_web_access import Corpus, settings_of, web_of
from tests.web.test_searcher import sign_in


@pytest.fixture
def settings(directory_server: DirectoryServer, monkeypatch: pytest.MonkeyPatch) -> Settings:
    return settings_of(directory_server, monkeypatch)


@pytest.fixture
def corpus(solr: pysolr.Solr, directory_server: DirectoryServer) -> Corpus:
    return Corpus(solr, directory_server)


def title(corpus: Corpus, name: str) -> str:
    return f"{name} ({corpus.word})"


def suggested(web: TestClient, typed: str) -> list[tuple[str, str]]:
    answer = web.get("/suggest", params={"q": typed})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    return [(item["text"], item["kind"]) for item in answer.json()["suggestions"]]


def searcher(project: Project, settings: Settings, server: DirectoryServer, user: str | None) -> TestClient:
    web = web_of(project, settings)
    if user is not None:
        assert sign_in(web, user, server.passwords[user]) == 303
    return web


def test_each_searcher_is_offered_the_titles_they_may_read_and_no_other(
    project: Project, settings: Settings, corpus: Corpus, directory_server: DirectoryServer
) -> None:
    for user, readable in corpus.readers.items():
        web = searcher(project, settings, directory_server, user)
        for typed in (corpus.word[:5], corpus.word[:9] + " ", corpus.word.upper()):
            shown = suggested(web, typed)
            assert {kind for _text, kind in shown} <= {"title"}
            assert {text for text, _kind in shown} == {title(corpus, name) for name in readable}, (user, typed)
        # the second word typed too: one title begins with it, and only its reader is offered it
        both = suggested(web, f"finance {corpus.word[:6]}")
        assert both == ([(title(corpus, "finance"), "title")] if "finance" in readable else []), user
    # bob may read "all-staff" but "staff-not-bob" denies him; alice may read both
    bob = searcher(project, settings, directory_server, "bob")
    assert [text for text, _kind in suggested(bob, f"staff {corpus.word[:6]}")] == [title(corpus, "all-staff")]


def test_a_searcher_whose_principals_are_incomplete_is_offered_no_title_that_denies(
    solr_url: str, settings: Settings, corpus: Corpus
) -> None:
    directory = directory_of(settings)
    assert directory is not None
    alice = directory.principals("alice")
    cut = dataclasses.replace(alice, partial="the group walk stopped at its bound")
    solr = SolrIndex(solr_url, timeout=30)
    complete = {item.text for item in suggest(TrimmedIndex(solr, alice), corpus.word[:8])}
    incomplete = {item.text for item in suggest(TrimmedIndex(solr, cut), corpus.word[:8])}
    assert complete == {title(corpus, name) for name in corpus.readers["alice"]}
    assert incomplete == complete - {title(corpus, "staff-not-bob")}  # the only one with a deny token


def test_a_past_query_is_offered_only_when_it_finds_a_document_the_searcher_may_read(
    project: Project, settings: Settings, corpus: Corpus, directory_server: DirectoryServer
) -> None:
    public, secret = f"{corpus.word} harbour office", f"{corpus.word} {corpus.secret}"  # secret: alice-own's alone
    nothing, half = f"{corpus.word} unicornless", f"{corpus.word} harbour unicornless"  # half: one word nowhere
    hostile = [
        f"{corpus.word} {{!func}}docfreq(content,'{corpus.secret}')",
        f'{corpus.word} _query_:"{{!lucene}}{corpus.secret}"',
        f"{corpus.word} ${{access_tokens}}",
        f'{corpus.word} "\\',
    ]
    for user, offered in ((None, [public]), ("bob", [public]), ("alice", [secret, public])):
        web = searcher(project, settings, directory_server, user)
        web.app.state.web.query_candidates = lambda prefix: [secret, nothing, public, half, *hostile]  # type: ignore[attr-defined]
        shown = suggested(web, corpus.word[:7])
        queries = [text for text, kind in shown if kind == "query"]
        # most frequent first, as given; a hostile one may be offered when what is left of it
        # after edismax's escaping finds a readable document, but never with alice's secret
        assert [text for text in queries if text not in hostile] == offered, user
        assert user == "alice" or not any(corpus.secret in text for text in queries)
        assert len(shown) <= MAX_SUGGESTIONS
        # a past query that does not begin with what was typed is never offered
        web.app.state.web.query_candidates = lambda prefix: ["harbour office"]  # type: ignore[attr-defined]
        assert all(kind == "title" for _text, kind in suggested(web, corpus.word[:7]))


def test_a_past_query_with_operators_is_offered_only_when_every_word_of_it_is_readable(
    project: Project, settings: Settings, corpus: Corpus, directory_server: DirectoryServer
) -> None:
    """Issue 72 (2): alice's past searches ``<word> -<secret>`` and ``<word> (<secret> or
    harbour)`` were offered to everyone typing the word: the check's ``mm=100%`` counts top-level
    optional clauses, and a negated word or a group is not one. Every word of a past search is
    checked, those under an operator, in a group, a phrase or after a field name too."""
    word, secret = corpus.word, corpus.secret
    public = f"{word} harbour office"
    rounds = [
        [f"{word} -{secret}", f"{word} ({secret} or harbour)", f"{word} NOT {secret}", f"{word} !{secret}", public],
        [f"{word} +{secret}", f"{word} {secret}*", f"{word} {secret}~", f"{word} && {secret}", public],
        [f'{word} "harbour {secret}"', f"{word} content:{secret}", f"{word} harbour-{secret}", f"{word} {secret}.x", public],
    ]
    for user in (None, "bob", "alice"):
        web = searcher(project, settings, directory_server, user)
        offered: list[str] = []
        for candidates in rounds:
            web.app.state.web.query_candidates = lambda prefix, given=candidates: given  # type: ignore[attr-defined]
            offered += [text for text, kind in suggested(web, word[:7]) if kind == "query"]
        if user == "alice":  # every word of these is in her own document: offered to her
            assert {f"{word} -{secret}", f"{word} ({secret} or harbour)", f"{word} NOT {secret}"} <= set(offered)
        else:
            assert offered == [public] * len(rounds), user


def test_past_searches_come_from_the_query_log_and_each_searcher_sees_only_those_they_could_find(
    project: Project, settings: Settings, corpus: Corpus, directory_server: DirectoryServer
) -> None:
    """The whole way, no stand-in: searches logged by query analytics (the project's database),
    read back as past queries, offered while typing only to searchers whose own documents answer
    them: alice's search of her secret is offered to her, never to a visitor or to bob."""
    public, secret = f"{corpus.word} harbour office", f"{corpus.word} {corpus.secret}"
    project.data_dir.mkdir(parents=True, exist_ok=True)  # the query log's database
    with web_of(project, settings, analytics_days=90) as alice:  # the lifespan starts the writer
        app = alice.app
        visitor = TestClient(app, base_url="http://127.0.0.1")
        bob = TestClient(app, base_url="http://127.0.0.1")
        assert sign_in(alice, "alice", directory_server.passwords["alice"]) == 303
        assert sign_in(bob, "bob", directory_server.passwords["bob"]) == 303
        # "nowhere" finds documents (any word is enough for a search) but no document holds both
        # its words: it is never offered (every word of a past query in one readable document)
        nowhere = f"{corpus.word} unicornless"
        for web, query in ((alice, secret), (visitor, public), (bob, public), (visitor, nowhere)):
            assert web.get("/", params={"q": query}).status_code == 200
        log = app.state.web.analytics  # type: ignore[attr-defined]

        def read_back() -> bool:
            log.refresh_completions()
            return set(log.completions(corpus.word[:7], 10)) == {public, secret, nowhere}  # each found documents

        wait_for(read_back, 30, "the searches read back as past queries")
        assert log.completions(corpus.word[:7], 10)[0] == public  # searched twice: first
        for web, offered in ((alice, [public, secret]), (visitor, [public]), (bob, [public])):
            queries = [text for text, kind in suggested(web, corpus.word[:7]) if kind == "query"]
            assert queries == offered


HOSTILE = [
    '"',
    '"unbalanced',
    "{",
    "}",
    "{!func}",
    "{!func}docfreq(content,'x')",
    "{!lucene}*:*",
    "\\",
    "\\\\\\",
    "${access_tokens}",
    "$access_tokens",
    "*",
    "*:*",
    "title:*",
    "_query_:x",
    "(((",
    "a OR b AND NOT",
    "?q=x&fq=*:*",
    "%00",
    "\x00\x1f\x7f",
    "\u202e\u0645\u0631\u062d\u0628\u0627",
    "\U0001f600 emoji",
    "x" * 10240,
    ("{!func}" * 2000)[:10240],
    " ".join(["a"] * 5000),
]


def test_hostile_text_typed_is_answered_safely(
    project: Project, settings: Settings, corpus: Corpus, directory_server: DirectoryServer
) -> None:
    hidden = {title(corpus, name) for name in corpus.access} - {title(corpus, "public")}
    web = searcher(project, settings, directory_server, None)
    for typed in [
        *HOSTILE,
        *(f"{corpus.word[:6]} {text}" for text in HOSTILE),
        *(f"{text} {corpus.word[:6]}" for text in HOSTILE),
    ]:
        answer = web.get("/suggest", params={"q": typed})
        assert answer.status_code == 200, (typed[:50], answer.text[:500])
        body = answer.json()
        assert set(body) == {"q", "suggestions"} and len(body["q"]) <= 100
        assert not {item["text"] for item in body["suggestions"]} & hidden
    # the first word the corpus's: its public title is still found after hostile text
    shown = suggested(web, f'{corpus.word[:6]} "{{!func}}')
    assert shown == []  # '{!func}' is a word no title begins with: nothing, and no error
    assert suggested(web, f"{corpus.word[:6]} (") == [(title(corpus, "public"), "title")]


def test_a_huge_title_is_indexed_and_offered_cut(solr_url: str, solr: pysolr.Solr) -> None:
    """The suggestion fields are copied from the title's first characters (schema.xml): a title of
    100,000 characters, one "word" among them 50,000 long, is indexed, and offered cut."""
    word = "kelp" + uuid.uuid4().hex[:10]
    url = f"http://huge.test/{word}"
    huge = f"{word} " + "q" * 50_000 + " tail" * 10_000
    solr.add([{"id": f"huge!{url}", "url": url, "source": "huge", "title": huge, **Access.public("test").fields()}])
    shown = suggest(TrimmedIndex(SolrIndex(solr_url, timeout=30), Principals.anonymous()), word[:6])
    assert [(item.text, item.kind) for item in shown] == [(f"{word} " + "q" * (150 - len(word) - 1), "title")]


def test_two_corpora_of_one_core_never_share_the_prefix_the_tests_type(
    solr: pysolr.Solr, directory_server: DirectoryServer
) -> None:
    """The tests above type a corpus's first five letters and expect its titles alone: a second
    corpus in the same core gets another five (its prefix is looked up in title_words first)."""
    first = Corpus(solr, directory_server)
    assert solr.search(f"title_words:{first.word[:5]}", rows=0).hits == len(first.access)  # the look-up finds them
    second = Corpus(solr, directory_server)
    assert second.word[:5] != first.word[:5]
