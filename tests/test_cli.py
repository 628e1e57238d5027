"""The `searchcrawl` console command (searchcrawl/cli.py), without a venv: which commands it
offers, which settings it gives them. tests/e2e/test_wheel.py runs the installed one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from searchcrawl import cli, commands
from searchcrawl.system.processes import command_name
from tests.conftest import ROOT, run_scrapy


def test_it_offers_searchcrawls_commands_and_scrapys_list_only() -> None:
    own = "backup control crawl demo dev doctor embed explain explain-access explain-answer relevance report scheduler search solr status summary tika web".split()
    assert cli.command_names() == sorted([*own, "list"])


def test_outside_a_project_the_packages_settings_inside_the_projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    environ: dict[str, str] = {}
    cli.use_settings(environ)
    assert environ == {"SCRAPY_SETTINGS_MODULE": "searchcrawl.settings"}
    chosen = {"SCRAPY_SETTINGS_MODULE": "mycompany.settings"}
    cli.use_settings(chosen)
    assert chosen == {"SCRAPY_SETTINGS_MODULE": "mycompany.settings"}
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = mycompany.settings\n")  # a project above
    in_project: dict[str, str] = {}
    cli.use_settings(in_project)
    assert in_project == {}  # Scrapy reads the project's scrapy.cfg, as `scrapy` would


def test_no_command_lists_them_and_an_unknown_one_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as listed:
        cli.main([])
    assert listed.value.code == 0 and "Commands: backup, control, crawl, demo" in capsys.readouterr().out
    with pytest.raises(SystemExit) as unknown:
        cli.main(["startproject", "x"])
    assert unknown.value.code == 2 and "unknown command 'startproject'" in capsys.readouterr().err


def test_hints_name_the_command_that_works_where_they_are_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 72: `scrapy` knows searchcrawl's commands in a Scrapy project only."""
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)
    assert commands.hint_program() == "searchcrawl"
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = searchcrawl.settings\n")
    assert commands.hint_program() == "scrapy"


def test_the_command_is_found_as_scrapy_finds_it() -> None:
    assert command_name(["scrapy", "crawl", "intranet", "-s", "X=1"]) == "crawl"
    assert command_name(["searchcrawl", "--help"]) is None
    assert command_name(["scrapyd/runner.py", "crawl", "intranet"]) == "crawl"
    assert command_name(["/venv/lib/python3.11/site-packages/scrapy/__main__.py", "crawl", "x"]) == "crawl"
    assert command_name(["/venv/bin/searchcrawl", "crawl", "x"]) == "crawl"
    # another program's arguments name no command: `pytest -k crawl` keeps its collector and every command
    assert command_name(["/venv/bin/pytest", "-k", "crawl"]) is None
    assert command_name(["/venv/lib/python3.11/site-packages/pytest/__main__.py", "-k", "crawl"]) is None
    assert command_name([]) is None
    assert command_name(["/home/me/scrapy/tool.py", "crawl"]) is None  # a script in a folder of that name


@pytest.mark.parametrize(("argv", "collecting"), [(["scrapy", "crawl", "x"], False), (["scrapy", "web"], True)])
def test_a_crawl_collects_no_garbage_while_scrapy_imports_the_commands(argv: list[str], collecting: bool) -> None:
    """Off for a crawl only (its start_up_done turns it on again: tests/e2e/test_startup.py);
    a fresh interpreter, as the commands' package is imported once."""
    code = f"import sys; sys.argv = {argv!r}; import gc, searchcrawl.commands; print(gc.isenabled())"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert found.stdout.strip() == str(collecting)


@pytest.mark.parametrize(
    ("argv", "walked"),
    [
        (["scrapy", "crawl", "x"], ["crawl"]),
        (["scrapy", "web"], [name for name in cli.command_names() if name not in cli.SCRAPY_COMMANDS]),
    ],
)
def test_a_crawl_imports_its_own_command_alone(argv: list[str], walked: list[str]) -> None:
    """Scrapy imports every module of COMMANDS_MODULE (``walk_modules``) to list the commands, and
    names each after its module: a crawl is given its own alone (settings.py; 70 ms of its start,
    issue 74), any other command line all of them. A fresh interpreter: settings.py reads sys.argv."""
    code = (
        f"import sys; sys.argv = {argv!r}; from scrapy.utils.misc import walk_modules; import searchcrawl.settings as s; "
        "print(sorted(m.__name__.rsplit('.', 1)[-1] for m in walk_modules(s.COMMANDS_MODULE) if m.__name__ != 'searchcrawl.commands'))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert found.stdout.strip() == str(walked)


@pytest.mark.parametrize("command", [["list"], ["web", "--host", "127.0.0.1", "--port", "0"]])
def test_a_sources_folder_that_is_missing_is_one_line_for_list_and_web(command: list[str], tmp_path: Path) -> None:
    """Issue 91: with SEARCHCRAWL_SOURCES_DIR naming no folder, `scrapy list` printed a traceback,
    and `scrapy web` started silently, its overview then answering 500 with one. Now each says so
    in one line and exits 1 (web before it listens: the old one ran until the timeout)."""
    missing = tmp_path / "no-such-folder"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        "SEARCHCRAWL_SOURCES_DIR": str(missing),
        "SEARCHCRAWL_DATA_DIR": str(tmp_path / "data"),
    }
    done = run_scrapy(command, env, timeout=60)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and done.stdout == "", done.stderr[-2000:]
    said = f"searchcrawl: SEARCHCRAWL_SOURCES_DIR: {missing} is not a directory"
    assert [line for line in done.stderr.splitlines() if "SEARCHCRAWL_SOURCES_DIR" in line] == [said], done.stderr[-2000:]
