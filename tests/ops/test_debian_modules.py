"""Debian's python3-gssapi made importable in .venv (searchcrawl/ops/debian_modules.py), on a
dist-packages and a venv of the test's own: the modules named, and nothing else of Debian's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from searchcrawl.ops.debian_modules import FOLDER, PTH, link


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(a dist-packages with a package, a module and one more package; a venv prefix; its site-packages)"""
    dist = tmp_path / "dist-packages"
    (dist / "gssapi").mkdir(parents=True)
    (dist / "gssapi" / "__init__.py").write_text("WHERE = 'debian'\n")
    (dist / "decorator.py").write_text("WHERE = 'debian'\n")
    (dist / "other").mkdir()
    (dist / "other" / "__init__.py").write_text("")
    site = tmp_path / "venv" / "site-packages"
    site.mkdir(parents=True)
    return dist, tmp_path / "venv", site


def imports(site: Path, *modules: str) -> subprocess.CompletedProcess[str]:
    """Imports ``modules`` in a Python whose site-packages (its .pth files read) is ``site`` alone."""
    code = f"import site, sys; site.addsitedir({str(site)!r}); " + "; ".join(f"import {name}" for name in modules)
    return subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60)


def test_the_modules_named_import_and_nothing_else_of_debians(places: tuple[Path, Path, Path]) -> None:
    dist, prefix, site = places
    folder = link(["gssapi", "decorator"], prefix, site, dist)
    assert folder == prefix / FOLDER and sorted(path.name for path in folder.iterdir()) == ["decorator.py", "gssapi"]
    assert (site / PTH).read_text() == f"{folder.resolve()}\n"
    assert imports(site, "gssapi", "decorator").returncode == 0
    assert "No module named 'other'" in imports(site, "other").stderr  # dist-packages itself is not on the path


def test_a_second_run_links_again_and_a_missing_module_links_nothing(places: tuple[Path, Path, Path]) -> None:
    dist, prefix, site = places
    link(["gssapi"], prefix, site, dist)
    link(["gssapi"], prefix, site, dist)  # bootstrap.sh is run again
    assert (prefix / FOLDER / "gssapi").resolve() == dist / "gssapi"
    with pytest.raises(RuntimeError, match="'krb5' is not in .*bootstrap.sh kerberos"):
        link(["decorator", "krb5"], prefix, site, dist)
    assert not (prefix / FOLDER / "decorator.py").exists()
