"""How a run's counters read on the administration pages and in `scrapy status`: counts, never a
Python dict (searchcrawl/store/runs.py, searchcrawl/web/admin.py); and how many documents match."""

from __future__ import annotations

import json

from searchcrawl.search.query import matching
from searchcrawl.store.runs import counter_text, shown_counters
from searchcrawl.web.admin import run_counts

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
