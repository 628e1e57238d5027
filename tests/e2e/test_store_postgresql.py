"""The document table on the session's real PostgreSQL server: the tests of
tests.store.test_document_table that take a ``backend``, there on SQLite, run here on PostgreSQL,
and the ones of PostgreSQL alone."""

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, inspect

from searchcrawl.store import Database, DocumentTable, SchemaOutdated
from searchcrawl.store.database import create_db_engine, run_migrations
from searchcrawl.store.models import documents
from tests.store.test_document_table import (  # noqa: F401 - the tests of a ``backend``, run here with this module's
    exercise,
    test_a_duplicate_whose_original_left_meanwhile_is_fetched_again_not_marked,
    test_a_joining_node_takes_back_the_leases_of_nodes_gone_and_no_others,
    test_an_unchanged_outcomes_validators_are_kept_only_over_the_content_compared,
    test_documents_found_in_solr_become_indexed_rows_and_known_rows_stay,
    test_migrations_match_the_models,
    test_processes_leasing_from_one_frontier_at_once_never_lease_a_url_twice,
    test_run_and_frontier_states_are_stored_as_their_values,
)
from tests.store.test_migration_0012 import check_a_failure_leaves_0011_and_its_data, check_keeps_every_urls_state
from tests.store.test_migration_0013 import check_keeps_rows_and_holds_access


@pytest.fixture(params=["postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


def test_a_read_only_open_of_a_postgresql_schema_without_the_tables_is_refused_untouched(tmp_path, postgres_url: str) -> None:
    """As tests.store.test_document_table's read-only open of SQLite files: a database without
    searchcrawl's tables is refused, and nothing is created in it."""
    schema = f"readonly_{tmp_path.name[-8:].replace('-', '_')}".lower()
    engine = create_db_engine(postgres_url)
    with engine.begin() as connection:
        connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = f"{postgres_url}?options=-csearch_path%3D{schema}"
    with pytest.raises(SchemaOutdated):
        Database(url, migrate=False)
    assert inspect(create_db_engine(url)).get_table_names(schema=schema) == []


def test_postgresql(postgres_url: str) -> None:
    exercise(DocumentTable(Database(postgres_url)))


def test_postgresql_index_methods_are_the_models(postgres_url: str) -> None:
    """Alembic's comparison leaves out an index's method (USING): the migrations' indexes on
    PostgreSQL have the models' (hash for duplicate_of), given them by a PostgreSQL engine."""
    engine = create_db_engine(postgres_url)
    run_migrations(engine)
    found = {i["name"]: i.get("dialect_options", {}).get("postgresql_using") for i in inspect(engine).get_indexes("documents")}
    expected = {i.name: i.dialect_kwargs.get("postgresql_using") or None for i in documents.indexes}  # False: the default (btree)
    assert expected["ix_documents_duplicate_of"] == "hash"
    assert {name: found[name] for name in expected} == expected
    engine.dispose()


@pytest.fixture
def schema_url(tmp_path, postgres_url: str) -> Iterator[tuple[Engine, str]]:
    """An engine and URL of a schema of its own on the session's server: a database to migrate from scratch."""
    schema = f"m_{tmp_path.name[-12:].replace('-', '_')}".lower()
    with create_db_engine(postgres_url).begin() as connection:
        connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = f"{postgres_url}?options=-csearch_path%3D{schema}"
    engine = create_db_engine(url)
    yield engine, url
    engine.dispose()


def test_migration_0012_keeps_every_urls_frontier_and_redirect_state_on_postgresql(schema_url: tuple[Engine, str]) -> None:
    check_keeps_every_urls_state(*schema_url, "m")


def test_a_failure_inside_migration_0012_leaves_postgresql_at_0011_with_its_data(schema_url: tuple[Engine, str]) -> None:
    """PostgreSQL's DDL is transactional: the migration's one transaction is rolled back whole."""
    check_a_failure_leaves_0011_and_its_data(*schema_url, "m")


def test_migration_0013_keeps_rows_and_holds_a_restricted_documents_checksum_on_postgresql(
    schema_url: tuple[Engine, str],
) -> None:
    check_keeps_rows_and_holds_access(*schema_url, "m")
