"""The ``database`` agent on a real SQLite file (on the session's real PostgreSQL server:
tests/e2e/test_sql_agent_postgresql.py)."""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import tracemalloc
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Float,
    Integer,
    MetaData,
    Table,
    Text,
    create_engine,
    delete,
    event,
    insert,
    text,
    update,
)
from sqlalchemy.engine import Engine, make_url

from searchcrawl.access.decision import Principal, Principals, decide
from searchcrawl.agents.base import AgentError, DocumentTooLarge, Reference
from searchcrawl.agents.grants import unreadable_reason
from searchcrawl.agents.sql import (
    DatabaseAgent,
    DatabaseOptions,
    QueriedTokens,
    attribute_value,
    column_tokens,
    template_fields,
)
from tests.conftest import free_port

T0 = datetime(2024, 3, 1, 9, 30, tzinfo=UTC)


@dataclass
class Db:
    """A database holding a ``people`` table: ``url`` for the agent, ``admin`` to change it."""

    url: str
    admin: Engine
    table: Table
    backend: str

    @property
    def name(self) -> str:  # the table's qualified name in the agent's queries
        return f"{self.table.schema}.{self.table.name}"

    def add(self, *rows: dict[str, Any]) -> None:
        with self.admin.begin() as connection:
            connection.execute(insert(self.table), [person(**row) for row in rows])


def person(**values: Any) -> dict[str, Any]:
    number = values.get("id", 0)
    row = {
        "id": number,
        "first_name": f"First{number}",
        "last_name": f"Last{number}",
        "bio": f"Biography of person {number}.",
        "notes": None,
        "department": "Research",
        "salary": 1000.5,
        "hired": datetime(2020, 1, 2, 3, 4, 5),
        "active": True,
        "updated": T0.replace(tzinfo=None),
        "readers": None,
    }
    row.update(values)
    return row


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Db]:
    """A fresh ``people`` table in a temp SQLite file (tests/e2e/test_sql_agent_postgresql.py runs
    the tests of this fixture on the session's PostgreSQL server)."""
    yield from people_table(f"sqlite:///{tmp_path / 'hr.sqlite3'}")


def people_table(url: str) -> Iterator[Db]:
    """A fresh ``people`` table in the database of ``url``: SQLite's schema ``main``, or, on
    PostgreSQL, a schema of its own, dropped afterwards."""
    backend = make_url(url).get_backend_name()
    schema = "main" if backend == "sqlite" else f"hr_{uuid.uuid4().hex[:12]}"
    admin = create_engine(url)
    if backend == "postgresql":
        with admin.begin() as connection:
            connection.execute(text(f"CREATE SCHEMA {schema}"))
    table = Table(
        "people",
        MetaData(schema=schema),
        Column("id", Integer, nullable=True),  # no primary key: a NULL key is possible
        Column("first_name", Text),
        Column("last_name", Text),
        Column("bio", Text),
        Column("notes", Text),
        Column("department", Text),
        Column("salary", Float),
        Column("hired", DateTime),
        Column("active", Boolean),
        Column("updated", DateTime),
        Column("readers", Text),  # access tokens (access_column)
    )
    table.create(admin)
    yield Db(url, admin, table, backend)
    if backend == "postgresql":
        with admin.begin() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
    admin.dispose()


def agent_for(db: Db, **options: Any) -> DatabaseAgent:
    settings = {
        "url": db.url,
        "query": f"SELECT * FROM {db.name}",
        "key": "id",
        "title": ["first_name", "last_name"],
        "content": ["bio", "notes"],
        **options,
    }
    return DatabaseAgent("hr", DatabaseOptions.model_validate(settings))


# -- documents -----------------------------------------------------------------------------------


