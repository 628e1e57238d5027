"""Relevance rules without servers: validation of every field, best-bet matching, the Solr
parameters built from the rules (nothing typed becomes query syntax), the rule cache failing
open, the pinned documents asked under the searcher's trimming, and the admin page's forms."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import requests
from starlette.testclient import TestClient

from searchcrawl.access.decision import Principals, solr_trimming
from searchcrawl.index import managed
from searchcrawl.index.solr_client import IndexingError, SolrIndex
from searchcrawl.rules.ranking_rules import (
    MAX_PINNED,
    BestBet,
    Boost,
    RelevanceError,
    RuleCache,
    Rules,
    edit_form,
    format_end,
    format_start,
    normal_query,
    parse_bet,
    parse_boost,
    parse_stopword,
    parse_synonyms,
    parse_when,
    rule_forms,
    synonym_map,
)
from searchcrawl.search import trimmed_index
from searchcrawl.search.relevance_params import boost_params, wildcard_term
from searchcrawl.search.request import SearchRequest
from searchcrawl.search.results import run_search
from searchcrawl.search.trimmed_index import OncePer, TrimmedIndex
from searchcrawl.store.relevance_rules import RelevanceStore
from searchcrawl.web.app import create_app
from tests.search.test_results import AskedSolr
from tests.web.test_app import PASSWORD, unit_config


def test_best_bets_match_the_whole_normalised_query() -> None:
    bet = parse_bet("  Holiday   FORM\nleave request\nholiday form", "https://intranet/holiday\nhttps://intranet/leave")
    assert bet.queries == ("holiday form", "leave request") and bet.urls == ("https://intranet/holiday", "https://intranet/leave")
    rules = Rules(bets=(bet, BestBet(("holiday form",), ("https://intranet/leave", "https://intranet/other"))))
    assert rules.pinned("HOLIDAY\tform ") == ["https://intranet/holiday", "https://intranet/leave", "https://intranet/other"]
    assert rules.pinned("holiday") == [] and rules.pinned("holiday form 2024") == [] and rules.pinned("") == []
    many = Rules(bets=(BestBet(("x",), tuple(f"https://h/{n}" for n in range(30))),))
    assert len(many.pinned("x")) == MAX_PINNED
    assert normal_query("  Ärger \u00a0 ÜBER ") == "ärger über"


@pytest.mark.parametrize(
    ("queries", "urls"),
    [
        ("", "https://h/a"),
        ("q", ""),
        ("q", "javascript:alert(1)"),
        ("q", "https://h/a b"),
        ("q", "intranet/page"),
        ("q" * 201, "https://h/a"),
        ("\n".join(f"q{n}" for n in range(21)), "https://h/a"),
        ("q", "\n".join(f"https://h/{n}" for n in range(11))),
        ("q", "https://h/" + "a" * 2000),
    ],
)
def test_a_best_bet_out_of_bounds_is_refused(queries: str, urls: str) -> None:
    with pytest.raises(RelevanceError):
        parse_bet(queries, urls)


def test_boosts_are_validated_and_bounded() -> None:
    assert parse_boost("url", " https://intranet/policies/ ", "2") == Boost("url", "https://intranet/policies/", 2.0)
    assert parse_boost("age", "365", "3").value == "365"
    assert parse_boost("type", "application/pdf", "0.5").factor == 0.5
    for kind, value, factor in [
        ("regex", "x", "2"),
        ("url", "", "2"),
        ("url", "x", "1"),
        ("url", "x", "nan"),
        ("url", "x", "inf"),
        ("url", "x", "101"),
        ("url", "x", "0"),
        ("url", "x", "-2"),
        ("url", "x\ny", "2"),
        ("url", "x" * 501, "2"),
        ("age", "0", "2"),
        ("age", "1.5", "2"),
        ("age", "٣", "2"),
        ("age", "99999", "2"),
    ]:
        with pytest.raises(RelevanceError):
            parse_boost(kind, value, factor)


def test_synonyms_and_stopwords_are_words_or_phrases() -> None:
    assert parse_synonyms("Car, automobile ,  MOTOR   vehicle, car") == ("car", "automobile", "motor vehicle")
    assert parse_stopword(" Foo ") == "foo"
    for text in ["car", "car, a/b", "car, 50%", "car, }", "car, " + "a" * 101, ",".join(f"w{n}" for n in range(21))]:
        with pytest.raises(RelevanceError):
            parse_synonyms(text)
    for word in ["two words", "a/b", "", "-"]:
        with pytest.raises(RelevanceError):
            parse_stopword(word)
    assert synonym_map([("car", "automobile"), ("car", "auto")]) == {
        "auto": ["auto", "car"],
        "automobile": ["automobile", "car"],
        "car": ["auto", "automobile", "car"],
    }


def test_boost_params_keep_every_typed_value_a_literal_parameter() -> None:
    hostile = "x} OR _query_:\"{!func}docfreq(content,'secret')\" $access_tokens"
    params = boost_params(
        [Boost("url", hostile, 2.0), Boost("source", "wiki", 0.5), Boost("type", "application/pdf", 3.0), Boost("age", "30", 2.0)]
    )
    assert params["relevance_0"] == "{!prefix f=url}" + hostile
    assert params["relevance_1"] == "{!term f=source}wiki" and params["relevance_2"] == "{!term f=mimetype}application/pdf"
    functions = params["boost"]
    assert functions[:3] == [
        "if(exists(query($relevance_0)),2.0,1)",
        "if(exists(query($relevance_1)),0.5,1)",
        "if(exists(query($relevance_2)),3.0,1)",
    ]
    assert functions[3].startswith("if(exists(last_modified),sum(1,product(1.0,recip(max(ms(NOW/HOUR,last_modified),0),")
    assert all(hostile not in function for function in functions)
    assert boost_params([]) == {}
    glob = boost_params([Boost("glob", 'https://*.intranet/*/x?.pdf" OR *:* \\', 2.0)])
    assert glob["relevance_0"] == '{!lucene}url:https\\:\\/\\/*\\.intranet\\/*\\/x?\\.pdf\\"\\ OR\\ *\\:*\\ \\\\'
    assert wildcard_term("ä b") == "\\ä\\ b"


def answer(hits: int = 0, docs: list[dict[str, Any]] | None = None) -> SimpleNamespace:
    return SimpleNamespace(hits=hits, docs=docs or [], highlighting={}, facets={}, spellcheck=None)


def test_run_search_boosts_and_asks_the_pinned_documents_under_the_searchers_trimming() -> None:
    rules = Rules(
        bets=(BestBet(("harbour",), ("https://h/pinned", "https://h/hidden")),),
        boosts=(Boost("source", "wiki", 2.0),),
    )
    hit = {"id": "s!https://h/a", "url": "https://h/a", "title": "A"}
    pinned = {"id": "s!https://h/pinned", "url": "https://h/pinned", "title": "Pinned"}
    solr = AskedSolr(answer(2, [pinned, hit]), answer(1, [pinned]))
    principals = Principals.anonymous()
    page = run_search(TrimmedIndex(solr, principals), SearchRequest(q="Harbour"), rules=rules)  # type: ignore[arg-type]
    search, bets = solr.asked
    assert search["boost"] == ["if(exists(query($relevance_0)),2.0,1)"] and search["relevance_0"] == "{!term f=source}wiki"
    trimming, trimming_params = solr_trimming(principals)
    assert bets["q"] == "*:*" and all(f in bets["fq"] for f in trimming)
    assert all(bets[name] == value for name, value in trimming_params.items())
    assert bets["pinned_url_1"] == "{!term f=url}https://h/hidden"
    # the document the searcher may not read is not in Solr's answer: not shown; a bet is not repeated below
    assert [hit.url for hit in page.bets] == ["https://h/pinned"] and [hit.url for hit in page.hits] == ["https://h/a"]
    # the pinned documents' request fails: the hits are shown without best bets
    failing = AskedSolr(answer(2, [pinned, hit]))
    failing.answers.append(IndexingError("Solr did not answer a query", reason="timed out"))  # type: ignore[arg-type]
    page = run_search(TrimmedIndex(failing, principals), SearchRequest(q="harbour"), rules=rules)  # type: ignore[arg-type]
    assert page.bets == [] and len(page.hits) == 2
    # page 2: no best bets, and no request for them
    solr = AskedSolr(answer(12, [hit]))
    page = run_search(TrimmedIndex(solr, principals), SearchRequest(q="harbour", page=2), rules=rules)  # type: ignore[arg-type]
    assert len(solr.asked) == 1 and page.bets == []


def test_the_rule_cache_fails_open_logs_once_and_reads_again(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    reads: list[str] = []
    rules = Rules(boosts=(Boost("source", "wiki", 2.0),))

    def load() -> Rules:
        reads.append("read")
        if len(reads) in (2, 3):
            raise OSError("database down")
        return rules

    cache = RuleCache(load, ttl=30, clock=lambda: now[0])
    assert cache.get() == rules and cache.get() == rules and len(reads) == 1  # cached
    now[0] = 31
    with caplog.at_level(logging.WARNING):
        assert cache.get() == rules  # failed: the rules last read
        now[0] = 62
        assert cache.get() == rules
    assert len(reads) == 3 and len([r for r in caplog.records if "cannot be read" in r.message]) == 1
    now[0] = 93
    assert cache.get() == rules and len(reads) == 4
    cache.changed()
    cache.get()
    assert len(reads) == 5  # read again at once after a change by this process

    failing = RuleCache(lambda: (_ for _ in ()).throw(RuntimeError("no db")), ttl=30, clock=lambda: now[0])
    assert failing.get() == Rules()


def admin_client(tmp_path: Path, **changes: object) -> tuple[TestClient, str]:
    """An administrator's client of the web application (``changes``: to unit_config) and the
    relevance page's form token."""
    config = unit_config(tmp_path, relevance_sync_at_start=False, **changes)
    web = TestClient(create_app(config), base_url="http://127.0.0.1")
    token = re.search(r'name="login_token" value="([^"]+)"', web.get("/admin/login").text)
    assert token is not None
    web.post("/admin/login", data={"login_token": token[1], "username": "admin", "password": PASSWORD})
    page = web.get("/admin/relevance")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert page.status_code == 200 and csrf is not None
    return web, csrf[1]


