"""The administration's views: the overview, a source, its documents and runs, a URL explained,
the run buttons, explain-access, the daily summary, and Prometheus' /metrics (their logic is in
admin.py, ops/ and metrics_endpoint.py). Every page passes shared.admin_gate first."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from searchcrawl.access.decision import Principals
from searchcrawl.access.explanation import URL_WANTED, explainable_url
from searchcrawl.index.solr_client import IndexingError
from searchcrawl.ops import daily_summary
from searchcrawl.ops.run_control import ACTIONS, control
from searchcrawl.rules.lifecycle import Delta, State
from searchcrawl.rules.status_codes import describe
from searchcrawl.search.answer_explanation import ANSWERS_OFF, explained_with
from searchcrawl.search.answer_explanation import explain_answer as explain_answer_lines
from searchcrawl.search.answers import MAX_QUESTION_CHARS
from searchcrawl.store import DocumentTable
from searchcrawl.store.audit_log import AuditLog
from searchcrawl.store.deltas import run_report
from searchcrawl.store.notifications import Notifications, run_key
from searchcrawl.store.runs import Runs
from searchcrawl.store.samples import RunSamples
from searchcrawl.system.translations import gettext as _
from searchcrawl.system.translations import translated
from searchcrawl.web import admin, pictures
from searchcrawl.web.context import WebContext
from searchcrawl.web.metrics_endpoint import metrics_response
from searchcrawl.web.roles import Permission
from searchcrawl.web.shared import (
    PEER,
    admin_gate,
    audited,
    flash,
    in_limited_thread,
    in_thread,
    int_param,
    searcher_principals,
    small_form,
)
from searchcrawl.web.sign_on.sessions import SESSION_COOKIE

logger = logging.getLogger(__name__)

DOCUMENT_ROWS = 50
AUDIT_ROWS = 100  # entries of the audit log a page


async def overview(ctx: WebContext, request: Request) -> Response:
    denied = await admin_gate(ctx, request, permission=Permission.VIEW)
    if denied is not None:
        return denied

    def gather() -> dict[str, Any]:
        names = ctx.config.source_names()
        for name in names:  # reap local crawl processes that ended
            ctx.config.launcher.active(name)
        rows = admin.overview(
            ctx.database,
            names,
            ctx.config.schedule_of,
            ctx.config.cache_root,
            datetime.now().astimezone(),
            ctx.config.stale_after,
        )
        return {
            "sources": rows,
            "solr": admin.solr_health(ctx.operator_solr()),
            "stalls": ctx.stalls(names),
            "now": datetime.now(UTC),
        }

    return ctx.render(request, "overview.html", **await in_thread(gather), flash=flash(ctx, request))


async def source(ctx: WebContext, request: Request) -> Response:
    name = await _admin_source(ctx, request)
    if isinstance(name, Response):
        return name

    def gather() -> dict[str, Any]:
        table = DocumentTable(ctx.database)
        statuses = sorted(table.count_by(name, "status").items(), key=lambda item: (item[0] is None, item[0] or 0))
        recent = Runs(ctx.database).recent(name, limit=max(20, pictures.SOURCE_RUNS))
        return {
            "runs": [{**admin.shown_run(run), "counts": admin.run_counts(run)} for run in recent[:20]],
            "charts": pictures.source_charts(recent),  # issue 60: drawn here, inline SVG
            "states": table.count_by(name, "state"),
            "statuses": [(status, count, describe(status)) for status, count in statuses],
        }

    return ctx.render(request, "source.html", name=name, **await in_thread(gather), flash=flash(ctx, request))


async def run(ctx: WebContext, request: Request) -> Response:
    denied = await admin_gate(ctx, request, permission=Permission.OPERATE)
    if denied is not None:
        return denied
    view = await in_thread(
        lambda: admin.run_view(ctx.database, int(request.path_params["run"]), ctx.config.cache_root, ctx.config.stale_after)
    )
    if view is None:
        return ctx.render(request, "forbidden.html", 404, reason=_("No such run."))
    report = None
    if not view.live:
        report = await in_thread(lambda: run_report(ctx.database, view.run["source"], view.run["id"]))
    samples = await in_thread(lambda: RunSamples(ctx.database).of(view.run["id"]))
    chart = pictures.run_chart(view.run, samples) if samples or view.live else None  # issue 60
    # issue 60: what was told of the run, on which channel (store/notifications.py)
    sent = await in_thread(lambda: Notifications(ctx.database).of_key(run_key(view.run["id"])))
    stalled = [stall for stall in await in_thread(ctx.stalls, [view.run["source"]]) if stall.run_id == view.run["id"]]
    return ctx.render(
        request,
        "run.html",
        view=view,
        report=report,
        kinds=tuple(Delta),
        chart=chart,
        notifications=sent,
        flash=flash(ctx, request),
        stalls=stalled,
        now=datetime.now(UTC),
    )


async def documents(ctx: WebContext, request: Request) -> Response:
    name = await _admin_source(ctx, request)
    if isinstance(name, Response):
        return name
    status = int_param(request.query_params.get("status"))
    state = request.query_params.get("state")
    state = state if state in {item.value for item in State} else None
    page = max(int_param(request.query_params.get("page")) or 1, 1)
    rows = await in_thread(
        lambda: admin.shown_rows(
            DocumentTable(ctx.database).rows(name, status, state, DOCUMENT_ROWS + 1, (page - 1) * DOCUMENT_ROWS)
        )
    )
    return ctx.render(
        request,
        "documents.html",
        name=name,
        rows=rows[:DOCUMENT_ROWS],
        more=len(rows) > DOCUMENT_ROWS,
        status=status,
        state=state,
        page=page,
        meaning=describe(None if status == -1 else status) if status is not None else "",
    )


async def explain(ctx: WebContext, request: Request) -> Response:
    name = await _admin_source(ctx, request, post=True)
    if isinstance(name, Response):
        return name
    url = str((await small_form(request) or FormData()).get("url", "")).strip()
    if not admin.explainable(url):
        ok, text = False, _("Give %(wanted)s.", wanted=_(admin.EXPLAIN_URL))
    else:
        ok, text = await in_thread(admin.explain, ctx.config.project_dir, name, url, ctx.config.explain_environ)
    return ctx.render(request, "explain.html", name=name, url=url, ok=ok, text=text)


async def explain_access_form(ctx: WebContext, request: Request) -> Response:
    denied = await admin_gate(ctx, request, permission=Permission.ADMINISTER)
    if denied is not None:
        return denied
    return ctx.render(request, "explain_access.html", user="", url="", ok=True, text="")


async def explain_access(ctx: WebContext, request: Request) -> Response:
    """`scrapy explain-access USER URL`'s report: the user's principals, the document's
    tokens, the decision and why (access/explanation.py, through admin.explain_access)."""
    denied = await admin_gate(ctx, request, permission=Permission.ADMINISTER, post=True)
    if denied is not None:
        return denied
    form = await small_form(request) or FormData()
    user, url = str(form.get("user", "")).strip()[:256], str(form.get("url", "")).strip()
    if not user or not explainable_url(url):  # the URLs the command takes
        # URL_WANTED: the command's own words (access/explanation.py), worded if its catalogue has them
        ok, text = False, _("Give a user name and %(wanted)s.", wanted=_(URL_WANTED))
    else:
        ok, text = await in_limited_thread(
            ctx.directory_threads,
            lambda: admin.explain_access(ctx.config.directory, ctx.operator_solr(), ctx.database, user, url),
        )
    logger.info("Web administration: explain-access %s %s", user, url)
    return ctx.render(request, "explain_access.html", user=user, url=url, ok=ok, text=text)


async def explain_answer_form(ctx: WebContext, request: Request) -> Response:
    denied = await admin_gate(ctx, request, permission=Permission.ADMINISTER)
    if denied is not None:
        return denied
    return ctx.render(request, "explain_answer.html", user="", question="", ok=True, text="")


async def explain_answer(ctx: WebContext, request: Request) -> Response:
    """`scrapy explain-answer USER QUESTION`'s report (search/answer_explanation.py), for the
    user's principals from the directory (``public``: a visitor)."""
    denied = await admin_gate(ctx, request, permission=Permission.ADMINISTER, post=True)
    if denied is not None:
        return denied
    form = await small_form(request) or FormData()
    user, question = str(form.get("user", "")).strip()[:256], str(form.get("question", "")).strip()[:MAX_QUESTION_CHARS]
    if not user or not question:
        ok, text = False, _("Give a user name (or public) and a question.")
    elif (chosen := explained_with(ctx.config.answers, ctx.config.extractive)) is None or ctx.semantic is None:
        ok, text = False, _("Answers are off: %(why)s.", why=translated(ANSWERS_OFF))
    else:
        principals = Principals.anonymous() if user == "public" else await searcher_principals(ctx, user)
        try:
            untrimmed = ctx.operator_solr()  # the withheld passages too: an administrator's view
            explained = await in_thread(explain_answer_lines, untrimmed, ctx.semantic.active(), principals, question, *chosen)
            ok, text = not explained.failed, "\n".join(explained.lines)
        except IndexingError as exc:
            ok, text = False, _("Solr did not answer: %(reason)s", reason=exc.reason)
    logger.info("Web administration: explain-answer for %s", user)
    return ctx.render(request, "explain_answer.html", user=user, question=question, ok=ok, text=text)


