"""The administration's source editor (/admin/source-files, issue 79): source files listed,
created, edited, copied, disabled, enabled and deleted in the browser; administrators only
(web/roles.py). The logic is source_editor.py: checked by the crawl's loader, the change and what
it does to the index shown before a save, saved atomically with the previous version kept.

The editor's form is one: its ``action`` says what to do with the text (``check``; ``explain`` a
URL against it, unsaved; a ``test`` crawl of a few pages; ``review`` the change; ``save`` it,
which needs the review of this very text: a save without a diff seen is refused). A test crawl
runs in the background (``TestCrawls``): the form is answered with /admin/test-crawl, the editor
with the text it was started from, refreshed every few seconds with what the crawl is doing, until
its report replaces it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from searchcrawl.config.source_reference import reference
from searchcrawl.system.translations import ENGLISH, speaking
from searchcrawl.system.translations import gettext as _
from searchcrawl.web import admin
from searchcrawl.web.context import WebContext
from searchcrawl.web.roles import Permission
from searchcrawl.web.shared import admin_gate, audited, flash, in_limited_thread, in_thread, small_form
from searchcrawl.web.sign_on.sessions import SESSION_COOKIE
from searchcrawl.web.source_editor import (
    MAX_SOURCE_BYTES,
    TEMPLATE,
    TEST_PAGES,
    Changes,
    SourceFileError,
    SourceFolder,
    TestCrawlRefused,
    changes,
    file_version,
    guarded_change,
    scratch_sources,
    test_crawl,
    valid_name,
)

logger = logging.getLogger(__name__)

TEST_REFRESH = 2  # seconds between two looks of a running test crawl's page
EDITOR_FORM_BYTES = 3 * MAX_SOURCE_BYTES + 16_384  # the text, URL-encoded (at most 3 bytes a byte), and the rest
NEW = ""  # the name of the editor's page for a new source


def folder_of(ctx: WebContext) -> SourceFolder | None:
    return SourceFolder(ctx.config.sources_dir, ctx.config.local_seeds) if ctx.config.sources_dir is not None else None


async def source_files(ctx: WebContext, request: Request) -> Response:
    """The source files of the sources folder: enabled and disabled, with their actions."""
    denied = await admin_gate(ctx, request, permission=Permission.ADMINISTER)
    if denied is not None:
        return denied
    folder = folder_of(ctx)
    listing = await in_thread(folder.listing) if folder is not None else []
    return ctx.render(request, "source_files.html", folder=folder, listing=listing, flash=flash(ctx, request))


async def source_editor(ctx: WebContext, request: Request) -> Response:
    """The editor of a source file (``name``; a new one without), with its text as saved."""
    denied = await admin_gate(ctx, request, permission=Permission.ADMINISTER)
    if denied is not None:
        return denied
    folder = folder_of(ctx)
    name = str(request.path_params.get("name", NEW))
    if folder is None:
        return ctx.render(request, "forbidden.html", 404, reason=_("No sources folder: set SEARCHCRAWL_SOURCES_DIR."))
    if name == NEW:
        return editor(ctx, request, name="", text=TEMPLATE, read="")
    try:
        text = await in_thread(folder.read, name)
    except SourceFileError as exc:
        return ctx.render(request, "forbidden.html", 404, reason=str(exc))
    return editor(ctx, request, name=name, text=text, read=file_version(text))


def editor(ctx: WebContext, request: Request, code: int = 200, **page: Any) -> Response:
    page.setdefault("error", "")
    page.setdefault("output", "")
    page.setdefault("url", "")
    page.setdefault("changes", None)
    page.setdefault("reviewed", "")
    return ctx.render(request, "source_edit.html", code, keys=reference(), flash=flash(ctx, request), **page)


async def source_change(ctx: WebContext, request: Request) -> Response:
    """The editor's form: check, explain, test, review or save the edited text."""
    denied = await admin_gate(ctx, request, permission=Permission.ADMINISTER, post=True, form_bytes=EDITOR_FORM_BYTES)
    if denied is not None:
        return denied
    folder = folder_of(ctx)
    if folder is None:
        return ctx.render(request, "forbidden.html", 404, reason=_("No sources folder: set SEARCHCRAWL_SOURCES_DIR."))
    form = await small_form(request, EDITOR_FORM_BYTES) or FormData()
    existing = str(request.path_params.get("name", NEW))
    name = existing or str(form.get("name", "")).strip()
    text = str(form.get("text", "")).replace("\r\n", "\n")
    read = str(form.get("read", ""))
    action = str(form.get("action", "check"))
    page: dict[str, Any] = {"name": existing or name, "text": text, "read": read, "url": str(form.get("url", "")).strip()}
    refused = await _name_refused(ctx, request, folder, (name, bool(existing)), page)
    if refused is not None:
        return refused
    try:
        old = await in_thread(folder.read, existing) if existing else ""
    except SourceFileError as exc:
        return ctx.render(request, "forbidden.html", 404, reason=str(exc))
    guarded = guarded_change(old, text, ctx.config.local_seeds)  # before the loader: it imports what a source names
    if guarded:
        return editor(ctx, request, 400, **page, error=_("%(file)s: %(problem)s", file=name + ".toml", problem=guarded))
    try:
        checked = await in_thread(folder.check, name, text)
    except OSError as exc:
        return editor(
            ctx, request, 503, **page, error=_("The sources folder cannot be written: %(reason)s", reason=exc.strerror or exc)
        )
    if checked.source is None:
        return editor(ctx, request, 400, **page, error=checked.error)
    if action == "check":
        return editor(ctx, request, **page, output=_("The source is valid: the crawl would take it as it is."))
    if action in ("explain", "test"):
        return await _try(ctx, request, folder, name, text, action, page)
    found: Changes = await in_thread(changes, ctx.database if existing else None, name, old, text, checked.source)
    if action == "review":
        return editor(ctx, request, **page, changes=found, reviewed=file_version(text))
    if action != "save":
        return editor(ctx, request, 400, **page, error=_("Not an action of this page."))
    if str(form.get("reviewed", "")) != file_version(text):
        return editor(
            ctx,
            request,
            400,
            **page,
            changes=found,
            reviewed=file_version(text),
            error=_("Review the change before it is saved."),
        )
    return await _save(ctx, request, folder, (name, bool(existing)), found, page)


