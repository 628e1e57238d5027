"""Issue 99 point 5: a database source over the installation's own document table
(``sqlite:///<data dir>/documents.sqlite3``) published a searcher's query log as a public document.
An agent source whose local paths or database point into the installation's own data is refused,
naming the place it touches (searchcrawl/config/own_places.py), by the spider loader and by the
agent spider when its run starts; everything in tmp_path, the settings and environment given."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.exceptions import CloseSpider
from scrapy.settings import Settings

from searchcrawl.config.own_places import (
    OwnPlace,
    OwnPlaces,
    check_own_places,
    database_refusal,
    own_places,
    path_refusal,
)
from searchcrawl.config.source import Source, SourceError, SourceFile, load_source
from searchcrawl.crawl.agent_spider import AgentSpider
from searchcrawl.crawl.spiderloader import SourceSpiderLoader
from searchcrawl.system import secrets
from tests.components import close_stores, source_crawler

DATABASE = 'type = "database"\n[access]\npublic = true\n[database]\nurl = "{url}"\nquery = "SELECT id, q FROM searches"\nkey = "id"\ncontent = ["q"]\n'
FILES = 'type = "files"\n[files]\nroots = ["{root}"]\n'
MAIL = 'type = "mail"\n[access]\npublic = true\n[mail]\npaths = ["{path}"]\n'
GIT = 'type = "git"\n[access]\npublic = true\n[git.repositories]\nhandbook = "{path}"\n'


@pytest.fixture
def installation(tmp_path: Path) -> Settings:
    """An installation's settings: its data folder and sources folder in tmp_path."""
    (tmp_path / "sources").mkdir()
    return Settings({"SEARCHCRAWL_DATA_DIR": str(tmp_path / "data"), "SEARCHCRAWL_SOURCES_DIR": str(tmp_path / "sources")})


def source(tmp_path: Path, text: str, name: str = "hand-written") -> Source:
    path = tmp_path / "sources" / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return load_source(SourceFile(name, str(path), path))


def refusal(tmp_path: Path, settings: Settings, text: str, environ: dict[str, str] | None = None) -> str | None:
    """The SourceError's message for a source file's text in this installation, or None."""
    try:
        check_own_places(source(tmp_path, text), own_places(settings, environ or {}))
    except SourceError as exc:
        return str(exc)
    return None


def test_a_database_source_over_the_document_table_is_refused(tmp_path: Path, installation: Settings) -> None:
    table = tmp_path / "data" / "documents.sqlite3"
    for url in (
        f"sqlite:///{table}",
        f"sqlite+pysqlite:///{tmp_path}/other/../data/documents.sqlite3",
        f"sqlite:///file:{table}?mode=ro&uri=true",  # SQLite's URI form
    ):
        refused = refusal(tmp_path, installation, DATABASE.format(url=url))
        assert refused is not None, url
        assert "key 'database.url': its SQLite file" in refused and "is the document table's database" in refused
        assert "a source never reads the installation's own data" in refused
    # another SQLite file in the data folder (a copy of it, the analytics of another day) too
    refused = refusal(tmp_path, installation, DATABASE.format(url=f"sqlite:///{tmp_path / 'data' / 'copy.sqlite3'}"))
    assert refused is not None and "is inside the data folder" in refused


def test_files_roots_at_the_installations_own_folders_are_refused(tmp_path: Path, installation: Settings) -> None:
    data = tmp_path / "data"
    solr_home = data / "solr" / "8983" / "home"
    solr_home.mkdir(parents=True)
    (tmp_path / "share").mkdir()
    (tmp_path / "share" / "link").symlink_to(data / "cache")
    (tmp_path / "into-data").symlink_to(data)
    cases = {
        str(data): "is the data folder",
        str(tmp_path / "sources"): "is the sources folder",
        str(tmp_path): "holds the document table's database",  # a parent of the data folder lists it
        "/": "holds the document table's database",
        str(tmp_path / "into-data"): f"(really {data}) is the data folder",  # a link to it
        str(tmp_path / "share" / "link"): f"(really {data / 'cache'}) is inside the data folder",
        str(solr_home): "is inside the data folder (the document table, caches, the dev Solr's home)",
        str(data / "judged"): "is the judged query sets' folder",
    }
    for root, why in cases.items():
        refused = refusal(tmp_path, installation, FILES.format(root=root))
        assert refused is not None and f"key 'files.roots': {root}" in refused and why in refused, (root, refused)


def test_mailboxes_and_repositories_in_the_data_folder_are_refused(tmp_path: Path, installation: Settings) -> None:
    maildir = tmp_path / "data" / "Maildir"
    refused = refusal(tmp_path, installation, MAIL.format(path=maildir))
    assert refused is not None and f"key 'mail.paths': {maildir} is inside the data folder" in refused
    refused = refusal(tmp_path, installation, GIT.format(path=tmp_path / "sources" / "handbook.git"))
    assert refused is not None and "key 'git.repositories.handbook':" in refused and "inside the sources folder" in refused


def test_the_secrets_files_are_the_installations_own(tmp_path: Path, installation: Settings) -> None:
    (tmp_path / "secrets").mkdir()
    environ = {"SEARCHCRAWL_DB_PASSWORD_FILE": str(tmp_path / "secrets" / "db"), "PATH": "/usr/bin"}
    refused = refusal(tmp_path, installation, FILES.format(root=tmp_path / "secrets"), environ)
    assert refused is not None and "holds the secret file of SEARCHCRAWL_DB_PASSWORD_FILE" in refused
    # a setting of a secret-ish name that names a file, and a source's own secret named as one
    settings = Settings({**installation.copy_to_dict(), "SEARCHCRAWL_METRICS_KEYFILE": str(tmp_path / "secrets" / "key.pem")})
    found = secrets.secret_files({"HR_DB_PASSWORD_FILE": "/run/hr", "SEARCHCRAWL_LDAP_CA_FILE": "/etc/ca.pem"}, settings)
    assert found == {"HR_DB_PASSWORD_FILE": "/run/hr", "SEARCHCRAWL_METRICS_KEYFILE": str(tmp_path / "secrets" / "key.pem")}


