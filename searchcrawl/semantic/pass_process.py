"""A crawl's passes over its source's passages, in a process of their own (issues 100 and 102).

A crawl with semantic search on (crawl/extensions/passage_sync.py) starts this module as a
process (``start``) when its spider opens, and the passes run here: they load the model, bring the
source's passages up to date every ``interval`` seconds while the crawl runs (PassageIndex.sync,
the one pass `scrapy embed` runs too), and once more when the crawl asks, after its last push. The
crawl's process never loads a model nor imports its runtime.

Why a process, not a thread of the crawl's: a thread shares the crawl's interpreter lock, and the
passes' Python work (reading the documents, cutting passages, writing them) and the model's load
(about 4.5 CPU seconds with bge-small) took the crawl's process from 9.5-10 to 13.8-14.8 CPU
seconds on the Nutch Javadoc, whatever the thread's OS priority. Here they share nothing with the
crawl but Solr and the cores: the crawl's process took 9.1-11.0 CPU seconds with bge-small against
9.1-10.7 words-only in the same rounds (docs/semantic-search.md, "The crawl's speed with the
default model").

Priority: everything the process does while the crawl runs (importing the model's runtime,
loading the model, the passes) runs on one thread whose nice value is raised by ``niceness``
(system/processes.py ``lower_priority``; a thread's own on Linux, ONNX Runtime on ``threads``
threads, 1: the calling one); the main thread, which only waits for the crawl's word until then,
keeps the crawl's priority and runs the last pass, which the crawl's end waits for.

Between the crawl and the process, one socket pair (its end's descriptor the process's one
argument; nothing secret on a command line) carrying JSON objects, each with its ``kind``:

* crawl -> process: ``settings`` first (``PassSettings``: the source, the model's setting, Solr's
  address and credentials, the crawl's log level), then ``end`` with ``final_seconds`` once the
  crawl's engine has stopped: the pass under way ends after its page, then the last pass runs,
  both within ``final_seconds`` (0: none, the process leaves at once); what is left then waits
  for the next crawl or `scrapy embed`.
* process -> crawl: ``log`` (a record, for the crawl's log), ``ready`` (the model loaded and
  answered its check), ``refused`` (it did not load, or its vectors are not of a dimension the
  schema has a field for: the crawl stops, as a crawl refused at start), ``off`` (not installed
  after all: words only), ``pass`` (a pass's counters, for the crawl's stats), and ``bye`` (its
  CPU seconds) just before it exits.

What the process says is data to the crawl, never trusted (it reads hostile documents and runs a
model): a message of MESSAGE_LIMIT bytes at most, whose log records, counters and texts the crawl
bounds and makes printable (crawl/extensions/passage_sync.py ``record_of``); a message the crawl
cannot read ends the process. The process masks the secrets it alone knows
(``Forward``: the embeddings server's key, read here) and is started without the crawl's secrets
in its environment (``UNNEEDED_SECRETS``).

The process ends with the crawl: when the crawl's end of the pair closes (its exit, even by
SIGKILL) the process leaves at once, whatever a pass was doing (a document is marked done only
once its passages are written, so the next pass redoes what was cut short), and Linux sends it
SIGTERM when the crawl dies (``die_with_parent``: while the last pass runs, the main thread is
not reading the pair). Its end of the pair is not inherited by a program it runs (``channel_of``),
and the crawl's end waits for it within bounds, then kills it and shuts the pair (passage_sync.py
``_end``). Ctrl-C reaches the terminal's whole group: the process ignores SIGINT, and
the crawl, which stops gracefully, asks for the last pass as ever.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from searchcrawl.system import secrets
from searchcrawl.system.processes import die_with_parent, lower_priority

if TYPE_CHECKING:  # imported by the passes' thread, at its priority
    from searchcrawl.semantic.passage_index import PassageIndex, SyncResult

logger = logging.getLogger("searchcrawl.semantic.pass_process")  # also when run as __main__

PASS_THREADS = 1  # ONNX Runtime's threads for a crawl's passes
PASS_NICENESS = 10  # added to the passes' thread's nice value while the crawl runs
MESSAGE_LIMIT = 1 << 20  # bytes of one message at most (a log record with its traceback)
COUNTERS = ("documents", "embedded", "reused", "updated", "deleted", "skipped")  # SyncResult's, a pass's


@dataclass(frozen=True)
class PassSettings:
    """What the passes' process is told by its crawl (crawl/extensions/passage_sync.py ``pass_settings``)."""

    source: str
    embeddings: str  # SEARCHCRAWL_EMBEDDINGS
    embed_timeout: float
    interval: float  # seconds between passes while the crawl runs (0: none)
    solr_url: str
    solr_timeout: float
    solr_commit_within_ms: int
    solr_auth: tuple[str, str] | None
    parent: int  # the crawl's pid
    log_level: int = logging.INFO
    threads: int = PASS_THREADS
    niceness: int = PASS_NICENESS

    @classmethod
    def from_message(cls, message: dict[str, Any]) -> PassSettings:
        fields = {name: value for name, value in message.items() if name in cls.__dataclass_fields__}
        auth = fields.get("solr_auth")
        fields["solr_auth"] = (str(auth[0]), str(auth[1])) if isinstance(auth, list) and len(auth) == 2 else None
        if fields["solr_auth"]:
            secrets.remember(fields["solr_auth"][1])  # masked in what this process says (``Forward``)
        return cls(**fields)


