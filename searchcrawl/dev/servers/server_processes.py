"""What the example servers of `scrapy dev` and the tests (searchcrawl/dev/servers/) share: waiting for
one to listen, and stopping it."""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar


class Stoppable(Protocol):
    def stop(self) -> object: ...


S = TypeVar("S", bound=Stoppable)
P = ParamSpec("P")
R = TypeVar("R")


def stopped_on_failure(start: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """A server's ``start`` that stops what it started when it fails (its readiness wait times
    out, a setup step fails, Ctrl-C): no server left running with its example passwords, no
    folder or link left behind. The server's ``stop`` must be safe on a half-started server."""

    @functools.wraps(start)
    def started(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return start(self, *args, **kwargs)
        except BaseException:
            self.stop()
            raise

    return started


def wait_listening(process: subprocess.Popen[bytes], port: int, log: Path, greeting: bytes = b"", timeout: float = 60) -> None:
    """Until 127.0.0.1:``port`` accepts a connection (and sends ``greeting`` first, when given);
    RuntimeError with the end of ``log`` when the process ends or the time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            if not greeting or sock.recv(100).startswith(greeting):
                return
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the server of {log.name} did not start: " + log.read_text(errors="replace")[-2000:])
        time.sleep(0.05)


def stop(process: subprocess.Popen[bytes] | None, group: bool = False) -> None:
    """Terminate, then kill after 20 s; with ``group`` (a process started with
    ``start_new_session``), its whole process group: PHP's web server leaves its workers running
    when only it is terminated."""
    if process is None:
        return

    def signal_all(sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group:
                os.killpg(process.pid, sig)
            elif process.poll() is None:
                process.send_signal(sig)

    signal_all(signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        signal_all(signal.SIGKILL)
        process.wait(20)
    if group:
        signal_all(signal.SIGKILL)  # a worker that outlived its parent


def write_htpasswd(path: Path, user: str, password: str) -> None:
    """An htpasswd file of one user, its password as Apache's ``{SHA}`` digest."""
    digest = base64.b64encode(hashlib.sha1(password.encode()).digest()).decode()  # noqa: S324 - htpasswd's {SHA}
    path.write_text(f"{user}:{{SHA}}{digest}\n")


def start_apache(folder: Path, port: int) -> subprocess.Popen[bytes]:
    """Apache httpd in the foreground with ``folder``'s httpd.conf (its output in apache.log),
    once it listens on ``port``."""
    with (folder / "apache.log").open("wb") as log:
        process = subprocess.Popen(
            ["/usr/sbin/apache2", "-DFOREGROUND", "-f", str(folder / "httpd.conf")], stdout=log, stderr=subprocess.STDOUT
        )
    wait_listening(process, port, folder / "apache.log")
    return process
