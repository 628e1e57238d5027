"""Suggestions while typing (web/suggestions.py) without Solr: the request carries the search's
whole trimming, every text typed is a parameter of its own, past queries are shown only when
Solr counted a readable document for them, and the list is bounded (a fake Solr client)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from searchcrawl.access.decision import Principal, Principals, solr_trimming
from searchcrawl.index.solr_client import IndexingError
from searchcrawl.search.query import UF
from searchcrawl.search.suggestions import (
    MAX_CANDIDATES,
    MAX_PREFIX_CHARS,
    MAX_SUGGESTIONS,
    QUERY,
    TIME_ALLOWED_MS,
    TITLE,
    Suggestion,
    candidates_of,
    clean,
    folded,
    suggest,
)
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.web.app import SECURITY_HEADERS, create_app
from searchcrawl.web.views.search_views import SEARCH_PAGE_CSP
from tests.web.test_app import unit_config


class FakeSolr:
    """Answers with ``titles`` as the documents and ``counts`` (candidate text -> count) as the
    facet queries' counts: the candidate's as typed, and ``words`` (candidate text -> count;
    ``counts`` when not given) every word's; keeps every request."""

    def __init__(
        self,
        titles: list[Any] = (),  # type: ignore[assignment]
        counts: dict[str, int] | None = None,
        words: dict[str, int] | None = None,
    ) -> None:
        self.titles, self.counts = list(titles), counts or {}
        self.words = self.counts if words is None else words
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def search(self, query: str, **params: Any) -> Any:
        self.asked.append((query, params))
        solr = self
        candidates = [params[name] for name in params if re.fullmatch(r"suggest_q[0-9]+", name)]

        class Results:
            docs = [{"title": title} for title in solr.titles[: params["rows"]]] if params["rows"] else []
            facets = {
                "facet_queries": {
                    **{f"suggest_q{number}": solr.counts.get(text, 0) for number, text in enumerate(candidates)},
                    **{f"suggest_t{number}": solr.words.get(text, 0) for number, text in enumerate(candidates)},
                }
            }

        return Results()


ALICE = Principals.of("alice", [Principal("group:finance", "test")])


def syntax(params: dict[str, Any]) -> str:
    """Every parameter Solr parses as query syntax, together."""
    parsed = [*params["fq"], *params.get("facet.query", []), params.get("sort", "")]
    parsed += [value for name, value in params.items() if name.startswith("suggest_m") or name == "suggest_start"]
    return "\n".join(parsed)


def test_titles_under_the_searchs_whole_trimming_with_the_text_as_parameters() -> None:
    solr = FakeSolr(["Harbour master's log", "Harbour tides"])
    found = suggest(TrimmedIndex(solr, ALICE), "harb ma")
    assert found == [Suggestion("Harbour master's log", TITLE), Suggestion("Harbour tides", TITLE)]
    ((query, params),) = solr.asked
    trimming, trimming_params = solr_trimming(ALICE)
    assert query == "*:*" and params["defType"] == "lucene"
    assert all(fq in params["fq"] for fq in trimming)
    assert all(params[name] == value for name, value in trimming_params.items())
    assert params["expandMacros"] == "false" and params["timeAllowed"] == TIME_ALLOWED_MS
    assert params["suggest_w0"] == "harb" and params["suggest_w1"] == "ma" and params["suggest_prefix"] == "harb ma"
    assert "harb" not in syntax(params)
    assert any(fq.startswith("{!collapse") and "title_key" in fq for fq in params["fq"])
    assert params["rows"] <= MAX_SUGGESTIONS + 4 and params["fl"] == "title"


def test_incomplete_principals_see_no_title_of_a_document_that_denies() -> None:
    solr = FakeSolr(["Harbour"])
    incomplete = Principals.of("alice", [], error="the directory did not answer")
    suggest(TrimmedIndex(solr, incomplete), "harb")
    trimming, _params = solr_trimming(incomplete)
    assert any("access_deny:[* TO *]" in fq for fq in trimming)
    assert all(fq in solr.asked[0][1]["fq"] for fq in trimming)


def test_past_queries_only_when_solr_counted_a_readable_document_for_them() -> None:
    solr = FakeSolr(["Harbour master's log"], {"harbour master": 3, "harbour merger": 0})
    found = suggest(TrimmedIndex(solr, Principals.anonymous()), "harb", ["harbour master", "harbour merger", "harbour nothing"])
    assert found == [Suggestion("harbour master", QUERY), Suggestion("Harbour master's log", TITLE)]
    params = solr.asked[0][1]
    assert params["uf"] == UF
    assert params["suggest_q0"] == "harbour master" and "harbour" not in syntax(params)
    assert params["suggest_t0"] == '"harbour" "master"'  # every word, each a phrase of its own
    assert len(params["facet.query"]) == 2 * 3
    for facet_query in params["facet.query"]:
        assert facet_query.startswith("{!edismax ") and "mm=100%" in facet_query
        assert "v=$suggest_q" in facet_query or ("v=$suggest_t" in facet_query and "uf=-*" in facet_query)
        assert "ex=suggest_titles,suggest_one_title" in facet_query  # counted under the trimming alone