def test_rows_without_a_key_or_with_a_key_listed_before_are_counted_and_said_once(db: Db, caplog) -> None:
    """Issue 53: a row with a NULL key was skipped with a DEBUG line only, and the second of two
    rows with one key was dropped with no line at all. Both are skipped (one row of a key
    is its document) and counted: one WARNING a listing, and ``skipped()`` for the run's report."""
    db.add(
        {"id": 1, "first_name": "First"},
        {"id": None, "first_name": "Nobody"},
        {"id": 2, "first_name": "Second"},
        {"id": 1, "first_name": "Again"},  # the same key: the same document, one row of it is it
        {"id": None, "first_name": "Nobody else"},
    )
    agent = agent_for(db)
    try:
        assert agent.skipped() == 0
        with caplog.at_level(logging.DEBUG, logger="searchcrawl.agents.sql"):
            references = list(agent.references(None))
        # one row of key 1 is its document (the database sorts the listing by key when keys repeat)
        assert [reference.key for reference in references] == ["1", "2"]
        assert references[0].fields["title"] in ("First Last1", "Again Last1")
        assert references[1].fields["title"] == "Second Last2"
        assert agent.skipped() == 3
        warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
        assert len(warnings) == 1, warnings
        assert "3 rows of" in warnings[0] and "2 with a NULL key (column 'id'), 1 with a key an earlier row had" in warnings[0]
        assert "a second row with key '1' is skipped" in caplog.text
        with db.admin.begin() as connection:
            connection.execute(delete(db.table).where(db.table.c.id.is_(None)))
        list(agent.references(None))  # the next listing counts afresh
        assert agent.skipped() == 1
    finally:
        agent.close()


def test_one_document_per_row_with_title_content_and_typed_attributes(db: Db) -> None:
    db.add(
        {"id": 1, "first_name": "Ada", "last_name": "Lovelace", "notes": "Wrote the first program.", "salary": 2500.25},
        {"id": 2, "first_name": "Alan", "last_name": None, "active": False, "hired": None},
        {"id": None, "first_name": "Nobody"},  # no key: skipped
    )
    attributes = {"department": "department_s", "salary": "salary_d", "hired": "hired_dt", "active": "active_b", "id": "number_i"}
    agent = agent_for(db, attributes=attributes)
    try:
        assert agent.incremental is False
        references = {reference.key: reference for reference in agent.references(None)}
        assert sorted(references) == ["1", "2"]
        ada, alan = references["1"], references["2"]
        assert agent.url_for(ada.key) == "sql://hr/1"
        assert ada.fields == {
            "title": "Ada Lovelace",
            "department_s": "Research",
            "salary_d": 2500.25,
            "hired_dt": "2020-01-02T03:04:05Z",
            "active_b": True,
            "number_i": 1,
        }
        assert alan.fields == {"title": "Alan", "department_s": "Research", "salary_d": 1000.5, "active_b": False, "number_i": 2}
        assert ada.content is not None and ada.content.body == b"Biography of person 1.\n\nWrote the first program."
        assert ada.content.content_type == "text/plain; charset=utf-8" and ada.content.name is None
        assert alan.content is not None and alan.content.body == b"Biography of person 2."
        assert ada.modified is None and ada.token is not None and len(ada.token) == 64
        # fetch reads the row again; a changed row changes its token, an unchanged one keeps it
        assert agent.fetch("1", 0) == ada.content
        assert agent.fetch("3", 0) is None
        assert agent.fetch("not-a-number", 0) is None
        with pytest.raises(DocumentTooLarge):
            agent.fetch("1", 10)
        with db.admin.begin() as connection:
            connection.execute(update(db.table).where(db.table.c.id == 2).values(bio="Changed."))
        again = {reference.key: reference for reference in agent.references(None)}
        assert again["1"].token == ada.token and again["2"].token != alan.token
    finally:
        agent.close()


def test_a_column_the_query_lacks_is_named(db: Db) -> None:
    agent = agent_for(db, content=["biography"])
    try:
        with pytest.raises(AgentError, match="no column 'biography'"):
            list(agent.references(None))
    finally:
        agent.close()


def test_display_url_template_quotes_each_value(db: Db) -> None:
    db.add({"id": 7, "last_name": "O'Brien & Sons/../x?y"}, {"id": 8, "last_name": None})
    agent = agent_for(db, display_url="https://hr.example/people/{id}?name={last_name}")
    try:
        urls = {reference.key: reference.fields.get("display_url") for reference in agent.references(None)}
    finally:
        agent.close()
    assert urls == {"7": "https://hr.example/people/7?name=O%27Brien%20%26%20Sons%2F..%2Fx%3Fy", "8": None}


