"""Schedules and politeness: due-time logic (interval, cron, missed runs, no overlap), the
delay by time of day, and the per-source crawler settings applied to real crawls."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from searchcrawl.config.source import SourceError, SourceFile, load_source
from searchcrawl.crawl.spiderloader import spider_class_for
from searchcrawl.ops.dispatcher import Dispatcher
from searchcrawl.ops.launchers import LaunchError
from searchcrawl.rules.politeness import DelayRule, delay_at
from searchcrawl.rules.schedules import Schedule, parse_interval
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.runs import Runs
from tests.conftest import InFlight, fresh_python
from tests.sites import build_intranet

UTC = UTC


def at(day: int, hour: int, minute: int = 0) -> datetime:
    """A moment in November 2026 (the 16th is a Monday)."""
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


# --- due-time logic -------------------------------------------------------------------------------


def test_interval_is_due_at_once_then_after_the_interval() -> None:
    schedule = Schedule(interval=parse_interval("6h"))
    assert schedule.initial_mark(at(16, 9)) is None
    assert schedule.due(at(16, 9), None) == at(16, 9)
    assert schedule.due(at(16, 14, 59), at(16, 9)) is None
    assert schedule.due(at(16, 15), at(16, 9)) == at(16, 15)
    assert schedule.next_due(at(16, 10), at(16, 9)) == at(16, 15)


def test_cron_waits_for_its_next_slot_and_runs_a_missed_slot_once() -> None:
    schedule = Schedule(cron="0 3 * * *")
    mark = schedule.initial_mark(at(16, 10))
    assert mark == at(16, 3)  # first seen after today's slot: wait for tomorrow's
    assert schedule.due(at(16, 23), mark) is None
    assert schedule.next_due(at(16, 23), mark) == at(17, 3)
    assert schedule.due(at(17, 3), mark) == at(17, 3)  # exactly on the slot
    # down from the 17th to the 20th: three slots missed, one run, marked with the newest slot
    slot = schedule.due(at(20, 8), at(17, 3))
    assert slot == at(20, 3)
    assert schedule.due(at(20, 9), slot) is None


@pytest.mark.parametrize("text", ["", "6", "h", "0h", "1.5h", "6 hours", "-1h"])
def test_bad_intervals_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="expected a positive number and a unit"):
        parse_interval(text)


def load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "s.toml"
    path.write_text('seeds = ["http://127.0.0.1:1/"]\n' + text)
    return load_source(SourceFile("s", str(path), path))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('schedule = "0 25 * * *"', "key 'schedule': expected a cron expression"),
        ('refresh_interval = "soon"', "key 'refresh_interval': expected a positive number and a unit"),
        ('refresh_interval = "1h"\nschedule = "0 3 * * *"', "give either 'refresh_interval' or 'schedule', not both"),
        ('[[delay_rules]]\nhours = "8-18"\ndelay = 1.0', "key 'delay_rules.0.hours': expected 'HH:MM-HH:MM'"),
        ('[[delay_rules]]\ndays = ["monday"]\ndelay = 1.0', "key 'delay_rules.0.days.0'"),
        ('log_level = "LOUD"', "key 'log_level'"),
    ],
)
def test_schedule_and_politeness_keys_are_validated(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SourceError, match=message.replace("(", r"\(").replace(".", r"\.")):
        load(tmp_path, text)


class FakeLauncher:
    """The launcher's contract, in memory: the real one is tested against scrapyd in test_operations."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.busy: set[str] = set()
        self.down = False

    def start(self, source: str) -> str:
        if self.down:
            raise LaunchError("scrapyd at http://127.0.0.1:1: connection refused")
        self.started.append(source)
        return f"job-{len(self.started)}"

    def active(self, source: str) -> bool:
        return source in self.busy


def test_dispatcher_no_overlap_missed_runs_and_retries(tmp_path: Path) -> None:
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'd.sqlite3'}"))
    launcher = FakeLauncher()
    dispatcher = Dispatcher(table.database, launcher)
    schedules = {"hourly": Schedule(interval=timedelta(hours=1)), "nightly": Schedule(cron="0 3 * * *")}

    assert [d.action for d in dispatcher.tick(schedules, at(16, 10))] == ["started"]  # hourly only
    assert launcher.started == ["hourly"]
    assert dispatcher.tick(schedules, at(16, 10, 30)) == []  # not due yet
    # due again while its job still runs: not started; starts once the job is over
    launcher.busy.add("hourly")
    assert [(d.source, d.action) for d in dispatcher.tick(schedules, at(16, 11, 5))] == [("hourly", "skipped")]
    launcher.busy.clear()
    assert [d.action for d in dispatcher.tick(schedules, at(16, 11, 6))] == ["started"]
    # a run in the runs table (e.g. started by hand) counts as running too
    Runs(table.database).start("nightly")
    decisions = dispatcher.tick(schedules, at(17, 3, 1))
    assert ("nightly", "skipped") in [(d.source, d.action) for d in decisions]
    assert launcher.started.count("nightly") == 0
    Runs(table.database).end(Runs(table.database).latest("nightly")["id"], "finished", {}, "done")
    # the skipped 03:00 slot is not made up; the scheduler was down for three nights: one run
    assert "nightly" not in [d.source for d in dispatcher.tick(schedules, at(17, 4))]
    launcher.started.clear()
    dispatcher.tick(schedules, at(21, 9))
    assert launcher.started == ["hourly", "nightly"]
    dispatcher.tick(schedules, at(21, 9, 1))
    assert launcher.started == ["hourly", "nightly"]
    # scrapyd down: nothing marked, the next tick tries again
    launcher.down = True
    assert [d.action for d in dispatcher.tick(schedules, at(21, 10, 30))] == ["failed"]
    launcher.down = False
    assert [d.action for d in dispatcher.tick(schedules, at(21, 10, 31))] == ["started"]
    lines = dispatcher.describe(schedules, at(21, 11))
    assert lines[1].startswith("nightly: cron '0 3 * * *'; last started") and "next due" in lines[1]
    table.database.close()


