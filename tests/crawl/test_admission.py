"""The crawl's admission alone (crawl/requests.py ``Admission``): the source's rule chain on
each URL entering the crawl, what it remembers (admitted URLs, exclusions), and the exclusions it
sends to the ledger writer (``urls_excluded``), which records them. Built by the extension manager,
or by hand from a rule chain and a crawler's stats and signals."""

from __future__ import annotations

import pytest
from scrapy.signalmanager import SignalManager
from scrapy.statscollectors import MemoryStatsCollector

from searchcrawl.config.source_derived import rule_chain
from searchcrawl.crawl.requests import Admission, admission_of
from searchcrawl.crawl.run import run_counters
from searchcrawl.crawl.signals import urls_excluded
from searchcrawl.crawl.stores import stores_of
from searchcrawl.rules.chain import ADMITTED
from searchcrawl.rules.status_codes import Status
from tests.components import ledger_of

SOURCE = """seeds = ["http://h.test/"]
max_depth = 2
url_rewriter = "strip_session"
paths = { "*" = { exclude = ["/private/"] } }
[filters.scope]
exclude_urls = ["*/drafts/*"]
"""


@pytest.mark.parametrize(
    ("url", "depth", "status"),
    [
        ("http://h.test/a.html", 2, None),
        ("http://h.test/a.html", 3, Status.EXCLUDED_DEPTH),
        ("http://other.test/a.html", 1, Status.EXCLUDED_DOMAIN),
        ("http://h.test/drafts/a.html", 1, Status.EXCLUDED_FILTER),
    ],
)
def test_admit_decides_and_the_ledger_records_the_exclusion(crawler_of, url: str, depth: int, status: Status | None) -> None:
    crawler = crawler_of()
    admission = admission_of(crawler)
    step = admission.admit(url, depth)
    if status is None:
        assert step.decision == ADMITTED and admission.was_admitted(url, depth) and admission.excluded == []
        return
    assert (step.allowed, step.status) == (False, status) and step.rule
    assert admission.excluded == [(url, int(status), depth, step.rule)]
    assert crawler.stats.get_value(f"searchcrawl/excluded/{status.name.lower()}") == 1
    admission.flush()  # the ledger writer gets the exclusion with its rule
    row = stores_of(crawler).documents.get("unit", url)
    assert (row["state"], row["status"], row["reason"], row["depth"]) == ("excluded", status, step.rule, depth)
    assert admission.excluded == []


def test_an_exclusion_is_recorded_once_and_counted_every_time(crawler_of) -> None:
    crawler = crawler_of()
    admission = admission_of(crawler)
    for _ in range(3):
        admission.admit("http://other.test/", 1)
    assert len(admission.excluded) == 1
    assert crawler.stats.get_value("searchcrawl/excluded/excluded_domain") == 3
    assert run_counters(crawler.stats, None)["excluded"] == 3


def test_known_urls_are_judged_as_they_are_and_remembered_when_admitted(crawler_of) -> None:
    admission = admission_of(crawler_of())
    assert admission.known("http://h.test/a.html", 1) is None and admission.was_admitted("http://h.test/a.html", 1)
    assert admission.known("http://h.test/a.html?sessionid=1", 1) == (
        Status.EXCLUDED_REWRITER,
        "the URL rewriter makes it http://h.test/a.html",
    )
    assert not admission.was_admitted("http://h.test/a.html?sessionid=1", 1)


def test_exclude_now_writes_at_once(crawler_of) -> None:
    crawler = crawler_of()
    admission_of(crawler).exclude_now("http://h.test/print/a.html", Status.EXCLUDED_REWRITER, 2, "dropped by the URL rewriter")
    row = stores_of(crawler).documents.get("unit", "http://h.test/print/a.html")
    assert (row["state"], row["status"], row["reason"]) == ("excluded", Status.EXCLUDED_REWRITER, "dropped by the URL rewriter")
    assert crawler.stats.get_value("searchcrawl/excluded/excluded_rewriter") == 1


def test_a_read_only_crawl_records_no_exclusion(crawler_of) -> None:
    crawler = crawler_of(SEARCHCRAWL_READ_ONLY=True)
    assert crawler.get_extension(type(ledger_of(crawler_of()))) is None  # no ledger writer
    admission = admission_of(crawler)
    admission.exclude_now("http://other.test/", Status.EXCLUDED_DOMAIN, 1, "another domain")
    assert stores_of(crawler).documents.get("unit", "http://other.test/") is None


def test_built_by_hand_it_sends_its_exclusions_on_the_signal(crawler_of) -> None:
    """Without a crawl: a rule chain, stats and a signal manager are all it uses."""
    crawler = crawler_of()
    source = crawler.spidercls.source  # type: ignore[attr-defined]
    signals, sent = SignalManager(), []
    signals.connect(lambda rows: sent.extend(rows), signal=urls_excluded, weak=False)
    admission = Admission(rule_chain(source, 2048), MemoryStatsCollector(crawler), signals)
    assert admission.link("http://h.test/private/a.html", 1) is None
    assert admission.link("http://h.test/a.html?sessionid=2", 1).url == "http://h.test/a.html"  # type: ignore[union-attr]
    admission.flush()
    assert [row[:2] for row in sent] == [("http://h.test/private/a.html", Status.EXCLUDED_PATH)]
