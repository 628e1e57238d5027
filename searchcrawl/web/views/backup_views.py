"""The administration's backup page (/admin/backup, issue 79): the configuration downloaded as one
file, and a backup uploaded into an empty installation, planned first (a dry run shown) and
restored only when the administrator confirms it (ops/configuration_backup.py does both; `scrapy backup` the
same from the command line).

The upload is the one form of the application that is not URL-encoded (a file is sent as
multipart): its size is bounded by its declared length before anything is read, its CSRF token
is checked like every form's, and the planned backup is kept for the administrator's session
only, until restored, replaced or ``PENDING_SECONDS`` old."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from searchcrawl.ops import configuration_backup as backup
from searchcrawl.system.translations import gettext as _
from searchcrawl.system.translations import ngettext, number
from searchcrawl.web.context import WebContext
from searchcrawl.web.roles import Permission
from searchcrawl.web.shared import SESSION_COOKIE, admin_gate, audited, flash, in_thread
from searchcrawl.web.sign_on.sessions import Sessions
from searchcrawl.web.source_editor import refused_new_source

logger = logging.getLogger(__name__)

PENDING_SECONDS = 900  # a planned restore waits this long for its confirmation
MAX_PENDING = 20  # planned restores kept at once (administrators' sessions), the oldest dropped first
MULTIPART_OVERHEAD = 65_536  # the form's boundaries and its other fields, over the backup itself


@dataclass(frozen=True)
class ShownPlan:
    """A restore's plan as the page shows it: the problems, or what would be restored."""

    problems: list[str]
    lines: list[str]

    @classmethod
    def of(cls, plan: backup.RestorePlan) -> ShownPlan:
        return cls(list(plan.problems), [] if plan.problems else plan.lines())


def keep_pending(ctx: WebContext, session: str, data: bytes, plan: ShownPlan) -> None:
    """The uploaded file (its bytes: bounded, never the parsed objects) and its plan, for the
    session's confirmation; expired ones and the oldest past MAX_PENDING go."""
    moment = time.monotonic()
    for key in [key for key, pending in ctx.restores.items() if moment - pending["at"] > PENDING_SECONDS]:
        del ctx.restores[key]
    ctx.restores.pop(session, None)
    ctx.restores[session] = {"data": data, "plan": plan, "at": moment}
    while len(ctx.restores) > MAX_PENDING:
        del ctx.restores[next(iter(ctx.restores))]


def export(ctx: WebContext) -> dict[str, Any]:
    return backup.export_backup(
        ctx.database,
        ctx.config.sources_dir,
        ctx.config.settings,
        os.environ,
        str(ctx.config.settings.get("SEARCHCRAWL_NOTIFY_INSTALLATION") or "searchcrawl"),
    )


async def backup_page(ctx: WebContext, request: Request) -> Response:
    denied = await admin_gate(ctx, request, permission=Permission.ADMINISTER)
    if denied is not None:
        return denied
    pending = ctx.restores.get(str(request.cookies.get(SESSION_COOKIE)))  # the plan shown again
    if pending is not None and time.monotonic() - pending["at"] > PENDING_SECONDS:
        pending = None
    return ctx.render(request, "backup.html", plan=pending["plan"] if pending else None, flash=flash(ctx, request))


async def backup_export(ctx: WebContext, request: Request) -> Response:
    """The backup as a file to download (no secret in it: hashes of tokens, names of secrets)."""
    denied = await admin_gate(ctx, request, permission=Permission.ADMINISTER)
    if denied is not None:
        return denied
    exported = await in_thread(export, ctx)
    logger.info("Web administration: backup exported (%d sources)", len(exported["sources"]))
    await audited(
        ctx, request, "backup:export", "", f"{len(exported['sources'])} sources, {len(exported['api_tokens'])} API tokens"
    )
    name = f"searchcrawl-backup-{datetime.now(UTC):%Y%m%d-%H%M%S}.json"
    return Response(
        backup.dumps(exported),
        media_type="application/json",
        headers={"content-disposition": f'attachment; filename="{name}"'},
    )