async def control_source(ctx: WebContext, request: Request) -> Response:
    denied = await admin_gate(ctx, request, permission=Permission.OPERATE, post=True)
    if denied is not None:
        return denied
    name = _source(ctx, request)
    form = await small_form(request) or FormData()
    action = str(form.get("action", ""))
    if name is None or action not in ACTIONS:
        return ctx.render(request, "forbidden.html", 404, reason=_("No such source or action."))
    outcome = await in_thread(lambda: control(ctx.database, ctx.config.launcher, name, action, ctx.config.stale_after))
    # the log and the audit log in English (the outcome's message), the flash in the page's language
    logger.info("Web administration: %s %s: %s", action, name, outcome.message)
    await audited(ctx, request, f"control:{action}", name, outcome.message)
    ctx.sessions.flash(request.cookies.get(SESSION_COOKIE), outcome.shown())
    back = str(form.get("back", ""))
    target = back if back.startswith("/admin") and "//" not in back else f"/admin/sources/{name}"
    return RedirectResponse(ctx.url(target), status_code=303)


async def summary_page(ctx: WebContext, request: Request) -> Response:
    """The daily summary (issue 60, ops/daily_summary.py: the one `scrapy summary` prints and
    sends): sources crawled in the last 24 hours (?hours=), changes, failures, what waits."""
    denied = await admin_gate(ctx, request, permission=Permission.OPERATE)
    if denied is not None:
        return denied
    try:
        hours = min(max(float(request.query_params.get("hours", "24")), 1.0), 744.0)
    except ValueError:
        hours = 24.0
    if hours != hours:  # NaN
        hours = 24.0

    def gather() -> Any:
        names = ctx.config.source_names()
        schedules = {name: schedule for name in names if (schedule := ctx.config.schedule_of(name)) is not None}
        return daily_summary.build_summary(ctx.database, datetime.now().astimezone(), hours, schedules)

    return ctx.render(request, "summary.html", summary=await in_thread(gather), hours=hours)


