"""Secrets: Solr basic auth and the database password come from the environment or files, work
against a real Solr that requires them, and never appear in a log line."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pysolr
import pytest
from scrapy.settings import Settings

from searchcrawl import paths, secrets
from searchcrawl.devsolr import DevSolr
from searchcrawl.source import SourceError, SourceFile, load_source

from .conftest import Project, free_port
from .sites import build_intranet

SOLR_USER, SOLR_PASSWORD = "crawler", "Solr-pw-7f3a9c"
DB_PASSWORD = "Db-pw-51e0b2"


@pytest.fixture(scope="module")
def auth_solr(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevSolr]:
    solr = DevSolr(tmp_path_factory.mktemp("auth-solr"), free_port(), auth=(SOLR_USER, SOLR_PASSWORD))
    solr.start(timeout=600)
    yield solr
    solr.stop()


def test_secret_from_environment_or_file(tmp_path: Path) -> None:
    password_file = tmp_path / "password"
    password_file.write_text("from-a-file\n")
    assert secrets.secret("X_PASSWORD", {"X_PASSWORD": "direct"}) == "direct"
    assert secrets.secret("X_PASSWORD", {"X_PASSWORD_FILE": str(password_file)}) == "from-a-file"
    assert secrets.secret("X_PASSWORD", {}) is None
    with pytest.raises(secrets.SecretError, match="X_PASSWORD_FILE: cannot read") as error:
        secrets.secret("X_PASSWORD", {"X_PASSWORD_FILE": str(tmp_path / "missing")})
    assert "from-a-file" not in str(error.value)


def test_credentials_leave_urls_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    url, auth = secrets.split_credentials("http://solr:Url-pw-93@127.0.0.1:8983/solr/core")
    assert (url, auth) == ("http://127.0.0.1:8983/solr/core", ("solr", "Url-pw-93"))
    secrets.install_log_redaction()
    with caplog.at_level(logging.INFO):
        logging.getLogger("test").info("pushing to %s with %s", "https://u:other-pw@host/x", "Url-pw-93")
        try:
            raise RuntimeError("failed with Url-pw-93")
        except RuntimeError:
            logging.getLogger("test").exception("boom")
    text = caplog.text
    assert "Url-pw-93" not in text and "other-pw" not in text
    assert "https://u:***@host/x" in text


def test_db_password_joins_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCHCRAWL_DB_PASSWORD", DB_PASSWORD)
    settings = Settings({"SEARCHCRAWL_DB_URL": "postgresql+psycopg://crawler@db.internal/search"})
    assert paths.db_url(settings) == f"postgresql+psycopg://crawler:{DB_PASSWORD}@db.internal/search"


def test_source_file_refuses_credentials(tmp_path: Path) -> None:
    path = tmp_path / "intranet.toml"
    path.write_text('seeds = ["http://admin:Seed-pw-1@intranet.example/"]\n')
    with pytest.raises(SourceError) as error:
        load_source(SourceFile("intranet", str(path), path))
    assert "credentials do not belong in a source file" in str(error.value)
    assert "Seed-pw-1" not in str(error.value)


def test_crawl_with_solr_basic_auth_logs_no_secret(
    tmp_path: Path, serve, auth_solr: DevSolr, postgres_url: str
) -> None:
    (tmp_path / "site").mkdir()
    pages = build_intranet(tmp_path / "site", sections=2, per_section=3)
    site = serve(tmp_path / "site")
    (tmp_path / "sources").mkdir()
    project = Project(tmp_path / "data", tmp_path / "sources", auth_solr.url, db_url=postgres_url)
    project.source("secured", f'seeds = ["{site.url}index.html"]\n')
    password_file = tmp_path / "solr-password"
    password_file.write_text(SOLR_PASSWORD + "\n")
    log_file = tmp_path / "crawl.log"

    # without credentials: Solr says 401, the documents wait in the cache, the crawl ends cleanly
    refused = project.scrapy("crawl", "secured", "-s", "SEARCHCRAWL_SOLR_RETRY_TIMES=1")
    assert refused.returncode == 0, refused.stderr[-3000:]
    assert "401" in refused.stderr and "stay cached and pending" in refused.stderr

    # with them (user from the environment, password from a file), at DEBUG, on PostgreSQL
    # with the database password from the environment
    crawl = project.scrapy(
        "crawl", "secured", "-s", "LOG_LEVEL=DEBUG", "-s", f"LOG_FILE={log_file}",
        SEARCHCRAWL_SOLR_USERNAME=SOLR_USER, SEARCHCRAWL_SOLR_PASSWORD_FILE=str(password_file),
        SEARCHCRAWL_DB_PASSWORD=DB_PASSWORD,
    )
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    client = pysolr.Solr(auth_solr.url, auth=(SOLR_USER, SOLR_PASSWORD), always_commit=True)
    client.commit(softCommit=True)
    assert client.search('source:"secured"', rows=0).hits == len(pages)

    # a password written into SOLR_URL works too, and is masked like the others
    url_crawl = project.scrapy(
        "crawl", "secured", "-a", "recrawl=force", "-s", "LOG_LEVEL=DEBUG",
        SOLR_URL=auth_solr.url.replace("http://", f"http://{SOLR_USER}:{SOLR_PASSWORD}@"),
    )
    assert url_crawl.returncode == 0, url_crawl.stderr[-3000:]

    logs = log_file.read_text() + crawl.stdout + crawl.stderr + url_crawl.stdout + url_crawl.stderr
    assert "DEBUG" in logs and len(logs) > 5000  # a real, verbose log was scanned
    for value in (SOLR_PASSWORD, DB_PASSWORD):
        assert value not in logs
