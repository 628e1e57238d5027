"""The levels of the code (issue 73), read from its syntax trees: each package of searchcrawl imports
only packages of its own level or lower, in the order declared once here (``LEVELS``). A lower
package that needs something of a higher one is the sign that the thing lives too high: move it
down (or hand it in from above) rather than import upward. The imports that still run upward are
named in ``UPWARD``, each with its reason; a new one fails this test, and so does an entry of
``UPWARD`` that no longer happens (the list only shrinks).

The other two owners of issue 73 are held beside it: one writer of a URL's state
(tests/store/test_one_writer.py) and components built from what they use
(tests/crawl/test_built_from_what_they_use.py)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "searchcrawl"

# Lowest first; the packages of one level may import each other, and nothing of a higher level.
# The top-level modules (searchcrawl/cli.py, settings.py, __init__.py) stand above every package.
LEVELS: tuple[frozenset[str], ...] = tuple(
    frozenset(level.split())
    for level in (
        "sources",  # the packaged example source: data, no code
        "rules",
        "access",
        "dev",
        "content",
        "agents",
        "config",
        "store",
        "index",
        "search",
        "ops",
        "crawl web",
        "commands",
    )
)
TOP = "(top)"

# (importing module, imported module): an import that runs upward, and why it still does
UPWARD: dict[tuple[str, str], str] = {
    ("searchcrawl.access.explanation", "searchcrawl.index.indexer"): "issue 73: to move",
    ("searchcrawl.access.directory", "searchcrawl.ops.secrets"): "issue 73: to move",
    ("searchcrawl.agents.smb", "searchcrawl.ops.secrets"): "issue 73: to move",
    ("searchcrawl.agents.sql", "searchcrawl.ops.secrets"): "issue 73: to move",
    ("searchcrawl.config.spiderloader", "searchcrawl.crawl.agent_spider"): "issue 73: to move",
    ("searchcrawl.config.spiderloader", "searchcrawl.crawl.middlewares.address_guard"): "issue 73: to move",
    ("searchcrawl.config.spiderloader", "searchcrawl.crawl.spider"): "issue 73: to move",
    ("searchcrawl.config.paths", "searchcrawl.ops"): "issue 73: to move",
    ("searchcrawl.config.source", "searchcrawl.ops.notify_events"): "issue 73: to move",
    ("searchcrawl.crawl.extensions.run_notify", "searchcrawl.commands.crawl"): "issue 73: to move",
    ("searchcrawl.dev.solr_runner", "searchcrawl.config.resources"): "issue 73: to move",
    ("searchcrawl.dev.jvm_server", "searchcrawl.ops.processes"): "issue 73: to move",
    ("searchcrawl.index.solrcloud", "searchcrawl.ops"): "issue 73: to move",
    ("searchcrawl.store.runs", "searchcrawl.ops.processes"): "issue 73: to move",
    ("searchcrawl.web.app", "searchcrawl.commands.report"): "issue 73: to move",
}


def module_name(path: Path) -> str:
    """``searchcrawl/store/runs.py`` -> ``searchcrawl.store.runs`` (a package's ``__init__`` is the package)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str) -> str:
    """The package of searchcrawl a module belongs to (its second name), or TOP for the top-level modules."""
    parts = module.split(".")
    if len(parts) >= 2 and (PACKAGE / parts[1]).is_dir():
        return parts[1]
    return TOP


def imports(path: Path) -> Iterator[str]:
    """Every searchcrawl module ``path`` imports, at any depth of its code (a function's own imports too),
    relative imports resolved."""
    module = module_name(path)
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - node.level + 1]
                names = [".".join([*anchor, *([node.module] if node.module else [])])]
            else:
                names = [node.module or ""]
        else:
            continue
        yield from (name for name in names if name == "searchcrawl" or name.startswith("searchcrawl."))


def level_of(package: str) -> int:
    if package == TOP:
        return len(LEVELS)
    for number, level in enumerate(LEVELS):
        if package in level:
            return number
    raise AssertionError(f"package searchcrawl/{package} has no level: add it to LEVELS in {__file__}")


def upward_imports() -> set[tuple[str, str]]:
    """The (importer, imported) pairs whose imported module's package stands above the importer's."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = module_name(path)
        for imported in imports(path):
            if level_of(package_of(imported)) > level_of(package_of(importer)):
                found.add((importer, imported))
    return found


def test_every_package_has_one_level() -> None:
    packages = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    declared = [package for level in LEVELS for package in level]
    assert len(declared) == len(set(declared)), "a package is declared at two levels"
    assert packages == set(declared), f"undeclared: {packages - set(declared)}, gone: {set(declared) - packages}"


def test_no_package_imports_a_higher_level() -> None:
    found = upward_imports()
    new = sorted(found - UPWARD.keys())
    assert not new, "imports that run upward (move what they need down, or hand it in from above):\n" + "\n".join(
        f"  {importer} imports {imported}" for importer, imported in new
    )


def test_every_named_upward_import_still_happens() -> None:
    gone = sorted(UPWARD.keys() - upward_imports())
    assert not gone, "named in UPWARD but no longer imported (remove them from the list):\n" + "\n".join(
        f"  {importer} imports {imported}" for importer, imported in gone
    )


def test_module_and_package_names() -> None:
    assert module_name(PACKAGE / "store" / "__init__.py") == "searchcrawl.store"
    assert module_name(PACKAGE / "store" / "runs.py") == "searchcrawl.store.runs"
    assert package_of("searchcrawl.cli") == TOP and package_of("searchcrawl.store.runs") == "store"