async def backup_import(ctx: WebContext, request: Request) -> Response:
    """An uploaded backup, planned (nothing written): the page shows the plan, and a button that
    restores it when it has no problem."""
    denied = await admin_gate(
        ctx, request, permission=Permission.ADMINISTER
    )  # the session; the CSRF token is in the multipart form
    if denied is not None:
        return denied
    session = ctx.sessions.get(request.cookies.get(SESSION_COOKIE))
    assert session is not None  # admin_gate let a session through
    declared = request.headers.get("content-length", "")
    if not declared.isdigit() or int(declared) > backup.MAX_BACKUP_BYTES + MULTIPART_OVERHEAD:
        return ctx.render(
            request,
            "forbidden.html",
            413,
            reason=_("Send a backup file of at most %(mib)s MiB, with its length.", mib=number(16)),
        )
    if not request.headers.get("content-type", "").lower().startswith("multipart/form-data"):
        return ctx.render(request, "forbidden.html", 415, reason=_("Not a form of this application."))
    form = await request.form(max_files=1, max_fields=2, max_part_size=MULTIPART_OVERHEAD)
    try:
        if not Sessions.csrf_ok(session, str(form.get("csrf", "")) or None):
            logger.warning("Web administration: backup upload without its CSRF token refused")
            return ctx.render(request, "forbidden.html", 403, reason=_("The form's token is missing or stale."))
        upload = form.get("backup")
        if not isinstance(upload, UploadFile):
            return ctx.render(request, "backup.html", 400, plan=None, error=_("Choose a backup file."))
        data = await upload.read(backup.MAX_BACKUP_BYTES + 1)
    finally:
        await form.close()
    try:
        read = backup.read_backup(data)
    except backup.BackupError as exc:
        return ctx.render(request, "backup.html", 400, plan=None, error=str(exc))
    plan = await in_thread(
        backup.plan_restore,
        read,
        ctx.database,
        ctx.config.sources_dir,
        ctx.config.settings,
        partial(refused_new_source, local_seeds=ctx.config.local_seeds),
    )
    logger.info("Web administration: backup planned (%d problems)", len(plan.problems))
    shown = ShownPlan.of(plan)
    del read, plan  # a large backup's objects are not kept: its bytes are, for the confirmation
    if not shown.problems:
        keep_pending(ctx, str(request.cookies.get(SESSION_COOKIE)), data, shown)
    return ctx.render(request, "backup.html", 400 if shown.problems else 200, plan=shown)


async def backup_restore(ctx: WebContext, request: Request) -> Response:
    """The session's planned backup restored, planned again first (the installation may have
    changed since): nothing is written when the new plan has a problem."""
    denied = await admin_gate(ctx, request, permission=Permission.ADMINISTER, post=True)
    if denied is not None:
        return denied
    pending = ctx.restores.pop(str(request.cookies.get(SESSION_COOKIE)), None)
    if pending is None or time.monotonic() - pending["at"] > PENDING_SECONDS:
        return ctx.render(request, "backup.html", 400, plan=None, error=_("No backup is waiting: upload it again."))

    def restore() -> backup.RestorePlan:
        plan = backup.plan_restore(
            backup.read_backup(pending["data"]),
            ctx.database,
            ctx.config.sources_dir,
            ctx.config.settings,
            partial(refused_new_source, local_seeds=ctx.config.local_seeds),
        )
        if plan.ok:
            backup.apply_restore(plan, ctx.database, ctx.config.sources_dir)
        return plan

    try:
        plan = await in_thread(restore)
    except (backup.BackupError, OSError) as exc:  # the installation changed under the restore: nothing kept
        logger.warning("Web administration: backup not restored: %s", exc)
        return ctx.render(request, "backup.html", 409, plan=None, error=_("Nothing was restored: %(reason)s", reason=exc))
    if not plan.ok:
        return ctx.render(request, "backup.html", 400, plan=ShownPlan.of(plan))
    ctx.relevance.changed()
    ctx.token_gate.forget()
    restored = len(plan.sources)
    message = ngettext(
        "Backup restored: %(count)s source.", "Backup restored: %(count)s sources.", restored, count=number(restored)
    )
    try:  # the synonyms and stopwords restored, to Solr (else the next start of the application sends them)
        await in_thread(ctx.sync_relevance)
    except Exception as exc:  # noqa: BLE001 - Solr down: restored all the same, said on the page
        message = ngettext(
            "Backup restored: %(count)s source. Synonyms and stopwords not sent to Solr yet (%(reason)s).",
            "Backup restored: %(count)s sources. Synonyms and stopwords not sent to Solr yet (%(reason)s).",
            restored,
            count=number(restored),
            reason=getattr(exc, "reason", "") or type(exc).__name__,
        )
    logger.info("Web administration: backup restored (%d sources)", len(plan.sources))
    await audited(ctx, request, "backup:restore", "", "; ".join(plan.sources)[:2000])
    ctx.sessions.flash(request.cookies.get(SESSION_COOKIE), message)
    return RedirectResponse(ctx.url("/admin/backup"), status_code=303)
