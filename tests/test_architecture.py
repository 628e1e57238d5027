"""The levels of the code (issue 73), read from its syntax trees: each package of searchcrawl imports
only packages of a lower level, in the order declared once here (``LEVELS``), and the packages that
share a level (crawl/ and web/) import each other nowhere. A lower
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

# Lowest first; a package imports nothing of a higher level, and the packages of one level stand
# side by side: they import each other nowhere (a crawl without the web application, and the other
# way round), what both need lives below them.
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


def side_by_side_imports() -> set[tuple[str, str]]:
    """The (importer, imported) pairs of two packages that share a level (crawl/ and web/)."""
    found = set()
    for path in package_modules():
        importer = module_name(path)
        for imported in imports(path):
            mine, theirs = package_of(importer), package_of(imported)
            if mine != theirs and TOP not in (mine, theirs) and level_of(mine) == level_of(theirs):
                found.add((importer, imported))
    return found


def test_packages_of_one_level_import_each_other_nowhere() -> None:
    """crawl/ and web/ stand side by side: neither imports the other, in either direction (a cycle
    test alone let web/source_editor.py import crawl/own_services.py, since crawl/ imports nothing
    of web/). What both need moves below them."""
    found = sorted(side_by_side_imports() - UPWARD.keys())
    assert not found, "packages of one level import each other (move what both need below them):\n" + "\n".join(
        f"  {importer} imports {imported}" for importer, imported in found
    )


def test_packages_form_no_cycle() -> None:
    """With the imports of UPWARD left out, the packages form no import cycle."""
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
# trimming (access/decision.py ``solr_trimming``) to every request itself. Views and commands are
# given the searcher's index alone, its principals bound once where the searcher is known; the raw
# client reaches the operators' untrimmed paths alone. Read from the syntax trees as a small type
# check: each function's names are typed from their annotations and what they are assigned (an
# alias of the raw client, ``s = ctx.solr``, is the raw client), and
#   * Solr is asked without a searcher's trimming (``.search`` on the raw client, or a string naming
#     one of Solr's read handlers: ``"select?..."``, ``"/select"``, ``"/get?id=..."``) only in the
#     functions named in UNTRIMMED: the door's own, and the operators' paths, each with its reason;
#   * a TrimmedIndex is built (principals bound to Solr) only in TRIMMED_BUILDERS: where a searcher
#     is known (the web context, once a request; a command's ``--as USER``) and explain-answer;
#   * ``solr_trimming`` is named in searcher.py alone (and defined in access/decision.py);
#   * the web context's client is private (``_solr``, read in web/context.py alone): the operators'
#     paths get it from its accessor ``operator_solr``, whose callers OPERATOR_SOLR_CALLERS names;
#   * the web context's ``searcher(principals)`` (the door that binds any principals) is reached only
#     from SEARCHER_CALLERS, each with its reason;
#   * in web/, commands/ and search/ the TrimmedIndex's private attributes (``_index``, the raw
#     client; ``_filters``, ``_params``) are read in search/searcher.py alone, and nothing reflects
#     (``vars()``, ``__dict__``, ``setattr``, ``getattr`` with a name that is not a literal): a
#     reflected value, or an object's ``_index``, is typed as the raw client (fail closed);
#   * in web/, commands/ and search/, the raw client (a parameter annotated SolrIndex or pysolr.Solr,
#     a name or ``self.`` attribute given one) is handed only to code that may take it: a function of
#     RAW_CLIENT_PARAMETERS, UNTRIMMED or RAW_CLIENT_TAKERS (each named with its reason), a method of
#     the client itself, or the door (TrimmedIndex, by the second rule); handed to anything else (a
#     searcher's query, a helper, functools.partial, a new module below search/), it fails.

SEARCHER = "searchcrawl.search.searcher"
TRIMMING = "solr_trimming"
SOLR_TYPES = frozenset(
    {"SolrIndex", "pysolr.Solr", "SolrIndex | None", "IndexedDocuments"}
)  # and explain-access's Protocol of it
# the web context's client (``ctx._solr``; ``ctx.solr`` before), and the one a TrimmedIndex holds (``_index``), as any object's
CLIENT_ATTRIBUTES = frozenset({"solr", "_solr", "_index"})
PRIVATE_CLIENT = ("searchcrawl.web.context", "_solr")  # the web context's client, read in its module alone
# the private attributes of the searcher's door, read in its module alone (in web/, commands/ and search/)
PRIVATE_TRIMMING = frozenset({"_index", "_filters", "_params", "_principals"})
# reflection that reads or sets any attribute, a private one too (``vars(ctx)["_solr"]``, ``ctx.__dict__``)
REFLECTION_CALLS = frozenset({"vars", "setattr", "delattr"})
REFLECTION_ATTRIBUTES = frozenset({"__dict__", "__setattr__", "__getattribute__", "__delattr__", "__slots__"})
SEARCHER_ACCESSOR = "searcher"  # WebContext.searcher(principals): the door that binds principals, for SEARCHER_CALLERS
OPERATOR_ACCESSOR = "operator_solr"  # WebContext.operator_solr(): the raw client, for the operators' paths
TRIMMED_TYPE = "TrimmedIndex"
UNKNOWN_TYPES = frozenset({"", "Any", "typing.Any", "object"})  # a receiver that could be a Solr client
CLIENT_NAME = re.compile(r"solr|index|client", re.IGNORECASE)
# a path of one of Solr's handlers that read documents (a string that is the word alone is not one,
# but for ``select``: "query" is a form field, "get" an HTTP method)
SOLR_READ = re.compile(r"(?:^|/)(?:select|query|get|terms|tvrh|mlt|stream|sql|graph|spell)(?:[?/]|$)")
HANDED_ON = ("searchcrawl.web.", "searchcrawl.commands.", "searchcrawl.search.")
# a function handed another function and its arguments, to call it in a thread: the one called is the taker
RUNNERS = frozenset({"in_thread", "in_limited_thread", "run_in_threadpool", "run_sync"})

# (module, function): Solr asked without a searcher's trimming, and why
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
    ("searchcrawl.dev.solr_runner", "DevSolr.status"): "`scrapy solr status` of the development Solr: the whole core's count",
}

# (module, function): where a TrimmedIndex is built (principals bound to Solr), and why there
TRIMMED_BUILDERS: dict[tuple[str, str], str] = {
    ("searchcrawl.web.context", "WebContext.searcher"): (
        "the web application's searcher, once a request where it is known (the sign-in, the proxy's header, an API token)"
    ),
    ("searchcrawl.commands.search", "searcher_index"): "the commands' searcher, once from `--as USER` (search, relevance, demo)",
    ("searchcrawl.search.answer_explanation", "explain_answer"): (
        "operators: explain-answer gives the answer as the user named gets it, beside what was withheld"
    ),
}

# (module, function): who gets the web context's raw client from its accessor, and why
OPERATOR_SOLR_CALLERS: dict[tuple[str, str], str] = {
    ("searchcrawl.web.views.admin_views", "overview.gather"): "operators: Solr's health on the administration's overview",
    ("searchcrawl.web.views.admin_views", "explain_access"): "operators: explain-access on the administration's page",
    ("searchcrawl.web.views.admin_views", "explain_answer"): "operators: explain-answer's untrimmed view on its page",
}

# (module, function): who may call the web context's searcher(principals), and why (the principals are the searcher's)
SEARCHER_CALLERS: dict[tuple[str, str], str] = {
    ("searchcrawl.web.shared", "who_searches"): (
        "the page's searcher: the signed-in session's, the proxy's header's, or the public's (the principals looked up)"
    ),
    ("searchcrawl.web.views.api_views", "api_caller"): "the JSON API's and the agents' token: the public's, or user='s",
    ("searchcrawl.web.views.sign_on_views", "signin"): "the sign-in page: the public's alone",
}

# (module, function) below web/, commands/ and search/ that is handed the raw client, and why
RAW_CLIENT_TAKERS: dict[tuple[str, str], str] = {
    ("searchcrawl.semantic.passage_index", "PassageIndex"): "operators: `scrapy embed`, the passages' upkeep (counts)",
    ("searchcrawl.access.explanation", "access_lines"): "operators: explain-access (held_documents, untrimmed by design)",
    ("searchcrawl.index.id_migration", "migrate_ids"): "operators: `scrapy solr migrate-ids` of every source's documents",
    ("searchcrawl.ops.daily_summary", "service_problems"): "operators: the daily summary's check that Solr answers",
    ("searchcrawl.index.managed", "sync"): "operators: the relevance page's synonyms and stopwords into Solr's managed resources",
}

# (module, function): a function of web/, commands/ or search/ that takes the raw client, and why
RAW_CLIENT_PARAMETERS: dict[tuple[str, str], str] = {
    (SEARCHER, "TrimmedIndex.__init__"): "the door: the client shared by every request, and one searcher's principals",
    ("searchcrawl.commands.search", "searcher_index"): "the commands' door: the client of SOLR_URL, or the demo's own Solr",
    ("searchcrawl.web.admin", "solr_health"): "operators: Solr's health on the admin page",
    ("searchcrawl.web.admin", "explain_access"): "operators: explain-access on the admin page",
    ("searchcrawl.search.hybrid", "semantic_search"): "semantic search's backfill switch: counts, never a searcher's query",
    ("searchcrawl.commands.search", "semantic_of"): "`scrapy search`'s semantic search: handed on to semantic_search alone",
    ("searchcrawl.search.answer_explanation", "explain_answer"): "operators: explain-answer's untrimmed view",
}


def _annotation(node: ast.arg) -> str:
    return ast.unparse(node.annotation) if node.annotation is not None else ""


def _imported(tree: ast.Module) -> dict[str, str]:
    """The names a module imports, each to what it names (``admin`` to ``searchcrawl.web.admin``,
    ``explain_answer_lines`` to ``searchcrawl.search.answer_explanation.explain_answer``)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.update({alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names})
        elif isinstance(node, ast.Import):
            names.update({alias.asname or alias.name: alias.name for alias in node.names})
    return names