def test_a_past_query_is_offered_only_when_every_word_of_it_finds_a_readable_document() -> None:
    """A past query that finds a readable document as typed, but with a word under an operator
    that no readable document holds (``-merger``), is not offered."""
    typed = ["harbour -merger", "harbour (merger OR master)", "harbour master"]
    solr = FakeSolr([], {text: 2 for text in typed}, {"harbour master": 1})
    assert suggest(TrimmedIndex(solr, Principals.anonymous()), "harb", typed) == [Suggestion("harbour master", QUERY)]
    params = solr.asked[0][1]
    assert (params["suggest_t0"], params["suggest_t1"]) == ('"harbour" "-merger"', '"harbour" "(merger" "OR" "master)"')


def test_a_hostile_candidate_or_prefix_stays_a_parameter() -> None:
    hostile = ["{!func}docfreq(content,'merger')", '_query_:"{!lucene}x"', "${access_tokens}", "a\\", 'a"']
    for prefix in ["{", "_", "$", "a", '"', "\\"]:
        solr = FakeSolr([], {text: 1 for text in hostile})
        found = suggest(TrimmedIndex(solr, Principals.anonymous()), prefix, hostile)
        params = solr.asked[0][1] if solr.asked else None
        if params is not None:
            assert params["expandMacros"] == "false"
            for text in hostile:
                assert text not in syntax(params)
        assert {item.text for item in found} <= set(hostile)


def test_candidates_begin_with_the_prefix_once_each_and_bounded() -> None:
    candidates = ["Harbour", "harbour", "  harbour   master ", "river", "h\x00x", "h" * 300, 5, *(f"h{n}" for n in range(20))]
    kept = candidates_of("HAR", candidates)  # type: ignore[arg-type]
    assert kept == ["Harbour", "harbour master"]
    assert len(candidates_of("h", candidates)) == MAX_CANDIDATES  # type: ignore[arg-type]
    assert "h x" in candidates_of("h", candidates)  # type: ignore[arg-type]


