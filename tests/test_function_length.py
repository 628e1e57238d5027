"""Functions stay short (issue 95): beside the radon gate (tests/test_complexity.py), no function
of searchcrawl is over 60 lines but for the ones named in ``OVER_60``, each with its reason. A
function's lines are those of its syntax tree, from its ``def`` to its last line
(``end_lineno - lineno + 1``): its docstring, comments, blank lines and the functions it defines
count, its decorators do not; a function it defines is counted on its own too. A new one over 60
fails this test, and so does a named one that is no longer over 60 (the list only shrinks). A long
function is split into named steps (the spider's ``parse``, ``FrontierScheduler.open``); one that a
split would make worse to read (a table of data, a configuration file's text) is named here."""

from __future__ import annotations

import ast

from tests.syntax_trees import Function, Where, beyond_the_named, functions

LIMIT = 60

# (module path, function's qualified name): a function over LIMIT lines, and why
OVER_60: dict[Where, str] = {
    ("searchcrawl/dev/servers/dovecot.py", "dovecot_config"): (
        "the test server's dovecot.conf, one f-string: its lines are the file's (docs/non-web-sources.md shows them)"
    ),
    ("searchcrawl/web/app.py", "route_table"): (
        "the application's URLs, a table: one line a URL (its methods, its view), read as one list, as Starlette "
        "writes its routes; split in parts, a URL would be looked for in several"
    ),
}
# the list only shrinks: lower MOST with it
MOST = 2


def length(function: Function) -> int:
    """The lines of ``function``, from its ``def`` to its last line (its decorators not counted)."""
    assert function.end_lineno is not None  # a parsed tree's nodes have their positions
    return function.end_lineno - function.lineno + 1


def test_no_function_is_over_60_lines_but_the_named_ones() -> None:
    assert len(OVER_60) <= MOST, f"at most {MOST} functions over {LIMIT} lines: split one before naming another"
    new, gone = beyond_the_named(length, LIMIT, OVER_60, " lines")
    assert not new, f"functions over {LIMIT} lines (split them into named steps):\n" + "\n".join(new)
    assert not gone, f"named in OVER_60 but no longer over {LIMIT} lines (remove them from the list):\n" + "\n".join(gone)


CODE = '''
import functools


@functools.cache
def decorated(x):
    """A docstring
    of two lines."""

    # a comment
    return x


class Holder:
    def method(self, x):
        def inner(y):
            return y

        return inner(x)
'''


def test_a_length_is_the_defs_lines() -> None:
    """Docstring, comments, blank lines and inner functions count; decorators do not."""
    counted = {name: length(function) for name, function in functions(ast.parse(CODE))}
    assert counted == {"decorated": 6, "Holder.method": 5, "Holder.method.inner": 2}
