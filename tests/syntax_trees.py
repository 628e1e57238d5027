"""searchcrawl's modules as the code-reading tests see them, read and parsed once a test session
(issue 95): the architecture tests (tests/test_architecture.py, tests/store/test_one_writer.py,
tests/crawl/test_built_from_what_they_use.py, ...) each walk every module, and parsing all of them
again in each test was most of their time. The trees are shared: a test reads them, never changes
them."""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "searchcrawl"
Function = ast.FunctionDef | ast.AsyncFunctionDef
# a function of searchcrawl: its module's path (``searchcrawl/...``) and its qualified name
Where = tuple[str, str]


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


def functions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, Function]]:
    """Every function defined in ``node``, at any depth, by its qualified name (``Class.method``)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, Function):
            yield prefix + child.name, child
            yield from functions(child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.ClassDef):
            yield from functions(child, f"{prefix}{child.name}.")
        else:
            yield from functions(child, prefix)


def beyond_the_named(
    measure: Callable[[Function], int], limit: int, named: Mapping[Where, str], unit: str = ""
) -> tuple[list[str], list[str]]:
    """The check of a gate on searchcrawl's functions (tests/test_complexity.py, tests/test_function_length.py):
    the functions whose ``measure`` is above ``limit`` but are not ``named`` (``  path: name (measure
    unit)``), and the ``named`` ones no longer above it (``  path: name``; the list only shrinks),
    each a line of the gate's message, sorted."""
    found = {}
    for path in package_modules():
        for name, function in functions(tree_of(path)):
            if (value := measure(function)) > limit:
                found[path.relative_to(PACKAGE.parent).as_posix(), name] = value
    new = [f"  {path}: {name} ({found[path, name]}{unit})" for path, name in sorted(found.keys() - named.keys())]
    return new, [f"  {path}: {name}" for path, name in sorted(named.keys() - found.keys())]
