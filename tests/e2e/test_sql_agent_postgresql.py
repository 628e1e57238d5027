"""The ``database`` agent on the session's real PostgreSQL server: the tests of
tests.agents.test_sql, there on a SQLite file, with their ``db`` on PostgreSQL, and a role that
must give its password."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from searchcrawl.agents.base import AgentError
from searchcrawl.agents.sql import DatabaseAgent, DatabaseOptions
from tests.agents.test_sql import (  # noqa: F401 - the tests of a ``db``, run here with this module's
    Db,
    agent_for,
    people_table,
    test_a_column_the_query_lacks_is_named,
    test_a_failing_access_query_leaves_its_batch_unreadable_and_the_listing_goes_on,
    test_a_large_table_is_listed_in_bounded_memory,
    test_display_url_template_quotes_each_value,
    test_gone_finds_deleted_rows,
    test_incremental_listing_returns_only_rows_modified_since,
    test_listing_and_fetch_run_at_once_in_two_threads,
    test_one_document_per_row_with_title_content_and_typed_attributes,
    test_readers_and_denied_from_columns,
    test_readers_from_an_access_query_asked_per_batch,
    test_rows_without_a_key_or_with_a_key_listed_before_are_counted_and_said_once,
    test_the_agents_connections_are_read_only,
    unreadable_why,
)
from tests.conftest import wait_for


@pytest.fixture
def db(postgres_url: str) -> Iterator[Db]:
    """A fresh ``people`` table in a schema of its own on the session's PostgreSQL server."""
    yield from people_table(postgres_url)


@pytest.fixture
def password_role(postgres_url: str) -> Iterator[tuple[str, str]]:
    """A role of the session's PostgreSQL server that must give its password: (url without
    password, password). The server trusts every other role; its pg_hba.conf gets one line first."""
    role, password = f"reader_{uuid.uuid4().hex[:8]}", f"pw-{uuid.uuid4().hex}"
    admin = create_engine(postgres_url)
    with admin.begin() as connection:
        connection.execute(text(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'"))
        hba = Path(connection.execute(text("SHOW hba_file")).scalar_one())
    original = hba.read_text()
    hba.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n{original}")
    url = make_url(postgres_url).set(username=role).render_as_string(hide_password=False)
    try:
        with admin.connect() as connection:
            connection.execute(text("SELECT pg_reload_conf()"))
        wait_for(lambda: not _connects(url), timeout=10, what="pg_hba.conf to be reloaded")
        yield url, password
    finally:
        hba.write_text(original)
        with admin.begin() as connection:
            connection.execute(text("SELECT pg_reload_conf()"))
            connection.execute(text(f"DROP ROLE {role}"))
        admin.dispose()


def _connects(url: str) -> bool:
    engine = create_engine(url)
    try:
        with engine.connect():
            return True
    except Exception:  # noqa: BLE001 - any refusal
        return False
    finally:
        engine.dispose()


def test_a_wrong_password_is_an_agent_error_without_the_password(
    password_role: tuple[str, str], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    url, password = password_role
    options = {
        "url": url,
        "password_secret": "HR_DB_PASSWORD",
        "query": "SELECT 1 AS id, 'x' AS bio",
        "key": "id",
        "content": ["bio"],
    }
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("HR_DB_PASSWORD", password)
    agent = DatabaseAgent("hr", DatabaseOptions.model_validate(options))
    try:
        assert [reference.key for reference in agent.references(None)] == ["1"]  # the right one is used
    finally:
        agent.close()
    wrong = f"wrong-{uuid.uuid4().hex}"
    monkeypatch.setenv("HR_DB_PASSWORD", wrong)
    agent = DatabaseAgent("hr", DatabaseOptions.model_validate(options))
    try:
        with pytest.raises(AgentError) as refused:
            list(agent.references(None))
    finally:
        agent.close()
    message = str(refused.value)
    assert "password authentication failed" in message and "[database] listing failed on postgresql+psycopg://" in message
    assert refused.value.__cause__ is None and refused.value.__suppress_context__
    for secret_value in (wrong, password):
        assert secret_value not in message and secret_value not in caplog.text
        assert all(secret_value not in record.getMessage() for record in caplog.records)


def test_readers_from_an_array_column(db: Db) -> None:
    """PostgreSQL's arrays: each item one token (a DN's commas and spaces whatever they are)."""
    db.add(
        {"id": 1, "readers": "user:alice|group:cn=Sales, ou=Groups,dc=example,dc=org"},
        {"id": 2, "readers": None},
        {"id": 3, "readers": "user:bob|bob"},
    )
    query = f"SELECT p.*, string_to_array(p.readers, '|') AS reader_list, ARRAY[]::text[] AS blocked FROM {db.name} p"
    agent = agent_for(db, query=query, access_column="reader_list", deny_column="blocked")
    try:
        refs = {reference.key: reference for reference in agent.references(None)}
    finally:
        agent.close()
    assert refs["1"].access is not None
    assert refs["1"].access.fields()["access_allow"] == ["group:cn=sales,ou=groups,dc=example,dc=org", "user:alice"]
    assert refs["2"].access is None  # no reader: the source's [access] says
    assert "'bob' is not an access token" in unreadable_why(refs["3"])
