"""The notifier (issue 60): a run's events, or the daily summary, sent on each channel once.

Configured globally by the settings (SEARCHCRAWL_NOTIFY_*, SEARCHCRAWL_SMTP_*: which events,
the drop share, the mail server and its addresses; the secrets from the environment) and per
source by its ``[notify]`` table (``NotifyConfig.for_source``). Each (run, event, channel) is
claimed in the notifications table before it is sent (store/notifications.py): a retry, a second
node or a second process never sends it twice. A send that fails is tried again, at most
SEARCHCRAWL_NOTIFY_ATTEMPTS times, then logged and recorded as failed: never the crawl's failure.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from searchcrawl.ops.notify_channels import Channel, ChannelError, MailChannel, WebhookChannel
from searchcrawl.rules.notify_events import (
    EndedRun,
    Message,
    NotifyTable,
    build_message,
    check_address,
    detect_events,
)
from searchcrawl.store.notifications import Notifications, run_key
from searchcrawl.system.secrets import redact, remember, secret

logger = logging.getLogger(__name__)

SMTP_PASSWORD = "SEARCHCRAWL_SMTP_PASSWORD"
WEBHOOK_URL = "SEARCHCRAWL_NOTIFY_WEBHOOK_URL"  # one URL or several, separated by white space
WEBHOOK_SECRET = "SEARCHCRAWL_NOTIFY_WEBHOOK_SECRET"


def _list(value: Any) -> list[str]:
    """A list setting given as a list or a comma-separated string."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return [str(item).strip() for item in value or () if str(item).strip()]


@dataclass(frozen=True)
class NotifyConfig:
    events: frozenset[str]
    drop_share: float
    mail: MailChannel | None
    webhooks: tuple[WebhookChannel, ...]
    attempts: int = 3
    backoff: float = 2.0
    base_url: str = ""
    installation: str = "searchcrawl"

    @classmethod
    def from_settings(cls, settings: Any, environ: Mapping[str, str] | None = None) -> NotifyConfig:
        """The global configuration; the secrets from the environment (``secret``, which masks
        them in the log from then on)."""
        env = {} if environ is None else environ
        read = (lambda name: secret(name, env)) if environ is not None else secret
        timeout = settings.getfloat("SEARCHCRAWL_NOTIFY_TIMEOUT")
        mail = None
        to = tuple(check_address(address) for address in _list(settings.get("SEARCHCRAWL_NOTIFY_MAIL_TO")))
        host = settings.get("SEARCHCRAWL_SMTP_HOST")
        if host:
            username = settings.get("SEARCHCRAWL_SMTP_USERNAME") or ""
            mail = MailChannel(
                host=host,
                port=settings.getint("SEARCHCRAWL_SMTP_PORT"),
                security=settings.get("SEARCHCRAWL_SMTP_SECURITY"),
                sender=check_address(settings.get("SEARCHCRAWL_NOTIFY_MAIL_FROM")),
                to=to,
                username=username,
                password=(read(SMTP_PASSWORD) or "") if username else "",
                timeout=timeout,
                ca_file=settings.get("SEARCHCRAWL_SMTP_CA_FILE") or "",
            )
        webhooks: tuple[WebhookChannel, ...] = ()
        urls = (read(WEBHOOK_URL) or "").split()
        for url in urls:
            remember(url)  # each one masked in the log, not only the list
        if urls:
            shared = read(WEBHOOK_SECRET)
            if not shared:
                logger.error(
                    "Webhooks are off: %s (or %s_FILE) is not set; a webhook's body is always signed",
                    WEBHOOK_SECRET,
                    WEBHOOK_SECRET,
                )
            else:
                webhooks = tuple(WebhookChannel(url, shared, timeout) for url in urls)
        return cls(
            events=frozenset(_list(settings.get("SEARCHCRAWL_NOTIFY_EVENTS"))),
            drop_share=settings.getfloat("SEARCHCRAWL_NOTIFY_DROP_SHARE"),
            mail=mail,
            webhooks=webhooks,
            attempts=max(1, settings.getint("SEARCHCRAWL_NOTIFY_ATTEMPTS")),
            backoff=settings.getfloat("SEARCHCRAWL_NOTIFY_BACKOFF"),
            base_url=settings.get("SEARCHCRAWL_NOTIFY_BASE_URL") or "",
            installation=settings.get("SEARCHCRAWL_NOTIFY_INSTALLATION") or "searchcrawl",
        )

    def for_source(self, table: NotifyTable | None) -> NotifyConfig:
        """The configuration for one source: its ``[notify]`` table's events replace the global
        ones, its channels keep only those, its mail addresses join the global ones."""
        if table is None:
            return self
        mail, webhooks = self.mail, self.webhooks
        if mail is not None and table.mail_to:
            mail = replace(mail, to=tuple(dict.fromkeys((*mail.to, *table.mail_to))))
        if table.channels is not None:
            mail = mail if "mail" in table.channels else None
            webhooks = webhooks if "webhook" in table.channels else ()
        return replace(
            self,
            events=frozenset(table.events) if table.events is not None else self.events,
            drop_share=table.drop_share if table.drop_share is not None else self.drop_share,
            mail=mail,
            webhooks=webhooks,
        )

    def channels(self) -> list[Channel]:
        found: list[Channel] = [self.mail] if self.mail is not None and self.mail.to else []
        found.extend(self.webhooks)
        return found


class Notifier:
    def __init__(self, config: NotifyConfig, store: Notifications, sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config
        self.store = store
        self.sleep = sleep

    def notify_run(self, facts: EndedRun) -> dict[str, list[str]]:
        """Send the run's configured events on every channel, each once; returns, per event,
        the channels it went out on now."""
        config = self.config
        sent: dict[str, list[str]] = {}
        channels = config.channels()
        if not channels:
            return sent
        for event in detect_events(facts, config.drop_share):
            if event.kind.value not in config.events:
                continue
            message = build_message(facts, event, config.base_url, config.installation)
            key = run_key(facts.run_id)
            for channel in channels:
                if self.send_once(key, event.kind.value, channel, message, facts.source, facts.run_id):
                    sent.setdefault(event.kind.value, []).append(channel.name)
        return sent

    def send_once(
        self, key: str, event: str, channel: Channel, message: Message, source: str | None = None, run_id: int | None = None
    ) -> bool:
        """Claim the notification and send it (bounded retries); True if it went out now."""
        if not self.store.claim(key, event, channel.name, source, run_id):
            logger.debug("The %s notification of %s on %s was sent before", event, key, channel.label)
            return False
        error: str | None = None
        attempt = 0
        for attempt in range(1, self.config.attempts + 1):
            try:
                channel.send(message)
            except ChannelError as exc:
                error = redact(str(exc))
            except Exception as exc:  # a bug or a library's surprise: never the crawl's failure
                error = redact(f"{type(exc).__name__}: {exc}")
            else:
                error = None
                break
            if attempt < self.config.attempts:
                logger.warning("Notification %s of %s on %s failed (attempt %d): %s", event, key, channel.label, attempt, error)
                self.sleep(self.config.backoff * attempt)
        self.store.finish(key, event, channel.name, attempt, error)
        if error is None:
            logger.info("Notification %s of %s sent on %s", event, key, channel.label)
            return True
        logger.error("Notification %s of %s on %s failed %d times, given up: %s", event, key, channel.label, attempt, error)
        return False