def _assigned(node: ast.AST) -> Iterator[tuple[ast.expr, ast.expr | None, str]]:
    """The (target, value, annotation) pairs a statement or expression assigns, a tuple's item by item."""
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        annotation = ast.unparse(node.annotation) if isinstance(node, ast.AnnAssign) else ""
        for target in targets:
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(target.elts) == len(node.value.elts):
                yield from ((item, value, "") for item, value in zip(target.elts, node.value.elts, strict=True))
            else:
                yield target, node.value, annotation


class _Scopes(ast.NodeVisitor):
    """Walks a module keeping the qualified name of the function (or class) around each node, the
    types each function knows of its names (annotated parameters, what a name is assigned: a call
    of a class, the raw client or an alias of it), and the ``self.`` attributes given a raw client."""

    def __init__(self, tree: ast.Module) -> None:
        self.path: list[str] = []
        self.known: list[dict[str, str]] = [{}]
        self.raw_attributes: set[str] = set()
        self.raw_attributes = {
            ast.unparse(target)
            for node in ast.walk(tree)
            for target, value, _annotation in _assigned(node)
            if isinstance(target, ast.Attribute) and value is not None and self.type_of(value) in SOLR_TYPES
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
        self.known.append(known)
        assigned = [pair for child in ast.walk(node) for pair in _assigned(child) if isinstance(pair[0], ast.Name)]
        for _round in range(3):  # an alias of an alias: ``s = ctx.solr; t = s``
            for target, value, annotation in assigned:
                assert isinstance(target, ast.Name)
                typed = annotation or (self.type_of(value) if value is not None else "")
                if typed and known.get(target.id) not in SOLR_TYPES:  # the raw client, once given, stays
                    known[target.id] = typed
        self.function(node, arguments)
        self.generic_visit(node)
        self.known.pop()
        self.path.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815 - ast.NodeVisitor's name

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, arguments: list[ast.arg]) -> None:
        """Called for each function, its arguments given."""

    def type_of(self, node: ast.expr) -> str:
        """The type known of ``node`` ("" when none): a name's; a call's class (the raw client for
        the accessor ``operator_solr()`` and ``getattr(x, "solr")``); the raw client for an object's
        ``solr`` or ``_solr`` and a ``self.`` attribute given one; either side's of ``a if c else b``
        and ``a or b``, the raw client when one is."""
        if isinstance(node, ast.Name):
            return self.known[-1].get(node.id, "")
        if _reflects(node):
            return "SolrIndex"  # ``vars(ctx)["_solr"]``, ``getattr(ctx, name)``: could be the client
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == OPERATOR_ACCESSOR:
                return "SolrIndex"
            if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) > 1:
                name = node.args[1]
                if isinstance(name, ast.Constant) and name.value in CLIENT_ATTRIBUTES:
                    return "SolrIndex"
            return ast.unparse(func)
        if isinstance(node, ast.IfExp | ast.BoolOp):
            sides = [node.body, node.orelse] if isinstance(node, ast.IfExp) else node.values
            types = [self.type_of(side) for side in sides]
            return next((found for found in types if found in SOLR_TYPES), types[0])
        if isinstance(node, ast.NamedExpr):
            return self.type_of(node.value)
        if ast.unparse(node) in self.raw_attributes:
            return "SolrIndex"
        if isinstance(node, ast.Attribute) and node.attr in CLIENT_ATTRIBUTES:
            return "SolrIndex"
        return ""


