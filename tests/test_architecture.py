"""The levels of the code (issue 73), read from its syntax trees: each package of searchcrawl imports
only packages of its own level or lower, in the order declared once here (``LEVELS``). A lower
package that needs something of a higher one is the sign that the thing lives too high: move it
down (or hand it in from above) rather than import upward. The imports that still run upward are
named in ``UPWARD``, each with its reason; a new one fails this test, and so does an entry of
``UPWARD`` that no longer happens (the list only shrinks).

One name per concept: no class or type alias is defined in two modules of searchcrawl (which
``Outcome`` would a reader, or an import, mean?), but for the exceptions named in ``DEFINED_TWICE``.

The other two owners of issue 73 are held beside it: one writer of a URL's state
(tests/store/test_one_writer.py) and components built from what they use
(tests/crawl/test_built_from_what_they_use.py)."""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "searchcrawl"

# Lowest first; the packages of one level may import each other, and nothing of a higher level.
# The top-level modules (searchcrawl/cli.py, settings.py, __init__.py) stand above every package.
LEVELS: tuple[frozenset[str], ...] = tuple(
    frozenset(level.split())
    for level in (
        "system",  # the floor: what every level needs of the machine it runs on (secrets, processes, paths, package files)
        "sources",  # the packaged example source: data, no code
        "rules",
        "access",
        "content",
        "agents",
        "config",
        "store",
        "index",
        "ops",
        "crawl web",
        "dev",  # development servers, the example site and its spider (a SourceSpider): for commands and tests
        "commands",
    )
)
TOP = "(top)"

# (importing module, imported module): an import that runs upward, and why it still does
UPWARD: dict[tuple[str, str], str] = {
    ("searchcrawl.store.relevance_rules", "searchcrawl.web.relevance"): "issue 73: to move",
    ("searchcrawl.store.searches", "searchcrawl.web.relevance"): "issue 73: to move",
}


# A class or type name that more than one module defines: the modules' prefix it is allowed under, and why
DEFINED_TWICE: dict[str, tuple[str, str]] = {
    "Command": ("searchcrawl.commands.", "Scrapy finds each command as the class named Command of its module"),
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


def test_packages_form_no_cycle() -> None:
    """Packages of one level may import each other, but not in a circle (crawl/ and web/ do not
    import each other at all): with the imports of UPWARD left out, the packages form no cycle."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = module_name(path)
        for imported in imports(path):
            if package_of(imported) != package_of(importer) and (importer, imported) not in UPWARD:
                graph.setdefault(package_of(importer), set()).add(package_of(imported))
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        raise AssertionError(f"packages import each other in a circle: {' -> '.join(error.args[1])}") from None


def test_module_and_package_names() -> None:
    assert module_name(PACKAGE / "store" / "__init__.py") == "searchcrawl.store"
    assert module_name(PACKAGE / "store" / "runs.py") == "searchcrawl.store.runs"
    assert package_of("searchcrawl.cli") == TOP and package_of("searchcrawl.store.runs") == "store"


def defined_names(path: Path) -> Iterator[str]:
    """The classes and type aliases ``path`` defines at its top level: a class, or a capitalised
    name that is not a constant (``LoginOutcome = tuple[...]``; constants are upper case)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            yield from (
                target.id
                for target in targets
                if isinstance(target, ast.Name) and target.id[:1].isupper() and not target.id.isupper()
            )


def test_no_name_is_defined_in_two_modules() -> None:
    where: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in defined_names(path):
            where.setdefault(name, []).append(module_name(path))
    twice = {
        name: modules
        for name, modules in where.items()
        if len(modules) > 1
        and not (name in DEFINED_TWICE and all(module.startswith(DEFINED_TWICE[name][0]) for module in modules))
    }
    assert not twice, "names defined in more than one module (give each concept one name):\n" + "\n".join(
        f"  {name}: {', '.join(modules)}" for name, modules in sorted(twice.items())
    )
    unused = [name for name in DEFINED_TWICE if len(where.get(name, [])) < 2]
    assert not unused, f"named in DEFINED_TWICE but defined once at most (remove them from the list): {unused}"


def test_defined_names() -> None:
    assert set(defined_names(PACKAGE / "crawl" / "middlewares" / "form_login.py")) >= {"LoginOutcome", "FormLoginMiddleware"}
    assert "RESEND_PAUSE" not in set(defined_names(PACKAGE / "crawl" / "middlewares" / "form_login.py"))
