"""dev/ stays a kit, not a second product (issue 101): read from the syntax trees, no module of
searchcrawl imports searchcrawl/dev/ but dev/ itself and the kit's commands (``KIT_COMMANDS``:
`scrapy dev`, `scrapy demo`, `scrapy solr`, `scrapy tika`), nor names a module of it to be loaded
by name (``"searchcrawl.dev.x:Name"``) but where ``BY_NAME`` says why (the list only shrinks). A
module of the product that needs something of dev/ shows that the thing lives too high: it moves
below dev/ (a level of tests/test_architecture.py's ``LEVELS``).

dev/ ships in the wheel, servers/ too (docs/architecture.md, "dev/ in the wheel"): `scrapy dev
<kind>` starts those servers where the wheel is installed. That costs an installation nothing
only while importing any module of dev/ needs no more than the wheel's own dependencies: an
extra's package (xllamacpp, the ``model`` extra) is imported inside the function that needs it."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import packages_distributions

from tests.conftest import ROOT
from tests.syntax_trees import PACKAGE, package_modules, source_of, tree_of
from tests.test_architecture import module_name

DEV = "searchcrawl.dev"
KIT_COMMANDS = frozenset(f"searchcrawl.commands.{name}" for name in ("dev", "demo", "solr", "tika"))
# (module, the dev/ module or object it names to be loaded by name): why it still does
BY_NAME: dict[tuple[str, str], str] = {
    ("searchcrawl.config.implementations", "searchcrawl.dev.example_spider:ExampleSiteSpider"): (
        "the packaged example source (sources/example.toml) names its spider, which serves the example "
        "intranet while it crawls, by its registered name `example_site`; loaded only when a source names it"
    ),
}
LOADED_BY_NAME = re.compile(r"searchcrawl\.dev(\.\w+)*(:[\w.]+)?")


def dev_uses(tree: ast.Module, module: str, package: bool = False) -> Iterator[tuple[str, bool]]:
    """What ``tree`` (the module ``module``; ``package``: an ``__init__``) uses of dev/, each with
    whether it imports it: the modules it imports, at any depth of its code, relative imports
    resolved and ``from searchcrawl import dev`` too; and each string that names one to be loaded
    (a whole string: a docstring's mention is none)."""
    base = module.split(".") if package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names, imported = [alias.name for alias in node.names], True
        elif isinstance(node, ast.ImportFrom):
            anchor = ".".join([*base[: len(base) - node.level + 1], *([node.module] if node.module else [])])
            origin = anchor if node.level else node.module or ""
            names, imported = [origin, *(f"{origin}.{alias.name}" for alias in node.names)], True
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and LOADED_BY_NAME.fullmatch(node.value):
            names, imported = [node.value], False
        else:
            continue
        yield from {(name, imported) for name in names if re.match(rf"{re.escape(DEV)}\b", name)}


def users_of_dev() -> dict[tuple[str, str], bool]:
    """(module outside dev/, what it uses of dev/) -> whether it imports it (else: names it to be loaded)."""
    found = {}
    for path in package_modules():
        module = module_name(path)
        if module == DEV or module.startswith(f"{DEV}.") or not re.search(r"\bdev\b", source_of(path)):
            continue  # dev/ itself; a module without the word imports nothing of it (its tree not walked)
        for used, imported in dev_uses(tree_of(path), module, path.name == "__init__.py"):
            found[module, used] = imported
    return found


def test_only_the_kits_commands_import_dev() -> None:
    found = users_of_dev()
    imports = sorted(
        f"  {module} imports {used}" for (module, used), imported in found.items() if imported and module not in KIT_COMMANDS
    )
    assert not imports, "only the kit's commands import dev/ (move what they need below it):\n" + "\n".join(imports)
    named = {use for use, imported in found.items() if not imported}
    assert named == set(BY_NAME), f"loaded by name from dev/: {sorted(named)}; named in BY_NAME: {sorted(BY_NAME)}"


def test_the_rule_finds_every_way_in() -> None:
    code = '''
"""A docstring that mentions searchcrawl.dev.solr_runner is no import."""
import searchcrawl.dev.examples as examples
from searchcrawl import dev
from ..dev.servers import slapd
from searchcrawl.crawl import spider

SPIDER = "searchcrawl.dev.example_spider:ExampleSiteSpider"


def late():
    from searchcrawl.dev.servers.llama_server import ModelServer
'''
    found = set(dev_uses(ast.parse(code), "searchcrawl.web.views"))
    assert found == {
        ("searchcrawl.dev.examples", True),
        ("searchcrawl.dev", True),
        ("searchcrawl.dev.servers", True),
        ("searchcrawl.dev.servers.slapd", True),
        ("searchcrawl.dev.servers.llama_server", True),
        ("searchcrawl.dev.servers.llama_server.ModelServer", True),
        ("searchcrawl.dev.example_spider:ExampleSiteSpider", False),
    }


def dependencies() -> set[str]:
    """The distributions the wheel installs (pyproject.toml's dependencies, names normalized)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {normalized(re.match(r"[\w.-]+", requirement)[0]) for requirement in project["dependencies"]}  # type: ignore[index]


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_dev_imports_on_loading_only_what_the_wheel_installs() -> None:
    """A module's own imports (its top level) of dev/, servers/ too: the standard library,
    searchcrawl, or a distribution of the wheel's dependencies; an extra's only where it is used."""
    installs, distributions = dependencies(), packages_distributions()
    beyond = set()
    for path in (PACKAGE / "dev").rglob("*.py"):
        for node in tree_of(path).body:
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            for top in {name.split(".")[0] for name in names} - {"searchcrawl", "__future__"} - sys.stdlib_module_names:
                if not installs & {normalized(name) for name in distributions.get(top, [])}:
                    beyond.add(f"  {path.relative_to(PACKAGE.parent)}: {top}")
    assert not beyond, "dev/ ships in the wheel; import these inside the function that needs them:\n" + "\n".join(sorted(beyond))
