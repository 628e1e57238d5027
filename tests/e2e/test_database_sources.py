"""A ``database`` source over a real table (SQLite, and PostgreSQL), crawled again and again
while a seeded generator inserts, updates and deletes rows: after every crawl Solr holds exactly
the table's rows (title, typed attribute, display URL), a row not updated keeps its Solr
``_version_``, an incremental source (``modified_column``) reads only the rows changed since the
last crawl began, and one crawl killed with SIGKILL is resumed by the next, losing nothing. The
database password comes from a secret and reaches no log line, report or Solr field."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Column, DateTime, Integer, MetaData, Table, Text, create_engine, delete, insert, text, update

from searchcrawl.store.models import searches
from searchcrawl.store.runs import Runs
from tests.conftest import Project, solr_docs

WORDS = ("ledger", "invoice", "harbour", "crane", "pallet", "customs", "berth", "tariff")


class Records:
    """The oracle, and the real table it is written to."""

    def __init__(self, url: str, schema: str | None, rng: random.Random) -> None:
        self.url, self.rng = url, rng
        self.engine = create_engine(url)
        self.table = Table(
            "records",
            MetaData(schema=schema),
            Column("id", Integer, primary_key=True),
            Column("title", Text),
            Column("body", Text),
            Column("pages", Integer),
            Column("updated", DateTime),
        )
        self.table.create(self.engine)
        self.rows: dict[int, dict] = {}
        self.next = 1
        self.clock = datetime(2026, 1, 1)
        for _ in range(30):
            self.insert()

    @property
    def name(self) -> str:
        return f"{self.table.schema}.records" if self.table.schema else "records"

    def tick(self) -> datetime:
        """A modification time after every crawl so far (naive UTC, as the column holds it)."""
        self.clock = max(self.clock, datetime.now(UTC).replace(tzinfo=None)) + timedelta(milliseconds=1)
        return self.clock

    def insert(self) -> int:
        key = self.next
        self.next += 1
        row = {
            "id": key,
            "title": f"Record {key}",
            "body": self.words(),
            "pages": self.rng.randint(1, 99),
            "updated": self.tick(),
        }
        with self.engine.begin() as connection:
            connection.execute(insert(self.table).values(**row))
        self.rows[key] = row
        return key

    def words(self) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(10))

    def mutate(self) -> dict[str, set[int]]:
        step: dict[str, set[int]] = {"new": {self.insert() for _ in range(self.rng.randint(0, 3))}}
        old = sorted(set(self.rows) - step["new"])
        step["changed"] = set(self.rng.sample(old, self.rng.randint(0, 4)))
        step["deleted"] = set(self.rng.sample(sorted(set(old) - step["changed"]), self.rng.randint(0, 3)))
        with self.engine.begin() as connection:
            for key in step["changed"]:
                values = {
                    "title": f"Record {key} revised",
                    "body": self.words(),
                    "pages": self.rng.randint(1, 99),
                    "updated": self.tick(),
                }
                connection.execute(update(self.table).where(self.table.c.id == key).values(**values))
                self.rows[key].update(values)
            for key in step["deleted"]:
                connection.execute(delete(self.table).where(self.table.c.id == key))
                del self.rows[key]
        return step


@pytest.fixture(params=["sqlite", "postgresql"])
def records(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Records]:
    rng = random.Random(5)
    if request.param == "sqlite":
        yield Records(f"sqlite:///{tmp_path / 'records.sqlite3'}", None, rng)
        return
    url, schema = request.getfixturevalue("postgres_url"), f"records_{uuid.uuid4().hex[:10]}"
    admin = create_engine(url)
    with admin.begin() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    yield Records(url, schema, rng)
    with admin.begin() as connection:
        connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
    admin.dispose()


def indexed(solr, name: str) -> dict[int, dict]:
    return {int(doc["url"].rsplit("/", 1)[-1]): doc for doc in solr_docs(solr, name)}


@pytest.mark.parametrize("incremental", [True, False], ids=["modified-column", "row-hash"])
def test_a_table_is_followed_crawl_after_crawl(project: Project, solr, records: Records, incremental: bool) -> None:
    name = f"records-{uuid.uuid4().hex[:6]}"
    modified = 'modified_column = "updated"\n' if incremental else ""
    project.source(
        name,
        'type = "database"\nmax_delete_share = 1.0\n[access]\npublic = true\n[database]\n'
        f'url = "{records.url}"\nquery = "SELECT id, title, body, pages, updated FROM {records.name}"\n'
        'key = "id"\ntitle = "title"\ncontent = ["body"]\nattributes = { pages = "pages_i" }\n'
        f'display_url = "https://records.example.com/r/{{id}}"\n{modified}',
    )
    before: dict[int, dict] = {}
    for crawl in range(5):
        step = records.mutate() if crawl else {"new": set(records.rows), "changed": set(), "deleted": set()}
        if crawl == 0:  # killed while it reads the rows one at a time, then resumed
            project.killed_crawl(name, 3.5, delay=0.5)
        # no margin: a crawl lists exactly the rows changed since the last one began
        result = project.scrapy("crawl", name, "-s", "LOG_LEVEL=DEBUG", "-s", "SEARCHCRAWL_AGENT_SINCE_MARGIN=0")
        assert result.returncode == 0, result.stderr[-3000:]
        if incremental and crawl != 0:
            listed = len(step["new"] | step["changed"])
            lines = [line for line in result.stderr.splitlines() if "Listed" in line or "Listing" in line]
            assert f"Listed {listed} documents of {name}" in result.stderr, f"crawl {crawl}: only the changes are listed: {lines}"
        now = indexed(solr, name)
        assert set(now) == set(records.rows), f"crawl {crawl}: {step}"
        for key, row in records.rows.items():
            doc = now[key]
            assert (doc["title"], doc["pages_i"], doc["content"]) == (row["title"], row["pages"], row["body"])
            assert doc["display_url"] == f"https://records.example.com/r/{key}"
            if key in before and key not in step["changed"]:
                assert doc["_version_"] == before[key]["_version_"], f"crawl {crawl}: row {key} pushed again, unchanged"
        before = now
    database = project.table().database
    try:
        assert Runs(database).latest(name)["state"] == "finished"
    finally:
        database.close()


def test_the_database_password_comes_from_a_secret_and_is_shown_nowhere(project: Project, solr, postgres_url: str) -> None:
    role, password = f"reader_{uuid.uuid4().hex[:8]}", "pw-Db7-" + uuid.uuid4().hex[:10]
    schema = f"{role}_data"  # its own schema, dropped after: the server also holds document tables
    admin = create_engine(postgres_url)
    with admin.begin() as connection:
        connection.execute(text(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'"))
        connection.execute(text(f"CREATE SCHEMA {schema}"))
        connection.execute(text(f"CREATE TABLE {schema}.notes (id integer primary key, title text, body text)"))
        connection.execute(text(f"INSERT INTO {schema}.notes VALUES (1, 'First note', 'harbour crane'), (2, 'Second', 'berth')"))
        connection.execute(text(f"GRANT USAGE ON SCHEMA {schema} TO {role}"))
        connection.execute(text(f"GRANT SELECT ON {schema}.notes TO {role}"))
    try:
        url = postgres_url.replace("searchcrawl@", f"{role}@")
        project.source(
            "notes",
            f'type = "database"\n[access]\npublic = true\n[database]\nurl = "{url}"\npassword_secret = "NOTES_DB_PASSWORD"\n'
            f'query = "SELECT id, title, body FROM {schema}.notes"\nkey = "id"\ntitle = "title"\ncontent = ["body"]\n',
        )
        result = project.scrapy("crawl", "notes", "-s", "LOG_LEVEL=DEBUG", NOTES_DB_PASSWORD=password)
        assert result.returncode == 0, result.stderr[-3000:]
        docs = solr_docs(solr, "notes")
        assert sorted(doc["title"] for doc in docs) == ["First note", "Second"]
        report = project.scrapy("report", "notes", "--json")
        for text_ in (result.stdout, result.stderr, report.stdout, str(docs)):
            assert password not in text_
    finally:
        with admin.begin() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
            connection.execute(text(f"DROP ROLE {role}"))
        admin.dispose()


def test_an_incremental_source_misses_no_change(project: Project, solr, tmp_path: Path) -> None:
    """A test crawl does not move ``since`` (it changed nothing); an edit that keeps the modified
    column's value is seen within the margin (the token holds a hash of the row)."""
    records = Records(f"sqlite:///{tmp_path / 'records.sqlite3'}", None, random.Random(9))
    name = "records-incremental"
    project.source(
        name,
        'type = "database"\n[access]\npublic = true\n[database]\n'
        f'url = "{records.url}"\nquery = "SELECT id, title, body, pages, updated FROM records"\n'
        'key = "id"\ntitle = "title"\ncontent = ["body"]\nmodified_column = "updated"\n',
    )
    assert project.scrapy("crawl", name).returncode == 0
    with records.engine.begin() as connection:
        connection.execute(
            update(records.table).where(records.table.c.id == 2).values(body="edited once", updated=records.tick())
        )
    assert project.scrapy("crawl", name, "-a", "test_mode=1").returncode == 0
    assert project.scrapy("crawl", name).returncode == 0
    assert indexed(solr, name)[2]["content"] == "edited once"
    with records.engine.begin() as connection:  # the same modified time: only the hash tells
        connection.execute(update(records.table).where(records.table.c.id == 2).values(body="edited twice"))
    assert project.scrapy("crawl", name).returncode == 0
    assert indexed(solr, name)[2]["content"] == "edited twice"