class _SolrQueries(_Scopes):
    """The functions that ask Solr without a searcher's trimming: ``.search`` on the raw client,
    or a string naming one of Solr's read handlers."""

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

    def visit_Expr(self, node: ast.Expr) -> None:
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):  # a docstring: words
            self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and (found := SOLR_READ.search(node.value)):
            if node.value == "select" or found.group(0) != node.value:
                self.found.append(self.where)


class _RawClientHandedOn(_Scopes):
    """Where web/, commands/ or search/ hand the raw client to code that may not take it, and the
    functions that take it as a parameter."""

    def __init__(self, module: str, tree: ast.Module) -> None:
        super().__init__(tree)
        self.module = module
        self.imported = _imported(tree)
        self.found: list[str] = []

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, arguments: list[ast.arg]) -> None:
        if any(_annotation(argument) in SOLR_TYPES for argument in arguments):
            self.found.append(self.where)

    def callee(self, func: ast.expr) -> str:
        """What ``func`` calls, qualified: an imported function or class, a module's function
        (``admin.solr_health``), a function or method of this module (``self.``), a method of the
        raw client; "" when unknown (a closure's, another object's)."""
        if isinstance(func, ast.Name):
            defined = f"{self.module}.{func.id}"
            return self.imported.get(func.id, defined if func.id in self.defined else "")
        if isinstance(func, ast.Attribute):
            if self.type_of(func.value) in SOLR_TYPES:
                return f"searchcrawl.index.solr_client.SolrIndex.{func.attr}"
            if isinstance(func.value, ast.Name) and func.value.id == "self" and len(self.path) > 1:
                return f"{self.module}.{self.path[0]}.{func.attr}"
            owner = self.callee(func.value)
            return f"{owner}.{func.attr}" if owner else ""
        return ""

    def may_take(self, callee: str) -> bool:
        """Whether ``callee`` may be handed the raw client (see the rule's comment above): named
        in an allowlist, a method of the client, or the door; nothing else, whatever its package."""
        named = {f"{module}.{where}" for module, where in (*RAW_CLIENT_PARAMETERS, *UNTRIMMED, *RAW_CLIENT_TAKERS)}
        if callee in named or callee.startswith("searchcrawl.index.solr_client.SolrIndex."):
            return True
        return callee == f"{SEARCHER}.{TRIMMED_TYPE}"  # the door: who builds it is TRIMMED_BUILDERS' rule

    def visit_Module(self, node: ast.Module) -> None:
        self.defined = {
            child.name for child in node.body if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        }
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        given = [*node.args, *(keyword.value for keyword in node.keywords)]
        raw = [argument for argument in given if self.type_of(argument) in SOLR_TYPES]
        if raw:
            callee = self.callee(node.func)
            if ast.unparse(node.func).rpartition(".")[2] in RUNNERS:  # in_thread(function, client, ...): the function takes it
                called = next((self.callee(argument) for argument in node.args if self.callee(argument)), "")
                callee = called if called.startswith("searchcrawl.") else callee
            if not self.may_take(callee):
                self.found.append(f"{self.where}: {ast.unparse(node.func)}")
        self.generic_visit(node)


