"""The Ledger's decisions beyond one URL's transition (rules/ledger_rules.py), as plain functions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from searchcrawl.rules.ledger_rules import (
    frees_copies,
    has_left,
    holder_to_recall,
    linkless,
    moved_on,
    plan_step,
    redirect_now,
    stale_target_step,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_an_original_has_left_only_when_it_left_in_this_run() -> None:
    assert has_left("removing", 7, 7) and has_left("removed", 7, 7)
    assert not has_left("removed", 6, 7)  # left in an earlier run: a canonical copy coming back
    assert not has_left("indexed", 7, 7) and not has_left(None, None, 7)


def test_an_original_moved_on_when_it_left_in_this_run_or_holds_another_content() -> None:
    assert moved_on("removing", 7, "x", 7, "x")  # left (has_left)
    assert moved_on("pending", 7, "y", 7, "x")  # its content changed since the copy was compared
    assert not moved_on("indexed", 6, "x", 7, "x")  # it holds the copy's content
    assert not moved_on("removed", 6, "x", 7, "x")  # left in an earlier run: a canonical copy coming back
    assert not moved_on("indexed", 6, "y", 7, None)  # the copy's content is not known: left only
    assert not moved_on(None, None, None, 7, "x")  # no row


def test_a_holder_frees_its_copies_when_its_content_changes() -> None:
    assert frees_copies("x", "y")
    assert not frees_copies("x", "x")  # the same content again (a forced recrawl)
    assert not frees_copies(None, "y")  # its first fetch: it has no copies
    assert not frees_copies("x", None)


def copy(url: str, number: int, *, holds: bool, done: bool = True, canonical: str | None = None) -> dict:
    return {"id": number, "url": url, "canonical_url": canonical, "holds": holds, "done": done}


def test_the_holder_named_canonical_is_called_back_only_when_it_holds_nothing_and_was_fetched() -> None:
    a, b = "http://h/a", "http://h/b"
    named = [copy(a, 1, holds=False), copy(b, 2, holds=True, canonical=a)]
    assert holder_to_recall(named)["url"] == a
    assert holder_to_recall([copy(a, 1, holds=False, done=False), named[1]]) is None  # fetched later in the run anyway
    assert holder_to_recall([copy(a, 1, holds=True), named[1]]) is None  # it holds the content
    assert holder_to_recall([copy(a, 1, holds=False), copy(b, 2, holds=True)]) is None  # first found, but named by none
    assert holder_to_recall([copy(a, 1, holds=False), copy(b, 2, holds=False, canonical=a)]) is None  # nothing held
    assert holder_to_recall([]) is None


def test_the_plan_excludes_queues_or_leaves_a_known_url() -> None:
    step = {"through_redirect": False, "last_fetched": NOW, "recheck_since": None}
    assert plan_step("indexed", 200, (901, "off-site"), **step) == "exclude"
    assert plan_step("excluded", 901, (901, "off-site"), **step) == "leave"  # out for that rule already
    assert plan_step("excluded", 901, (905, "robots"), **step) == "exclude"  # another rule now: said so
    assert plan_step("indexed", 200, (901, "off-site"), **{**step, "through_redirect": True}) == "leave"
    assert plan_step("indexed", 200, None, **step) == "queue"
    assert plan_step("excluded", 901, None, **step) == "queue"  # admitted now
    spaced = {**step, "recheck_since": NOW - timedelta(days=7)}
    assert plan_step("removed", 404, None, **spaced) == "leave"  # fetched within the spacing
    assert plan_step("removed", 404, None, **{**spaced, "last_fetched": NOW - timedelta(days=8)}) == "queue"
    assert plan_step("removed", 302, None, **spaced) == "queue"  # a temporary redirect: its target is fetched through it
    assert linkless(404) and linkless(301) and not linkless(302) and not linkless(None) and not linkless(200)


def test_a_stale_redirect_target_stays_while_a_redirect_to_it_stands_or_is_unknown() -> None:
    target = "http://elsewhere/t"
    standing = {"status": 302, "target": target, "state": "fetched"}
    assert redirect_now(standing, target, done_in_run=True) == "stands"
    moved = {"status": 200, "target": None, "state": "indexed"}
    assert redirect_now(moved, target, done_in_run=False) == "unknown"
    assert redirect_now(moved, target, done_in_run=True) == "gone"
    assert redirect_now({"status": 503, "target": target, "state": "failed"}, target, done_in_run=True) == "failing"
    assert stale_target_step([], "indexed") == "keep"
    assert stale_target_step(["gone", "stands"], "indexed") == "keep"
    assert stale_target_step(["gone", "unknown"], "indexed") == "keep"
    assert stale_target_step(["gone", "failing"], "indexed") == "fail"
    assert stale_target_step(["failing"], "fetched") == "exclude"  # not in the index: nothing to keep through it
    assert stale_target_step(["gone"], "indexed") == "exclude"
