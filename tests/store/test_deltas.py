"""The delta report kept per run (store/deltas.py) with each URL's status and reason in that run
(issue 72): `scrapy report` and the run page say why a URL failed, also after later runs."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.store import Database, Deltas, DocumentTable
from searchcrawl.store.deltas import run_report
from searchcrawl.store.ledger import Ledger
from searchcrawl.store.models import RunState
from searchcrawl.store.runs import Runs
from searchcrawl.system.secrets import remember
from searchcrawl.web.app import create_app
from tests.web.test_analytics import login
from tests.web.test_app import unit_config

SEEDED = "deltas-Secret-seeded-31"


def test_a_kept_report_says_why_each_url_failed_after_the_row_changed(tmp_path: Path) -> None:
    remember(SEEDED)
    config = unit_config(tmp_path, source_names=lambda: ["intranet"])
    table = DocumentTable(Database(config.db_url))
    runs = Runs(table.database)
    first = table.for_run(runs.start("intranet").id)
    Ledger(first, "intranet").record("http://h.test/", Outcome(Event.CACHED, 200, columns={"checksum": "c"}))
    marker = f"a login page (<b>Sign in</b>, from https://u:{SEEDED}@sso.test/)"
    Ledger(first, "intranet").record("http://h.test/a", Outcome(Event.FAILED, 928, marker))
    Deltas(table.database).keep("intranet", first.run_id)
    runs.end(first.run_id, RunState.FINISHED, {}, "finished")
    second = table.for_run(runs.start("intranet").id)
    Ledger(second, "intranet").record("http://h.test/a", Outcome(Event.FAILED, 503, "HTTP 503"))
    Deltas(table.database).keep("intranet", second.run_id)
    runs.end(second.run_id, RunState.FINISHED, {}, "finished")
    table.database.close()

    database = Database(config.db_url)
    try:
        kept = run_report(database, "intranet", first.run_id)
        latest = run_report(database, "intranet")
    finally:
        database.close()

    assert kept is not None and latest is not None
    assert kept["urls"]["failed"] == ["http://h.test/a"] and kept["urls"]["new"] == ["http://h.test/"]
    assert kept["reasons"] == {
        "http://h.test/a": {"status": 928, "reason": "a login page (<b>Sign in</b>, from https://u:***@sso.test/)"}
    }
    assert latest["reasons"] == {"http://h.test/a": {"status": 503, "reason": "HTTP 503"}}

    web = TestClient(create_app(config), base_url="http://127.0.0.1")
    login(web)
    page = web.get(f"/admin/runs/{first.run_id}")
    assert page.status_code == 200
    assert (
        '<span class="why">928 soft_error: a login page (&lt;b&gt;Sign in&lt;/b&gt;, from https://u:***@sso.test/)</span>'
        in page.text
    )
    assert SEEDED not in page.text
