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
import re
from collections.abc import Iterator
from pathlib import Path

from tests.syntax_trees import PACKAGE, package_modules, tree_of

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
        "semantic",  # passages, their vectors and the models that make them (issue 76)
        "search",
        "ops",
        "crawl web",
        "dev",  # development servers, the example site and its spider (a SourceSpider): for commands and tests
        "commands",
    )
)
TOP = "(top)"

# (importing module, imported module): an import that runs upward, and why it still does
UPWARD: dict[tuple[str, str], str] = {
    # none: each package imports only its own level or lower
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
    for node in ast.walk(tree_of(path)):
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
    for path in package_modules():
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
    for path in package_modules():
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
    for node in tree_of(path).body:
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
    for path in package_modules():
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


# --- The Searcher trims ----------------------------------------------------------------------------
# Only search/searcher.py's TrimmedIndex sends a searcher's query to Solr, and it adds the searcher's
# trimming (access/decision.py ``solr_trimming``) to every request itself; the code that builds a
# searcher's query is handed a TrimmedIndex, never the raw client. Read from the syntax trees:
#   * a call of ``.search`` on a Solr client happens only in the functions named in UNTRIMMED: the
#     TrimmedIndex's own, and the operators' untrimmed paths, each with its reason. A call counts as
#     Solr's when its receiver is not known to be something else (annotated TrimmedIndex: the
#     trimmed door; annotated another type, an LDAP connection say: not Solr) and it passes keyword
#     arguments (Solr's parameters; a regular expression's search takes the text alone) or its
#     receiver is named like a client (solr, index, client);
#   * ``solr_trimming`` is named in searcher.py alone (and defined in access/decision.py);
#   * in web/, commands/ and search/, the raw client (a parameter annotated SolrIndex or
#     pysolr.Solr, a name or ``self.`` attribute built from one) is handed only to the callees named
#     in RAW_CLIENT_TAKERS, and taken as a parameter only by the functions named in
#     RAW_CLIENT_PARAMETERS.

SEARCHER = "searchcrawl.search.searcher"
TRIMMING = "solr_trimming"
SOLR_TYPES = frozenset(
    {"SolrIndex", "pysolr.Solr", "SolrIndex | None", "IndexedDocuments"}
)  # and explain-access's Protocol of it
CLIENT_ATTRIBUTE = "solr"  # the web context's client (ctx.solr), as any object's
TRIMMED_TYPE = "TrimmedIndex"
UNKNOWN_TYPES = frozenset({"", "Any", "typing.Any", "object"})  # a receiver that could be a Solr client
CLIENT_NAME = re.compile(r"solr|index|client", re.IGNORECASE)

# (module, function): a ``.search`` of Solr without a searcher's trimming, and why
UNTRIMMED: dict[tuple[str, str], str] = {
    (SEARCHER, "TrimmedIndex._trimmed"): "the door itself: it adds the searcher's trimming to every request it sends",
    ("searchcrawl.index.solr_client", "SolrIndex.search"): "the client's one query method (pysolr's, failing over between nodes)",
    (
        "searchcrawl.index.solr_client",
        "SolrIndex.sources",
    ): "operators: the sources the index holds (status, the admin page), names only",
    (
        "searchcrawl.index.solr_client",
        "SolrIndex.document_count",
    ): "operators: the admin page's Solr health, the whole index's count",
    ("searchcrawl.index.solr_client", "cursor_pages"): (
        "operators and the crawl: every document of a source, for the id migration (`scrapy solr migrate-ids`) and a"
        " new document table taking the index over"
    ),
    ("searchcrawl.access.explanation", "held_documents"): (
        "operators: explain-access shows every source's copy of a URL with its access, untrimmed by design"
    ),
    ("searchcrawl.search.answer_explanation", "documents_access"): (
        "operators: explain-answer shows the access of the documents an answer considered or withheld, untrimmed by design"
    ),
    ("searchcrawl.search.answer_explanation", "withheld"): (
        "operators: explain-answer lists the nearest passages the user may not read, with why (an administrator's view)"
    ),
    ("searchcrawl.semantic.passage_index", "PassageIndex.pending"): "the passages' upkeep: documents waiting (a count)",
    ("searchcrawl.semantic.passage_index", "PassageIndex.models"): "the passages' upkeep: passages a model (counts)",
    ("searchcrawl.semantic.passage_index", "complete"): "a backfill's switch: documents without the new model's (a count)",
    ("searchcrawl.semantic.passage_index", "has_passages"): "a backfill's switch: the old model's passages (a count)",
}

# (module, callee as written): where web/, commands/ or search/ hand on the raw client, and why
RAW_CLIENT_TAKERS: dict[tuple[str, str], str] = {
    ("searchcrawl.web.views.search_views", "TrimmedIndex"): "the search page's searcher's query",
    ("searchcrawl.web.views.api_views", "TrimmedIndex"): "the JSON API's searcher's query",
    ("searchcrawl.web.views.agent_views", "TrimmedIndex"): "the agent endpoint's tools: the API token's searcher's query",
    ("searchcrawl.web.views.relevance_views", "TrimmedIndex"): "why this hit is here, as the searcher sees it",
    ("searchcrawl.web.context", "TrimmedIndex"): "suggestions of titles and past searches, as the searcher may read",
    ("searchcrawl.commands.search", "TrimmedIndex"): "`scrapy search [--as USER]`: the searcher's query",
    (
        "searchcrawl.commands.relevance",
        "TrimmedIndex",
    ): "`scrapy relevance [--as USER]`: judged queries, as the searcher searches",
    ("searchcrawl.commands.demo", "TrimmedIndex"): "`scrapy demo`'s searches of the example site, as the public",
    (
        "searchcrawl.web.context",
        "managed.sync",
    ): "operators: the relevance page's synonyms and stopwords into Solr's managed resources",
    ("searchcrawl.web.views.admin_views", "admin.solr_health"): "operators: Solr's health on the admin page",
    ("searchcrawl.web.views.admin_views", "admin.explain_access"): "operators: explain-access on the admin page",
    ("searchcrawl.web.admin", "index.document_count"): "operators: Solr's health, the whole index's count",
    ("searchcrawl.web.admin", "index.ping"): "operators: Solr's health",
    ("searchcrawl.web.admin", "access_lines"): "operators: explain-access (access/explanation.py's held_documents)",
    ("searchcrawl.commands.explain-access", "access_lines"): "operators: `scrapy explain-access`",
    ("searchcrawl.commands.solr", "index.sources"): "operators: `scrapy solr migrate-ids` of every source the index holds",
    ("searchcrawl.commands.solr", "migrate_ids"): "operators: `scrapy solr migrate-ids`",
    ("searchcrawl.commands.summary", "service_problems"): "operators: the daily summary's check that Solr answers",
    ("searchcrawl.commands.embed", "PassageIndex"): "operators: `scrapy embed`, the passages' upkeep",
    ("searchcrawl.commands.explain-answer", "semantic_search"): "semantic search's backfill switch: counts of passages",
    ("searchcrawl.commands.explain-answer", "explain_answer"): "operators: `scrapy explain-answer`'s untrimmed view",
    ("searchcrawl.web.views.admin_views", "in_thread"): "operators: the explain-answer page's untrimmed view, off the event loop",
    ("searchcrawl.search.answer_explanation", "TrimmedIndex"): "explain-answer: the answer as the user gets it, trimmed",
    ("searchcrawl.commands.relevance", "semantic_search"): "semantic search's backfill switch: counts of passages",
    ("searchcrawl.commands.search", "semantic_search"): "semantic search's backfill switch: counts of passages",
    ("searchcrawl.web.context", "semantic_search"): "semantic search's backfill switch: counts of passages",
    ("searchcrawl.search.hybrid", "complete"): "semantic search's backfill switch: a count of documents",
    ("searchcrawl.search.hybrid", "has_passages"): "semantic search's backfill switch: a count of passages",
}
# (module, function): a function of web/, commands/ or search/ that takes the raw client, and why
RAW_CLIENT_PARAMETERS: dict[tuple[str, str], str] = {
    (SEARCHER, "TrimmedIndex.__init__"): "the door: the client shared by every request, and one searcher's principals",
    ("searchcrawl.web.admin", "solr_health"): "operators: Solr's health on the admin page",
    ("searchcrawl.web.admin", "explain_access"): "operators: explain-access on the admin page",
    ("searchcrawl.search.hybrid", "semantic_search"): "semantic search's backfill switch: counts, never a searcher's query",
    ("searchcrawl.search.answer_explanation", "explain_answer"): "operators: explain-answer's untrimmed view",
    ("searchcrawl.search.answer_explanation", "withheld"): "operators: explain-answer's untrimmed view",
    ("searchcrawl.search.answer_explanation", "documents_access"): "operators: explain-answer's untrimmed view",
}
HANDED_ON = ("searchcrawl.web.", "searchcrawl.commands.", "searchcrawl.search.")


def _annotation(node: ast.arg) -> str:
    return ast.unparse(node.annotation) if node.annotation is not None else ""


class _Scopes(ast.NodeVisitor):
    """Walks a module keeping the qualified name of the function (or class) around each node, the
    names each function knows the type of (its annotated parameters, ``name = Type(...)``), and
    the ``self.`` attributes the module builds from a Solr client."""

    def __init__(self, tree: ast.Module) -> None:
        self.path: list[str] = []
        self.known: list[dict[str, str]] = [{}]
        self.raw_attributes = {
            ast.unparse(target)
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            if ast.unparse(node.value.func) in SOLR_TYPES
            for target in node.targets
            if isinstance(target, ast.Attribute)
        }

    @property
    def where(self) -> str:
        return ".".join(self.path) or "(module)"

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.path.append(node.name)
        self.generic_visit(node)
        self.path.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.path.append(node.name)
        arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        known = {**self.known[-1], **{argument.arg: _annotation(argument) for argument in arguments}}
        for child in ast.walk(node):
            if isinstance(child, ast.Assign) and isinstance(child.value, ast.Call):
                for target in child.targets:
                    if isinstance(target, ast.Name):
                        known[target.id] = ast.unparse(child.value.func)
        self.known.append(known)
        self.function(node, arguments)
        self.generic_visit(node)
        self.known.pop()
        self.path.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815 - ast.NodeVisitor's name

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, arguments: list[ast.arg]) -> None:
        """Called for each function, its arguments given."""

    def type_of(self, node: ast.expr) -> str:
        """The type known of ``node`` ("" when none): a name's, or a Solr client's for a
        ``self.`` attribute built from one."""
        if isinstance(node, ast.Name):
            return self.known[-1].get(node.id, "")
        if isinstance(node, ast.Call):
            return ast.unparse(node.func)
        if ast.unparse(node) in self.raw_attributes:
            return "SolrIndex"
        if isinstance(node, ast.Attribute) and node.attr == CLIENT_ATTRIBUTE:
            return "SolrIndex"
        return ""


