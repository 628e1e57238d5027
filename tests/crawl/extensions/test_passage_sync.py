"""A crawl's passes keep off the crawl's CPU (issues 100 and 102: pages a second with the default
model within 10% of words-only, no CPU of the model on the crawl's path): they run in a process of
their own (semantic/pass_process.py), its working thread at a lower OS priority, ONNX Runtime on
one thread; the crawl's process checks the setting without loading the model, hands the process
what it needs through a pipe (nothing secret on its command line), and the process leaves when
the crawl does. Here without Solr or a model (tests/e2e/test_semantic_crawls.py crawls with one)."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings

from searchcrawl.crawl.extensions import passage_sync
from searchcrawl.crawl.extensions.passage_sync import (
    LOG_DROPPED,
    MODEL_REFUSED,
    TEXT_LIMIT,
    PassageSync,
    log_level,
    pass_settings,
    record_of,
)
from searchcrawl.semantic.pass_process import (
    PASS_NICENESS,
    PASS_THREADS,
    Forward,
    PassChannel,
    Passes,
    PassSettings,
    at_the_end,
    channel_of,
    start,
)
from searchcrawl.system import secrets
from searchcrawl.system.processes import lower_priority
from searchcrawl.system.secrets import SECRET_NAME
from tests.conftest import fresh_python

UNREACHABLE_MODEL = "openai:http://127.0.0.1:9/v1?model=m&dimension=384"  # made without a request; never answers


def test_the_passes_thread_alone_is_lowered() -> None:
    """Linux keeps a nice value a thread: the passes' thread is lowered, the one that started it
    (the process's main thread, which runs the last pass) is not."""
    seen: dict[str, int] = {}

    def passes() -> None:
        tid = threading.get_native_id()
        before = os.getpriority(os.PRIO_PROCESS, tid)
        assert lower_priority(PASS_NICENESS)
        seen["before"], seen["after"] = before, os.getpriority(os.PRIO_PROCESS, tid)

    main = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    thread = threading.Thread(target=passes)
    thread.start()
    thread.join()
    assert seen["after"] == min(19, seen["before"] + PASS_NICENESS)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == main  # the main thread keeps its own


def test_a_refused_priority_is_no_failure(monkeypatch) -> None:
    def refused(*_args: object) -> None:
        raise PermissionError("not allowed")

    monkeypatch.setattr(os, "setpriority", refused)
    assert lower_priority(PASS_NICENESS) is False


class Stats:
    def __init__(self) -> None:
        self.values: dict[str, object] = {}

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = int(self.values.get(key, 0)) + count  # type: ignore[call-overload]

    def set_value(self, key: str, value: object) -> None:
        self.values[key] = value


class Crawler:
    """What the extension reads of a crawler: its settings, spider class (the source), stats, signals."""

    def __init__(self, settings: dict[str, object]) -> None:
        self.settings = Settings({"SEARCHCRAWL_EMBED_TIMEOUT": 30, "SEARCHCRAWL_EMBED_INTERVAL": 30, **settings})
        self.spidercls = type("Spider", (), {"source": type("Source", (), {"name": "intranet"})()})
        self.stats = Stats()
        self.signals = type("Signals", (), {"connect": lambda *_args, **_kwargs: None})()
        self.engine = None


def test_the_crawls_process_checks_the_model_without_loading_it() -> None:
    """The extension is built (the setting checked) and no model's runtime is imported: the
    process that loads it is the passes' own."""
    lines = fresh_python(
        "import sys\n"
        "from tests.crawl.extensions.test_passage_sync import Crawler\n"
        "from searchcrawl.crawl.extensions.passage_sync import PassageSync\n"
        "extension = PassageSync.from_crawler(Crawler({'SEARCHCRAWL_EMBEDDINGS': 'onnx:/nowhere/model.onnx'}))\n"
        "print(extension.settings.embeddings, extension.settings.threads)\n"
        "print(sorted(name for name in ('onnxruntime', 'tokenizers', 'numpy') if name in sys.modules))\n"
    )
    assert lines == [f"onnx:/nowhere/model.onnx {PASS_THREADS}", "[]"] and PASS_THREADS == 1


def test_without_an_installed_model_or_a_setting_the_crawl_runs_words_only(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no model's jar there
    for setting in ("bge-small", ""):
        with pytest.raises(NotConfigured):
            PassageSync.from_crawler(Crawler({"SEARCHCRAWL_EMBEDDINGS": setting}))  # type: ignore[arg-type]


def test_the_passes_are_told_solr_as_the_crawl_reaches_it(monkeypatch) -> None:
    for name in (
        "SEARCHCRAWL_SOLR_USERNAME",
        "SEARCHCRAWL_SOLR_PASSWORD",
        "SEARCHCRAWL_SOLR_USERNAME_FILE",
        "SEARCHCRAWL_SOLR_PASSWORD_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(
        {
            "SOLR_URL": "http://crawler:s3cret@127.0.0.1:8983/solr/core",
            "SEARCHCRAWL_EMBEDDINGS": " bge-small ",
            "SEARCHCRAWL_EMBED_TIMEOUT": 30,
            "SEARCHCRAWL_EMBED_INTERVAL": 5,
            "SEARCHCRAWL_SOLR_TIMEOUT": 60,
            "SEARCHCRAWL_SOLR_COMMIT_WITHIN": 2000,
            "LOG_LEVEL": "WARNING",
        }
    )
    told = pass_settings(settings, "intranet", 1234)
    assert (told.solr_url, told.solr_auth, told.embeddings, told.interval) == (
        "http://127.0.0.1:8983/solr/core",
        ("crawler", "s3cret"),
        "bge-small",
        5.0,
    )
    assert (told.parent, told.log_level, told.threads, told.niceness) == (1234, logging.WARNING, 1, PASS_NICENESS)
    assert log_level(Settings({"LOG_LEVEL": 10})) == logging.DEBUG and log_level(Settings({"LOG_LEVEL": "x"})) == logging.INFO


def started_settings() -> PassSettings:
    return PassSettings(
        source="intranet",
        embeddings=UNREACHABLE_MODEL,
        embed_timeout=5,
        interval=0,
        solr_url="http://127.0.0.1:9/solr/none",
        solr_timeout=5,
        solr_commit_within_ms=2000,
        solr_auth=("crawler", "s3cret-of-solr"),
        parent=os.getpid(),
    )


def started(tmp_path: Path, **changes: object) -> tuple[object, PassChannel]:
    return start(PassSettings(**{**started_settings().__dict__, **changes}))


def said_until(channel: PassChannel, kind: str) -> list[dict[str, object]]:
    messages = [channel.receive()]
    while messages[-1]["kind"] != kind:
        messages.append(channel.receive())
    return messages


def test_the_passes_process_is_told_through_its_pipe_and_leaves_when_the_crawl_does(tmp_path) -> None:
    """Its credentials never on its command line; its log reaches the crawl (here: the model does
    not answer, said, and the passes wait for it); the crawl's end of the pipe closed (the crawl
    gone, even by SIGKILL), it leaves at once."""
    process, channel = started(tmp_path)
    try:
        messages = said_until(channel, "ready")
        command_line = Path(f"/proc/{process.pid}/cmdline").read_bytes()  # type: ignore[attr-defined]
        assert b"s3cret" not in command_line and b"searchcrawl.semantic.pass_process" in command_line
        assert not os.get_inheritable(channel.connection.fileno())  # no program the crawl runs holds the pair
        warnings = [m for m in messages if m["kind"] == "log" and m["level"] == logging.WARNING]
        assert any("does not answer now" in str(m["message"]) for m in warnings), messages
    finally:
        channel.close()
    assert process.wait(timeout=60) == 0  # type: ignore[attr-defined]


def test_at_the_crawls_end_the_process_runs_its_last_pass_and_says_its_cpu(tmp_path) -> None:
    process, channel = started(tmp_path)
    try:
        said_until(channel, "ready")
        channel.send("end", final_seconds=0)
        bye = said_until(channel, "bye")[-1]
        assert isinstance(bye["cpu_seconds"], float) and bye["cpu_seconds"] > 0
    finally:
        channel.close()
    assert process.wait(timeout=60) == 0  # type: ignore[attr-defined]


def test_the_crawls_end_waits_for_the_passes_within_the_last_passs_bound_alone() -> None:
    """A pass under way at the crawl's end stops after its page and the last pass follows, both
    within SEARCHCRAWL_EMBED_FINAL_SECONDS; with 0 (or a page longer than the bound) the process
    does not wait for it (the crawl's end waited for that page at the passes' low priority)."""
    finals: list[float] = []

    class Recorded(Passes):
        def final(self, deadline: float) -> None:
            finals.append(deadline)

    passes = Recorded(PassSettings("s", "bge-small", 30, 5, "http://127.0.0.1:9/solr/x", 5, 2000, None, 1), None)  # type: ignore[arg-type]
    page = threading.Event()  # a page being embedded, until set
    worker = threading.Thread(target=page.wait, daemon=True)
    worker.start()
    at_the_end(passes, worker, {"kind": "end", "final_seconds": 0})
    assert passes.stopping.is_set() and worker.is_alive() and finals == []  # not waited for
    at_the_end(passes, worker, {"kind": "end", "final_seconds": 0.2})
    assert worker.is_alive() and finals == []  # the page outlasted the bound: no last pass
    page.set()
    worker.join()
    at_the_end(passes, worker, {"kind": "end", "final_seconds": 600})
    assert len(finals) == 1 and finals[0] > time.monotonic() + 500  # the last pass, within the bound
    at_the_end(passes, worker, {"kind": "bogus"})
    assert len(finals) == 2 and finals[1] <= time.monotonic()  # no time: final() does nothing


def test_a_model_the_process_cannot_load_is_refused(tmp_path) -> None:
    process, channel = started(tmp_path, embeddings=f"onnx:{tmp_path / 'missing.onnx'}")
    try:
        refused = said_until(channel, "refused")[-1]
        assert "missing.onnx" in str(refused["reason"])
    finally:
        channel.close()
    assert process.wait(timeout=60) == 0  # type: ignore[attr-defined]


def test_what_the_process_says_reaches_the_crawls_log_stats_and_end(monkeypatch, caplog) -> None:
    crawler = Crawler({"SEARCHCRAWL_EMBEDDINGS": "bge-small"})
    extension = PassageSync(crawler, pass_settings(crawler.settings, "intranet", 1), 600)  # type: ignore[arg-type]
    closed: list[bool] = []
    monkeypatch.setattr(extension, "_close_from_thread", lambda: closed.append(True))
    with caplog.at_level(logging.INFO):
        extension.received({"kind": "log", "name": "searchcrawl.semantic.passage_index", "level": 30, "message": "50% done"})
        extension.received({"kind": "log", "name": "urllib3", "level": 10, "message": "not at INFO"})
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("searchcrawl.semantic.passage_index", 30, "50% done")
    ]
    for _ in range(2):
        extension.received(
            {"kind": "pass", "documents": 20, "embedded": 41, "reused": 2, "updated": 0, "deleted": 1, "skipped": 0}
        )
    extension.received({"kind": "ready", "model": "onnx/bge/1"})
    extension.received({"kind": "pass", "documents": "many"})  # nonsense counts nothing
    stats = crawler.stats.values
    assert (stats["semantic/runs"], stats["semantic/documents"], stats["semantic/embedded"]) == (3, 40, 82)
    assert stats["semantic/model"] == "onnx/bge/1" and MODEL_REFUSED not in stats and not closed
    extension.received({"kind": "refused", "reason": "onnx/x: 300 dimensions"})
    assert stats[MODEL_REFUSED] == "onnx/x: 300 dimensions" and closed == [True]
    extension.received({"kind": "bye", "cpu_seconds": 12.5})
    assert extension.cpu_seconds == 12.5
    assert not any(SECRET_NAME.search(name) for name in stats)  # "passages/..." was masked in the stats' dump


def test_a_refusal_after_the_spider_has_closed_closes_nothing() -> None:
    """The refusal may come after the crawl's last page (the model loads while the crawl runs):
    the engine then has no spider to close, and the exit code alone says it."""
    import asyncio

    closed: list[str] = []

    class Engine:
        async def close_spider_async(self, *, reason: str) -> None:
            if closed:
                raise RuntimeError("Spider not opened")
            closed.append(reason)

    crawler = Crawler({"SEARCHCRAWL_EMBEDDINGS": "bge-small"})
    crawler.engine = Engine()  # type: ignore[assignment]
    extension = PassageSync(crawler, pass_settings(crawler.settings, "intranet", 1), 600)  # type: ignore[arg-type]
    asyncio.run(extension._close_spider())
    asyncio.run(extension._close_spider())  # closed by then: no error
    assert closed == ["embeddings_refused"]


def test_a_log_message_becomes_a_record_of_the_crawls_log() -> None:
    record = record_of({"name": "searchcrawl.x", "level": 40, "message": "failed %s", "traceback": "Traceback ..."})
    assert (record.name, record.levelno, record.levelname, record.getMessage()) == (
        "searchcrawl.x",
        40,
        "ERROR",
        "failed %s\n  Traceback ...",
    )
    odd = record_of({"level": "loud", "message": 3})
    assert (odd.name, odd.levelno, odd.getMessage()) == ("searchcrawl.semantic.pass_process", logging.WARNING, "3")


# --- what the passes' process says is data: it reads hostile documents and runs a model ----------


def sleeper() -> subprocess.Popen[bytes]:
    """A process in the passes' process's place that says nothing and does not leave."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


def paired() -> tuple[PassChannel, PassChannel]:
    ours, theirs = socket.socketpair()
    return PassChannel(Connection(ours.detach())), PassChannel(Connection(theirs.detach()))


def reading(extension: PassageSync, process: subprocess.Popen[bytes], channel: PassChannel) -> threading.Thread:
    extension.process, extension.channel = process, channel
    extension.reader = threading.Thread(target=extension._read, daemon=True)
    extension.reader.start()
    return extension.reader


@pytest.mark.parametrize("breaks", ["the parser", "its handling"])
def test_a_message_the_crawl_cannot_take_ends_the_process_not_the_reader(breaks: str) -> None:
    """The reader that died of it (a RecursionError of JSON nested 200,000 deep, well within
    MESSAGE_LIMIT) left the process unread (blocked once the pair filled) and alive, and the
    crawl's end waited for its exit without a bound."""
    crawler = Crawler({"SEARCHCRAWL_EMBEDDINGS": "bge-small"})
    extension = PassageSync(crawler, pass_settings(crawler.settings, "intranet", 1), 600)  # type: ignore[arg-type]
    said = b"[" * 200_000 if breaks == "the parser" else json.dumps({"kind": "pass"}).encode()
    if breaks == "its handling":
        extension.crawler.stats = None  # type: ignore[assignment]
        extension.received = lambda _message: 1 / 0  # type: ignore[assignment,method-assign]
    process, (ours, theirs) = sleeper(), paired()
    try:
        reader = reading(extension, process, ours)
        theirs.connection.send_bytes(said)
        reader.join(30)
        assert not reader.is_alive() and process.returncode is not None  # killed and reaped
    finally:
        process.kill()
        process.wait()
        theirs.close()


def test_the_crawls_end_is_bounded_when_the_pair_stays_open(monkeypatch) -> None:
    """A process that neither says bye nor leaves, its end of the pair held elsewhere too (a
    descendant): killed after the bound, and the reader woken, so the crawl ends."""
    import searchcrawl.crawl.extensions.passage_sync as passage_sync

    monkeypatch.setattr(passage_sync, "END_GRACE", 0.2)
    monkeypatch.setattr(passage_sync, "KILL_GRACE", 5.0)
    crawler = Crawler({"SEARCHCRAWL_EMBEDDINGS": "bge-small"})
    extension = PassageSync(crawler, pass_settings(crawler.settings, "intranet", 1), 0)  # type: ignore[arg-type]
    process, (ours, theirs) = sleeper(), paired()  # theirs: held open by this test, as by a descendant
    try:
        reader = reading(extension, process, ours)
        ending = threading.Thread(target=extension._end, daemon=True)
        ending.start()
        ending.join(60)
        assert not ending.is_alive(), "the crawl's end waits for ever"
        assert process.returncode is not None and not reader.is_alive()
    finally:
        process.kill()
        process.wait()
        theirs.close()


def test_the_process_does_not_hand_its_end_of_the_pair_to_a_program_it_runs() -> None:
    ours, theirs = socket.socketpair()
    try:
        os.set_inheritable(theirs.fileno(), True)  # as pass_fds leaves it in the process
        channel = channel_of(str(theirs.detach()))
        assert not os.get_inheritable(channel.connection.fileno())
        channel.close()
    finally:
        ours.close()


def test_log_lines_of_the_process_forge_no_line_of_the_crawls_log_and_make_no_logger(caplog) -> None:
    forged = "2026-11-29 07:00:00 [scrapy.core.engine] INFO: Spider closed (finished)"
    record = record_of(
        {
            "name": "searchcrawl.x\n" + forged,
            "level": 30,
            "message": "a page said\n" + forged + "\r\x1b[2J" + "x" * 100_000,
            "traceback": "Traceback (most recent call last):\nValueError: bad\n" + forged,
        }
    )
    text = record.getMessage()
    assert record.name == "searchcrawl.semantic.pass_process"  # not a dotted name: this module's
    assert not any(line.startswith("2026") for line in text.splitlines())
    assert "\r" not in text and "\x1b" not in text and len(text) < TEXT_LIMIT + 200
    crawler = Crawler({"SEARCHCRAWL_EMBEDDINGS": "bge-small"})
    extension = PassageSync(crawler, pass_settings(crawler.settings, "intranet", 1), 600)  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO):
        for number in range(3):
            extension.received({"kind": "log", "name": f"made.up{number}", "level": 30, "message": "hello"})
    assert not any(name.startswith("made.up") for name in logging.Logger.manager.loggerDict)
    assert [r.name for r in caplog.records] == ["made.up0", "made.up1", "made.up2"]


