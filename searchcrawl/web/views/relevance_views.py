"""The relevance views of the administration: the rules (best bets, boosts, synonyms, stopwords:
ranking_rules.py, store/relevance_rules.py) with their forms, why a document is a hit (why.py), and
the search's quality measured on judged query sets (search/evaluation.py, as `scrapy relevance`).
Synonyms and stopwords are pushed to Solr when they change and when the application starts."""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from babel.numbers import format_decimal
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from searchcrawl.index.solr_client import IndexingError
from searchcrawl.rules import ranking_rules
from searchcrawl.rules.ranking_rules import DATE_ONLY
from searchcrawl.search import evaluation, why
from searchcrawl.search.query import RANKINGS
from searchcrawl.search.results import judged_run
from searchcrawl.search.trimmed_index import TrimmedIndex, log_failed_search
from searchcrawl.store.relevance_rules import RelevanceStore
from searchcrawl.system import translations
from searchcrawl.system.translations import N_, number
from searchcrawl.system.translations import gettext as _
from searchcrawl.web.context import WebContext
from searchcrawl.web.roles import Permission
from searchcrawl.web.shared import admin_gate, audited, flash, in_thread, small_form, who_searches
from searchcrawl.web.sign_on.sessions import SESSION_COOKIE

logger = logging.getLogger(__name__)
# what the relevance page says to its administrator after a change: messages (marked N_, each with its
# variables), in English in the log and in the administrator's language in the page's flash
Said = list[tuple[str, dict[str, Any]]]
SCORE_DIGITS = "@@@@"  # a score's significant digits (CLDR's pattern of them), as "%.4g" had them
FACTOR_DIGITS = "#,##0.####"  # a rule's factor, as parse_factor rounds it


async def why_page(ctx: WebContext, request: Request) -> Response:
    """Why a document is a hit of a query (why.py): its rank, score and Solr's explanation in
    words, computed under the viewer's own trimming (their searcher principals on this
    request, else a visitor's), so a document they may not read is answered as a missing one."""
    denied = await admin_gate(ctx, request, permission=Permission.RELEVANCE)
    if denied is not None:
        return denied
    query = request.query_params.get("q", "")
    target = request.query_params.get("id", "")
    viewer = await who_searches(ctx, request)
    try:
        rules = await in_thread(ctx.relevance.get)
        page = await in_thread(why.why, viewer.index, query, target, rules.boosts)
    except IndexingError as exc:
        log_failed_search("Web administration: why", query, exc)
        page = why.WhyPage(query=query.strip()[: why.MAX_QUERY_CHARS], target=target.strip()[: why.MAX_TARGET_CHARS])
        page.message = N_("The index cannot be searched now.")
    if page.message:  # why.py's fixed sentences, in the page's language where the catalogue has them
        page.message = translations.translated(page.message)
    return ctx.render(request, "why.html", page=page, viewer=viewer, rank_limit=why.RANK_LIMIT, score=score_text(page.score))


def score_text(score: float | None) -> str:
    """A score as the page's language writes numbers, four significant digits ("" when unknown)."""
    if score is None:
        return ""
    return format_decimal(score, format=SCORE_DIGITS, locale=translations.current().locale)


def factor_text(factor: float) -> str:
    """A boost's factor as the page's language writes numbers (all four decimals it may have)."""
    return format_decimal(factor, format=FACTOR_DIGITS, locale=translations.current().locale)


def bet_when(bet: ranking_rules.BestBet) -> dict[str, Any]:
    """When a best bet is shown, in the page's language (UTC): its start and end, a date alone where
    the form takes one (``start_text``, ``end_text``: an end date is shown ``through`` that day)."""

    def shown(moment: datetime | None, typed: str) -> str:
        if moment is None:
            return ""
        if DATE_ONLY.fullmatch(typed):
            return translations.day(date.fromisoformat(typed))
        moment = moment.astimezone(UTC)
        return translations.moment(moment, seconds=bool(moment.second))

    through = bool(DATE_ONLY.fullmatch(bet.end_text))
    return {"start": shown(bet.start, bet.start_text), "end": shown(bet.end, bet.end_text), "through": through}


