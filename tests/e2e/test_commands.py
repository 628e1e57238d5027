"""`scrapy search`, `scrapy solr status` and the quickstart's `scrapy demo`."""

import socket
import uuid

import pytest

from searchcrawl.access.tokens import Access
from searchcrawl.dev.solr_runner import DevSolr


def test_search_prints_title_url_and_snippet(project, solr) -> None:
    source = f"search-{uuid.uuid4().hex[:8]}"
    solr.add(
        [
            {
                "id": f"http://s.test/{source}",
                "url": f"http://s.test/{source}",
                "display_url": f"http://s.test/{source}",
                "source": source,
                "title": "Quarterly zebrafish report",
                "content": "The quarterly report on zebrafish husbandry in the laboratory.",
                **Access.public("a test").fields(),  # a search shows what carries access tokens only
            }
        ]
    )
    result = project.scrapy("search", "zebrafish husbandry", "--source", source)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("1 document matches")
    assert lines[1] == "1. Quarterly zebrafish report"
    assert lines[2].strip() == f"http://s.test/{source}"
    assert "*zebrafish*" in lines[3] and "*husbandry*" in lines[3]


def test_search_reports_an_unreachable_solr(offline_project) -> None:
    result = offline_project.scrapy("search", "anything")
    assert result.returncode == 1
    assert "did not answer" in result.stdout


@pytest.mark.xdist_group("demo-site")  # `scrapy demo` serves the example intranet on its one port, 8765
def test_solr_status_and_demo(project, dev_solr: DevSolr) -> None:
    port, solr_data = str(dev_solr.port), dev_solr.data_dir
    status = project.scrapy("solr", "status", "--port", port, SEARCHCRAWL_DATA_DIR=str(solr_data))
    assert status.returncode == 0 and "Solr is running" in status.stdout
    missing = project.scrapy("solr", "status", "--port", "1")
    assert missing.returncode == 3 and "not running" in missing.stdout
    # The quickstart: reuses the running dev Solr (same data dir and port), crawls, searches.
    demo = project.scrapy("demo", "--port", port, SEARCHCRAWL_DATA_DIR=str(solr_data))
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "1. Travel policy" in demo.stdout
    assert "Oracle on demand" in demo.stdout


@pytest.mark.xdist_group("demo-site")
def test_demo_tells_a_busy_site_port_before_starting_solr(offline_project) -> None:
    """Regression: a busy 8765 ended the demo in a traceback, after Solr had started."""
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the last demo's TIME_WAIT
        taken.bind(("127.0.0.1", 8765))
        taken.listen()
        demo = offline_project.scrapy("demo", "--port", "1")
    assert demo.returncode == 1
    assert "cannot serve the example intranet on 127.0.0.1:8765" in demo.stdout
    assert "Traceback" not in demo.stderr and "Starting the development Solr" not in demo.stdout


def test_status_of_an_unknown_source_is_an_error(offline_project) -> None:
    """Regression: `scrapy status nosuch` printed "documents: none" and exited 0."""
    offline_project.source("handbook", 'seeds = ["http://127.0.0.1:9/"]\n')
    offline_project.source("broken", "seeds = [\n")
    result = offline_project.scrapy("status", "nosuch")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "no source named 'nosuch' (sources: " in result.stderr and "handbook" in result.stderr
    assert "documents:" not in result.stdout
    # a source with a file, even a broken one, is shown (it has no documents yet)
    for name in ("handbook", "broken"):
        shown = offline_project.scrapy("status", name)
        assert shown.returncode == 0 and f"== {name}\ndocuments: none" in shown.stdout, shown.stdout + shown.stderr
