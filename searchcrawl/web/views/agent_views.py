"""The agent endpoint (issue 77): the Model Context Protocol at ``/mcp/``, for AI agents and assistants
(its logic: the JSON API's, web/api.py, and the search's, search/).

Built with the official Python SDK (``mcp``'s FastMCP, Streamable HTTP, stateless, JSON answers).
Three tools, each acting as the API token's searcher, exactly as the JSON API does (views/api_views.py
``api_caller``, run before the protocol sees the request): the token checked (unknown, revoked
or expired: 401), its rate limit applied (429), and the principals it searches with: public
documents, or, for a token made to search on behalf of users, those of the user named by
``?user=`` in the endpoint's URL; a token scoped to a visitor that names a user is refused (403)
and never acts as one.

- ``search(query, source?, rows?)``: the search page's search (run_search: hybrid where semantic
  search is on, trimmed), its hits as the JSON API gives them;
- ``fetch_document(url)``: one document's title, URL and text (its first ``FETCH_CHARS``
  characters) when the searcher may read it; "not found" alike when it does not exist and when it
  is withheld;
- ``answer(question, source?)``: an answer with citations (search/answers.py), when answers are on; the
  extractive answer (search/extractive.py) where there is no model server.

The endpoint holds no session (stateless): nothing of one searcher is kept for another. DNS
rebinding protection (a browser page of another origin calling a server on the user's machine) is
the token's: every request needs one. A request's body is 64 KB at most and of a declared length;
each tool call is logged with its token and user (never its text), in one line at INFO (the SDK's
own lines of every request at DEBUG: ``SdkLinesAtDebug``), and a search recorded by query analytics
as client "mcp".
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from searchcrawl.index.solr_client import IndexingError
from searchcrawl.search.answers import answer_json
from searchcrawl.search.cached_copy import by_url, cached_copy
from searchcrawl.search.query import MAX_QUERY_CHARS
from searchcrawl.search.request import SearchRequest
from searchcrawl.web import api
from searchcrawl.web.context import WebContext
from searchcrawl.web.shared import in_thread
from searchcrawl.web.sign_on.searcher import Searcher
from searchcrawl.web.views.api_views import api_caller

FETCH_CHARS = 20_000
MAX_BODY_BYTES = 64 * 1024  # a tool call's JSON-RPC request (a body without a length, or chunked, is refused)
MAX_ROWS = 50
CALLER = "searchcrawl.caller"  # the scope key of the checked caller: (searcher, token name, user)
Caller = tuple[Searcher, str, str | None]  # the checked caller: its searcher, its token's name, the user it acts for
logger = logging.getLogger(__name__)
# the SDK's two lines at INFO of every request, by logger: how each begins ("Processing request of
# type CallToolRequest" and, the transport being stateless, "Terminating session: None"); their other
# INFO lines ("Warning: ...", "Request ... cancelled ...") stay at INFO
SDK_REQUEST_LINES = {
    "mcp.server.lowlevel.server": "Processing request of type ",
    "mcp.server.streamable_http": "Terminating session: ",
}
SDK_REQUEST_LOGGERS = tuple(SDK_REQUEST_LINES)
INSTRUCTIONS = (
    "Search the organisation's intranet, file shares and databases as the token's user may read them. "
    "Use search to find documents, fetch_document to read one, answer for a cited answer."
)


class SdkLinesAtDebug(logging.Filter):
    """The protocol SDK's two lines of every request (``SDK_REQUEST_LINES``) written at DEBUG, not
    INFO: a tool call is one line at INFO, the endpoint's own, which names the token and the user;
    the SDK's are there for whoever logs at DEBUG. Its other lines keep their level."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or not str(record.msg).startswith(SDK_REQUEST_LINES.get(record.name, "\0")):
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def sdk_lines_at_debug() -> None:
    """``SdkLinesAtDebug`` on the SDK's loggers of every request, once a process."""
    for name in SDK_REQUEST_LOGGERS:
        sdk = logging.getLogger(name)
        if not any(isinstance(each, SdkLinesAtDebug) for each in sdk.filters):
            sdk.addFilter(SdkLinesAtDebug())


class AgentCallerCheck:
    """The API's caller check before the protocol: a refusal is answered here; an accepted
    caller's searcher (its index bound once, by api_caller) goes with the request's scope to the tools."""

    def __init__(self, ctx: WebContext, app: ASGIApp) -> None:
        self.ctx, self.app = ctx, app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # a websocket: not a transport of this endpoint
            return
        request = Request(scope, receive)
        length = request.headers.get("content-length", "0" if request.method in ("GET", "DELETE", "OPTIONS") else "")
        if not length.isdigit() or int(length) > MAX_BODY_BYTES or "transfer-encoding" in request.headers:
            await Response("A request of the agent endpoint is 64 KB at most.", 413)(scope, receive, send)
            return
        caller = await api_caller(self.ctx, request)
        if isinstance(caller, Response):
            await caller(scope, receive, send)
            return
        _cors, searcher, token_name, user = caller
        scope[CALLER] = (searcher, token_name, user)
        await self.app(scope, receive, send)


