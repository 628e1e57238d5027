"""Query analytics without a server (searchcrawl/web/analytics.py): the writer's bounded queue and
its drops, a database error kept from the searcher, the click links' signatures, the CSV export's
escaping, and the search page, /click and the analytics pages through Starlette's TestClient
with a fake Solr and a SQLite database."""

from __future__ import annotations

import csv
import io
import logging
import re
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from starlette.testclient import TestClient

from searchcrawl.store import Database
from searchcrawl.store.searches import Period, Searches
from searchcrawl.web import analytics
from searchcrawl.web.analytics import Analytics, Click, ClickSigner, csv_cell, csv_text, period_of
from searchcrawl.web.app import create_app
from tests.search.test_results import AskedSolr, answer
from tests.web.test_app import PASSWORD, unit_config


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class RecordingStore:
    """A store that keeps each batch written (and waits for ``gate`` when one is given)."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.batches: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
        self.purged: list[datetime] = []
        self.gate = gate

    def write(self, rows: list[dict[str, Any]], clicks: list[dict[str, Any]]) -> None:
        if self.gate is not None:
            self.gate.wait(10)
        self.batches.append((rows, clicks))

    def purge(self, before: datetime) -> int:
        self.purged.append(before)
        return 0

    def frequent_queries(self, since: datetime, limit: int) -> list[tuple[str, int]]:
        return [("harbour master", 5), ("harbour", 9), ("harbours", 1), ("quay", 3), ("harbour pilot", 5), ("hb", 7)]


def test_a_full_queue_drops_the_record_counts_it_and_warns_at_most_once_a_minute(caplog) -> None:
    clock = Clock()
    log = Analytics(RecordingStore, days=90, queue_size=3, clock=clock)  # type: ignore[arg-type]  # not started: nothing is taken off
    caplog.set_level(logging.WARNING, logger="searchcrawl.web.analytics")
    ids = [log.record(f"query {n}", hits=n) for n in range(5)]
    assert len(set(ids)) == 5 and all(re.fullmatch(r"[0-9a-f]{32}", search_id) for search_id in ids)
    assert (log.pending(), log.dropped) == (3, 2)
    log.click(Click(ids[0], 1, "https://h.example/a"))
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 1 and "1 records not logged (the queue is full" in warnings[0]
    clock.now += analytics.WARN_EVERY
    log.record("one more")
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 2 and "3 records not logged" in warnings[1] and "4 since the start" in warnings[1]


def test_the_writer_writes_in_batches_and_purges_past_the_retention() -> None:
    gate = threading.Event()
    store = RecordingStore(gate)
    log = Analytics(lambda: store, days=30)  # type: ignore[arg-type,return-value]
    log.start()
    first = log.record("first")
    for n in range(analytics.BATCH + 10):  # queued while the writer waits on its first batch
        log.record(f"q{n}")
    log.click(Click(first, 2, "https://h.example/x"))
    gate.set()
    log.close()
    rows = [row for batch, _clicks in store.batches for row in batch]
    clicks = [click for _rows, batch in store.batches for click in batch]
    assert len(rows) == analytics.BATCH + 11 and log.written == analytics.BATCH + 12 and log.dropped == 0
    assert all(len(batch) + len(batch_clicks) <= analytics.BATCH for batch, batch_clicks in store.batches)
    assert clicks == [{"search_id": first, "position": 2, "url": "https://h.example/x", "at": clicks[0]["at"]}]
    assert len(store.purged) == 1 and 29.9 < (datetime.now(UTC) - store.purged[0]).total_seconds() / 86400 < 30.1


def test_a_database_error_is_counted_and_never_reaches_the_searcher(caplog) -> None:
    class Broken:
        def write(self, rows: Any, clicks: Any) -> None:
            raise RuntimeError("disk I/O error\n[SQL: INSERT ...] [parameters: ('secret query',)]")

        def purge(self, before: datetime) -> int:
            raise RuntimeError("no database")

    log = Analytics(Broken, days=90)  # type: ignore[arg-type]
    log.start()
    assert log.record("secret query", hits=3)  # returns its id at once, whatever the database does
    log.close()
    assert log.dropped == 1 and log.written == 0
    text = caplog.text
    assert "the database refused them: RuntimeError: disk I/O error" in text and "secret query" not in text


def test_a_batch_the_database_refuses_is_written_again_in_halves_losing_only_the_bad_rows() -> None:
    """A row the database cannot take (PostgreSQL refuses NUL in text) loses itself, not the
    other searches of its batch."""

    class Picky(RecordingStore):
        def write(self, rows: list[dict[str, Any]], clicks: list[dict[str, Any]]) -> None:
            if any("bad" in row["query"] for row in rows):
                raise ValueError("PostgreSQL text fields cannot contain NUL (0x00) bytes")
            super().write(rows, clicks)

    store = Picky()
    log = Analytics(lambda: store, days=30)  # type: ignore[arg-type,return-value]
    batch = [("search", {"query": "bad" if n in (3, 17) else f"q{n}"}) for n in range(40)]
    log.write(batch + [("click", {"search_id": "x", "query": ""})])
    written = [row["query"] for rows, _clicks in store.batches for row in rows]
    assert written == [f"q{n}" for n in range(40) if n not in (3, 17)]
    assert (log.written, log.dropped) == (39, 2) and sum(len(clicks) for _rows, clicks in store.batches) == 1

    class Gone(RecordingStore):
        def write(self, rows: list[dict[str, Any]], clicks: list[dict[str, Any]]) -> None:
            from sqlalchemy.exc import OperationalError

            raise OperationalError("INSERT", {}, Exception("connection refused"))

    gone = Gone()
    log = Analytics(lambda: gone, days=30)  # type: ignore[arg-type,return-value]
    log.write(batch)  # the server gone: the batch lost at once, not tried again row by row
    assert (log.written, log.dropped) == (0, 40)


def test_control_characters_are_spaces_in_what_is_logged() -> None:
    log = Analytics(RecordingStore, days=1, log_users=True)  # type: ignore[arg-type]
    log.record("harbour\x00\x01master\x7f", [("type", "text/html\x00")], "da\x00te", user="al\x00ice")
    log.click(Click("a" * 32, 1, "https://h.example/\x00"))
    _kind, row = log._queue.get_nowait()  # type: ignore[misc]
    _kind, click = log._queue.get_nowait()  # type: ignore[misc]
    text = repr([row, click])
    assert all(f"\\x{code:02x}" not in text for code in [*range(32), 127]) and "\\u0000" not in text
    assert (row["query"], row["normalized"], row["user_name"]) == ("harbour  master ", "harbour master", "al ice")
    assert row["filters"] == '[["type", "text/html "]]' and click["url"] == "https://h.example/ "


def test_one_normalization_and_one_list_of_link_schemes_for_analytics_best_bets_and_the_page() -> None:
    from searchcrawl.rules import ranking_rules
    from searchcrawl.search import results
    from searchcrawl.store.searches import normalize

    for query in ("  Harbour\x00 MASTER\x7f", "harbour\tmaster", "HARBOUR \x1f\x01 master"):
        assert normalize(query) == ranking_rules.normal_query(query) == "harbour master", repr(query)
    assert not hasattr(analytics, "CLICK_SCHEMES")
    signer = ClickSigner(b"k" * 32)
    for scheme in ("http", "https", "file", "ftp", "gopher", "mailto"):
        url = f"{scheme}://h.example/x"
        signed = {key: values[0] for key, values in parse_qs(signer.query("a" * 32, 1, url)).items()}
        shown = results.display_url({"url": url}) == url
        assert (signer.check(signed) is not None) == shown == (scheme in ranking_rules.URL_SCHEMES), scheme


def test_completions_come_from_memory_most_searched_first() -> None:
    log = Analytics(RecordingStore, days=30)  # type: ignore[arg-type]
    assert log.completions("har") == []  # nothing read yet
    log.refresh_completions()
    assert log.completions("har") == ["harbour", "harbour master", "harbour pilot", "harbours"]
    assert log.completions("  HARBOUR  ", limit=2) == ["harbour", "harbour master"]
    assert log.completions("harbour m") == ["harbour master"] and log.completions("x") == []
    assert log.completions("") == [] and log.completions("h", limit=0) == [] and len(log.completions("h", limit=500)) == 5

    class Broken(RecordingStore):
        def frequent_queries(self, since: datetime, limit: int) -> list[tuple[str, int]]:
            raise RuntimeError("gone")

    log._store = Broken  # type: ignore[assignment]
    log.refresh_completions()  # the ones read before are kept
    assert log.completions("q") == ["quay"]


def test_nothing_is_logged_when_the_retention_is_zero() -> None:
    store = RecordingStore()
    log = Analytics(lambda: store, days=0)  # type: ignore[arg-type,return-value]
    log.start()
    assert log.record("anything") and log.pending() == 0 and not log.enabled
    log.close()
    assert store.batches == [] and store.purged == []


def test_the_user_name_is_logged_only_when_asked() -> None:
    for log_users, expected in ((False, None), (True, "alice")):
        log = Analytics(RecordingStore, days=1, log_users=log_users)  # type: ignore[arg-type]
        log.record("q", user="alice")
        kind, row = log._queue.get_nowait()  # type: ignore[misc]
        assert kind == "search" and row["user_name"] == expected


def test_a_record_is_bounded_and_normalized() -> None:
    log = Analytics(RecordingStore, days=1)  # type: ignore[arg-type]
    log.record("  Harbour\tMASTER  " + "x" * 5000, [("type", "v" * 900)] * 50, "date", 3, 12, 4.6, "api")
    _kind, row = log._queue.get_nowait()  # type: ignore[misc]
    assert len(row["query"]) == 1000 and row["normalized"].startswith("harbour master x") and len(row["normalized"]) == 200
    assert len(row["filters"]) <= 2000 and row["filters"].startswith('[["type", "vvv')
    assert (row["sort"], row["page"], row["hits"], row["took_ms"], row["client"]) == ("date", 3, 12, 5, "api")


# --- click links ---------------------------------------------------------------------------------


def test_a_click_link_is_checked_against_its_signature() -> None:
    signer = ClickSigner(b"k" * 32)
    search_id, url = "a" * 32, "https://h.example/doc?x=1&y=2"
    params = {key: values[0] for key, values in parse_qs(signer.query(search_id, 3, url, 1_800_000_000)).items()}
    assert signer.check(params) == Click(search_id, 3, url, 1_800_000_000)
    changes = (
        {"u": "https://evil.example/"},
        {"p": "4"},
        {"s": "b" * 32},
        {"k": params["k"][:-1] + ("B" if params["k"].endswith("A") else "A")},
        {"k": ""},
    )
    for change in (*changes, {"t": "1800000001"}, {"t": ""}, {"t": "-1"}, {"t": "9" * 13}):
        assert signer.check({**params, **change}) is None, change
    assert ClickSigner(b"o" * 32).check(params) is None  # another process's key (a restart)
    for bad_url in ("javascript:alert(1)", "data:text/html,x", "//evil.example/"):
        signed = {key: values[0] for key, values in parse_qs(signer.query(search_id, 1, bad_url)).items()}
        assert signer.check(signed) is None, bad_url  # signed or not: only a hit link's schemes
    assert signer.check({**params, "p": "\u0663"}) is None  # an Arabic-Indic 3: digits are ASCII ones
    assert signer.check({}) is None and signer.check({**params, "p": "0"}) is None and signer.check({**params, "p": "x"}) is None


def test_a_click_is_counted_only_from_a_fresh_link_and_once_per_search_and_rank(monkeypatch) -> None:
    """A link replayed, kept for days, or put in another page as an image still redirects (it is
    ours) but is not counted again: click-through is not inflated, the writer's queue not filled."""
    log = Analytics(RecordingStore, days=30)  # type: ignore[arg-type]
    moment = 1_800_000_000
    fresh = Click("a" * 32, 1, "https://h.example/a", moment - 3600)
    assert log.counts(fresh, moment) and not log.counts(fresh, moment) and not log.counts(fresh, moment + 10)
    assert log.counts(Click("a" * 32, 2, "https://h.example/b", moment), moment)  # another rank of the search
    assert not log.counts(Click("b" * 32, 1, "https://h.example/a", moment - analytics.CLICK_FRESH - 1), moment)  # stale
    assert not log.counts(Click("c" * 32, 1, "https://h.example/a", moment + 3600), moment)  # from the future
    assert log.counts(Click("c" * 32, 1, "https://h.example/a", moment + 60), moment)  # a clock a little ahead
    assert not log.counts(Click("d" * 32, 1, "https://h.example/a"), moment)  # no time at all
    monkeypatch.setattr(analytics, "CLICKS_REMEMBERED", 3)
    for number in range(10):
        assert log.counts(Click(f"{number:032x}", 1, "https://h.example/", moment), moment)
    assert len(log._opened) == 3  # bounded: the oldest forgotten
    assert not log.counts(Click(f"{9:032x}", 1, "https://h.example/", moment), moment)


