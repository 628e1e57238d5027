"""The administration's API tokens page (/admin/api): tokens made (shown once) and revoked
(store/api_tokens.py); the JSON API they open is views/api_views.py."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from searchcrawl.store.api_tokens import ApiTokens
from searchcrawl.system.translations import gettext as _
from searchcrawl.system.translations import number
from searchcrawl.web.context import WebContext
from searchcrawl.web.roles import Permission
from searchcrawl.web.shared import admin_gate, audited, flash, in_thread, int_param, small_form
from searchcrawl.web.sign_on.sessions import SESSION_COOKIE

logger = logging.getLogger(__name__)


async def api_tokens(ctx: WebContext, request: Request) -> Response:
    """The API's tokens (store/api_tokens.py); a POST makes one and leads to this page, which
    shows it once (reloading the page makes no second token)."""
    post = request.method == "POST"
    denied = await admin_gate(ctx, request, permission=Permission.ADMINISTER, post=post)
    if denied is not None:
        return denied
    tokens = await in_thread(lambda: ApiTokens(ctx.database))  # opening it may wait: not on the event loop
    session = str(request.cookies.get(SESSION_COOKIE))
    created, error = None, ""
    if not post:
        created = ctx.made.pop(session, None)
    else:
        form = await small_form(request) or FormData()
        name = str(form.get("name", "")).strip()
        typed = str(form.get("days", "")).strip()
        days = int_param(typed)
        if not name or len(name) > 200:
            error = _("Give the token a name (at most %(chars)s characters).", chars=number(200))
        elif (typed and days is None) or (days is not None and not 1 <= days <= 3650):
            error = _("A token expires after %(least)s to %(most)s days, or never.", least=number(1), most=number(3650))
        else:
            expires = datetime.now(UTC) + timedelta(days=days) if days else None
            on_behalf = form.get("on_behalf") == "1"
            token_id, token = await in_thread(tokens.create, name, on_behalf, expires)
            logger.info("Web administration: API token %d %r made (on behalf of users: %s)", token_id, name, on_behalf)
            detail = f"on behalf of users: {on_behalf}; expires: {expires.isoformat() if expires else 'never'}"
            await audited(ctx, request, "token:make", f"{token_id} {name}", detail)
            ctx.made[session] = {"id": token_id, "name": name, "token": token}  # one a session
            return RedirectResponse(ctx.url("/admin/api"), status_code=303)
    listed = await in_thread(tokens.list)
    code = 400 if error else 200
    return ctx.render(request, "api_tokens.html", code, tokens=listed, created=created, error=error, flash=flash(ctx, request))


async def api_token_revoke(ctx: WebContext, request: Request) -> Response:
    denied = await admin_gate(ctx, request, permission=Permission.ADMINISTER, post=True)
    if denied is not None:
        return denied
    token_id = int(request.path_params["token"])
    revoked = await in_thread(lambda: ApiTokens(ctx.database).revoke(token_id))
    ctx.token_gate.forget()  # its kept verdict too: revoked at once
    if revoked:
        await audited(ctx, request, "token:revoke", str(token_id))
    if revoked:
        logger.info("Web administration: API token %d revoked.", token_id)
        message = _("API token %(id)s revoked.", id=token_id)
    else:
        logger.info("Web administration: No valid API token %d.", token_id)
        message = _("No valid API token %(id)s.", id=token_id)
    ctx.sessions.flash(request.cookies.get(SESSION_COOKIE), message)
    return RedirectResponse(ctx.url("/admin/api"), status_code=303)