@pytest.mark.parametrize(
    "template",
    [
        "https://hr.example/{0.__class__}",
        "https://hr.example/{id.__class__.__init__.__globals__}",
        "https://hr.example/{id[0]}",
        "https://hr.example/{id!r}",
        "https://hr.example/{id:{last_name}}",
        "https://hr.example/{}",
        "https://hr.example/{id",
        "javascript:alert({id})",
        "https://{host}/people",
        "//hr.example/{id}",
    ],
)
def test_a_hostile_display_url_template_is_refused(template: str) -> None:
    with pytest.raises(ValidationError, match="display_url"):
        DatabaseOptions(url="sqlite:///x.db", query="SELECT 1", key="id", content=["bio"], display_url=template)


def test_display_url_template_fields() -> None:
    assert template_fields("https://hr.example/{dept}/{id}?{{literal}}") == ["dept", "id"]


# -- changes and deletions -----------------------------------------------------------------------


def test_incremental_listing_returns_only_rows_modified_since(db: Db) -> None:
    db.add(*({"id": number, "updated": (T0 + timedelta(hours=number)).replace(tzinfo=None)} for number in range(1, 6)))
    agent = agent_for(db, modified_column="updated")
    try:
        assert agent.incremental is True
        everything = {reference.key: reference for reference in agent.references(None)}
        assert sorted(everything) == ["1", "2", "3", "4", "5"]
        third = everything["3"]
        assert third.modified == T0 + timedelta(hours=3)
        # the time says when to list it, a hash of the row whether it changed
        assert third.token is not None and third.token.startswith((T0 + timedelta(hours=3)).isoformat() + ":")
        assert third.fields["last_modified"] == "2024-03-01T12:30:00Z"
        since = T0 + timedelta(hours=3)
        assert sorted(reference.key for reference in agent.references(since)) == ["4", "5"]
        # an aware since in another zone is the same moment
        assert sorted(r.key for r in agent.references(since.astimezone(UTC).astimezone(tz=None))) == ["4", "5"]
        with db.admin.begin() as connection:
            connection.execute(
                update(db.table).where(db.table.c.id == 1).values(updated=(T0 + timedelta(days=1)).replace(tzinfo=None))
            )
        assert sorted(reference.key for reference in agent.references(since)) == ["1", "4", "5"]
    finally:
        agent.close()


def test_gone_finds_deleted_rows(db: Db) -> None:
    db.add(*({"id": number, "active": number != 3} for number in range(1, 6)))
    agent = agent_for(db, modified_column="updated")
    restricted = agent_for(db, modified_column="updated", keys_query=f"SELECT id FROM {db.name} WHERE active")
    try:
        assert list(agent.gone(["1", "2", "3"])) == []
        with db.admin.begin() as connection:
            connection.execute(delete(db.table).where(db.table.c.id.in_([2, 4])))
        assert list(agent.gone(["1", "2", "3", "4", "99"])) == ["2", "4", "99"]
        assert list(restricted.gone(["1", "2", "3", "5"])) == ["2", "3"]
        assert list(agent.gone([str(number) for number in range(2500)])) == ["0", "2", "4", *map(str, range(6, 2500))]
    finally:
        agent.close()
        restricted.close()


def test_listing_and_fetch_run_at_once_in_two_threads(db: Db) -> None:
    db.add(*({"id": number} for number in range(1, 1201)))
    agent = agent_for(db, batch_size=100)
    fetched: list[Any] = []
    try:
        listing = agent.references(None)
        first = next(listing)  # the listing holds its connection and cursor open
        worker = threading.Thread(target=lambda: fetched.append(agent.fetch("1000", 0)))
        worker.start()
        worker.join(30)
        rest = list(listing)
    finally:
        agent.close()
    assert fetched and fetched[0] is not None and fetched[0].body == b"Biography of person 1000."
    assert len(rest) + 1 == 1200 and first.key == "1"


