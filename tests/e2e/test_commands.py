"""`scrapy search`, `scrapy solr status` and the quickstart's `scrapy demo`."""

import uuid

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
            }
        ]
    )
    result = project.scrapy("search", "zebrafish husbandry", "--source", source)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("1 documents match")
    assert lines[1] == "1. Quarterly zebrafish report"
    assert lines[2].strip() == f"http://s.test/{source}"
    assert "*zebrafish*" in lines[3] and "*husbandry*" in lines[3]


def test_search_reports_an_unreachable_solr(offline_project) -> None:
    result = offline_project.scrapy("search", "anything")
    assert result.returncode == 1
    assert "did not answer" in result.stdout


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
