"""Relevance rules against a real Solr (a core of their own: synonyms and stopwords are the
core's): a boost reorders, a demotion too, newer first, a synonym finds a document that lacks
the word and a stopword stops one, both without restarting Solr, and a best bet is shown above
the hits, but never one the searcher may not read; a best bet edited on the relevance page pins
its new URL, and a scheduled one is shown only between its start and its end, on the search
page and in the JSON API alike."""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pysolr
import pytest
from starlette.testclient import TestClient

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.access.tokens import Access, Grant
from searchcrawl.commands.search import rules_of
from searchcrawl.dev.solr_runner import DevSolr
from searchcrawl.index import managed
from searchcrawl.index.solr_client import IndexingError, SolrIndex
from searchcrawl.rules.ranking_rules import BestBet, Boost, Rules, parse_boost, synonym_map
from searchcrawl.search.evaluation import JudgedQuery, read_qrels
from searchcrawl.search.relevance_params import boost_params
from searchcrawl.search.request import SearchRequest
from searchcrawl.search.results import judged_run, run_search
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.search.why import why
from searchcrawl.store import Database
from searchcrawl.store.api_tokens import ApiTokens
from searchcrawl.store.relevance_rules import RelevanceStore
from searchcrawl.store.searches import Searches, shown_json
from searchcrawl.web.app import WebConfig, create_app
from tests.conftest import Project, add_core, wait_for
from tests.web.test_relevance import admin_client

BASE = "http://relevance.test"
PUBLIC = Access.public("test")
FINANCE = Access.of([Grant.of("group:finance", "test")])
ALICE = Principals.of("alice", [Principal("group:finance", "test")])
DOCS = [
    # (path, source, mimetype, last modified, content, access): "old" and "new" differ in nothing
    # the query sees, so Solr's own order between them is the index's (old first)
    ("wiki/old", "wiki", "text/html", "2015-01-01T00:00:00Z", "tide tables of the harbour", PUBLIC),
    ("docs/new", "docs", "application/pdf", "2026-11-01T00:00:00Z", "tide tables of the harbour", PUBLIC),
    ("wiki/parking", "wiki", "text/html", "2024-01-01T00:00:00Z", "automobile parking rules quux", PUBLIC),
    ("secret/board", "finance", "text/html", "2024-01-01T00:00:00Z", "board minutes of the finance committee", FINANCE),
]


@pytest.fixture(scope="module")
def index(dev_solr: DevSolr) -> Iterator[SolrIndex]:
    url = add_core(dev_solr, f"relevance_{uuid.uuid4().hex[:8]}")
    docs = []
    for path, source, mimetype, modified, content, held in DOCS:
        link = f"{BASE}/{path}"
        docs.append(
            {
                "id": f"{source}!{link}",
                "url": link,
                "display_url": link,
                "source": source,
                "title": path,
                "mimetype": mimetype,
                "last_modified": modified,
                "content": content,
                **held.fields(),
            }
        )
    pysolr.Solr(url, always_commit=True, timeout=30).add(docs)
    yield SolrIndex(url)
    managed.sync(SolrIndex(url), {}, [])


def urls(index: SolrIndex, query: str, rules: Rules | None = None, principals: Principals | None = None) -> list[str]:
    page = run_search(TrimmedIndex(index, principals or Principals.anonymous()), SearchRequest(q=query), rules=rules)
    return [hit.url.removeprefix(BASE + "/") for hit in page.hits]


def test_a_boost_reorders_and_a_demotion_too(index: SolrIndex) -> None:
    assert urls(index, "tide harbour") == ["wiki/old", "docs/new"]
    assert urls(index, "tide harbour", Rules(boosts=(Boost("url", f"{BASE}/docs/", 2.0),))) == ["docs/new", "wiki/old"]
    assert urls(index, "tide harbour", Rules(boosts=(Boost("source", "wiki", 0.5),))) == ["docs/new", "wiki/old"]
    assert urls(index, "tide harbour", Rules(boosts=(Boost("type", "application/pdf", 3.0),))) == ["docs/new", "wiki/old"]
    assert urls(index, "tide harbour", Rules(boosts=(Boost("age", "365", 2.0),))) == ["docs/new", "wiki/old"]
    assert urls(index, "tide harbour", Rules(boosts=(Boost("glob", "http://*/d?cs/*", 2.0),))) == ["docs/new", "wiki/old"]
    # rules that match nothing leave the order; a hostile value is a literal prefix or pattern, no query syntax
    probe = "\"} OR *:* _query_:\"{!func}docfreq(content,'board')"
    for kind in ("url", "glob", "source"):
        assert urls(index, "tide harbour", Rules(boosts=(Boost(kind, probe, 50.0),))) == ["wiki/old", "docs/new"]
    assert urls(index, "tide harbour", Rules(boosts=(Boost("glob", "* OR url:*new", 50.0),))) == ["wiki/old", "docs/new"]


