"""The web application's shape (issue 73), read from its syntax trees: app.py builds the context and
the route table and holds the middlewares, and no view; each audience's views are a module of
their own (``VIEWS``) in web/views/, named ``<topic>_views.py``, its logic without HTTP in
``web/<topic>.py`` or ``web/<topic>/`` beside the folder, or in the lower module its docstring
names (issue 95); handed the context (context.py) by the route table, never looking it up;
no view module reaches into another's (what they share is in shared.py and context.py); no class
of web/ grows into a container of everything again (``MAX_METHODS``). Exceptions are named here
with their reasons."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.syntax_trees import PACKAGE, tree_of, walk

WEB = PACKAGE / "web"
# the views of each audience
VIEWS = {
    "search_views",  # searchers: the search page, suggestions while typing
    "api_views",  # other applications: the JSON API
    "sign_on_views",  # searchers' and administrators' sign-in
    "admin_views",  # the administration's pages, /metrics
    "relevance_views",  # the relevance rules, why a document is a hit
    "analytics_views",  # query analytics, hits opened
    "token_views",  # the JSON API's tokens
    "agent_views",  # AI agents: the Model Context Protocol (issue 77)
    "backup_views",  # the configuration backed up and restored (issue 79)
    "source_editor_views",  # source files edited in the browser (issue 79)
}
# what every view may use beside its own module: the context and the shared helpers
SHARED = {"context", "shared"}
MAX_METHODS = 20
# (module, class): a class of web/ with more methods than MAX_METHODS, and why
LARGE_CLASSES: dict[tuple[str, str], str] = {}
# (importing view module, imported view module): one audience's views using another's, and why
VIEW_TO_VIEW: dict[tuple[str, str], str] = {
    ("agent_views", "api_views"): "agents call with the JSON API's tokens: its caller check (api_caller), one for both",
}


# the packages of web/, whose modules are imported by name (``from searchcrawl.web.views import search_views``)
PACKAGES = {"searchcrawl.web", "searchcrawl.web.views", "searchcrawl.web.sign_on"}


def paths() -> dict[str, Path]:
    """Every module of web/ (its subpackages' too) by its name, which is unique in searchcrawl."""
    return {path.stem: path for path in sorted(WEB.rglob("*.py")) if path.stem != "__init__"}


def tree(name: str) -> ast.Module:
    return tree_of(paths()[name])


def modules() -> list[str]:
    return sorted(paths())


def functions(node: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda]:
    return [child for child in walk(node) if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]


def takes_a_request(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> bool:
    return any(argument.arg == "request" for argument in function.args.args)


def web_imports(node: ast.AST) -> list[tuple[str, list[str]]]:
    """(web module imported, the names taken from it) for every import of a searchcrawl.web module."""
    found = []
    for child in walk(node):
        if isinstance(child, ast.ImportFrom) and child.module in PACKAGES:
            found += [(alias.name, []) for alias in child.names]
        elif isinstance(child, ast.ImportFrom) and (child.module or "").startswith("searchcrawl.web."):
            found.append(((child.module or "").split(".")[-1], [alias.name for alias in child.names]))
        elif isinstance(child, ast.Import):
            found += [(alias.name.split(".")[-1], []) for alias in child.names if alias.name.startswith("searchcrawl.web.")]
    return found


def test_every_audience_has_its_views_module() -> None:
    assert VIEWS <= set(modules()), f"missing: {VIEWS - set(modules())}"
    assert {name for name in modules() if name.endswith("_views")} == VIEWS, "a views module not declared in VIEWS"


def test_the_contexts_docstring_names_every_views_module() -> None:
    """context.py's docstring lists the views it is handed to: all of them (it once named 7 of 10)."""
    doc = ast.get_docstring(tree("context")) or ""
    named = set(re.findall(r"views/([a-z_]+_views)\.py", doc))
    assert named == VIEWS, f"context.py's docstring misses {sorted(VIEWS - named)}, names {sorted(named - VIEWS)}"


def test_the_views_live_in_views_and_each_is_paired_with_its_logic() -> None:
    """One naming rule (issue 95): web/views/ holds the views modules and nothing else; a views
    module ``<topic>_views.py`` finds its logic in ``web/<topic>.py`` or ``web/<topic>/``, or, where
    the logic lives in a lower package, its docstring names that module."""
    views = WEB / "views"
    assert {path.stem for path in views.glob("*.py")} - {"__init__"} == VIEWS
    for name in sorted(VIEWS):
        topic = name.removesuffix("_views")
        if (WEB / f"{topic}.py").exists() or (WEB / topic).is_dir():
            continue
        doc = ast.get_docstring(tree(name)) or ""
        named = re.findall(r"(?<![\w/])((?:[a-z_]+/)+[a-z_]+\.py)", doc)
        assert named, f"{name}.py names no module of its logic in its docstring"
        assert any((PACKAGE / module).exists() for module in named), f"{name}.py's logic {named} is not a module of searchcrawl"


def test_app_holds_the_route_table_and_the_middlewares_and_no_view() -> None:
    app = tree("app")
    handlers = [getattr(function, "name", "lambda") for function in functions(app) if takes_a_request(function)]
    assert handlers == [], f"app.py answers requests itself ({handlers}): a view of its audience's module does"
    for node in app.body:
        if isinstance(node, ast.ClassDef):  # an ASGI middleware: built on the app, called with scope/receive/send
            methods = {item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
            assert methods == {"__init__", "__call__"}, f"app.py's {node.name} is not a middleware"
    endpoints = []  # route(path, view, methods) in the table, partial(view, ctx) beside it
    for call in walk(app):
        if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "route":
            endpoints.append(call.args[1])
        elif isinstance(call, ast.Call) and getattr(call.func, "id", "") == "partial" and not isinstance(call.args[0], ast.Name):
            endpoints.append(call.args[0])  # (route's own partial(view, ctx) is checked through route's calls)
    assert endpoints, "no route found in app.py's table"
    for endpoint in endpoints:
        assert isinstance(endpoint, ast.Attribute) and isinstance(endpoint.value, ast.Name), ast.unparse(endpoint)
        assert endpoint.value.id in VIEWS, f"the route table names {ast.unparse(endpoint)}, not a view of VIEWS"


def test_the_views_are_handed_the_context_and_never_look_it_up() -> None:
    """No service locator: a view is handed the context (its first parameter, from the route
    table), never finds it on the application, a global or the request."""
    for name in modules():
        module = tree(name)
        for node in walk(module):
            if isinstance(node, ast.Attribute) and node.attr == "app" and ast.unparse(node.value) == "request":
                raise AssertionError(f"{name}.py finds the application from {ast.unparse(node)}")
            if isinstance(node, ast.Attribute) and node.attr == "state" and ast.unparse(node.value) == "app":
                assert name == "app", f"{name}.py finds the context on the application's state"
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "WebContext":
                assert name == "app", f"{name}.py builds a WebContext: app.py builds the one of the application"
        if name in VIEWS:
            for node in module.body:
                if isinstance(node, ast.AsyncFunctionDef) and not node.name.startswith("_") and takes_a_request(node):
                    assert node.args.args[0].arg == "ctx", f"{name}.{node.name} is not handed the context first"


def test_no_view_module_reaches_into_another() -> None:
    """An audience's views use the context, shared.py and the pages' logic, never another
    audience's views; and no module of web/ takes another's private names."""
    for name in modules():
        for imported, names in web_imports(tree(name)):
            private = [item for item in names if item.startswith("_")]
            assert not private, f"{name}.py imports {imported}'s private {private}"
            if name in VIEWS and imported in VIEWS and imported != name:
                assert (name, imported) in VIEW_TO_VIEW, f"{name}.py imports {imported}: move what both use to shared.py"
            assert name not in SHARED or imported not in VIEWS, f"{name}.py imports {imported}: it stands below the views"


def test_no_class_of_web_is_a_container_of_everything() -> None:
    large = {}
    for name in modules():
        for node in walk(tree(name)):
            if isinstance(node, ast.ClassDef):
                count = sum(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) for item in node.body)
                if count > MAX_METHODS:
                    large[(name, node.name)] = count
    assert large.keys() <= LARGE_CLASSES.keys(), f"classes of more than {MAX_METHODS} methods: {large}"
    assert LARGE_CLASSES.keys() <= large.keys(), "named in LARGE_CLASSES but no longer large: remove them"


# the search's and the answer's runs (search/) and what they are made of: in web/, the context runs
# them (WebContext.search: the rules, the request's semantic search, run_search, the search log;
# WebContext.answer: run_answer, its slots and its log), the views hand it the request's values
RUNS = {
    "searchcrawl.search.results": {"run_search"},
    "searchcrawl.search.answer_run": {"run_answer"},
    "searchcrawl.search.answers": {"answer"},
    "searchcrawl.search.extractive": {"with_extract"},
}
RUN_NAMES = set().union(*RUNS.values())


def runs_named(node: ast.AST) -> list[str]:
    """The runs of RUNS ``node`` imports or reads as an attribute (``answers.answer``, ``ctx.record_search`` too)."""
    found = []
    for child in ast.walk(node):
        if isinstance(child, ast.ImportFrom) and child.module in RUNS:
            found += [f"{child.module}.{alias.name}" for alias in child.names if alias.name in RUNS[child.module]]
        elif isinstance(child, ast.ImportFrom) and child.module == "searchcrawl.search":
            found += [f"searchcrawl.search.{alias.name}" for alias in child.names if f"searchcrawl.search.{alias.name}" in RUNS]
        elif isinstance(child, ast.Import):
            found += [alias.name for alias in child.names if alias.name in RUNS]
        elif isinstance(child, ast.Attribute) and (
            child.attr in RUN_NAMES - {"answer"} | {"record_search", "log_search"} or ast.unparse(child) == "answers.answer"
        ):  # (``ctx.answer`` is the context's)
            found.append(ast.unparse(child))
    return found


def test_the_views_are_http_only_the_context_runs_the_searches_and_the_answers() -> None:
    """Issue 101, points 5 and 6: the search page's, the JSON API's and the agents' searches are one
    call of the context (``WebContext.search``), their answers another (``WebContext.answer``);
    no other module of web/ imports or calls the search's or the answer's run."""
    for name in modules():
        if name != "context":
            assert runs_named(tree(name)) == [], f"{name}.py runs a search or an answer itself: call the context's"
    assert {"searchcrawl.search.results.run_search", "searchcrawl.search.answer_run.run_answer"} <= set(
        runs_named(tree("context"))
    )


def test_a_view_that_runs_the_search_itself_is_found() -> None:
    view = ast.parse(
        "from searchcrawl.search import answers\n"
        "from searchcrawl.search.results import run_search\n"
        "async def search(ctx, request):\n"
        "    page = await in_thread(run_search, index, query)\n"
        "    ctx.record_search(page, 0.1, 'web', None)\n"
        "    return answers.answer(index, model, query.q, config)\n"
    )
    assert runs_named(view) == [
        "searchcrawl.search.answers",
        "searchcrawl.search.results.run_search",
        "ctx.record_search",
        "answers.answer",
    ]
