"""Nothing leaks: secret settings, the user info of crawled links and the contents of a file given
as a seed file stay out of logs, the document table, the index and error messages; what hostile
sites write reaches the terminal escaped. End to end: real crawls of servers on 127.0.0.1."""

from __future__ import annotations

import uuid
from pathlib import Path

import sqlalchemy

from searchcrawl.ops.terminal import printable
from tests.conftest import Project, solr_docs

RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e")
HOSTILE_TITLE = "Hostile \x1b]0;pwned\x07\x1b[2J report \x9b31m \u202egnp.exe"


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def table_text(project: Project) -> str:
    """Every row of every table of the project's database, as text."""
    table = project.table()
    try:
        metadata = sqlalchemy.MetaData()
        metadata.reflect(table.engine)
        with table.engine.connect() as connection:
            return "\n".join(repr(row) for name in metadata.tables for row in connection.execute(metadata.tables[name].select()))
    finally:
        table.database.close()


def test_printable_escapes_control_and_bidi_characters() -> None:
    assert printable(HOSTILE_TITLE) == "Hostile \\x1b]0;pwned\\x07\\x1b[2J report \\x9b31m \\u202egnp.exe"
    assert printable("a\tb\nc\rd\x08\x7f\x00 \u2066x\u2069") == "a\\tb\\nc\\rd\\x08\\x7f\\x00 \\u2066x\\u2069"
    assert printable("Grüße, 日本語, عربي — fine") == "Grüße, 日本語, عربي — fine"


def test_secret_settings_never_reach_the_log(project: Project, serve, tmp_path: Path) -> None:
    password, token = "Pass-canary-9d1e", "Token-canary-47c2"
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text(
        f"<html><head><title>Index</title></head><body><p>The token {token} in a page.</p><a href='a.html?ref={token}'>a</a>"
        "</body></html>"
    )
    (tmp_path / "site" / "a.html").write_text("<html><head><title>A</title></head><body>a page</body></html>")
    site = serve(tmp_path / "site")
    name = unique("settings")
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 1\n')

    crawl = project.scrapy(
        "crawl",
        name,
        "-s",
        "LOG_LEVEL=DEBUG",
        "-s",
        f"HTTPAUTH_PASS={password}",
        "-s",
        "HTTPAUTH_USER=crawler-user",
        "-s",
        "HTTPAUTH_DOMAIN=127.0.0.1",
        "-s",
        f"SOME_API_TOKEN={token}",
    )
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    logs = crawl.stdout + crawl.stderr
    assert "DEBUG" in logs and "Overridden settings" in logs and "/a.html" in logs
    assert "'HTTPAUTH_PASS': ***" in logs and "'HTTPAUTH_USER': 'crawler-user'" in logs
    # Scrapy's item lines name a document, never print its text (LOG_FORMATTER); a URL that holds
    # the secret is masked in every line that names it (the requests, the item lines)
    assert f"<CrawledDocument {name} {site.url}index.html>" in logs and "The token" not in logs
    assert "/a.html?ref=***" in logs
    for line in logs.splitlines():
        assert password not in line and token not in line, line


def test_user_info_of_links_is_dropped(project: Project, serve, tmp_path: Path, solr) -> None:
    canary = "Userinfo-canary-5b0f"
    (tmp_path / "site").mkdir()
    site = serve(tmp_path / "site")
    (tmp_path / "site" / "index.html").write_text(
        "<html><head><title>Index</title></head><body>"
        f"<a href='http://intruder:{canary}@127.0.0.1:{site.port}/x.html'>the x page</a></body></html>"
    )
    (tmp_path / "site" / "x.html").write_text(
        "<html><head><title>X</title></head><body>Exactly what the x page says.</body></html>"
    )
    name = unique("userinfo")
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 1\n')

    crawl = project.scrapy("crawl", name, "-s", "LOG_LEVEL=DEBUG")
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    assert "/x.html" in site.paths()
    logs = crawl.stdout + crawl.stderr
    assert f"{site.url}x.html" in logs
    for line in logs.splitlines():
        assert canary not in line and "intruder" not in line, line

    table = project.table()
    try:
        row = table.get(name, f"{site.url}x.html")
    finally:
        table.database.close()
    assert row is not None and row["status"] == 200
    rows = table_text(project)
    assert f"{site.url}x.html" in rows
    assert canary not in rows and "intruder" not in rows
    for path in project.data_dir.rglob("*"):  # the database file, the document cache
        if path.is_file():
            assert canary.encode() not in path.read_bytes(), path

    docs = solr_docs(solr, name)
    assert sorted(doc["url"] for doc in docs) == [f"{site.url}index.html", f"{site.url}x.html"]
    assert canary not in repr(docs) and "intruder" not in repr(docs)


