"""The JSON API (web/api.py, app.py's api_search) and its tokens' administration page through
Starlette's TestClient, with a fake Solr client and a fake directory: no server."""

from __future__ import annotations

import re
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from markupsafe import Markup
from sqlalchemy import text
from starlette.testclient import TestClient

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.content.clean_text import HIGHLIGHT_MARKS
from searchcrawl.rules.ranking_rules import BestBet, Boost, Rules
from searchcrawl.search.query import MAX_QUERY_CHARS
from searchcrawl.search.request import MAX_PAGE
from searchcrawl.search.suggestions import Suggestion
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.store import Database
from searchcrawl.store.api_tokens import ApiTokens, TokenCheck
from searchcrawl.web.api import RateLimit, TokenGate, bearer, cors_headers, normal_origins, rate_key, retry_after, snippet_parts
from searchcrawl.web.app import create_app
from tests.web.test_app import PASSWORD, unit_config

OPEN, CLOSE = HIGHLIGHT_MARKS
DOC = {
    "id": "harbour!https://h.example/a",
    "url": "https://h.example/a",
    "title": "Tugboat <log>",
    "source": "harbour",
    "host": "h.example",
    "mimetype": "application/pdf",
    "language": "en",
    "last_modified": "2024-05-01T10:00:00Z",
}


class FakeSolr:
    """Answers every search with one hit (highlighted), counts and a facet; records what it is asked."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []
        self.total = 1

    def ping(self) -> bool:
        return True

    def document_count(self) -> int:
        return self.total

    def search(self, query: str, **params: Any) -> SimpleNamespace:
        self.asked.append({"q": query, **params})
        return SimpleNamespace(
            hits=self.total,
            docs=[DOC],
            highlighting={DOC["id"]: {"content": [f"the {OPEN}tugboat{CLOSE} & <b>crew</b>"]}},
            facets={
                "facet_fields": {"mimetype": ["application/pdf", 1], "source": ["harbour", 1]},
                "facet_queries": {"modified_year": 0, "modified_older": 1},
            },
            spellcheck=None,
        )


class FakeDirectory:
    """alice is in group:crew; bob's lookup fails (the directory does not answer)."""

    def principals(self, user: str) -> Principals:
        if user == "bob":
            return Principals.anonymous("the directory does not answer")
        return Principals.of(user, [Principal(f"user:{user}", "test"), Principal("group:crew", "test")])


@pytest.fixture
def app(tmp_path: Path) -> SimpleNamespace:
    config = unit_config(tmp_path, directory=FakeDirectory(), api_origins=("https://portal.example",))
    application = create_app(config)
    solr = FakeSolr()
    application.state.web._solr = solr
    # these tests read the search's own request to Solr: no suggestions asked beside it
    # (test_the_api_suggests_from_the_index_under_the_tokens_trimming asks them)
    application.state.web.completions = lambda text, index: []
    tokens = ApiTokens(Database(config.db_url))
    _id, public = tokens.create("portal")
    _id, acting = tokens.create("intranet", on_behalf=True)
    client = TestClient(application, base_url="http://127.0.0.1")
    return SimpleNamespace(client=client, solr=solr, tokens=tokens, public=public, acting=acting, web=application.state.web)


