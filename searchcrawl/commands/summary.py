"""`scrapy summary [--send] [--hours N] [--json] | --check`: the installation's daily summary (issue 60).

Prints what the last 24 hours (``--hours``) recorded: the sources crawled, what changed, what
failed and why, what waits (ops/daily_summary.py; the same as /admin/summary). With ``--send``
it also goes out by mail and webhook (the notifications' channels, SEARCHCRAWL_SMTP_* and
SEARCHCRAWL_NOTIFY_WEBHOOK_URL), once a day per channel: a scheduler runs it daily (a cron line
or a systemd timer, docs/notifications.md). ``--check`` asks Solr and Tika instead, prints what is
out of reach, sends ``solr_unreachable`` / ``tika_unreachable`` (once a day per channel) and
exits 1 when one is. Exits 1 when today's summary could not be
sent on a channel (the log says which and why).
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.settings import SETTINGS_PRIORITIES

from searchcrawl.commands import open_database
from searchcrawl.config.source import SourceError
from searchcrawl.crawl.spiderloader import SourceSpiderLoader
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.ops.daily_summary import (
    build_summary,
    send_problems,
    send_stalls,
    send_summary,
    service_problems,
    summary_message,
)
from searchcrawl.ops.notifier import Notifier, NotifyConfig
from searchcrawl.ops.stalls import stalls
from searchcrawl.ops.terminal import printable
from searchcrawl.rules.schedules import Schedule
from searchcrawl.store.database import SchemaOutdated
from searchcrawl.store.notifications import Notifications
from searchcrawl.system import paths
from searchcrawl.system.secrets import SecretError


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_LEVEL": "WARNING"}

    def syntax(self) -> str:
        return "[--send] [--hours N] [--json] | --check"

    def short_desc(self) -> str:
        return "Print (and with --send, mail and post) the daily summary: sources crawled, changes, failures, what waits"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--send", action="store_true", help="send it by mail and webhook (once a day per channel)")
        parser.add_argument("--hours", type=float, default=24.0, help="the period, in hours before now (default 24)")
        parser.add_argument("--json", action="store_true", help="print JSON")
        parser.add_argument("--check", action="store_true", help="ask Solr and Tika; tell (once a day) when one is out of reach")

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        """WARNING and above only, over the project's LOG_LEVEL (INFO): run from cron every few
        minutes, whatever this writes on stderr is mailed, so Scrapy's INFO banner would be mailed
        each time; warnings and errors (a channel that failed) still are. ``-L`` or ``-s
        LOG_LEVEL=`` on the command line still choose (the default settings' priority is below the
        project's, so ``default_settings`` alone cannot)."""
        super().process_options(args, opts)
        assert self.settings is not None
        if (self.settings.getpriority("LOG_LEVEL") or 0) <= SETTINGS_PRIORITIES["project"]:
            self.settings.set("LOG_LEVEL", "WARNING", priority="project")

    def schedules(self) -> dict[str, Schedule]:
        assert self.crawler_process is not None
        loader = self.crawler_process.spider_loader
        assert isinstance(loader, SourceSpiderLoader)  # SPIDER_LOADER_CLASS (searchcrawl/settings.py)
        found = {}
        for name in loader.list():
            try:
                schedule = loader.load(name).source.settings.crawl_schedule
            except (SourceError, KeyError):
                continue
            if schedule is not None:
                found[name] = schedule
        return found

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if args:
            raise UsageError("expected no arguments")
        if not 0 < opts.hours <= 24 * 31:
            raise UsageError("--hours: expected more than 0 and at most 744")
        try:
            config = NotifyConfig.from_settings(self.settings)
        except (ValueError, SecretError) as exc:
            raise UsageError(f"notifications: {exc}") from None
        if opts.check:
            self.check(config)
            return
        with open_database(self.settings, migrate=opts.send) as database:
            summary = build_summary(
                database, datetime.now().astimezone(), opts.hours, self.schedules(), installation=config.installation
            )
            message = summary_message(summary, config.base_url)
            if opts.json:
                print(json.dumps(message.data, indent=2, sort_keys=True))
            else:
                print(printable(message.subject))
                print()
                print("\n".join(printable(line) for line in message.text.splitlines()))
            if not opts.send:
                return
            channels = config.channels()
            if not channels:
                raise UsageError("--send: no channel (SEARCHCRAWL_SMTP_HOST and SEARCHCRAWL_NOTIFY_MAIL_TO, or webhooks)")
            send_summary(summary, Notifier(config, Notifications(database)), config.base_url)
            rows = Notifications(database).of_key(f"summary:{summary.until:%Y-%m-%d}")
            if any(row["state"] == "failed" for row in rows):  # the log says which and why
                self.exitcode = 1

    def check(self, config: NotifyConfig) -> None:
        assert self.settings is not None
        settings = self.settings
        solr = SolrIndex(
            paths.solr_url(settings), timeout=settings.getfloat("SEARCHCRAWL_NOTIFY_TIMEOUT"), auth=paths.solr_auth(settings)
        )
        problems = service_problems(
            solr, settings.get("SEARCHCRAWL_TIKA_URL") or "", settings.getfloat("SEARCHCRAWL_NOTIFY_TIMEOUT")
        )
        for problem in problems.values():
            print(printable(problem))
        if not problems:
            print("Solr" + (" and Tika answer" if settings.get("SEARCHCRAWL_TIKA_URL") else " answers"))
        # the stalled runs (ops/stalls.py, as `scrapy status` names them): a run that stalls never
        # reaches its end, so this periodic check is what tells of it
        now = datetime.now(UTC)
        stalled = []
        try:
            with open_database(settings) as database:
                stalled = stalls(
                    database, now, settings.getfloat("SEARCHCRAWL_STALL_AFTER"), settings.getfloat("SEARCHCRAWL_LEASE_SECONDS")
                )
        except SchemaOutdated as exc:  # a crawl brings it up to date; until then no run is judged
            print(printable(f"Stalled runs not checked: {exc}"))
            self.exitcode = 1
        for stall in stalled:
            print(printable(stall.text(now)))
        if not problems and not stalled:
            return
        self.exitcode = 1
        if config.channels():
            with open_database(settings, migrate=True) as database:
                notifier = Notifier(config, Notifications(database))
                send_problems(problems, notifier, datetime.now().astimezone())
                send_stalls(stalled, notifier, now)
