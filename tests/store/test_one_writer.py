"""The Ledger decides (issue 54, issue 73): only the Ledger (searchcrawl/store/ledger.py) applies
a URL's state changes, reading the row, deciding (rules/lifecycle.py, rules/ledger_rules.py) and
applying the decision in one transaction. Outside the stores (searchcrawl/store/), no module
calls a write of a URL's row nor issues an INSERT or UPDATE on the documents table; inside them,
the SQL of those writes (records.py, duplicates.py, plans.py, redirects.py, the frontier's
writes made for the ledger) is called by the Ledger alone, and the document table
(documents.py) only reads. The modules that call the ledger's writes are named
(``LEDGER_WRITERS``): the run's start and end, the agent spider's listing, the scope middleware
and the Solr push (in a crawl the LedgerWriter extension, crawl/ledger_writer.py, records the
outcomes and exclusions the components signal). Read from the code's syntax trees.

The rule's other two parts are here too: only searchcrawl/store/ runs SQL, and one door into a
run's frontier (``test_only_the_stores_run_sql``, ``test_one_door_into_the_frontier``).
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Collection
from pathlib import Path

from searchcrawl.store.documents import DocumentTable
from tests.syntax_trees import PACKAGE, package_modules, tree_of, walk

STORES = PACKAGE / "store"

# The ledger's writes (a table has none: a name here called on a table outside the stores is a write
# around the ledger)
WRITES = {
    "record",
    "record_excluded",
    "record_found",
    "mark_duplicate",
    "mark_indexed",
    "mark_removed",
    "mark_linked",
    "settle_pending",
    "hold_removals",
    "plan_maintenance",
    "record_spared",
    "drop_stale_targets",
    "mark_anchors_set",
}
# DocumentTable's public methods: reads (a new one must be added here, or be a write of the Ledger's)
READS = {
    "pending",
    "pending_count",
    "removals",
    "holders",
    "display_url_owner",
    "get",
    "count_by",
    "not_indexed_statuses",
    "rows",
    "find_duplicate",
    "orphans",
    "failing",
    "count_in_index",
    "knows",
    "anchors_due",
    "anchor_candidates",
}
LEDGER_WRITES = WRITES | {"mark_refused"}
# The modules outside the stores that call the ledger's writes, and what they write
LEDGER_WRITERS = {
    "searchcrawl/crawl/run_start.py": {"record_found", "plan_maintenance"},  # the take-over of Solr's, the maintenance plan
    # the run's settlements (the same content cached twice at once, before its end decides)
    "searchcrawl/crawl/extensions/run_end.py": {"record", "drop_stale_targets", "hold_removals", "settle_pending"},
    "searchcrawl/crawl/agent_spider.py": {"record", "mark_linked"},  # settle_listing, the listing's documents
    "searchcrawl/crawl/middlewares/scope.py": {"mark_linked"},  # the links of a run
    # Solr's answers, and a shared crawl's copies of one content settled before a push
    # and the anchor fields it set in place (issue 100)
    "searchcrawl/index/push.py": {"mark_indexed", "mark_refused", "mark_removed", "settle_pending", "mark_anchors_set"},
    "searchcrawl/crawl/middlewares/sitemaps.py": {"record_spared"},  # a maintenance crawl's unchanged pages, in bulk
}
OTHER_TABLES = {"for_run", "closing"}  # the same table, for a run or a closing crawl: no write
SQL_WRITE = re.compile(r"\b(INSERT\s+INTO|UPDATE)\s+\"?documents\b", re.IGNORECASE)


def _modules() -> list[Path]:
    return [path for path in package_modules() if STORES not in path.parents]


def _is_table(node: ast.expr, aliases: Collection[str] = ()) -> bool:
    """Whether an expression names a document table: ``table``, ``....table``, ``DocumentTable(...)``,
    or a name given one of these (``aliases``)."""
    if isinstance(node, ast.Name):
        return node.id == "table" or node.id.endswith("_table") or node.id in aliases
    if isinstance(node, ast.Attribute):
        return node.attr == "table" or node.attr.endswith("_table")
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "DocumentTable"
    return False


def table_writes(tree: ast.AST) -> list[str]:
    """Calls of the document table's writes in ``tree``, as "line: method"."""
    aliases = {
        target.id
        for node in walk(tree)
        if isinstance(node, ast.Assign) and _is_table(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found = []
    for node in walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITES:
            if _is_table(node.func.value, aliases):
                found.append(f"{node.lineno}: {node.func.attr}")
    return found


def _is_ledger(node: ast.expr) -> bool:
    """Whether an expression names a ledger: ``ledger``, ``....ledger``."""
    return (isinstance(node, ast.Name) and node.id == "ledger") or (isinstance(node, ast.Attribute) and node.attr == "ledger")


def ledger_writes(tree: ast.AST) -> set[str]:
    """The ledger's writes called in ``tree`` (on ``ledger`` or ``....ledger``)."""
    return {
        node.func.attr
        for node in walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in LEDGER_WRITES
        and _is_ledger(node.func.value)
    }


def sql_writes(tree: ast.AST) -> list[str]:
    """INSERT or UPDATE on the documents table in ``tree``: SQLAlchemy's ``insert(documents)``,
    ``update(documents)``, ``documents.insert()``, ``documents.update()``, or SQL text."""
    found = []
    for node in walk(tree):
        if isinstance(node, ast.Call):
            func, args = node.func, node.args
            named = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if named in ("insert", "update") and any(isinstance(arg, ast.Name) and arg.id == "documents" for arg in args):
                found.append(f"{node.lineno}: {named}(documents)")
            elif (
                isinstance(func, ast.Attribute)
                and func.attr in ("insert", "update")
                and isinstance(func.value, ast.Name)
                and func.value.id == "documents"
            ):
                found.append(f"{node.lineno}: documents.{func.attr}()")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_WRITE.search(node.value):
            found.append(f"{node.lineno}: SQL {SQL_WRITE.search(node.value).group(0)!r}")  # type: ignore[union-attr]
    return found


# The tables split off the documents (issue 54 point 3, migration 0012) have one owner each: the
# frontier table is written by store/frontier.py alone (the Ledger finishes a URL's entry and queues
# it again through frontier.py's ``place`` and ``queue_documents``), the redirects table by
# store/redirects.py alone, the anchors and anchor_marks tables (issue 100) by store/anchor_table.py alone.
SPLIT_OWNERS = {
    "frontier": STORES / "frontier.py",
    "redirects": STORES / "redirects.py",
    "anchors": STORES / "anchor_table.py",
    "anchor_marks": STORES / "anchor_table.py",
}
FRONTIER_WRITES = {"place", "queue_documents", "finish_queued"}  # frontier.py's writes for the ledger
MIGRATIONS = STORES / "migrations"
# The SQL of the Ledger's writes, each in the store module that holds it: called by the Ledger
# (store/ledger.py) alone, and by no module but its own and the Ledger (``LEDGER_ONLY``)
STORE_WRITES = {
    STORES / "records.py": {
        "insert_row",
        "insert_new",
        "update_row",
        "set_indexed",
        "set_removed",
        "set_held",
        "set_linked",
        "write_spared",
    },
    STORES / "duplicates.py": {"release_duplicates", "queue_copy"},
    STORES / "plans.py": {"queue_planned"},
    STORES / "redirects.py": {"write_redirect"},
    STORES / "anchor_table.py": {"replace_page", "mark_due", "clear_due"},
}
LEDGER = STORES / "ledger.py"
# The modules that may call the frontier's writes made for the ledger, besides frontier.py itself
LEDGER_ONLY = {LEDGER, STORES / "records.py", STORES / "duplicates.py", STORES / "plans.py"}
# The modules that write the documents table, and why
DOCUMENT_WRITERS = {
    STORES / "records.py": "a URL's row, as the Ledger decided it",
    STORES / "duplicates.py": "the duplicates of a document that left, released (the Ledger's _make_way)",
    STORES / "frontier.py": "Frontier.add: a URL new to the table gets its row (queued), in the statement of its entry",
}


def writes_of(tree: ast.AST, table: str) -> list[str]:
    """INSERT, UPDATE or DELETE on ``table`` in ``tree``: ``insert(table)``, ``update(table)``,
    ``delete(table)``, ``table.insert()`` ..., or SQL text."""
    found = []
    pattern = re.compile(rf"\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+\"?{table}\b", re.IGNORECASE)
    verbs = ("insert", "update", "delete")
    for node in walk(tree):
        if isinstance(node, ast.Call):
            func, args = node.func, node.args
            named = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if named in verbs and any(isinstance(arg, ast.Name) and arg.id == table for arg in args):
                found.append(f"{node.lineno}: {named}({table})")
            elif (
                isinstance(func, ast.Attribute)
                and func.attr in verbs
                and isinstance(func.value, ast.Name)
                and func.value.id == table
            ):
                found.append(f"{node.lineno}: {table}.{func.attr}()")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and pattern.search(node.value):
            found.append(f"{node.lineno}: SQL {pattern.search(node.value).group(0)!r}")  # type: ignore[union-attr]
    return found


def test_the_frontier_and_the_redirects_are_written_by_their_owner_alone() -> None:
    """No module but its owner writes the frontier table or the redirects table (the migrations
    aside); only the ledger's document table calls the frontier's writes made for it."""
    offenders = {}
    for path in package_modules():
        if MIGRATIONS in path.parents:
            continue
        tree = tree_of(path)
        found = [write for table, owner in SPLIT_OWNERS.items() if path != owner for write in writes_of(tree, table)]
        if path not in (SPLIT_OWNERS["frontier"], *LEDGER_ONLY):
            found += [
                f"{node.lineno}: {node.func.id}"
                for node in walk(tree)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FRONTIER_WRITES
            ]
        if found:
            offenders[str(path.relative_to(PACKAGE.parent))] = found
    assert offenders == {}, "write the frontier through store/frontier.py, a redirect through the ledger"


def test_the_scan_finds_writes_of_the_split_tables() -> None:
    old = """
connection.execute(update(frontier).where(x).values(state="done"))
connection.execute(self.database.insert(frontier).values(document_id=1))
connection.execute(redirects.update().values(target=None))
connection.execute(delete(redirects))
connection.execute(text("DELETE FROM frontier WHERE run_id = 1"))
connection.execute(text('INSERT INTO "redirects" (document_id) VALUES (1)'))
"""
    tree = ast.parse(old)
    assert len(writes_of(tree, "frontier")) == 3
    assert len(writes_of(tree, "redirects")) == 3
    assert writes_of(ast.parse("select(frontier.c.state)\nupdate(documents)\n"), "frontier") == []
    # the owners write their tables: the scan sees them
    assert writes_of(tree_of(SPLIT_OWNERS["frontier"]), "frontier")
    assert writes_of(tree_of(SPLIT_OWNERS["redirects"]), "redirects")


def test_the_document_table_only_reads() -> None:
    """The document table is the reads (issue 73): every write of a URL's row is the Ledger's."""
    public = {name for name, _ in inspect.getmembers(DocumentTable, inspect.isfunction) if not name.startswith("_")}
    assert public == READS | OTHER_TABLES, "a new read goes to READS; a write is the Ledger's (store/ledger.py)"


def calls_of(tree: ast.AST, names: Collection[str]) -> list[str]:
    """Calls in ``tree`` of a function or method named one of ``names``, as "line: name"."""
    found = []
    for node in walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            named = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if named in names:
                found.append(f"{node.lineno}: {named}")
    return found


def test_only_the_ledger_applies_a_urls_state_changes() -> None:
    """The SQL of a URL's writes (``STORE_WRITES``) is called by the Ledger alone: no other module,
    in the stores or outside them, writes a URL's row, its copies or its redirect; and the
    documents table is written by the modules named in ``DOCUMENT_WRITERS`` alone."""
    every = {name for names in STORE_WRITES.values() for name in names}
    offenders = {}
    for path in package_modules():
        if MIGRATIONS in path.parents:
            continue
        tree = tree_of(path)
        found = [] if path == LEDGER else calls_of(tree, every - STORE_WRITES.get(path, set()))
        if path not in DOCUMENT_WRITERS:
            found += writes_of(tree, "documents")
        if found:
            offenders[str(path.relative_to(PACKAGE.parent))] = found
    assert offenders == {}, "apply a URL's change through the Ledger (searchcrawl/store/ledger.py)"
    # each named write is the Ledger's, and is defined where it is named
    for path, names in STORE_WRITES.items():
        tree = tree_of(path)
        assert names <= {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}, path
    assert every <= {call.split(": ")[1] for call in calls_of(tree_of(LEDGER), every)}


def test_no_module_outside_the_stores_writes_a_urls_row_but_through_the_ledger() -> None:
    offenders = {}
    for path in _modules():
        tree = tree_of(path)
        found = table_writes(tree) + sql_writes(tree)
        if found:
            offenders[str(path.relative_to(PACKAGE.parent))] = found
    assert offenders == {}, "write a URL's row through the ledger (searchcrawl/store/ledger.py)"


def test_the_modules_that_write_through_the_ledger_are_the_named_ones() -> None:
    """A write moved (the run's start out of the crawl state, the agent's listing into its
    spider) or added elsewhere must be named here: only the ledger writes a URL's row, and these
    are its callers."""
    found = {}
    for path in _modules():
        writes = ledger_writes(tree_of(path))
        if writes:
            found[str(path.relative_to(PACKAGE.parent))] = writes
    assert found == LEDGER_WRITERS


def test_the_scan_finds_direct_writes() -> None:
    """The scan itself: the writes the crawl's components made before the ledger took them."""
    old = """
context.table.mark_linked(source, urls)
table.mark_indexed(source, pairs)
self.context.table.record(source, url, outcome)
self.table.record_excluded(source, rows)
DocumentTable(database).hold_removals(source)
documents_of = self.context.table
documents_of.mark_removed(source, urls)
connection.execute(update(documents).where(x).values(state="indexed"))
connection.execute(self.database.insert(documents).values(url=url))
connection.execute(documents.update().values(delta=None))
connection.execute(text("UPDATE documents SET state = 'removed'"))
"""
    tree = ast.parse(old)
    assert len(table_writes(tree)) == 6
    assert len(sql_writes(tree)) == 4
    harmless = "robots.record(site)\nledger.record(url, outcome)\nself.ledger.mark_linked(urls)\nupdate(frontier)\n"
    assert table_writes(ast.parse(harmless)) == sql_writes(ast.parse(harmless)) == []
    assert ledger_writes(ast.parse(harmless)) == {"record", "mark_linked"}


# --- only the stores run SQL -----------------------------------------------------------------

# Outside searchcrawl/store/, no module imports SQLAlchemy or runs a statement (``execute``,
# ``exec_driver_sql``): the reports, the scheduler and the web read and write through the stores'
# functions. The exceptions, each with its reason:
SQL_ELSEWHERE = {
    "searchcrawl/agents/sql.py": "a SQL source's own database, read by its agent: a repository crawled, not the store",
    "searchcrawl/config/own_places.py": "make_url: a source's database URL compared with the installation's; nothing run",
    "searchcrawl/system/paths.py": "sqlalchemy.engine.make_url: the database URL setting parsed; nothing run",
    "searchcrawl/web/analytics.py": "sqlalchemy.exc.OperationalError: a failed analytics write caught; nothing run",
}
SQL_CALLS = {"execute", "exec_driver_sql", "executemany"}


def sql_of(tree: ast.AST) -> list[str]:
    """SQLAlchemy imported, or a statement run, in ``tree``, as "line: what"."""
    found = []
    for node in walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {alias.name}" for alias in node.names if alias.name.split(".")[0] == "sqlalchemy"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlalchemy" and not node.level:
            found.append(f"{node.lineno}: from {node.module} import")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SQL_CALLS:
            found.append(f"{node.lineno}: {node.func.attr}()")
    return found


def test_only_the_stores_run_sql() -> None:
    offenders = {}
    for path in _modules():
        name = str(path.relative_to(PACKAGE.parent))
        found = sql_of(tree_of(path))
        if found and name not in SQL_ELSEWHERE:
            offenders[name] = found
    assert offenders == {}, "move the SQL into a store module (searchcrawl/store/) and call its function"
    for name in SQL_ELSEWHERE:  # each named exception still needs its SQLAlchemy (the list only shrinks)
        assert sql_of(tree_of(PACKAGE.parent / name)), f"{name}: remove it from SQL_ELSEWHERE"


def test_the_scan_finds_sql() -> None:
    old = """
from sqlalchemy import select
import sqlalchemy.exc
with database.engine.connect() as connection:
    connection.execute(select(runs))
    connection.exec_driver_sql("SET LOCAL enable_sort = off")
"""
    assert len(sql_of(ast.parse(old))) == 4
    assert sql_of(ast.parse("from .sqlalchemy_helpers import x\nrules.execute_later()\n")) == []


# --- one door into the frontier --------------------------------------------------------------

DOOR = PACKAGE / "crawl" / "requests.py"  # Admission.queue: every URL put in a run's frontier
FRONTIER_MAKERS = {PACKAGE / "crawl" / "frontier_scheduler.py"}  # the run's frontier, made as the run starts


def frontier_additions(tree: ast.AST) -> list[str]:
    """Calls of a frontier's ``add`` (on ``frontier``, ``....frontier``, ``*_frontier``) and
    frontiers made (``Frontier(...)``) in ``tree``, as "line: what"."""
    found = []
    for node in walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "add":
            owner = func.value
            named = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            if named == "frontier" or named.endswith("_frontier"):
                found.append(f"{node.lineno}: {named}.add")
        elif isinstance(func, ast.Name) and func.id == "Frontier":
            found.append(f"{node.lineno}: Frontier()")
    return found


def test_one_door_into_the_frontier() -> None:
    """Outside the stores, only the crawl's Admission (crawl/requests.py ``queue``) adds to a run's
    frontier, and only the frontier scheduler makes it (as the run starts)."""
    offenders = {}
    for path in _modules():
        found = frontier_additions(tree_of(path))
        if path == DOOR:
            found = [what for what in found if not what.endswith("frontier.add")]
        if path in FRONTIER_MAKERS:
            found = [what for what in found if not what.endswith("Frontier()")]
        if found:
            offenders[str(path.relative_to(PACKAGE.parent))] = found
    assert offenders == {}, "queue URLs through the crawl's Admission (searchcrawl/crawl/requests.py ``queue``)"
    assert any(what.endswith("frontier.add") for what in frontier_additions(tree_of(DOOR)))


def test_the_scan_finds_additions_to_a_frontier() -> None:
    old = (
        "frontier.add(links)\nself.frontier.add(seeds, again=True)\nrun_frontier.add([e])\nFrontier(db, s, 1, o)\nseen.add(url)\n"
    )
    assert len(frontier_additions(ast.parse(old))) == 4
