"""searchcrawl's modules as the code-reading tests see them, read and parsed once a test session
(issue 95): the architecture tests (tests/test_architecture.py, tests/store/test_one_writer.py,
tests/crawl/test_built_from_what_they_use.py, ...) each walk every module, and parsing all of them
again in each test was most of their time. The trees are shared: a test reads them, never changes
them.

A pytest plugin too (registered by tests/conftest.py): every ``ast.parse`` of a package module's
text by the checkout's code in a test process is counted, and the run fails at its end, in each
process, if one was parsed twice (a test that parses a module itself instead of reading
``tree_of``): counted once a run, as the tests run, instead of running the code-reading tests a
second time to watch them (issue 101)."""

from __future__ import annotations

import ast
import functools
import os
import site
import sys
import sysconfig
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "searchcrawl"
CHECKOUT = str(PACKAGE.parent) + os.sep  # its files: the tests' and searchcrawl's
# ... but not the libraries installed inside it (deploy/test.sh's .venv lives in the checkout)
LIBRARIES = tuple(
    sorted({path + os.sep for path in (*site.getsitepackages(), site.getusersitepackages(), sysconfig.get_path("stdlib"))})
)
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
    tree = ast.parse(source_of(path), str(path))
    _SHARED[id(tree)] = tree
    return tree


_SHARED: dict[int, ast.Module] = {}  # tree_of's trees, by id: those whose nodes ``walk`` keeps


@functools.cache
def _nodes(tree: ast.Module) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(tree))


def walk(node: ast.AST) -> Iterable[ast.AST]:
    """``ast.walk(node)``, in its order; a module's shared tree (``tree_of``'s, which no test
    changes) is walked once a session and its nodes kept: the code-reading tests walk every module
    some twenty times."""
    return _nodes(node) if isinstance(node, ast.Module) and _SHARED.get(id(node)) is node else ast.walk(node)


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


class ParseCount:
    """How often the checkout's code (the tests, searchcrawl) parsed each package module's text
    (``ast.parse`` of its text, as ``str`` or ``bytes``), found by its text: a parse of anything
    else (a snippet, a test module) is not counted, nor an empty module (an empty ``__init__``: its
    text is any blank snippet's), nor a library's parse (Hypothesis parses the modules it finds
    under test for their constants, and for a lambda's source). Modules of one text may be parsed
    once each."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[Path, ...]] = Counter()

    @functools.cached_property
    def by_text(self) -> dict[str | bytes, tuple[Path, ...]]:
        """The package's modules by their text, read at the first parse."""
        texts: dict[str, tuple[Path, ...]] = {}
        for path in package_modules():
            if source_of(path).strip():
                texts[source_of(path)] = (*texts.get(source_of(path), ()), path)
        both: dict[str | bytes, tuple[Path, ...]] = {text.encode("utf-8"): paths for text, paths in texts.items()}
        both.update(texts)
        return both

    def parsed(self, source: object, caller: str) -> None:
        """Count ``source``, the first argument of a call of ``ast.parse`` from the file ``caller``."""
        ours = caller.startswith(CHECKOUT) and not caller.startswith(LIBRARIES)
        if ours and isinstance(source, str | bytes) and (paths := self.by_text.get(source)) is not None:
            self.counts[paths] += 1

    def parsed_again(self) -> list[str]:
        """The modules parsed more often than once each (``searchcrawl/...: N times``), sorted."""
        return sorted(
            f"{' '.join(path.relative_to(PACKAGE.parent).as_posix() for path in paths)}: {count} times"
            for paths, count in self.counts.items()
            if count > len(paths)
        )

    def counting(self, parse: Callable[..., ast.AST]) -> Callable[..., ast.AST]:
        """``parse`` (``ast.parse``), counting what it parses."""

        @functools.wraps(parse)
        def counted(source: str | bytes, *args: Any, **kwargs: Any) -> ast.AST:
            self.parsed(source, sys._getframe(1).f_code.co_filename)
            return parse(source, *args, **kwargs)

        counted.parse_count = self  # type: ignore[attr-defined]
        return counted


def run_parse_count() -> ParseCount:
    """This process's count, installed in ``ast.parse`` at its first call (once a process: an
    in-process pytester run shares it)."""
    count = getattr(ast.parse, "parse_count", None)
    if count is None:
        count = ParseCount()
        ast.parse = count.counting(ast.parse)  # type: ignore[assignment]
    assert isinstance(count, ParseCount)
    return count


def pytest_configure(config: pytest.Config) -> None:
    """Count from before the first test module is imported."""
    run_parse_count()


@pytest.fixture(scope="session", autouse=True)
def no_module_parsed_twice() -> Iterator[None]:
    """At the end of the run (in each test process, after its last test): no module was parsed
    twice, whichever test parsed it."""
    yield
    again = run_parse_count().parsed_again()
    assert again == [], "modules parsed twice in this run: read them with tests.syntax_trees.tree_of\n" + "\n".join(again)