class _SolrQueries(_Scopes):
    def __init__(self, tree: ast.Module) -> None:
        super().__init__(tree)
        self.found: list[str] = []

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "search":
            known = self.type_of(func.value)
            if known == TRIMMED_TYPE or known not in {*SOLR_TYPES, *UNKNOWN_TYPES}:
                pass  # the trimmed door, or an object of another kind (an LDAP connection)
            elif node.keywords or known in SOLR_TYPES or CLIENT_NAME.search(ast.unparse(func.value)):
                self.found.append(self.where)
        self.generic_visit(node)


class _RawClientHandedOn(_Scopes):
    def __init__(self, tree: ast.Module) -> None:
        super().__init__(tree)
        self.found: list[str] = []

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, arguments: list[ast.arg]) -> None:
        if any(_annotation(argument) in SOLR_TYPES for argument in arguments):
            self.found.append(self.where)

    def visit_Call(self, node: ast.Call) -> None:
        given = [*node.args, *(keyword.value for keyword in node.keywords)]
        if isinstance(node.func, ast.Attribute):
            given.append(node.func.value)  # a method of the raw client
        raw = [argument for argument in given if self.type_of(argument) in SOLR_TYPES]
        if raw and not (isinstance(node.func, ast.Attribute) and node.func.attr == "search"):  # a query: _SolrQueries'
            self.found.append(ast.unparse(node.func))
        self.generic_visit(node)


