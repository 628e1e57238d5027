"""A crawl's passes keep off the crawl's CPU (issue 100: pages a second with the default model
within 10% of words-only): ONNX Runtime on one thread, at a lower OS priority than the crawl's."""

from __future__ import annotations

import os
import threading

from scrapy.settings import Settings

import searchcrawl.crawl.extensions.passage_sync as passage_sync
from searchcrawl.crawl.extensions.passage_sync import PASS_NICENESS, PASS_THREADS, PassageSync, lower_priority


def test_the_passes_thread_alone_is_lowered() -> None:
    """Linux keeps a nice value a thread: the passes' thread is lowered, the crawl's is not."""
    seen: dict[str, int] = {}

    def passes() -> None:
        tid = threading.get_native_id()
        before = os.getpriority(os.PRIO_PROCESS, tid)
        assert lower_priority()
        seen["before"], seen["after"] = before, os.getpriority(os.PRIO_PROCESS, tid)

    main = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    thread = threading.Thread(target=passes)
    thread.start()
    thread.join()
    assert seen["after"] == min(19, seen["before"] + PASS_NICENESS)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == main  # the crawl's thread keeps its own


def test_a_refused_priority_is_no_failure(monkeypatch) -> None:
    def refused(*_args: object) -> None:
        raise PermissionError("not allowed")

    monkeypatch.setattr(os, "setpriority", refused)
    assert lower_priority() is False


def test_a_crawl_builds_its_model_on_one_thread_and_without_an_installed_model_runs_without(monkeypatch) -> None:
    """The crawl asks for PASS_THREADS ONNX Runtime threads (the setting's ?threads= may say
    otherwise); a model not installed (embedder_from gives None, said once) leaves the crawl
    words-only: the extension is not configured, the crawl runs."""
    import pytest
    from scrapy.exceptions import NotConfigured

    import searchcrawl.semantic.embedders as embedders

    asked: list[tuple[str, int]] = []
    monkeypatch.setattr(passage_sync, "started_by_a_crawl", lambda _settings: False)
    monkeypatch.setattr(embedders, "embedder_from", lambda text, _timeout, threads=0: asked.append((text, threads)))
    crawler = type(
        "Crawler", (), {"settings": Settings({"SEARCHCRAWL_EMBEDDINGS": "bge-small", "SEARCHCRAWL_EMBED_TIMEOUT": 30})}
    )()
    with pytest.raises(NotConfigured):
        PassageSync.from_crawler(crawler)
    assert asked == [("bge-small", PASS_THREADS)] and PASS_THREADS == 1
