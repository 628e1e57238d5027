"""The benchmarks' real sites unpack where a fresh Debian 12 runs the suite: a minimal root has no
xz, and `tar -xJf` failed the Sphinx benchmark's smoke run there."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.real_sites import RealSite, corpus_missing


def test_a_real_site_unpacks_without_any_program_on_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = corpus_missing("sphinx")
    if missing:
        pytest.skip(missing)
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no tar, no xz: Python's tarfile and lzma alone
    site = RealSite.unpack("sphinx", tmp_path / "work")
    assert (site.root / site.seed).is_file()
