"""searchcrawl's modules as the code-reading tests see them, read and parsed once a test session
(issue 95): the architecture tests (tests/test_architecture.py, tests/store/test_one_writer.py,
tests/crawl/test_built_from_what_they_use.py, ...) each walk every module, and parsing all of them
again in each test was most of their time. The trees are shared: a test reads them, never changes
them."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "searchcrawl"


@functools.cache
def package_modules() -> tuple[Path, ...]:
    """Every module of searchcrawl (its ``.py`` files), sorted."""
    return tuple(sorted(PACKAGE.rglob("*.py")))


@functools.cache
def source_of(path: Path) -> str:
    """The text of the module at ``path``."""
    return path.read_text(encoding="utf-8")


@functools.cache
def tree_of(path: Path) -> ast.Module:
    """The syntax tree of the module at ``path`` (its file name in the errors a bad one raises)."""
    return ast.parse(source_of(path), str(path))