def test_the_click_key_comes_from_a_file_or_is_random(tmp_path: Path) -> None:
    assert analytics.click_key() != analytics.click_key() and len(analytics.click_key()) == 32
    key = tmp_path / "key"
    key.write_bytes(b"0123456789abcdef0123456789abcdef\n")
    assert analytics.click_key(str(key)) == b"0123456789abcdef0123456789abcdef\n"  # bytes, not text
    random_key = b"\n" + bytes(range(30)) + b" "  # head -c 32 /dev/urandom may start or end with white space
    key.write_bytes(random_key)
    assert analytics.click_key(str(key)) == random_key
    key.write_bytes(b"short")
    with pytest.raises(ValueError, match="fewer than 32"):
        analytics.click_key(str(key))


# --- CSV -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ['=HYPERLINK("http://x")', "+1+2", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_a_csv_cell_that_a_spreadsheet_would_read_as_a_formula_is_quoted(text: str) -> None:
    assert csv_cell(text) == "'" + text
    parsed = list(csv.reader(io.StringIO(csv_text(["query", "n"], [[text, 1]]))))
    assert parsed[1] == ["'" + text, "1"]


def test_plain_csv_cells_and_numbers_are_as_they_are() -> None:
    assert [csv_cell(value) for value in ("harbour master", 'a "quoted", text', 3, 0.25, "11+")] == [
        "harbour master",
        'a "quoted", text',
        "3",
        "0.25",
        "11+",
    ]
    assert csv_text(["a", "b"], [['x,"y"', 2]]) == 'a,b\r\n"x,""y""",2\r\n'


