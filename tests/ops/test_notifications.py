"""Notifications (issue 60): event detection, messages without secrets, signatures, sending once."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError
from scrapy.settings import Settings

from searchcrawl import settings as project_settings
from searchcrawl.ops.daily_summary import send_stalls
from searchcrawl.ops.notifier import Notifier, NotifyConfig
from searchcrawl.ops.notify_channels import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    ChannelError,
    MailChannel,
    WebhookChannel,
    sign,
    verify_signature,
    webhook_label,
)
from searchcrawl.ops.stalls import Stall
from searchcrawl.rules.notify_events import (
    EndedRun,
    EventKind,
    Message,
    NotifyTable,
    build_message,
    detect_events,
    dropped_share,
    safe_url,
)
from searchcrawl.store.database import Database
from searchcrawl.store.notifications import Notifications, run_key
from searchcrawl.system.secrets import remember

SEEDED_SECRET = "s3cr3t-Pa55word-never-shown"


def facts(**values: object) -> EndedRun:
    base: dict[str, object] = {"source": "intranet", "run_id": 7, "state": "finished", "reason": "finished"}
    return EndedRun(**{**base, **values})  # type: ignore[arg-type]


def kinds(found: list) -> list[str]:
    return [event.kind.value for event in found]


# --- detection ----------------------------------------------------------------------------------


def test_a_quiet_finished_run_has_only_its_end() -> None:
    assert kinds(detect_events(facts(in_index=10, delta={"new": 1}), 0.2)) == ["run_ended"]


def test_a_suspended_run_has_not_ended() -> None:
    assert detect_events(facts(state="suspended", reason="shutdown"), 0.2) == []


def test_a_crawl_that_failed_is_told_though_its_run_is_suspended() -> None:
    found = detect_events(facts(state="suspended", reason="start_error", crawl_failed=True), 0.2)
    assert kinds(found) == ["run_failed"] and "now suspended" in found[0].summary


def test_a_failed_run_is_told_with_its_first_error_line_masked() -> None:
    """Issue 72: the crawl's first ERROR line (ErrorLines), not "the log says why"; masked."""
    import logging

    from searchcrawl.crawl.extensions.run_notify import ErrorLines

    remember(SEEDED_SECRET)
    lines = ErrorLines()
    log = logging.getLogger("tests.run_notify")
    log.addHandler(lines)
    try:
        log.warning("a warning is not an error")
        try:
            raise RuntimeError(f"seed list https://reader:{SEEDED_SECRET}@seeds.example/ refused")
        except RuntimeError:
            log.exception("Error while reading start items and requests")
        log.error("Solr unavailable: 2 documents stay cached")
    finally:
        log.removeHandler(lines)
    assert lines.count == 2
    assert lines.first == (
        "[tests.run_notify] Error while reading start items and requests "
        "(RuntimeError: seed list https://reader:***@seeds.example/ refused)"
    )

    run = facts(state="failed", reason="start_error", crawl_failed=True, error=lines.first, errors=lines.count)
    [event] = [event for event in detect_events(run, 0.2) if event.kind == EventKind.RUN_FAILED]
    message = build_message(run, event)
    assert "the log says why" not in message.text
    assert "failed (start_error) in run 7, now failed: [tests.run_notify] Error while reading" in message.text
    assert "Error:    [tests.run_notify] Error while reading start items" in message.text
    assert "(and 1 more ERROR lines in the log)" in message.text
    assert message.data["error"] == lines.first and message.data["errors"] == 2
    assert SEEDED_SECRET not in message.text + message.json().decode()
    quiet = facts(state="failed", reason="start_error")  # nothing logged at ERROR: the log is all there is
    assert detect_events(quiet, 0.2)[1].summary.endswith("; the log says why")


def test_each_recorded_trouble_is_its_event() -> None:
    found = detect_events(
        facts(
            state="failed",
            reason="start_error",
            held=40,
            statuses={200: 3, 936: 2, 937: 1, 938: 1, 926: 4, 404: 1},
            not_indexed=3,
            in_index=50,
            delta={"deleted": 50},
        ),
        0.2,
    )
    assert kinds(found) == [
        "run_ended",
        "run_failed",
        "deletions_held",
        "login_refused",
        "tls_failed",
        "solr_unreachable",
        "tika_unreachable",
        "documents_dropped",
    ]
    counts = {event.kind: event.count for event in found}
    assert counts[EventKind.LOGIN_REFUSED] == 2 and counts[EventKind.TLS_FAILED] == 2 and counts[EventKind.TIKA_UNREACHABLE] == 4


def test_the_drop_share_is_net_of_new_documents() -> None:
    assert dropped_share(facts(in_index=80, delta={"deleted": 20})) == pytest.approx(0.2)
    assert dropped_share(facts(in_index=100, delta={"deleted": 20, "new": 20})) == 0
    assert dropped_share(facts(in_index=0)) == 0
    assert "documents_dropped" not in kinds(detect_events(facts(in_index=80, delta={"deleted": 20}), 0.2))
    assert "documents_dropped" in kinds(detect_events(facts(in_index=79, delta={"deleted": 21}), 0.2))