def test_the_log_lines_the_process_may_say_in_a_crawl_are_bounded(monkeypatch, caplog) -> None:
    monkeypatch.setattr(passage_sync, "LOG_LINES", 5)
    crawler = Crawler({"SEARCHCRAWL_EMBEDDINGS": "bge-small"})
    extension = PassageSync(crawler, pass_settings(crawler.settings, "intranet", 1), 600)  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO):
        for number in range(100):
            extension.received(
                {"kind": "log", "name": "searchcrawl.semantic.passage_index", "level": 30, "message": f"line {number}"}
            )
    relayed = [r.getMessage() for r in caplog.records if r.name == "searchcrawl.semantic.passage_index"]
    assert relayed == [f"line {number}" for number in range(5)]
    assert sum("relays no more" in r.getMessage() for r in caplog.records) == 1
    assert crawler.stats.values[LOG_DROPPED] == 95


def test_what_the_process_says_for_the_stats_is_bounded() -> None:
    crawler = Crawler({"SEARCHCRAWL_EMBEDDINGS": "bge-small"})
    extension = PassageSync(crawler, pass_settings(crawler.settings, "intranet", 1), 600)  # type: ignore[arg-type]
    extension._close_from_thread = lambda: None  # type: ignore[method-assign]
    extension.received({"kind": "pass", "documents": True, "embedded": -5, "reused": 10**30, "updated": 1.5, "deleted": 2})
    stats = crawler.stats.values
    assert [stats[f"semantic/{name}"] for name in ("documents", "embedded", "reused", "updated", "deleted")] == [0, 0, 0, 0, 2]
    extension.received({"kind": "ready", "model": "m" * 10_000})
    extension.received({"kind": "refused", "reason": "no\nmodel" + "r" * 10_000})
    assert len(str(stats["semantic/model"])) <= 200 and len(str(stats[MODEL_REFUSED])) <= TEXT_LIMIT + 10
    assert "\n" not in str(stats[MODEL_REFUSED])
    for nonsense in (float("nan"), -1.0, "12", 10**400):  # 10**400: an OverflowError as a float
        extension.received({"kind": "bye", "cpu_seconds": nonsense})
    assert extension.cpu_seconds is None