def test_the_period_asked_for() -> None:
    moment = datetime(2026, 11, 26, 15, 0, tzinfo=UTC)
    assert period_of({"days": "30"}, moment) == (Period(datetime(2026, 10, 27, 15, 0, tzinfo=UTC), moment), {"days": "30"})
    assert period_of({"days": "365"}, moment)[1] == {"days": "7"}  # only the choices offered
    period, chosen = period_of({"from": "2026-11-20", "to": "2026-11-01"}, moment)  # the wrong way round
    assert chosen == {"from": "2026-11-01", "to": "2026-11-20"}
    assert (period.since, period.until) == (datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 21, tzinfo=UTC))
    assert analytics.csv_filename("top", period) == "searchcrawl-top-2026-11-01-2026-11-20.csv"
    assert period_of({"from": "x';--"}, moment)[1] == {"days": "7"}


# --- the application -----------------------------------------------------------------------------


def login(web: TestClient) -> None:
    token = re.search(r'name="login_token" value="([^"]+)"', web.get("/admin/login").text)
    assert token is not None
    data = {"login_token": token[1], "username": "admin", "password": PASSWORD}
    assert web.post("/admin/login", data=data, follow_redirects=False).status_code == 303


DOCS = [
    {"id": f"s!https://h.example/{n}", "url": f"https://h.example/{n}", "title": f"Doc {n}", "mimetype": "text/html"}
    for n in range(3)
]