class _TrimmedBuilt(_Scopes):
    """The functions that build a TrimmedIndex, the callers of the raw client's accessor and of the
    web context's ``searcher``, and the readers of the web context's private client, of a
    TrimmedIndex's private attributes, or of any attribute by reflection (in web/, commands/ and
    search/)."""

    def __init__(self, module: str, tree: ast.Module) -> None:
        super().__init__(tree)
        self.module = module
        self.built: list[str] = []
        self.accessed: list[str] = []
        self.private: list[str] = []
        self.searchers: list[str] = []

    def visit_Call(self, node: ast.Call) -> None:
        name = ast.unparse(node.func).rpartition(".")[2]
        if name == TRIMMED_TYPE:
            self.built.append(self.where)
        elif name == OPERATOR_ACCESSOR:
            self.accessed.append(self.where)
        if self.module.startswith(HANDED_ON) and self.module != SEARCHER and _reflects(node):  # the door sets its own
            self.private.append(self.where)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == PRIVATE_CLIENT[1] and self.module != PRIVATE_CLIENT[0]:
            self.private.append(self.where)
        elif self.module.startswith(HANDED_ON) and self.module != SEARCHER and node.attr in PRIVATE_TRIMMING:
            self.private.append(self.where)
        elif self.module.startswith(HANDED_ON) and self.module != SEARCHER and node.attr in REFLECTION_ATTRIBUTES:
            self.private.append(self.where)
        if node.attr == SEARCHER_ACCESSOR:  # called, or taken to be called later (``make = ctx.searcher``)
            self.searchers.append(self.where)
        self.generic_visit(node)


