"""The JSON API's views (/api/search, /api/suggest): other applications search with a token made
on the administration's API page (views/token_views.py); the API's logic without HTTP is api.py."""

from __future__ import annotations

import logging
import time

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from searchcrawl.access.decision import Principals
from searchcrawl.index.solr_client import IndexingError
from searchcrawl.search import suggestions
from searchcrawl.search.answers import answer_json
from searchcrawl.search.request import SearchRequest
from searchcrawl.search.trimmed_index import log_failed_search
from searchcrawl.web import api
from searchcrawl.web.context import WebContext
from searchcrawl.web.shared import answer_of, in_thread, searcher_principals
from searchcrawl.web.sign_on.searcher import Searcher

logger = logging.getLogger(__name__)


async def api_caller(ctx: WebContext, request: Request) -> tuple[dict[str, str], Searcher, str, str | None] | Response:
    """Who calls the JSON API (api.py): the CORS headers of the answer, the searcher the token
    searches as (its index bound here, once, to public documents, or to a named user's principals
    when the token may search on behalf of users), the token's name and the user named; or the
    refusal to send."""
    cors = api.cors_headers(request.headers.get("origin"), ctx.config.api_origins, request.method == "OPTIONS")
    if request.method == "OPTIONS":  # a browser's preflight: the Authorization header may be sent
        return Response(status_code=204, headers=cors)
    token = api.bearer(request.headers.get("authorization"))
    if token is None:
        return _api_error(401, "no_token", "Send an API token: Authorization: Bearer <token>.", cors, api.challenge())
    try:
        check = await in_thread(ctx.token_gate.verdict, token)
    except Exception as exc:  # the database: no search without its word on the token
        logger.warning("API: the token table cannot be read: %s", type(exc).__name__)
        return _api_error(503, "unavailable", "Tokens cannot be checked now.", cors)
    if check is None:  # as many checks as allowed wait on the database already
        busy = _api_error(503, "unavailable", "Tokens cannot be checked now; try again.", cors)
        busy.headers["retry-after"] = "1"
        return busy
    if not check.valid:  # unknown, revoked or expired: said alike (a leaked token is not confirmed)
        ctx.token_gate.refused(request.client.host if request.client is not None else "-", check.reason)
        challenge = api.challenge("invalid_token", "The token is not valid.")
        return _api_error(401, "invalid_token", "The token is not valid.", cors, challenge)
    wait = ctx.rate_limit.wait(api.rate_key(check, token))
    if wait > 0:  # this token's requests come too fast: Solr and the directory are not asked
        ctx.rate_limit.refused(check)
        seconds = api.retry_after(wait)
        limited = _api_error(429, "rate_limited", f"Too many requests with this token; try again in {seconds} s.", cors)
        limited.headers["retry-after"] = seconds
        return limited
    named = request.query_params.getlist("user")
    user = api.api_user(named[0]) if len(named) == 1 else ("" if named else None)  # two: which one?
    principals = Principals.anonymous()
    if user is not None:
        if not check.on_behalf:
            challenge = api.challenge("insufficient_scope", "This token may not search on behalf of users.")
            return _api_error(403, "insufficient_scope", "This token may not search on behalf of users.", cors, challenge)
        if not user:
            return _api_error(400, "invalid_request", "user= is not one user name.", cors)
        principals = await searcher_principals(ctx, user)
        if principals.error:
            logger.warning("API search by token %r for %s: public documents only: %s", check.name, user, principals.error)
    return cors, ctx.searcher(principals, "token"), check.name, user


async def api_search(ctx: WebContext, request: Request) -> Response:
    """The search page's search as JSON, for a request with an API token (api_caller), with
    the completions of its query (as /api/suggest gives them)."""
    caller = await api_caller(ctx, request)
    if isinstance(caller, Response):
        return caller
    cors, searcher, token_name, user = caller
    started = time.perf_counter()
    query = SearchRequest.from_params(request.query_params)
    try:  # the page's search: its boosts and best bets too, logged as client "api"
        done = await in_thread(ctx.search, searcher.index, query, "api", user or None, None, True, started)
    except IndexingError as exc:
        log_failed_search("API search", query.q, exc)
        return _api_error(503, "unavailable", "The index cannot be searched now.", cors)
    completions: list[suggestions.Suggestion] = []
    if ctx.config.suggestions and query.q:
        try:
            completions = await in_thread(ctx.completions, query.q, searcher.index)
        except Exception as exc:  # noqa: BLE001 - suggestions never break a search
            logger.warning("API suggestions (%d characters) failed: %s", len(query.q), type(exc).__name__)
    logger.debug("API search by token %r (%s): %d hits", token_name, user or "public", done.page.total)
    answer = api.page_json(done.page, api.searcher_json(searcher.principals), [item.as_json() for item in completions])
    try:
        found = await answer_of(ctx, request, query, searcher.index, semantic=done.semantic)
    except IndexingError as exc:
        log_failed_search("API answer", query.q, exc)
        found = None
    if found is not None:  # asked for (answer=1) and given: issue 77
        answer["answer"] = answer_json(found)
    return JSONResponse(answer, headers={**cors, "cache-control": "private, no-store"})


async def api_suggest(ctx: WebContext, request: Request) -> Response:
    """The search box's suggestions (/suggest's) for a request with an API token, trimmed as
    its searches are: ``{"q": ..., "suggestions": [{"text", "kind"}]}``."""
    caller = await api_caller(ctx, request)
    if isinstance(caller, Response):
        return caller
    cors, searcher, _token_name, _user = caller
    if not ctx.config.suggestions:
        return _api_error(404, "not_found", "Suggestions are off.", cors)
    prefix = suggestions.clean(request.query_params.get("q", ""), suggestions.MAX_PREFIX_CHARS)
    try:
        found = await in_thread(ctx.completions, prefix, searcher.index)
    except IndexingError as exc:
        log_failed_search(f"API suggestions ({len(prefix)} characters typed)", None, exc)
        return _api_error(503, "unavailable", "The index cannot be asked now.", cors)
    answer = {"q": prefix, "suggestions": [item.as_json() for item in found]}
    return JSONResponse(answer, headers={**cors, "cache-control": "private, no-store"})


def _api_error(code: int, error: str, message: str, cors: dict[str, str], challenge: str = "") -> JSONResponse:
    headers = {**cors, "cache-control": "no-store"}
    if challenge:
        headers["www-authenticate"] = challenge
    return JSONResponse({"error": error, "message": message}, status_code=code, headers=headers)