def test_searches_and_clicks_are_logged_and_reported(tmp_path: Path) -> None:
    """A search page's hits link through /click, which records the click and redirects to the
    hit; a forged link is refused; the analytics page and its CSV show what was logged."""
    config = unit_config(tmp_path, analytics_days=90)
    app = create_app(config)
    with TestClient(app, base_url="http://127.0.0.1") as web:  # the lifespan starts the writer
        # the search (the nonsense rule, words alone, is off by default: no count), the formula's search and spelling
        app.state.web._solr = AskedSolr(answer(23, DOCS), answer(0), answer(0))
        page = web.get("/", params={"q": "Harbour  Master", "type": "text/html", "page": "2"})
        links = re.findall(r'<li class="hit">\s*<h2><a href="([^"]*)"', page.text)
        assert len(links) == 3 and all(link.startswith("/click?") for link in links)
        clicked = parse_qs(urlsplit(links[1].replace("&amp;", "&")).query)
        assert clicked["p"] == ["12"] and clicked["u"] == ["https://h.example/1"]  # page 2's second hit: rank 12
        web.get("/", params={"q": "=cmd|' /C calc'!A0"})  # no hits (and a spreadsheet formula)
        web.get("/", params={"q": ""})  # no search: nothing logged
        assert web.head(links[0].replace("&amp;", "&"), follow_redirects=False).status_code == 303  # a link checker: no click
        opened = web.get(links[1].replace("&amp;", "&"), follow_redirects=False)
        assert opened.status_code == 303 and opened.headers["location"] == "https://h.example/1"
        again = web.get(links[1].replace("&amp;", "&"), follow_redirects=False)  # replayed: followed, not counted
        assert again.status_code == 303 and again.headers["location"] == "https://h.example/1"
        assert app.state.web.hit_link(clicked["s"][0])(12, "https://h.example/1").startswith(
            links[1].replace("&amp;", "&").partition("&t=")[0]
        )
        forged = links[0].replace("&amp;", "&").replace("h.example%2F0", "evil.example%2F")
        assert web.get(forged, follow_redirects=False).status_code == 404
        assert web.get("/click?s=x&u=https://evil.example/", follow_redirects=False).status_code == 404
        app.state.web.analytics.close()  # writes what is queued

        store = Searches(Database(config.db_url))
        totals = store.totals(Period.last(1))
        assert (totals.searches, totals.clicked, totals.clicks, totals.no_hits) == (2, 1, 1, 1)
        top = store.top_queries(Period.last(1))
        assert [(row.query, row.searches, row.clicked) for row in top] == [("=cmd|' /c calc'!a0", 1, 0), ("harbour master", 1, 1)]

        login(web)
        shown = web.get("/admin/analytics", params={"days": "1"})
        assert shown.status_code == 200 and "harbour master" in shown.text and "=cmd|&#39; /c calc&#39;!a0" in shown.text
        assert re.search(r'id="total-searches">2<', shown.text)
        exported = web.get("/admin/analytics.csv", params={"report": "none", "days": "1"})
        assert exported.headers["content-type"].startswith("text/csv")
        assert re.fullmatch(
            r'attachment; filename="searchcrawl-none-\d{4}-\d\d-\d\d-\d{4}-\d\d-\d\d\.csv"',
            exported.headers["content-disposition"],
        )
        rows = list(csv.reader(io.StringIO(exported.text)))
        assert rows[0] == ["query", "searches", "last searched (UTC)"] and rows[1][:2] == ["'=cmd|' /c calc'!a0", "1"]
        abandoned = list(csv.reader(io.StringIO(web.get("/admin/analytics.csv?report=abandoned&days=1").text)))
        assert abandoned[0] == ["query", "searches", "last searched (UTC)"] and len(abandoned) == 1  # its one search clicked
        positions = list(csv.reader(io.StringIO(web.get("/admin/analytics.csv?report=positions&days=1").text)))
        assert positions[1] == ["1", "0", "0.0"] and positions[11] == ["11+", "1", "1.0"]  # rank 12
        assert web.get("/admin/analytics.csv?report=users").status_code == 404
        stranger = TestClient(app, base_url="http://127.0.0.1")
        assert stranger.get("/admin/analytics.csv?report=top", follow_redirects=False).status_code == 303