def test_the_installations_own_postgresql_database_is_refused(tmp_path: Path, installation: Settings) -> None:
    """Its server (a name of this machine as any other) and database, whatever the user or driver;
    the password of SEARCHCRAWL_DB_URL is not read (an unreadable secret file is no error here)."""
    own = Settings({**installation.copy_to_dict(), "SEARCHCRAWL_DB_URL": "postgresql+psycopg://crawler@localhost/searchcrawl"})
    environ = {"SEARCHCRAWL_DB_PASSWORD_FILE": str(tmp_path / "missing")}
    places = own_places(own, environ)
    for url in (
        "postgresql://reader@127.0.0.1:5432/searchcrawl",
        "postgresql+psycopg2://reader@LOCALHOST/searchcrawl",
        "postgresql:///searchcrawl?host=/var/run/postgresql",
        "postgresql://searchcrawl@[::1]",  # libpq's database: the user's name
        "postgresql://reader@/searchcrawl?host=db.internal&host=localhost",  # libpq's hosts, tried in turn
    ):
        assert database_refusal(url, places) == (
            "it is the installation's own database (SEARCHCRAWL_DB_URL: the document table, the searches' log, API tokens)"
        ), url
    for url in (
        "postgresql://reader@localhost/hr",
        "postgresql://reader@db.internal/searchcrawl",
        "postgresql://r@localhost:5433/searchcrawl",
    ):
        assert database_refusal(url, places) is None, url
    # its data folder stays its own all the same
    assert database_refusal(f"sqlite:///{tmp_path / 'data' / 'x.sqlite3'}", places) is not None


def test_the_sources_of_other_places_are_accepted(tmp_path: Path, installation: Settings) -> None:
    (tmp_path / "share").mkdir()
    (tmp_path / "mail").mkdir()
    assert refusal(tmp_path, installation, FILES.format(root=tmp_path / "share")) is None
    assert refusal(tmp_path, installation, MAIL.format(path=tmp_path / "mail" / "dev.mbox")) is None
    assert refusal(tmp_path, installation, DATABASE.format(url=f"sqlite:///{tmp_path / 'records.sqlite3'}")) is None
    assert refusal(tmp_path, installation, DATABASE.format(url="sqlite://")) is None  # in memory
    assert refusal(tmp_path, installation, 'seeds = ["https://intranet.example/"]\n') is None
    # a name that only begins like the data folder's is another folder
    (tmp_path / "data-archive").mkdir()
    assert refusal(tmp_path, installation, FILES.format(root=tmp_path / "data-archive")) is None


def test_a_path_is_compared_with_each_place_both_ways() -> None:
    places = OwnPlaces((OwnPlace("the secret", "/run/secrets/db"), OwnPlace("the data folder", "/var/lib/searchcrawl")))
    assert (
        path_refusal("/var/lib/searchcrawl/cache", places)
        == "/var/lib/searchcrawl/cache is inside the data folder, /var/lib/searchcrawl"
    )
    assert path_refusal("/run", places) == "/run holds the secret, /run/secrets/db"
    assert path_refusal("/run/secrets/db", places) == "/run/secrets/db is the secret"
    assert path_refusal("/var/lib/searchcrawl2", places) is None
    assert path_refusal("/srv/\x00", places) == "'/srv/\\x00' cannot be resolved to a real path"
    assert database_refusal("not a url", places) == "it cannot be read as a database URL"


def test_the_spider_loader_refuses_a_hand_written_source(tmp_path: Path, installation: Settings) -> None:
    (tmp_path / "sources" / "searches.toml").write_text(
        DATABASE.format(url=f"sqlite:///{tmp_path / 'data' / 'documents.sqlite3'}"), encoding="utf-8"
    )
    (tmp_path / "share").mkdir()
    (tmp_path / "sources" / "share.toml").write_text(FILES.format(root=tmp_path / "share"), encoding="utf-8")
    loader = SourceSpiderLoader(installation)
    with pytest.raises(
        SourceError, match="searches.toml: key 'database.url': its SQLite file .* is the document table's database"
    ):
        loader.load("searches")
    assert "searches" not in loader.list() and "share" in loader.list()


def test_the_agent_spider_refuses_to_list_the_installations_own_data(tmp_path: Path) -> None:
    """A spider made without the loader (its class from spider_class_for): its run fails before
    anything is listed."""
    (tmp_path / "share").mkdir()  # inside the crawler's data folder, tmp_path
    crawler = source_crawler(tmp_path, FILES.format(root=tmp_path / "share"), name="inside", SEARCHCRAWL_SOURCES_DIR="")
    try:
        spider = crawler.spidercls.from_crawler(crawler)
        assert isinstance(spider, AgentSpider)
        with pytest.raises(CloseSpider):
            spider.refuse_own_places()
    finally:
        close_stores(crawler)
    elsewhere = tmp_path / "data"  # another data folder: the share is not in it
    elsewhere.mkdir()
    crawler = source_crawler(elsewhere, FILES.format(root=tmp_path / "share"), name="outside", SEARCHCRAWL_SOURCES_DIR="")
    try:
        spider = crawler.spidercls.from_crawler(crawler)
        assert isinstance(spider, AgentSpider)
        spider.refuse_own_places()  # no error: the share is not the installation's
    finally:
        close_stores(crawler)
