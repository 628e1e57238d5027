"""The plain decisions of a crawl of several local processes (searchcrawl/ops/local_fleet.py)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import pytest
from scrapy.settings import Settings

from searchcrawl.commands.crawl import Command, ExitCode, worst_exit_code
from searchcrawl.config.source import SourceError, SourceFile, load_source
from searchcrawl.ops.local_fleet import (
    PARENT_SETTING,
    RUN_SETTING,
    LocalProcesses,
    joins_live_runs,
    known_fleet,
    process_count,
    read_run,
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


def test_a_process_knows_it_was_started_by_a_crawl_and_which_run_it_joins() -> None:
    assert run_to_join(settings(**{RUN_SETTING: "7"})) == 7 and run_to_join(settings()) is None
    assert started_by_a_crawl(settings(**{PARENT_SETTING: "1234"})) and not started_by_a_crawl(settings())


def test_only_a_fleets_nodes_and_a_crawls_own_processes_join_a_live_run() -> None:
    """Regression: a crawl of two local processes started while another crawl of the source ran
    joined that crawl's run (which shared nothing with it) instead of being refused."""
    assert not joins_live_runs(settings()) and not joins_live_runs(settings(SEARCHCRAWL_PROCESSES=2))
    assert joins_live_runs(settings(SEARCHCRAWL_SHARED_CRAWL=True))
    assert joins_live_runs(settings(SEARCHCRAWL_PROCESSES=2, **{PARENT_SETTING: "1234"}))


@pytest.mark.parametrize(
    ("written", "run"),
    [(b"7\n", 7), (b"12", 12), (b"", None), (b"\n", None), (b"seven\n", None), (b"-3\n", None), (b"9" * 40, None)],
)
def test_the_run_comes_on_a_pipe_or_there_is_none(written: bytes, run: int | None) -> None:
    read, write = os.pipe()
    os.write(write, written)
    os.close(write)
    assert read_run(read) == run


def forked(others: LocalProcesses, then: Callable[[int], int]) -> None:
    """Fork ``others``; each of them exits at once with ``then(its pipe)``, never returning here."""
    pipe = others.fork()
    if pipe is not None:
        code = 99
        try:
            code = then(pipe)
        finally:
            os._exit(code)


def test_the_other_processes_are_forked_given_one_run_together_and_waited_for() -> None:
    others = LocalProcesses(2)
    forked(others, lambda pipe: 10 + (read_run(pipe) or 0))
    assert len(others.pids) == 2 and os.getpid() not in others.pids
    others.join(5)
    others.join(6)  # once: the pipes are closed after the first
    assert others.wait() == [15, 15]


def test_the_other_processes_leave_when_there_is_no_run_and_one_gone_early_is_passed_over() -> None:
    others = LocalProcesses(2)
    forked(others, lambda pipe: 10 + (read_run(pipe) or 0))
    assert others.wait() == [10, 10]  # given no run: each reads the end of its pipe
    gone = LocalProcesses(1)
    forked(gone, lambda _pipe: 3)  # ends without reading its run
    os.waitid(os.P_PID, gone.pids[0], os.WEXITED | os.WNOWAIT)  # it has ended (its pid stays ours until wait)
    gone.join(5)  # its pipe has no reader: passed over
    assert gone.wait() == [3]


@pytest.mark.parametrize(("gave_run", "code"), [(False, ExitCode.ALREADY_RUNNING), (True, ExitCode.FAILED)])
def test_a_crawl_exits_with_its_others_codes_only_when_it_gave_them_a_run(gave_run: bool, code: ExitCode) -> None:
    """Regression: refused as its spider opened (two crawls starting at once), a crawl of two
    processes exited 1 (its own 3 and its other process's 0, taken together) instead of 3."""
    command = Command()
    command.others = LocalProcesses(1)
    forked(command.others, lambda pipe: 0 if read_run(pipe) is None else ExitCode.FINISHED)
    command.gave_run = gave_run
    assert command.with_others(ExitCode.ALREADY_RUNNING) == code


def test_a_signal_reaches_the_other_processes() -> None:
    others = LocalProcesses(1)
    forked(others, lambda pipe: (read_run(pipe), 0)[1])  # waits on its pipe
    others.signal(signal.SIGTERM)
    assert others.wait() == [-signal.SIGTERM]


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