def test_building_the_app_touches_no_database_its_lifespan_starts_the_writer(tmp_path: Path) -> None:
    app = create_app(unit_config(tmp_path, analytics_days=90))
    assert app.state.web.analytics._thread is None and not (tmp_path / "documents.sqlite3").exists()
    with TestClient(app, base_url="http://127.0.0.1"):
        assert app.state.web.analytics._thread is not None
    assert app.state.web.analytics._thread is None  # stopped, what was queued written
    assert (tmp_path / "documents.sqlite3").exists()  # the writer's purge made it: as a crawl would


def test_migrating_the_database_is_tried_once_a_process(tmp_path: Path, monkeypatch, caplog) -> None:
    """A database user without the right to change the schema: `scrapy web` tries to migrate
    once, then only checks the schema, not at every batch the writer writes."""
    opened: list[bool] = []

    def database(url: str, migrate: bool = True) -> Database:
        opened.append(migrate)
        if migrate:
            raise PermissionError("permission denied for schema public")
        return Database(f"sqlite:///{tmp_path / 'made.sqlite3'}")

    monkeypatch.setattr("searchcrawl.web.context.Database", database)
    web = create_app(unit_config(tmp_path, analytics_days=90)).state.web
    with pytest.raises(PermissionError):
        web.database  # noqa: B018 - the property opens it
    assert web.database is web.database and opened == [True, False]
    assert caplog.text.count("not tried again by this process") == 1


