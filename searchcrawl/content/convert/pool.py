"""Converter: conversions in worker processes, each bounded in time and memory.

Parsers of untrusted documents can loop or balloon; in a worker process we can cap the address
space (RLIMIT_AS) and kill it on timeout without harming the crawler. Workers are started with
'spawn' (the crawler runs a reactor and threads, so fork is unsafe) and reused; each worker leads
its own process group so that killing it also kills helper programs (antiword, catppt) it started.

A new worker says it is ready once its parsers are imported, and a document's time limit starts
only then: starting a Python process and importing the parsers takes seconds on a loaded machine,
and that time is not the document's (it had made a first document after a restart time out).
Start-up has its own, wider limit (``START_TIMEOUT``).
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import queue
import signal
import threading
from typing import Self

from searchcrawl.content.convert.core import MAX_BYTES, ConversionError, Converted

_TARGET = "searchcrawl.content.convert.in_process:convert"
START_TIMEOUT = 120.0  # seconds a new worker may take to start and import its parsers
_READY = "ready"


def _worker_main(conn, memory_mb: int, target: str, temp_dir: str | None) -> None:
    """Worker loop: receive (mimetype, filename), then the body; reply Converted or an error."""
    import resource
    import tempfile

    os.setsid()
    if temp_dir:  # the source's temp_dir: for our temporary files and the helper programs'
        os.makedirs(temp_dir, exist_ok=True)
        os.environ["TMPDIR"] = tempfile.tempdir = temp_dir
    limit = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    module, name = target.split(":")
    func = getattr(importlib.import_module(module), name)
    conn.send(_READY)
    while True:
        try:
            mimetype, filename = conn.recv()
            body = conn.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            result = func(body, mimetype, filename)
        except ConversionError as exc:
            result = exc
        except MemoryError:
            result = ConversionError("too_large", f"over the {memory_mb} MB memory limit")
        except Exception as exc:
            result = ConversionError("corrupt", f"{type(exc).__name__}: {exc}")
        del body
        try:
            conn.send(result)
        except MemoryError:
            conn.send(ConversionError("too_large", f"over the {memory_mb} MB memory limit"))


class _Worker:
    def __init__(self, ctx, memory_mb: int, target: str, temp_dir: str | None) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(
            target=_worker_main, args=(child, memory_mb, target, temp_dir), daemon=True, name="convert-worker"
        )
        self.proc.start()
        child.close()

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the worker and its helper programs
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.kill()
        self.proc.join(5)
        self.conn.close()


class Converter:
    """Runs conversions in worker processes with a time limit and a memory limit per document, so
    that a pathological file cannot hang or exhaust the crawler. Reuses a small pool of workers;
    a worker that times out or dies is replaced. Thread-safe: callers block while all are busy."""

    def __init__(
        self,
        workers: int = 2,
        timeout: float = 60,
        memory_mb: int = 1024,
        temp_dir: str | None = None,
        *,
        max_bytes: int = MAX_BYTES,
        _target: str = _TARGET,  # tests: a "module:function" to run instead of convert
    ) -> None:
        self.concurrency = workers
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.temp_dir = temp_dir
        self.max_bytes = max_bytes
        self._target = _target
        self._ctx = multiprocessing.get_context("spawn")
        self._idle: queue.LifoQueue[_Worker | None] = queue.LifoQueue()
        self._all: set[_Worker] = set()
        self._lock = threading.Lock()
        self._closed = False
        for _ in range(workers):
            self._idle.put(None)  # a slot; the worker is started on first use

    def _acquire(self) -> _Worker:
        worker = self._idle.get()
        if self._closed:
            self._idle.put(worker)
            raise RuntimeError("Converter is closed")
        if worker is None or not worker.proc.is_alive():
            if worker is not None:
                self._discard(worker)
            worker = _Worker(self._ctx, self.memory_mb, self._target, self.temp_dir)
            with self._lock:
                self._all.add(worker)
            self._await_ready(worker)
        return worker

    def _await_ready(self, worker: _Worker) -> None:
        """Wait for a new worker's ready message; on failure its slot is freed for a fresh one."""
        try:
            if worker.conn.poll(START_TIMEOUT) and worker.conn.recv() == _READY:
                return
            error = ConversionError("timeout", f"conversion worker did not start in {START_TIMEOUT:.0f}s")
        except (EOFError, OSError):
            worker.proc.join(1)
            error = ConversionError("crashed", f"conversion worker failed to start (exit code {worker.proc.exitcode})")
        self._discard(worker)
        self._idle.put(None)
        raise error

    def _discard(self, worker: _Worker) -> None:
        worker.kill()
        with self._lock:
            self._all.discard(worker)

    def convert(self, body: bytes, mimetype: str | None = None, filename: str | None = None) -> Converted:
        """Blocking; raises ConversionError ('timeout', 'too_large' for memory, or the parser's)."""
        if len(body) > self.max_bytes:
            raise ConversionError("too_large", f"{len(body)} bytes is over the {self.max_bytes} limit")
        worker = self._acquire()
        keep = False
        try:
            try:
                worker.conn.send((mimetype, filename))
                worker.conn.send_bytes(body)
                if not worker.conn.poll(self.timeout):
                    raise ConversionError("timeout", f"conversion took over {self.timeout}s")
                result = worker.conn.recv()
            except (EOFError, OSError, BrokenPipeError):
                worker.proc.join(1)
                raise ConversionError(
                    "too_large",
                    f"conversion worker died (exit code {worker.proc.exitcode}), "
                    f"probably over the {self.memory_mb} MB memory limit",
                ) from None
            keep = True
        finally:
            if keep:
                self._idle.put(worker)
            else:
                self._discard(worker)
                self._idle.put(None)
        if isinstance(result, ConversionError):
            raise result
        return result

    def close(self) -> None:
        """Stop all workers (killed: they hold no state worth saving)."""
        self._closed = True
        with self._lock:
            workers = list(self._all)
            self._all.clear()
        for worker in workers:
            worker.kill()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
