"""Crawls in containers that share a host name (host networking) but not their process ids: a
real process-id namespace (``unshare --pid``, as a container runtime makes one) holds a crawl's
run. Its pid means nothing here, so this process must not look it up: the run is live while its
heartbeat is, and dead once that is stale, never judged by whatever process of ours has its pid.
Before, both sides named their host by its name alone, and a live crawl in one container was
taken for gone by another whenever its pid was free here (leases taken, the run called dead)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from searchcrawl.store import Database
from searchcrawl.store.database import process_owner, this_host
from searchcrawl.store.models import RunState
from searchcrawl.store.runs import Runs
from tests.conftest import ROOT

CHILD = """
import sys
from searchcrawl.store import Database
from searchcrawl.store.database import process_owner
from searchcrawl.store.runs import Runs
database = Database(sys.argv[1])
Runs(database).start("namespaced")
database.close()
print(process_owner(), flush=True)
sys.stdin.read()  # alive until the test closes its stdin
"""


def in_a_pid_namespace(*args: str) -> list[str]:
    return ["unshare", "--pid", "--fork", "--mount-proc", *args]


@pytest.fixture
def namespaces() -> None:
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(in_a_pid_namespace("true"), capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"no process-id namespace can be made here: {probe.stderr.strip()[:200]}")


def test_a_run_in_another_pid_namespace_is_judged_by_its_heartbeat_not_by_its_pid(tmp_path: Path, namespaces) -> None:
    url = f"sqlite:///{tmp_path / 'documents.sqlite3'}"
    Database(url).close()  # made and migrated here
    child = subprocess.Popen(
        in_a_pid_namespace(sys.executable, "-c", CHILD, url),
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        owner = child.stdout.readline().strip()
        host, _, pid = owner.rpartition(":")
        assert host.startswith(f"{socket.gethostname()}~") and host != this_host() and owner != process_owner()
        database = Database(url)
        runs = Runs(database)
        run = runs.latest("namespaced")
        assert run is not None and run["state"] == RunState.RUNNING
        assert (run["host"], str(run["pid"])) == (host, pid)  # its pid in its namespace (1: its first process)
        assert runs.live("namespaced") and not runs.dead(run)  # its heartbeat is recent
        assert not runs.live("namespaced", stale_after=0) and runs.dead(run, stale_after=0)  # stale: dead
        database.close()
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=60)
