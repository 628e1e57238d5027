"""A fork server for the tests' ``scrapy`` commands.

A ``scrapy crawl`` of a few pages spends most of its CPU before its first request: importing
Scrapy, Twisted, SQLAlchemy, pydantic and searchcrawl (and Scrapy's deprecation shims walking
the stack with ``inspect``), about 1.5 s of a 2-core machine's CPU per command, and the suite
runs hundreds. So each pytest process keeps one server process that has imported all of it
once; a command is a fork of that server running ``scrapy.cmdline.execute`` with the command's
own arguments, environment, working directory and standard streams, exactly what
``python -m scrapy`` runs after its imports. The fork is a real process of its own (its pid can
be signalled and SIGKILLed, its children are its own), with a fresh import of
``searchcrawl.settings`` (which reads the environment). Nothing else is shared: the server never
opens a database, a socket to a server or a reactor.

``run()`` and ``popen()`` stand in for ``subprocess.run`` and ``subprocess.Popen`` of
``[sys.executable, "-m", "scrapy", *args]`` (with ``console=True``, of the console command
``searchcrawl *args``, searchcrawl/cli.py: the same commands outside a Scrapy project); tests of
how a fresh interpreter starts (a wheel, the deploy scripts) keep running real ``python`` processes.

Protocol (a UNIX socket per command): the client sends a JSON request with its stdin, stdout and
stderr descriptors (SCM_RIGHTS); a watcher process forked by the server forks the command,
answers its pid, waits for it and answers its exit status, so the server keeps no threads and
never waits itself.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import IO, Any

PRELOAD = (
    "scrapy.cmdline",
    "scrapy.crawler",
    "scrapy.core.engine",
    "scrapy.core.downloader.handlers.http11",
    "scrapy.statscollectors",
    "itemadapter",  # Scrapy's items; it imports pydantic.v1 (27 modules, 0.09 s)
    "sqlalchemy.dialects.sqlite",  # the document table's dialect, loaded when an engine is made
    "alembic.command",
    "alembic.config",
    "pysolr",
    # `scrapy web`'s server: what uvicorn and Starlette import as they start serving
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.http.h11_impl",
    "uvicorn.protocols.websockets.auto",
    "uvicorn.lifespan.on",
    "uvicorn.loops.auto",
    "uvicorn.loops.asyncio",
    "anyio._backends._asyncio",
    "jinja2.ext",
)
# Scrapy's default components, named in these settings of scrapy.settings.default_settings: each
# crawl builds them (their modules preloaded: a command imports none of them itself)
SCRAPY_COMPONENTS = ("DOWNLOADER_MIDDLEWARES_BASE", "SPIDER_MIDDLEWARES_BASE", "EXTENSIONS_BASE", "ITEM_PIPELINES_BASE")
# Scrapy's command modules: ``scrapy.cmdline`` imports every one of them to find the command asked
COMMAND_PACKAGES = ("scrapy.commands",)
# a command's environment variable: the file where the command writes the modules it imported
# itself when it ends, one a line (what the preload missed: tests/e2e/test_forkserver.py)
IMPORTS_REPORT = "FORKSERVER_IMPORTS_REPORT"
FRESH = ("searchcrawl.settings",)  # reads the environment when imported: imported anew by each command
_HEADER = struct.Struct("!I")


# --- the server ---------------------------------------------------------------------------------


def preloaded_modules() -> list[str]:
    """What the server imports before it forks (but searchcrawl's own modules): PRELOAD, the
    modules of Scrapy's default components and Scrapy's command modules. What a command imports
    itself, every command pays for again: 88 modules and 0.2-0.3 s of CPU a ``scrapy crawl``
    before these were added (tests/e2e/test_forkserver.py holds a crawl to none but FRESH)."""
    from scrapy.settings import default_settings
    from scrapy.utils.misc import walk_modules_iter

    names = list(PRELOAD)
    for setting in SCRAPY_COMPONENTS:
        names.extend(path.rpartition(".")[0] for path in getattr(default_settings, setting))
    for package in COMMAND_PACKAGES:
        names.extend(module.__name__ for module in walk_modules_iter(package))
    return list(dict.fromkeys(names))


def _preload(root: Path) -> None:
    for name in preloaded_modules():
        importlib.import_module(name)
    for path in sorted((root / "searchcrawl").rglob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        if module in FRESH or ".migrations." in module or module.startswith("searchcrawl.dev.demo_site"):
            continue
        importlib.import_module(module)
    for name in FRESH:
        sys.modules.pop(name, None)


def _receive(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _flags, _address = socket.recv_fds(connection, 1 << 20, 3)
    size = _HEADER.unpack(data[: _HEADER.size])[0]
    body = data[_HEADER.size :]
    while len(body) < size:
        chunk = connection.recv(size - len(body))
        if not chunk:
            raise EOFError("the client went away")
        body += chunk
    return json.loads(body), list(fds)


def _command(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked command: become `python -m scrapy <args>` (or the console command `searchcrawl
    <args>`) and never return."""
    code = 1
    loaded = set(sys.modules)
    try:
        for target, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, target)
        for fd in fds:
            os.close(fd)
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the command's own streams, for its life
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        sys.argv = ["searchcrawl" if request.get("console") else "scrapy", *request["args"]]
        for entry in reversed([e for e in request["env"].get("PYTHONPATH", "").split(os.pathsep) if e]):
            if entry not in sys.path:
                sys.path.insert(1, entry)  # after the working directory, as PYTHONPATH goes
        from scrapy.cmdline import execute

        from searchcrawl.cli import main

        try:
            if request.get("console"):
                main(request["args"])  # `searchcrawl ARGS`: Scrapy's execute, with the package's settings
            else:
                execute(sys.argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - the command's crash, reported as python would
        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
            if request["env"].get(IMPORTS_REPORT):
                imported = sorted(set(sys.modules) - loaded)
                Path(request["env"][IMPORTS_REPORT]).write_text("\n".join(imported), encoding="utf-8")
        os._exit(code)


def _watch(connection: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """In the watcher: fork the command, answer its pid, then its exit status; reap it only once
    the client has closed the connection (it has read the status, or it is gone). Until then the
    ended command is a zombie whose pid no other process can take: the client signals the pid only
    while it has not read the status (``ForkedScrapy.send_signal``), so a signal sent after the
    command ended never reaches another process. Reaped at once, a pid was free for reuse, and
    Linux's 32768 pids wrap within minutes of the suite: a test's SIGKILL to a crawl that had
    just ended could reach another worker's `scrapy web`."""
    pid = os.fork()
    if pid == 0:
        connection.close()
        _command(request, fds)
    for fd in fds:
        os.close(fd)
    connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # not reaped: the pid stays its own
    status = ended.si_status if ended.si_code == os.CLD_EXITED else -ended.si_status
    with contextlib.suppress(OSError):
        connection.sendall(json.dumps({"status": status}).encode() + b"\n")
        while connection.recv(4096):  # until the client closes
            pass
    os.waitpid(pid, 0)
    os._exit(0)


def serve(path: str, root: str) -> None:
    _preload(Path(root))
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # watchers are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    while True:
        connection, _ = listener.accept()
        try:
            request, fds = _receive(connection)
        except Exception:  # noqa: BLE001 - a client that went away: the next one is served
            connection.close()
            continue
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                _watch(connection, request, fds)
            finally:
                os._exit(1)
        for fd in fds:
            os.close(fd)
        connection.close()


# --- the client ---------------------------------------------------------------------------------


class ForkedScrapy:
    """A command forked by the server, used like a ``subprocess.Popen``."""

    def __init__(self, connection: socket.socket, args: list[str], stdout: IO[str] | None) -> None:
        self.args = args
        self.connection = connection
        self.buffer = b""
        self.stdout = stdout
        self.stderr: IO[str] | None = None
        self.returncode: int | None = None
        self.pid = int(json.loads(self._line(None) or "{}")["pid"])

    def _line(self, timeout: float | None) -> str | None:
        """The server's next line; "" when it closed the connection; None past ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _w, _x = select.select([self.connection], [], [], left)
            if not readable:
                return None
            chunk = self.connection.recv(4096)
            if not chunk:
                return ""
            self.buffer += chunk
        line, _nl, self.buffer = self.buffer.partition(b"\n")
        return line.decode()

    def poll(self) -> int | None:
        if self.returncode is None:
            line = self._line(0)
            if line is not None:
                self._ended(line)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            line = self._line(timeout)
            if line is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self._ended(line)
        assert self.returncode is not None
        return self.returncode

    def _ended(self, line: str) -> None:
        self.returncode = int(json.loads(line)["status"]) if line else -signal.SIGKILL
        self.connection.close()

    def communicate(self, timeout: float | None = None) -> tuple[str | None, None]:
        output: list[str] = []
        if self.stdout is not None:
            reader = threading.Thread(target=lambda: output.append(self.stdout.read()), daemon=True)  # type: ignore[union-attr]
            reader.start()
            reader.join(timeout)
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        self.wait(timeout)
        return (output[0] if output else None), None

    def send_signal(self, signum: int) -> None:
        """``signum`` to the command unless it is known to have ended: until its status is read
        the watcher has not reaped it, so the pid is still its own (subprocess.Popen polls first too)."""
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def __enter__(self) -> ForkedScrapy:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.stdout is not None:
            self.stdout.close()
        self.wait()


class ForkServer:
    """The pytest process's server (started on first use, stopped at exit)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder: Path | None = None  # made when the server starts: most pytest processes never start one
        self.path = ""
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.stop()  # a server that died: its socket and folder go
        self.folder = Path(tempfile.mkdtemp(prefix="searchcrawl-forkserver-"))
        self.path = str(self.folder / "socket")
        env = dict(os.environ, PYTHONPATH=str(self.root))
        self.process = subprocess.Popen(
            [sys.executable, "-c", f"from tests.forkserver import serve; serve({self.path!r}, {str(self.root)!r})"],
            cwd=self.root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the fork server did not start (exit {self.process.wait()})")
        atexit.register(self.stop)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def spawn(
        self,
        args: list[str],
        cwd: Path,
        env: dict[str, str],
        stdin: int,
        stdout: int,
        stderr: int,
        out: IO[str] | None = None,
        console: bool = False,
    ) -> ForkedScrapy:
        if self.process is None or self.process.poll() is not None:
            self.start()
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(self.path)
        body = json.dumps({"args": args, "cwd": str(cwd), "env": env, "console": console}).encode()
        socket.send_fds(connection, [_HEADER.pack(len(body)) + body], [stdin, stdout, stderr])
        return ForkedScrapy(connection, args, out)

    def popen(
        self, args: list[str], cwd: Path, env: dict[str, str], stdout: Any = None, stderr: Any = None, console: bool = False
    ) -> ForkedScrapy:
        """``subprocess.Popen([python, -m, scrapy, *args], stdout=..., stderr=..., text=True)``:
        stdout PIPE (a text stream to read) or a file; stderr STDOUT, a file, or inherited.
        ``console``: the console command ``searchcrawl *args`` instead."""
        null = os.open(os.devnull, os.O_RDONLY)
        close = [null]
        pipe_out: IO[str] | None = None
        try:
            if stdout == subprocess.PIPE:
                read, write = os.pipe()
                pipe_out = os.fdopen(read, "r")
                out_fd = write
                close.append(write)
            elif stdout is None:
                out_fd = 1
            else:
                out_fd = stdout.fileno()
            err_fd = out_fd if stderr == subprocess.STDOUT else (2 if stderr is None else stderr.fileno())
            return self.spawn(args, cwd, env, null, out_fd, err_fd, pipe_out, console)
        finally:
            for fd in close:
                os.close(fd)

    def run(
        self, args: list[str], cwd: Path, env: dict[str, str], timeout: float | None = None, console: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """``subprocess.run([python, -m, scrapy, *args], capture_output=True, text=True, timeout=...)``
        (``console``: of ``searchcrawl *args``)."""
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            command = self.popen(args, cwd, env, stdout=out, stderr=err, console=console)
            started = time.monotonic()
            try:
                command.wait(timeout)
            except subprocess.TimeoutExpired:
                command.kill()
                command.wait()
                raise subprocess.TimeoutExpired(args, timeout or time.monotonic() - started) from None
            out.seek(0)
            err.seek(0)
            return subprocess.CompletedProcess(args, command.wait(), out.read(), err.read())