# -- a large table: streamed ---------------------------------------------------------------------

ROWS = 8_000
BIO = "x" * 2500  # 20 MB of content, in rows few enough to list in seconds under tracemalloc


def fill(db: Db) -> None:
    db.add(*({"id": number, "bio": f"{number} {BIO}"} for number in range(ROWS)))


@pytest.mark.parametrize("repeated", [0, 3])
def test_a_large_table_is_listed_in_bounded_memory(db: Db, repeated: int) -> None:
    """Issue 53: telling repeated keys kept a digest of every key (O(rows)); the database counts
    them, and a listing where some repeat is sorted by key: the same bounded memory."""
    fill(db)
    if repeated:
        db.add(*({"id": number, "bio": f"again {BIO}"} for number in range(repeated)))
    agent = agent_for(db, batch_size=500)
    try:
        with contextlib.closing(agent.references(None)) as warm:  # the pool and the driver, before tracing
            assert len(list(itertools.islice(warm, 10))) == 10
        tracemalloc.start()
        try:
            count, fetching = 0, []
            for _reference in agent.references(None):
                count += 1
                if count == 1000 and db.backend == "postgresql":
                    fetching = server_side_fetches(db)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    finally:
        agent.close()
    table_bytes = ROWS * len(BIO)
    print(f"{db.backend}: tracemalloc peak {peak} bytes for {table_bytes} bytes of content")
    assert count == ROWS and agent.skipped() == repeated
    assert peak < table_bytes / 10, f"peak {peak} bytes for a table of {table_bytes}"
    if db.backend == "postgresql":
        # the listing's session reads from a server-side cursor, batch_size rows at a time
        assert fetching and all(query.startswith("FETCH FORWARD 500 FROM") for query in fetching), fetching


def server_side_fetches(db: Db) -> list[str]:
    """The last statements of the other sessions on the server that fetch from a cursor."""
    with db.admin.connect() as connection:
        return list(
            connection.execute(
                text("SELECT query FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query ILIKE 'FETCH%'")
            ).scalars()
        )


# -- PostgreSQL: read-only sessions, passwords -----------------------------------------------------


def test_the_agents_connections_are_read_only(db: Db) -> None:
    db.add({"id": 1})
    agent = agent_for(db)
    try:
        with pytest.raises(Exception, match="read-only|readonly"), agent.engine().connect() as connection:
            connection.execute(text(f"DELETE FROM {db.name}"))
    finally:
        agent.close()
    with db.admin.connect() as connection:
        assert connection.execute(text(f"SELECT count(*) FROM {db.name}")).scalar() == 1


def test_an_unreachable_database_is_an_agent_error() -> None:
    url = f"postgresql+psycopg://crawler@127.0.0.1:{free_port()}/hr"
    agent = DatabaseAgent("hr", DatabaseOptions(url=url, query="SELECT 1 AS id", key="id", content=["id"]))
    try:
        with pytest.raises(
            AgentError, match=r"\[database\] listing failed on postgresql\+psycopg://crawler@127.0.0.1:\d+/hr: .*refused"
        ):
            list(agent.references(None))
        with pytest.raises(AgentError, match="reading a row failed"):
            agent.fetch("1", 0)
        with pytest.raises(AgentError, match="asking which rows are gone failed"):
            agent.gone(["1"])
    finally:
        agent.close()


def test_a_missing_password_secret_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HR_DB_PASSWORD", raising=False)
    options = DatabaseOptions(
        url=f"sqlite:///{tmp_path / 'x.db'}", password_secret="HR_DB_PASSWORD", query="SELECT 1 AS id", key="id", content=["id"]
    )
    with pytest.raises(AgentError, match="HR_DB_PASSWORD"):
        list(DatabaseAgent("hr", options).references(None))