def _reflects(node: ast.expr) -> bool:
    """Whether ``node`` reads or sets an attribute by reflection: ``vars(x)``, ``setattr(x, ...)``,
    ``x.__dict__``, or ``getattr(x, name)`` with a name that is not a literal."""
    for child in ast.walk(node):
        if isinstance(child, ast.Attribute) and child.attr in REFLECTION_ATTRIBUTES:
            return True
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
            if child.func.id in REFLECTION_CALLS:
                return True
            if child.func.id == "getattr" and len(child.args) > 1 and not isinstance(child.args[1], ast.Constant):
                return True
    return False


def _parsed(source: ast.Module | str) -> ast.Module:
    """A module's tree (a package module's, parsed once a session: tests/syntax_trees.py), or a snippet's."""
    return source if isinstance(source, ast.Module) else ast.parse(source)


def solr_queries(module: str, source: ast.Module | str) -> set[tuple[str, str]]:
    """The (module, function) pairs of ``source`` that ask Solr without a searcher's trimming."""
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
    """The (module, "function: callee") pairs of ``source`` where the raw Solr client is handed to
    code that may not take it, and the (module, function) pairs that take it as a parameter (in
    web/, commands/ and search/)."""
    if not module.startswith(HANDED_ON):
        return set()
    tree = _parsed(source)
    visitor = _RawClientHandedOn(module, tree)
    visitor.visit(tree)
    return {(module, where) for where in visitor.found}


def trimmed_built(module: str, source: ast.Module | str) -> dict[str, set[tuple[str, str]]]:
    """The (module, function) pairs of ``source`` that build a TrimmedIndex (``built``), call the
    raw client's accessor (``accessed``), read the web context's private client, a TrimmedIndex's
    private attributes or any attribute by reflection (``private``), and reach the web context's
    ``searcher`` (``searchers``)."""
    tree = _parsed(source)
    visitor = _TrimmedBuilt(module, tree)
    visitor.visit(tree)
    return {kind: {(module, where) for where in found} for kind, found in vars(visitor).items() if kind in KINDS}


KINDS = ("built", "accessed", "private", "searchers")


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for path in package_modules():
        yield module_name(path), tree_of(path)


def _named_exactly(found: set[tuple[str, str]], named: dict[tuple[str, str], str], what: str, fix: str) -> None:
    new = sorted(found - named.keys())
    assert not new, f"{what} outside the named places ({fix}):\n" + "\n".join(f"  {module}: {where}" for module, where in new)
    gone = sorted(named.keys() - found)
    assert not gone, f"named but no longer {what} (remove them):\n" + "\n".join(f"  {module}: {where}" for module, where in gone)


def test_only_the_searcher_and_the_named_operator_paths_query_solr() -> None:
    found = {pair for module, source in _sources() for pair in solr_queries(module, source)}
    _named_exactly(found, UNTRIMMED, "Solr asked untrimmed", "hand the code a TrimmedIndex, or name an operator's path")


def test_only_the_searcher_builds_the_trimming() -> None:
    named = sorted(module for module, source in _sources() if trimming_named(module, source))
    assert named == [SEARCHER], "solr_trimming named outside search/searcher.py (ask through a TrimmedIndex)"


def test_web_and_the_commands_never_hand_the_raw_client_to_a_searchers_query() -> None:
    found = {pair for module, source in _sources() for pair in raw_client_handed_on(module, source)}
    taking = {pair for pair in found if ": " not in pair[1]}
    handed = sorted(found - taking)
    assert not handed, "the raw Solr client handed on (a searcher's query takes the searcher's index):\n" + "\n".join(
        f"  {module}: {where}" for module, where in handed
    )
    # a function that asks Solr untrimmed takes the client, named once, in UNTRIMMED
    _named_exactly(taking - UNTRIMMED.keys(), RAW_CLIENT_PARAMETERS, "taking the raw client", "take the searcher's index")