def test_synonyms_and_stopwords_apply_without_a_restart(index: SolrIndex) -> None:
    assert urls(index, "car") == []
    assert urls(index, "quux") == ["wiki/parking"]
    assert managed.sync(index, synonym_map([("car", "automobile")]), ["quux"]) is True
    assert urls(index, "car") == ["wiki/parking"]  # the document says "automobile" only
    assert urls(index, "quux") == []  # a stopword now
    assert urls(index, "cars parking") == ["wiki/parking"]
    assert managed.sync(index, synonym_map([("car", "automobile")]), ["quux"]) is False  # nothing to change
    assert managed.current(index) == ({"automobile": ["automobile", "car"], "car": ["automobile", "car"]}, ["quux"])
    assert managed.sync(index, {}, []) is True  # deleted in the database: deleted in Solr
    assert urls(index, "car") == [] and urls(index, "quux") == ["wiki/parking"]


def test_a_best_bet_is_shown_above_the_hits_and_not_repeated(index: SolrIndex) -> None:
    rules = Rules(bets=(BestBet(("tide harbour",), (f"{BASE}/docs/new", f"{BASE}/wiki/parking")),))
    page = run_search(TrimmedIndex(index, Principals.anonymous()), SearchRequest(q="Tide  Harbour"), rules=rules)
    assert [hit.url for hit in page.bets] == [f"{BASE}/docs/new", f"{BASE}/wiki/parking"]
    assert [hit.url for hit in page.hits] == [f"{BASE}/wiki/old"] and page.total == 2
    # issue 72: "2 documents match; showing 1-1" read as a document lost; the bet among them is counted
    assert page.showing() == "showing 1&ndash;2, the best bet above among them, and 1 more best bet above"


def test_a_best_bet_the_searcher_may_not_read_shows_nothing(index: SolrIndex) -> None:
    secret = f"{BASE}/secret/board"
    rules = Rules(bets=(BestBet(("tide harbour",), (secret,)), BestBet(("parking",), (secret, f"{BASE}/wiki/old"))))
    page = run_search(TrimmedIndex(index, Principals.anonymous()), SearchRequest(q="tide harbour"), rules=rules)
    assert page.bets == [] and [hit.url for hit in page.hits] == [f"{BASE}/wiki/old", f"{BASE}/docs/new"]
    page = run_search(TrimmedIndex(index, Principals.anonymous()), SearchRequest(q="parking"), rules=rules)
    assert [hit.url for hit in page.bets] == [f"{BASE}/wiki/old"]
    page = run_search(TrimmedIndex(index, ALICE), SearchRequest(q="tide harbour"), rules=rules)  # she may read it
    assert [hit.url for hit in page.bets] == [secret] and page.bets[0].title == "secret/board"


