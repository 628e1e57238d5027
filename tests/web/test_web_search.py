"""The web application's one search (issue 101, point 6): ``WebContext.search`` runs the search
page's, the JSON API's and the agents' (MCP) searches alike (the relevance rules, the request's
semantic search, run_search, the search log), so the views are HTTP only; with a fake Solr client
(tests/web/test_api.py's), no server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from starlette.testclient import TestClient

from searchcrawl.access.decision import Principals
from searchcrawl.rules.ranking_rules import BestBet, Rules
from searchcrawl.search.request import SearchRequest
from searchcrawl.store import Database
from searchcrawl.store.api_tokens import ApiTokens
from searchcrawl.web.app import create_app
from searchcrawl.web.context import WebContext
from searchcrawl.web.views.agent_views import _search
from tests.web.test_api import DOC, FakeSolr, auth
from tests.web.test_app import unit_config


@pytest.fixture
def logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """A web application over a fake Solr whose search log records what it is given."""
    application = create_app(unit_config(tmp_path))
    web: WebContext = application.state.web
    web._solr = FakeSolr()  # type: ignore[assignment]
    web.completions = lambda text, index: []  # type: ignore[method-assign]
    rows: list[dict[str, Any]] = []

    def record(query: str, filters: Any = (), *args: Any, **kwargs: Any) -> str:
        rows.append({"query": query, "client": args[4] if len(args) > 4 else kwargs.get("client"), "user": args[5]})
        return f"search-{len(rows)}"

    monkeypatch.setattr(web.analytics, "record", record)
    return SimpleNamespace(web=web, rows=rows, client=TestClient(application, base_url="http://127.0.0.1"))


def test_a_search_applies_the_rules_runs_the_search_and_logs_it(logged: SimpleNamespace) -> None:
    web: WebContext = logged.web
    web.relevance.get = lambda: Rules(bets=(BestBet(("tugboat",), (str(DOC["url"]),)),))  # type: ignore[method-assign]
    done = web.search(web.searcher(Principals.anonymous()).index, SearchRequest(q="tugboat"), "api", "alice")
    assert [hit.url for hit in done.page.bets] == [DOC["url"]]  # the rules in effect: the best bet above the hits
    assert done.page.total == 1 and done.search_id == "search-1" and done.semantic is None  # semantic search off
    assert logged.rows == [{"query": "tugboat", "client": "api", "user": "alice"}]


def test_a_search_without_a_query_is_not_logged(logged: SimpleNamespace) -> None:
    web: WebContext = logged.web
    done = web.search(web.searcher(Principals.anonymous()).index, SearchRequest(q=""), "web", None)
    assert done.search_id == "" and logged.rows == []


def test_an_agents_search_without_a_query_is_not_logged(logged: SimpleNamespace) -> None:
    """An agent's search (MCP ``search``) is logged as the page's and the API's are, only with a
    query: an empty one, which asks Solr nothing and finds nothing, was logged as a search with no
    hits (the analytics' "queries with no hits" listed an empty query)."""
    web: WebContext = logged.web
    caller = (web.searcher(Principals.anonymous(), "token"), "portal", None)
    assert asyncio.run(_search(web, caller, "", None, 10)) == {"total": 0, "hits": []}
    assert logged.rows == []
    found = asyncio.run(_search(web, caller, "tugboat", None, 10))
    assert found["total"] == 1 and logged.rows == [{"query": "tugboat", "client": "mcp", "user": None}]


def test_the_page_and_the_api_log_their_searches_through_it(logged: SimpleNamespace) -> None:
    _id, token = ApiTokens(Database(logged.web.config.db_url)).create("portal")
    assert logged.client.get("/", params={"q": "tugboat"}).status_code == 200
    assert logged.client.get("/api/search", params={"q": "tugboat"}, headers=auth(token)).status_code == 200
    assert logged.client.get("/", params={"q": ""}).status_code == 200
    assert logged.rows == [
        {"query": "tugboat", "client": "web", "user": None},
        {"query": "tugboat", "client": "api", "user": None},
    ]
