"""Notifications with real parts (issue 60): a real SMTP server (aiosmtpd, STARTTLS with a
certificate of the test's own CA, a login) and a webhook receiver checking the signature, sent to
by a real crawl whose Solr is out of reach: each event once per run, never a secret."""

from __future__ import annotations

import email
import email.policy
import json
import os
import ssl
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message as MailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from searchcrawl.crawl.spider import SourceSpider
from searchcrawl.dev.jvm_server import free_port
from searchcrawl.ops.notifier import Notifier, NotifyConfig
from searchcrawl.ops.notify_channels import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    ChannelError,
    MailChannel,
    WebhookChannel,
    verify_signature,
)
from searchcrawl.rules.notify_events import EndedRun, EventKind, Message, RunEvent, build_message
from searchcrawl.store.database import Database
from searchcrawl.store.notifications import Notifications, run_key
from searchcrawl.store.runs import Runs
from tests.conftest import wait_for

SMTP_USER, SMTP_PASSWORD = "crawler", "smtp-Pa55word-seeded"
WEBHOOK_TOKEN = "hook-token-seeded-0042"
WEBHOOK_SECRET = "webhook-shared-secret-seeded"
SECRETS = (SMTP_PASSWORD, WEBHOOK_TOKEN, WEBHOOK_SECRET)


@dataclass
class MailServer:
    host: str
    port: int
    ca_file: str
    messages: list[MailMessage] = field(default_factory=list)
    logins: list[str] = field(default_factory=list)
    tls_sessions: list[bool] = field(default_factory=list)


@pytest.fixture
def mail_server(tmp_path: Path) -> Iterator[MailServer]:
    """aiosmtpd on 127.0.0.1: STARTTLS required, then a login (crawler / its password)."""
    pytest.importorskip("aiosmtpd")
    import trustme
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult, LoginPassword

    ca = trustme.CA()
    certificate = ca.issue_cert("127.0.0.1")
    ca_file = tmp_path / "smtp-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    certificate.configure_cert(server_context)
    server = MailServer("127.0.0.1", free_port(), str(ca_file))

    class Handler:
        async def handle_DATA(self, smtp, session, envelope):  # noqa: ANN001, ANN201, N802 - aiosmtpd's names
            server.tls_sessions.append(session.ssl is not None)
            server.messages.append(email.message_from_bytes(envelope.original_content, policy=email.policy.default))
            return "250 OK"

    def authenticator(smtp, session, envelope, mechanism, auth_data):  # noqa: ANN001, ANN202
        ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
            SMTP_USER.encode(),
            SMTP_PASSWORD.encode(),
        )
        if ok:
            server.logins.append(auth_data.login.decode())
        return AuthResult(success=ok, handled=False)  # handled=False: the server answers 535 itself

    controller = Controller(
        Handler(),
        hostname=server.host,
        port=server.port,
        tls_context=server_context,
        require_starttls=True,
        authenticator=authenticator,
        auth_require_tls=True,
    )
    controller.start()
    try:
        yield server
    finally:
        controller.stop()


@dataclass
class Hooks:
    url: str
    received: list[dict] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