def test_rows_without_a_key_or_with_a_repeated_key_are_warned_of_and_counted_in_the_report(
    project: Project, solr, tmp_path: Path
) -> None:
    """Issue 53: rows a query returns that cannot be documents (a NULL key; a second row with a
    key, the same document) were passed over with a DEBUG line, or none. The crawl says so at
    WARNING, once, with the counts, and the run's report counts them as skipped."""
    engine = create_engine(f"sqlite:///{tmp_path / 'notes.sqlite3'}")
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE notes (id integer, title text, body text)"))
        connection.execute(
            text(
                "INSERT INTO notes VALUES (1, 'First', 'harbour crane'), (NULL, 'Keyless', 'no key'),"
                " (2, 'Second', 'berth'), (1, 'Again', 'the same key'), (NULL, 'Keyless too', 'none either')"
            )
        )
    engine.dispose()
    project.source(
        "keyed",
        f'type = "database"\n[access]\npublic = true\n[database]\nurl = "sqlite:///{tmp_path / "notes.sqlite3"}"\n'
        'query = "SELECT id, title, body FROM notes"\nkey = "id"\ntitle = "title"\ncontent = ["body"]\n',
    )
    result = project.scrapy("crawl", "keyed")
    assert result.returncode == 0, result.stderr[-3000:]
    # one row of key 1 is its document (the listing is sorted by key when keys repeat)
    assert sorted(doc["title"] for doc in solr_docs(solr, "keyed")) in (["First", "Second"], ["Again", "Second"])
    warnings = [line for line in result.stderr.splitlines() if "WARNING" in line and "skipped" in line]
    assert len(warnings) == 1 and "2 with a NULL key (column 'id'), 1 with a key an earlier row had" in warnings[0], warnings
    assert "skipped 3" in result.stderr  # the run's summary
    report = json.loads(project.scrapy("report", "keyed", "--json").stdout)
    assert report["skipped"] == 3 and report["counts"]["new"] == 2, report
    assert "skipped: 3" in project.scrapy("report", "keyed").stdout