def _parsed(source: ast.Module | str) -> ast.Module:
    """A module's tree (a package module's, parsed once a session: tests/syntax_trees.py), or a snippet's."""
    return source if isinstance(source, ast.Module) else ast.parse(source)


def solr_queries(module: str, source: ast.Module | str) -> set[tuple[str, str]]:
    """The (module, function) pairs of ``source`` that call ``.search`` on a Solr client."""
    tree = _parsed(source)
    visitor = _SolrQueries(tree)
    visitor.visit(tree)
    return {(module, where) for where in visitor.found}


def trimming_named(module: str, source: ast.Module | str) -> bool:
    """Whether ``source`` names ``solr_trimming`` (imports, calls or passes it)."""
    for node in ast.walk(_parsed(source)):
        if isinstance(node, ast.Name) and node.id == TRIMMING or isinstance(node, ast.Attribute) and node.attr == TRIMMING:
            return True
        if isinstance(node, ast.ImportFrom) and any(alias.name == TRIMMING for alias in node.names):
            return True
    return False


def raw_client_handed_on(module: str, source: ast.Module | str) -> set[tuple[str, str]]:
    """The (module, callee) pairs of ``source`` that are handed the raw Solr client, and the
    (module, function) pairs that take it as a parameter (in web/, commands/ and search/)."""
    if not module.startswith(HANDED_ON):
        return set()
    tree = _parsed(source)
    visitor = _RawClientHandedOn(tree)
    visitor.visit(tree)
    return {(module, where) for where in visitor.found}


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for path in package_modules():
        yield module_name(path), tree_of(path)