def test_the_searchers_index_is_built_where_the_searcher_is_known_and_the_raw_client_kept_for_operators() -> None:
    found: dict[str, set[tuple[str, str]]] = {kind: set() for kind in KINDS}
    for module, source in _sources():
        for kind, pairs in trimmed_built(module, source).items():
            found[kind] |= pairs
    _named_exactly(found["built"], TRIMMED_BUILDERS, "building a TrimmedIndex", "take the searcher's index: Searcher.index")
    _named_exactly(found["accessed"], OPERATOR_SOLR_CALLERS, "getting the raw client", "a searcher's view takes Searcher.index")
    assert not found["private"], f"private state read outside its module, or by reflection: {sorted(found['private'])}"


def test_only_the_named_places_build_a_searcher() -> None:
    """Review R, 3(c): ``ctx.searcher(any principals)`` would search as anyone; it is reached only
    where the searcher is known."""
    found = {pair for module, source in _sources() for pair in trimmed_built(module, source)["searchers"]}
    _named_exactly(found, SEARCHER_CALLERS, "building a searcher", "take the request's Searcher (shared.who_searches)")


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
    assert raw_client_handed_on(module, RAW_CALLS) == {(module, "Page.page: run_search")}
    assert not trimming_named(module, RAW_CALLS)
    assert trimming_named(module, "from searchcrawl.access.decision import solr_trimming\n")
    assert trimming_named(module, "import searchcrawl.access.decision as d\nfilters = d.solr_trimming(p)\n")
    taking = "def count(index: SolrIndex) -> int:\n    return index.document_count()\n"
    assert raw_client_handed_on(module, taking) == {(module, "count")}  # taken; its own method: checked where defined
    # a view handed the web context hands on its client as ctx.solr: found as well
    view = "async def search(ctx: WebContext, request: Request) -> Response:\n    return run_search(ctx.solr, query)\n"
    assert raw_client_handed_on("searchcrawl.web.views.search_views", view) == {
        ("searchcrawl.web.views.search_views", "search: run_search")
    }
    asked = "def count(ctx: WebContext) -> int:\n    return ctx.solr.search('*:*', rows=0).hits\n"
    assert solr_queries(module, asked) == {(module, "count")}


ALIASED = """
from functools import partial
from searchcrawl.search.search_run import run_search

async def search(ctx: WebContext, request: Request) -> Response:
    s = ctx.operator_solr()
    return s.search(request.query_params["q"])

async def aliased(ctx: WebContext, request: Request) -> Response:
    s = ctx._solr
    t = s
    return t.search(request.query_params["q"])

async def through(ctx: WebContext, request: Request) -> Response:
    client = getattr(ctx, "solr")
    return await in_thread(run_search, client, request.query_params["q"])

async def bound(ctx: WebContext, request: Request) -> Response:
    ask = partial(run_search, ctx.solr if ctx else None)
    return ask(request.query_params["q"])

def raw(index: SolrIndex, q: str) -> Any:
    return index.request("GET", f"select?q={q}&wt=json")

def handler(index: SolrIndex, q: str) -> Any:
    path = "/get?id=" + q
    return index.request("GET", path)

def bare(client, q):
    return client.request("GET", "select", {"q": q})
"""

PASSING = """
from searchcrawl.search.searcher import TrimmedIndex
from searchcrawl.web import admin
from searchcrawl.search.answer_explanation import explain_answer as lines

async def search(ctx: WebContext, request: Request) -> Response:
    searcher = await who_searches(ctx, request)
    return await in_thread(run_search, searcher.index, request.query_params["q"])

def readable(index: TrimmedIndex, text: str) -> int:
    return index.search(text, {"rows": 0}).hits

async def overview(ctx: WebContext, request: Request) -> Response:
    untrimmed = ctx.operator_solr()
    health = admin.solr_health(untrimmed)
    return await in_thread(lines, untrimmed, health, request)

def words(field: str) -> str:
    \"\"\"Asks Solr's /select handler (a docstring: words, not a request).\"\"\"
    return "query" if field == "q" else "select the best " + field

def form() -> dict[str, str]:
    return {"name": "query", "method": "get", "route": "/suggest"}
"""