class PassChannel:
    """One end of the socket pair: JSON objects, each sent whole from any thread."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._lock = threading.Lock()

    def send(self, kind: str, **fields: Any) -> None:
        """Send one message; OSError when the other end is gone."""
        data = json.dumps({"kind": kind, **fields}).encode()
        with self._lock:
            self.connection.send_bytes(data)

    def receive(self) -> dict[str, Any]:
        """The next message; EOFError once the other end has closed, OSError for a message over
        MESSAGE_LIMIT, ValueError for one that is not a JSON object."""
        data = self.connection.recv_bytes(MESSAGE_LIMIT)
        try:
            message = json.loads(data)
        except RecursionError:  # nested deeper than the parser goes
            raise ValueError("not a message") from None
        if not isinstance(message, dict):
            raise ValueError("not a message")
        return message

    def shutdown(self) -> None:
        """End the pair for both ends, waking a thread blocked in ``receive`` (EOFError), even
        while another process still holds the other end (a descendant the process forked)."""
        try:
            with socket.socket(fileno=os.dup(self.connection.fileno())) as duplicate:
                duplicate.shutdown(socket.SHUT_RDWR)
        except OSError:  # closed already
            pass

    def close(self) -> None:
        self.connection.close()


def counters_of(result: SyncResult) -> dict[str, int]:
    return {name: int(getattr(result, name)) for name in COUNTERS}


# --- the crawl's side -------------------------------------------------------------------------------


def start(settings: PassSettings) -> tuple[subprocess.Popen[bytes], PassChannel]:
    """The passes' process, started with ``settings``, and the crawl's end of its pair. Call it
    from the crawl's main thread (``die_with_parent``: Linux ends the process with the thread
    that started it). Its path is this process's (an egg scrapyd loads included); its standard
    output goes nowhere, its standard error is the crawl's (what fails before its log is set up)."""
    ours, theirs = socket.socketpair()
    environment = {name: value for name, value in os.environ.items() if name not in UNNEEDED_SECRETS}
    environment["PYTHONPATH"] = os.pathsep.join(path for path in sys.path if path)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "searchcrawl.semantic.pass_process", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=environment,
        )
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    channel = PassChannel(Connection(ours.detach()))
    try:
        channel.send("settings", **asdict(settings))
    except BaseException:  # it has left already: ended and reaped, not left behind
        process.kill()
        process.wait()
        channel.close()
        raise
    return process, channel


# the crawl's secrets the process needs none of (Solr's come through the pair; the embeddings
# server's key, embedders.py API_KEY, it reads itself), kept out of its /proc/<pid>/environ
UNNEEDED_SECRETS = frozenset(
    {
        *(name for secret in secrets.SECRET_NAMES for name in (secret, f"{secret}_FILE")),
        secrets.SOLR_USERNAME,
        f"{secrets.SOLR_USERNAME}_FILE",
    }
)


# --- the process's side -----------------------------------------------------------------------------


class Forward(logging.Handler):
    """The process's log records, sent to the crawl's log."""

    def __init__(self, channel: PassChannel) -> None:
        super().__init__()
        self.channel = channel

    def emit(self, record: logging.LogRecord) -> None:
        try:
            trace = logging.Formatter().formatException(record.exc_info) if record.exc_info else ""
            message, trace = secrets.redact(record.getMessage()), secrets.redact(trace)  # what only this process knows
            self.channel.send("log", name=record.name, level=record.levelno, message=message, traceback=trace)
        except OSError:  # the crawl is gone: the process is leaving
            pass
        except Exception:  # noqa: BLE001 - a record that cannot be formatted: said on standard error
            self.handleError(record)


