"""The tests that read searchcrawl's code parse each module once a session (tests/syntax_trees.py,
issue 95), and the run counts every parse of a module (issue 101: once, as the tests run, not by
running the code-reading tests again)."""

from __future__ import annotations

import ast

import pytest

import tests.syntax_trees as syntax_trees
from tests.syntax_trees import (
    PACKAGE,
    Function,
    ParseCount,
    beyond_the_named,
    package_modules,
    run_parse_count,
    source_of,
    tree_of,
    walk,
)


def test_a_module_is_read_and_parsed_once() -> None:
    path = package_modules()[0]
    assert tree_of(path) is tree_of(path) and source_of(path) is source_of(path)
    assert package_modules() is package_modules()


def test_a_shared_tree_is_walked_once_in_ast_walks_order_and_a_snippet_afresh() -> None:
    tree = tree_of(package_modules()[-1])
    assert list(walk(tree)) == list(ast.walk(tree)) and walk(tree) is walk(tree)
    snippet = ast.parse("x = 1\n")
    assert list(walk(snippet)) == list(ast.walk(snippet)) and walk(snippet) is not walk(snippet)


def test_a_module_parsed_twice_is_counted_and_nothing_else_is() -> None:
    count = ParseCount()
    parse = count.counting(getattr(ast.parse, "__wrapped__", ast.parse))  # not counted in the run's count too
    path = next(path for path in package_modules() if source_of(path).strip())
    parse(source_of(path), str(path))
    parse("x = 1\n")
    parse("")  # an empty module's text is any blank snippet's: not counted
    parse("")
    assert count.parsed_again() == []
    parse(source_of(path).encode("utf-8"))
    assert count.parsed_again() == [f"{path.relative_to(PACKAGE.parent).as_posix()}: 2 times"]
    count.parsed(source_of(path), "/usr/lib/python3/dist-packages/hypothesis/internal/constants_ast.py")
    assert count.parsed_again() == [f"{path.relative_to(PACKAGE.parent).as_posix()}: 2 times"]  # a library's: not counted
    # nor one installed inside the checkout (deploy/test.sh's .venv): a clean clone's run counted
    # Hypothesis's parses of six package docstrings there and failed at its end
    inside = str(PACKAGE.parent / ".venv" / "lib" / "python3.11" / "site-packages" / "hypothesis" / "internal" / "x.py")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(syntax_trees, "LIBRARIES", (str(PACKAGE.parent / ".venv" / "lib" / "python3.11" / "site-packages") + "/",))
        count.parsed(source_of(path), inside)
    assert count.parsed_again() == [f"{path.relative_to(PACKAGE.parent).as_posix()}: 2 times"]


def test_the_run_counts_the_parses_of_its_tests() -> None:
    """The count the run ends with (tests.syntax_trees.no_module_parsed_twice) is ast.parse's, installed
    before any test module was imported, and it counts tree_of's one parse of each module."""
    count = run_parse_count()
    assert run_parse_count() is count and getattr(ast.parse, "parse_count", None) is count
    for path in package_modules():
        tree_of(path)
    assert sum(count.counts.values()) == len([path for path in package_modules() if source_of(path).strip()])
    assert count.parsed_again() == []


def test_a_gate_finds_the_functions_beyond_its_limit_not_named_and_the_named_ones_no_longer_beyond() -> None:
    """The one check of the gates on functions (tests/test_complexity.py, tests/test_function_length.py)."""
    why, app = ("searchcrawl/search/why.py", "term_line"), ("searchcrawl/web/app.py", "route_table")

    def measure(function: Function) -> int:
        return 100 if function.name == "term_line" else 1

    assert beyond_the_named(measure, 99, {}, " lines") == (["  searchcrawl/search/why.py: term_line (100 lines)"], [])
    assert beyond_the_named(measure, 99, {why: "named"}) == ([], [])
    assert beyond_the_named(measure, 99, {why: "named", app: "named"}) == ([], ["  searchcrawl/web/app.py: route_table"])
    assert beyond_the_named(measure, 100, {why: "named"}) == ([], ["  searchcrawl/search/why.py: term_line"])  # above, not at
