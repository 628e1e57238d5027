"""The suite never uses the project's variables of the shell that runs it (SEARCHCRAWL_DB_URL,
SOLR_URL, ...): an operator exports them, as the README says, on the server that also runs
`bash deploy/test.sh`, and the tests' crawlers wrote into that server's document table."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.components import close_stores, source_crawler, stores_of
from tests.conftest import OUTER_VARIABLES, ROOT, SUITE_SETTINGS, kept_bytecode, scrub_environment


def test_scrub_removes_the_project_variables_and_keeps_the_suites_own() -> None:
    environ = {
        "SEARCHCRAWL_DB_URL": "postgresql://prod",
        "SEARCHCRAWL_SOLR_PASSWORD": "secret",
        "SOLR_URL": "http://solr:8983/solr/prod",
        "SCRAPY_SETTINGS_MODULE": "elsewhere.settings",
        "SEARCHCRAWL_TEST_SERVERS_DIR": "/tmp/x",
        "SEARCHCRAWL_TEST_FORKSERVER": "0",
        "SEARCHCRAWL_EMBEDDINGS": "wordllama",  # the shell's: the suite's own replaces it
        "PATH": "/usr/bin",
    }
    removed = scrub_environment(environ)
    assert removed == [
        "SCRAPY_SETTINGS_MODULE",
        "SEARCHCRAWL_DB_URL",
        "SEARCHCRAWL_EMBEDDINGS",
        "SEARCHCRAWL_SOLR_PASSWORD",
        "SOLR_URL",
    ]
    assert environ == {
        "SEARCHCRAWL_TEST_SERVERS_DIR": "/tmp/x",
        "SEARCHCRAWL_TEST_FORKSERVER": "0",
        "PATH": "/usr/bin",
        **SUITE_SETTINGS,
    }
    assert scrub_environment(environ) == []  # the suite's own, as it sets them, are no outer variable


def test_a_shell_that_forbids_bytecode_has_it_kept_outside_the_sources() -> None:
    environ = {"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin"}
    assert kept_bytecode(environ, True, "/srv/venv") == "/srv/venv/pycache"
    assert environ == {"PYTHONPYCACHEPREFIX": "/srv/venv/pycache", "PATH": "/usr/bin"}
    given = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/tmp/kept"}
    assert kept_bytecode(given, True, "/srv/venv") == "/tmp/kept" and given == {"PYTHONPYCACHEPREFIX": "/tmp/kept"}
    allowed = {"PATH": "/usr/bin"}  # Python's default, beside the sources: left alone
    assert kept_bytecode(allowed, False, "/srv/venv") is None and allowed == {"PATH": "/usr/bin"}


def test_this_run_keeps_bytecode_and_so_do_the_processes_it_starts() -> None:
    assert not sys.dont_write_bytecode and "PYTHONDONTWRITEBYTECODE" not in os.environ
    assert sys.pycache_prefix is None or os.environ["PYTHONPYCACHEPREFIX"] == sys.pycache_prefix


def test_no_project_variable_of_the_outer_shell_is_left() -> None:
    assert {name: os.environ[name] for name in os.environ if OUTER_VARIABLES.fullmatch(name)} == SUITE_SETTINGS


def test_the_suites_crawls_embed_nothing_unless_a_test_says() -> None:
    """Issue 100: semantic search is on by default (bge-small); the suite's crawlers and commands
    have it off, so that no test loads a model or embeds a site unless it is about that."""
    import searchcrawl.settings as project_settings

    assert SUITE_SETTINGS == {"SEARCHCRAWL_EMBEDDINGS": ""} and project_settings.SEARCHCRAWL_EMBEDDINGS == ""


def test_a_crawler_keeps_to_its_own_data_dir(tmp_path: Path) -> None:
    """Run alone by the test below, in a pytest whose shell exports the project's variables."""
    crawler = source_crawler(tmp_path)
    try:
        assert stores_of(crawler).database.url == f"sqlite:///{tmp_path / 'documents.sqlite3'}"
    finally:
        close_stores(crawler)


def test_a_database_exported_in_the_shell_is_never_used(tmp_path: Path) -> None:
    """pytest run as an operator's shell runs it, SEARCHCRAWL_DB_URL, SEARCHCRAWL_DATA_DIR and
    SOLR_URL exported: the crawler of the test above uses its own database, and the exported
    database and data dir are never created."""
    outer = tmp_path / "production"
    outer.mkdir()
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    env.update(
        SEARCHCRAWL_DB_URL=f"sqlite:///{outer / 'documents.sqlite3'}",
        SEARCHCRAWL_DATA_DIR=str(outer / "data"),
        SOLR_URL="http://127.0.0.1:9/solr/production",
        PYTHONPATH=str(ROOT),
    )
    test = f"{Path(__file__).relative_to(ROOT)}::test_a_crawler_keeps_to_its_own_data_dir"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q", test]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout
    assert list(outer.iterdir()) == []


def test_importing_the_conftest_as_a_module_keeps_the_environment(tmp_path) -> None:
    """A crawl that loads a test's own spider imports tests/conftest.py as a plain module: its
    environment stays as its test gave it (scrubbed at the conftest's import, a crawl of
    tests/e2e/test_notifications.py lost its SMTP password's file and mailed nothing)."""
    code = "import os, tests.conftest; print(os.environ.get('SEARCHCRAWL_SMTP_PASSWORD_FILE'))"
    env = dict(os.environ, SEARCHCRAWL_SMTP_PASSWORD_FILE=str(tmp_path / "password"), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == str(tmp_path / "password")
