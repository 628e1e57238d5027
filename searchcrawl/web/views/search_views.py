"""The search page's views (the searchers' audience): the page itself, trimmed by Solr to what
the searcher may read, and the search box's suggestions while typing (/suggest). A hit's link
goes through analytics_views.click while query analytics is on (context.hit_link). The logic:
search/results.py and search/request.py."""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from searchcrawl.index.solr_client import IndexingError
from searchcrawl.search import suggestions
from searchcrawl.search.cached_copy import by_id, cached_copy
from searchcrawl.search.request import SearchRequest, day
from searchcrawl.search.results import display_url, highlighted
from searchcrawl.search.trimmed_index import log_failed_search
from searchcrawl.system import translations
from searchcrawl.system.translations import gettext as _
from searchcrawl.web.context import WebContext
from searchcrawl.web.shared import (
    LANGUAGE_COOKIE,
    LANGUAGE_COOKIE_SECONDS,
    MAX_BACK_PATH_CHARS,
    answer_of,
    in_limited_thread,
    in_thread,
    local_back,
    personal,
    set_cookie,
    who_searches,
)

logger = logging.getLogger(__name__)

MAX_ID_CHARS = 10_000  # a document id is its source's name and its URL (SEARCHCRAWL_MAX_URL_LENGTH)

# The search page alone runs a script: this application's own suggest.js (static/, no inline
# script, no eval), which asks /suggest (connect-src) for suggestions while the searcher types.
# Every other page, the administration's included, keeps script-src 'none'; JSON from /suggest
# is never a script (nosniff, application/json), and nothing else this origin serves is one.
SEARCH_PAGE_CSP = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


async def choose_language(ctx: WebContext, request: Request) -> Response:
    """The searcher's choice of the interface's language (the selector on every page): kept in a
    cookie for a year, then back to the page it was made on (a page of this application only).
    A language not offered clears the choice: the browser's languages decide again."""
    form = await request.form(max_files=0, max_fields=4, max_part_size=MAX_BACK_PATH_CHARS * 2)
    chosen = str(form.get("language", ""))
    response = RedirectResponse(local_back(str(form.get("here", "")), ctx.config.prefix), status_code=303)
    if chosen in translations.LANGUAGES:
        set_cookie(request, response, LANGUAGE_COOKIE, chosen, LANGUAGE_COOKIE_SECONDS, ctx.config.prefix + "/", "lax")
    else:
        response.delete_cookie(LANGUAGE_COOKIE, path=ctx.config.prefix + "/")
    return response


async def search(ctx: WebContext, request: Request) -> Response:
    """The search page, trimmed by Solr to what the searcher may read (hits, counts, facets,
    suggestions and pages alike)."""
    started = time.perf_counter()
    query = SearchRequest.from_params(request.query_params)  # every value of a repeated facet parameter
    searcher = await who_searches(ctx, request)
    try:
        done = await in_thread(ctx.search, searcher.index, query, "web", searcher.user, None, True, started)
        found = await answer_of(ctx, request, query, searcher.index, unasked=True, semantic=done.semantic)
    except IndexingError as exc:
        log_failed_search("Search", query.q, exc)
        failed = render_search(
            ctx, request, 503, page=None, query=query, searcher=searcher, error=_("The index cannot be searched now.")
        )
        return personal(ctx, failed)
    return personal(
        ctx,
        render_search(
            ctx,
            request,
            page=done.page,
            query=query,
            searcher=searcher,
            error="",
            default_rows=ctx.config.rows,
            hit_link=ctx.hit_link(done.search_id),
            answer=found,
            answer_url=ctx.url("/" + query.url() + "&answer=1")  # the search's own parameters, none other
            if ctx.config.answers and ctx.semantic and query.q and not (found and found.asked_model)
            else "",
        ),
    )


def render_search(ctx: WebContext, request: Request, code: int = 200, **context: Any) -> HTMLResponse:
    """The search page, with the policy that lets its own script run (SEARCH_PAGE_CSP) when it
    has suggestions; without them it is a page like any other, with no script."""
    response = ctx.render(request, "search.html", code, suggestions_enabled=ctx.config.suggestions, **context)
    if ctx.config.suggestions:
        response.headers["content-security-policy"] = SEARCH_PAGE_CSP
    return response


async def suggest(ctx: WebContext, request: Request) -> Response:
    """Suggestions while typing (suggestions.py) as JSON, for the searcher of the request
    (as the search page knows them): ``{"q": ..., "suggestions": [{"text", "kind"}]}``.
    An empty list when Solr fails (the search box works without them); 404 when they are off."""
    if not ctx.config.suggestions:
        return personal(ctx, JSONResponse({"error": "Suggestions are off."}, status_code=404))
    prefix = suggestions.clean(request.query_params.get("q", ""), suggestions.MAX_PREFIX_CHARS)
    searcher = await who_searches(ctx, request)
    found: list[suggestions.Suggestion] = []
    code = 200
    try:
        found = await in_thread(ctx.completions, prefix, searcher.index)
    except IndexingError as exc:
        log_failed_search(f"Suggestions ({len(prefix)} characters typed)", None, exc)
        code = 503
    answer = JSONResponse({"q": prefix, "suggestions": [item.as_json() for item in found]}, status_code=code)
    return personal(ctx, answer)


async def cached(ctx: WebContext, request: Request) -> Response:
    """A hit's cached copy (search/cached_copy.py): the text indexed for document ``id``, with the
    words of ``q`` marked, if the searcher may read it; 404 alike when it is absent or withheld."""
    doc_id = request.query_params.get("id", "")[:MAX_ID_CHARS]
    query = request.query_params.get("q", "")
    searcher = await who_searches(ctx, request)
    if not doc_id:
        return personal(ctx, ctx.render(request, "cached.html", 404, copy=None, searcher=searcher, q=query))
    try:
        copy = await in_limited_thread(ctx.cached_copies, cached_copy, searcher.index, by_id(doc_id), query)
    except IndexingError as exc:
        log_failed_search("Cached copy", None, exc)
        return personal(ctx, ctx.render(request, "cached.html", 503, copy=None, searcher=searcher, q=query, error=True))
    logger.debug("Cached copy of %r for %s: %s", doc_id, searcher.user or "a visitor", "shown" if copy else "not found")
    if copy is None:
        return personal(ctx, ctx.render(request, "cached.html", 404, copy=None, searcher=searcher, q=query))
    return personal(
        ctx,
        ctx.render(
            request,
            "cached.html",
            copy=copy,
            text=highlighted(copy.text),
            link=display_url(copy.doc),
            crawled=day(str(copy.doc.get("crawled_at") or "")[:10]),  # shown by the page's language
            searcher=searcher,
            q=query,
            back=SearchRequest(q=query).url() if query else "",
        ),
    )


async def to_prefix(ctx: WebContext, request: Request) -> Response:
    """The server's root when the application is served under a prefix: to the search page."""
    return RedirectResponse(ctx.url("/"))