def test_a_test_mode_run_tells_nothing_of_solr_or_drops() -> None:
    found = detect_events(facts(test_mode=True, not_indexed=3, in_index=0, delta={"deleted": 9}), 0.2)
    assert kinds(found) == ["run_ended"]


# --- messages --------------------------------------------------------------------------------------


def test_a_message_names_source_run_event_counts_and_link() -> None:
    message = build_message(
        facts(counters={"pages": 12, "indexed": 9}, delta={"new": 9}, statuses={936: 2}, not_indexed=0),
        detect_events(facts(statuses={936: 2}), 0.2)[1],
        base_url="https://search.example/",
        installation="intranet search",
    )
    assert message.subject == "[intranet search] intranet: logins refused (run 7)"
    assert "Source:   intranet" in message.text and "Run:      7" in message.text
    assert "pages 12" in message.text and "new 9" in message.text and "936 auth_refused: 2" in message.text
    assert "https://search.example/admin/runs/7" in message.text
    data = json.loads(message.json())
    assert data["event"] == "login_refused" and data["source"] == "intranet" and data["run"] == 7
    assert data["failures"] == {"936 auth_refused": 2} and data["link"] == "https://search.example/admin/runs/7"


def test_no_secret_in_a_message() -> None:
    remember(SEEDED_SECRET)
    run = facts(
        reason=f"failed: could not log in as admin:{SEEDED_SECRET}",
        statuses={936: 2},
        examples={
            936: [
                f"https://user:{SEEDED_SECRET}@intranet.example/private?token={SEEDED_SECRET}#x",
                "https://intranet.example/a?sid=abc123secretsession",
            ]
        },
    )
    for event in detect_events(run, 0.2):
        message = build_message(run, event, base_url=f"https://admin:{SEEDED_SECRET}@search.example/?key={SEEDED_SECRET}")
        for text in (message.subject, message.text, message.json().decode()):
            assert SEEDED_SECRET not in text
            assert "abc123secretsession" not in text
            assert "user:" not in text
    assert safe_url(f"https://u:{SEEDED_SECRET}@h.example:8443/p/q?x=1#f") == "https://h.example:8443/p/q"


# --- configuration ---------------------------------------------------------------------------------


def settings(**values: object) -> Settings:
    base = Settings()
    base.setmodule(project_settings)
    base.update(values)
    return base


def test_the_global_configuration_and_a_sources_notify_table() -> None:
    config = NotifyConfig.from_settings(
        settings(SEARCHCRAWL_SMTP_HOST="127.0.0.1", SEARCHCRAWL_NOTIFY_MAIL_TO="ops@example.org"),
        environ={
            "SEARCHCRAWL_NOTIFY_WEBHOOK_URL": "https://hooks.example/a?token=x1y2z3w4",
            "SEARCHCRAWL_NOTIFY_WEBHOOK_SECRET": "shared-secret",
        },
    )
    assert config.mail is not None and config.mail.to == ("ops@example.org",)
    assert [channel.label for channel in config.channels()] == ["mail via 127.0.0.1:587", "webhook https://hooks.example"]
    assert "run_ended" not in config.events and "run_failed" in config.events
    table = NotifyTable.model_validate(
        {"events": ["run_ended"], "channels": ["mail"], "mail_to": ["web@example.org"], "drop_share": 0.5}
    )
    mine = config.for_source(table)
    assert mine.events == {"run_ended"} and mine.drop_share == 0.5 and mine.webhooks == ()
    assert mine.mail is not None and mine.mail.to == ("ops@example.org", "web@example.org")


@pytest.mark.parametrize(
    "table",
    [
        {"channels": ["pager"]},
        {"mail_to": ["ops@example.org\r\nBcc: x@y"]},
        {"events": ["nothing"]},
        {"drop_share": 2},
        {"other": 1},
    ],
)
def test_a_bad_notify_table_is_refused(table: dict) -> None:
    with pytest.raises(ValidationError):
        NotifyTable.model_validate(table)


def test_webhooks_without_a_secret_are_off() -> None:
    config = NotifyConfig.from_settings(settings(), environ={"SEARCHCRAWL_NOTIFY_WEBHOOK_URL": "https://hooks.example/a"})
    assert config.webhooks == () and config.channels() == []


# --- signature -------------------------------------------------------------------------------------


def test_a_webhook_request_is_signed_over_timestamp_and_body() -> None:
    channel = WebhookChannel("https://hooks.example/in?token=abcd1234", "shared-secret")
    message = Message("subject", "text", {"event": "run_failed"})
    request = channel.request(message, now=1_000_000)
    body = request.data
    assert isinstance(body, bytes) and json.loads(body) == {"event": "run_failed"}
    timestamp = request.get_header(TIMESTAMP_HEADER.capitalize())
    signature = request.get_header(SIGNATURE_HEADER.capitalize())
    assert timestamp == "1000000" and signature == sign("shared-secret", "1000000", body)
    assert verify_signature("shared-secret", timestamp, body, signature, now=1_000_100)
    assert not verify_signature("other", timestamp, body, signature, now=1_000_100)
    assert not verify_signature("shared-secret", timestamp, body + b" ", signature, now=1_000_100)
    assert not verify_signature("shared-secret", timestamp, body, signature, now=1_000_000 + 301)  # a replay


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://hooks.example/x", "https:///nohost"])
def test_only_http_webhooks(url: str) -> None:
    with pytest.raises(ChannelError):
        WebhookChannel(url, "s").request(Message("s", "t", {}))