def test_the_relevance_page_adds_and_deletes_rules_with_its_token(tmp_path: Path) -> None:
    web, csrf = admin_client(tmp_path)
    data = {"csrf": csrf, "action": "add-bet", "queries": "Holiday form", "urls": "https://intranet/holiday"}
    assert web.post("/admin/relevance", data=data, follow_redirects=False).status_code == 303
    assert "Best bet added." in web.get("/admin/relevance").text
    assert web.post("/admin/relevance", data={**data, "csrf": "stale"}).status_code == 403
    bad = web.post("/admin/relevance", data={**data, "urls": "javascript:alert(1)"})
    assert bad.status_code == 400 and "absolute URLs" in bad.text
    boost = {"csrf": csrf, "action": "add-boost", "kind": "url", "value": "https://intranet/<b>policies</b>", "factor": "2"}
    assert web.post("/admin/relevance", data=boost, follow_redirects=False).status_code == 303
    page = web.get("/admin/relevance").text
    assert "holiday form" in page and "https://intranet/holiday" in page and "Rule added." in page
    assert "&lt;b&gt;policies" in page and "<b>policies" not in page  # escaped
    rules = web.app.state.web.relevance.get()  # type: ignore[attr-defined]
    assert rules.pinned("HOLIDAY FORM") == ["https://intranet/holiday"] and rules.boosts[0].factor == 2.0
    bet_id = rules.bets[0].id
    # synonyms: kept in the database although Solr (none here) cannot take them now, and said so
    synonyms = web.post("/admin/relevance", data={"csrf": csrf, "action": "add-synonyms", "terms": "car, automobile"})
    assert synonyms.status_code == 200 and "Solr did not take them now" in synonyms.text and "car, automobile" in synonyms.text
    deleted = web.post("/admin/relevance", data={"csrf": csrf, "action": "delete", "kind": "bets", "key": str(bet_id)})
    assert deleted.status_code == 200 and "Deleted." in deleted.text
    assert web.app.state.web.relevance.get().bets == ()  # type: ignore[attr-defined]
    again = web.post("/admin/relevance", data={"csrf": csrf, "action": "delete", "kind": "bets", "key": str(bet_id)})
    assert again.status_code == 400 and "No such rule" in again.text
    for junk in ({"action": "drop-table"}, {"action": "delete", "kind": "documents", "key": "1"}):
        assert web.post("/admin/relevance", data={"csrf": csrf, **junk}).status_code == 400


