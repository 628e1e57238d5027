"""The suite's corpora unpacked (tests.conftest.unpack) with the Python of a fresh Debian 12:
its 3.11.2 has no tarfile filter (3.11.4 added it), and a member that would land or link outside
the target is refused all the same (issue 92: ``deploy/test.sh`` on a fresh Debian 12)."""

from __future__ import annotations

import inspect
import io
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import conftest


@pytest.fixture
def debian_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """tarfile as Debian 12's Python 3.11.2 has it: no ``data_filter``, no ``filter`` argument."""
    monkeypatch.delattr(tarfile, "data_filter", raising=False)
    original = tarfile.TarFile.extractall
    trusting = {"filter": "fully_trusted"} if "filter" in inspect.signature(original).parameters else {}

    def extractall(self: tarfile.TarFile, path: Any = ".", members: Any = None, *, numeric_owner: bool = False) -> None:
        original(self, path, members, numeric_owner=numeric_owner, **trusting)

    monkeypatch.setattr(tarfile.TarFile, "extractall", extractall)


def archive(tmp_path: Path, *members: Callable[[tarfile.TarFile], None]) -> str:
    """A corpus archive of ``members`` (each adds itself), which ``unpack`` finds by its name."""
    path = tmp_path / "corpus.tar"
    with tarfile.open(path, "w") as tar:
        for add in members:
            add(tar)
    return str(path)


def file(name: str, data: bytes = b"text") -> Callable[[tarfile.TarFile], None]:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))

    return add


def special(name: str, kind: bytes, linkname: str = "") -> Callable[[tarfile.TarFile], None]:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, linkname
        tar.addfile(info)

    return add


@pytest.fixture
def unpack(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, Path], Path]:
    """tests.conftest.unpack, reading the archive at the path given as the corpus's name."""
    monkeypatch.setattr(conftest, "corpus", Path)
    monkeypatch.setattr(conftest, "decompressed", lambda path: path)
    return conftest.unpack


def test_a_corpus_unpacks_with_debian_12s_python(debian_python: None, unpack, tmp_path: Path) -> None:
    name = archive(
        tmp_path, special("corpus", tarfile.DIRTYPE), file("corpus/a.txt"), special("corpus/b.txt", tarfile.SYMTYPE, "a.txt")
    )
    target = unpack(name, tmp_path / "out")
    assert (target / "corpus" / "a.txt").read_bytes() == b"text" == (target / "corpus" / "b.txt").read_bytes()


@pytest.mark.parametrize(
    "hostile",
    [
        file("../outside.txt"),
        file("/tmp/outside.txt"),
        special("link", tarfile.SYMTYPE, "../outside.txt"),
        special("link", tarfile.SYMTYPE, "/etc/passwd"),
        special("link", tarfile.LNKTYPE, "../outside.txt"),
        special("fifo", tarfile.FIFOTYPE),
    ],
    ids=["dot-dot", "absolute", "symlink-out", "symlink-absolute", "hardlink-out", "fifo"],
)
def test_a_member_outside_the_target_is_refused_without_the_filter(
    debian_python: None, unpack, tmp_path: Path, hostile: Callable[[tarfile.TarFile], None]
) -> None:
    name = archive(tmp_path, file("inside.txt"), hostile)
    with pytest.raises(ValueError, match="outside|FIFO"):
        unpack(name, tmp_path / "out")
    assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "out" / "inside.txt").exists()
