"""How a run's counters read on the administration pages and in `scrapy status`: counts, never a
Python dict (searchcrawl/store/runs.py, searchcrawl/web/admin.py); and how many documents match."""

from __future__ import annotations

import json
from pathlib import Path

from searchcrawl.search.query import matching
from searchcrawl.store import Database
from searchcrawl.store.models import RunState
from searchcrawl.store.runs import Runs, counter_text, shown_counters
from searchcrawl.system.secrets import remember
from searchcrawl.web.admin import run_counts, run_view, shown_rows

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
