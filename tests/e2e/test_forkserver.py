"""The tests' fork server (tests/forkserver.py) as a signal's sender relies on it: an ended
command's pid is not free for another process until the test has read its status, so a test
that signals a command that has just ended reaches nothing else.

CI lost a browser test's `scrapy web` to a refused connection mid-test (stop 109's dry run): the
watcher reaped each command as it ended, the client signalled by pid without asking first, and
Linux's 32768 pids wrap within minutes of the suite."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from searchcrawl.system.processes import process_alive, process_state
from tests.conftest import FORK_SERVER, ROOT, Project, run_scrapy, wait_for
from tests.forkserver import FRESH, IMPORTS_REPORT

pytestmark = pytest.mark.skipif(FORK_SERVER is None, reason="the tests' fork server is off (SEARCHCRAWL_TEST_FORKSERVER=0)")


def test_an_ended_commands_pid_stays_its_own_until_its_status_is_read() -> None:
    assert FORK_SERVER is not None
    env = {"PATH": os.environ.get("PATH", ""), "HOME": tempfile.gettempdir()}
    with tempfile.TemporaryFile("w+") as out:
        command = FORK_SERVER.popen(["version"], ROOT, env, stdout=out, stderr=subprocess.STDOUT)
        wait_for(lambda: not process_alive(command.pid), 60, "`scrapy version` to end")
        assert process_state(command.pid) == "Z"  # ended, not reaped: no other process can take its pid
        command.send_signal(signal.SIGKILL)  # reads the status first: sends nothing
        assert command.returncode == 0
        wait_for(lambda: process_state(command.pid) is None, 30, "the watcher to reap it once its status was read")
        out.seek(0)
        assert out.read().startswith("Scrapy ")


def test_a_signal_reaches_a_command_that_runs() -> None:
    """A fetch from a port that takes connections and never answers runs until it is killed."""
    assert FORK_SERVER is not None
    env = {"PATH": os.environ.get("PATH", ""), "HOME": tempfile.gettempdir()}
    with socket.create_server(("127.0.0.1", 0)) as silent, tempfile.TemporaryFile("w+") as out:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        command = FORK_SERVER.popen(["fetch", "--nolog", url], ROOT, env, stdout=out, stderr=subprocess.STDOUT)
        wait_for(lambda: process_alive(command.pid) and command.poll() is None, 30, "the fetch to run")
        command.send_signal(signal.SIGKILL)
        assert command.wait(60) == -signal.SIGKILL


# What a forked crawl may still import itself: the module read anew (FRESH), the reactor Scrapy
# installs in the command (the server never has one) and the codecs of what it reads
IMPORTED_BY_A_COMMAND = {*FRESH, "twisted.internet.reactor", "encodings.charmap", "encodings.cp1252"}


def test_a_forked_crawl_imports_nothing_the_server_could_have(project: Project, serve, tmp_path: Path) -> None:
    """Each module a command imports itself, every command imports again: a ``scrapy crawl``
    imported 88 (Scrapy's command modules, its default components, pydantic.v1 through
    itemadapter, SQLAlchemy's SQLite dialect), 0.15 s of its CPU (the median of 10 tiny crawls:
    0.67 -> 0.52 s)."""
    site_root = tmp_path / "site"
    site_root.mkdir()
    (site_root / "index.html").write_text(
        '<html><head><title>Harbour</title></head><body><main><p>Berths and tides.</p><a href="b.html">b</a></main></body></html>',
        encoding="utf-8",
    )
    (site_root / "b.html").write_text("<html><body><p>Pilots.</p></body></html>", encoding="utf-8")
    site = serve(site_root)
    name = f"forked{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    report = tmp_path / "imported.txt"

    result = run_scrapy(["crawl", name], project.env(**{IMPORTS_REPORT: str(report)}))

    assert result.returncode == 0, result.stderr[-3000:]
    imported = set(report.read_text(encoding="utf-8").split())
    assert imported - IMPORTED_BY_A_COMMAND == set()