async def relevance_page(
    ctx: WebContext, request: Request, error: str = "", code: int = 200, posted: dict[str, str] | None = None
) -> Response:
    """The relevance rules (ranking_rules.py) with forms to add, edit and delete them: ``?edit=bets``
    (or ``boosts``) ``&key=ID`` fills a rule's form with it, to be saved in place; a form
    refused (``error``) comes back filled with what was ``posted``."""
    denied = await admin_gate(ctx, request, permission=Permission.RELEVANCE)
    if denied is not None:
        return denied

    def gather() -> dict[str, Any]:
        store = RelevanceStore(ctx.database)
        return {"bets": store.bets(), "boosts": store.boosts(), "synonyms": store.synonyms(), "stopwords": store.stopwords()}

    rules = await in_thread(gather)
    forms = ranking_rules.rule_forms(posted or {})
    if posted is None and request.query_params.get("edit"):
        edit, key = request.query_params.get("edit", ""), request.query_params.get("key", "")
        found = {("bets", str(bet.id)): bet for bet in rules["bets"]} | {("boosts", str(b.id)): b for b in rules["boosts"]}
        rule = found.get((edit, key))
        if rule is None:
            error, code = _("No such rule (deleted already?)."), 404
        else:
            forms = ranking_rules.rule_forms(ranking_rules.edit_form(rule))
    return ctx.render(
        request,
        "relevance.html",
        code,
        **rules,
        **forms,
        now=datetime.now(UTC),
        kinds=ranking_rules.BOOST_KINDS,
        when=bet_when,
        factor=factor_text,
        ttl=ctx.config.relevance_ttl,
        error=error,
        flash=flash(ctx, request),
    )


async def relevance_change(ctx: WebContext, request: Request) -> Response:
    """Add, edit (in place: same rule) or delete a rule (validated by ranking_rules.py); synonyms
    and stopwords are then pushed to Solr, which applies them at once."""
    denied = await admin_gate(ctx, request, permission=Permission.RELEVANCE, post=True)
    if denied is not None:
        return denied
    form = await small_form(request) or FormData()
    action = str(form.get("action", ""))

    def text(name: str) -> str:
        return str(form.get(name, ""))

    def change() -> Said:
        store = RelevanceStore(ctx.database)
        solr_side = False
        key = text("key")[:200]
        if action in ("add-bet", "edit-bet", "add-boost", "edit-boost"):
            said = _save_rule(store, action, key, text)
        elif action == "add-synonyms":
            store.add_synonyms(ranking_rules.parse_synonyms(text("terms")))
            said, solr_side = [(N_("Synonyms added."), {})], True
        elif action == "add-stopword":
            store.add_stopword(ranking_rules.parse_stopword(text("word")))
            said, solr_side = [(N_("Stopword added."), {})], True
        elif action == "delete":
            kind = text("kind")
            if not store.delete(kind, key):
                raise ranking_rules.RelevanceError(_("No such rule (deleted already?)."))
            said, solr_side = [(N_("Deleted."), {})], kind in ("synonyms", "stopwords")
        elif action == "push":
            said, solr_side = [(N_("Synonyms and stopwords checked."), {})], True
        else:
            raise ranking_rules.RelevanceError(_("Not an action of this page."))
        ctx.relevance.changed()
        if solr_side:
            try:
                changed = ctx.sync_relevance()
            except IndexingError as exc:
                logger.warning("Web administration: synonyms and stopwords not sent to Solr: %s", exc.reason)
                return [*said, (N_("Solr did not take them now (%(reason)s): send them again later."), {"reason": exc.reason})]
            if action == "push":
                pushed = N_("Solr was sent the synonyms and stopwords and reloaded.")
                said = [(pushed if changed else N_("Solr holds them already."), {})]
        return said

    try:
        said = await in_thread(change)
    except ranking_rules.RelevanceError as exc:
        posted = {name: str(value) for name, value in form.items() if name != "csrf"}
        return await relevance_page(ctx, request, error=str(exc), code=400, posted=posted)
    logger.info("Web administration: relevance %s: %s", action, " ".join(message % values for message, values in said))
    what = " ".join(f"{name}={str(value)[:300]!r}" for name, value in form.items() if name not in ("csrf", "action"))
    await audited(ctx, request, f"relevance:{action}", text("kind") or action.split("-")[-1], what)
    ctx.sessions.flash(request.cookies.get(SESSION_COOKIE), " ".join(_(message, **values) for message, values in said))
    return RedirectResponse(ctx.url("/admin/relevance"), status_code=303)