def auth(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def trimmed_for(asked: dict[str, Any]) -> str:
    """Every value of a Solr request as one text: the trimming's tokens are among them."""
    return repr(asked)


def test_a_search_with_a_token_answers_the_search_pages_page_as_json(app: SimpleNamespace) -> None:
    answer = app.client.get("/api/search", params={"q": "tugboat", "type": "application/pdf"}, headers=auth(app.public))
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    assert answer.headers["cache-control"] == "private, no-store"
    data = answer.json()
    assert (data["q"], data["total"], data["page"], data["rows"], data["pages"]) == ("tugboat", 1, 1, 10, 1)
    hit = data["hits"][0]
    assert hit == {
        "url": "https://h.example/a",
        "title": "Tugboat <log>",
        "snippet": "the tugboat & <b>crew</b>",
        "snippet_parts": [
            {"text": "the ", "match": False},
            {"text": "tugboat", "match": True},
            {"text": " & <b>crew</b>", "match": False},
        ],
        "type": "PDF",
        "mimetype": "application/pdf",
        "last_modified": "2024-05-01",
        "source": "harbour",
        "host": "h.example",
        "language": "en",
    }
    assert data["facets"]["type"]["values"] == [{"value": "application/pdf", "label": "PDF", "count": 1, "chosen": True}]
    assert data["facets"]["modified"]["values"][0]["value"] == "older"
    assert data["filters"] == [{"name": "type", "value": "application/pdf"}]
    assert data["spelling"] == [] and data["suggestions"] == []
    assert data["searcher"] == {"user": None, "public_only": True, "error": ""}
    # the search page's own request to Solr: the same parameters
    page_asked = dict(app.solr.asked[-1])
    app.client.get("/", params={"q": "tugboat", "type": "application/pdf"})
    assert app.solr.asked[-1] == page_asked


def test_paging_and_the_pages_caps(app: SimpleNamespace) -> None:
    app.solr.total = 10_000
    data = app.client.get("/api/search", params={"q": "x", "rows": "20", "page": "3"}, headers=auth(app.public)).json()
    assert (data["page"], data["rows"], data["pages"]) == (3, 20, MAX_PAGE)
    assert (app.solr.asked[-1]["rows"], app.solr.asked[-1]["start"]) == (20, 40)
    data = app.client.get(
        "/api/search", params={"q": "y" * 5000, "rows": "100000", "page": "99999"}, headers=auth(app.public)
    ).json()
    assert (len(data["q"]), data["rows"], data["page"]) == (MAX_QUERY_CHARS, 10, MAX_PAGE)
    assert app.solr.asked[-1]["rows"] == 10


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"authorization": "Bearer sct_wrong"},
        {"authorization": "Basic YWRtaW46eA=="},
        {"authorization": "Bearer " + "a" * 400},
    ],
)
def test_no_token_or_a_wrong_one_is_refused_with_a_challenge(app: SimpleNamespace, headers: dict[str, str]) -> None:
    answer = app.client.get("/api/search", params={"q": "tugboat"}, headers=headers)
    assert answer.status_code == 401 and answer.headers["www-authenticate"].startswith("Bearer ")
    assert answer.json()["error"] in ("no_token", "invalid_token") and app.solr.asked == []


def test_a_revoked_or_expired_token_is_refused_and_never_logged(app: SimpleNamespace, caplog) -> None:
    token_id, token = app.tokens.create("old")
    assert app.client.get("/api/search", params={"q": "a"}, headers=auth(token)).status_code == 200
    assert app.tokens.revoke(token_id) and not app.tokens.revoke(token_id)
    app.web.token_gate.forget()  # as the page's Revoke does (another process's: test_token_gate_...)
    answer = app.client.get("/api/search", params={"q": "a"}, headers=auth(token))
    assert answer.status_code == 401 and 'error="invalid_token"' in answer.headers["www-authenticate"]
    # unknown, revoked and expired alike: a leaked token is not confirmed to have been one
    assert answer.json()["message"] == "The token is not valid."
    _id, expired = app.tokens.create("short", expires_at=datetime.now(UTC) - timedelta(seconds=1))
    answer = app.client.get("/api/search", params={"q": "a"}, headers=auth(expired))
    assert answer.status_code == 401 and answer.json()["message"] == "The token is not valid."
    unknown = app.client.get("/api/search", params={"q": "a"}, headers=auth("sct_" + "x" * 43))
    assert unknown.json() == answer.json() and unknown.headers["www-authenticate"] == answer.headers["www-authenticate"]
    assert token not in caplog.text and expired not in caplog.text and app.public not in caplog.text


