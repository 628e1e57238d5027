"""`scrapy search` is the search page's search (issue 95, point 1): one ``run_search``
(search/results.py) for both, so the command gets the page's hits, its spelling suggestions and
its hybrid search; without Solr."""

from __future__ import annotations

import argparse
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from scrapy.settings import Settings

from searchcrawl.access.decision import Principals
from searchcrawl.commands import search as search_command
from searchcrawl.rules.ranking_rules import Rules
from searchcrawl.search import hybrid
from searchcrawl.search.hybrid import SemanticModel, SemanticSearch
from searchcrawl.search.query import MAX_QUERY_CHARS, Coordination
from searchcrawl.search.request import SearchRequest
from searchcrawl.search.results import MARK_CLOSE, MARK_OPEN, run_search
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.semantic.embedders import EmbeddingFailed
from tests.search.test_results import AskedSolr, answer


def doc(item: str, **fields: Any) -> dict[str, Any]:
    return {"id": item, "url": f"http://127.0.0.1/{item}", "title": item.title(), **fields}


class Model:
    model_id, dimension = "test/model/0123456789ab", 3

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 3), dtype=np.float32) / np.sqrt(3)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed(texts)


class Hybrid:
    """A TrimmedIndex whose words query finds ``words`` and whose kNN query finds ``meaning``
    (best first), every document readable; what it is asked, recorded."""

    def __init__(self, words: list[str], meaning: list[str]) -> None:
        self.words, self.meaning = words, meaning
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def nearest(self, field: str, vector: list[float], top_k: int, params: dict[str, Any]) -> SimpleNamespace:
        return SimpleNamespace(docs=[{"id": f"{p}#0", "parent_id": p, "score": 0.9} for p in self.meaning])

    def search(self, query: str, params: dict[str, Any], boosts: Any = None) -> SimpleNamespace:
        self.asked.append((query, dict(params)))
        chosen = next((f for f in params["fq"] if f.startswith("{!terms f=id")), None)
        if chosen is None:  # the words query
            return SimpleNamespace(hits=len(self.words), docs=[doc(i) for i in self.words], highlighting={}, facets={})
        return SimpleNamespace(docs=[doc(i) for i in chosen.split("}", 1)[1].split()], highlighting={})


def test_scrapy_search_asks_solr_what_the_page_asks_and_shows_its_hits() -> None:
    """The command's request is the page's for ``?q=...&source=...`` (but the facets it does not
    print), so the same hits in the same order."""
    found = [doc("a", source="intranet"), doc("b", source="intranet")]
    # each asks the search, then the nonsense rule's count of the documents holding both its words
    page_solr, command_solr = AskedSolr(answer(2, found), answer(2)), AskedSolr(answer(2, found), answer(2))
    request = SearchRequest.from_params([("q", " harbour master "), ("source", "intranet")])
    opted = Coordination(words="2<-1 4<60%")  # the words requirement (off by default) opted in: asked alike
    page = run_search(TrimmedIndex(page_solr, Principals.anonymous()), request, rows=20, coordination=opted)  # type: ignore[arg-type]
    shown = search_command.search(
        TrimmedIndex(command_solr, Principals.anonymous()),  # type: ignore[arg-type]
        " harbour master ",
        20,
        "intranet",
        coordination=opted,
    )
    (page_asked, page_counted), (command_asked, command_counted) = page_solr.asked, command_solr.asked
    assert command_asked.pop("facet") == "false" and page_asked.pop("facet") == "true"
    assert command_asked == page_asked and command_counted == page_counted
    assert [hit.url for hit in shown.hits] == [hit.url for hit in page.hits] == ["http://127.0.0.1/a", "http://127.0.0.1/b"]


