"""The relevance views of the administration: the rules (best bets, boosts, synonyms, stopwords:
relevance.py, store/relevance_rules.py) with their forms, and why a document is a hit (why.py).
Synonyms and stopwords are pushed to Solr when they change and when the application starts."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from searchcrawl.index.indexer import IndexingError
from searchcrawl.rules import relevance
from searchcrawl.search import why
from searchcrawl.search.searcher import TrimmedIndex
from searchcrawl.store.relevance_rules import RelevanceStore
from searchcrawl.web.context import WebContext
from searchcrawl.web.shared import SESSION_COOKIE, admin_gate, flash, in_thread, small_form, who_searches

logger = logging.getLogger(__name__)


async def why_page(ctx: WebContext, request: Request) -> Response:
    """Why a document is a hit of a query (why.py): its rank, score and Solr's explanation in
    words, computed under the viewer's own trimming (their searcher principals on this
    request, else a visitor's), so a document they may not read is answered as a missing one."""
    denied = await admin_gate(ctx, request)
    if denied is not None:
        return denied
    query = request.query_params.get("q", "")
    target = request.query_params.get("id", "")
    viewer = await who_searches(ctx, request)
    try:
        rules = await in_thread(ctx.relevance.get)
        page = await in_thread(why.why, TrimmedIndex(ctx.solr, viewer.principals), query, target, rules.boosts)
    except IndexingError as exc:
        logger.warning("Web administration: why %r failed: %s", query[:100], exc.reason)
        page = why.WhyPage(query=query.strip()[: why.MAX_QUERY_CHARS], target=target.strip()[: why.MAX_TARGET_CHARS])
        page.message = "The index cannot be searched now."
    return ctx.render(request, "why.html", page=page, viewer=viewer, rank_limit=why.RANK_LIMIT)


async def relevance_page(
    ctx: WebContext, request: Request, error: str = "", code: int = 200, posted: dict[str, str] | None = None
) -> Response:
    """The relevance rules (relevance.py) with forms to add, edit and delete them: ``?edit=bets``
    (or ``boosts``) ``&key=ID`` fills a rule's form with it, to be saved in place; a form
    refused (``error``) comes back filled with what was ``posted``."""
    denied = await admin_gate(ctx, request)
    if denied is not None:
        return denied

    def gather() -> dict[str, Any]:
        store = RelevanceStore(ctx.database)
        return {"bets": store.bets(), "boosts": store.boosts(), "synonyms": store.synonyms(), "stopwords": store.stopwords()}

    rules = await in_thread(gather)
    forms = relevance.rule_forms(posted or {})
    if posted is None and request.query_params.get("edit"):
        edit, key = request.query_params.get("edit", ""), request.query_params.get("key", "")
        found = {("bets", str(bet.id)): bet for bet in rules["bets"]} | {("boosts", str(b.id)): b for b in rules["boosts"]}
        rule = found.get((edit, key))
        if rule is None:
            error, code = "No such rule (deleted already?).", 404
        else:
            forms = relevance.rule_forms(relevance.edit_form(rule))
    return ctx.render(
        request,
        "relevance.html",
        code,
        **rules,
        **forms,
        now=datetime.now(UTC),
        kinds=relevance.BOOST_KINDS,
        ttl=ctx.config.relevance_ttl,
        error=error,
        flash=flash(ctx, request),
    )


async def relevance_change(ctx: WebContext, request: Request) -> Response:
    """Add, edit (in place: same rule) or delete a rule (validated by relevance.py); synonyms
    and stopwords are then pushed to Solr, which applies them at once."""
    denied = await admin_gate(ctx, request, post=True)
    if denied is not None:
        return denied
    form = await small_form(request) or FormData()
    action = str(form.get("action", ""))

    def text(name: str) -> str:
        return str(form.get(name, ""))

    def change() -> str:
        store = RelevanceStore(ctx.database)
        solr_side = False
        key = text("key")[:200]
        if action in ("add-bet", "edit-bet", "add-boost", "edit-boost"):
            message = _save_rule(store, action, key, text)
        elif action == "add-synonyms":
            store.add_synonyms(relevance.parse_synonyms(text("terms")))
            message, solr_side = "Synonyms added.", True
        elif action == "add-stopword":
            store.add_stopword(relevance.parse_stopword(text("word")))
            message, solr_side = "Stopword added.", True
        elif action == "delete":
            kind = text("kind")
            if not store.delete(kind, key):
                raise relevance.RelevanceError("No such rule (deleted already?).")
            message, solr_side = "Deleted.", kind in ("synonyms", "stopwords")
        elif action == "push":
            message, solr_side = "Synonyms and stopwords checked.", True
        else:
            raise relevance.RelevanceError("Not an action of this page.")
        ctx.relevance.changed()
        if solr_side:
            try:
                changed = ctx.sync_relevance()
            except IndexingError as exc:
                logger.warning("Web administration: synonyms and stopwords not sent to Solr: %s", exc.reason)
                return f"{message} Solr did not take them now ({exc.reason}): send them again later."
            if action == "push":
                message = "Solr was sent the synonyms and stopwords and reloaded." if changed else "Solr holds them already."
        return message

    try:
        message = await in_thread(change)
    except relevance.RelevanceError as exc:
        posted = {name: str(value) for name, value in form.items() if name != "csrf"}
        return await relevance_page(ctx, request, error=str(exc), code=400, posted=posted)
    logger.info("Web administration: relevance %s: %s", action, message)
    ctx.sessions.flash(request.cookies.get(SESSION_COOKIE), message)
    return RedirectResponse(ctx.url("/admin/relevance"), status_code=303)


def _save_rule(store: RelevanceStore, action: str, key: str, text: Callable[[str], str]) -> str:
    """Add a best bet or a boost (``add-bet``, ``add-boost``) or change rule ``key`` in place
    (``edit-bet``, ``edit-boost``: the same rule, never deleted and added again), from the
    relevance page's form ``text``, validated alike; the message for the administrator."""
    if action.endswith("-bet"):
        bet = relevance.parse_bet(text("queries"), text("urls"), text("start"), text("end"))
        if action == "add-bet":
            store.add_bet(bet)
            return "Best bet added."
        saved, noun = store.update_bet(key, bet), "Best bet"
    else:
        boost = relevance.parse_boost(text("kind"), text("value"), text("factor"))
        if action == "add-boost":
            store.add_boost(boost)
            return "Rule added."
        saved, noun = store.update_boost(key, boost), "Rule"
    if not saved:
        raise relevance.RelevanceError("No such rule (deleted already?).")
    return f"{noun} {key} saved."


def sync_at_start(ctx: WebContext) -> None:
    """Synonyms and stopwords sent to Solr again (it may have lost them: a new configset, a dev
    Solr restarted); a failure is said and left to the relevance page."""
    try:
        if ctx.sync_relevance():
            logger.info("Synonyms and stopwords sent to Solr again")
    except Exception as exc:  # noqa: BLE001 - Solr or the database down: the relevance page sends them later
        logger.warning("Synonyms and stopwords not sent to Solr at start: %s", getattr(exc, "reason", "") or type(exc).__name__)
