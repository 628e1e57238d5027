"""JvmServer's launch, with a Python program in the JVM's place (the lifecycle a dev Solr and a
Tika server share, without a JVM's seconds). On purpose: the real launchers start the real Solr
and Tika for every test that uses them (tests/conftest.py's shared servers, the wheel's
`scrapy solr start` in tests/e2e/test_wheel.py); here the process handling is tested alone."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from searchcrawl.dev.jvm_server import HOST, JvmServer, ephemeral_ports, free_port, free_port_range

# Listens on the port of its first argument, for ever.
LISTEN = """
def listen():
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", int(sys.argv[1])))
    server.listen()
    while True:
        server.accept()[0].close()
"""

# Writes the JAVA_TOOL_OPTIONS it was started with to options.txt, and listens.
PROGRAM = f"""
import os, socket, sys, time
{LISTEN}
with open("options.txt", "w") as out:
    out.write(os.environ.get("JAVA_TOOL_OPTIONS", "<unset>"))
listen()
"""


class FakeServer(JvmServer):
    kind = "fake"
    label = "fake server"

    def prepare(self) -> list[str]:
        return [sys.executable, "-c", PROGRAM, str(self.port), "fake-jvm-server"]

    def _ping(self) -> bool:
        with socket.socket() as sock:
            sock.settimeout(1)
            return sock.connect_ex((HOST, self.port)) == 0

    def _readiness_check(self) -> str:
        return "a connection"

    def _owns(self, cmdline: str) -> bool:
        return "fake-jvm-server" in cmdline


def started(tmp_path: Path, options: str) -> str:
    server = FakeServer(tmp_path, free_port())
    server.java_tool_options = options
    try:
        server.start(timeout=30)
    finally:
        server.stop()
    return (server.run_dir / "options.txt").read_text()


def test_java_tool_options_come_after_the_callers_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-Xmx2g")
    assert started(tmp_path, "-XX:+UseSerialGC") == "-Xmx2g -XX:+UseSerialGC"  # the JVM reads left to right: ours win


def test_without_java_tool_options_the_environment_is_the_callers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_TOOL_OPTIONS", raising=False)
    assert started(tmp_path, "") == "<unset>"
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-Xmx2g")
    assert started(tmp_path, "") == "-Xmx2g"


# Like Tika's server: the launched process forks the one that holds the port, which outlives it
# for a moment when the group is stopped (its SIGTERM handler takes 0.5 s).
FORKING_PROGRAM = f"""
import os, signal, socket, sys, time
{LISTEN}
if os.fork() == 0:
    signal.signal(signal.SIGTERM, lambda *_: (time.sleep(0.5), os._exit(0)))
    listen()
while True:
    time.sleep(1)
"""


class ForkingServer(FakeServer):
    def prepare(self) -> list[str]:
        return [sys.executable, "-c", FORKING_PROGRAM, str(self.port), "fake-jvm-server"]


def test_a_stop_returns_once_the_forked_process_holding_the_port_is_gone(tmp_path: Path) -> None:
    """Regression: a Tika stopped and at once started again found its port taken (CI, the test
    of Tika stopped in the middle of a crawl)."""
    server = ForkingServer(tmp_path, free_port())
    server.start(timeout=30)
    try:
        assert server.stop()
        server.start(timeout=30)  # the port is free again
    finally:
        server.stop()


@pytest.mark.listens("a port to connect to, to see which port an outgoing connection takes")
def test_free_ports_lie_below_the_ephemeral_range_that_outgoing_connections_take() -> None:
    """A SolrCloud node stopped and started again by a test could not bind its port: an outgoing
    connection had been given it meanwhile (the kernel's ephemeral range, where the kernel's own
    choice of a free port also lies)."""
    first = free_port_range(3)
    assert first + 2 < ephemeral_ports().start
    for port in range(first, first + 3):
        with socket.socket() as sock:
            sock.bind((HOST, port))
    with socket.socket() as server:  # and outgoing connections do take ports of that range
        server.bind((HOST, free_port()))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=5) as client:
            assert client.getsockname()[1] in ephemeral_ports()
