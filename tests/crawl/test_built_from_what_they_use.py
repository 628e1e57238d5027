"""Components built from what they use (issue 54): no object looked up from the crawler hands a
component everything. A component finds the crawl's parts it uses (the stores, the admission, the
ledger writer, another extension) in its ``from_crawler`` and hands them to its ``__init__``; only
what Scrapy builds before those parts (the spider; an extension, built with the others, when
``get_extension`` cannot answer yet) finds them on first use, in the places named here. A new
look-up elsewhere fails this test: pass the part to the component instead. Read from the code's
syntax trees."""

from __future__ import annotations

import ast

from tests.syntax_trees import PACKAGE, package_modules, source_of, tree_of

FINDERS = {
    "get_extension",
    "get_item_pipeline",
    "get_downloader_middleware",
    "get_spider_middleware",
    "stores_of",
    "admission_of",
}
# (module, function): a look-up outside a from_crawler, and why
ON_FIRST_USE = {
    ("crawl/stores.py", "stores_of"): "the finder itself",
    ("crawl/requests.py", "admission_of"): "the finder itself",
    ("crawl/extensions/run_end.py", "run_end"): "the finder of the run's end (the scheduler requires it)",
    ("crawl/spider.py", "admission"): "the spider is built before the extensions",
    ("crawl/agent_spider.py", "stores"): "the spider is built before the extensions",
    ("crawl/agent_spider.py", "start"): "the spider is built before the extensions (the ledger writer)",
    ("crawl/ledger_writer.py", "table"): "an extension: the stores are built with it",
    ("crawl/extensions/run_end.py", "run_started"): "an extension: the stores, ledger and admission are built with it",
    ("crawl/extensions/run_end.py", "pusher"): "the Solr pipeline is built after the extensions",
    ("crawl/extensions/run_monitor.py", "run_started"): "an extension: the stores are built with it",
    ("crawl/extensions/run_monitor.py", "_give_back"): "an extension: GiveBack is built with it",
    ("crawl/extensions/delay_schedule.py", "apply"): "an extension: AutoThrottle is built with it",
    ("crawl/extensions/give_back.py", "waiting"): "an extension, asking another on use",
    ("crawl/extensions/progress_report.py", "run_started"): "an extension: the stores are built with it",
    ("crawl/extensions/wait_profile.py", "engine_started"): "an extension: the stores are built with it",
    ("crawl/extensions/progress_report.py", "_downloader_waits"): "the downloader's middlewares are built after the extensions",
    ("crawl/extensions/crawl_metrics.py", "_frontier"): "an extension: RunMonitor is built with it",
    ("crawl/middlewares/site_pause.py", "__init__"): "called by its from_crawler",
    ("commands/explain.py", "of"): "explain reads its own crawl's parts once it runs",
    ("commands/explain.py", "downloader_verdict"): "explain asks its crawl's middlewares",
}


def look_ups() -> set[tuple[str, str]]:
    """(module, enclosing function) of every call of a finder in the package."""
    found: set[tuple[str, str]] = set()
    for path in package_modules():
        module = path.relative_to(PACKAGE).as_posix()

        def walk(node: ast.AST, function: str) -> None:
            for child in ast.iter_child_nodes(node):
                inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
                if isinstance(child, ast.Call):
                    callee = child.func
                    name = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", None)
                    if name in FINDERS:
                        found.add((module, function))  # noqa: B023  # walk is called before the next module
                walk(child, inner)

        walk(tree_of(path), "<module>")
    return found


def test_components_find_the_crawls_parts_only_in_from_crawler() -> None:
    elsewhere = {place for place in look_ups() if place[1] != "from_crawler"}
    assert elsewhere - ON_FIRST_USE.keys() == set(), "pass the part to the component's __init__ from its from_crawler"
    assert ON_FIRST_USE.keys() - elsewhere == set(), "a look-up named here is gone: take it off the list"


def test_no_crawl_state_remains() -> None:
    """The crawl-wide state object that every component looked up is gone for good."""
    sources = [source_of(path) for path in package_modules()]
    assert not any("CrawlState" in text or "crawl_state" in text for text in sources)