def test_scrapy_search_applies_the_databases_best_bets_and_boosts(index: SolrIndex, tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    project = Project(tmp_path / "data", tmp_path / "sources", index.url)
    db_url = f"sqlite:///{tmp_path / 'data' / 'documents.sqlite3'}"
    database = Database(db_url)
    store = RelevanceStore(database)
    store.add_boost(Boost("source", "wiki", 0.5))
    store.add_bet(BestBet(("tide harbour",), (f"{BASE}/secret/board", f"{BASE}/wiki/parking")))
    database.close()
    rules = rules_of(db_url)
    assert rules.boosts == (Boost("source", "wiki", 0.5, 1),) and rules.pinned("Tide harbour")
    assert rules_of(f"sqlite:///{tmp_path / 'none' / 'documents.sqlite3'}") == Rules()  # nothing made yet: none
    searched = project.scrapy("search", "tide", "harbour")
    assert searched.returncode == 0, searched.stdout + searched.stderr
    lines = searched.stdout.splitlines()
    # the best bet the visitor may read, above the hits; the secret one not; the demoted wiki page second
    assert lines[:3] == ["Best bet: wiki/parking", f"   {BASE}/wiki/parking", "2 documents match 'tide harbour'"]
    assert [line for line in lines if line[:2] in ("1.", "2.")] == ["1. docs/new", "2. wiki/old"]
    assert "secret" not in searched.stdout and searched.stderr == ""


def web_app(index: SolrIndex, tmp_path: Path, db_url: str) -> TestClient:
    config = WebConfig(
        solr_url=index.url,
        db_url=db_url,
        cache_root=tmp_path / "cache",
        project_dir=tmp_path,
        source_names=lambda: [],
        schedule_of=lambda name: None,
        launcher=None,  # type: ignore[arg-type] # nothing is started here
        relevance_sync_at_start=False,
    )
    return TestClient(create_app(config), base_url="http://127.0.0.1")


def test_the_search_page_hints_at_no_best_bet_the_searcher_may_not_read(index: SolrIndex, tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'documents.sqlite3'}"
    database = Database(db_url)
    store = RelevanceStore(database)
    store.add_bet(BestBet(("tide harbour",), (f"{BASE}/secret/board",)))
    store.add_bet(BestBet(("parking",), (f"{BASE}/secret/board", f"{BASE}/docs/new")))
    database.close()
    web = web_app(index, tmp_path, db_url)
    hidden = web.get("/", params={"q": "tide harbour"})
    assert hidden.status_code == 200 and "wiki/old" in hidden.text
    assert "Best bet" not in hidden.text and "secret" not in hidden.text and "bestbets" not in hidden.text
    shown = web.get("/", params={"q": "Parking"}).text
    bets = shown[shown.index('class="bestbets"') : shown.index("</section>", shown.index('class="bestbets"'))]
    assert "Best bet" in bets and f"{BASE}/docs/new" in bets and "secret" not in shown


def test_the_count_line_counts_a_best_bet_among_the_matches(index: SolrIndex, tmp_path: Path) -> None:
    """Issue 72: with a best bet, "2 documents match; showing 1-1" read as a bug: the bet, one of
    the matches, is shown above the list and not repeated in it. The range counts it now."""
    db_url = f"sqlite:///{tmp_path / 'documents.sqlite3'}"
    database = Database(db_url)
    RelevanceStore(database).add_bet(BestBet(("tide harbour",), (f"{BASE}/docs/new",)))
    RelevanceStore(database).add_bet(BestBet(("parking",), (f"{BASE}/wiki/old",)))
    database.close()
    web = web_app(index, tmp_path, db_url)

    def summary(query: str) -> str:
        found = re.search(r'<p class="summary">([^<]*)</p>', web.get("/", params={"q": query}).text)
        assert found is not None, query
        return found[1]

    assert summary("tide harbour") == "2 documents match; showing 1&ndash;2, the best bet above among them."
    assert summary("parking") == "1 document matches; showing 1&ndash;1, and 1 best bet above."  # a bet not matching
    assert summary("automobile") == "1 document matches; showing 1&ndash;1."  # no bet: as before


def test_a_database_that_cannot_be_read_leaves_search_working(
    index: SolrIndex, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    web = web_app(index, tmp_path, "postgresql+psycopg://nobody@127.0.0.1:9/none?connect_timeout=2")
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            page = web.get("/", params={"q": "tide harbour"})
            assert page.status_code == 200 and "2 documents match" in page.text
    assert len([record for record in caplog.records if "Relevance rules cannot be read" in record.message]) == 1


def test_the_why_page_ranks_and_scores_with_the_boosts(index: SolrIndex) -> None:
    target = f"{BASE}/docs/new"
    assert why(TrimmedIndex(index, Principals.anonymous()), "tide harbour", target).rank == 2
    boosted = why(TrimmedIndex(index, Principals.anonymous()), "tide harbour", target, (Boost("url", f"{BASE}/docs/", 2.0),))
    assert boosted.rank == 1 and boosted.found


def test_scrapy_web_sends_the_databases_synonyms_to_a_solr_that_lost_them(index: SolrIndex, tmp_path: Path) -> None:
    """A dev Solr copies its conf/ afresh at each start: the managed synonyms are gone, and the
    web application sends them again when it starts."""
    db_url = f"sqlite:///{tmp_path / 'documents.sqlite3'}"
    database = Database(db_url)
    RelevanceStore(database).add_synonyms(("car", "automobile"))
    RelevanceStore(database).add_stopword("quux")
    database.close()
    assert managed.current(index) == ({}, [])
    web = web_app(index, tmp_path, db_url)
    web.app.state.web.config.relevance_sync_at_start = True  # type: ignore[attr-defined]
    try:
        with web:  # the application's start (lifespan)
            wait_for(lambda: urls(index, "car") == ["wiki/parking"], 60, "the synonyms sent and applied")
            assert managed.current(index) == ({"automobile": ["automobile", "car"], "car": ["automobile", "car"]}, ["quux"])
    finally:
        managed.sync(index, {}, [])


def test_a_rule_solr_cannot_run_never_breaks_search(index: SolrIndex, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A URL pattern too complex for Lucene's wildcard automaton (TooComplexToDeterminize: Solr 9
    answers 500), put straight into the database past the page's validation: the search page,
    the why page and `scrapy search` still answer, without the boosts, and say so in the log."""
    bad = Boost("glob", "*a" + "?" * 15, 2.0)
    with pytest.raises(IndexingError):  # Solr 9.x: HTTP 500
        index.search("tide harbour", **boost_params([bad]))
    for worst in ("*a???", "*???", "?*?*", "*a*?"):  # the most complex patterns the page lets through run
        index.search("tide harbour", **boost_params([parse_boost("glob", worst, "2")]))
    (tmp_path / "data").mkdir()
    db_url = f"sqlite:///{tmp_path / 'data' / 'documents.sqlite3'}"
    database = Database(db_url)
    RelevanceStore(database).add_boost(bad)
    RelevanceStore(database).add_boost(Boost("source", "wiki", 0.5))
    database.close()
    web = web_app(index, tmp_path, db_url)
    with caplog.at_level(logging.WARNING):
        page = web.get("/", params={"q": "tide harbour"})
    assert page.status_code == 200 and "2 documents match" in page.text
    assert any("refused the boosts" in record.message for record in caplog.records)
    assert why(TrimmedIndex(index, Principals.anonymous()), "tide harbour", f"{BASE}/docs/new", (bad,)).found
    project = Project(tmp_path / "data", tmp_path / "sources", index.url)
    searched = project.scrapy("search", "tide", "harbour")
    assert searched.returncode == 0 and "2 documents match" in searched.stdout, searched.stdout + searched.stderr


def test_an_edited_bet_pins_its_new_url_and_a_scheduled_one_only_while_active(index: SolrIndex, tmp_path: Path) -> None:
    """Through the relevance page and the real web application: the search page and /api/search
    show the same best bets (one function), decided at each search."""
    web, csrf = admin_client(tmp_path, solr_url=index.url)
    _id, token = ApiTokens(Database(f"sqlite:///{tmp_path / 'documents.sqlite3'}")).create("portal")

    def pinned(query: str) -> list[str]:
        """The best bets of the search page and of the API, which must agree."""
        page = web.get("/", params={"q": query})
        assert page.status_code == 200
        start = page.text.find('class="bestbets"')
        section = page.text[start : page.text.index("</section>", start)] if start >= 0 else ""
        shown = [url for url in (f"{BASE}/docs/new", f"{BASE}/wiki/old", f"{BASE}/wiki/parking") if url in section]
        answer = web.get("/api/search", params={"q": query}, headers={"authorization": f"Bearer {token}"})
        assert answer.status_code == 200
        assert sorted(bet["url"] for bet in answer.json()["best_bets"]) == shown
        return [url.removeprefix(BASE + "/") for url in shown]

    def post(**data: str) -> None:
        answer = web.post("/admin/relevance", data={"csrf": csrf, **data}, follow_redirects=False)
        assert answer.status_code == 303, answer.text

    post(action="add-bet", queries="tide harbour", urls=f"{BASE}/wiki/parking")
    assert pinned("tide harbour") == ["wiki/parking"]
    (bet,) = web.app.state.web.relevance.get().bets  # type: ignore[attr-defined]
    post(action="edit-bet", key=str(bet.id), queries="tide harbour", urls=f"{BASE}/docs/new")
    assert pinned("Tide Harbour") == ["docs/new"]  # the new URL, the old one no longer
    # a bet whose start is to come is not shown; one whose end is past neither; the same bet once active is
    post(action="add-bet", queries="parking", urls=f"{BASE}/wiki/old", start="2999-01-01")
    assert pinned("parking") == []
    later = web.app.state.web.relevance.get().bets[1]  # type: ignore[attr-defined]
    post(action="edit-bet", key=str(later.id), queries="parking", urls=f"{BASE}/wiki/old", start="2020-01-01", end="2020-12-31")
    assert pinned("parking") == []
    states = web.get("/admin/relevance").text
    assert f'<tr id="bet-{bet.id}" class="bet active">' in states and f'<tr id="bet-{later.id}" class="bet expired">' in states
    post(action="edit-bet", key=str(later.id), queries="parking", urls=f"{BASE}/wiki/old", start="2020-01-01")
    assert pinned("parking") == ["wiki/old"]


def judged_set(folder: Path) -> tuple[str, str]:
    """A query file and its judgments over DOCS (paths, matched on any host)."""
    queries, qrels = folder / "queries.tsv", folder / "qrels.txt"
    queries.write_text("t1\tkeyword\ttide harbour\np1\tquestion\tautomobile parking\nb1\tkeyword\tboard minutes\n")
    qrels.write_text("t1 0 /docs/new 2\nt1 0 /wiki/old 1\np1 0 /wiki/parking 2\nb1 0 /secret/board 2\n")
    return str(queries), str(qrels)


def test_scrapy_relevance_measures_the_search_page_and_compares_two_rankings(index: SolrIndex, tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    project = Project(tmp_path / "data", tmp_path / "sources", index.url)
    database = Database(f"sqlite:///{tmp_path / 'data' / 'documents.sqlite3'}")
    RelevanceStore(database).add_boost(Boost("source", "wiki", 0.5))  # the page's rule: the answer first
    database.close()
    queries, qrels = judged_set(tmp_path)
    saved = tmp_path / "page.run"
    measured = project.scrapy(
        "relevance", "all", "--queries", queries, "--judgments", qrels, "--save", str(saved), "--against", "plain"
    )
    assert measured.returncode == 0, measured.stdout + measured.stderr
    lines = measured.stdout.splitlines()
    assert lines[0].startswith("3 judged queries over all sources, ranking 'page'")
    # each query's first answer: first under the page's boost; the secret page, not readable, nowhere
    assert [line.split()[:3] for line in lines if line.split()[:1] in (["t1"], ["p1"], ["b1"])] == [
        ["t1", "keyword", "1"],
        ["p1", "question", "1"],
        ["b1", "keyword", "-"],
    ]
    assert any(line.split()[:1] == ["wiki"] for line in lines)  # per source: the judged pages' source
    mrr = next(line.split() for line in lines if line.startswith("mrr@10") and len(line.split()) == 7)
    assert mrr[1:4] == ["0.500", "0.667", "+0.167"]  # plain (the answer second) against the page
    assert saved.read_text().splitlines()[0] == f"t1 Q0 {BASE}/docs/new 1 2 page"
    # the saved run compared with a plain run now, as JSON
    again = project.scrapy(
        "relevance", "all", "--queries", queries, "--judgments", qrels, "--ranking", "plain", "--compare", str(saved), "--json"
    )
    assert again.returncode == 0, again.stdout + again.stderr
    found = json.loads(again.stdout)
    assert found["by_kind"]["all"]["queries"] == 3 and found["by_kind"]["keyword"]["queries"] == 2
    row = next(row for row in found["comparison"] if row["metric"] == "mrr@10")
    assert (round(row["before"], 3), round(row["after"], 3), row["better"], row["worse"]) == (0.667, 0.5, 0, 1)


def test_a_judged_set_is_trimmed_to_its_searcher(index: SolrIndex) -> None:
    """Run as Alice, the finance page is found; as the public, never (judged_run, as the command)."""
    queries = [JudgedQuery("b1", "keyword", "board minutes")]
    as_alice = judged_run(TrimmedIndex(index, ALICE), queries, None, Rules(), "page")[0]
    as_public = judged_run(TrimmedIndex(index, Principals.anonymous()), queries, None, Rules(), "page")[0]
    assert as_alice == {"b1": [f"{BASE}/secret/board"]} and as_public == {"b1": []}


def test_a_bad_judgments_file_is_a_usage_error_naming_its_line(index: SolrIndex, tmp_path: Path) -> None:
    project = Project(tmp_path / "data", tmp_path / "sources", index.url)
    queries, qrels = judged_set(tmp_path)
    Path(qrels).write_text("t1 0 /docs/new 5\n")
    result = project.scrapy("relevance", "all", "--queries", queries, "--judgments", qrels)
    assert result.returncode == 2 and f"{qrels}:1: grade 5 is not one of 0, 1, 2" in result.stderr


def test_the_relevance_page_measures_a_judged_set_as_the_command_does(index: SolrIndex, tmp_path: Path) -> None:
    judged = tmp_path / "judged" / "harbour"
    judged.mkdir(parents=True)
    judged_set(judged)
    web, _csrf = admin_client(tmp_path, solr_url=index.url, judged_dir=tmp_path / "judged")
    page = web.get("/admin/relevance/measure", params={"set": "harbour", "ranking": "page", "against": "plain"})
    assert page.status_code == 200, page.text
    rows = re.findall(
        r'<tr class="query"><td>(\w+)</td><td>(\w+)</td><td><a [^>]*>([^<]*)</a></td><td class="number">([^<]*)</td>', page.text
    )
    # a visitor's view: Solr's own order puts the old wiki page first; the finance page is never found
    assert rows == [
        ("t1", "keyword", "tide harbour", "2"),
        ("p1", "question", "automobile parking", "1"),
        ("b1", "keyword", "board minutes", "-"),
    ]
    assert "page against plain" in page.text and "finance" not in page.text


def test_scrapy_relevance_writes_a_judged_set_from_the_logged_clicks(tmp_path: Path) -> None:
    """The query analytics' searches and clicks (as the web application logs them) read as
    judgments: written where the relevance page finds them, readable by their owner alone, and
    read back by the command itself."""
    (tmp_path / "data").mkdir()
    project = Project(tmp_path / "data", tmp_path / "sources", "http://127.0.0.1:9/solr/none")  # no search is run
    database = Database(f"sqlite:///{tmp_path / 'data' / 'documents.sqlite3'}")
    shown = [f"{BASE}/wiki/old", f"{BASE}/docs/new", f"{BASE}/wiki/parking"]
    at = datetime.now(UTC) - timedelta(hours=1)
    row = {"query": "Tide  harbour", "normalized": "tide harbour", "filters": "[]", "sort": "", "hits": 3, "took_ms": 5}
    searches, clicks = [], []
    for number in range(3):  # the first hit passed over, the second opened and stayed on, three times
        search_id = f"s{number}"
        searches.append({**row, "id": search_id, "at": at, "page": 1, "client": "web", "shown": shown_json(1, shown)})
        clicks.append({"search_id": search_id, "position": 2, "url": shown[1], "at": at + timedelta(seconds=3)})
    Searches(database).write(searches, clicks)
    database.close()
    made = project.scrapy("relevance", "--from-clicks")
    assert made.returncode == 0, made.stdout + made.stderr
    folder = tmp_path / "data" / "judged" / "clicks"
    assert "1 queries, 2 judgments from 3 searches with a click" in made.stdout and str(folder) in made.stdout
    assert (folder / "queries.tsv").read_text() == "c001\tclicks\tTide harbour\n"
    assert read_qrels((folder / "qrels.txt").read_text()) == {
        "c001": {"relevance.test/docs/new": 2, "relevance.test/wiki/old": 0}
    }
    assert {oct((folder / name).stat().st_mode & 0o777) for name in ("queries.tsv", "qrels.txt")} == {"0o600"}


def test_names_are_found_by_their_parts_and_urls_by_their_paths_words_alone(dev_solr: DevSolr) -> None:
    """Schema searchcrawl-5 (issue 75): a dotted or camel-case name is found by its parts and
    whole; a web URL's path words are searched, never its host's (they matched every page of a
    site: the judged sets lost 0.006-0.03 nDCG@10 to them), nor a file URL's folders (a share's
    root folder matched every file under it)."""
    url = add_core(dev_solr, f"words_{uuid.uuid4().hex[:8]}")
    docs = [
        ("http://intranet.example/hr/holiday-form.html", "Leave requests are made here."),
        ("file:///srv/intranet/budget/plan.txt", "Numbers for next year."),
        ("http://intranet.example/api/Fetcher.html", "Throws java.lang.NoClassDefFoundError when a FetchSchedule is missing."),
    ]
    pysolr.Solr(url, always_commit=True, timeout=30).add(
        [
            {"id": f"w!{link}", "url": link, "display_url": link, "source": "w", "content": text, **PUBLIC.fields()}
            for link, text in docs
        ]
    )
    index = SolrIndex(url)

    def found(query: str) -> set[str]:
        page = run_search(TrimmedIndex(index, Principals.anonymous()), SearchRequest(q=query))
        return {hit.url.rsplit("/", 1)[-1] for hit in page.hits}

    assert found("holiday") == {"holiday-form.html"}  # the path's words
    assert found("intranet") == set() and found("srv") == set() and found("budget") == set()  # no host, no file folders
    for query in ("NoClassDefFoundError", "java.lang.NoClassDefFoundError", "fetch schedule", "FetchSchedule"):
        assert found(query) == {"Fetcher.html"}, query
