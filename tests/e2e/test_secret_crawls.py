"""End-to-end crawls for: Secrets: Solr basic auth and the database password come from the environment or files, work (the components alone: tests.system.test_secrets)."""

from __future__ import annotations

from pathlib import Path

import pysolr

from searchcrawl.dev.solr_runner import DevSolr
from tests.conftest import Project
from tests.sites import build_intranet
from tests.system.test_secrets import DB_PASSWORD, SOLR_PASSWORD, SOLR_USER, auth_solr  # noqa: F401 - helpers and fixtures


def test_crawl_with_solr_basic_auth_logs_no_secret(tmp_path: Path, serve, auth_solr: DevSolr, postgres_url: str) -> None:
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
    # and says so in its exit code (4: crawled, not all indexed; see commands/crawl.py)
    refused = project.scrapy("crawl", "secured", "-s", "SEARCHCRAWL_SOLR_RETRY_TIMES=1")
    assert refused.returncode == 4, refused.stderr[-3000:]
    assert "401" in refused.stderr and "stay cached and pending" in refused.stderr

    # with them (user from the environment, password from a file), at DEBUG, on PostgreSQL
    # with the database password from the environment
    crawl = project.scrapy(
        "crawl",
        "secured",
        "-s",
        "LOG_LEVEL=DEBUG",
        "-s",
        f"LOG_FILE={log_file}",
        SEARCHCRAWL_SOLR_USERNAME=SOLR_USER,
        SEARCHCRAWL_SOLR_PASSWORD_FILE=str(password_file),
        SEARCHCRAWL_DB_PASSWORD=DB_PASSWORD,
    )
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    client = pysolr.Solr(auth_solr.url, auth=(SOLR_USER, SOLR_PASSWORD), always_commit=True)
    client.commit(softCommit=True)
    assert client.search('source:"secured"', rows=0).hits == len(pages)

    # a password written into SOLR_URL works too, and is masked like the others
    url_crawl = project.scrapy(
        "crawl",
        "secured",
        "-a",
        "recrawl=force",
        "-s",
        "LOG_LEVEL=DEBUG",
        SOLR_URL=auth_solr.url.replace("http://", f"http://{SOLR_USER}:{SOLR_PASSWORD}@"),
    )
    assert url_crawl.returncode == 0, url_crawl.stderr[-3000:]

    logs = log_file.read_text() + crawl.stdout + crawl.stderr + url_crawl.stdout + url_crawl.stderr
    assert "DEBUG" in logs and len(logs) > 5000  # a real, verbose log was scanned
    for value in (SOLR_PASSWORD, DB_PASSWORD):
        assert value not in logs
