"""The daily summary (issue 60): built from the runs and documents recorded, the same for the
mail, the webhook and /admin/summary; sent once a day per channel; never a secret."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from starlette.testclient import TestClient

from searchcrawl.ops.daily_summary import build_summary, send_problems, send_summary, summary_message
from searchcrawl.ops.notifier import Notifier, NotifyConfig
from searchcrawl.rules.notify_events import Message
from searchcrawl.store.database import Database, now
from searchcrawl.store.models import RunState, documents, frontier
from searchcrawl.store.notifications import Notifications
from searchcrawl.store.runs import Runs
from searchcrawl.system.secrets import remember
from searchcrawl.web.app import create_app
from tests.web.test_analytics import login
from tests.web.test_app import unit_config

SEEDED = "summary-Secret-seeded-77"


def recorded(tmp_path: Path) -> Database:
    """Two sources crawled today: intranet finished with logins refused and deletions held;
    wiki failed; an old run of yesterday's yesterday is not counted."""
    remember(SEEDED)
    database = Database(f"sqlite:///{tmp_path / 'documents.sqlite3'}")
    runs = Runs(database)
    old = runs.start("intranet")
    runs.end(old.id, RunState.FINISHED, {"delta": {"new": 500}}, "finished")
    with database.engine.begin() as connection:
        connection.execute(
            runs_table()
            .update()
            .where(runs_table().c.id == old.id)
            .values(started_at=now() - timedelta(days=3), ended_at=now() - timedelta(days=3))
        )
    intranet = runs.start("intranet")
    runs.end(
        intranet.id, RunState.FINISHED, {"pages": 9, "delta": {"new": 3, "changed": 2, "deleted": 1, "held": 40}}, "finished"
    )
    wiki = runs.start("wiki")
    runs.end(wiki.id, RunState.FAILED, {"delta": {}}, f"failed: login as bob:{SEEDED} refused")
    rows = [
        ("intranet", "https://intranet.example/a", 200, intranet.id),
        ("intranet", "https://intranet.example/private", 936, intranet.id),
        ("intranet", "https://intranet.example/private2", 936, intranet.id),
        ("intranet", "https://intranet.example/gone", 404, intranet.id),
        ("wiki", "https://wiki.example/x", 937, wiki.id),
    ]
    with database.engine.begin() as connection:
        for number, (source, url, status, run_id) in enumerate(rows, start=1):
            connection.execute(
                documents.insert().values(
                    id=number, source=source, url=url, url_hash=f"{number:064d}", state="failed", status=status, first_seen=now()
                )
            )
            connection.execute(frontier.insert().values(document_id=number, source=source, run_id=run_id, state="done"))
    return database


def runs_table():  # noqa: ANN201
    from searchcrawl.store.models import runs

    return runs


def test_the_summary_says_what_was_crawled_changed_failed_and_waits(tmp_path: Path) -> None:
    database = recorded(tmp_path)

    summary = build_summary(database, now(), 24)

    assert [source.name for source in summary.crawled] == ["intranet", "wiki"]
    intranet, wiki = summary.crawled
    assert [run["id"] for run in intranet.runs] == [2]  # the run of three days ago is not in it
    assert intranet.changes == {"new": 3, "changed": 2, "deleted": 1, "held": 40}
    assert intranet.failures == {"404": 1, "936 auth_refused": 2}
    assert wiki.failures == {"937 tls_failed": 1} and wiki.failed_runs == 1
    assert intranet.waits == [
        "40 deletions held by the mass-deletion guard in run 2 (confirm: scrapy crawl intranet -a delete=force)"
    ]
    assert summary.totals() == {"changed": 2, "deleted": 1, "held": 40, "new": 3}

    message = summary_message(summary, base_url=f"https://admin:{SEEDED}@search.example/")
    assert message.subject == "[searchcrawl] daily summary: 2 sources crawled, 4 failures, 1 waiting"
    assert "936 auth_refused: 2" in message.text and "https://search.example/admin/runs/2" in message.text
    assert "https://search.example/admin/summary" in message.text
    data = json.loads(message.json())
    assert [source["source"] for source in data["sources"]] == ["intranet", "wiki"]
    for text in (message.subject, message.text, message.json().decode()):
        assert SEEDED not in text


@dataclass
class Catching:
    name: str = "mail"
    label: str = "catching"
    sent: list[Message] = field(default_factory=list)

    def send(self, message: Message) -> None:
        self.sent.append(message)