def test_hits_link_straight_to_their_documents_when_analytics_is_off(tmp_path: Path) -> None:
    app = create_app(unit_config(tmp_path))  # analytics_days 0: WebConfig's default
    app.state.web._solr = AskedSolr(answer(3, DOCS))
    page = TestClient(app, base_url="http://127.0.0.1").get("/", params={"q": "harbour"})
    assert re.findall(r'<h2><a href="([^"]*)"', page.text) == [doc["url"] for doc in DOCS]
    assert not (tmp_path / "documents.sqlite3").exists()  # the search page opened no database


def test_searches_are_answered_while_the_writer_waits_on_the_database(tmp_path: Path) -> None:
    """The database stuck (a lock held, a server gone quiet): the search pages are answered all
    the same, and what they logged is written once it answers again."""
    gate = threading.Event()
    store = RecordingStore(gate)
    app = create_app(unit_config(tmp_path, analytics_days=90))
    web = app.state.web
    web.analytics.close()
    web.analytics = Analytics(lambda: store, days=90)  # type: ignore[arg-type,return-value]
    web.analytics.start()
    web._solr = AskedSolr(*(answer(3, DOCS) for _ in range(40)))  # each search (and a count, where the nonsense rule asks one)
    client = TestClient(app, base_url="http://127.0.0.1")
    for number in range(20):
        page = client.get("/", params={"q": f"harbour {number}"})
        assert page.status_code == 200 and page.text.count("/click?") == 3
    assert not store.batches  # nothing written yet: the writer still waits
    gate.set()
    web.analytics.close()
    assert sorted(row["query"] for rows, _clicks in store.batches for row in rows) == sorted(f"harbour {n}" for n in range(20))


def test_the_analytics_pages_say_when_the_database_cannot_be_read(tmp_path: Path) -> None:
    broken = tmp_path / "broken.sqlite3"
    broken.write_bytes(b"not a database\n" * 100)
    app = create_app(unit_config(tmp_path, db_url=f"sqlite:///{broken}"))
    web = TestClient(app, base_url="http://127.0.0.1")
    login(web)
    page = web.get("/admin/analytics")
    assert page.status_code == 200 and "cannot be read from the database now" in page.text
    assert web.get("/admin/analytics.csv?report=top").status_code == 503


def test_a_click_key_file_that_cannot_be_used_stops_scrapy_web_with_a_usage_error(tmp_path: Path) -> None:
    from scrapy.exceptions import UsageError

    from searchcrawl.commands.web import _click_key

    with pytest.raises(UsageError, match="SEARCHCRAWL_WEB_CLICK_KEY_FILE"):
        _click_key(str(tmp_path / "missing"))
    (tmp_path / "short").write_bytes(b"abc")
    with pytest.raises(UsageError, match="fewer than 32"):
        _click_key(str(tmp_path / "short"))
    assert len(_click_key("")) == 32
