"""The crawl benchmark's phases (tests/benchmarks/crawl.py) as dispatched, without a crawl: the
warm-up phase w crawls from a data folder of its own, leaves Solr without the source's documents
on both sides, and no ratio reads it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.benchmarks import crawl
from tests.benchmarks.crawl import Bench, ratios


class Recorded(Bench):
    """A Bench whose crawls and Solr calls are recorded, not run."""

    def __init__(self, work: Path) -> None:  # noqa: D107 - none of Bench's set-up: no site, no server
        self.work, self.solr_url, self.source = work, "http://127.0.0.1:9/solr/none", "benchx"
        self.site = SimpleNamespace(name="synthetic", documents=3)
        self.pages = 3
        self.env = {"SEARCHCRAWL_DATA_DIR": str(work / "data")}
        self.crawl_command = ["scrapy", "crawl", "benchx"]
        self.root = work
        self.calls: list[tuple[str, ...]] = []

    def measure(self, label: str, args: list[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
        self.calls.append(("measure", label, env["SEARCHCRAWL_DATA_DIR"]))
        return {"phase": label, "pages_per_s": {"w": 50.0, "a": 80.0, "b": 120.0}[label], "solr_updates": 0}

    def anchors(self, env: dict[str, str]) -> int:
        return 0


def test_the_warm_up_crawls_apart_and_is_never_compared(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = Recorded(tmp_path)
    monkeypatch.setattr(crawl, "forget_source", lambda _url, source: bench.calls.append(("forget", source)))
    monkeypatch.setattr(Bench, "bare", lambda self, key: self.measure("a", [], self.root, self.env))
    results = bench.run("wab")
    assert bench.calls[:3] == [
        ("forget", "benchx"),
        ("measure", "w", str(tmp_path / "warm-up-data")),  # not the data folder b crawls from empty
        ("forget", "benchx"),
    ]
    assert ("measure", "b", str(tmp_path / "data")) in bench.calls
    assert results["w"]["phase"] == "w"
    assert ratios(results)["b/a"]["value"] == 1.5  # 120 / 80: the warm-up's rate reads nowhere