def test_a_token_searches_public_documents_unless_it_acts_for_a_user(app: SimpleNamespace) -> None:
    app.client.get("/api/search", params={"q": "a"}, headers=auth(app.public))
    assert "group:crew" not in trimmed_for(app.solr.asked[-1])
    # a public token naming a user: refused, never answered as public quietly
    refused = app.client.get("/api/search", params={"q": "a", "user": "alice"}, headers=auth(app.public))
    assert refused.status_code == 403 and 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    data = app.client.get("/api/search", params={"q": "a", "user": "alice"}, headers=auth(app.acting)).json()
    assert "group:crew" in trimmed_for(app.solr.asked[-1])
    assert data["searcher"] == {"user": "alice", "public_only": False, "error": ""}
    # without user=, an acting token is a visitor too
    app.client.get("/api/search", params={"q": "a"}, headers=auth(app.acting))
    assert "group:crew" not in trimmed_for(app.solr.asked[-1])
    # the directory fails: public documents only, and the answer says so
    data = app.client.get("/api/search", params={"q": "a", "user": "bob"}, headers=auth(app.acting)).json()
    assert data["searcher"]["public_only"] and "does not answer" in data["searcher"]["error"]
    assert "user:bob" not in trimmed_for(app.solr.asked[-1])
    assert app.client.get("/api/search", params={"q": "a", "user": "\x00"}, headers=auth(app.acting)).status_code == 400
    two = app.client.get("/api/search", params=[("q", "a"), ("user", "alice"), ("user", "bob")], headers=auth(app.acting))
    assert two.status_code == 400


def test_the_api_gives_the_search_boxs_suggestions_trimmed_and_never_breaks_for_them(app: SimpleNamespace) -> None:
    """/api/search's suggestions and /api/suggest are WebContext.completions, for the token's
    searcher (a named user's when it may act for users); a failure costs the search nothing."""
    seen: list[Principals] = []

    def completions(text: str, index: TrimmedIndex) -> list[Suggestion]:
        seen.append(index.principals)
        return [Suggestion(text + "boat", "title")]

    app.web.completions = completions
    data = app.client.get("/api/search", params={"q": "tug", "user": "alice"}, headers=auth(app.acting)).json()
    assert data["suggestions"] == [{"text": "tugboat", "kind": "title"}] and seen[-1].user == "alice"
    alone = app.client.get("/api/suggest", params={"q": "tug"}, headers=auth(app.public))
    assert alone.status_code == 200 and alone.json() == {"q": "tug", "suggestions": [{"text": "tugboat", "kind": "title"}]}
    assert seen[-1].user is None and alone.headers["cache-control"] == "private, no-store"
    assert app.client.get("/api/suggest", params={"q": "tug"}).status_code == 401  # a token, as for searches
    assert app.client.get("/api/suggest", params={"q": "tug", "user": "alice"}, headers=auth(app.public)).status_code == 403

    def broken(text: str, index: TrimmedIndex) -> list[Suggestion]:
        raise RuntimeError("down")

    app.web.completions = broken
    answer = app.client.get("/api/search", params={"q": "tug"}, headers=auth(app.public))
    assert answer.status_code == 200 and answer.json()["suggestions"] == []


def test_the_api_suggests_from_the_index_under_the_tokens_trimming(app: SimpleNamespace) -> None:
    """No stand-in: the real completions ask the (fake) Solr with the trimming of a visitor."""
    del app.web.completions  # the fixture's stand-in: WebContext.completions again
    answer = app.client.get("/api/suggest", params={"q": "Tug"}, headers=auth(app.public))
    assert answer.status_code == 200 and answer.json()["q"] == "Tug"
    assert app.solr.asked and all("public" in trimmed_for(asked) for asked in app.solr.asked)