def test_a_database_source_over_the_installations_own_tables_is_refused(offline_project: Project) -> None:
    """Issue 99 point 5: a source file written by hand over the document table's SQLite file
    published the searches' log (a searcher's query) as a public document. The crawl refuses it
    before anything runs, naming the place; the unit tests: tests/config/test_own_places.py."""
    project = offline_project
    project.data_dir.mkdir()
    table = project.table()  # the installation's database, made as a crawl makes it
    with table.database.engine.begin() as connection:
        row = {"id": "s1", "at": datetime.now(UTC), "query": "salary of bob", "normalized": "salary of bob"}
        connection.execute(insert(searches).values(**row, page=1, hits=0, took_ms=3, client="web"))
    name = "searches-log"
    project.source(
        name,
        'type = "database"\n[access]\npublic = true\n[database]\n'
        f'url = "sqlite:///{project.data_dir / "documents.sqlite3"}"\nquery = "SELECT id, query FROM searches"\n'
        'key = "id"\ncontent = ["query"]\n',
    )
    done = project.scrapy("crawl", name)
    assert done.returncode == 2, done.stderr[-3000:]  # a broken source: nothing crawled
    assert "broken source, nothing crawled" in done.stderr
    assert "key 'database.url': its SQLite file" in done.stderr and "is the document table's database" in done.stderr
    assert "salary of bob" not in done.stderr
    listed = project.scrapy("list")
    assert listed.returncode == 0 and name not in listed.stdout.split()
    try:
        assert Runs(table.database).latest(name) is None  # no run began
    finally:
        table.database.close()