# -- validation ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://crawler:S3cret-Pa55@db.example/hr",
        "postgresql+psycopg://crawler@db.example/hr?password=S3cret-Pa55",
        "postgresql://crawler:S3cret-Pa55@db.example:99999999/hr",
        "postgresql://crawler:S3cret-Pa55@db.example:port/hr",
    ],
)
def test_a_url_with_a_password_is_refused_without_echoing_it(url: str) -> None:
    with pytest.raises(ValidationError) as refused:
        DatabaseOptions(url=url, query="SELECT 1", key="id", content=["bio"])
    assert "credentials do not belong in a source file" in str(refused.value)
    assert "S3cret-Pa55" not in str(refused.value) and "S3cret-Pa55" not in repr(refused.value.errors())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"url": "not a url"}, "expected an SQLAlchemy URL"),
        ({"url": "nosuchdb://h/x"}, "expected a database SQLAlchemy knows"),
        ({"password_secret": "HR DB"}, "the NAME of an environment variable"),
        ({"query": "DELETE FROM people"}, "expected a SELECT"),
        ({"content": []}, "at least 1 item"),
        ({"attributes": {"salary": "salary"}}, "type's suffix"),
        ({"attributes": {"salary": "Salary_d"}}, "type's suffix"),
        ({"attributes": {"a": "x_s", "b": "x_s"}}, "one column only"),
        ({"batch_size": 0}, "greater than or equal to 1"),
        ({"table": "people"}, "Extra inputs"),
        ({"access_column": "readers", "access_query": "SELECT id, r AS token FROM acl"}, "not both"),
        ({"deny_column": "blocked"}, "access_column beside deny_column"),
        ({"access_column": "readers", "deny_column": "readers"}, "other than access_column"),
        ({"access_query": "DROP TABLE acl"}, "expected a SELECT"),
        ({"access_column": ""}, "at least 1 character"),
    ],
)
def test_options_are_validated(options: dict[str, Any], message: str) -> None:
    settings = {"url": "sqlite:///hr.db", "query": "SELECT * FROM people;", "key": "id", "content": ["bio"], **options}
    with pytest.raises(ValidationError, match=message):
        DatabaseOptions.model_validate(settings)


def test_a_query_loses_its_final_semicolon() -> None:
    options = DatabaseOptions(url="sqlite:///hr.db", query="  select * from people ; ", key="id", content=["bio"])
    assert options.query == "select * from people"


@pytest.mark.parametrize(
    ("value", "field", "expected"),
    [
        (None, "x_s", None),
        ("", "x_s", None),
        (42, "x_s", "42"),
        ("a, b; c", "x_ss", ["a", "b; c"]),
        (["a", None, "b"], "x_ss", ["a", "b"]),
        ("long text", "x_t", "long text"),
        (2**31 - 1, "x_i", 2**31 - 1),
        (2**31, "x_i", None),
        (2**31, "x_l", 2**31),
        (2**63, "x_l", None),
        (3.0, "x_i", 3),
        (3.5, "x_i", None),
        ("12", "x_i", 12),
        ("twelve", "x_i", None),
        (1.5, "x_d", 1.5),
        (float("nan"), "x_d", None),
        ("inf", "x_d", None),
        (datetime(2024, 1, 2, 3, 4, 5), "x_dt", "2024-01-02T03:04:05Z"),
        (datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC).astimezone(tz=None), "x_dt", "2024-01-02T03:04:05Z"),
        ("2024-01-02 03:04:05.000000", "x_dt", "2024-01-02T03:04:05Z"),
        ("not a date", "x_dt", None),
        (True, "x_b", True),
        (0, "x_b", False),
        ("yes", "x_b", True),
        ("maybe", "x_b", None),
        (b"bytes \xff", "x_s", "bytes \ufffd"),
    ],
)
def test_attribute_values_take_their_fields_type(value: Any, field: str, expected: Any) -> None:
    assert attribute_value(value, field) == expected


# -- readers (issue 55) ----------------------------------------------------------------------------


def tokens_of(reference: Reference) -> tuple[list[str], list[str]]:
    """A reference's allow and deny tokens (its one level's), as the index holds them."""
    assert reference.access is not None and len(reference.access.levels) == 1
    fields = reference.access.fields()
    return fields["access_allow"], fields["access_deny"]