def test_the_relevance_page_needs_an_administrator(tmp_path: Path) -> None:
    web = TestClient(create_app(unit_config(tmp_path, relevance_sync_at_start=False)), base_url="http://127.0.0.1")
    assert web.get("/admin/relevance", follow_redirects=False).status_code == 303
    assert web.post("/admin/relevance", data={"action": "push"}).status_code == 403


def test_a_database_that_hangs_delays_one_search_a_ttl_at_most() -> None:
    now = [0.0]
    release = threading.Event()
    reads: list[str] = []
    rules = Rules(boosts=(Boost("source", "wiki", 2.0),))

    def load() -> Rules:
        reads.append("read")
        if len(reads) == 2:
            release.wait(30)  # hangs until the test lets it go
        return rules

    cache = RuleCache(load, ttl=30, clock=lambda: now[0], wait=0.2)
    assert cache.get() == rules
    now[0] = 31
    started = time.monotonic()
    assert cache.get() == rules  # waited 0.2 s for the hanging read, then went on with the rules it had
    assert cache.get() == rules and cache.get() == rules  # no more waiting
    assert time.monotonic() - started < 5 and len(reads) == 2
    now[0] = 62
    assert cache.get() == rules and len(reads) == 2  # the hanging read still runs: no second one
    release.set()
    cache._reading.join(5)  # type: ignore[union-attr]
    now[0] = 200
    assert cache.get() == rules and len(reads) == 3


