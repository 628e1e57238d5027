"""How a run's counters read on the administration pages and in `scrapy status`: counts, never a
Python dict (searchcrawl/store/runs.py, searchcrawl/web/admin.py); and how many documents match."""

from __future__ import annotations

import json
from pathlib import Path

from searchcrawl.rules.lifecycle import DELTA_LABELS, STATE_LABELS, Delta, State, delta_label, state_label
from searchcrawl.rules.notify_events import EVENT_LABELS, EventKind, event_label
from searchcrawl.search.query import matching
from searchcrawl.store import Database
from searchcrawl.store.models import RUN_MODE_LABELS, RUN_STATE_LABELS, FrontierState, RunState, run_mode_label, run_state_label
from searchcrawl.store.notifications import FAILED, NOTIFICATION_STATE_LABELS, SENDING, SENT, notification_state_label
from searchcrawl.store.runs import COUNTER_LABELS, Runs, control_text, counter_label, counter_text, shown_counters
from searchcrawl.system.secrets import remember
from searchcrawl.system.translations import speaking
from searchcrawl.web.admin import RUN_COUNTS, counter_shown, run_counts, run_view, shown_rows, shown_run

ENDED = {"pages": 30, "indexed": 28, "removed": 1, "excluded": 2, "done": 30, "delta": {"changed": 1, "new": 27, "unchanged": 0}}


def test_a_nested_count_reads_as_words() -> None:
    assert counter_text(ENDED["delta"]) == "changed 1, new 27, unchanged 0"
    assert counter_text({}) == "none" and counter_text(7) == "7"
    shown = dict(shown_counters(ENDED))
    assert shown["delta"] == "changed 1, new 27, unchanged 0" and shown["pages"] == "30"
    assert [key for key, _text in shown_counters(ENDED)] == sorted(ENDED)


def test_the_runs_list_counts_pages_documents_and_changes() -> None:
    ended = run_counts({"counters": json.dumps(ENDED)})
    assert ended == {"pages": "30", "indexed": "28", "removed": "1", "excluded": "2", "changes": "changed 1, new 27"}
    running = run_counts({"counters": json.dumps({"pages": 5, "indexed": 0})})  # no delta report yet
    assert running == {"pages": "5", "indexed": "0", "removed": "-", "excluded": "-", "changes": "-"}
    assert run_counts({"counters": None})["pages"] == "-"
    assert run_counts({"counters": json.dumps({**ENDED, "delta": {"unchanged": 0}})})["changes"] == "none"


def test_the_pages_word_states_kinds_and_counters_in_their_language() -> None:
    """Issue 79: a run's and a document's state, the delta report's kinds, the counters' names and a
    notification's state are each worded by one table beside their values, in the page's language;
    the values themselves (stored, CSS classes, ?state=) and the command line's text stay as they are."""
    assert set(RUN_STATE_LABELS) == set(RunState) and set(STATE_LABELS) == set(State) and set(DELTA_LABELS) == set(Delta)
    assert set(FrontierState) | set(RUN_COUNTS) | set(ENDED) <= set(COUNTER_LABELS)
    assert set(NOTIFICATION_STATE_LABELS) == {SENDING, SENT, FAILED}
    english = (run_state_label("finished"), state_label("indexed"), delta_label("not_modified"), counter_label("pages"))
    assert english == ("finished", "indexed", "not_modified", "pages")  # English pages read as before
    assert control_text("suspend") == ", asked to suspend" and control_text("other") == ", asked to other"
    unknown = (run_state_label("x"), state_label("x"), delta_label("x"), counter_label("x"), notification_state_label("x"))
    assert unknown == ("x",) * 5  # a value of no table: as it is
    with speaking("de-DE"):
        assert (delta_label("new"), counter_label("pages"), delta_label(Delta.CHANGED)) == ("neu", "Seiten", "geändert")
        ended = run_counts({"counters": json.dumps({**ENDED, "pages": 1234})})
        assert ended == {"pages": "1.234", "indexed": "28", "removed": "1", "excluded": "2", "changes": "geändert 1, neu 27"}
        assert run_counts({"counters": json.dumps({**ENDED, "delta": {"unchanged": 0}})})["changes"] == "keine"
        assert counter_shown("failures", {"4xx": 2, "network": 1}) == "4xx 2, Netzwerk 1"
        assert (
            counter_text({}) == "none" and counter_text(ENDED["delta"]) == "changed 1, new 27, unchanged 0"
        )  # the command line's


def test_how_many_documents_match() -> None:
    assert (matching(0), matching(1), matching(2)) == ("0 documents match", "1 document matches", "2 documents match")


def test_the_run_page_and_the_document_browser_show_reasons_redacted(tmp_path: Path) -> None:
    """A crawl's failure may quote a login's secret or a URL's credentials: the run page and the
    document browser show its reasons as the daily summary does, masked (a review saw a seeded
    secret on /admin/runs/N)."""
    secret = "run-page-secret-7f3a"
    remember(secret)
    database = Database(f"sqlite:///{tmp_path / 'documents.sqlite3'}")
    runs = Runs(database)
    run = runs.start("wiki")
    runs.end(run.id, RunState.FAILED, {}, f"failed: login as bob:{secret} refused")
    row = {"url": "https://wiki.example/x", "reason": f"fetched https://bob:{secret}@wiki.example/x", "state": "failed"}
    shown = run_view(database, run.id, tmp_path / "cache")
    assert shown is not None and secret not in shown.run["reason"] and "refused" in shown.run["reason"]
    assert [secret in value["reason"] for value in shown_rows([row])] == [False]
    database.close()


def test_a_runs_mode_and_a_notifications_event_are_worded_by_their_tables() -> None:
    assert set(EVENT_LABELS) == set(EventKind) and set(RUN_MODE_LABELS) == {"initial", "maintenance"}
    assert (run_mode_label("maintenance"), run_mode_label(None), event_label("run_failed"), event_label("x")) == (
        "maintenance",
        "",
        "run failed",
        "x",
    )
    with speaking("ja"):
        assert run_mode_label("initial") == "初回" and event_label("solr_unreachable") == "Solr に接続不可"


def test_the_source_pages_runs_show_their_reasons_redacted() -> None:
    secret = "source-page-secret-91c2"
    remember(secret)
    run = {"id": 1, "state": "failed", "reason": f"failed: login as bob:{secret} refused"}
    assert secret not in shown_run(run)["reason"] and shown_run({"id": 2, "reason": None})["reason"] == ""