def unreadable_why(reference: Reference) -> str:
    """Why the reference's access could not be read ("" when it could), and that it is shown to
    no one: ``Reference.access_unreadable`` once the crawl's Reference has it, else the access
    ``grants.unreadable`` made (one level that allows nobody)."""
    assert reference.access is None or unreadable_reason(reference.access) is None
    why = reference.access_unreadable or ""
    if why:
        assert reference.access is None or reference.access.fields()["access_allow"] == []
    return why


def reads(reference: Reference, *tokens: str) -> bool:
    assert reference.access is not None
    return decide(reference.access, Principals.of("someone", [Principal(t, "test") for t in tokens])).granted


def create_acl(db: Db, *rows: dict[str, Any]) -> str:
    """A ``people_acl`` table (id, token, kind) beside ``people``; its qualified name."""
    table = Table(
        "people_acl", MetaData(schema=db.table.schema), Column("id", Integer), Column("token", Text), Column("kind", Text)
    )
    table.create(db.admin)
    if rows:
        with db.admin.begin() as connection:
            connection.execute(insert(table), [{"kind": "allow", **row} for row in rows])
    return f"{db.table.schema}.people_acl"


def test_readers_and_denied_from_columns(db: Db, caplog: pytest.LogCaptureFixture) -> None:
    db.add(
        {"id": 1, "readers": "user:Alice, group:cn=Sales, ou=Groups,dc=example,dc=org;uid:1001"},
        {"id": 2, "readers": "PUBLIC"},
        {"id": 3, "readers": None},  # none of its own: the source's [access] says (or COALESCE in SQL)
        {"id": 4, "readers": " , "},  # none either
        {"id": 5, "readers": "bob user:carol"},  # "bob" is not a token: unreadable, never carol's alone
        {"id": 6, "readers": "user:dave -user:erin"},  # a deny is the deny column's: unreadable
        {"id": 7, "readers": "group:Domain Users"},
        {"id": 8, "readers": None},  # denied tokens, no reader: nobody
    )
    query = f"SELECT p.*, CASE WHEN p.id IN (1, 2, 8) THEN 'user:mallory group:interns' END AS blocked FROM {db.name} p"
    agent = agent_for(db, query=query, access_column="readers", deny_column="blocked")
    plain = agent_for(db)
    try:
        assert agent.settings.gives_access is True and plain.settings.gives_access is False
        assert all(reference.access is None for reference in plain.references(None))
        with caplog.at_level(logging.DEBUG, logger="searchcrawl.agents.sql"):
            refs = {reference.key: reference for reference in agent.references(None)}
        assert tokens_of(refs["1"]) == (
            ["group:cn=sales,ou=groups,dc=example,dc=org", "uid:1001", "user:alice"],
            ["group:interns", "user:mallory"],
        )
        assert refs["1"].access is not None and refs["1"].access.levels[0].allow[0].origin == "column readers of row '1'"
        assert refs["1"].access.deny[0].origin == "column blocked of row '1'"
        assert reads(refs["1"], "user:ALICE") and not reads(refs["1"], "user:alice", "group:interns")
        assert tokens_of(refs["2"]) == (["public"], ["group:interns", "user:mallory"])
        assert reads(refs["2"]) and not reads(refs["2"], "user:mallory")
        assert refs["3"].access is None and refs["4"].access is None
        assert tokens_of(refs["8"]) == ([], ["group:interns", "user:mallory"]) and not reads(refs["8"], "user:alice")
        for key, why in (("5", "'bob' is not an access token"), ("6", "'-user:erin' is not an access token")):
            reason = unreadable_why(refs[key])
            assert reason.startswith(f"column readers of row '{key}': ") and why in reason, reason
        assert tokens_of(refs["7"]) == (["group:domain users"], [])
        said = [(r.levelname, r.getMessage()) for r in caplog.records if r.levelno >= logging.INFO and "of the" in r.getMessage()]
        assert said == [
            (
                "WARNING",
                "hr: of the 8 rows listed, 2 have unreadable readers (invalid tokens, a failed access query): not indexed (927)",
            ),
            (
                "INFO",
                "hr: of the 8 rows listed, 2 name no reader: the source's [access] table says who may read them "
                "(without one, they are not indexed)",
            ),
        ]
        assert "row '5': access unreadable, not indexed: column readers" in caplog.text
        # a change of readers alone is a change of the row
        with db.admin.begin() as connection:
            connection.execute(update(db.table).where(db.table.c.id == 7).values(readers="group:Domain Admins"))
        again = {reference.key: reference for reference in agent.references(None)}
        assert again["7"].token != refs["7"].token and again["1"].token == refs["1"].token
        assert tokens_of(again["7"]) == (["group:domain admins"], [])
    finally:
        agent.close()
        plain.close()