# --- politeness -------------------------------------------------------------------------------------


def test_delay_by_time_of_day_and_day_of_week() -> None:
    rules = [
        DelayRule(days=["mon", "tue", "wed", "thu", "fri"], hours="08:00-18:00", delay=5.0),
        DelayRule(days=["fri"], hours="22:00-06:00", delay=0.1),  # Friday night into Saturday
        DelayRule(days=["sat", "sun"], delay=0.5),
    ]
    assert delay_at(at(16, 9), 1.0, rules) == 5.0  # Monday, office hours
    assert delay_at(at(16, 18), 1.0, rules) == 1.0  # Monday 18:00: the range has ended
    assert delay_at(at(16, 7, 59), 1.0, rules) == 1.0
    assert delay_at(at(20, 23), 1.0, rules) == 0.1  # Friday night
    assert delay_at(at(21, 5, 59), 1.0, rules) == 0.1  # Saturday morning: Friday's night rule
    assert delay_at(at(21, 6), 1.0, rules) == 0.5  # then the weekend rule
    assert delay_at(at(19, 23), 1.0, rules) == 1.0  # Thursday night: no rule


def test_source_keys_become_crawler_settings(tmp_path: Path) -> None:
    source = load(
        tmp_path,
        "\n".join(
            [
                "delay = 2.5",
                "concurrent_requests = 4",
                "concurrent_per_site = 2",
                "concurrent_sites = 3",
                "autothrottle = true",
                "autothrottle_target = 1.5",
                "download_timeout = 12.0",
                f'log_file = "{tmp_path / "s.log"}"',
                'log_level = "WARNING"',
                f'temp_dir = "{tmp_path / "tmp"}"',
            ]
        ),
    )
    settings = spider_class_for(source).custom_settings
    assert settings["DOWNLOAD_DELAY"] == 2.5
    assert settings["CONCURRENT_REQUESTS"] == 4
    assert settings["CONCURRENT_REQUESTS_PER_DOMAIN"] == 2
    assert settings["SEARCHCRAWL_MAX_SITES"] == 3
    assert settings["AUTOTHROTTLE_ENABLED"] is True and settings["AUTOTHROTTLE_TARGET_CONCURRENCY"] == 1.5
    assert settings["DOWNLOAD_TIMEOUT"] == 12.0
    assert settings["LOG_FILE"] == str(tmp_path / "s.log") and settings["LOG_LEVEL"] == "WARNING"
    assert settings["SEARCHCRAWL_TEMP_DIR"] == str(tmp_path / "tmp")
    assert "DOWNLOAD_DELAY" not in spider_class_for(load(tmp_path, "")).custom_settings  # unset keys: defaults


def serve_three_sites(tmp_path: Path, serve) -> list:  # type: ignore[no-untyped-def]
    tracker = InFlight()
    sites = []
    for number, host in enumerate(["127.0.0.1", "127.0.0.2", "127.0.0.3"]):
        root = tmp_path / f"site{number}"
        root.mkdir()
        build_intranet(root, sections=2, per_section=3)
        sites.append(serve(root, host=host, in_flight=tracker, slow=0.05))
    return sites


def test_loading_a_source_without_cron_imports_no_croniter() -> None:
    """croniter runs `file -b` on the Python executable when imported (its 32-bit check): a
    process every crawl paid, with or without a cron schedule. Only cron schedules import it."""
    code = (
        "import sys\n"
        "from searchcrawl.config.source import SourceSettings\n"
        "from searchcrawl.rules.schedules import Schedule, parse_interval\n"
        "SourceSettings.model_validate({'seeds': ['http://h.test/'], 'refresh_interval': '6h'})\n"
        "print('croniter' in sys.modules)\n"
        "SourceSettings.model_validate({'seeds': ['http://h.test/'], 'schedule': '0 3 * * *'})\n"
        "print('croniter' in sys.modules)\n"
    )
    assert fresh_python(code) == ["False", "True"]