def _caller(context: Context[Any, Any, Any]) -> Caller:
    """The checked caller (AgentCallerCheck put it in the request's scope): its searcher, its
    token's name, the user it acts for. A tool called without one is refused."""
    request = context.request_context.request
    found = request.scope.get(CALLER) if isinstance(request, Request) else None
    if not found:
        raise PermissionError("no API token checked")
    return found


async def _search(ctx: WebContext, caller: Caller, query: str, source: str | None, rows: int) -> dict[str, Any]:
    """The ``search`` tool: the search page's search (``WebContext.search``) as the caller, logged
    by query analytics as client "mcp"; its hits as the JSON API gives them."""
    searcher, token_name, user = caller
    request = SearchRequest(q=query[:MAX_QUERY_CHARS], filters=(("source", source),) if source else ())
    try:
        done = await in_thread(ctx.search, searcher.index, request, "mcp", user, max(1, min(rows, MAX_ROWS)), False)
    except IndexingError:
        return {"error": "unavailable"}
    page = done.page
    logger.info("Agent search by token %r (%s): %d hits", token_name, user or "public", page.total)
    return {"total": page.total, "hits": [api.hit_json(hit) for hit in [*page.bets, *page.hits]]}


async def _fetch_document(caller: Caller, url: str) -> dict[str, Any]:
    """The ``fetch_document`` tool: the document's first ``FETCH_CHARS`` characters if the caller
    may read it; "not found" alike when it is absent and when it is withheld."""
    searcher, token_name, user = caller
    try:
        found = await in_thread(cached_copy, searcher.index, by_url(url[:8192]), "", FETCH_CHARS)
    except IndexingError:
        return {"found": False, "error": "unavailable"}
    logger.info("Agent fetch by token %r (%s): %s", token_name, user or "public", "found" if found else "not found")
    if found is None:
        return {"found": False, "error": "not found"}  # absent and withheld alike
    return {
        "found": True,
        "url": str(found.doc.get("display_url") or found.url),
        "title": str(found.doc.get("title") or ""),
        "source": str(found.doc.get("source") or ""),
        "text": found.text,
        "truncated": found.length > FETCH_CHARS,
    }


async def _answer(ctx: WebContext, caller: Caller, question: str, source: str | None) -> dict[str, Any]:
    """The ``answer`` tool: an answer from what the caller may read, when answers are on."""
    searcher, token_name, user = caller
    if (ctx.config.answers is None and ctx.config.extractive is None) or ctx.semantic is None:
        found = None
        error = "answers are off"
    else:
        filters, params = SearchRequest(q=question, filters=(("source", source),) if source else ()).solr_filters()
        found = await in_thread(ctx.answer, question, searcher.index, filters, params)
        error = "no answer now"
    said = error if found is None else "refused" if found.refused else f"{len(found.sentences)} sentences"
    said += ", an extract" if found is not None and found.extract is not None else ""
    logger.info("Agent answer by token %r (%s): %s", token_name, user or "public", said)
    return {"answer": None, "error": error} if found is None else {"answer": answer_json(found)}


def agent_server(ctx: WebContext) -> FastMCP:
    """The MCP server of the web application (see the module's docstring): its three tools, each
    acting as the caller AgentCallerCheck put in the request's scope (their docstrings are the
    tools' descriptions agents read)."""
    sdk_lines_at_debug()
    server = FastMCP(
        "searchcrawl",
        instructions=INSTRUCTIONS,
        stateless_http=True,
        json_response=True,
        streamable_http_path="/",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    @server.tool()
    async def search(query: str, context: Context[Any, Any, Any], source: str | None = None, rows: int = 10) -> dict[str, Any]:
        """Search the index as the token's user may read it; the best hits first."""
        return await _search(ctx, _caller(context), query, source, rows)

    @server.tool()
    async def fetch_document(url: str, context: Context[Any, Any, Any]) -> dict[str, Any]:
        """One document's title, URL and text, if the token's user may read it."""
        return await _fetch_document(_caller(context), url)

    @server.tool()
    async def answer(question: str, context: Context[Any, Any, Any], source: str | None = None) -> dict[str, Any]:
        """An answer with numbered citations, from what the token's user may read only."""
        return await _answer(ctx, _caller(context), question, source)

    return server


def agent_app(ctx: WebContext) -> tuple[ASGIApp, Any]:
    """The endpoint's ASGI application (the token check around the protocol) and the context
    manager that runs its session manager for the application's lifespan."""
    server = agent_server(ctx)
    app = AgentCallerCheck(ctx, server.streamable_http_app())

    @asynccontextmanager
    async def running() -> AsyncIterator[None]:
        async with server.session_manager.run():
            yield

    return app, running