async def _name_refused(
    ctx: WebContext, request: Request, folder: SourceFolder, named: tuple[str, bool], page: dict[str, Any]
) -> Response | None:
    """The editor again, saying why, when the name is no source's name, or a new source's name is taken."""
    name, existing = named
    if not valid_name(name):
        return editor(
            ctx,
            request,
            400,
            **page,
            error=_("Give the source a name: letters, digits, '_', '-' and '.', first a letter or digit."),
        )
    if not existing and await in_thread(folder.exists, name):
        return editor(
            ctx, request, 400, **page, error=_("A source named %(name)s exists already: choose another name.", name=name)
        )
    return None


async def _save(
    ctx: WebContext, request: Request, folder: SourceFolder, named: tuple[str, bool], found: Changes, page: dict[str, Any]
) -> Response:
    """The reviewed text saved (the previous version kept in .history), audited, and said."""
    name, existing = named
    try:
        kept = await in_thread(folder.save, name, page["text"], page["read"] or None, datetime.now(UTC))
    except SourceFileError as exc:
        return editor(ctx, request, 409, **page, error=str(exc))
    with speaking(ENGLISH):  # the audit log's words are English, whatever the page's language
        detail = "; ".join([f"{len(found.diff)} diff lines", *found.warnings])
    await audited(ctx, request, "source:save" if existing else "source:create", name, detail[:2000])
    logger.info("Web administration: source %s saved (previous version: %s)", name, kept.name if kept else "none")
    ctx.sessions.flash(
        request.cookies.get(SESSION_COOKIE),
        _("%(name)s saved. The previous version is %(file)s in .history.", name=name, file=kept.name)
        if kept
        else _("%(name)s saved.", name=name),
    )
    return RedirectResponse(ctx.url(f"/admin/source-files/{name}"), status_code=303)