@pytest.fixture
def webhook_receiver() -> Iterator[Hooks]:
    """An HTTP server on 127.0.0.1 that takes a POST only with a good signature (403 otherwise)."""

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            hooks.paths.append(self.path)
            good = verify_signature(
                WEBHOOK_SECRET, self.headers.get(TIMESTAMP_HEADER, ""), body, self.headers.get(SIGNATURE_HEADER, "")
            )
            if good:
                hooks.received.append(json.loads(body))
            else:
                hooks.refused.append(self.path)
            self.send_response(204 if good else 403)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    hooks = Hooks(f"http://127.0.0.1:{server.server_address[1]}/hook?token={WEBHOOK_TOKEN}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hooks
    finally:
        server.shutdown()
        server.server_close()


def notify_env(mail_server: MailServer, hooks: Hooks, tmp_path: Path, events: str) -> dict[str, str]:
    password_file = tmp_path / "smtp-password"
    password_file.write_text(SMTP_PASSWORD + "\n")
    return {
        "SEARCHCRAWL_SMTP_HOST": mail_server.host,
        "SEARCHCRAWL_SMTP_PORT": str(mail_server.port),
        "SEARCHCRAWL_SMTP_SECURITY": "starttls",
        "SEARCHCRAWL_SMTP_CA_FILE": mail_server.ca_file,
        "SEARCHCRAWL_SMTP_USERNAME": SMTP_USER,
        "SEARCHCRAWL_SMTP_PASSWORD_FILE": str(password_file),
        "SEARCHCRAWL_NOTIFY_MAIL_FROM": "crawler@search.example",
        "SEARCHCRAWL_NOTIFY_MAIL_TO": "oncall@search.example",
        "SEARCHCRAWL_NOTIFY_WEBHOOK_URL": hooks.url,
        "SEARCHCRAWL_NOTIFY_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "SEARCHCRAWL_NOTIFY_EVENTS": events,
        "SEARCHCRAWL_NOTIFY_BASE_URL": f"https://admin:{SMTP_PASSWORD}@search.example/?token={WEBHOOK_TOKEN}",
        "SEARCHCRAWL_NOTIFY_BACKOFF": "0.1",
    }


def site_of(tmp_path: Path, serve) -> str:  # noqa: ANN001
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text(
        '<html><head><title>Home</title></head><body><p>Home.</p><a href="a.html">a</a></body></html>'
    )
    (root / "a.html").write_text("<html><head><title>A</title></head><body><p>Page a.</p></body></html>")
    return serve(root).url


def test_a_crawl_whose_solr_is_out_of_reach_mails_and_posts_each_event_once(
    offline_project, serve, tmp_path, mail_server, webhook_receiver
) -> None:
    name = f"notified-{uuid.uuid4().hex[:8]}"
    offline_project.source(name, f'seeds = ["{site_of(tmp_path, serve)}index.html"]\n')
    env = notify_env(mail_server, webhook_receiver, tmp_path, "run_ended,solr_unreachable,run_failed")

    crawl = offline_project.scrapy(
        "crawl", name, "-s", "SEARCHCRAWL_SOLR_RETRY_TIMES=1", "-s", "SEARCHCRAWL_SOLR_RETRY_BACKOFF=0.1", **env
    )

    assert crawl.returncode == 4, crawl.stderr[-3000:]  # documents left pending: Solr is out of reach
    subjects = sorted(str(message["Subject"]) for message in mail_server.messages)
    assert subjects == [f"[searchcrawl] {name}: Solr out of reach (run 1)", f"[searchcrawl] {name}: run ended (run 1)"]
    assert mail_server.logins == [SMTP_USER, SMTP_USER] and all(mail_server.tls_sessions)
    assert sorted(hook["event"] for hook in webhook_receiver.received) == ["run_ended", "solr_unreachable"]
    assert webhook_receiver.refused == []
    solr = next(message for message in mail_server.messages if "Solr" in str(message["Subject"]))
    text = solr.get_payload()[0].get_payload(decode=True).decode()
    assert f"Source:   {name}" in text and "2 documents stay cached and pending" in text
    assert "https://search.example/admin/runs/1" in text
    attached = json.loads(solr.get_payload()[1].get_payload(decode=True))
    assert attached["event"] == "solr_unreachable" and attached["run"] == 1 and attached["source"] == name

    # never a secret: not in a mail, not in a webhook's body, not in the crawl's log
    everything = [crawl.stdout, crawl.stderr, *(message.as_string() for message in mail_server.messages)]
    everything += [json.dumps(hook) for hook in webhook_receiver.received]
    for seeded in SECRETS:
        assert not any(seeded in text for text in everything), seeded
    assert "Notification solr_unreachable of run:1 sent on webhook http://127.0.0.1" in crawl.stderr

    # once per run: the same run's events again (a retry, another node) send nothing
    database = Database(f"sqlite:///{offline_project.data_dir / 'documents.sqlite3'}")
    store = Notifications(database)
    assert {(row["event"], row["state"]) for row in store.of_key(run_key(1))} == {
        ("run_ended", "sent"),
        ("solr_unreachable", "sent"),
    }
    run = Runs(database).latest(name)
    assert run is not None and run["state"] == "finished"
    mail = MailChannel(
        mail_server.host,
        mail_server.port,
        "starttls",
        "crawler@search.example",
        ("oncall@search.example",),
        SMTP_USER,
        SMTP_PASSWORD,
        ca_file=mail_server.ca_file,
    )
    config = NotifyConfig(frozenset(["run_ended", "solr_unreachable"]), 0.2, mail, ())
    again = Notifier(config, store).notify_run(EndedRun(name, 1, "finished", "finished", not_indexed=2))
    assert again == {} and len(mail_server.messages) == 2

    # the next run is another run: its events are its own
    second = offline_project.scrapy(
        "crawl", name, "-s", "SEARCHCRAWL_SOLR_RETRY_TIMES=1", "-s", "SEARCHCRAWL_SOLR_RETRY_BACKOFF=0.1", **env
    )
    assert second.returncode == 4, second.stderr[-3000:]
    wait_for(lambda: len(mail_server.messages) == 4, timeout=30, what="the second run's mails")
    assert sorted(str(message["Subject"]) for message in mail_server.messages[2:]) == [
        f"[searchcrawl] {name}: Solr out of reach (run 2)",
        f"[searchcrawl] {name}: run ended (run 2)",
    ]


def test_a_refused_smtp_login_is_logged_and_the_crawl_goes_on(
    offline_project, serve, tmp_path, mail_server, webhook_receiver
) -> None:
    name = f"refused-{uuid.uuid4().hex[:8]}"
    offline_project.source(name, f'seeds = ["{site_of(tmp_path, serve)}index.html"]\n')
    env = notify_env(mail_server, webhook_receiver, tmp_path, "run_ended")
    (tmp_path / "smtp-password").write_text("a-wrong-Pa55word\n")

    crawl = offline_project.scrapy(
        "crawl",
        name,
        "-s",
        "SEARCHCRAWL_SOLR_RETRY_TIMES=1",
        "-s",
        "SEARCHCRAWL_SOLR_RETRY_BACKOFF=0.1",
        "-s",
        "SEARCHCRAWL_NOTIFY_ATTEMPTS=2",
        **env,
    )

    assert crawl.returncode == 4, crawl.stderr[-3000:]  # Solr's doing, not the notifications'
    assert mail_server.messages == [] and mail_server.logins == []
    said = [line for line in crawl.stderr.splitlines() if "searchcrawl.ops.notifier" in line]
    assert "refused the login" in crawl.stderr and "failed 2 times, given up" in crawl.stderr, "\n".join(said)
    assert "a-wrong-Pa55word" not in crawl.stderr
    assert [hook["event"] for hook in webhook_receiver.received] == ["run_ended"]  # the other channel went


def test_scrapy_summary_prints_and_sends_the_daily_summary_once(
    offline_project, serve, tmp_path, mail_server, webhook_receiver
) -> None:
    name = f"summed-{uuid.uuid4().hex[:8]}"
    offline_project.source(name, f'seeds = ["{site_of(tmp_path, serve)}index.html"]\n')
    env = notify_env(mail_server, webhook_receiver, tmp_path, "run_failed")  # nothing of this run is mailed
    crawl = offline_project.scrapy(
        "crawl", name, "-s", "SEARCHCRAWL_SOLR_RETRY_TIMES=1", "-s", "SEARCHCRAWL_SOLR_RETRY_BACKOFF=0.1", **env
    )
    assert crawl.returncode == 4, crawl.stderr[-3000:]
    assert mail_server.messages == []

    printed = offline_project.scrapy("summary", **env)
    assert printed.returncode == 0, printed.stderr[-3000:]
    assert "daily summary: 1 sources crawled" in printed.stdout and f"{name}:" in printed.stdout
    assert "run 1 (initial): finished (finished)" in printed.stdout and "new 2" in printed.stdout
    assert mail_server.messages == []  # printed only

    sent = offline_project.scrapy("summary", "--send", **env)
    again = offline_project.scrapy("summary", "--send", "--json", **env)

    assert sent.returncode == 0 and again.returncode == 0, sent.stderr[-3000:] + again.stderr[-3000:]
    assert [str(message["Subject"]) for message in mail_server.messages] == [
        "[searchcrawl] daily summary: 1 sources crawled, 0 failures, 0 waiting"
    ]
    assert [hook["event"] for hook in webhook_receiver.received] == ["daily_summary"]
    assert json.loads(again.stdout)["sources"][0]["source"] == name
    for seeded in SECRETS:
        assert seeded not in sent.stdout + sent.stderr + again.stdout + mail_server.messages[0].as_string()


def test_a_site_that_refuses_the_login_is_told_once_with_its_urls_and_no_secret(
    offline_project, tmp_path, mail_server, webhook_receiver
) -> None:
    from tests.e2e.test_site_auth import TABLES, AuthSite, auth_source, intranet

    other, site = AuthSite(None, {}), AuthSite("basic", intranet(2), accept="the-site-now-wants-this")
    try:
        name = f"refusing-{uuid.uuid4().hex[:8]}"
        offline_project.source(name, auth_source(site, other, TABLES["basic"]))
        env = notify_env(mail_server, webhook_receiver, tmp_path, "login_refused,tls_failed,run_failed")

        crawl = offline_project.scrapy("crawl", name, INTRANET_SECRET="intranet-Pa55-seeded", **env)

        assert crawl.returncode in (0, 4), crawl.stderr[-3000:]
        assert [str(message["Subject"]) for message in mail_server.messages] == [f"[searchcrawl] {name}: logins refused (run 1)"]
        text = mail_server.messages[0].get_payload()[0].get_payload(decode=True).decode()
        assert "936 auth_refused: 1" in text and f"  {site.url}index.html" in text
        assert [hook["examples"] for hook in webhook_receiver.received] == [[f"{site.url}index.html"]]
        for seeded in (*SECRETS, "intranet-Pa55-seeded"):
            assert seeded not in crawl.stderr + mail_server.messages[0].as_string() + json.dumps(webhook_receiver.received)
    finally:
        site.stop()
        other.stop()


def test_scrapy_summary_check_tells_once_a_day_that_solr_and_tika_are_out_of_reach(
    offline_project, tmp_path, mail_server, webhook_receiver
) -> None:
    env = notify_env(mail_server, webhook_receiver, tmp_path, "solr_unreachable,tika_unreachable")
    env["SEARCHCRAWL_TIKA_URL"] = f"http://127.0.0.1:{free_port()}"

    first = offline_project.scrapy("summary", "--check", **env)
    second = offline_project.scrapy("summary", "--check", **env)

    assert first.returncode == second.returncode == 1, first.stderr[-3000:]
    assert "Solr does not answer its ping" in first.stdout and "the Tika server does not answer" in first.stdout
    # issue 72: cron mails what it writes on stderr; the told problems go to stdout and the
    # notifications, so nothing goes to stderr (Scrapy's INFO banner did, each time)
    assert first.stderr == second.stderr == ""
    assert sorted(str(message["Subject"]) for message in mail_server.messages) == [
        "[searchcrawl] Solr out of reach",
        "[searchcrawl] Tika out of reach",
    ]
    assert sorted(hook["event"] for hook in webhook_receiver.received) == ["solr_unreachable", "tika_unreachable"]
    # SEARCHCRAWL_NOTIFY_BASE_URL is set: the mail links the overview, without its credentials and query
    for message in mail_server.messages:
        assert "The overview: https://search.example/admin\r\n" in message.get_payload()[0].get_payload(decode=True).decode()
    assert [hook["link"] for hook in webhook_receiver.received] == ["https://search.example/admin"] * 2
    for seeded in SECRETS:
        assert seeded not in first.stdout + first.stderr + "".join(m.as_string() for m in mail_server.messages)


def test_scrapy_summary_check_writes_on_stderr_only_what_went_wrong(offline_project, tmp_path, webhook_receiver) -> None:
    """Issue 72: quiet on stderr (a cron line mails it), but a channel that failed is said there."""
    closed = f"http://127.0.0.1:{free_port()}/hook?token={WEBHOOK_TOKEN}"
    env = {
        "SEARCHCRAWL_NOTIFY_WEBHOOK_URL": closed,
        "SEARCHCRAWL_NOTIFY_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "SEARCHCRAWL_NOTIFY_EVENTS": "solr_unreachable",
        "SEARCHCRAWL_NOTIFY_ATTEMPTS": "1",
    }

    check = offline_project.scrapy("summary", "--check", **env)
    verbose = offline_project.scrapy("summary", "--check", "-L", "INFO", **env)

    assert check.returncode == 1, check.stderr[-3000:]
    assert "Notification solr_unreachable" in check.stderr and "failed" in check.stderr, check.stderr[-3000:]
    assert " INFO: " not in check.stderr and "Scrapy 2." not in check.stderr, check.stderr[-3000:]
    assert "INFO: Scrapy" in verbose.stderr  # the command line still chooses
    for seeded in SECRETS:
        assert seeded not in check.stdout + check.stderr


class SecretFailingStartSpider(SourceSpider):
    """A source's own spider whose start fails with an error that holds a secret (the SMTP
    password, read from the environment as the crawl's notifications read it)."""

    async def start(self):  # noqa: ANN201
        password = Path(os.environ["SEARCHCRAWL_SMTP_PASSWORD_FILE"]).read_text().strip()
        raise RuntimeError(f"the seed list at https://reader:{password}@seeds.example/list answered {password}")
        yield  # an async generator, as Scrapy expects


def test_a_crawl_that_fails_as_it_starts_is_told_with_its_error_though_its_run_waits_to_resume(
    offline_project, serve, tmp_path, mail_server, webhook_receiver
) -> None:
    (tmp_path / "site").mkdir()
    site = serve(tmp_path / "site")
    name = f"start-error-{uuid.uuid4().hex[:8]}"
    spider = "secret_failing_start"
    offline_project.source(name, f'seeds = ["{site.url}"]\nspider_class = "{spider}"\n')
    env = notify_env(mail_server, webhook_receiver, tmp_path, "run_failed,run_ended")

    crawl = offline_project.scrapy("crawl", name, **env)

    assert crawl.returncode == 1, crawl.stderr[-3000:]
    assert [str(message["Subject"]) for message in mail_server.messages] == [f"[searchcrawl] {name}: run failed (run 1)"]
    text = mail_server.messages[0].get_payload()[0].get_payload(decode=True).decode()
    assert f"The crawl of {name} failed" in text and "now suspended" in text
    # issue 72: the run's ERROR line, not "the log says why"; the secret in it masked
    error = "the seed list at https://reader:***@seeds.example/list answered ***"
    assert "the log says why" not in text and "now suspended: [scrapy.core.engine] " in text, text
    assert "Error:    [scrapy.core.engine] " in text and error in text, text
    [hook] = webhook_receiver.received
    assert hook["event"] == "run_failed" and error in hook["error"]
    for seeded in SECRETS:
        assert seeded not in crawl.stderr + mail_server.messages[0].as_string() + json.dumps(webhook_receiver.received)


def test_mail_over_implicit_tls_and_a_certificate_that_is_not_trusted(tmp_path) -> None:
    """SMTP_SSL (port 465 style) to aiosmtpd; the same server with the system's CAs is refused."""
    import trustme
    from aiosmtpd.controller import Controller

    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    received: list[bytes] = []

    class Handler:
        async def handle_DATA(self, smtp, session, envelope):  # noqa: ANN001, ANN201, N802
            received.append(envelope.original_content)
            return "250 OK"

    port = free_port()
    controller = Controller(Handler(), hostname="127.0.0.1", port=port, ssl_context=server_context)
    controller.start()
    try:
        message = build_message(EndedRun("intranet", 5, "failed", "failed"), RunEvent(EventKind.RUN_FAILED, "run 5 failed"))
        MailChannel("127.0.0.1", port, "ssl", "a@search.example", ("b@search.example",), ca_file=str(ca_file)).send(message)
        assert len(received) == 1 and b"Subject: [searchcrawl] intranet: run failed (run 5)" in received[0]
        with pytest.raises(ChannelError, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            MailChannel("127.0.0.1", port, "ssl", "a@search.example", ("b@search.example",)).send(message)
        assert len(received) == 1
    finally:
        controller.stop()


def test_a_webhook_that_redirects_is_not_followed(tmp_path) -> None:
    hits: list[str] = []

    class Redirecting(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            hits.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(307)
            self.send_header("Location", "/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        channel = WebhookChannel(f"http://127.0.0.1:{server.server_address[1]}/hook", "s3cret-shared", timeout=5)
        with pytest.raises(ChannelError, match="answered 307"):
            channel.send(Message("s", "t", {"event": "run_failed"}))
        assert hits == ["/hook"]
    finally:
        server.shutdown()
        server.server_close()


def test_held_deletions_and_a_confirmed_drop_are_told_with_a_real_solr(
    project, serve, tmp_path, mail_server, webhook_receiver
) -> None:
    root = tmp_path / "site"
    root.mkdir()
    pages = [f"p{number}.html" for number in range(10)]
    links = "".join(f'<a href="{page}">{page}</a>' for page in pages)
    (root / "index.html").write_text(f"<html><head><title>Home</title></head><body><p>Home.</p>{links}</body></html>")
    for page in pages:
        (root / page).write_text(f"<html><head><title>{page}</title></head><body><p>Page {page}.</p></body></html>")
    site = serve(root)
    name = f"dropping-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    env = notify_env(mail_server, webhook_receiver, tmp_path, "deletions_held,documents_dropped,run_failed,solr_unreachable")

    assert project.scrapy("crawl", name, **env).returncode == 0
    assert mail_server.messages == []  # a first crawl: nothing to tell
    for page in pages[:5]:
        (root / page).unlink()  # 5 of 11: more than max_delete_share (0.3)

    held = project.scrapy("crawl", name, **env)
    forced = project.scrapy("crawl", name, "-a", "delete=force", **env)

    assert held.returncode == forced.returncode == 0, held.stderr[-2000:] + forced.stderr[-2000:]
    assert [str(message["Subject"]) for message in mail_server.messages] == [
        f"[searchcrawl] {name}: deletions held by the mass-deletion guard (run 2)",
        f"[searchcrawl] {name}: documents dropped (run 3)",
    ]
    assert [(hook["event"], hook["run"], hook["count"]) for hook in webhook_receiver.received] == [
        ("deletions_held", 2, 5),
        ("documents_dropped", 3, 5),
    ]
    text = mail_server.messages[1].get_payload()[0].get_payload(decode=True).decode()
    assert "fell by 45%" in text and "6 now" in text


def test_a_bad_recipient_turns_notifications_off_with_one_error_and_the_crawl_goes_on(offline_project, serve, tmp_path) -> None:
    name = f"badly-told-{uuid.uuid4().hex[:8]}"
    offline_project.source(name, f'seeds = ["{site_of(tmp_path, serve)}index.html"]\n')

    crawl = offline_project.scrapy(
        "crawl",
        name,
        "-s",
        "SEARCHCRAWL_SOLR_RETRY_TIMES=1",
        SEARCHCRAWL_SMTP_HOST="127.0.0.1",
        SEARCHCRAWL_NOTIFY_MAIL_TO="oncall@example.org\r\nBcc: everyone@example.org",
    )

    assert crawl.returncode == 4, crawl.stderr[-3000:]  # Solr's doing only
    assert crawl.stderr.count("Notifications are off for this crawl: expected a mail address") == 1
    summary = offline_project.scrapy("summary", SEARCHCRAWL_SMTP_HOST="127.0.0.1", SEARCHCRAWL_NOTIFY_MAIL_TO="not an address")
    assert summary.returncode == 2 and "notifications: expected a mail address" in summary.stderr