def test_seed_file_contents_stay_out_of_the_error(offline_project: Project, tmp_path: Path) -> None:
    canary = "Shadow-canary-0e7a"
    shadow = tmp_path / "shadow"
    shadow.write_text(f"root:$6${canary}$x:19000:0:99999:7:::\nhttp://127.0.0.1:9/\n")
    name = unique("shadow")
    path = offline_project.source(name, f'seed_files = ["{shadow}"]\n')
    crawl = offline_project.scrapy("crawl", name)
    assert crawl.returncode == 2
    assert f"searchcrawl: broken source, nothing crawled: {path}: key 'seed_files': {shadow}, line 1: " in crawl.stderr
    assert canary not in crawl.stdout + crawl.stderr
    assert "Traceback" not in crawl.stderr


def test_seed_with_an_invalid_port_is_a_source_error(offline_project: Project) -> None:
    name = unique("port")
    offline_project.source(name, 'seeds = ["http://127.0.0.1:99999/"]\n')
    crawl = offline_project.scrapy("crawl", name)
    assert crawl.returncode == 2
    assert "key 'seeds': expected a port from 1 to 65535, got 'http://127.0.0.1:99999/'" in crawl.stderr
    assert "Traceback" not in crawl.stderr


def test_hostile_text_reaches_the_terminal_escaped(project: Project, serve, tmp_path: Path) -> None:
    root = tmp_path / "site"
    (root / "private").mkdir(parents=True)
    (root / "hostile.html").write_bytes(
        f"<html><head><meta charset='utf-8'><title>{HOSTILE_TITLE}</title></head>"
        "<body><p>Quarterly axolotl husbandry report.</p><a href='private/p.html'>p</a></body></html>".encode()
    )
    (root / "private" / "p.html").write_text("<html><body>private</body></html>")
    (root / "robots.txt").write_bytes("User-agent: searchcrawl\x1b]0;pwned\x07\x1b[2J\x9b31m\nDisallow: /private/\n".encode())
    site = serve(root)
    name = unique("hostile")
    project.source(name, f'seeds = ["{site.url}hostile.html"]\nmax_depth = 1\n')
    crawl = project.scrapy("crawl", name)
    assert crawl.returncode == 0, crawl.stderr[-3000:]

    search = project.scrapy("search", "axolotl husbandry", "--source", name)
    report = project.scrapy("report", name)
    status = project.scrapy("status", name)
    explain = project.scrapy("explain", name, f"{site.url}private/p.html")
    for command in (search, report, status, explain):
        assert command.returncode == 0, command.stdout + command.stderr
        for control in RAW_CONTROLS:
            assert control not in command.stdout + command.stderr, (command.args, command.stdout)
    # the hostile title reached Solr without its control characters (content/clean_text.py), and
    # what is left that a terminal would obey (a right-to-left override) is shown escaped
    assert "Hostile ]0;pwned[2J report 31m \\u202egnp.exe" in search.stdout, search.stdout
    assert "group: User-agent: searchcrawl\\x1b]0;pwned\\x07" in explain.stdout, explain.stdout
    assert f"{site.url}hostile.html" in report.stdout
    assert f"== {name}" in status.stdout