JUDGED_SET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
MAX_JUDGED_BYTES = 4 * 2**20  # of a judged set's file
MAX_JUDGED_QUERIES = 500  # each a search (two with another ranking): a larger set is for `scrapy relevance`
# the measure page's groups named by search/evaluation.py (the rest are the judged set's kinds, the sources)
KIND_NAMES = {evaluation.ALL_KINDS: N_("all"), "(none)": N_("(none)")}
SOURCE_NAMES = {evaluation.NO_SOURCE: N_("(no judged page found)")}
MEASURING = threading.Lock()  # one measure at a time: the searches share Solr and the threads with the search page


def judged_sets(folder: Path | None) -> list[str]:
    """The judged sets in ``folder`` (SEARCHCRAWL_JUDGED_DIR): its subfolders with both
    queries.tsv and qrels.txt, by name. Only these names are ever opened."""
    if folder is None or not folder.is_dir():
        return []
    return sorted(
        entry.name
        for entry in folder.iterdir()
        if JUDGED_SET_NAME.fullmatch(entry.name)
        and not entry.is_symlink()
        and all((entry / name).is_file() and not (entry / name).is_symlink() for name in ("queries.tsv", "qrels.txt"))
    )


def _judged_text(path: Path) -> str:
    """A judged set's file, never through a link (a set is what its folder holds), bounded."""
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as stream:
        data = stream.read(MAX_JUDGED_BYTES + 1)
    if len(data) > MAX_JUDGED_BYTES:
        raise evaluation.JudgmentError(_("%(name)s is over %(size)s MiB", name=path.name, size=number(MAX_JUDGED_BYTES >> 20)))
    return data.decode("utf-8-sig", "replace")


@dataclass
class Measured:
    """A judged set measured: the figures per kind and per source, each query's, and another
    ranking's beside them (``compared``)."""

    scores: list[evaluation.QueryScore]
    per_kind: dict[str, list[evaluation.QueryScore]]
    per_source: dict[str, list[evaluation.QueryScore]]
    compared: list[evaluation.Comparison] = field(default_factory=list)
    unjudged: int = 0


@dataclass(frozen=True)
class MeasureForm:
    """What the measure page is asked (its query string): the judged set ("" none yet), the source
    ("all" of them), the ranking measured and the one beside it ("" none); a ranking not known is
    the page's (for ``ranking``) or none (for ``against``)."""

    chosen: str
    source: str
    ranking: str
    against: str

    @classmethod
    def of(cls, params: Mapping[str, str]) -> MeasureForm:
        ranking, against = params.get("ranking", "page"), params.get("against", "")
        return cls(
            chosen=params.get("set", ""),
            source=params.get("source", "") or "all",
            ranking=ranking if ranking in RANKINGS else "page",
            against=against if against in RANKINGS else "",
        )


def _measure(ctx: WebContext, index: TrimmedIndex, form: MeasureForm) -> Measured:
    """The judged set ``form.chosen`` searched under ``index`` (the viewer's trimming) as the search
    page searches, scored per query, kind and source, and the ``against`` ranking beside it."""
    folder = ctx.config.judged_dir
    assert folder is not None  # a set was found in it
    queries = evaluation.read_queries(_judged_text(folder / form.chosen / "queries.tsv"), "queries.tsv")
    judgments = evaluation.read_qrels(_judged_text(folder / form.chosen / "qrels.txt"), "qrels.txt")
    if len(queries) > MAX_JUDGED_QUERIES:
        raise evaluation.JudgmentError(
            _("over %(most)s queries: measure it with `scrapy relevance`", most=number(MAX_JUDGED_QUERIES))
        )
    rules = ctx.relevance.get()
    wanted = None if form.source == "all" else form.source
    ranked, hit_sources = judged_run(index, queries, wanted, rules, form.ranking, ctx.semantic, ctx.config.coordination)
    scores = evaluation.score_run(queries, judgments, ranked)
    found = Measured(
        scores,
        evaluation.by_kind(scores),
        evaluation.by_source(scores, judgments, hit_sources),
        unjudged=len(queries) - len(scores),
    )
    if form.against:
        other = evaluation.score_run(
            queries, judgments, judged_run(index, queries, wanted, rules, form.against, ctx.semantic, ctx.config.coordination)[0]
        )
        found.compared = evaluation.compare(other, scores)
    return found


