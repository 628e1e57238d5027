"""The tests that read searchcrawl's code parse each module once a session (tests/syntax_trees.py,
issue 95): run again once every module is parsed, none of them parses a module of the package."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import pytest

import tests.crawl.test_built_from_what_they_use as built_from_what_they_use
import tests.crawl.test_outcomes_flushed as outcomes_flushed
import tests.store.test_one_writer as one_writer
import tests.system.test_environment_settings as environment_settings
import tests.test_architecture as architecture
import tests.test_complexity as complexity
import tests.test_function_length as function_length
import tests.web.test_roles as roles
import tests.web.test_views_shape as views_shape
from tests.syntax_trees import PACKAGE, Function, beyond_the_named, package_modules, source_of, tree_of

# the tests that walk the package's modules (those that parse a snippet of their own are left out)
READERS_OF_THE_CODE: tuple[Callable[[], None], ...] = (
    architecture.test_no_package_imports_a_higher_level,
    architecture.test_every_named_upward_import_still_happens,
    architecture.test_packages_form_no_cycle,
    architecture.test_no_two_modules_import_each_other,
    architecture.test_the_answers_modules_import_one_way,
    architecture.test_no_name_is_defined_in_two_modules,
    architecture.test_defined_names,
    architecture.test_only_the_searcher_and_the_named_operator_paths_query_solr,
    architecture.test_only_the_searcher_builds_the_trimming,
    architecture.test_web_and_the_commands_never_hand_the_raw_client_to_a_searchers_query,
    architecture.test_the_searchers_index_is_built_where_the_searcher_is_known_and_the_raw_client_kept_for_operators,
    one_writer.test_the_frontier_and_the_redirects_are_written_by_their_owner_alone,
    one_writer.test_only_the_ledger_applies_a_urls_state_changes,
    one_writer.test_no_module_outside_the_stores_writes_a_urls_row_but_through_the_ledger,
    one_writer.test_the_modules_that_write_through_the_ledger_are_the_named_ones,
    one_writer.test_only_the_stores_run_sql,
    one_writer.test_one_door_into_the_frontier,
    built_from_what_they_use.test_components_find_the_crawls_parts_only_in_from_crawler,
    built_from_what_they_use.test_no_crawl_state_remains,
    outcomes_flushed.test_what_an_outcome_writes_is_read_after_a_flush,
    roles.test_every_gate_asks_for_a_permission_by_name,
    views_shape.test_app_holds_the_route_table_and_the_middlewares_and_no_view,
    views_shape.test_the_views_are_handed_the_context_and_never_look_it_up,
    views_shape.test_no_view_module_reaches_into_another,
    views_shape.test_no_class_of_web_is_a_container_of_everything,
    views_shape.test_the_views_are_http_only_the_context_runs_the_searches_and_the_answers,
    environment_settings.test_a_setting_that_is_not_text_is_read_with_a_typed_getter,
    complexity.test_no_function_is_above_20_but_the_named_ones,
    function_length.test_no_function_is_over_60_lines_but_the_named_ones,
)


def test_a_module_is_read_and_parsed_once() -> None:
    path = package_modules()[0]
    assert tree_of(path) is tree_of(path) and source_of(path) is source_of(path)
    assert package_modules() is package_modules()


def test_the_code_reading_tests_parse_no_module_again(monkeypatch: pytest.MonkeyPatch) -> None:
    for path in package_modules():
        tree_of(path)
    modules = {source_of(path): path for path in package_modules() if source_of(path).strip()}  # not the empty __init__s
    parsed_again: list[str] = []
    parse = ast.parse

    def counted(source: str | bytes, *args: Any, **kwargs: Any) -> ast.Module:
        if isinstance(source, str) and source in modules:
            parsed_again.append(str(modules[source].relative_to(PACKAGE.parent)))
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counted)
    for check in READERS_OF_THE_CODE:
        check()
    monkeypatch.undo()
    assert parsed_again == [], "modules parsed again: read them with tests.syntax_trees.tree_of"


def test_a_gate_finds_the_functions_beyond_its_limit_not_named_and_the_named_ones_no_longer_beyond() -> None:
    """The one check of the gates on functions (tests/test_complexity.py, tests/test_function_length.py)."""
    why, app = ("searchcrawl/search/why.py", "term_line"), ("searchcrawl/web/app.py", "route_table")

    def measure(function: Function) -> int:
        return 100 if function.name == "term_line" else 1

    assert beyond_the_named(measure, 99, {}, " lines") == (["  searchcrawl/search/why.py: term_line (100 lines)"], [])
    assert beyond_the_named(measure, 99, {why: "named"}) == ([], [])
    assert beyond_the_named(measure, 99, {why: "named", app: "named"}) == ([], ["  searchcrawl/web/app.py: route_table"])
    assert beyond_the_named(measure, 100, {why: "named"}) == ([], ["  searchcrawl/search/why.py: term_line"])  # above, not at