def test_a_webhook_is_logged_by_its_host() -> None:
    assert webhook_label("https://hooks.example/services/T0/B0/XYZSECRET?x=1") == "webhook https://hooks.example"


def test_no_smtp_login_without_tls() -> None:
    channel = MailChannel("127.0.0.1", 25, "none", "a@example.org", ("b@example.org",), username="u", password="p")
    with pytest.raises(ChannelError, match="only over TLS"):
        channel.send(Message("s", "t", {}))


# --- once per run and channel, bounded retries -------------------------------------------------------


@dataclass
class FakeChannel:
    name: str
    fail: int = 0  # failures before it works
    sent: list[Message] = field(default_factory=list)
    tries: int = 0
    label: str = "fake"

    def send(self, message: Message) -> None:
        self.tries += 1
        if self.tries <= self.fail:
            raise ChannelError(f"refused, with {SEEDED_SECRET}")
        self.sent.append(message)


def notifier(tmp_path, *channels: FakeChannel, attempts: int = 3) -> tuple[Notifier, Notifications]:
    store = Notifications(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    config = NotifyConfig(
        events=frozenset(["run_failed", "solr_unreachable"]), drop_share=0.2, mail=None, webhooks=(), attempts=attempts
    )
    object.__setattr__(config, "channels", lambda: list(channels))  # the fakes, in place of mail and webhooks
    return Notifier(config, store, sleep=lambda seconds: None), store


def test_each_event_once_per_run_and_channel(tmp_path) -> None:
    one, two = FakeChannel("mail"), FakeChannel("webhook:1")
    sender, store = notifier(tmp_path, one, two)
    run = facts(state="failed", reason="failed", not_indexed=2)

    assert sender.notify_run(run) == {"run_failed": ["mail", "webhook:1"], "solr_unreachable": ["mail", "webhook:1"]}
    assert sender.notify_run(run) == {}  # a retry, a second node: nothing again
    assert len(one.sent) == len(two.sent) == 2
    assert {(row["event"], row["channel"], row["state"]) for row in store.of_key(run_key(7))} == {
        ("run_failed", "mail", "sent"),
        ("run_failed", "webhook:1", "sent"),
        ("solr_unreachable", "mail", "sent"),
        ("solr_unreachable", "webhook:1", "sent"),
    }


def test_a_failing_channel_is_tried_a_bounded_number_of_times_and_recorded(tmp_path, caplog) -> None:
    remember(SEEDED_SECRET)
    broken, flaky = FakeChannel("webhook:broken", fail=99), FakeChannel("mail", fail=1)
    sender, store = notifier(tmp_path, broken, flaky, attempts=3)

    assert sender.notify_run(facts(state="failed", reason="failed")) == {"run_failed": ["mail"]}

    assert broken.tries == 3 and flaky.tries == 2 and len(flaky.sent) == 1
    rows = {row["channel"]: row for row in store.of_key(run_key(7))}
    assert rows["webhook:broken"]["state"] == "failed" and rows["webhook:broken"]["attempts"] == 3
    assert SEEDED_SECRET not in rows["webhook:broken"]["error"]
    assert rows["mail"]["state"] == "sent" and rows["mail"]["attempts"] == 2
    assert SEEDED_SECRET not in caplog.text
    assert sender.notify_run(facts(state="failed", reason="failed")) == {}  # failed for good: not again


def test_a_stalled_run_is_told_once_per_run_and_channel_only_when_asked(tmp_path) -> None:
    """`scrapy summary --check`'s stall notification (daily_summary.send_stalls): host names and
    counts, never a URL; once per run and channel; not at all unless run_stalled is an event."""
    moment = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    stall = Stall(
        "intranet", 7, "nothing fetched", moment - timedelta(hours=2), 40, ("site wiki.example: 3 request(s) without an answer",)
    )
    mail, hook = FakeChannel("mail"), FakeChannel("webhook:1")
    sender, store = notifier(tmp_path, mail, hook)
    assert send_stalls([stall], sender, moment) == []  # not one of the configured events
    object.__setattr__(sender.config, "events", frozenset(["run_stalled"]))
    assert send_stalls([stall], sender, moment) == [7, 7] and send_stalls([stall], sender, moment) == []
    [message] = mail.sent
    assert message.subject == "[searchcrawl] intranet: run 7 stalled" and "for 2 h" in message.text
    assert message.data["waits_on"] == ["site wiki.example: 3 request(s) without an answer"] and message.data["run"] == 7
    assert {(row["event"], row["channel"]) for row in store.of_key(run_key(7))} == {
        ("run_stalled", "mail"),
        ("run_stalled", "webhook:1"),
    }