def _measure_alone(ctx: WebContext, index: TrimmedIndex, form: MeasureForm) -> Measured | None:
    """``_measure``, one at a time in the application (``MEASURING``): None while another runs."""
    if not MEASURING.acquire(blocking=False):
        return None
    try:
        return _measure(ctx, index, form)
    finally:
        MEASURING.release()


async def _measured(ctx: WebContext, index: TrimmedIndex, form: MeasureForm) -> tuple[Measured | None, str, int]:
    """The judged set measured (in a thread), or why not: the page's error and its status code."""
    try:
        measured = await in_thread(_measure_alone, ctx, index, form)
    except evaluation.JudgmentError as exc:
        return None, str(exc), 400
    except IndexingError as exc:
        logger.warning("Web administration: judged set %s not measured: %s", form.chosen, exc.reason)
        return None, _("The index cannot be searched now."), 503
    if measured is None:
        return None, _("Another measure is running: try again when it is done."), 429
    return measured, "", 200


async def measure_page(ctx: WebContext, request: Request) -> Response:
    """Search quality on a judged set, as `scrapy relevance` measures it (search/evaluation.py):
    its queries searched as the search page searches them (``judged_run``: best bets, boosts),
    under the viewer's own trimming (their searcher principals on this request, else a
    visitor's), and another ranking beside it with the paired test. A GET: it changes nothing."""
    denied = await admin_gate(ctx, request, permission=Permission.RELEVANCE)
    if denied is not None:
        return denied
    sets = await in_thread(judged_sets, ctx.config.judged_dir)
    form = MeasureForm.of(request.query_params)
    viewer = await who_searches(ctx, request)
    measured, error, code = None, "", 200
    if form.chosen and form.chosen not in sets:
        error, code = _("No such judged set."), 404
    elif form.chosen:
        measured, error, code = await _measured(ctx, viewer.index, form)
    return ctx.render(
        request,
        "measure.html",
        code,
        sets=sets,
        folder=ctx.config.judged_dir,
        sources=["all", *ctx.config.source_names()],
        rankings=RANKINGS,
        chosen=form.chosen,
        source=form.source,
        ranking=form.ranking,
        against=form.against,
        metrics=evaluation.METRICS,
        measured=measured,
        means=evaluation.means,
        kind_names=KIND_NAMES,
        source_names=SOURCE_NAMES,
        viewer=viewer,
        error=error,
    )


def _save_rule(store: RelevanceStore, action: str, key: str, text: Callable[[str], str]) -> Said:
    """Add a best bet or a boost (``add-bet``, ``add-boost``) or change rule ``key`` in place
    (``edit-bet``, ``edit-boost``: the same rule, never deleted and added again), from the
    relevance page's form ``text``, validated alike; the message for the administrator."""
    if action.endswith("-bet"):
        bet = ranking_rules.parse_bet(text("queries"), text("urls"), text("start"), text("end"))
        if action == "add-bet":
            store.add_bet(bet)
            return [(N_("Best bet added."), {})]
        saved, message = store.update_bet(key, bet), N_("Best bet %(key)s saved.")
    else:
        boost = ranking_rules.parse_boost(text("kind"), text("value"), text("factor"))
        if action == "add-boost":
            store.add_boost(boost)
            return [(N_("Rule added."), {})]
        saved, message = store.update_boost(key, boost), N_("Rule %(key)s saved.")
    if not saved:
        raise ranking_rules.RelevanceError(_("No such rule (deleted already?)."))
    return [(message, {"key": key})]


def sync_at_start(ctx: WebContext) -> None:
    """Synonyms and stopwords sent to Solr again (it may have lost them: a new configset, a dev
    Solr restarted); a failure is said and left to the relevance page."""
    try:
        if ctx.sync_relevance():
            logger.info("Synonyms and stopwords sent to Solr again")
    except Exception as exc:  # noqa: BLE001 - Solr or the database down: the relevance page sends them later
        logger.warning("Synonyms and stopwords not sent to Solr at start: %s", getattr(exc, "reason", "") or type(exc).__name__)