def test_the_process_masks_the_secrets_it_alone_knows() -> None:
    """The embeddings server's key is read by the passes' process alone (the crawl's masking does
    not know it); Solr's password it is told. Neither leaves it in a log record."""
    sent: list[dict[str, object]] = []
    channel = type("Channel", (), {"send": lambda _self, kind, **fields: sent.append({"kind": kind, **fields})})()
    settings = PassSettings.from_message({**started_settings().__dict__, "solr_auth": ["crawler", "s3cret-told"]})
    secrets.remember("sk-only-the-passes-know")  # as embedders.secret(API_KEY) does there
    record = logging.LogRecord(
        "x", logging.WARNING, __file__, 1, "server said %s and %s", ("sk-only-the-passes-know", "s3cret-told"), None
    )
    Forward(channel).emit(record)  # type: ignore[arg-type]
    assert settings.solr_auth == ("crawler", "s3cret-told")
    assert "sk-only" not in str(sent) and "s3cret-told" not in str(sent) and "***" in str(sent[0]["message"])


def test_the_process_is_not_given_the_crawls_other_secrets(monkeypatch, tmp_path) -> None:
    """Its /proc/<pid>/environ holds none of the secrets it does not need (it reads hostile
    documents and runs a model)."""
    monkeypatch.setenv("SEARCHCRAWL_DB_PASSWORD", "db-s3cret-value")
    monkeypatch.setenv("SEARCHCRAWL_SOLR_PASSWORD", "solr-s3cret-value")
    process, channel = started(tmp_path)
    try:
        # Popen returns as exec closes the child's close-on-exec pipe, before the kernel has laid
        # out the new program's environment: read then, environ is empty (b''; CI under load).
        # Once the process has said it is ready, it is long there.
        said_until(channel, "ready")
        environment = Path(f"/proc/{process.pid}/environ").read_bytes()  # type: ignore[attr-defined]
        assert b"s3cret-value" not in environment and b"PYTHONPATH=" in environment
    finally:
        channel.close()
    assert process.wait(timeout=60) == 0  # type: ignore[attr-defined]


