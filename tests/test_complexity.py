"""Complexity stays down (issue 95): beside ruff's C901 (mccabe, at most 15 a function,
pyproject.toml), no function of searchcrawl is above 20 in radon's cyclomatic complexity, which
also counts each ``and``/``or``, comprehension and conditional expression, but for the ones named
in ``ABOVE_20``, each with its reason. A new one fails this test; so does a named one that is no
longer above 20 (the list only shrinks). Counted from the syntax trees as radon 6 counts
(``radon cc``): no radon needed to run the suite."""

from __future__ import annotations

import ast

from tests.syntax_trees import Function, Where, beyond_the_named, functions

LIMIT = 20

# (module path, function's qualified name): a function above LIMIT, and why (at most 5; none now:
# the last, search/hybrid.py's fuse, was split into named steps by issue 101 point 7)
ABOVE_20: dict[Where, str] = {}
MOST = 5


def complexity(function: Function) -> int:
    """Radon's cyclomatic complexity of ``function``: 1, and 1 for each ``if``, ``elif``,
    conditional expression, loop (2 with an ``else``), ``except`` (and a ``try``'s ``else``),
    ``assert``, comprehension and its ``if``s, ``match`` case (not ``case _``), and each ``and``
    or ``or`` beyond the first operand. The functions and classes it defines count on their own."""
    total = 1
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if isinstance(node, ast.Assert):  # radon does not look inside an assert
            total += 1
            continue
        if isinstance(node, ast.Try):
            total += len(node.handlers) + bool(node.orelse)
        elif isinstance(node, ast.BoolOp):
            total += len(node.values) - 1
        elif isinstance(node, ast.If | ast.IfExp):
            total += 1
        elif isinstance(node, ast.Match):
            total += max(0, len(node.cases) - any(getattr(case.pattern, "pattern", False) is None for case in node.cases))
        elif isinstance(node, ast.For | ast.AsyncFor | ast.While):
            total += 1 + bool(node.orelse)
        elif isinstance(node, ast.comprehension):
            total += len(node.ifs) + 1
        stack.extend(ast.iter_child_nodes(node))
    return total


def test_no_function_is_above_20_but_the_named_ones() -> None:
    assert len(ABOVE_20) <= MOST, f"at most {MOST} functions above radon {LIMIT}: split one before naming another"
    new, gone = beyond_the_named(complexity, LIMIT, ABOVE_20)
    assert not new, f"functions above radon {LIMIT} (split them into named steps):\n" + "\n".join(new)
    assert not gone, f"named in ABOVE_20 but no longer above {LIMIT} (remove them from the list):\n" + "\n".join(gone)


CODE = """
def plain(x):
    return x

def counted(items, flag):
    assert items
    if flag and items or not flag:
        pass
    elif flag:
        pass
    for item in items:
        pass
    else:
        pass
    while flag:
        break
    try:
        pass
    except ValueError:
        pass
    except KeyError:
        pass
    else:
        pass
    value = 1 if flag else 2
    found = [item for item in items if item if flag]
    match flag:
        case 1:
            pass
        case 2:
            pass
        case _:
            pass

    def inner(y):
        if y:
            return y
    return inner

class Holder:
    def method(self, x):
        return [y for y in x]
"""


def test_the_count_is_radons() -> None:
    """The numbers ``radon cc`` gives these functions (radon 6.0.1)."""
    counted = {name: complexity(function) for name, function in functions(ast.parse(CODE))}
    assert counted == {"plain": 1, "counted": 18, "counted.inner": 2, "Holder.method": 2}