def test_scrapy_search_gets_the_pages_spelling_suggestions_when_nothing_matches() -> None:
    """It ran a smaller search of its own, without "Did you mean"."""
    spelt = {"collations": ["collation", "harbor"]}
    counts = SimpleNamespace(facets={"facet_queries": {"spelling_0": 1}})
    solr = AskedSolr(answer(0), answer(0, spellcheck=spelt), counts)
    shown = search_command.search(TrimmedIndex(solr, Principals.anonymous()), "harbour")  # type: ignore[arg-type]
    assert shown.total == 0 and [text for text, _url in shown.suggestions] == ["harbor"]


def test_scrapy_search_gets_the_pages_hybrid_search_where_semantic_search_is_on() -> None:
    """It searched the words alone: what only meaning finds was not there."""
    semantic = SemanticSearch(SemanticModel(Model(), 0.5))
    index = Hybrid(["words1", "words2"], ["meaning", "words2"])
    page = run_search(index, SearchRequest(q="how do I park my car"), rows=10, semantic=semantic)  # type: ignore[arg-type]
    shown = search_command.search(index, "how do I park my car", 10, semantic=semantic)  # type: ignore[arg-type]
    assert [hit.url for hit in shown.hits] == [hit.url for hit in page.hits]
    assert "http://127.0.0.1/meaning" in {hit.url for hit in shown.hits} and shown.total == page.total == 3


def test_the_commands_lines_keep_their_format_and_any_schemes_url() -> None:
    """Rank and title, the display URL as indexed (a share's ``smb://`` too, which the page does
    not link), the snippet with its matches between asterisks, unescaped."""
    marked = {"s!1": {"content": [f"a {MARK_OPEN}harbour{MARK_CLOSE} & <b>"]}}
    found = [doc("s!1", url="smb://fs/share/a.txt", display_url="smb://fs/share/a.txt", title="")]
    solr = AskedSolr(SimpleNamespace(hits=1, docs=found, highlighting=marked, facets={}, spellcheck=None))
    shown = search_command.search(TrimmedIndex(solr, Principals.anonymous()), "harbour")  # type: ignore[arg-type]
    assert search_command.format_hits(shown) == ["1. (no title)", "   smb://fs/share/a.txt", "   a *harbour* & <b>"]


class AnySolr:
    """A SolrIndex whose every search finds the documents ``found`` (the words query, and the
    page's documents fetched after a fusion); what it is asked, recorded."""

    def __init__(self, *found: str) -> None:
        self.found = [doc(item) for item in found]
        self.asked: list[dict[str, Any]] = []

    def search(self, query: str, **params: Any) -> SimpleNamespace:
        self.asked.append({"q": query, **params})
        return SimpleNamespace(hits=len(self.found), docs=self.found, highlighting={}, facets={}, spellcheck=None)


class Silent(Model):
    """A model server that does not answer."""

    def __init__(self) -> None:
        self.asked = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.asked += 1
        raise EmbeddingFailed("http://127.0.0.1:1/v1 did not answer in 1 s")

    embed_queries = embed


def run_command(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    query: str = "harbour",
    rows: int = 10,
    embeddings: str = "",
    solr: AnySolr | None = None,
) -> tuple[int, str, str]:
    """``scrapy search <query> --rows <rows> -s SEARCHCRAWL_EMBEDDINGS=<embeddings>``'s exit code,
    stdout and stderr, against a stand-in Solr (one hit) and no relevance rules."""
    monkeypatch.setattr(search_command, "SolrIndex", lambda *_args, **_kwargs: solr or AnySolr("a"))
    monkeypatch.setattr(search_command, "rules_of", lambda _url: Rules())
    command = search_command.Command()
    command.settings = Settings(
        {"SOLR_URL": "http://127.0.0.1:1/solr/docs", "SEARCHCRAWL_EMBEDDINGS": embeddings, "SEARCHCRAWL_EMBED_TIMEOUT": 1}
    )
    command.run(query.split(" "), argparse.Namespace(rows=rows, source=None, user=None))
    out = capsys.readouterr()
    return command.exitcode, out.out, out.err


