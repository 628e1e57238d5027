"""The plain decisions of a crawl of several local processes (searchcrawl/ops/local_fleet.py)."""

from __future__ import annotations

import importlib.machinery
import os
import sys
import types

import pytest
from scrapy.settings import Settings

from searchcrawl.commands.crawl import ExitCode, worst_exit_code
from searchcrawl.config.source import SourceError, SourceFile, load_source
from searchcrawl.ops.local_fleet import (
    PARENT_SETTING,
    RUN_SETTING,
    command_line,
    entry_module,
    known_fleet,
    process_count,
    processes_of,
    run_to_join,
    shared_crawl,
    started_by_a_crawl,
    usable_cores,
)
from searchcrawl.store import Database
from searchcrawl.store.runs import RunEnded, Runs


def settings(**values: object) -> Settings:
    result = Settings({"SEARCHCRAWL_PROCESSES": 1, "SEARCHCRAWL_SHARED_CRAWL": False})
    result.setdict(values, priority="spider")
    return result


def test_auto_is_one_process_per_usable_core() -> None:
    assert usable_cores() == len(os.sched_getaffinity(0))
    assert process_count("auto") == process_count(" AUTO ") == usable_cores()
    assert (process_count(3), process_count("2"), process_count(0)) == (3, 2, 1)


def test_several_processes_make_a_shared_crawl_whose_fleet_is_known_unless_machines_join() -> None:
    assert not shared_crawl(settings()) and known_fleet(settings()) is None
    assert shared_crawl(settings(SEARCHCRAWL_PROCESSES=2)) and known_fleet(settings(SEARCHCRAWL_PROCESSES=2)) == 2
    # `shared = true` too: other machines may join, so the number of processes is not known
    both = settings(SEARCHCRAWL_PROCESSES=2, SEARCHCRAWL_SHARED_CRAWL=True)
    assert shared_crawl(both) and known_fleet(both) is None
    assert shared_crawl(settings(SEARCHCRAWL_SHARED_CRAWL=True)) and known_fleet(settings(SEARCHCRAWL_SHARED_CRAWL=True)) is None


def test_the_other_processes_get_the_same_arguments_and_command_line_settings() -> None:
    given = settings(SEARCHCRAWL_PROCESSES="auto", DOWNLOAD_DELAY=0.5)  # the source's own: they load it too
    given.set("CONCURRENT_REQUESTS", 4, priority="cmdline")
    given.set("LOG_FILE", "/tmp/crawl.log", priority="cmdline")
    given.set("ITEM_PIPELINES", {"a.B": 1}, priority="cmdline")
    line = command_line("handbook", {"recrawl": "force"}, given, parent=1234, run=7)
    assert line[:5] == [sys.executable, "-m", "scrapy", "crawl", "handbook"]
    text = " ".join(line)
    assert "-a recrawl=force" in text
    assert "-s CONCURRENT_REQUESTS=4" in text and "-s LOG_FILE=/tmp/crawl.log" in text
    assert '-s ITEM_PIPELINES={"a.B": 1}' in text
    assert "DOWNLOAD_DELAY" not in text  # not from the command line: from the source file
    assert f"-s SEARCHCRAWL_PROCESSES={usable_cores()} -s {PARENT_SETTING}=1234 -s {RUN_SETTING}=7" in text
    assert run_to_join(settings(**{RUN_SETTING: "7"})) == 7 and run_to_join(given) is None
    assert started_by_a_crawl(settings(**{PARENT_SETTING: "1234"})) and not started_by_a_crawl(given)


def test_under_scrapyd_the_other_processes_start_as_scrapyds_runner(monkeypatch) -> None:
    """The runner activates the project's egg, where the sources are: `python -m scrapy` would
    not find them (tests/e2e/test_operations.py runs such a crawl under a real scrapyd)."""
    runner = types.ModuleType("__main__")
    runner.__spec__ = importlib.machinery.ModuleSpec("scrapyd.runner", None)
    monkeypatch.setitem(sys.modules, "__main__", runner)
    assert entry_module() == "scrapyd.runner"
    assert command_line("handbook", {}, settings(), parent=1, run=1)[:4] == [sys.executable, "-m", "scrapyd.runner", "crawl"]
    assert processes_of(settings(**{PARENT_SETTING: "1234", "SEARCHCRAWL_PROCESSES": "2"})) == 2


def test_the_crawl_exits_with_the_worst_of_its_processes_codes() -> None:
    assert worst_exit_code([ExitCode.FINISHED, ExitCode.FINISHED]) == ExitCode.FINISHED
    assert worst_exit_code([ExitCode.FINISHED, ExitCode.NOT_INDEXED]) == ExitCode.NOT_INDEXED
    assert worst_exit_code([ExitCode.NOT_INDEXED, ExitCode.FAILED, ExitCode.FINISHED]) == ExitCode.FAILED
    assert worst_exit_code([ExitCode.FINISHED, -9]) == ExitCode.FINISHED  # the others took its URLs back
    assert worst_exit_code([ExitCode.FINISHED, ExitCode.BROKEN_SOURCE]) == ExitCode.FAILED


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('seeds = ["https://a.test/"]\nprocesses = 0\n', "key 'processes'"),
        ('seeds = ["https://a.test/"]\nprocesses = "many"\n', "key 'processes'"),
        ('seeds = ["https://a.test/"]\nprocesses = 2\nautothrottle = true\n', "drop one of 'processes' and 'autothrottle'"),
        ('type = "files"\nprocesses = 2\n[files]\nroots = ["/srv"]\n', "processes"),
    ],
)
def test_broken_processes_keys(tmp_path, text: str, words: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(SourceError) as broken:
        load_source(SourceFile("s", str(path), path))
    assert words in str(broken.value)


def test_processes_auto_is_accepted(tmp_path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('seeds = ["https://a.test/"]\nprocesses = "auto"\n')
    assert load_source(SourceFile("s", str(path), path)).settings.processes == "auto"


def test_a_process_started_by_a_crawl_joins_its_run_only_while_it_runs(tmp_path) -> None:
    """Regression: a process that came up after a small site's run had ended started a run of its
    own, and crawled the whole site again."""
    runs = Runs(Database(f"sqlite:///{tmp_path / 'runs.sqlite3'}"))
    first = runs.start("handbook", owner="h:1")
    joined = runs.start("handbook", allow_shared=True, owner="h:2", join_run=first.id)
    assert joined.id == first.id and joined.others == ("h:1",)
    runs.end(first.id, "finished", {}, "finished")
    with pytest.raises(RunEnded, match=f"run {first.id} of handbook has ended"):
        runs.start("handbook", allow_shared=True, owner="h:3", join_run=first.id)
    assert runs.latest("handbook")["id"] == first.id  # no run of its own
