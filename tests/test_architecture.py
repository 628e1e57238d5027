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
import copy
import graphlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.syntax_trees import PACKAGE, package_modules, tree_of, walk

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
    for node in walk(tree_of(path)):
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


# Two modules that import each other, at any depth and however (a function's own import, one
# under TYPE_CHECKING): a circle; what both need moves below them (issue 101 point 7). The circles
# still there, each with its reason (the list only shrinks):
CIRCLES: dict[frozenset[str], str] = {}


def imported_modules(path: Path) -> Iterator[str]:
    """The modules of searchcrawl ``path`` names in its imports, at any depth: ``imports``, with
    ``from package import module`` read as the module it names."""
    module = module_name(path)
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    known = {module_name(other) for other in package_modules()}
    for node in ast.walk(tree_of(path)):
        if isinstance(node, ast.ImportFrom):
            anchor = base[: len(base) - node.level + 1] if node.level else []
            imported = ".".join([*anchor, *([node.module] if node.module else [])])
            for alias in node.names:
                yield f"{imported}.{alias.name}" if f"{imported}.{alias.name}" in known else imported
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The groups of nodes of ``graph`` that reach each other (its strongly connected components of
    more than one node, Tarjan's), each a circle of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, following = work[-1]
            step = next(following, None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = stack[stack.index(node) :]
                    del stack[stack.index(node) :]
                    if len(group) > 1:
                        found.append(frozenset(group))
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                work.append((step, iter(sorted(graph.get(step, ())))))
            elif step in stack:
                low[node] = min(low[node], index[step])
    return found


def module_circles() -> set[frozenset[str]]:
    """The import circles of searchcrawl's modules."""
    graph: dict[str, set[str]] = {}
    for path in package_modules():
        importer = module_name(path)
        graph[importer] = {name for name in imported_modules(path) if name.startswith("searchcrawl.") and name != importer}
    return set(circles(graph))


def test_no_two_modules_import_each_other() -> None:
    """No module imports another that imports it back, directly or through others, at the module's
    top or in a function (a lazy import only hides the circle), but for the named CIRCLES."""
    found = module_circles()
    new = sorted(sorted(group) for group in found - CIRCLES.keys())
    assert not new, "modules that import each other in a circle (move what both need below them):\n" + "\n".join(
        f"  {' <-> '.join(group)}" for group in new
    )
    gone = sorted(sorted(group) for group in CIRCLES.keys() - found)
    assert not gone, "named in CIRCLES but no longer a circle (remove them from the list):\n" + "\n".join(
        f"  {' <-> '.join(group)}" for group in gone
    )


def test_circles_are_found_at_any_length_and_once() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}, "f": {"g"}, "g": {"f"}}
    assert sorted(sorted(group) for group in circles(graph)) == [["a", "b", "c"], ["f", "g"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_answers_modules_import_one_way() -> None:
    """Issue 101, point 5: the answer's run (answer_run.py) puts the model's answer (answers.py)
    and the extractive one (extractive.py) together; neither of these imports the other, and both
    read what an answer is made of below them (answer_parts.py), which imports neither."""
    search = PACKAGE / "search"
    imported = {name: set(imported_modules(search / f"{name}.py")) for name in ("answers", "extractive", "answer_parts")}
    assert "searchcrawl.search.extractive" not in imported["answers"]
    assert "searchcrawl.search.answers" not in imported["extractive"]
    assert {"searchcrawl.search.answers", "searchcrawl.search.extractive"}.isdisjoint(imported["answer_parts"])
    assert "searchcrawl.search.answer_parts" in imported["answers"] & imported["extractive"]


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
# Only search/trimmed_index.py's TrimmedIndex sends a searcher's query to Solr, and it adds the searcher's
# trimming (access/decision.py ``solr_trimming``) to every request itself. Views and commands are
# given the searcher's index alone, its principals bound once where the searcher is known; the raw
# client reaches the operators' untrimmed paths alone. Read from the syntax trees as a small type
# check: each function's names are typed from their annotations and what they are assigned (an
# alias of the raw client, ``s = ctx.solr``, is the raw client; so is a call of its class however
# imported, ``p.Solr(url)`` after ``import pysolr as p``; a name read by a function is read,
# ``getattr(ctx, "operator_solr")()`` is ``ctx.operator_solr()``), and
#   * Solr is asked without a searcher's trimming (``.search`` on the raw client, a request of it to
#     any handler but those that answer with no document: NOT_READS, ``/update`` and
#     ``/admin/ping``, and the administration NO_DOCUMENTS names, each with its reason; or a string,
#     however built, naming a handler that reads: ``"select?..."``, ``f"{url}/export"``,
#     ``"/sel" + "ect"``, ``"/get?id=..."``) only in the functions named in UNTRIMMED: the door's
#     own, and the operators' paths, each with its reason;
#   * a TrimmedIndex is built (principals bound to Solr) only in TRIMMED_BUILDERS: where a searcher
#     is known (the web context, once a request; a command's ``--as USER``) and explain-answer;
#   * ``solr_trimming`` is named in trimmed_index.py alone (and defined in access/decision.py);
#   * the web context's client is private (``_solr``, read in web/context.py alone): the operators'
#     paths get it from its accessor ``operator_solr``, whose readers OPERATOR_SOLR_CALLERS names;
#   * the web context's ``searcher(principals)`` (the door that binds any principals) is reached only
#     from SEARCHER_CALLERS, each with its reason;
#   * in web/, commands/ and search/ the TrimmedIndex's private attributes (``_index``, the raw
#     client; ``_filters``, ``_params``) are read in search/trimmed_index.py alone, and nothing reflects
#     (``vars()``, ``__dict__``, ``setattr``, ``getattr`` with a name that is not a literal, a bound
#     method's ``__self__`` or ``__func__``, a function's ``__globals__`` or ``__closure__``,
#     ``inspect``, imported at all): a reflected value, or an object's ``_index``, is typed as the
#     raw client (fail closed);
#   * in web/, commands/ and search/, the raw client (a parameter annotated SolrIndex or pysolr.Solr,
#     a name or ``self.`` attribute given one) is handed only to code that may take it: a function of
#     RAW_CLIENT_PARAMETERS, UNTRIMMED or RAW_CLIENT_TAKERS (each named with its reason), a method of
#     the client itself, or the door (TrimmedIndex, by the second rule); handed to anything else (a
#     searcher's query, a helper, functools.partial, a new module below search/), it fails.

SEARCHER = "searchcrawl.search.trimmed_index"
TRIMMING = "solr_trimming"
SOLR_TYPES = frozenset(
    {"SolrIndex", "pysolr.Solr", "SolrIndex | None", "IndexedDocuments"}
)  # and explain-access's Protocol of it
# the raw client's classes by the names their modules give them: a call of one, however it is imported
# (``import pysolr as p; p.Solr(url)``, ``from pysolr import Solr``, ``SolrIndex as Index``), builds the raw client
RAW_CLIENT_CLASSES: dict[str, str] = {
    "searchcrawl.index.solr_client.SolrIndex": "SolrIndex",
    "pysolr.Solr": "pysolr.Solr",
    "pysolr.SolrCloud": "pysolr.Solr",
}
# the web context's client (``ctx._solr``; ``ctx.solr`` before), and the one a TrimmedIndex holds (``_index``), as any object's
CLIENT_ATTRIBUTES = frozenset({"solr", "_solr", "_index"})
PRIVATE_CLIENT = ("searchcrawl.web.context", "_solr")  # the web context's client, read in its module alone
# the private attributes of the searcher's door, read in its module alone (in web/, commands/ and search/)
PRIVATE_TRIMMING = frozenset({"_index", "_filters", "_params", "_principals"})
# reflection that reads or sets any attribute, a private one too (``vars(ctx)["_solr"]``, ``ctx.__dict__``,
# ``inspect.getmembers(ctx)``), or reaches an object through a function (a bound method's ``__self__``: the
# health check's ``ctx.health.solr.__self__`` is the raw client; a function's ``__globals__``, ``__closure__``)
REFLECTION_CALLS = frozenset(
    {
        *("vars", "setattr", "delattr", "__import__", "importlib.import_module"),
        *("gc.get_referents", "gc.get_referrers", "gc.get_objects"),
    }
)
REFLECTION_ATTRIBUTES = frozenset(
    {
        *("__dict__", "__setattr__", "__getattribute__", "__delattr__", "__slots__"),
        *("__self__", "__func__", "__closure__", "__globals__"),
    }
)
REFLECTION_MODULES = ("inspect",)  # imported at all in web/, commands/ and search/, or called: reflection
# a name read from an object by a function rather than written out: ``getattr(x, "a")`` is ``x.a``, and
# ``attrgetter("a.b")(x)``, ``methodcaller("m")(x)`` as well; with a name that is not a literal, reflection
GETATTR = frozenset({"getattr", "builtins.getattr"})
ATTRGETTERS = frozenset({"operator.attrgetter", "operator.methodcaller"})
SEARCHER_ACCESSOR = "searcher"  # WebContext.searcher(principals): the door that binds principals, for SEARCHER_CALLERS
OPERATOR_ACCESSOR = "operator_solr"  # WebContext.operator_solr(): the raw client, for the operators' paths
TRIMMED_TYPE = "TrimmedIndex"
UNKNOWN_TYPES = frozenset({"", "Any", "typing.Any", "object"})  # a receiver that could be a Solr client
CLIENT_NAME = re.compile(r"solr|index|client", re.IGNORECASE)
# the raw client's methods that query (pysolr's and SolrIndex's), and those that send a request to the
# handler their path names (``request(method, path, ...)``), by the position of the path
CLIENT_QUERIES = frozenset({"search", "more_like_this", "suggest_terms", "_select", "_mlt", "_suggest_terms"})
CLIENT_REQUESTS = {"request": 1, "_send_request": 1, "_request": 2}
# Solr's request handlers, as a path names them: its implicit ones, our configset's (/select, /admin/ping),
# the search handlers of its sample configsets, and the node's administration (not ``suggest``, which
# our configset does not define: ``/suggest`` is the web application's own route)
SOLR_HANDLER = re.compile(
    r"(?:update|select|query|get|export|graph|stream|sql|terms|tvrh|mlt|spell|browse|elevate|clustering|replication"
    r"|schema|config|analysis|debug|tasks|admin/(?:ping|luke|file|mbeans|segments|system|plugins|threads|properties"
    r"|logging|cores|collections|configs|info/[a-z]+|metrics|zookeeper|authentication|authorization|health))(?=/|$)"
)
# the handlers that give no document back (a write, the ping), and those of the operators' administration
# NO_DOCUMENTS names with its reason; every other handler is a read, one SOLR_HANDLER does not know too
# when the raw client is asked it, and a request of the raw client whose path is not a literal (fail closed)
NOT_READS = ("update", "admin/ping")
NO_DOCUMENTS: dict[str, str] = {
    "schema": "the schema API: its name, copyFields, the managed synonyms and stopwords (installation, the relevance page)",
    "admin/info/system": "the node's mode, standalone or SolrCloud, before a reload of the managed resources",
    "admin/info/health": "a SolrCloud node's health check: the first live node (`scrapy solr collection`), the dev SolrCloud's readiness",
    "admin/cores": "a standalone core's reload, for its managed resources",
    "admin/collections": "SolrCloud's collections: list, create, reload, their status and the live nodes",
    "admin/configs": "SolrCloud's configsets: the project's, uploaded",
}
HOLE = "\x00"  # a piece of a string that is not a literal (``f"{url}/select"``: HOLE + "/select")
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
    ("searchcrawl.index.solr_client", "SolrIndex.latest"): (
        "the crawl: a document's version, readers and anchor field, read to set its anchor field in place for those"
        " readers (index/push.py set_anchors), never shown to a searcher"
    ),
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
    ("searchcrawl.index.managed", "_call"): (
        "operators: the managed synonyms' and stopwords' requests and the reload, to the path each caller names"
        " (the schema API, the node's administration: checked where they are named)"
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


def _imported(tree: ast.Module) -> dict[str, str]:
    """The names a module imports, each to what it names (``admin`` to ``searchcrawl.web.admin``,
    ``explain_answer_lines`` to ``searchcrawl.search.answer_explanation.explain_answer``, a raw
    client's class imported with ``*`` to that class)."""
    names: dict[str, str] = {}
    for node in walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if alias.name == "*":
                    names.update({raw.rpartition(".")[2]: raw for raw in RAW_CLIENT_CLASSES if raw.startswith(f"{node.module}.")})
                else:
                    names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            names.update({alias.asname or alias.name: alias.name for alias in node.names})
    return names


def _dotted(node: ast.expr, imported: dict[str, str]) -> str:
    """What a name or a dotted name names, through the module's imports (``p.Solr`` is ``pysolr.Solr``
    after ``import pysolr as p``); "" for any other expression."""
    if isinstance(node, ast.Name):
        return imported.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        owner = _dotted(node.value, imported)
        return f"{owner}.{node.attr}" if owner else ""
    return ""


def _assigned(node: ast.AST) -> Iterator[tuple[ast.expr, ast.expr | None, ast.expr | None]]:
    """The (target, value, annotation) pairs a statement or expression assigns, a tuple's item by item."""
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        annotation = node.annotation if isinstance(node, ast.AnnAssign) else None
        for target in targets:
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(target.elts) == len(node.value.elts):
                yield from ((item, value, None) for item, value in zip(target.elts, node.value.elts, strict=True))
            else:
                yield target, node.value, annotation


# a ``%`` conversion and a ``.format`` field: pieces that are not literals
PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[a-zA-Z%]")
FIELD = re.compile(r"\{([^{}]*)\}")
SCHEME_AND_HOST = re.compile(r"^[a-z][a-z0-9+.-]*://[^/?#]*", re.IGNORECASE)
V2_API = (["c"], ["collections"], ["cores"])  # Solr's v2 API: api/c/NAME/select


def _folded(node: ast.expr, literals: dict[str, str]) -> str | None:
    """The text a string expression builds of literals: joined with ``+``, an f-string, ``%``,
    ``.format``, ``sep.join([...])``, a name the module gives one literal (``literals``), HOLE for
    each piece that is not a literal; None when ``node`` builds no string of a literal."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        return literals.get(node.id)
    if isinstance(node, ast.JoinedStr):
        return "".join(_piece(part.value if isinstance(part, ast.FormattedValue) else part, literals) for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left, literals), _folded(node.right, literals)
        if left is None and right is None:
            return None
        return (HOLE if left is None else left) + (HOLE if right is None else right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and (text := _folded(node.left, literals)) is not None:
        values = iter(node.right.elts if isinstance(node.right, ast.Tuple) else [node.right])
        return PERCENT.sub(lambda _conversion: _piece(next(values, None), literals), text)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        text = _folded(node.func.value, literals)
        if text is not None and node.func.attr == "format":
            following = iter(node.args)
            return FIELD.sub(lambda field: _piece(_format_field(node, field.group(1), following), literals), text)
        if text is not None and node.func.attr == "join" and node.args and isinstance(node.args[0], ast.List | ast.Tuple):
            return text.join(_piece(item, literals) for item in node.args[0].elts)
    return None


def _literal(node: ast.expr) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _piece(node: ast.expr | None, literals: dict[str, str]) -> str:
    folded = _folded(node, literals) if node is not None else None
    return HOLE if folded is None else folded


def _format_field(call: ast.Call, field: str, following: Iterator[ast.expr]) -> ast.expr | None:
    """The argument of ``"...".format(...)`` a field names (``{}`` the next one, ``{0}``, ``{name}``)."""
    name = re.split(r"[!:.\[]", field, maxsplit=1)[0]
    if not name:
        return next(following, None)
    if name.isdigit():
        return call.args[int(name)] if int(name) < len(call.args) else None
    return next((keyword.value for keyword in call.keywords if keyword.arg == name), None)


def _literals(tree: ast.Module) -> dict[str, str]:
    """The names a module gives one string of literals wherever it assigns them (``SEL = "/sel"``)."""
    given: dict[str, set[str | None]] = {}
    for node in walk(tree):
        for target, value, _annotation in _assigned(node):
            if isinstance(target, ast.Name):
                given.setdefault(target.id, set()).add(_folded(value, {}) if value is not None else None)
    return {name: text for name, texts in given.items() if len(texts) == 1 and (text := next(iter(texts))) is not None}


def _handler(text: str) -> str | None:
    """The handler of Solr's a path or URL names (``select`` of ``f"{url}/select?q=..."``,
    ``admin/luke`` of ``http://host/solr/core/admin/luke``), None when it names none. Before the
    handler may come a scheme and host, pieces that are not literals, ``solr``, the v2 API's
    ``api/c``, and one name (a core's, a collection's): ``/admin/backup/export`` names none."""
    path = re.split(r"[?#]", SCHEME_AND_HOST.sub("", text), maxsplit=1)[0]
    segments = [segment for segment in path.split("/") if segment]
    index, named = 0, False
    while index < len(segments):
        if found := SOLR_HANDLER.match("/".join(segments[index:])):
            return found.group(0)
        if segments[index] == "api" and segments[index + 1 : index + 2] in V2_API:
            index += 2
        elif HOLE in segments[index] or segments[index] == "solr":
            index += 1
        elif not named:
            index, named = index + 1, True
        else:
            return None
    return None


def _named_handler(text: str) -> str | None:
    """The handler of Solr's a string names as a path or URL (_handler). A word alone is no path
    ("query" is a form field, "get" an HTTP method), but for ``select``."""
    return _handler(text) if text == "select" or "/" in text or "?" in text else None


def _answers_no_document(handler: str) -> bool:
    """Whether ``handler`` gives no document back: a write, the ping, the administration NO_DOCUMENTS names."""
    return handler.startswith(NOT_READS) or handler in NO_DOCUMENTS


class _NamesWrittenOut(ast.NodeTransformer):
    """A name read by a function written out as the attribute it reads: ``getattr(x, "a")`` as
    ``x.a`` (``getattr(x, "a", d)`` as ``x.a or d``), ``attrgetter("a.b")(x)`` as ``x.a.b``,
    ``methodcaller("m", y)(x)`` as ``x.m(y)``; an attrgetter or methodcaller not applied at once
    as the attributes it reads of an unknown object. A name that is not a literal stays a call:
    reflection (_Scopes.reflects)."""

    def __init__(self, imported: dict[str, str]) -> None:
        self.imported = imported

    def needed(self, tree: ast.Module) -> bool:
        """Whether ``tree`` reads a name by a function (most modules do not: they are not copied)."""
        readers = GETATTR | ATTRGETTERS
        return any(isinstance(node, ast.Call) and _dotted(node.func, self.imported) in readers for node in walk(tree))

    def getter(self, node: ast.expr) -> ast.Call | None:
        """``node`` if it is an attrgetter or methodcaller of literal names."""
        if not (isinstance(node, ast.Call) and node.args and _dotted(node.func, self.imported) in ATTRGETTERS):
            return None
        named = node.args if _dotted(node.func, self.imported).endswith("attrgetter") else node.args[:1]
        return node if all(isinstance(name, ast.Constant) and isinstance(name.value, str) for name in named) else None

    def read(self, getter: ast.Call, target: ast.expr) -> ast.expr:
        """What ``getter`` reads of ``target``."""
        if _dotted(getter.func, self.imported).endswith("methodcaller"):
            method = self.chain(target, _literal(getter.args[0]))
            return ast.Call(func=method, args=getter.args[1:], keywords=getter.keywords)
        reads = [self.chain(target, _literal(name)) for name in getter.args]
        return reads[0] if len(reads) == 1 else ast.Tuple(elts=reads, ctx=ast.Load())

    @staticmethod
    def chain(target: ast.expr, dotted: str) -> ast.expr:
        for attribute in dotted.split("."):
            target = ast.Attribute(value=target, attr=attribute, ctx=ast.Load())
        return target

    def visit_Call(self, node: ast.Call) -> ast.expr:
        if (getter := self.getter(node.func)) is not None and len(node.args) == 1 and not node.keywords:
            self.generic_visit(getter)
            return self.read(getter, self.visit(node.args[0]))
        self.generic_visit(node)
        name = node.args[1] if len(node.args) in (2, 3) else None
        if _dotted(node.func, self.imported) in GETATTR and isinstance(name, ast.Constant) and isinstance(name.value, str):
            read = self.chain(node.args[0], name.value)
            return read if len(node.args) == 2 else ast.BoolOp(op=ast.Or(), values=[read, node.args[2]])
        if (getter := self.getter(node)) is not None:
            return self.read(getter, ast.Name(id="_", ctx=ast.Load()))
        return node


class _Scopes(ast.NodeVisitor):
    """Walks a module keeping the qualified name of the function (or class) around each node, the
    types each function knows of its names (annotated parameters, what a name is assigned: a call
    of a class, the raw client or an alias of it), and the ``self.`` attributes given a raw client."""

    def __init__(self, module: _Module) -> None:
        tree = module.tree
        self.path: list[str] = []
        self.known: list[dict[str, str]] = [{}]
        self.imported = module.imported
        self.reflecting = module.reflecting
        self.raw_attributes: set[str] = set()
        self.raw_attributes = {
            ast.unparse(target)
            for node in walk(tree)
            for target, value, annotation in _assigned(node)
            if isinstance(target, ast.Attribute) and self.typed(annotation, value) in SOLR_TYPES
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
        positional = [*node.args.posonlyargs, *node.args.args]
        defaults: dict[str, ast.expr | None] = {
            **dict(zip([argument.arg for argument in positional][::-1], node.args.defaults[::-1], strict=False)),
            **{argument.arg: default for argument, default in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True)},
        }
        parameters = {
            argument.arg: self.typed(argument.annotation, defaults.get(argument.arg))
            for argument in [*positional, *node.args.kwonlyargs]
        }
        known = {**self.known[-1], **parameters}
        self.known.append(known)
        assigned = [pair for child in walk(node) for pair in _assigned(child) if isinstance(pair[0], ast.Name)]
        for _round in range(3):  # an alias of an alias: ``s = ctx.solr; t = s``
            for target, value, annotation in assigned:
                assert isinstance(target, ast.Name)
                typed = self.typed(annotation, value)
                if typed and known.get(target.id) not in SOLR_TYPES:  # the raw client, once given, stays
                    known[target.id] = typed
        self.function(node, parameters)
        self.generic_visit(node)
        self.known.pop()
        self.path.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815 - ast.NodeVisitor's name

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, parameters: dict[str, str]) -> None:
        """Called for each function, its parameters' types given."""

    def typed(self, annotation: ast.expr | None, value: ast.expr | None) -> str:
        """The type of a name annotated ``annotation`` and given ``value`` (a parameter's default):
        the raw client when the value is one, whatever the annotation says (``raw: Any = Solr(url)``)."""
        given = self.type_of(value) if value is not None else ""
        return given if given in SOLR_TYPES else self.annotated(annotation) or given

    def annotated(self, annotation: ast.expr | None) -> str:
        """The type an annotation names, a raw client's class as SOLR_TYPES names it however it is
        imported or spelled (``p.Solr``, ``"Index | None"``, ``Optional[Solr]``)."""
        if annotation is None:
            return ""
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            written = annotation.value  # ``"SolrIndex"``: the type, quoted
            try:
                annotation = ast.parse(written, mode="eval").body
            except SyntaxError:
                return written
        sides = [annotation]
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            sides = [annotation.left, annotation.right]
        elif isinstance(annotation, ast.Subscript) and _dotted(annotation.value, self.imported).endswith("Optional"):
            sides = [annotation.slice]
        raw = (RAW_CLIENT_CLASSES.get(_dotted(side, self.imported), "") for side in sides)
        return next((found for found in raw if found), ast.unparse(annotation))

    def reflects(self, node: ast.expr) -> bool:
        """Whether ``node`` reads or sets an attribute by reflection, or holds an expression that does (_reflection)."""
        return id(node) in self.reflecting

    def type_of(self, node: ast.expr) -> str:
        """The type known of ``node`` ("" when none): a name's; a call's class, through the imports
        (the raw client for its classes, however imported, and for the accessor ``operator_solr()``);
        the raw client for an object's ``solr`` or ``_solr`` (``getattr(x, "solr")`` too), a
        ``self.`` attribute given one, and anything reflected; either side's of ``a if c else b``
        and ``a or b``, the raw client when one is."""
        if isinstance(node, ast.Name):
            return self.known[-1].get(node.id, "")
        if self.reflects(node):
            return "SolrIndex"  # ``vars(ctx)["_solr"]``, ``getattr(ctx, name)``, ``f.__self__``: could be the client
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == OPERATOR_ACCESSOR:
                return "SolrIndex"
            return RAW_CLIENT_CLASSES.get(_dotted(func, self.imported), ast.unparse(func))
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
    """The functions that ask Solr without a searcher's trimming: a query of the raw client
    (``.search``), a request of it to any handler but those that answer with no document
    (NOT_READS, NO_DOCUMENTS) or to a path that is not a literal, or a string, however built,
    naming a handler that reads."""

    def __init__(self, module: _Module) -> None:
        super().__init__(module)
        self.literals = module.literals
        self.found: list[str] = []
        self.handlers: set[str] = set()  # every handler of Solr's named

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and (func.attr in CLIENT_QUERIES or func.attr in CLIENT_REQUESTS):
            known = self.type_of(func.value)
            client = known in SOLR_TYPES or known in UNKNOWN_TYPES and bool(CLIENT_NAME.search(ast.unparse(func.value)))
            if func.attr in CLIENT_REQUESTS:
                if client and not self.no_document(node, CLIENT_REQUESTS[func.attr]):
                    self.found.append(self.where)
            elif known == TRIMMED_TYPE or known not in {*SOLR_TYPES, *UNKNOWN_TYPES}:
                pass  # the trimmed door, or an object of another kind (an LDAP connection)
            elif node.keywords or client:
                self.found.append(self.where)
        self.text(node)
        self.generic_visit(node)

    def no_document(self, node: ast.Call, position: int) -> bool:
        """Whether a request's path (its argument at ``position``, or ``path=``) is a literal naming
        a handler that answers with no document (NOT_READS, NO_DOCUMENTS)."""
        given = (keyword.value for keyword in node.keywords if keyword.arg == "path")
        path = node.args[position] if len(node.args) > position else next(given, None)
        text = _folded(path, self.literals) if path is not None else None
        handler = _handler(text) if text is not None else None
        self.handlers.update([handler] if handler else [])
        return handler is not None and _answers_no_document(handler)

    def text(self, node: ast.expr) -> None:
        """A string, however built, that names a handler of Solr's: a read but for those that answer with no document."""
        text = _folded(node, self.literals)
        if text is not None and (handler := _named_handler(text)) is not None:
            self.handlers.add(handler)
            if not _answers_no_document(handler):
                self.found.append(self.where)

    def visit_Expr(self, node: ast.Expr) -> None:
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):  # a docstring: words
            self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        self.text(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self.text(node)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self.text(node)
        self.generic_visit(node)


class _RawClientHandedOn(_Scopes):
    """Where web/, commands/ or search/ hand the raw client to code that may not take it, and the
    functions that take it as a parameter."""

    def __init__(self, name: str, module: _Module) -> None:
        super().__init__(module)
        self.module = name
        self.found: list[str] = []

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, parameters: dict[str, str]) -> None:
        if any(typed in SOLR_TYPES for typed in parameters.values()):
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
    """The functions that build a TrimmedIndex, the readers of the raw client's accessor and of the
    web context's ``searcher``, and the readers of the web context's private client, of a
    TrimmedIndex's private attributes, or of any attribute by reflection (in web/, commands/ and
    search/)."""

    def __init__(self, name: str, module: _Module) -> None:
        super().__init__(module)
        self.module = name
        self.built: list[str] = []
        self.accessed: list[str] = []
        self.private: list[str] = []
        self.searchers: list[str] = []

    @property
    def guarded(self) -> bool:
        """Whether private state and reflection are refused here: web/, commands/ and search/ but
        for the door's own module, which sets its own."""
        return self.module.startswith(HANDED_ON) and self.module != SEARCHER

    def visit_Call(self, node: ast.Call) -> None:
        if (_dotted(node.func, self.imported) or ast.unparse(node.func)).rpartition(".")[2] == TRIMMED_TYPE:
            self.built.append(self.where)
        if self.guarded and self.reflects(node):
            self.private.append(self.where)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == PRIVATE_CLIENT[1] and self.module != PRIVATE_CLIENT[0]:
            self.private.append(self.where)
        elif self.guarded and (node.attr in PRIVATE_TRIMMING or node.attr in REFLECTION_ATTRIBUTES):
            self.private.append(self.where)
        if node.attr == OPERATOR_ACCESSOR:  # called, or taken to be called later (``get = ctx.operator_solr``)
            self.accessed.append(self.where)
        if node.attr == SEARCHER_ACCESSOR:  # called, or taken to be called later (``make = ctx.searcher``)
            self.searchers.append(self.where)
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [alias.name for alias in node.names]
        if self.guarded and any(module.partition(".")[0] in REFLECTION_MODULES for module in modules):
            self.private.append(self.where)  # ``import inspect``: its every function reflects

    visit_ImportFrom = visit_Import  # noqa: N815 - ast.NodeVisitor's name


def _reflection(node: ast.AST, imported: dict[str, str]) -> bool:
    """Whether ``node`` reads or sets an attribute by reflection: ``vars(x)``, ``setattr(x, ...)``,
    ``x.__dict__``, ``f.__self__`` (REFLECTION_ATTRIBUTES), ``getattr(x, name)`` with a name that
    is not a literal (a getattr, attrgetter or methodcaller left a call by _NamesWrittenOut),
    anything of ``inspect``."""
    if isinstance(node, ast.Attribute):
        return node.attr in REFLECTION_ATTRIBUTES
    if isinstance(node, ast.Name):
        return imported.get(node.id, "").partition(".")[0] in REFLECTION_MODULES
    if isinstance(node, ast.Call):
        return _dotted(node.func, imported) in REFLECTION_CALLS | GETATTR | ATTRGETTERS
    return False


def _reflecting(tree: ast.Module, imported: dict[str, str]) -> frozenset[int]:
    """The nodes of ``tree`` (their ids) that reflect or hold an expression that does: found in
    one walk, not one a question."""
    found: set[int] = set()

    def holds(node: ast.AST) -> bool:
        inside = [holds(child) for child in ast.iter_child_nodes(node)]
        if any(inside) or _reflection(node, imported):
            found.add(id(node))
            return True
        return False

    holds(tree)
    return frozenset(found)


@dataclass(frozen=True)
class _Module:
    """A module as the rule reads it: its tree with the names read by functions written out
    (_NamesWrittenOut), what its imports name, the names it gives one literal, and where it reflects."""

    tree: ast.Module
    imported: dict[str, str]
    literals: dict[str, str]
    reflecting: frozenset[int]  # the nodes (ids) that reflect or hold reflection


# the package modules as the rule reads them, made once a session from the shared trees (which stay as they are)
_MODULES: dict[int, tuple[ast.Module, _Module]] = {}


def _module(source: ast.Module | str) -> _Module:
    """A module (a package module's tree, parsed once a session: tests/syntax_trees.py), or a
    snippet, as the rule reads it."""
    tree = source if isinstance(source, ast.Module) else ast.parse(source)
    kept = _MODULES.get(id(tree))
    if kept is not None and kept[0] is tree:
        return kept[1]
    imported = _imported(tree)
    writer = _NamesWrittenOut(imported)
    written = writer.visit(copy.deepcopy(tree)) if writer.needed(tree) else tree
    assert isinstance(written, ast.Module)
    module = _Module(written, imported, _literals(written), _reflecting(written, imported))
    if isinstance(source, ast.Module):
        _MODULES[id(tree)] = (tree, module)
    return module


def solr_queries(module: str, source: ast.Module | str) -> set[tuple[str, str]]:
    """The (module, function) pairs of ``source`` that ask Solr without a searcher's trimming."""
    return _asked(module, source)[0]


def _asked(module: str, source: ast.Module | str) -> tuple[set[tuple[str, str]], set[str]]:
    """solr_queries' pairs, and the handlers of Solr's ``source`` names."""
    read = _module(source)
    visitor = _SolrQueries(read)
    visitor.visit(read.tree)
    return {(module, where) for where in visitor.found}, visitor.handlers


def trimming_named(module: str, source: ast.Module | str) -> bool:
    """Whether ``source`` names ``solr_trimming`` (imports, calls or passes it)."""
    for node in walk(_module(source).tree):
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
    read = _module(source)
    visitor = _RawClientHandedOn(module, read)
    visitor.visit(read.tree)
    return {(module, where) for where in visitor.found}


def trimmed_built(module: str, source: ast.Module | str) -> dict[str, set[tuple[str, str]]]:
    """The (module, function) pairs of ``source`` that build a TrimmedIndex (``built``), call the
    raw client's accessor (``accessed``), read the web context's private client, a TrimmedIndex's
    private attributes or any attribute by reflection (``private``), and reach the web context's
    ``searcher`` (``searchers``)."""
    read = _module(source)
    visitor = _TrimmedBuilt(module, read)
    visitor.visit(read.tree)
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
    asked = [_asked(module, source) for module, source in _sources()]
    found = {pair for pairs, _handlers in asked for pair in pairs}
    _named_exactly(found, UNTRIMMED, "Solr asked untrimmed", "hand the code a TrimmedIndex, or name an operator's path")
    named = {handler for _pairs, handlers in asked for handler in handlers}
    unused = sorted(NO_DOCUMENTS.keys() - named)
    assert not unused, f"named in NO_DOCUMENTS but asked nowhere (remove them): {unused}"


def test_only_the_searcher_builds_the_trimming() -> None:
    named = sorted(module for module, source in _sources() if trimming_named(module, source))
    assert named == [SEARCHER], "solr_trimming named outside search/trimmed_index.py (ask through a TrimmedIndex)"


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
from searchcrawl.search.trimmed_index import TrimmedIndex

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
from searchcrawl.search.results import run_search

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
from searchcrawl.search.trimmed_index import TrimmedIndex
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
from searchcrawl.search.results import run_search

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


# Issue 99, point 7: five ways round the rule as it was, each a case of its own.
VIEW = "searchcrawl.web.views.search_views"

HEALTH_CLIENT = """
from searchcrawl.search.results import run_search

async def health(ctx: WebContext, request: Request) -> Response:
    raw = ctx.health.solr.__self__
    return await in_thread(run_search, raw, request.query_params["q"])
"""


def test_the_health_checks_client_is_the_raw_client() -> None:
    """The health check holds the raw client's bound ``ping``: its ``__self__`` is the client."""
    assert raw_client_handed_on(VIEW, HEALTH_CLIENT) == {(VIEW, "health: in_thread")}
    assert trimmed_built(VIEW, HEALTH_CLIENT)["private"] == {(VIEW, "health")}


CONSTRUCTED = """
import pysolr as p
from pysolr import Solr
from searchcrawl.index.solr_client import SolrIndex as Index
from searchcrawl.search.results import run_search

async def aliased(ctx: WebContext, request: Request) -> Response:
    raw = p.Solr(ctx.config.solr_url)
    return await in_thread(run_search, raw, request.query_params["q"])

async def imported(ctx: WebContext, request: Request) -> Response:
    return Solr(ctx.config.solr_url).search(request.query_params["q"]).docs

async def renamed(ctx: WebContext, request: Request) -> Response:
    raw: Any = Index(ctx.config.solr_url)
    return raw.search(request.query_params["q"])

async def defaulted(ctx: WebContext, request: Request, raw: Any = Solr("http://127.0.0.1:8983/solr/c")) -> Response:
    return await in_thread(run_search, raw, request.query_params["q"])
"""


def test_a_raw_client_built_under_any_name_is_the_raw_client() -> None:
    """A raw client's class however imported (a module's alias, ``from pysolr import Solr``, a
    class renamed), whatever the name it is given is annotated."""
    assert solr_queries(VIEW, CONSTRUCTED) == {(VIEW, "imported"), (VIEW, "renamed")}
    handed = raw_client_handed_on(VIEW, CONSTRUCTED)
    assert handed == {(VIEW, "aliased: in_thread"), (VIEW, "defaulted"), (VIEW, "defaulted: in_thread")}
    starred = "from pysolr import *\n\ndef count(url):\n    return Solr(url).search('*:*', rows=0).hits\n"
    assert solr_queries(VIEW, starred) == {(VIEW, "count")}


HANDLERS = """
def exported(index: SolrIndex, q: str) -> Any:
    return index.request("GET", f"export?q={q}&fl=id,content&sort=id asc", "did not export")

def terms(url: str) -> Any:
    return get_json(url + "/admin/luke?fl=content&numTerms=1000")

def pieces(url: str, q: str) -> Any:
    return get_json(url + "/sel" + "ect?q=" + q)

def joined(url: str) -> Any:
    return get_json("/".join([url, "exp" + "ort"]) + "?q=*:*&fl=content")

def formatted(url: str) -> Any:
    return get_json("{}/{}?expr=search(c)".format(url, "stream")) or get_json("%s/%s" % (url, "graph"))

SEL = "/sel"

def named(url: str) -> Any:
    return get_json(url + SEL + "ect?q=*:*")

def any_handler(index: SolrIndex, handler: str) -> Any:
    return index.request("GET", handler + "?q=*:*", "did not answer")

def written(index: SolrIndex, body: bytes) -> Any:
    index.request("POST", "update?wt=json", "did not take the documents", body)
    return index.request("GET", path="admin/ping?wt=json", what="did not answer")

def administered(index: SolrIndex) -> Any:
    return index.request("GET", "admin/collections?action=CLUSTERSTATUS&wt=json", "did not say", node=True)

def routes() -> list[str]:
    return ["/admin/backup/export", "/suggest", "/api/suggest", "/admin/relevance/measure", "text/plain"]
"""


def test_every_handler_but_the_writes_the_ping_and_the_administration_is_a_read() -> None:
    """A request of Solr's ``/export`` (or ``/admin/luke``, ``/stream``, ``/graph``, a handler
    whose name is not a literal), and ``/select`` spelled in pieces, ask Solr untrimmed; a write,
    the ping and the administration NO_DOCUMENTS names give no document back, and the web
    application's own routes are no handler of Solr's."""
    asked = {where for _module, where in solr_queries("searchcrawl.ops.health", HANDLERS)}
    assert asked == {"exported", "terms", "pieces", "joined", "formatted", "named", "any_handler"}


ACCESSOR = """
from operator import attrgetter, methodcaller
from searchcrawl.search.results import run_search

async def named(ctx: WebContext, request: Request) -> Response:
    raw = getattr(ctx, "operator_solr")()
    return await in_thread(run_search, raw, request.query_params["q"])

async def got(ctx: WebContext, request: Request) -> Response:
    return attrgetter("operator_solr")(ctx)().search(request.query_params["q"])

async def called(ctx: WebContext, request: Request) -> Response:
    raw = methodcaller("operator_solr")(ctx)
    return await in_thread(run_search, raw, request.query_params["q"])

async def later(ctx: WebContext, request: Request) -> Response:
    get = attrgetter("operator_solr")
    return await in_thread(run_search, get(ctx)(), request.query_params["q"])

async def anyone(ctx: WebContext, request: Request) -> Response:
    searcher = getattr(ctx, "searcher")(Principals("x", frozenset({"group:board"})))
    return await in_thread(run_search, getattr(searcher, "index", None), request.query_params["q"])

async def inner(ctx: WebContext, request: Request) -> Response:
    searcher = await who_searches(ctx, request)
    return await in_thread(run_search, getattr(searcher.index, "_index"), request.query_params["q"])
"""


def test_an_attribute_read_by_getattr_is_read() -> None:
    """``getattr(ctx, "operator_solr")()`` is ``ctx.operator_solr()`` (an attrgetter's, a
    methodcaller's names too): the accessor, the door that binds any principals, a private
    attribute, each found as when written out."""
    built = trimmed_built(VIEW, ACCESSOR)
    assert built["accessed"] == {(VIEW, where) for where in ("named", "got", "called", "later")}
    assert built["searchers"] == {(VIEW, "anyone")}
    assert built["private"] == {(VIEW, "inner")}
    assert raw_client_handed_on(VIEW, ACCESSOR) == {
        (VIEW, "named: in_thread"),
        (VIEW, "called: in_thread"),
        (VIEW, "inner: in_thread"),
    }
    assert solr_queries(VIEW, ACCESSOR) == {(VIEW, "got")}


REFLECTED = """
import inspect
from inspect import getmembers as members_of
from searchcrawl.search.results import run_search

async def members(ctx: WebContext, request: Request) -> Response:
    raw = dict(inspect.getmembers(ctx))["_solr"]
    return await in_thread(run_search, raw, request.query_params["q"])

async def renamed(ctx: WebContext, request: Request) -> Response:
    return await in_thread(run_search, dict(members_of(ctx))["_solr"], request.query_params["q"])

async def bound(ctx: WebContext, request: Request) -> Response:
    return ctx.health.now.__func__.__globals__["SolrIndex"](ctx.config.solr_url).search("*:*")

async def enclosed(ctx: WebContext, request: Request) -> Response:
    return await in_thread(run_search, view.__closure__[0].cell_contents, request.query_params["q"])
"""


def test_inspect_and_a_functions_insides_are_reflection() -> None:
    """``inspect`` (imported at all), a bound method's ``__self__`` and ``__func__``, a function's
    ``__globals__`` and ``__closure__`` reach any object: reflection, its value the raw client."""
    assert trimmed_built(VIEW, REFLECTED)["private"] == {
        (VIEW, where) for where in ("(module)", "members", "renamed", "bound", "enclosed")
    }
    handed = {where for _module, where in raw_client_handed_on(VIEW, REFLECTED)}
    assert handed == {"members: dict", "members: in_thread", "renamed: dict", "renamed: in_thread", "enclosed: in_thread"}
    assert solr_queries(VIEW, REFLECTED) == {(VIEW, "bound")}
