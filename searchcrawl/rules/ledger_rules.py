"""The Ledger's decisions beyond one URL's transition (``lifecycle.decide``), as plain functions
over what the store read: whether an original left the index or changed, which copy of a
content is called back to hold it, what a maintenance crawl's plan does with a known URL, and
whether a redirect target outside the boundary still has a redirect that stands. The Ledger
(store/ledger.py) reads the rows, asks these, and applies the answer; they know no SQL."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from searchcrawl.rules.lifecycle import IN_INDEX, OUT_OF_INDEX, State
from searchcrawl.rules.maintenance import holder_of, named_canonical
from searchcrawl.rules.redirect_policy import TEMPORARY as TEMPORARY_REDIRECTS
from searchcrawl.rules.status_codes import Status

LEFT_INDEX = frozenset({State.REMOVING, State.REMOVED})
RedirectNow = Literal["stands", "failing", "unknown", "gone"]


def has_left(state: str | None, delta_run: int | None, run_id: int | None) -> bool:
    """Whether a row (its ``state`` and ``delta_run``; None: no row) left the index in run
    ``run_id``: the original a duplicate is about to be marked against may be in the index or on
    its way in (a canonical copy coming back), but not gone since the pipeline compared them."""
    return state is not None and State(state) in LEFT_INDEX and delta_run == run_id


def moved_on(state: str | None, delta_run: int | None, checksum: str | None, run_id: int | None, content: str | None) -> bool:
    """Whether the original a copy is about to be marked a duplicate of holds the copy's
    ``content`` no more since the pipeline compared them: it left the index in run ``run_id``
    (``has_left``), or its own content changed (its row's ``checksum`` is another; ``content``
    None: the copy's is not known). Either way it freed its duplicates (``frees_copies``): the
    copy is fetched once more in the run, to hold its content, instead of being marked the
    duplicate of a content nobody holds until the next crawl. ``state`` None: no row."""
    return has_left(state, delta_run, run_id) or (state is not None and content is not None and checksum != content)


def frees_copies(before: str | None, after: str | None) -> bool:
    """Whether a URL frees the copies recorded as its duplicates though it stays in the index (one
    that leaves frees them whatever: ``Change.leaves_index``): its content changed (its row's
    checksum ``before``, its outcome's ``after``), so nobody holds theirs now. Those of the run
    are queued again in it (fetched before it too): one of them holds it in the same crawl. Not
    a first fetch (no ``before``), nor the same content again (a forced recrawl)."""
    return before is not None and after is not None and before != after


def holder_to_recall(copies: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """Of a content's copies (each ``url``, ``canonical_url``, ``id``, ``holds``: in the index,
    ``done``: fetched in this run already), after one was recorded out of the index: the group's
    rightful holder (``holder_of``) to fetch again, when another copy holds the content, it holds
    nothing, was fetched in this run already, and another copy names it canonical (its rank is
    what a copy's outcome changes); else None."""
    if not copies or not any(copy["holds"] for copy in copies):
        return None
    holder = holder_of(copies)
    if holder["holds"] or not holder["done"] or holder["url"] not in named_canonical(copies):
        return None
    return holder


def linkless(status: int | None) -> bool:
    """An answer without a page or links that ``recheck_gone_days`` may space out: gone, moved
    for good, refused, a host that does not resolve. Not a temporary redirect (its target is
    fetched through it) nor a page kept out of the index whose links are followed (noindex)."""
    return status is not None and (status in (301, 308, Status.DNS_FAILURE) or 400 <= status < 500)


PlanStep = Literal["exclude", "leave", "queue"]


def plan_step(
    state: str,
    status: int | None,
    verdict: tuple[int, str] | None,
    *,
    through_redirect: bool,
    last_fetched: datetime | None,
    recheck_since: datetime | None,
) -> PlanStep:
    """What a maintenance crawl's plan does with a known URL (``verdict``: the source's rules on
    it now, (status, rule) when they keep it out):

    - ``exclude``: the rules exclude it now (it leaves the index if it was in); not a temporary
      redirect's target outside the boundary (``through_redirect``: fetched through its redirect,
      it stays while the redirect stands), nor one out of the index for that same rule already;
    - ``leave``: excluded as above, or out of the index (or never in it: 404, moved ...) with
      an answer without links and last fetched at or after ``recheck_since`` (None: rechecked
      in every maintenance crawl);
    - ``queue``: every other known URL, linked or not (a page whose linking page answers 304 is
      still checked), and one a rule excluded that the rules admit now."""
    if verdict is not None:
        out_of_index = State(state) in OUT_OF_INDEX
        return "leave" if through_redirect or (out_of_index and status == verdict[0]) else "exclude"
    if recheck_since is not None and state in (State.REMOVED, State.FETCHED) and linkless(status):
        if last_fetched is not None and last_fetched >= recheck_since:
            return "leave"
    return "queue"


def redirect_now(origin: Mapping[str, Any], target: str, *, done_in_run: bool) -> RedirectNow:
    """Whether ``origin`` (a row: ``status``, ``target``, ``state``) redirects to ``target`` as of
    this run: ``stands`` (its last answer was that temporary redirect), ``unknown`` (not fetched
    in this run: ``done_in_run`` false), ``failing`` (fetched in this run, failed transiently), or
    ``gone``."""
    status = origin["status"] or 0
    if origin["target"] == target and status in TEMPORARY_REDIRECTS:
        return "stands"
    if not done_in_run:
        return "unknown"
    if origin["state"] == State.FAILED or 500 <= status < 600 or status == 429:
        return "failing"
    return "gone"


StaleStep = Literal["keep", "fail", "exclude"]


def stale_target_step(verdicts: Sequence[RedirectNow], state: str) -> StaleStep:
    """What the end of a complete run does with a temporary redirect's target outside the
    boundary (in ``state``), given what each URL that led to it does now (``redirect_now``):

    - ``keep``: no URL of the source is known to redirect to it, or one still does, or was not
      fetched in this run;
    - ``fail``: one failed transiently and the target is in the index: a failing crawl of its own
      (it leaves after ``max_failures`` of them);
    - ``exclude``: every one redirects there no more; it is excluded by the boundary (a target not
      in the index too, failing origin or not: it has no document to keep through a failure)."""
    if not verdicts or "stands" in verdicts or "unknown" in verdicts:
        return "keep"
    if "failing" in verdicts and State(state) in IN_INDEX:
        return "fail"
    return "exclude"