def test_readers_from_an_access_query_asked_per_batch(db: Db) -> None:
    """2,500 rows listed 700 at a time: one access query per batch (four), asked when the batch
    is listed, so the first reference comes after one; then 2,500 at a time: a thousand keys a
    statement (three)."""
    rows = 2500
    db.add(*({"id": number} for number in range(1, rows + 1)))
    acl = [{"id": n, "token": f"group:g{n % 7}"} for n in range(1, rows + 1) if n % 10]  # every tenth row: none
    acl += [{"id": n, "token": f"user:u{n}, user:v{n}"} for n in range(1, rows + 1, 3)]  # a text of two tokens
    acl += [{"id": n, "token": "user:mallory", "kind": "DENY "} for n in range(1, rows + 1, 5)]
    acl += [{"id": 1, "token": None}]  # a LEFT JOIN's NULL: no token
    acl += [{"id": 7, "token": "group:x", "kind": "maybe"}, {"id": 8, "token": "everyone"}]  # unreadable
    name = create_acl(db, *acl)
    access_query = f"SELECT id, token, kind FROM {name}"
    agent = agent_for(db, access_query=access_query, batch_size=700)
    statements: list[str] = []
    event.listen(agent.engine(), "before_cursor_execute", lambda *a: statements.append(a[2]))
    try:
        assert agent.settings.gives_access is True
        listing = agent.references(None)
        first = next(listing)
        asked = [s for s in statements if "people_acl" in s]
        assert len(asked) == 1, statements
        refs = {reference.key: reference for reference in itertools.chain([first], listing)}
        assert len(refs) == rows and len([s for s in statements if "people_acl" in s]) == 4
        assert tokens_of(refs["1"]) == (["group:g1", "user:u1", "user:v1"], ["user:mallory"])
        assert refs["1"].access is not None
        assert [g.origin for g in refs["1"].access.levels[0].allow] == ["access query of row '1' (allow)"] * 3
        assert refs["1"].access.deny[0].origin == "access query of row '1' (deny)"
        assert tokens_of(refs["2"]) == (["group:g2"], [])
        assert refs["20"].access is None  # no row: the source's [access] says
        assert tokens_of(refs["2499"]) == (["group:g0"], [])  # the last batch
        assert "kind 'maybe' for row '7' is neither allow nor deny" in unreadable_why(refs["7"])
        assert "'everyone' is not an access token" in unreadable_why(refs["8"])
        unreadable_keys = {key for key, reference in refs.items() if unreadable_why(reference)}
        assert unreadable_keys == {"7", "8"}
        # a change of the access query's tokens alone changes the row's token
        with db.admin.begin() as connection:
            connection.execute(text(f"INSERT INTO {name} (id, token, kind) VALUES (2, 'user:new', 'allow')"))
        statements.clear()
        wide = agent_for(db, access_query=access_query, batch_size=rows)
        event.listen(wide.engine(), "before_cursor_execute", lambda *a: statements.append(a[2]))
        try:
            again = {reference.key: reference for reference in wide.references(None)}
        finally:
            wide.close()
        assert len([s for s in statements if "people_acl" in s]) == 3  # 1,000 keys a statement
        changed = {key for key in refs if again[key].token != refs[key].token}
        assert changed == {"2"} and tokens_of(again["2"]) == (["group:g2", "user:new"], [])
    finally:
        agent.close()