def test_cors_only_for_the_origins_named(app: SimpleNamespace) -> None:
    allowed = app.client.get("/api/search", params={"q": "a"}, headers={**auth(app.public), "origin": "https://portal.example"})
    assert allowed.headers["access-control-allow-origin"] == "https://portal.example"
    assert "Origin" in allowed.headers["vary"]
    other = app.client.get("/api/search", params={"q": "a"}, headers={**auth(app.public), "origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers and "Origin" in other.headers["vary"]
    preflight = app.client.options(
        "/api/search",
        headers={
            "origin": "https://portal.example",
            "access-control-request-method": "GET",
            "access-control-request-headers": "authorization",
        },
    )
    assert preflight.status_code == 204 and preflight.headers["access-control-allow-headers"] == "Authorization"
    assert preflight.headers["access-control-allow-origin"] == "https://portal.example"
    denied = app.client.options("/api/search", headers={"origin": "https://evil.example", "access-control-request-method": "GET"})
    assert "access-control-allow-origin" not in denied.headers and "access-control-allow-headers" not in denied.headers
    # an error answer carries them too: the portal's script can read why
    refused = app.client.get("/api/search", headers={"origin": "https://portal.example"})
    assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == "https://portal.example"


def test_cors_is_off_by_default(tmp_path: Path) -> None:
    client = TestClient(create_app(unit_config(tmp_path)), base_url="http://127.0.0.1")
    answer = client.options("/api/search", headers={"origin": "https://portal.example", "access-control-request-method": "GET"})
    assert "access-control-allow-origin" not in answer.headers


def test_helpers() -> None:
    assert bearer("Bearer sct_abc-_") == "sct_abc-_" and bearer("bearer  x") == "x"
    assert bearer("Bearer a b") is None and bearer("Token x") is None and bearer(None) is None
    assert cors_headers("null", ["null"]) == {"vary": "Origin"}
    assert normal_origins(["https://Portal.example/", " ", "http://127.0.0.1:8000"]) == (
        "https://portal.example",
        "http://127.0.0.1:8000",
    )
    for bad in ("*", "https://portal.example/path", "portal.example", "javascript:alert(1)"):
        with pytest.raises(ValueError):
            normal_origins([bad])
    assert snippet_parts(Markup("a &lt;mark&gt; <mark>b</mark>")) == [
        {"text": "a <mark> ", "match": False},
        {"text": "b", "match": True},
    ]


def login(client: TestClient) -> str:
    form = client.get("/admin/login")
    token = re.search(r'name="login_token" value="([^"]+)"', form.text)
    assert token is not None
    client.post("/admin/login", data={"login_token": token[1], "username": "admin", "password": PASSWORD}, follow_redirects=False)
    page = client.get("/admin/api")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert page.status_code == 200 and csrf is not None
    return csrf[1]


def test_the_administration_makes_lists_and_revokes_tokens(app: SimpleNamespace) -> None:
    client = app.client
    assert client.get("/admin/api", follow_redirects=False).status_code == 303  # not logged in
    csrf = login(client)
    assert 'href="/admin/api"' in client.get("/admin").text
    # a POST without the CSRF token is refused
    assert client.post("/admin/api", data={"name": "x"}).status_code == 403
    posted = client.post(
        "/admin/api", data={"csrf": csrf, "name": "wiki", "on_behalf": "1", "days": "30"}, follow_redirects=False
    )
    assert posted.status_code == 303 and posted.headers["location"] == "/admin/api"  # reloading makes no second token
    made = client.get("/admin/api")
    assert made.status_code == 200 and made.headers["cache-control"] == "no-store"
    token = re.search(r'<pre class="token" id="new-token">(sct_[^<]+)</pre>', made.text)
    assert token is not None
    assert app.client.get("/api/search", params={"q": "a"}, headers=auth(token[1])).status_code == 200
    listed = client.get("/admin/api").text
    assert token[1] not in listed and "wiki" in listed and "never" in listed  # the portal's: never used
    row = next(item for item in app.tokens.list() if item["name"] == "wiki")
    assert row["on_behalf"] and row["last_used"] is not None and "token_hash" not in row
    assert row["expires_at"] - datetime.now(UTC) > timedelta(days=29)
    assert client.post("/admin/api", data={"csrf": csrf, "name": " ", "days": ""}).status_code == 400
    assert client.post("/admin/api", data={"csrf": csrf, "name": "x", "days": "0"}).status_code == 400
    assert client.post("/admin/api", data={"csrf": csrf, "name": "x", "days": "soon"}).status_code == 400
    assert "x" not in {row["name"] for row in app.tokens.list()}
    assert client.post(f"/admin/api/{row['id']}/revoke", data={"csrf": "stale"}).status_code == 403
    revoked = client.post(f"/admin/api/{row['id']}/revoke", data={"csrf": csrf})
    assert revoked.status_code == 200 and f"API token {row['id']} revoked." in revoked.text
    assert app.client.get("/api/search", params={"q": "a"}, headers=auth(token[1])).status_code == 401


def test_the_search_box_script_may_be_loaded_by_a_portal_of_another_origin(app: SimpleNamespace) -> None:
    """nosniff: a script is run only when its type is JavaScript's; CORP: a portal under COEP."""
    script = app.client.get("/static/searchbox.js", headers={"origin": "https://portal.example"})
    assert script.status_code == 200 and script.headers["x-content-type-options"] == "nosniff"
    assert script.headers["content-type"].split(";")[0] in ("text/javascript", "application/javascript")
    assert script.headers["cross-origin-resource-policy"] == "cross-origin"
    code = "\n".join(line for line in script.text.splitlines() if not line.lstrip().startswith(("/*", "*")))
    assert "innerHTML" not in code and "eval" not in code and "cookie" not in code and "fetch" not in code
    assert "cross-origin-resource-policy" not in app.client.get("/static/style.css").headers


def test_the_api_under_a_prefix(tmp_path: Path) -> None:
    config = unit_config(tmp_path, prefix="/search")
    application = create_app(config)
    application.state.web._solr = FakeSolr()
    _id, token = ApiTokens(Database(config.db_url)).create("portal")
    client = TestClient(application, base_url="http://127.0.0.1")
    assert client.get("/search/api/search", params={"q": "a"}, headers=auth(token)).json()["total"] == 1
    assert client.get("/search/static/searchbox.js").status_code == 200


def test_scrapy_web_refuses_an_origin_that_is_not_one() -> None:
    from scrapy.exceptions import UsageError

    from searchcrawl.commands.web import api_origins

    assert api_origins(["https://portal.example", "http://127.0.0.1:8000"]) == ("https://portal.example", "http://127.0.0.1:8000")
    with pytest.raises(UsageError, match="SEARCHCRAWL_WEB_API_ORIGINS"):
        api_origins(["*"])


def test_scrapy_web_refuses_a_rate_or_burst_that_is_not_one() -> None:
    from scrapy.exceptions import UsageError

    from searchcrawl.commands.web import api_rate

    assert api_rate(600.0, 60) == (600.0, 60) and api_rate(0.0, 1) == (0.0, 1)  # 0: no limit
    for rate, burst, name in ((-1.0, 60, "RATE"), (float("nan"), 60, "RATE"), (float("inf"), 60, "RATE"), (60.0, 0, "BURST")):
        with pytest.raises(UsageError, match=f"SEARCHCRAWL_WEB_API_{name}"):
            api_rate(rate, burst)


def test_api_searches_are_logged_as_the_pages_are_with_client_api(tmp_path: Path) -> None:
    """Query analytics counts the JSON API's searches too (client "api"), and never its token."""
    config = unit_config(tmp_path, analytics_days=90)
    application = create_app(config)
    application.state.web._solr = FakeSolr()
    _id, token = ApiTokens(Database(config.db_url)).create("portal")
    with TestClient(application, base_url="http://127.0.0.1") as client:  # the lifespan starts the writer
        assert client.get("/api/search", params={"q": "Tugboat  Crew"}, headers=auth(token)).status_code == 200
        assert client.get("/api/search", params={"q": ""}, headers=auth(token)).status_code == 200  # no query: no search
    # the lifespan's end wrote what was queued
    with Database(config.db_url).engine.connect() as connection:
        rows = connection.execute(text("SELECT query, normalized, hits, client, user_name FROM searches")).all()
    assert [tuple(row) for row in rows] == [("Tugboat  Crew", "tugboat crew", 1, "api", None)]


def test_the_api_applies_the_relevance_pages_boosts_and_best_bets(app: SimpleNamespace) -> None:
    """One search, two clients: the page's boosts and best bets (ranking_rules.py) reach the JSON
    answer too, the best bet apart from the hits and not repeated among them."""
    rules = Rules(bets=(BestBet(("tugboat",), (DOC["url"],)),), boosts=(Boost("source", "harbour", 2.0),))
    app.web.relevance.get = lambda: rules
    data = app.client.get("/api/search", params={"q": "Tugboat"}, headers=auth(app.public)).json()
    assert [bet["url"] for bet in data["best_bets"]] == [DOC["url"]] and data["hits"] == []
    searched = app.solr.asked[0]
    assert searched["q"] == "Tugboat" and "boost" in searched and "harbour" in trimmed_for(searched)
    assert all("public" in trimmed_for(asked) for asked in app.solr.asked)  # the bet asked under the trimming too


def test_token_gate_keeps_verdicts_a_while_by_hash_bounded_and_refuses_when_checks_wait() -> None:
    """A database that hangs holds CONCURRENT_CHECKS threads at most (the rest answered 503 at
    once), a verdict is asked again after VERDICT_SECONDS (another process's revocation), the
    kept verdicts are bounded and keyed by hash, never by the token."""
    now = [0.0]
    asked: list[str] = []
    verdicts = {"good": TokenCheck("valid", "portal"), "bad": TokenCheck("revoked", "old")}

    def check(token: str) -> TokenCheck:
        asked.append(token)
        return verdicts.get(token, TokenCheck("unknown"))

    gate = TokenGate(check, clock=lambda: now[0], ttl=30, size=3)
    assert gate.verdict("good").valid and gate.verdict("good").valid and asked == ["good"]
    verdicts["good"] = TokenCheck("revoked", "portal")  # revoked by another process
    now[0] = 29.0
    assert gate.verdict("good").valid
    now[0] = 31.0
    assert not gate.verdict("good").valid and asked == ["good", "good"]
    for junk in ("a", "b", "c", "d"):
        gate.verdict(junk)
    assert len(gate._verdicts) == 3 and "good" not in repr(gate._verdicts)  # bounded; hashes only

    entered, release = threading.Barrier(3), threading.Event()

    def hanging(token: str) -> TokenCheck:
        if not release.is_set():  # the first two: wait on the "database"
            entered.wait(timeout=10)
            release.wait(timeout=10)
        return TokenCheck("valid", token)

    busy = TokenGate(hanging, concurrent=2)
    waiting = [threading.Thread(target=busy.verdict, args=(f"t{n}",)) for n in range(2)]
    for thread in waiting:
        thread.start()
    entered.wait(timeout=10)  # both checks wait on the "database"
    assert busy.verdict("t3") is None  # answered at once: the request gets 503
    release.set()
    for thread in waiting:
        thread.join(timeout=10)
    assert busy.verdict("t3") is not None


def test_refused_tokens_are_logged_once_a_minute_with_their_count(caplog) -> None:
    now = [0.0]
    gate = TokenGate(lambda token: TokenCheck("unknown"), clock=lambda: now[0])
    with caplog.at_level("WARNING", logger="searchcrawl.web.api"):
        for _ in range(50):
            gate.refused("192.0.2.1", "unknown")
        now[0] = 61.0
        gate.refused("192.0.2.2", "revoked")
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 2 and lines[1].startswith("API: 50 request(s) refused") and "192.0.2.2" in lines[1]


def test_a_busy_token_gate_answers_503_at_once(app: SimpleNamespace) -> None:
    app.web.token_gate = TokenGate(lambda token: TokenCheck("valid"), concurrent=1)
    assert app.web.token_gate._checking.acquire(blocking=False)  # one check waits on the database
    answer = app.client.get("/api/search", params={"q": "a"}, headers=auth(app.public))
    assert answer.status_code == 503 and answer.headers["retry-after"] == "1" and app.solr.asked == []


# --- the rate limit of each token (api.py's RateLimit) ------------------------------------------


def test_a_tokens_burst_passes_the_next_waits_and_its_bucket_refills_at_the_rate() -> None:
    now = [100.0]
    limit = RateLimit(rate=60, burst=3, clock=lambda: now[0])  # one a second
    assert [limit.wait("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limit.wait("a") == pytest.approx(1.0)  # refused: one second until one is back
    now[0] += 0.25
    assert limit.wait("a") == pytest.approx(0.75) and retry_after(0.75) == "1"
    now[0] += 0.75
    assert limit.wait("a") == 0.0 and limit.wait("a") == pytest.approx(1.0)  # refusals took nothing
    now[0] += 2.5  # refilled at the rate: two and a half, two whole
    assert [limit.wait("a") for _ in range(3)] == [0.0, 0.0, pytest.approx(0.5)]
    now[0] += 3600  # never beyond the burst
    assert [limit.wait("a") == 0.0 for _ in range(4)] == [True, True, True, False]


def test_the_buckets_of_different_tokens_are_independent() -> None:
    now = [0.0]
    limit = RateLimit(rate=6, burst=2, clock=lambda: now[0])  # one every 10 s
    assert limit.wait("a") == limit.wait("a") == 0.0
    assert limit.wait("a") == pytest.approx(10.0) and retry_after(limit.wait("a")) == "10"
    assert limit.wait("b") == limit.wait("b") == 0.0 and limit.wait("b") > 0
    now[0] = 9.5
    assert limit.wait("a") == pytest.approx(0.5) and retry_after(0.5) == "1"


def test_retry_after_is_whole_seconds_rounded_up() -> None:
    assert [retry_after(wait) for wait in (0.001, 1.0, 1.0000000001, 1.2, 59.99)] == ["1", "1", "1", "2", "60"]


def test_no_limit_keeps_nothing_and_bad_settings_are_refused() -> None:
    limit = RateLimit(rate=0, burst=1)
    assert not limit.enabled and all(limit.wait("a") == 0.0 for _ in range(1000)) and not limit._buckets
    for rate, burst in ((-1, 10), (60, 0)):
        with pytest.raises(ValueError):
            RateLimit(rate=rate, burst=burst)


def test_buckets_are_bounded_the_least_recently_used_dropped_and_full_ones_forgotten() -> None:
    now = [0.0]
    limit = RateLimit(rate=60, burst=2, clock=lambda: now[0], size=3)
    for key in ("a", "b", "c", "d", "e"):
        limit.wait(key)
    assert list(limit._buckets) == ["c", "d", "e"]  # at most 3, the least recently used dropped
    limit.wait("c")
    assert list(limit._buckets) == ["d", "e", "c"]
    now[0] = 1.5  # d and e full again (one taken, refilled in 1 s): dropped, nothing lost; c not yet
    limit.wait("f")
    assert list(limit._buckets) == ["c", "f"]
    now[0] = 100.0
    limit.wait("g")
    assert list(limit._buckets) == ["g"]
    # ten thousand tokens one after another: never more than ``size`` buckets
    for number in range(10_000):
        limit.wait(f"t{number}")
    assert len(limit._buckets) <= 3


def test_a_bucket_is_keyed_by_the_tokens_id_or_hash_never_the_token() -> None:
    token = "sct_" + "s" * 43
    assert rate_key(TokenCheck("valid", "portal", token_id=7), token) == "id:7"
    assert token not in rate_key(TokenCheck("valid", "portal"), token)
    assert len(rate_key(TokenCheck("valid", "portal"), token)) == 64


def test_the_rate_limit_is_thread_safe() -> None:
    """Threads taking from one bucket at once: exactly the burst passes (no refill: the clock stands)."""
    limit = RateLimit(rate=60, burst=500, clock=lambda: 0.0)
    passed: list[int] = []
    start = threading.Barrier(8)

    def take() -> None:
        start.wait(timeout=10)
        passed.append(sum(limit.wait("shared") == 0.0 for _ in range(200)))

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sum(passed) == 500


def test_requests_over_the_rate_are_logged_once_a_minute_with_their_count_never_the_token(caplog) -> None:
    now = [0.0]
    limit = RateLimit(rate=60, burst=1, clock=lambda: now[0])
    with caplog.at_level("WARNING", logger="searchcrawl.web.api"):
        for _ in range(30):
            limit.refused(TokenCheck("valid", "portal", token_id=4))
        now[0] = 61.0
        limit.refused(TokenCheck("valid", "intranet", token_id=5))
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 2 and lines[1].startswith("API: 30 request(s) refused over the rate limit")
    assert "5 'intranet'" in lines[1] and limit.refusals.total == 31


def test_a_token_over_its_rate_is_answered_429_with_retry_after_and_cors(tmp_path: Path, caplog) -> None:
    config = unit_config(tmp_path, api_origins=("https://portal.example",), api_rate=60, api_burst=2)
    application = create_app(config)
    solr = FakeSolr()
    application.state.web._solr = solr
    application.state.web.completions = lambda text, index: []
    tokens = ApiTokens(Database(config.db_url))
    _id, first = tokens.create("portal")
    _id, second = tokens.create("other portal")
    client = TestClient(application, base_url="http://127.0.0.1")
    origin = {"origin": "https://portal.example"}
    for _ in range(2):
        assert client.get("/api/search", params={"q": "a"}, headers={**auth(first), **origin}).status_code == 200
    with caplog.at_level("WARNING", logger="searchcrawl.web.api"):
        refused = client.get("/api/suggest", params={"q": "a"}, headers={**auth(first), **origin})
    assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
    assert refused.json() == {"error": "rate_limited", "message": "Too many requests with this token; try again in 1 s."}
    assert refused.headers["access-control-allow-origin"] == "https://portal.example"
    assert refused.headers["access-control-expose-headers"] == "Retry-After"  # the portal's script may read it
    assert refused.headers["cache-control"] == "no-store" and len(solr.asked) == 2  # Solr not asked
    assert first not in caplog.text and "'portal'" in caplog.text
    assert client.get("/api/search", params={"q": "a"}, headers=auth(second)).status_code == 200  # its own bucket
    # a bad token is refused as before (401), never counted against a valid one's rate
    assert client.get("/api/search", params={"q": "a"}, headers=auth("sct_" + "x" * 43)).status_code == 401
    # preflights carry no token: never limited
    preflight = client.options("/api/search", headers={**origin, "access-control-request-method": "GET"})
    assert preflight.status_code == 204


def test_metrics_count_the_apis_refusals_by_reason(tmp_path: Path) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    config = unit_config(tmp_path, api_rate=60, api_burst=1, metrics=True, metrics_token="metrics-token-r1")
    application = create_app(config)
    application.state.web._solr = FakeSolr()
    application.state.web.completions = lambda text, index: []
    _id, token = ApiTokens(Database(config.db_url)).create("portal")
    client = TestClient(application, base_url="http://127.0.0.1")
    codes = [client.get("/api/search", params={"q": "a"}, headers=auth(token)).status_code for _ in range(3)]
    codes.append(client.get("/api/search", params={"q": "a"}, headers=auth("sct_" + "x" * 43)).status_code)
    assert codes == [200, 429, 429, 401]
    scraped = client.get("/metrics", headers={"authorization": "Bearer metrics-token-r1"})
    assert scraped.status_code == 200 and token not in scraped.text
    families = {family.name: family for family in text_string_to_metric_families(scraped.text)}
    counted = {sample.labels["reason"]: sample.value for sample in families["searchcrawl_web_api_refused"].samples}
    assert counted == {"rate": 2.0, "invalid_token": 1.0}
