"""What the tests' own servers (tests/mail_server.py, tests/webdav_server.py) share: waiting for
one to listen, and stopping it."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from pathlib import Path


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


def stop(process: subprocess.Popen[bytes] | None) -> None:
    """Terminate, then kill after 20 s."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