def test_the_searchers_rule_is_a_type_check_an_alias_or_a_raw_request_fails_it() -> None:
    """The rule's own cases: the raw client reached through any local name (an alias, the
    accessor, ``getattr``, a conditional), a raw request of Solr's read handlers, each found; a
    searcher's index, an operator's path named, words that only look like Solr's, passed."""
    module = "searchcrawl.web.views.search_views"
    asked = {where for _module, where in solr_queries(module, ALIASED)}
    assert asked == {"search", "aliased", "raw", "handler", "bare"}
    handed = {where for _module, where in raw_client_handed_on(module, ALIASED)}
    assert handed == {"through: in_thread", "bound: partial", "raw", "handler"}  # raw, handler: take the client
    built = trimmed_built(module, ALIASED)
    assert built == {"built": set(), "accessed": {(module, "search")}, "private": {(module, "aliased")}, "searchers": set()}
    # a raw request of Solr anywhere in searchcrawl, not only in web/, search/ and commands/
    outside = "def ready(url, index):\n    return index.request('GET', 'select?q=*:*') or get_json(f'{url}/select?rows=0')\n"
    assert solr_queries("searchcrawl.ops.health", outside) == {("searchcrawl.ops.health", "ready")}
    assert solr_queries(module, PASSING) == set() and raw_client_handed_on(module, PASSING) == set()
    assert trimmed_built(module, PASSING)["accessed"] == {(module, "overview")}
    door = "def searcher(self, principals):\n    return Searcher(TrimmedIndex(self._solr, principals))\n"
    assert trimmed_built("searchcrawl.web.context", door) == {
        "built": {("searchcrawl.web.context", "searcher")},
        "accessed": set(),
        "private": set(),
        "searchers": set(),
    }
    assert trimmed_built(module, door)["private"] == {(module, "searcher")}  # a view reading the context's client


DODGES = """
import copy
from searchcrawl.search.search_run import run_search

async def inner(ctx: WebContext, request: Request) -> Response:
    searcher = await who_searches(ctx, request)
    return await in_thread(run_search, searcher.index._index, request.query_params["q"])

async def aliased(ctx: WebContext, request: Request) -> Response:
    searcher = await who_searches(ctx, request)
    s = searcher.index._index
    return s.search("*:*")

async def reflected(ctx: WebContext, request: Request) -> Response:
    raw = vars(ctx)["_solr"]
    return raw.search("*:*")

async def through_dict(ctx: WebContext, request: Request) -> Response:
    return ctx.__dict__["_" + "solr"].search("*:*")

async def named(ctx: WebContext, request: Request, name: str) -> Response:
    client = getattr(ctx, name)
    return await in_thread(run_search, client, request.query_params["q"])

async def anyone(ctx: WebContext, request: Request) -> Response:
    searcher = ctx.searcher(Principals("x", frozenset({"group:board"})))
    return await in_thread(run_search, searcher.index, request.query_params["q"])

async def loosened(ctx: WebContext, request: Request) -> Response:
    searcher = await who_searches(ctx, request)
    idx = copy.copy(searcher.index)
    idx._filters, idx._params = [], {}
    return await in_thread(run_search, idx, request.query_params["q"])
"""

BELOW = """
from searchcrawl.semantic.lookup import whole_documents

def handed(ctx: WebContext, q: str) -> Any:
    return whole_documents(ctx.operator_solr(), q)
"""


def test_the_searchers_rule_finds_the_reviews_dodges() -> None:
    """Review R, 3: each dodge of the rule found: the client a TrimmedIndex holds (``_index``),
    reached by reflection (``vars``, ``__dict__``, ``getattr`` with a name), the door that binds any
    principals called from a view, a TrimmedIndex's trimming set, and the raw client handed to a new
    helper below search/ (the takers are an allowlist again)."""
    module = "searchcrawl.web.views.search_views"
    asked = {where for _module, where in solr_queries(module, DODGES)}
    assert asked == {"aliased", "reflected", "through_dict"}
    handed = {where for _module, where in raw_client_handed_on(module, DODGES)}
    assert handed == {"inner: in_thread", "named: in_thread"}
    built = trimmed_built(module, DODGES)
    assert built["private"] == {
        (module, where) for where in ("inner", "aliased", "reflected", "through_dict", "named", "loosened")
    }
    assert built["searchers"] == {(module, "anyone")}
    assert raw_client_handed_on(module, BELOW) == {(module, "handed: whole_documents")}