async def audit_page(ctx: WebContext, request: Request) -> Response:
    """The audit log (store/audit_log.py): every change made here, who made it and when, newest
    first, a page of AUDIT_ROWS at a time (?page=), one user's only with ?user=."""
    denied = await admin_gate(ctx, request, permission=Permission.ADMINISTER)
    if denied is not None:
        return denied
    page = max(1, min(int_param(request.query_params.get("page")) or 1, 100_000))
    user = request.query_params.get("user", "")[:256]

    def gather() -> tuple[list[dict[str, Any]], int]:
        log = AuditLog(ctx.database)
        return log.recent(AUDIT_ROWS, (page - 1) * AUDIT_ROWS, user), log.count(user)

    entries, total = await in_thread(gather)
    return ctx.render(request, "audit.html", entries=entries, total=total, page=page, rows=AUDIT_ROWS, user=user)


async def metrics(ctx: WebContext, request: Request) -> Response:
    """Prometheus' /metrics (web/metrics_endpoint.py: off unless SEARCHCRAWL_WEB_METRICS; loopback or token)."""
    registry = await in_thread(lambda: ctx.registry)
    return await metrics_response(request, request.scope.get(PEER), registry, ctx.config.metrics_token, ctx.proxies)


async def _admin_source(ctx: WebContext, request: Request, post: bool = False) -> str | Response:
    """The source an administration page is about, or the answer to send instead (not
    allowed: ``shared.admin_gate``; no such source: 404)."""
    denied = await admin_gate(ctx, request, permission=Permission.OPERATE, post=post)
    if denied is not None:
        return denied
    name = _source(ctx, request)
    if name is None:
        return ctx.render(request, "forbidden.html", 404, reason=_("No such source."))
    return name


def _source(ctx: WebContext, request: Request) -> str | None:
    name = str(request.path_params["name"])
    return name if name in ctx.config.source_names() else None
