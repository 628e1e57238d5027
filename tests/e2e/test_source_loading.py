"""End-to-end crawls for: Source files: `scrapy list`, and broken files stopping `scrapy crawl` with one clear message (the components alone: tests.config.test_sources)."""

import pytest

from tests.config.test_sources import BROKEN  # noqa: F401 - helpers and fixtures
from tests.conftest import not_found_probe, solr_docs


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_source_stops_the_crawl_with_a_clear_message(name, offline_project, serve, tmp_path) -> None:
    site = serve(tmp_path)
    (tmp_path / "index.html").write_text("<a href='x.html'>x</a>")
    (offline_project.sources_dir / "seeds.txt").write_text(f"# seeds\ngopher://127.0.0.1/\n{site.url}\n")
    text, expected = BROKEN[name]
    path = offline_project.source(name, text.replace("{url}", site.url + "index.html"))
    result = offline_project.scrapy("crawl", name)
    assert result.returncode != 0
    message = [line for line in result.stderr.splitlines() if line.startswith("searchcrawl:")]
    assert len(message) == 1, result.stderr
    assert str(path) in message[0]
    for fragment in expected:
        assert fragment in message[0], message[0]
    assert "Traceback" not in result.stderr
    assert site.requests == []  # nothing fetched


def test_list_names_good_sources_and_the_broken_one(offline_project) -> None:
    offline_project.source("good", 'seeds = ["http://127.0.0.1:9/"]\n')
    offline_project.source("broken", 'seeds = ["http://127.0.0.1:9/"]\nmax_dept = 1\n')
    result = offline_project.scrapy("list")
    assert result.returncode == 0
    assert result.stdout.split() == ["example", "good"]  # the packaged example source too
    assert "broken" in result.stderr and "max_dept" in result.stderr


def test_unknown_source(offline_project) -> None:
    result = offline_project.scrapy("crawl", "nosuchsource")
    assert result.returncode == 2
    assert "no source named 'nosuchsource'" in result.stderr


def test_a_seed_files_comments_and_a_seed_its_own_rules_exclude(project, serve, tmp_path, solr) -> None:
    """Issue 53: ``URL  # comment`` in a seed file was requested with the comment in its path, and
    a seed the source's own rules exclude was dropped without a word."""
    site = serve(tmp_path)
    (tmp_path / "index.html").write_text("<html><body><p>home</p></body></html>")
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "a.html").write_text("<html><body><p>private</p></body></html>")
    (project.sources_dir / "seeds.txt").write_text(
        f"# seeds\n{site.url}index.html  # the home page\n{site.url}private/a.html\t# excluded below\n"
    )
    project.source("commented", 'seed_files = ["seeds.txt"]\npaths = { "*" = { exclude = ["/private/"] } }\n')
    result = project.scrapy("crawl", "commented")
    assert result.returncode == 0, result.stderr[-3000:]
    paths = [path for path in site.paths() if not not_found_probe(path)]
    assert paths == ["/robots.txt", "/index.html"], site.paths()
    warnings = [line for line in result.stderr.splitlines() if "WARNING" in line and "Seed " in line]
    assert len(warnings) == 1, result.stderr[-3000:]
    assert warnings[0].endswith(
        f'Seed {site.url}private/a.html of source commented is outside its own rules, not crawled: path exclude "/private/" '
        'on every host ("*") (903 excluded_path)'
    ), warnings
    assert {doc["url"] for doc in solr_docs(solr, "commented")} == {f"{site.url}index.html"}