class FakeSession:
    """A node's HTTP session: refuses to connect, or answers every request with ``body``."""

    def __init__(self, body: dict[str, Any] | None) -> None:
        self.body = body
        self.asked: list[tuple[str, str]] = []

    def request(self, method: str, url: str, **_kwargs: Any) -> requests.Response:
        self.asked.append((method, url))
        if self.body is None:
            raise requests.exceptions.ConnectionError("[Errno 111] Connection refused")
        answer = requests.Response()
        answer.status_code = 200
        answer._content = json.dumps(self.body).encode()
        return answer


def test_managed_resources_go_through_solr_index_with_its_failover() -> None:
    """managed.py asks Solr through SolrIndex.request: a SolrCloud node that is down is passed
    over for the next (not only the node used last), and the admin API is the node's."""
    index = SolrIndex("http://127.0.0.1:1/solr/docs,http://127.0.0.1:2/solr/docs")
    down = FakeSession(None)
    up = FakeSession({"synonymMappings": {"managedMap": {"car": ["car", "auto"]}}, "wordSet": {"managedList": ["quux"]}})
    index.sessions[:] = [down, up]  # type: ignore[list-item]
    assert managed.current(index) == ({"car": ["auto", "car"]}, ["quux"])
    assert index.current == 1 and up.asked[0] == ("get", f"http://127.0.0.1:2/solr/docs/{managed.SYNONYMS}?wt=json")
    up.body = {"mode": "std"}
    managed.reload(index)
    assert up.asked[-1] == ("get", "http://127.0.0.1:2/solr/admin/cores?action=RELOAD&core=docs&wt=json")


def test_a_url_pattern_holds_at_most_four_wildcards() -> None:
    assert parse_boost("glob", "*/archive/*.pdf", "0.5").value == "*/archive/*.pdf"
    assert parse_boost("glob", "https://h/*/x?y?", "2").value == "https://h/*/x?y?"  # four
    assert parse_boost("url", "https://h/a*b?c?d?e?f", "2").kind == "url"  # a prefix: taken literally, no wildcards
    for pattern in ["*a" + "?" * 15, "*a*b*c*d*", "?????", "https://h/*/*/*/*/*"]:
        with pytest.raises(RelevanceError, match="at most 4 wildcards"):
            parse_boost("glob", pattern, "2")