class Passes:
    """The passes of one crawl: loaded and run on a thread of lowered priority while the crawl
    runs (``during_the_crawl``), the last one on the caller's (``final``)."""

    def __init__(self, settings: PassSettings, channel: PassChannel) -> None:
        self.settings, self.channel = settings, channel
        self.stopping = threading.Event()
        self.passages: PassageIndex | None = None

    def during_the_crawl(self) -> None:
        lower_priority(self.settings.niceness)  # this thread's alone: the main thread runs the last pass
        self.passages = self.load()
        if self.passages is None or self.settings.interval <= 0:
            return
        while not self.stopping.wait(self.settings.interval):
            self.one_pass(None)

    def load(self) -> PassageIndex | None:
        """The model loaded and checked (said to the crawl: ``ready``, ``refused`` or ``off``)
        and the source's passages in Solr; None when there is no model to run."""
        from searchcrawl.index.solr_client import SolrIndex
        from searchcrawl.semantic.embedders import DimensionMismatch, EmbeddingFailed, checked, embedder_from
        from searchcrawl.semantic.passage_index import PassageIndex

        settings = self.settings
        try:
            embedder = embedder_from(settings.embeddings, settings.embed_timeout, threads=settings.threads)
            if embedder is not None:
                checked(embedder)
        except EmbeddingFailed as exc:  # it may answer later: the passes will try
            logger.warning("The embedding model does not answer now (%s); passages are left for later passes", exc)
        except DimensionMismatch as exc:
            self.channel.send("refused", reason=secrets.redact(str(exc)))
            return None
        except Exception as exc:  # noqa: BLE001 - a model that does not load (a file missing, broken): refused as at start
            self.channel.send("refused", reason=secrets.redact(f"{type(exc).__name__}: {exc}"))
            return None
        if embedder is None:  # not installed after all (said once, by embedder_from)
            self.channel.send("off")
            return None
        self.channel.send("ready", model=embedder.model_id)
        index = SolrIndex(
            settings.solr_url,
            timeout=settings.solr_timeout,
            commit_within_ms=settings.solr_commit_within_ms,
            auth=settings.solr_auth,
        )
        return PassageIndex(index, embedder)

    def one_pass(self, deadline: float | None) -> None:
        if self.passages is None:
            return
        try:
            result = self.passages.sync(
                self.settings.source, self.stopping.is_set if deadline is None else lambda: False, deadline
            )
        except Exception as exc:  # noqa: BLE001 - whatever the model or Solr did, the crawl and the next passes go on
            logger.warning("Passages not brought up to date: %s: %s", type(exc).__name__, exc)
            return
        self.channel.send("pass", **counters_of(result))
        if result.documents:
            logger.info(
                "Passages of %d documents up to date: %d embedded, %d kept their vectors, %d updated in place (%.1f s)",
                result.documents,
                result.embedded,
                result.reused,
                result.updated,
                result.seconds,
            )

    def final(self, deadline: float) -> None:
        """The last pass, after the crawl's last push, until ``deadline`` (time.monotonic())."""
        from searchcrawl.index.solr_client import IndexingError

        if self.passages is None or time.monotonic() >= deadline:
            return
        try:
            self.passages.index.commit()  # the run's last documents, readable
        except IndexingError as exc:
            logger.warning("Passages not brought up to date: %s", exc)
            return
        self.one_pass(deadline)


def at_the_end(passes: Passes, worker: threading.Thread, request: dict[str, Any]) -> None:
    """The crawl has ended (``request``: its ``end``): the pass under way stops after its page,
    then the last pass runs, both within the request's ``final_seconds`` (else, or 0: neither is
    waited for, the process leaves with the pass cut short: what it did not mark, the next pass
    does)."""
    passes.stopping.set()
    seconds = request.get("final_seconds") if request.get("kind") == "end" else 0
    deadline = time.monotonic() + (float(seconds) if isinstance(seconds, (int, float)) and seconds > 0 else 0.0)
    worker.join(max(0.0, deadline - time.monotonic()))  # its page, at its priority: within the bound
    if not worker.is_alive():
        passes.final(deadline)


def leave(code: int) -> None:
    """Exit now, whatever a pass was doing (its thread is not waited for)."""
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


def channel_of(argument: str) -> PassChannel:
    """The process's end of the pair, its descriptor ``argument``: not inherited by a program it
    runs (``pass_fds`` made it inheritable), which would keep the pair open past the process."""
    descriptor = int(argument)
    os.set_inheritable(descriptor, False)
    return PassChannel(Connection(descriptor))


def main(arguments: Sequence[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the crawl decides how it stops, and says so
    channel = channel_of(arguments[0])
    try:
        settings = PassSettings.from_message(channel.receive())
    except (EOFError, OSError, ValueError, TypeError):  # the crawl is gone, or said nothing this process reads
        leave(1)
    if not die_with_parent(settings.parent):
        leave(0)  # the crawl has ended already
    root = logging.getLogger()
    root.handlers[:] = [Forward(channel)]
    root.setLevel(settings.log_level)
    logging.captureWarnings(True)  # a library's warnings too, not on a standard error nobody reads
    passes = Passes(settings, channel)
    worker = threading.Thread(target=passes.during_the_crawl, name="passes", daemon=True)
    worker.start()
    try:
        request = channel.receive()
    except (EOFError, OSError, ValueError):  # the crawl is gone (or said nonsense): no pass waits for it
        leave(0)
    at_the_end(passes, worker, request)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    try:
        channel.send("bye", cpu_seconds=round(usage.ru_utime + usage.ru_stime, 3))
    except OSError:
        pass
    leave(0)


if __name__ == "__main__":
    main(sys.argv[1:])
