"""A local server in a JVM of its own: the development Solr and the Tika server are both one.

:class:`JvmServer` owns what they share: a run directory under the data dir with the JVM's log
(appended) and pid file, a lock so concurrent starts queue up, a detached launch (own session,
so Ctrl-C in the caller does not reach it and stopping it stops every process it forked), a wait
until it answers its readiness check (or exits, with the tail of its log in the error), and a stop
by SIGTERM, then SIGKILL. A subclass says how to prepare and launch it (:meth:`prepare`), how to
tell that it is ready (:meth:`_ping`) and how to recognise its own process (:meth:`_owns`).

Standard library only: it runs before (and without) any crawl machinery.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from searchcrawl.system.processes import process_alive

try:  # Serialises concurrent builds/starts on POSIX; without it we simply do not lock.
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

HOST = "127.0.0.1"
_PORTS = random.SystemRandom()  # not the global generator, which a seeded test (Hypothesis) replays


class JvmServerError(RuntimeError):
    """A local server could not be built, started or stopped; the message says why."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (for tests that start their own server)."""
    return free_port_range(1)


def ephemeral_ports() -> range:
    """The ports the kernel gives outgoing connections (Linux's ip_local_port_range)."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999  # Linux's default
    return range(low, high + 1)


def free_port_range(count: int, attempts: int = 200) -> int:
    """The first of ``count`` consecutive TCP ports on 127.0.0.1 that are free right now (a local
    SolrCloud's nodes listen on port, port + 1, ...).

    Chosen below the kernel's ephemeral range when there is room: a server stopped and started
    again must find its port free, and any outgoing connection (the tests make thousands) may be
    given a port of that range meanwhile. A SolrCloud node restarted by a test failed so once."""
    ephemeral = ephemeral_ports()
    low, high = 10_000, min(ephemeral.start, 65_536) - count
    if high <= low:  # no room below: take the kernel's choice, as before
        low = high = 0
    for _ in range(attempts):
        if high:
            first = _PORTS.randrange(low, high)
        else:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind((HOST, 0))
                first = int(sock.getsockname()[1])
        if first + count - 1 <= 65535 and all(_port_free(first + offset) for offset in range(count)):
            return first
    raise JvmServerError(f"found no {count} consecutive free ports on {HOST}")


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def default_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    return "java"


class JvmServer:
    """One local server: a data dir plus a port, files under ``<data_dir>/<kind>/<port>``."""

    #: the folder under the data dir, and the server's name in messages
    kind = "server"
    label = "server"
    error: type[JvmServerError] = JvmServerError

    def __init__(self, data_dir: str | os.PathLike[str], port: int, *, java: str | None = None) -> None:
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.port = int(port)
        self.run_dir = self.data_dir / self.kind / self._run_dir_name()
        self.log_path = self.run_dir / f"{self.kind}.log"
        self.pid_path = self.run_dir / f"{self.kind}.pid"
        self.java = java or default_java()
        self.url = f"http://{HOST}:{self.port}/"  # what start() returns; a subclass may say more
        #: JVM options for every JVM the server starts, its own forks too (JAVA_TOOL_OPTIONS, after
        #: any the caller's environment sets, so these win); empty: the JVM's defaults
        self.java_tool_options = ""
        self.start_seconds: float | None = None
        self.launched = False  # whether the last start() launched a JVM (vs found one running)
        self._proc: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(data_dir={str(self.data_dir)!r}, port={self.port})"

    def _run_dir_name(self) -> str:
        return str(self.port)

    # -- what a subclass says ---------------------------------------------------------------

    def prepare(self) -> list[str]:
        """Build or fetch what the server needs, write its files; return the JVM command line."""
        raise NotImplementedError

    def _ping(self) -> bool:
        """Whether the server answers its readiness check."""
        raise NotImplementedError

    def _readiness_check(self) -> str:
        """What ``_ping`` asks, for error messages."""
        raise NotImplementedError

    def _owns(self, cmdline: str) -> bool:
        """Whether a live process with this command line is this server (a pid may be reused)."""
        raise NotImplementedError

    def _startup_failure(self, log_tail: str) -> str:
        """The reason a JVM that exited during startup gives in its log, if it gives one."""
        return "see the log"

    # -- start / stop -----------------------------------------------------------------------

    def start(self, timeout: float = 180) -> str:
        """Start the server unless it is already running; return once it is ready.

        ``timeout`` bounds the wait for the server to come up, not :meth:`prepare` (a build or a
        download has its own, generous limit). On failure the JVM is stopped and the error quotes
        its log. Returns ``url``.
        """
        started = time.monotonic()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with locked(self.run_dir / ".lock"):
            pid = self._running_pid()
            if pid is not None:
                self.launched = False
                self._found_running()
                self._wait_ready(pid, time.monotonic() + timeout, log_offset=None)
                self.start_seconds = time.monotonic() - started
                return self.url
            self.pid_path.unlink(missing_ok=True)  # stale
            self._check_port_free()
            command = self.prepare()
            pid, log_offset = self._launch(command)
            self.launched = True
            try:
                self._wait_ready(pid, time.monotonic() + timeout, log_offset)
            except BaseException:  # includes Ctrl-C: do not leave a half-started JVM behind
                self._terminate(pid, 10)
                self.pid_path.unlink(missing_ok=True)
                raise
            self.start_seconds = time.monotonic() - started
            return self.url

    def _found_running(self) -> None:
        """Called when start() finds the server already running."""

    def stop(self, timeout: float = 30) -> bool:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout``); return whether it was running."""
        pid = self._running_pid()
        if pid is not None:
            self._terminate(pid, timeout)
        self.pid_path.unlink(missing_ok=True)
        self._proc = None
        return pid is not None

    # -- internals --------------------------------------------------------------------------

    def _launch(self, command: list[str]) -> tuple[int, int]:
        """Start the JVM detached (own session, output appended to the log).

        Returns its pid and the log offset where its output starts (for error messages).
        """
        with open(self.log_path, "ab") as log:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            log.write(f"\n=== searchcrawl: starting {self.label} on {HOST}:{self.port} at {stamp} ===\n".encode())
            log.flush()
            offset = log.tell()
            env = None
            if self.java_tool_options:
                env = dict(os.environ)
                env["JAVA_TOOL_OPTIONS"] = f"{env.get('JAVA_TOOL_OPTIONS', '')} {self.java_tool_options}".strip()
            try:
                proc = subprocess.Popen(
                    command,
                    cwd=self.run_dir,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # survives Ctrl-C in the caller; own process group
                    close_fds=True,
                )
            except OSError as exc:
                raise self.error(f"cannot run Java ({self.java}): {exc}") from exc
        self._proc = proc  # kept to reap the JVM and read its exit code
        self.pid_path.write_text(f"{proc.pid}\n", encoding="utf-8")
        return proc.pid, offset

    def _wait_ready(self, pid: int, deadline: float, log_offset: int | None) -> None:
        while True:
            if not self._alive(pid):
                code = self._proc.returncode if self._proc and self._proc.pid == pid else None
                how = f" with exit code {code}" if code is not None else ""
                tail = self._log_tail(log_offset)
                raise self.error(
                    f"{self.label} on port {self.port} exited{how} during startup ({self._startup_failure(tail)}). "
                    f"Last lines of {self.log_path}:\n{tail}"
                )
            if self._ping():
                return
            if time.monotonic() >= deadline:
                raise self.error(
                    f"{self.label} on port {self.port} did not answer {self._readiness_check()} in time. "
                    f"Last lines of {self.log_path}:\n{self._log_tail(log_offset)}"
                )
            time.sleep(0.25)

    def _ports(self) -> list[int]:
        """The ports this instance listens on."""
        return [self.port]

    def _check_port_free(self) -> None:
        for port in self._ports():
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.settimeout(1)
                in_use = sock.connect_ex((HOST, port)) == 0
            if in_use:
                raise self.error(
                    f"port {port} on {HOST} is already in use by another process "
                    f"(not the {self.label} of {self.data_dir}); stop it or choose another port"
                )

    def _terminate(self, pid: int, timeout: float) -> None:
        """SIGTERM the JVM's process group, wait, then SIGKILL; return once every process of the
        group is gone. Tika's server is a watchdog JVM and a forked one that holds the port: the
        forked one could outlive the first for a moment, and a start right after the stop found
        the port taken."""
        group = self._group_of(pid)
        self._signal(pid, group, signal.SIGTERM)
        if self._wait_dead(pid, timeout) and self._wait_group_gone(group, timeout):
            return
        self._signal(pid, group, signal.SIGKILL)
        if not (self._wait_dead(pid, 10) and self._wait_group_gone(group, 10)):
            raise self.error(f"{self.label} (pid {pid}) did not die even after SIGKILL")

    @staticmethod
    def _group_of(pid: int) -> int | None:
        """``pid``'s process group when ``pid`` leads it (our JVM, launched in a session of its
        own), else None."""
        try:
            return pid if os.getpgid(pid) == pid else None
        except ProcessLookupError:
            return None

    @staticmethod
    def _wait_group_gone(group: int | None, timeout: float) -> bool:
        """Whether every process of ``group`` has exited within ``timeout`` (exited: a zombie
        counts as gone, its sockets are closed, and init may take seconds to reap it)."""
        if group is None:
            return True
        deadline = time.monotonic() + timeout
        while group_running(group):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    @staticmethod
    def _signal(pid: int, group: int | None, sig: signal.Signals) -> None:
        """``sig`` to the whole ``group`` when ``pid`` leads one (our JVM, in a session of its
        own, and whatever it forked), else to ``pid`` alone."""
        with contextlib.suppress(ProcessLookupError):
            if group is not None:
                os.killpg(group, sig)
            else:
                os.kill(pid, sig)

    def _wait_dead(self, pid: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self._alive(pid):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return True

    def _running_pid(self) -> int | None:
        """The pid from the pidfile if that process is alive and is this server; else None."""
        try:
            pid = int(self.pid_path.read_text(encoding="utf-8").strip())
        except (FileNotFoundError, ValueError):
            return None
        if not self._alive(pid):
            return None
        line = cmdline(pid)
        if line is not None and not self._owns(line):
            return None  # pid reused by an unrelated process
        return pid

    def _alive(self, pid: int) -> bool:
        """Whether pid is running; reaps our own child so an exited JVM is not a zombie."""
        if self._proc is not None and self._proc.pid == pid:
            return self._proc.poll() is None
        return process_alive(pid)

    def _log_tail(self, offset: int | None, lines: int = 40) -> str:
        try:
            with open(self.log_path, "rb") as log:
                if offset:
                    log.seek(offset)
                text = log.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return "(no log)"
        return tail(text, lines) or "(log is empty)"


def maven_artifact(coordinates: str, path: Path, error: type[JvmServerError]) -> Path:
    """``path``, Maven Central's ``group:artifact:version[:packaging]`` copied there the first
    time (``mvn dependency:copy``, under a lock: concurrent callers wait for one download)."""
    with locked(path.parent / ".fetch.lock"):
        if not path.is_file():
            run_maven(
                ["dependency:copy", f"-Dartifact={coordinates}", f"-DoutputDirectory={path.parent}"],
                path.parent,
                f"downloading {coordinates}",
                error,
            )
            if not path.is_file():
                raise error(f"Maven reported success but {path} is missing")
    return path


def run_maven(arguments: list[str], cwd: Path, what: str, error: type[JvmServerError], env: dict[str, str] | None = None) -> None:
    """Run Maven (``mvn -B -q`` plus ``arguments``) in ``cwd``; raise ``error`` quoting its output."""
    import shutil

    mvn = shutil.which("mvn")
    if mvn is None:
        raise error(f"Maven ('mvn') is not on PATH; it is needed for {what}")
    cwd.mkdir(parents=True, exist_ok=True)
    try:
        result = subprocess.run(
            [mvn, "-B", "-q", *arguments],
            cwd=cwd,  # keep anything Maven drops in cwd away from the sources
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=1800,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise error(f"Maven timed out ({what})") from exc
    if result.returncode != 0:
        output = strip_ansi(result.stdout.decode("utf-8", "replace"))
        raise error(f"Maven failed for {what} (exit {result.returncode}):\n" + tail(output, 40))


def group_running(group: int) -> bool:
    """Whether a process of process group ``group`` is still running (not a zombie)."""
    proc = Path("/proc")
    if not proc.is_dir():  # not Linux: any member, zombies included
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="utf-8", errors="replace")
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) ": state, ppid, pgrp, ...
        if len(fields) > 2 and fields[2] == str(group) and fields[0] not in ("Z", "X"):
            return True
    return False


def cmdline(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.replace(b"\0", b" ").decode("utf-8", "replace")


def tail(text: str, lines: int) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on path (created if needed), so concurrent callers queue up."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover
        yield
        return
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