def test_a_boost_solr_refuses_is_dropped_and_the_search_goes_on(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule Solr cannot run (HTTP 4xx or 5xx, e.g. a wildcard automaton too complex) never
    breaks the search: asked again without the boosts, logged at most once a minute; a Solr that
    does not answer is not asked again."""
    now = [0.0]
    monkeypatch.setattr(trimmed_index, "BOOSTS_REFUSED_LOG", OncePer(60, clock=lambda: now[0]))
    rules = Rules(boosts=(Boost("glob", "*a" + "?" * 15, 2.0),))
    hit = {"id": "s!https://h/a", "url": "https://h/a", "title": "A"}

    def refused(status: int = 400) -> IndexingError:
        # Solr 9 answers a wildcard automaton too complex with a 500 (a node failure to SolrIndex)
        return IndexingError("Solr did not answer a query", refused=status < 500, status=status, reason="TooComplexToDeterminize")

    with caplog.at_level(logging.WARNING):
        for minute in (0, 30, 61):
            now[0] = minute
            solr = AskedSolr(refused(500 if minute == 30 else 400), answer(1, [hit]))  # type: ignore[arg-type]
            page = run_search(TrimmedIndex(solr, Principals.anonymous()), SearchRequest(q="harbour", page=2), rules=rules)  # type: ignore[arg-type]
            boosted, plain = solr.asked
            assert "boost" in boosted and "boost" not in plain and "relevance_0" not in plain
            assert {k: v for k, v in boosted.items() if k != "boost" and not k.startswith("relevance_")} == plain
            assert [h.url for h in page.hits] == ["https://h/a"]
    warnings = [r for r in caplog.records if "refused the boosts" in r.message]
    assert len(warnings) == 2 and "TooComplexToDeterminize" in warnings[0].message  # at 0 and at 61, not at 30
    # without boosts a 400 is the search's own failure; a node that fails is no reason to drop them
    for asked_rules, error in ((Rules(), refused()), (rules, IndexingError("Solr did not answer a query", reason="timed out"))):
        failing = AskedSolr(error)  # type: ignore[arg-type]
        with pytest.raises(IndexingError):
            run_search(TrimmedIndex(failing, Principals.anonymous()), SearchRequest(q="harbour", page=2), rules=asked_rules)  # type: ignore[arg-type]
        assert len(failing.asked) == 1


def test_a_change_during_a_read_is_not_missed() -> None:
    """changed() while a read is under way: that read may hold the rules of before the change,
    so it does not make the cache fresh; the next search reads the changed rules."""
    before, after = Rules(), Rules(boosts=(Boost("source", "wiki", 2.0),))
    in_database = [before]
    reading, release = threading.Event(), threading.Event()

    def load() -> Rules:
        rules = in_database[0]  # read before the change...
        if not release.is_set():
            reading.set()
            release.wait(30)  # ...and returned after it
        return rules

    cache = RuleCache(load, ttl=30, clock=lambda: 0.0, wait=30)
    searching = threading.Thread(target=cache.get)
    searching.start()
    assert reading.wait(30)
    in_database[0] = after
    cache.changed()  # the relevance page's change, committed while the read is in flight
    release.set()
    searching.join(30)
    assert cache.get() == after  # within the ttl all the same: the next search applies the change
    assert cache.get() == after


def test_pushes_of_synonyms_to_solr_run_one_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-up's push and the relevance page's do not overlap, and the later one reads the
    database after the earlier one finished (so it never puts back a synonym deleted since)."""
    web = create_app(unit_config(tmp_path, relevance_sync_at_start=False)).state.web
    store = RelevanceStore(web.database)
    pushed: list[dict[str, list[str]]] = []
    inside, first_in, second_in = [0], threading.Event(), threading.Event()
    overlapped: list[bool] = []

    def sync(_index: Any, synonyms: dict[str, list[str]], _stopwords: list[str]) -> bool:
        inside[0] += 1
        overlapped.append(inside[0] > 1)
        pushed.append(synonyms)
        if len(pushed) == 1:
            first_in.set()
            # the second push, started meanwhile, must not come in while this one runs: a bounded
            # wait for what must not happen (it comes in at once without the lock)
            second_in.wait(1)
        else:
            second_in.set()
        inside[0] -= 1
        return True

    monkeypatch.setattr(managed, "sync", sync)
    first = threading.Thread(target=web.sync_relevance)
    first.start()
    assert first_in.wait(30)
    store.add_synonyms(("car", "automobile"))  # the page's change, while the start-up's push runs
    second = threading.Thread(target=web.sync_relevance)
    second.start()
    first.join(30)
    second.join(30)
    assert overlapped == [False, False]
    assert pushed == [{}, {"automobile": ["automobile", "car"], "car": ["automobile", "car"]}]


# --- best bets edited in place and scheduled ------------------------------------------------------

T0 = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
TICK = timedelta(microseconds=1)


def test_a_start_or_an_end_is_a_date_or_a_date_and_time_in_utc() -> None:
    assert parse_when("") is None and parse_when("  ") is None
    assert parse_when("2026-12-01") == datetime(2026, 12, 1, tzinfo=UTC)
    assert parse_when("2026-12-01", end=True) == datetime(2026, 12, 2, tzinfo=UTC)  # through that day
    assert parse_when("2026-12-31", end=True) == datetime(2027, 1, 1, tzinfo=UTC)
    for text in (
        "2026-12-01 09:30",
        " 2026-12-01T09:30 ",
        "2026-12-01 09:30:00",
        "2026-12-01 09:30Z",
        "2026-12-01 09:30 UTC",
        "2026-12-01T09:30:00z",
    ):
        assert parse_when(text) == T0 and parse_when(text, end=True) == T0, text  # a time: that moment, as an end too
    assert parse_when("2026-12-01 11:30+02:00") == T0  # an offset: converted to UTC
    for text in (
        "tomorrow",
        "01/12/2026",
        "2026-02-30",
        "2026-12-01 25:00",
        "2026-12-01 9:30",
        "12:00",
        "2026-12-01x",
        "2026-12-01 09:30:00.5",
        "9" * 50,
        "0001-01-01 00:00+01:00",  # before the year 1 in UTC: an OverflowError was a 500
        "9999-12-31T23:59-01:00",  # after 9999 in UTC: the same
        "9999-12-31",  # as an end, its next day overflows
        "0999-01-01 10:00",  # came back from the form as "999-01-01 10:00", which no longer parsed
        "1969-12-31",
    ):
        with pytest.raises(RelevanceError, match="in UTC"):
            parse_when(text)
        with pytest.raises(RelevanceError, match="in UTC"):
            parse_when(text, end=True)
    for text in ("1970-01-01", "9998-12-31", "9998-12-31 23:59"):  # the first and last years: round trips
        assert format_start(parse_when(text)) == text and format_end(parse_when(text, end=True)) == text


def test_a_scheduled_bet_is_pinned_from_its_start_until_its_end_only() -> None:
    bet = parse_bet("holiday form", "https://h/a", "2026-12-01 09:30", "2026-12-31")
    end = datetime(2027, 1, 1, tzinfo=UTC)
    assert (bet.start, bet.end) == (T0, end)
    rules = Rules(bets=(bet, BestBet(("holiday form",), ("https://h/always",))))
    assert bet.state(T0 - TICK) == "scheduled" and rules.pinned("holiday form", T0 - TICK) == ["https://h/always"]
    assert bet.state(T0) == "active" and rules.pinned("holiday form", T0) == ["https://h/a", "https://h/always"]
    assert bet.state(end - TICK) == "active" and rules.pinned("Holiday Form", end - TICK)[0] == "https://h/a"
    assert bet.state(end) == "expired" and rules.pinned("holiday form", end) == ["https://h/always"]
    # open on either side
    assert parse_bet("q", "https://h/a", start="2026-12-01").state(datetime(2099, 1, 1, tzinfo=UTC)) == "active"
    assert parse_bet("q", "https://h/a", end="2026-12-01").state(datetime(2000, 1, 1, tzinfo=UTC)) == "active"
    # the time of the call by default
    past = Rules(bets=(parse_bet("q", "https://h/a", "2020-01-01", "2020-01-02"),))
    future = Rules(bets=(parse_bet("q", "https://h/a", start="2999-01-01"),))
    assert past.pinned("q") == [] and future.pinned("q") == [] and Rules(bets=(parse_bet("q", "https://h/a"),)).pinned("q")


def test_an_end_not_after_the_start_is_refused() -> None:
    for start, end in [
        ("2026-12-02", "2026-12-01"),
        ("2026-12-01 10:00", "2026-12-01 09:00"),
        ("2026-12-01 09:30", "2026-12-01 09:30"),
    ]:
        with pytest.raises(RelevanceError, match="end is before the start"):
            parse_bet("q", "https://h/a", start, end)
    assert parse_bet("q", "https://h/a", "2026-12-01", "2026-12-01").end == datetime(2026, 12, 2, tzinfo=UTC)  # that one day


def test_the_rule_cache_never_keeps_a_bet_past_its_end() -> None:
    """The active check is made at each search, not when the rules were read."""
    ends = datetime.now(UTC) + timedelta(seconds=30)
    rules = Rules(bets=(BestBet(("q",), ("https://h/a",), 1, None, ends),))
    cache = RuleCache(lambda: rules, ttl=10**9, clock=lambda: 0.0)
    assert cache.get().pinned("q") == ["https://h/a"]
    assert cache.get().pinned("q", ends) == [] and cache.get() is rules  # not read again, all the same


def test_an_edit_form_gives_back_what_was_typed() -> None:
    bet = parse_bet("Holiday form\nleave", "https://h/a\nhttps://h/b", "2026-12-01 09:30", "2026-12-31")
    form = edit_form(BestBet(bet.queries, bet.urls, 7, bet.start, bet.end))
    assert form == {
        "action": "edit-bet",
        "key": "7",
        "queries": "holiday form\nleave",
        "urls": "https://h/a\nhttps://h/b",
        "start": "2026-12-01 09:30",
        "end": "2026-12-31",
    }
    again = parse_bet(form["queries"], form["urls"], form["start"], form["end"])
    assert (again.start, again.end) == (bet.start, bet.end)  # saved unchanged: the same bet
    timed = parse_bet("q", "https://h/a", "2026-12-01", "2026-12-01 18:00:05")
    assert (timed.start_text, timed.end_text) == ("2026-12-01", "2026-12-01 18:00:05")
    assert edit_form(Boost("url", "https://h/", 0.5, 3)) == {
        "action": "edit-boost",
        "key": "3",
        "kind": "url",
        "value": "https://h/",
        "factor": "0.5",
    }
    # the page's forms: empty to add, or filled (a rule to edit, a refused form), the other one empty
    assert rule_forms({}) == {"bet_form": {"action": "add-bet"}, "boost_form": {"action": "add-boost"}}
    refused = rule_forms({"action": "add-bet", "queries": "q", "urls": "javascript:x", "junk": "x"})
    assert refused["bet_form"] == {"action": "add-bet", "key": "", "queries": "q", "urls": "javascript:x", "start": "", "end": ""}
    assert refused["boost_form"] == {"action": "add-boost"}
    assert rule_forms(edit_form(Boost("age", "30", 2.0, 4)))["boost_form"]["kind"] == "age"


def test_the_relevance_page_edits_and_schedules_a_bet_in_place(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    web, csrf = admin_client(tmp_path)
    add = {"csrf": csrf, "action": "add-bet", "queries": "holiday form", "urls": "https://intranet/old"}
    assert web.post("/admin/relevance", data=add, follow_redirects=False).status_code == 303
    cache = web.app.state.web.relevance  # type: ignore[attr-defined]
    (bet,) = cache.get().bets
    form = web.get("/admin/relevance", params={"edit": "bets", "key": str(bet.id)})
    assert form.status_code == 200 and 'class="relevance edit-bet"' in form.text and "Save best bet" in form.text
    assert f'name="key" value="{bet.id}"' in form.text and ">https://intranet/old</textarea>" in form.text
    edit = {
        "csrf": csrf,
        "action": "edit-bet",
        "key": str(bet.id),
        "queries": "holiday form\nLeave",
        "urls": "https://intranet/<new>",
    }
    with caplog.at_level(logging.INFO, logger="searchcrawl.web.views.relevance_views"):
        saved = web.post("/admin/relevance", data=edit)
    assert saved.status_code == 200 and f"Best bet {bet.id} saved." in saved.text and "&lt;new&gt;" in saved.text
    assert [r.message for r in caplog.records if "relevance edit-bet" in r.message] == [
        f"Web administration: relevance edit-bet: Best bet {bet.id} saved."
    ]
    (edited,) = cache.get().bets  # the same rule, changed: not deleted and added
    assert edited.id == bet.id and edited.queries == ("holiday form", "leave")
    assert cache.get().pinned("leave") == ["https://intranet/<new>"]
    # the same token as every form of the page; the same validation; the form comes back as typed
    assert web.post("/admin/relevance", data={**edit, "csrf": "stale"}).status_code == 403
    refused = web.post("/admin/relevance", data={**edit, "urls": "javascript:alert(1)"})
    assert refused.status_code == 400 and "absolute URLs" in refused.text and ">javascript:alert(1)</textarea>" in refused.text
    assert 'class="relevance edit-bet"' in refused.text
    backwards = web.post("/admin/relevance", data={**edit, "start": "2026-12-31", "end": "2026-12-01"})
    assert backwards.status_code == 400 and "end is before the start" in backwards.text and 'value="2026-12-31"' in backwards.text
    gone = web.post("/admin/relevance", data={**edit, "key": "999"})
    assert gone.status_code == 400 and "No such rule" in gone.text
    assert web.get("/admin/relevance", params={"edit": "bets", "key": "999"}).status_code == 404
    assert cache.get().bets == (edited,)
    # scheduled: each bet's state in the list, and pinned only while active
    now = datetime.now(UTC)
    for queries, start, end in [("later", "2999-01-01", ""), ("over", "2020-01-01", "2020-12-31 18:00")]:
        data = {"csrf": csrf, "action": "add-bet", "queries": queries, "urls": "https://intranet/x", "start": start, "end": end}
        assert web.post("/admin/relevance", data=data, follow_redirects=False).status_code == 303
    page = web.get("/admin/relevance").text
    states = re.findall(r'<tr id="bet-\d+" class="bet (\w+)">', page)
    assert states == ["active", "scheduled", "expired"]
    # shown as the page's language writes dates (English here), still in UTC; the forms keep them as typed
    assert "from Jan 1, 2999" in page and "from Jan 1, 2020 until Dec 31, 2020, 6:00\u202fPM" in page and "UTC" in page
    rules = cache.get()
    assert rules.pinned("later", now) == [] and rules.pinned("over", now) == [] and rules.pinned("leave", now)
    later = rules.bets[1]
    assert rules.pinned("later", later.start) == ["https://intranet/x"]  # from its start on


def test_the_relevance_page_edits_a_boost_in_place(tmp_path: Path) -> None:
    web, csrf = admin_client(tmp_path)
    add = {"csrf": csrf, "action": "add-boost", "kind": "url", "value": "https://intranet/a/", "factor": "2"}
    assert web.post("/admin/relevance", data=add, follow_redirects=False).status_code == 303
    cache = web.app.state.web.relevance  # type: ignore[attr-defined]
    (boost,) = cache.get().boosts
    form = web.get("/admin/relevance", params={"edit": "boosts", "key": str(boost.id)}).text
    assert 'class="relevance edit-boost"' in form and 'value="https://intranet/a/"' in form and 'value="2"' in form
    assert '<option value="url" selected>' in form
    edit = {"csrf": csrf, "action": "edit-boost", "key": str(boost.id), "kind": "source", "value": "wiki", "factor": "0.5"}
    assert f"Rule {boost.id} saved." in web.post("/admin/relevance", data=edit).text
    assert cache.get().boosts == (Boost("source", "wiki", 0.5, boost.id),)
    refused = web.post("/admin/relevance", data={**edit, "factor": "1"})
    assert refused.status_code == 400 and "The factor" in refused.text and cache.get().boosts[0].factor == 0.5


def test_the_measure_page_lists_the_judged_sets_and_opens_no_other_path(tmp_path: Path) -> None:
    judged = tmp_path / "judged"
    (judged / "intranet").mkdir(parents=True)
    (judged / "intranet" / "queries.tsv").write_text("q1\tkeyword\tholiday form\n")
    (judged / "intranet" / "qrels.txt").write_text("q1 0 /holiday.html 2\n")
    (judged / "half").mkdir()  # no judgments: not a set
    (judged / "half" / "queries.tsv").write_text("q1\tkeyword\tx\n")
    (judged / "linked").symlink_to(judged / "intranet")  # never through a link: a set is what its folder holds
    (judged / "leak").mkdir()
    (judged / "leak" / "queries.tsv").write_text("q1\tkeyword\tx\n")
    (judged / "leak" / "qrels.txt").symlink_to("/etc/passwd")
    web, _csrf = admin_client(tmp_path, judged_dir=judged)
    page = web.get("/admin/relevance/measure")
    assert page.status_code == 200 and "<option selected>intranet</option>" not in page.text
    assert re.findall(r'<select name="set">(.*?)</select>', page.text) == ["<option>intranet</option>"]
    for name in ("half", "../judged/intranet", "nothing", "linked", "leak"):
        assert web.get("/admin/relevance/measure", params={"set": name}).status_code == 404
    (tmp_path / "other").mkdir()
    empty = admin_client(tmp_path / "other", judged_dir=tmp_path / "none")[0].get("/admin/relevance/measure")
    assert "No judged sets yet." in empty.text


def test_the_measure_page_is_the_administrations() -> None:
    app = create_app(unit_config(Path("/nonexistent"), relevance_sync_at_start=False))
    answer = TestClient(app, base_url="http://127.0.0.1").get("/admin/relevance/measure", follow_redirects=False)
    assert answer.status_code in (303, 404)  # to the sign-in, or the administration is off