def test_a_process_that_is_not_told_its_settings_is_not_left_behind(monkeypatch) -> None:
    made: list[subprocess.Popen[bytes]] = []
    real = subprocess.Popen

    def recorded(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        made.append(real(*args, **kwargs))  # type: ignore[call-overload]
        return made[-1]

    def broken(*_args: object, **_kwargs: object) -> None:
        raise BrokenPipeError("gone")

    monkeypatch.setattr(subprocess, "Popen", recorded)
    monkeypatch.setattr(PassChannel, "send", broken)
    with pytest.raises(OSError):
        start(started_settings())
    assert len(made) == 1 and made[0].returncode is not None  # ended and reaped


def test_a_spider_closed_before_its_engine_started_ends_its_passes_process(tmp_path) -> None:
    """A CloseSpider as the spider opens (no run for this process) closes it with no
    engine_started nor engine_stopped (Scrapy's crawl_async): the process is ended at the
    spider's close, not left to load the model and pass over the source until the crawl exits.
    A spider closed after its engine started leaves the end to engine_stopped (the last pass)."""
    import asyncio

    crawler = Crawler({"SEARCHCRAWL_EMBEDDINGS": "bge-small"})
    for engine_started in (True, False):
        extension = PassageSync(crawler, pass_settings(crawler.settings, "intranet", 1), 600)  # type: ignore[arg-type]
        process, channel = started(tmp_path)
        try:
            reading(extension, process, channel)  # type: ignore[arg-type]
            if engine_started:
                extension.engine_started()
            asyncio.run(extension.spider_closed())
            assert (process.poll() is None) is engine_started  # type: ignore[attr-defined]
            if engine_started:
                asyncio.run(extension.engine_stopped())
            assert process.returncode == 0  # type: ignore[attr-defined]
        finally:
            process.kill()  # type: ignore[attr-defined]
            process.wait()  # type: ignore[attr-defined]
