"""Outcomes written in batches are written before they are read (issue 74), read from the code's
syntax trees: in searchcrawl/crawl/, a function that reads the document table for what a
waiting outcome writes (a duplicate's checksum, a display URL's owner, this process's leases,
what is pending for a push) calls the ledger writer's ``flush`` or ``flush_for`` first, and so
does one that gives its leases back. The ledger writer's own ``closing`` and ``settle_pending``
flush (tests/crawl/test_frontier_scheduler.py and tests/crawl/pipelines/ test each with batches)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.syntax_trees import tree_of, walk

CRAWL = Path(__file__).resolve().parents[2] / "searchcrawl" / "crawl"

# reads of what an outcome writes, and the writes that must come after every outcome reported
AFTER_A_FLUSH = {"find_duplicate", "display_url_owner", "leased_by", "requeue_leased", "pending"}
FLUSHES = {"flush", "flush_for"}
# (module, function): where one of them needs no flush, and why
EXEMPT = {
    ("frontier_scheduler.py", "_take_back"): "expired leases only: other (dead) nodes', never this process's",
}


def calls(function: ast.AST) -> list[tuple[str, int]]:
    found = []
    for node in walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            found.append((node.func.attr, node.lineno))
    return found


def unflushed_reads() -> list[str]:
    problems = []
    for path in sorted(CRAWL.rglob("*.py")):
        module = str(path.relative_to(CRAWL))
        for node in walk(tree_of(path)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            made = calls(node)
            first_flush = min((line for name, line in made if name in FLUSHES), default=None)
            for name, line in made:
                if name not in AFTER_A_FLUSH or (module, node.name) in EXEMPT:
                    continue
                if first_flush is None or first_flush > line:
                    problems.append(f"{module}:{line} {node.name} calls {name} without a flush before it")
    return problems


def test_what_an_outcome_writes_is_read_after_a_flush() -> None:
    assert unflushed_reads() == []


def test_the_checker_finds_a_read_without_a_flush(tmp_path, monkeypatch) -> None:
    """The rule on a snippet: a read before the flush, and one with none, are found."""
    package = tmp_path / "crawl"
    package.mkdir()
    (package / "snippet.py").write_text(
        "def late(self):\n    self.table.find_duplicate('s', 'c', 'u')\n    self.ledger.flush()\n\n"
        "def none(self):\n    return self.frontier.leased_by('me')\n\n"
        "def right(self):\n    self.ledger.flush_for('checksum', 'c')\n    return self.table.find_duplicate('s', 'c', 'u')\n"
    )
    monkeypatch.setattr(__import__(__name__, fromlist=["CRAWL"]), "CRAWL", package)
    assert unflushed_reads() == [
        "snippet.py:2 late calls find_duplicate without a flush before it",
        "snippet.py:6 none calls leased_by without a flush before it",
    ]