def test_only_the_searcher_and_the_named_operator_paths_query_solr() -> None:
    found = {pair for module, source in _sources() for pair in solr_queries(module, source)}
    new = sorted(found - UNTRIMMED.keys())
    assert not new, "Solr asked outside search/searcher.py (hand the code a TrimmedIndex, or name an operator's path):\n" + (
        "\n".join(f"  {module}: {where}" for module, where in new)
    )
    gone = sorted(UNTRIMMED.keys() - found)
    assert not gone, "named in UNTRIMMED but no longer asking Solr (remove them):\n" + "\n".join(
        f"  {module}: {where}" for module, where in gone
    )


def test_only_the_searcher_builds_the_trimming() -> None:
    named = sorted(module for module, source in _sources() if trimming_named(module, source))
    assert named == [SEARCHER], "solr_trimming named outside search/searcher.py (ask through a TrimmedIndex)"


def test_web_and_the_commands_never_hand_the_raw_client_to_a_searchers_query() -> None:
    found = {pair for module, source in _sources() for pair in raw_client_handed_on(module, source)}
    named = RAW_CLIENT_TAKERS.keys() | RAW_CLIENT_PARAMETERS.keys()
    new = sorted(found - named)
    assert not new, "the raw Solr client handed on (a searcher's query takes a TrimmedIndex):\n" + "\n".join(
        f"  {module}: {where}" for module, where in new
    )
    gone = sorted(named - found)
    assert not gone, (
        "named in RAW_CLIENT_TAKERS or RAW_CLIENT_PARAMETERS but no longer handed the client (remove them):\n"
        + "\n".join(f"  {module}: {where}" for module, where in gone)
    )


RAW_CALLS = """
import re
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.search.searcher import TrimmedIndex

WORD = re.compile(r"\\w")

class Page:
    def __init__(self, url):
        self.solr = SolrIndex(url)

    def count(self, principals):
        return self.solr.search("*:*", rows=0).hits  # a ninth raw call: no trimming

    def page(self, principals, query):
        return run_search(self.solr, query, principals)  # the raw client handed to a searcher's query

def spelled(client, text):
    return client.search(text)

def readable(index: TrimmedIndex, text):
    return index.search(text, {"rows": 0}) if WORD.search(text) else None

def listed(connection: "ldap3.Connection"):
    return connection.search("dc=x", "(cn=*)", attributes=["cn"])

def boosted(client: Any, query, params):
    return client.search(query, **params)
"""


def test_the_searchers_rule_finds_a_raw_call_a_raw_client_handed_on_and_the_trimming_built() -> None:
    module = "searchcrawl.web.page"
    assert solr_queries(module, RAW_CALLS) == {(module, "Page.count"), (module, "spelled"), (module, "boosted")}
    assert raw_client_handed_on(module, RAW_CALLS) == {(module, "run_search")}
    assert not trimming_named(module, RAW_CALLS)
    assert trimming_named(module, "from searchcrawl.access.decision import solr_trimming\n")
    assert trimming_named(module, "import searchcrawl.access.decision as d\nfilters = d.solr_trimming(p)\n")
    taking = "def count(index: SolrIndex) -> int:\n    return index.document_count()\n"
    assert raw_client_handed_on(module, taking) == {(module, "count"), (module, "index.document_count")}
    # a view handed the web context hands on its client as ctx.solr: found as well
    view = "async def search(ctx: WebContext, request: Request) -> Response:\n    return run_search(ctx.solr, query)\n"
    assert raw_client_handed_on("searchcrawl.web.views.search_views", view) == {
        ("searchcrawl.web.views.search_views", "run_search")
    }
    asked = "def count(ctx: WebContext) -> int:\n    return ctx.solr.search('*:*', rows=0).hits\n"
    assert solr_queries(module, asked) == {(module, "count")}
