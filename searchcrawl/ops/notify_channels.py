"""The channels notifications go out on (issue 60): mail over SMTP, and signed webhooks.

Mail: ``smtplib``, with STARTTLS (``starttls``, port 587) or TLS from the first byte (``ssl``, port
465), the server's certificate verified (the system's CAs, or SEARCHCRAWL_SMTP_CA_FILE); a login
(SEARCHCRAWL_SMTP_USERNAME, the password SEARCHCRAWL_SMTP_PASSWORD(_FILE) from the environment)
is refused over a connection without TLS. A message is plain text, with its JSON attached.

Webhooks: a JSON POST to each URL of SEARCHCRAWL_NOTIFY_WEBHOOK_URL(_FILE) (the URL may hold a
token: it is a secret, read from the environment, and logged by its host only). The body is
signed: ``X-Searchcrawl-Timestamp`` (Unix seconds) and ``X-Searchcrawl-Signature:
sha256=<hex>``, the HMAC-SHA256 of ``<timestamp>.<body>`` with the shared secret
SEARCHCRAWL_NOTIFY_WEBHOOK_SECRET(_FILE): a receiver checks it with ``verify_signature`` (or the
same few lines), refusing a timestamp older than five minutes (a replay). Only http and https,
no redirect followed (the body would go to another address), a timeout.
"""

from __future__ import annotations

import hashlib
import hmac
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from searchcrawl.rules.notify_events import Message

if TYPE_CHECKING:
    from email.message import EmailMessage

SIGNATURE_HEADER = "X-Searchcrawl-Signature"
TIMESTAMP_HEADER = "X-Searchcrawl-Timestamp"
EVENT_HEADER = "X-Searchcrawl-Event"
REPLAY_WINDOW = 300.0  # seconds a receiver accepts a signed body for
SECURITIES = ("starttls", "ssl", "none")


class ChannelError(Exception):
    """A notification could not be sent; the message names no secret."""


class Channel(Protocol):
    @property
    def name(self) -> str: ...  # its key in the notifications table

    @property
    def label(self) -> str: ...  # for logs: no secret

    def send(self, message: Message) -> None: ...


@dataclass(frozen=True)
class MailChannel:
    """Mail to ``to`` through the SMTP server ``host``."""

    host: str
    port: int
    security: str
    sender: str
    to: tuple[str, ...]
    username: str = ""
    password: str = ""
    timeout: float = 10.0
    ca_file: str = ""
    name: str = "mail"

    @property
    def label(self) -> str:
        return f"mail via {self.host}:{self.port}"

    def tls_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.ca_file or None)

    def envelope(self, message: Message) -> EmailMessage:
        from email.message import EmailMessage  # here: smtplib and email cost every crawl's start 7 ms of CPU
        from email.utils import formatdate, make_msgid

        mail = EmailMessage()
        mail["Subject"] = message.subject
        mail["From"] = self.sender
        mail["To"] = ", ".join(self.to)
        mail["Date"] = formatdate(localtime=False)
        mail["Message-ID"] = make_msgid(domain=self.sender.rpartition("@")[2] or None)
        mail["Auto-Submitted"] = "auto-generated"  # RFC 3834: no vacation replies
        mail.set_content(message.text)
        mail.add_attachment(message.json(), maintype="application", subtype="json", filename="notification.json")
        return mail

    def send(self, message: Message) -> None:
        import smtplib  # here: see envelope

        if self.security not in SECURITIES:
            raise ChannelError(f"SEARCHCRAWL_SMTP_SECURITY must be one of {', '.join(SECURITIES)}")
        if self.username and self.security == "none":
            raise ChannelError("an SMTP login is sent only over TLS: set SEARCHCRAWL_SMTP_SECURITY to starttls or ssl")
        try:
            if self.security == "ssl":
                client: smtplib.SMTP = smtplib.SMTP_SSL(self.host, self.port, timeout=self.timeout, context=self.tls_context())
            else:
                client = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
            with client:
                if self.security == "starttls":
                    client.starttls(context=self.tls_context())
                if self.username:
                    client.login(self.username, self.password)
                client.send_message(self.envelope(message))
        except smtplib.SMTPAuthenticationError as exc:
            raise ChannelError(f"the SMTP server {self.host}:{self.port} refused the login ({exc.smtp_code})") from None
        except (smtplib.SMTPException, OSError) as exc:
            raise ChannelError(f"mail through {self.host}:{self.port} failed: {type(exc).__name__}: {exc}") from None


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header's value: ``sha256=`` and the HMAC-SHA256 of ``<timestamp>.<body>``."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify_signature(
    secret: str, timestamp: str, body: bytes, signature: str, now: float | None = None, window: float = REPLAY_WINDOW
) -> bool:
    """A receiver's check: the signature is right and the timestamp within ``window`` seconds."""
    try:
        moment = float(timestamp)
    except ValueError:
        return False
    if abs((time.time() if now is None else now) - moment) > window:
        return False
    return hmac.compare_digest(sign(secret, timestamp, body), signature)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # a redirect is an error: the signed body goes to the configured address only


def webhook_label(url: str) -> str:
    """A webhook for the log: its scheme and host, never its path or query (tokens)."""
    try:
        parts = urlsplit(url)
        return f"webhook {parts.scheme}://{parts.hostname}"
    except ValueError:
        return "webhook (an unreadable URL)"


def webhook_name(url: str) -> str:
    """Its key in the notifications table: a digest of the URL, never the URL."""
    return "webhook:" + hashlib.sha256(url.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class WebhookChannel:
    url: str
    secret: str
    timeout: float = 10.0

    @property
    def name(self) -> str:
        return webhook_name(self.url)

    @property
    def label(self) -> str:
        return webhook_label(self.url)

    def request(self, message: Message, now: float | None = None) -> urllib.request.Request:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ChannelError(f"{self.label}: only http and https URLs with a host are posted to")
        body = message.json()
        timestamp = str(int(time.time() if now is None else now))
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "searchcrawl-notifier",
            TIMESTAMP_HEADER: timestamp,
            SIGNATURE_HEADER: sign(self.secret, timestamp, body),
            EVENT_HEADER: str(message.data.get("event", "")),
        }
        return urllib.request.Request(self.url, data=body, headers=headers, method="POST")

    def send(self, message: Message) -> None:
        request = self.request(message)
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(request, timeout=self.timeout) as response:
                response.read(65536)  # bounded: the answer is not used
        except urllib.error.HTTPError as exc:
            raise ChannelError(f"{self.label} answered {exc.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ChannelError(f"{self.label} failed: {type(reason).__name__}") from None