def test_scrapy_search_goes_on_with_the_words_when_the_embeddings_setting_is_wrong(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review R, 2: an `openai:` model without its dimension ended the operator's search in a
    traceback (DimensionMismatch); the words are searched, and why semantic search is off said."""
    code, out, err = run_command(monkeypatch, capsys, embeddings="openai:http://127.0.0.1:1/v1?model=m")
    assert code == 0 and "1. A\n   http://127.0.0.1/a" in out
    (line,) = err.splitlines()
    assert line.startswith("searchcrawl: semantic search off: DimensionMismatch: ") and "dimension" in line


def test_scrapy_search_says_when_semantic_search_was_not_applied(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review R, 2: a model server that does not answer cost its timeout twice (the probe, then the
    query), said nothing (the command's logging is off), and left words-only hits; now it is asked
    once, and said."""
    silent = Silent()
    monkeypatch.setattr(hybrid, "embedder_from", lambda text, timeout: silent if text else None)
    code, out, err = run_command(monkeypatch, capsys, embeddings="openai:http://127.0.0.1:1/v1?model=m&dimension=384")
    assert code == 0 and "http://127.0.0.1/a" in out
    assert err.splitlines() == ["searchcrawl: semantic search off: EmbeddingFailed: http://127.0.0.1:1/v1 did not answer in 1 s"]
    assert silent.asked == 1


def test_scrapy_search_prints_the_query_it_searched(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Review R, 6: a query past MAX_QUERY_CHARS is cut, as the page cuts it: the header shows the
    text searched, and stderr says it was cut."""
    solr = AnySolr("a")
    long = "harbour " * (MAX_QUERY_CHARS // 8 + 10)
    code, out, err = run_command(monkeypatch, capsys, query=long, solr=solr)
    searched = long.strip()[:MAX_QUERY_CHARS]
    assert code == 0 and solr.asked[0]["q"] == searched
    assert f"{searched!r}" in out.splitlines()[0] and f"{long.strip()!r}" not in out
    assert err.splitlines() == [f"searchcrawl: the query was cut to its first {MAX_QUERY_CHARS} characters"]
    code, out, err = run_command(monkeypatch, capsys, query="harbour")
    assert out.splitlines()[0].endswith("'harbour'") and err == ""


def test_scrapy_search_says_when_rows_exceed_the_fused_window(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review R, 6: ``--rows`` past the fused window (100) gives the words' order, not the hybrid
    one: said on stderr; within it, fused, and nothing said."""
    monkeypatch.setattr(hybrid, "embedder_from", lambda text, timeout: Model() if text else None)
    setting = "openai:http://127.0.0.1:1/v1?model=m&dimension=384&floor=0.5"
    _code, _out, err = run_command(monkeypatch, capsys, rows=200, embeddings=setting)
    assert err.splitlines() == [
        "searchcrawl: hybrid search off: --rows 200 is above the fused window of 100 hits (the words' order alone)"
    ]
    _code, _out, err = run_command(monkeypatch, capsys, rows=10, embeddings=setting)
    assert err == ""


def test_the_demo_says_whether_it_searches_hybrid_and_with_which_model() -> None:
    """Issue 100: `scrapy demo` searches as `scrapy search` does, hybrid with the default model, and
    says so; words alone where semantic search cannot be had, with where to look."""
    from searchcrawl.commands.demo import QUERIES, searching_how

    hybrid_line = searching_how(SemanticSearch(SemanticModel(Model(), 0.82)))  # type: ignore[arg-type]
    assert hybrid_line == "Searching hybrid: words and meaning (test/model/0123456789ab, similarity floor 0.82), fused."
    assert searching_how(None).startswith("Searching by words alone: semantic search is off")
    assert "doctor` says why" in searching_how(None)
    assert "protect my computer from hackers" in QUERIES  # a question its page answers in other words