def test_queries_take_at_most_half_when_titles_fill_the_list() -> None:
    queries = [f"harbour {n}" for n in range(MAX_CANDIDATES)]
    titles = [f"Harbour title {n}" for n in range(20)]
    found = suggest(TrimmedIndex(FakeSolr(titles, {text: 1 for text in queries}), Principals.anonymous()), "harb", queries)
    assert len(found) == MAX_SUGGESTIONS
    assert [item.kind for item in found] == [QUERY] * (MAX_SUGGESTIONS // 2) + [TITLE] * (MAX_SUGGESTIONS // 2)
    few = suggest(TrimmedIndex(FakeSolr(["Harbour"], {text: 1 for text in queries}), Principals.anonymous()), "harb", queries)
    assert [item.kind for item in few] == [QUERY] * (MAX_SUGGESTIONS - 1) + [TITLE]


def test_one_suggestion_per_text_case_ignored_titles_cleaned_and_cut() -> None:
    found = suggest(
        TrimmedIndex(
            FakeSolr(["Harbour Master", "harbour master", ["Harbour\tlog\x07 x"], "H" * 1000, None, ""], {"harbour master": 1}),
            Principals.anonymous(),
        ),
        "h",
        ["harbour master"],
    )
    assert [item.text for item in found] == ["harbour master", "Harbour log x", "H" * 150]


def test_nothing_asked_for_nothing_typed_and_the_text_bounded() -> None:
    solr = FakeSolr(["x"])
    assert (
        suggest(TrimmedIndex(solr, Principals.anonymous()), "") == []
        and suggest(TrimmedIndex(solr, Principals.anonymous()), "  \x00 ") == []
    )
    assert suggest(TrimmedIndex(solr, Principals.anonymous()), "...") == []  # no word, no past query: no request
    assert solr.asked == []
    suggest(TrimmedIndex(solr, Principals.anonymous()), "harbour " * 5000)
    params = solr.asked[0][1]
    assert len(params["suggest_prefix"]) <= MAX_PREFIX_CHARS and sum(name.startswith("suggest_w") for name in params) <= 8
    assert clean(" harbour\x00  master ", 100) == "harbour master " and folded("Café  DÉJÀ") == "cafe deja"


def test_a_refused_candidate_costs_the_titles_nothing_and_a_failure_is_raised() -> None:
    class Refusing(FakeSolr):
        def search(self, query: str, **params: Any) -> Any:
            if "facet.query" in params:
                self.asked.append((query, params))
                raise IndexingError("refused", refused=True, status=400)
            return super().search(query, **params)

    solr = Refusing(["Harbour"])
    assert suggest(TrimmedIndex(solr, Principals.anonymous()), "harb", ["harbour x"]) == [Suggestion("Harbour", TITLE)]

    class Down(FakeSolr):
        def search(self, query: str, **params: Any) -> Any:
            raise IndexingError("down")

    with pytest.raises(IndexingError):
        suggest(TrimmedIndex(Down(), Principals.anonymous()), "harb", ["harbour x"])


def test_the_suggest_endpoint_and_the_search_pages_own_script_policy(tmp_path: Path) -> None:
    app = create_app(unit_config(tmp_path, user_header="X-Remote-User", proxies=("127.0.0.1",)))
    web = TestClient(app, base_url="http://127.0.0.1")
    solr = FakeSolr(["Harbour master's log"])
    app.state.web._solr = solr  # type: ignore[attr-defined]
    answer = web.get("/suggest", params={"q": "  harb\x00"})
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    assert answer.json() == {"q": "harb ", "suggestions": [{"text": "Harbour master's log", "kind": "title"}]}
    assert answer.headers["cache-control"] == "private, no-store"  # who asks decides what is suggested
    assert "script-src 'none'" in answer.headers["content-security-policy"]
    assert solr.asked[0][1]["access_tokens"] == "public"  # no user header believed: a visitor
    assert web.get("/suggest").json() == {"q": "", "suggestions": []} and len(solr.asked) == 1
    page = web.get("/")
    assert page.headers.get_list("content-security-policy") == [SEARCH_PAGE_CSP]
    assert "script-src 'self'" in SEARCH_PAGE_CSP and "connect-src 'self'" in SEARCH_PAGE_CSP
    assert "unsafe" not in SEARCH_PAGE_CSP
    assert '<script src="/static/suggest.js" defer></script>' in page.text and 'data-suggest="/suggest"' in page.text
    admin = web.get("/admin/login")
    assert admin.headers.get_list("content-security-policy") == [SECURITY_HEADERS["content-security-policy"]]
    assert "script-src 'none'" in admin.headers["content-security-policy"] and "<script" not in admin.text
    script = web.get("/static/suggest.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    code = re.sub(r"(^|\s)//.*", "", script.text)  # its comments say what it never does
    for unsafe in ("innerHTML", "eval(", "new Function", "document.write", "insertAdjacentHTML", "outerHTML", 'setTimeout("'):
        assert unsafe not in code
    assert "textContent" in code

    class Down(FakeSolr):
        def search(self, query: str, **params: Any) -> Any:
            raise IndexingError("down", reason="no answer")

    def broken_log(prefix: str) -> list[str]:
        raise RuntimeError("the query log's database is gone")

    app.state.web.query_candidates = broken_log  # type: ignore[attr-defined]
    assert web.get("/suggest", params={"q": "harb"}).json()["suggestions"] == [{"text": "Harbour master's log", "kind": "title"}]
    app.state.web._solr = Down()  # type: ignore[attr-defined]
    failed = web.get("/suggest", params={"q": "harb"})
    assert failed.status_code == 503 and failed.json() == {"q": "harb", "suggestions": []}


def test_suggestions_off_no_script_and_no_answer(tmp_path: Path) -> None:
    app = create_app(unit_config(tmp_path, suggestions=False))
    web = TestClient(app, base_url="http://127.0.0.1")
    app.state.web._solr = solr = FakeSolr(["Harbour"])  # type: ignore[attr-defined]
    page = web.get("/")
    assert "<script" not in page.text and "data-suggest" not in page.text
    assert page.headers.get_list("content-security-policy") == [SECURITY_HEADERS["content-security-policy"]]
    assert web.get("/suggest", params={"q": "h"}).status_code == 404 and solr.asked == []


def test_behind_a_reverse_proxy_the_script_asks_under_the_prefix(tmp_path: Path) -> None:
    app = create_app(unit_config(tmp_path, prefix="/search"))
    web = TestClient(app, base_url="http://127.0.0.1")
    app.state.web._solr = FakeSolr(["Harbour"])  # type: ignore[attr-defined]
    page = web.get("/search/")
    assert 'data-suggest="/search/suggest"' in page.text and 'src="/search/static/suggest.js"' in page.text
    assert web.get("/search/suggest", params={"q": "h"}).json()["suggestions"] == [{"text": "Harbour", "kind": "title"}]
    assert web.get("/search/static/suggest.js").status_code == 200
