"""Backup and restore as an administrator runs them (issue 79 point 4): `scrapy backup export` and
`scrapy backup import` between installations on SQLite and on a real PostgreSQL, both ways (a
dry run first, which writes nothing); and the administration's backup page: download, upload, the
plan, the restore, a forged or oversized upload refused. The logic's cases: tests/ops/test_configuration_backup.py."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from searchcrawl.rules import ranking_rules
from searchcrawl.store import Database
from searchcrawl.store.api_tokens import ApiTokens
from searchcrawl.store.relevance_rules import RelevanceStore
from searchcrawl.web.app import create_app
from tests.conftest import Project, run_scrapy
from tests.e2e.test_hostile_urls import fresh_database
from tests.e2e.test_web import login, web_config

SOURCE = """# nightly, with its seeds beside it
seeds = ["https://intranet.example/"]
seed_files = ["seeds/more.txt"]
schedule = "30 1 * * *"
"""
# what the source editor takes in a new source: a restore from the pages takes it too (issue 91)
PLAIN = SOURCE.replace('seed_files = ["seeds/more.txt"]\n', "")


def installation(root: Path, db_url: str, solr_url: str) -> Project:
    (root / "sources").mkdir(parents=True)
    (root / "data").mkdir()
    return Project(root / "data", root / "sources", solr_url, db_url)


def fill(project: Project, text: str = SOURCE) -> str:
    """A source (with a seed file), a rule of each kind, a token; the token."""
    project.source("intranet", text)
    (project.sources_dir / "seeds").mkdir()
    (project.sources_dir / "seeds" / "more.txt").write_text("https://intranet.example/hr/\n")
    database = Database(project.db_url)
    try:
        store = RelevanceStore(database)
        store.add_bet(ranking_rules.parse_bet("leave", "https://intranet.example/hr/leave"))
        store.add_boost(ranking_rules.parse_boost("source", "intranet", "2"))
        store.add_synonyms(ranking_rules.parse_synonyms("leave, holiday"))
        store.add_stopword(ranking_rules.parse_stopword("intranet"))
        return ApiTokens(database).create("portal", on_behalf=True)[1]
    finally:
        database.close()


@pytest.mark.parametrize(("origin", "target"), [("sqlite", "postgresql"), ("postgresql", "sqlite")])
def test_the_command_exports_and_restores_between_sqlite_and_postgresql(
    origin: str, target: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    solr = "http://127.0.0.1:9/solr/none"  # no Solr is asked
    first = installation(tmp_path / "a", fresh_database(origin, request, tmp_path / "a"), solr)
    token = fill(first)
    exported = run_scrapy(["backup", "export", str(tmp_path / "backup.json")], first.env())
    assert exported.returncode == 0, exported.stderr[-2000:]
    assert (tmp_path / "backup.json").stat().st_mode & 0o777 == 0o600
    assert token not in (tmp_path / "backup.json").read_text()
    second = installation(tmp_path / "b", fresh_database(target, request, tmp_path / "b"), solr)
    # seed_files: the source editor refuses it in a new source, and so does a restore (issue 91)
    refused = run_scrapy(["backup", "import", str(tmp_path / "backup.json"), "--apply"], second.env())
    assert refused.returncode == 1 and "problem: source intranet: refused, as the source editor refuses it: seed_files" in (
        refused.stdout
    )
    assert refused.stdout.rstrip().endswith("import with --trust-sources.") and not any(second.sources_dir.iterdir())
    # the server's administrator's restore
    dry = run_scrapy(["backup", "import", str(tmp_path / "backup.json"), "--trust-sources"], second.env())
    assert dry.returncode == 0, dry.stdout + dry.stderr[-2000:]
    assert dry.stdout.startswith("Dry run") and "source intranet (web; 30 1 * * *)" in dry.stdout
    assert "file intranet/seeds/more.txt" in dry.stdout
    assert "restored though the source editor refuses it: intranet: seed_files" in dry.stdout
    assert not any(second.sources_dir.iterdir())
    applied = run_scrapy(["backup", "import", str(tmp_path / "backup.json"), "--apply", "--trust-sources"], second.env())
    assert applied.returncode == 0 and applied.stdout.startswith("Restored:"), applied.stdout + applied.stderr[-2000:]
    assert (second.sources_dir / "intranet.toml").read_text() == SOURCE
    assert (second.sources_dir / "seeds" / "more.txt").read_text() == "https://intranet.example/hr/\n"
    listed = run_scrapy(["list"], second.env())
    assert "intranet" in listed.stdout.split()
    database = Database(second.db_url)
    try:
        assert ApiTokens(database).check(token).valid
        store = RelevanceStore(database)
        assert [bet.urls for bet in store.bets()] == [("https://intranet.example/hr/leave",)]
        assert store.stopwords() == ["intranet"] and [terms for _id, terms in store.synonyms()] == [("leave", "holiday")]
    finally:
        database.close()
    again = run_scrapy(["backup", "import", str(tmp_path / "backup.json"), "--apply", "--trust-sources"], second.env())
    assert again.returncode == 1 and "the installation is not empty" in again.stdout


def test_the_backup_page_downloads_checks_and_restores(project: Project, tmp_path: Path) -> None:
    origin = installation(tmp_path / "a", f"sqlite:///{tmp_path / 'a.sqlite3'}", project.solr_url)
    token = fill(origin, PLAIN)
    source = TestClient(
        create_app(web_config(origin, db_url=origin.db_url, sources_dir=origin.sources_dir)), base_url="http://127.0.0.1"
    )
    login(source)
    assert 'href="/admin/backup"' in source.get("/admin").text
    downloaded = source.get("/admin/backup/export")
    assert downloaded.status_code == 200 and "attachment" in downloaded.headers["content-disposition"]
    data = downloaded.content
    assert json.loads(data)["sources"]["intranet"]["intranet.toml"] == PLAIN and token.encode() not in data

    empty = installation(tmp_path / "b", f"sqlite:///{tmp_path / 'b.sqlite3'}", project.solr_url)
    web = TestClient(
        create_app(web_config(empty, db_url=empty.db_url, sources_dir=empty.sources_dir)), base_url="http://127.0.0.1"
    )
    csrf = login(web)
    files = {"backup": ("backup.json", data, "application/json")}
    forged = web.post("/admin/backup/import", data={"csrf": "forged"}, files=files)
    assert forged.status_code == 403 and not any(empty.sources_dir.iterdir())
    unknown = web.post("/admin/backup/restore", data={"csrf": csrf}, follow_redirects=False)
    assert unknown.status_code == 400 and "No backup is waiting" in unknown.text
    checked = web.post("/admin/backup/import", data={"csrf": csrf}, files=files)
    assert checked.status_code == 200 and "This would be restored" in checked.text
    assert "source intranet (web; 30 1 * * *)" in checked.text and not any(empty.sources_dir.iterdir())
    restored = web.post("/admin/backup/restore", data={"csrf": csrf}, follow_redirects=False)
    assert restored.status_code == 303
    assert "Backup restored: 1 source." in web.get("/admin/backup").text
    assert (empty.sources_dir / "intranet.toml").read_text() == PLAIN
    database = Database(empty.db_url)
    try:
        assert ApiTokens(database).check(token).valid
    finally:
        database.close()
    # the restored installation is not empty: the same backup is refused, each problem named
    refused = web.post("/admin/backup/import", data={"csrf": csrf}, files=files)
    assert refused.status_code == 400 and "It cannot be restored here" in refused.text
    assert re.search(r"<li>the installation is not empty: it has API tokens</li>", refused.text)
    # a hostile file is shown as text, never markup; a file that is not a backup is one line
    hostile = json.loads(data)
    hostile["sources"] = {"x": {"x.toml": "seeds = [\n", "../<script>alert(1)</script>": "a"}}
    shown = web.post(
        "/admin/backup/import",
        data={"csrf": csrf},
        files={"backup": ("b.json", json.dumps(hostile).encode(), "application/json")},
    )
    assert "<script>alert" not in shown.text and "&lt;script&gt;" in shown.text, shown.text[shown.text.find("<main>") :]
    # what the source editor refuses, the page refuses, each source named (issue 91)
    hostile["sources"] = {
        "ssh": {"ssh.toml": 'type = "files"\n[files]\nroots = ["/etc/ssh"]\n'},
        "local": {"local.toml": 'seeds = ["file:///etc/"]\n'},
        "intranet": {"intranet.toml": SOURCE, "seeds/more.txt": "https://intranet.example/hr/\n"},
        # a harmless source carrying a disabled one nothing checked, for the editor's Enable (issue 91 review)
        "planted": {
            "planted.toml": 'seeds = ["https://planted.example/"]\n',
            "evil.toml.disabled": 'type="files"\n[files]\nroots=["/etc/ssh"]\n[access]\npublic=true\n',
        },
    }
    fresh = installation(tmp_path / "c", f"sqlite:///{tmp_path / 'c.sqlite3'}", project.solr_url)
    other = TestClient(
        create_app(web_config(fresh, db_url=fresh.db_url, sources_dir=fresh.sources_dir)), base_url="http://127.0.0.1"
    )
    other_csrf = login(other)
    guarded = other.post(
        "/admin/backup/import",
        data={"csrf": other_csrf},
        files={"backup": ("b.json", json.dumps(hostile).encode(), "application/json")},
    )
    refusals = re.findall(
        r"<li>source (\w+): refused, as the source editor refuses it: ([^<]*)</li>", html.unescape(guarded.text)
    )
    assert guarded.status_code == 400 and [name for name, _why in refusals] == ["intranet", "local", "ssh"], guarded.text[-3000:]
    assert (
        refusals[0][1].startswith("seed_files") and "file:///etc/" in refusals[1][1] and refusals[2][1].startswith("type, files")
    )
    assert "<li>source planted: evil.toml.disabled would be a source file of its own</li>" in guarded.text
    assert not any(fresh.sources_dir.iterdir())
    junk = web.post("/admin/backup/import", data={"csrf": csrf}, files={"backup": ("b.json", b"not json", "text/plain")})
    assert junk.status_code == 400 and "not a searchcrawl backup: not JSON" in junk.text
    large = web.post(
        "/admin/backup/import", data={"csrf": csrf}, files={"backup": ("b.json", b" " * (17 * 1024 * 1024), "application/json")}
    )
    assert large.status_code == 413