def failing(db: Db) -> str:
    """An SQL expression that fails on the row whose id is 5 only (SQLite's division by zero is
    NULL; its json() of text that is not JSON fails)."""
    return "json(CASE WHEN id = 5 THEN 'x' ELSE '1' END)" if db.backend == "sqlite" else "1 / (id - 5)"


def test_a_failing_access_query_leaves_its_batch_unreadable_and_the_listing_goes_on(
    db: Db, caplog: pytest.LogCaptureFixture
) -> None:
    db.add(*({"id": number} for number in range(1, 11)))
    name = create_acl(db, *({"id": n, "token": "public"} for n in range(1, 11)))
    # the listing's keys are pushed into the query: only the batch with id 5 fails
    query = f"SELECT id, CASE WHEN {failing(db)} IS NOT NULL THEN token END AS token, kind FROM {name}"
    agent = agent_for(db, access_query=query, batch_size=4)  # batches 1-4, 5-8, 9-10
    broken = agent_for(db, access_query="SELECT id, token FROM no_such_acl")
    no_token = agent_for(db, access_query=f"SELECT id, kind FROM {name}")
    try:
        with caplog.at_level(logging.WARNING, logger="searchcrawl.agents.sql"):
            refs = {reference.key: reference for reference in agent.references(None)}
        assert len(refs) == 10
        failed = {key for key, reference in refs.items() if unreadable_why(reference)}
        assert failed == {"5", "6", "7", "8"}
        assert "[database] the access query failed on" in unreadable_why(refs["5"])
        assert all(tokens_of(refs[key]) == (["public"], []) for key in ("1", "4", "9", "10"))
        assert "the access of 4 rows is unreadable, they are not indexed" in caplog.text
        assert "of the 10 rows listed, 4 have unreadable readers" in caplog.text
        for agent_of in (broken, no_token):
            refs = {reference.key: reference for reference in agent_of.references(None)}
            assert len(refs) == 10 and all(unreadable_why(reference) for reference in refs.values())
        assert "no column 'token'" in unreadable_why(refs["1"])
    finally:
        agent.close()
        broken.close()
        no_token.close()


# -- readers: parsing (unit) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, []),
        ("", []),
        ("  ;, ", []),
        ("user:alice", ["user:alice"]),
        ("user:alice group:staff,uid:7;gid:8", ["user:alice", "group:staff", "uid:7", "gid:8"]),
        ("group:cn=sales, ou=groups,dc=example,dc=org user:bob", ["group:cn=sales, ou=groups,dc=example,dc=org", "user:bob"]),
        ("group:Domain Users, public", ["group:Domain Users", "public"]),
        ("group:a\\, user:b", ["group:a\\, user:b"]),  # an escaped separator begins no token
        ("bob user:alice", ["bob", "user:alice"]),  # refused by normal_token
        ("user:alice -user:bob", ["user:alice", "-user:bob"]),  # refused by normal_token
        (["user:a, user:b", None, " ", "group:x"], ["user:a, user:b", "group:x"]),  # an array: one token an item
        (b"user:alice", ["user:alice"]),
        (1001, ["1001"]),  # refused by normal_token
    ],
)
def test_column_tokens(value: object, expected: list[str]) -> None:
    assert column_tokens(value) == expected


def test_queried_tokens_keep_the_first_error() -> None:
    tokens = QueriedTokens("42")
    tokens.add(None)  # a LEFT JOIN's row without token
    assert tokens.access() is None  # none of its own: the source's [access] says
    tokens.add("user:alice")
    tokens.add("group:b user:c", "ALLOW")
    tokens.add("user:mallory", "deny")
    tokens.add(None)
    access = tokens.access()
    assert access is not None and access.fields()["access_allow"] == ["group:b", "user:alice", "user:c"]
    assert access.fields()["access_deny"] == ["user:mallory"]
    tokens.add("user:x", None)
    tokens.add("nobody")
    reason = unreadable_reason(tokens.access())
    assert reason == "the access query's kind 'NULL' for row '42' is neither allow nor deny"
    bad = QueriedTokens("43")
    bad.add("nobody user:a")  # text before the first namespace
    assert "'nobody' is not an access token" in (unreadable_reason(bad.access()) or "")