async def _try(
    ctx: WebContext, request: Request, folder: SourceFolder, name: str, text: str, action: str, page: dict[str, Any]
) -> Response:
    """`scrapy explain` of a URL against the edited text (unsaved), in a scratch sources folder; or
    a test crawl of it, started in the background."""
    if action == "test":
        return _start_test_crawl(ctx, request, folder, name, text, page)
    url = page["url"]
    if not admin.explainable(url):
        return editor(ctx, request, 400, **page, error=_("Give an absolute URL (http://, https://, ftp:// or file:) to explain."))
    environ = dict(ctx.config.explain_environ or {})

    def run() -> tuple[bool, str]:
        with scratch_sources(folder.path, name, text) as scratch:
            return admin.explain(ctx.config.project_dir, name, url, {**environ, "SEARCHCRAWL_SOURCES_DIR": str(scratch)})

    ok, output = await in_limited_thread(ctx.source_trials, run)  # a few at once: each may take minutes
    logger.info("Web administration: explain of the edited source %s", name)
    return editor(ctx, request, 200 if ok else 400, **page, output=output, output_ok=ok, ran="explain")


def _start_test_crawl(
    ctx: WebContext, request: Request, folder: SourceFolder, name: str, text: str, page: dict[str, Any]
) -> Response:
    """A test crawl of the edited text (unsaved) started in the background; its page follows it."""
    environ = dict(ctx.config.explain_environ or {})

    def work(phase: Callable[[str], None]) -> tuple[bool, str]:
        with scratch_sources(folder.path, name, text) as scratch:
            return test_crawl(ctx.config.project_dir, environ, scratch, name, phase=phase)

    try:
        ctx.test_crawls.start(str(request.cookies.get(SESSION_COOKIE)), page, work)
    except TestCrawlRefused as exc:
        return editor(ctx, request, exc.status, **page, error=str(exc))
    logger.info("Web administration: test crawl of the edited source %s started", name)
    return RedirectResponse(ctx.url("/admin/test-crawl"), status_code=303)


async def test_crawl_page(ctx: WebContext, request: Request) -> Response:
    """The session's test crawl: the editor it was started from, with what it is doing (the page
    refreshed every TEST_REFRESH seconds), then its report."""
    denied = await admin_gate(ctx, request, permission=Permission.ADMINISTER)
    if denied is not None:
        return denied
    crawl = ctx.test_crawls.of(str(request.cookies.get(SESSION_COOKIE)))
    if crawl is None:
        return ctx.render(request, "forbidden.html", 404, reason=_("No test crawl: start one from a source's editor."))
    if crawl.result is None:
        return editor(ctx, request, **crawl.page, running=crawl, refresh=TEST_REFRESH, test_pages=TEST_PAGES)
    ok, output = crawl.result
    return editor(ctx, request, 200 if ok else 400, **crawl.page, output=output, output_ok=ok, ran="test", took=crawl.seconds())


async def source_file_action(ctx: WebContext, request: Request) -> Response:
    """Copy, disable, enable or delete a source file (``action`` in the path)."""
    denied = await admin_gate(ctx, request, permission=Permission.ADMINISTER, post=True)
    if denied is not None:
        return denied
    folder = folder_of(ctx)
    name, action = str(request.path_params["name"]), str(request.path_params["action"])
    form = await small_form(request) or FormData()
    if folder is None or action not in ("copy", "disable", "enable", "delete"):
        return ctx.render(request, "forbidden.html", 404, reason=_("No such source file or action."))
    new_name = str(form.get("new_name", "")).strip()
    try:
        if action == "copy":
            if not valid_name(new_name):
                raise SourceFileError(_("give the copy a source name: letters, digits, '_', '-' and '.'"))
            await in_thread(folder.copy, name, new_name)
            message = _(
                "%(name)s copied to %(copy)s: edit it now (two sources with the same seeds crawl the same site twice).",
                name=name,
                copy=new_name,
            )
        elif action == "delete":
            kept = await in_thread(folder.delete, name, datetime.now(UTC))
            message = _(
                "%(name)s deleted (its file is %(file)s in .history; its documents stay in the index until removed).",
                name=name,
                file=kept.name,
            )
        else:
            await in_thread(folder.enable, name, action == "enable")
            message = (
                _("%(name)s enabled.", name=name)
                if action == "enable"
                else _("%(name)s disabled. It is not crawled nor scheduled; its documents stay.", name=name)
            )
    except SourceFileError as exc:
        return ctx.render(request, "forbidden.html", 409, reason=str(exc))
    await audited(ctx, request, f"source:{action}", name, new_name)
    logger.info("Web administration: source %s: %s", name, action)
    ctx.sessions.flash(request.cookies.get(SESSION_COOKIE), message)
    target = f"/admin/source-files/{new_name}" if action == "copy" else "/admin/source-files"
    return RedirectResponse(ctx.url(target), status_code=303)