def test_the_summary_is_sent_once_a_day_per_channel(tmp_path: Path) -> None:
    database = recorded(tmp_path)
    channel = Catching()
    config = NotifyConfig(frozenset(), 0.2, None, ())
    object.__setattr__(config, "channels", lambda: [channel])
    notifier = Notifier(config, Notifications(database), sleep=lambda seconds: None)
    summary = build_summary(database, now(), 24)

    assert send_summary(summary, notifier) == ["mail"]
    assert send_summary(summary, notifier) == []  # a second --send the same day
    assert len(channel.sent) == 1 and channel.sent[0].data["event"] == "daily_summary"


def test_a_service_out_of_reach_is_told_with_the_overview_s_link(tmp_path: Path) -> None:
    """Issue 72: `scrapy summary --check`'s mail links the administration overview (Solr's health,
    the stalled runs) when SEARCHCRAWL_NOTIFY_BASE_URL is set; its credentials and query never."""
    remember(SEEDED)
    database = Database(f"sqlite:///{tmp_path / 'documents.sqlite3'}")
    channel = Catching()
    base_url = f"https://admin:{SEEDED}@search.example/search/?token={SEEDED}"
    config = NotifyConfig(frozenset({"solr_unreachable"}), 0.2, None, (), base_url=base_url)
    object.__setattr__(config, "channels", lambda: [channel])
    notifier = Notifier(config, Notifications(database), sleep=lambda seconds: None)

    assert send_problems({"solr": "Solr does not answer its ping (SOLR_URL)"}, notifier, now()) == ["solr_unreachable"]

    [message] = channel.sent
    assert "The overview: https://search.example/search/admin\n" in message.text
    assert message.data["link"] == "https://search.example/search/admin"
    for text in (message.subject, message.text, message.json().decode()):
        assert SEEDED not in text


def test_the_admin_page_shows_the_same_summary(tmp_path: Path) -> None:
    recorded(tmp_path)
    web = TestClient(create_app(unit_config(tmp_path)), base_url="http://127.0.0.1")
    assert web.get("/admin/summary", follow_redirects=False).status_code in (303, 302, 403)  # not signed in
    login(web)

    page = web.get("/admin/summary")

    assert page.status_code == 200
    text = re.sub(r"<[^>]+>", "", page.text)
    assert "2 sources crawled, 1 waiting" in text
    assert "936 auth_refused: 2" in text and "937 tls_failed: 1" in text
    assert "intranet: 40 deletions held by the mass-deletion guard in run 2" in text
    assert SEEDED not in page.text
    assert "<script" not in page.text
    assert web.get("/admin/summary?hours=nan").status_code == 200 and web.get("/admin/summary?hours=x").status_code == 200


def test_the_run_page_lists_what_was_told_of_the_run(tmp_path: Path) -> None:
    database = recorded(tmp_path)
    store = Notifications(database)
    store.claim("run:2", "login_refused", "mail", "intranet", 2)
    store.finish("run:2", "login_refused", "mail", 1, None)
    store.claim("run:2", "login_refused", "webhook:0123456789ab", "intranet", 2)
    store.finish("run:2", "login_refused", "webhook:0123456789ab", 3, "webhook https://hooks.example answered 500")
    web = TestClient(create_app(unit_config(tmp_path)), base_url="http://127.0.0.1")
    login(web)

    page = web.get("/admin/runs/2")

    assert page.status_code == 200
    text = re.sub(r"<[^>]+>", " ", page.text)
    assert re.search(r"login refused\s+mail\s+sent\s+1", text)
    assert re.search(r"login refused\s+webhook:0123456789ab\s+failed\s+3\s+webhook https://hooks.example answered 500", text)
    assert "Notifications" not in re.sub(r"<[^>]+>", " ", web.get("/admin/runs/3").text)


def test_one_source_crawled_and_one_deletion_held_read_in_the_singular(tmp_path: Path) -> None:
    """Issue 79: "1 source crawled", "1 deletion held" (the mail's subject stays as it was); the
    delta report's kinds and the runs' states in the page's language, their CSS classes the values."""
    database = Database(unit_config(tmp_path).db_url)
    runs = Runs(database)
    run = runs.start("intranet")
    runs.end(run.id, RunState.FINISHED, {"delta": {"new": 3, "held": 1}}, "finished")
    summary = build_summary(database, now(), 24)
    assert summary.crawled[0].waits[0].startswith(f"1 deletion held by the mass-deletion guard in run {run.id} ")
    assert "1 sources crawled" in summary_message(summary).subject  # the mail: unchanged
    database.close()
    web = TestClient(create_app(unit_config(tmp_path)), base_url="http://127.0.0.1")
    login(web)

    text = re.sub(r"<[^>]+>", "", web.get("/admin/summary").text)
    assert "1 source crawled, 1 waiting" in text and "held 1, new 3" in text

    german = web.get("/admin/summary", headers={"accept-language": "de"}).text
    assert 'class="state state-finished"' in german and "neu 3" in german
