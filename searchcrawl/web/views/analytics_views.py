"""Query analytics' views: a hit opened from a result page (/click: recorded, then redirected)
and the administration's analytics page and its CSV reports (analytics.py, store/searches.py)."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from searchcrawl.store.searches import Searches
from searchcrawl.system.translations import gettext as _
from searchcrawl.web import analytics
from searchcrawl.web.context import WebContext
from searchcrawl.web.roles import Permission
from searchcrawl.web.shared import admin_gate, in_thread

logger = logging.getLogger(__name__)


async def click(ctx: WebContext, request: Request) -> Response:
    """A hit opened from a result page: recorded, then redirected to the hit's URL; only a
    link this application signed (analytics.ClickSigner), never any other URL."""
    click = ctx.analytics.signer.check(request.query_params)
    if click is None:
        logger.debug("Click link refused: not one of this application's (or from before its restart)")
        return ctx.render(
            request,
            "forbidden.html",
            404,
            reason=_("This link is not valid (it may be older than the server's restart): search again."),
        )
    # a link checker's HEAD opens nothing; a stale or replayed link is followed, not counted
    if request.method == "GET" and ctx.analytics.counts(click):
        ctx.analytics.click(click)
    response = RedirectResponse(click.url, status_code=303)
    response.headers["cache-control"] = "no-store"
    return response


async def analytics_page(ctx: WebContext, request: Request) -> Response:
    """Query analytics over a chosen period: totals, top queries, queries with no hits and
    click-through by position (store/searches.py)."""
    denied = await admin_gate(ctx, request, permission=Permission.RELEVANCE)
    if denied is not None:
        return denied
    period, chosen = analytics.period_of(request.query_params)

    def gather() -> dict[str, Any]:
        store = Searches(ctx.database)
        return {
            "totals": store.totals(period),
            "top": store.top_queries(period, analytics.PAGE_ROWS),
            "none": store.no_hits(period, analytics.PAGE_ROWS),
            "abandoned": store.abandoned(period, analytics.PAGE_ROWS),
            "positions": store.positions(period),
            "searchers": store.searchers(period, analytics.PAGE_ROWS),
        }

    try:
        reports = await in_thread(gather)
    except Exception as exc:  # noqa: BLE001 - the page says so; the rest of the administration works on
        logger.warning("Web administration: analytics not read: %s", analytics.short_error(exc))
        reports = None
    return ctx.render(
        request,
        "analytics.html",
        period=period,
        chosen=chosen,
        period_days=analytics.PERIOD_DAYS,
        reports=reports,
        enabled=ctx.analytics.enabled,
        log_users=ctx.analytics.log_users,
        days=ctx.analytics.days,
        dropped=ctx.analytics.dropped,
        csv_query=urlencode(chosen),
    )


async def analytics_csv(ctx: WebContext, request: Request) -> Response:
    """One report of the analytics page as CSV (analytics.csv_text: safe to open in a spreadsheet)."""
    denied = await admin_gate(ctx, request, permission=Permission.RELEVANCE)
    if denied is not None:
        return denied
    report = request.query_params.get("report", "")
    if report not in analytics.REPORTS:
        return ctx.render(request, "forbidden.html", 404, reason=_("No such report."))
    period, _chosen = analytics.period_of(request.query_params)
    try:
        header, rows = await in_thread(lambda: analytics.report_rows(Searches(ctx.database), report, period))
    except Exception as exc:  # noqa: BLE001 - said on a page, as the analytics page does
        logger.warning("Web administration: analytics not read: %s", analytics.short_error(exc))
        return ctx.render(request, "forbidden.html", 503, reason=_("The analytics cannot be read from the database now."))
    name = analytics.csv_filename(report, period)
    return Response(
        analytics.csv_text(header, rows),
        media_type="text/csv; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{name}"'},
    )
