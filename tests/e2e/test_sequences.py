"""A short model-based sequence of crawls (tests/sequences.py): a seeded site that changes between
crawls, two overlapping sources, a crawl killed with SIGKILL and resumed, a crawl while Solr is
down, robots.txt answering 503 for one crawl; after every crawl Solr and the delta report must
agree with the oracle. Three runs of it: with one process and semantic search on (wordllama), each
document's passages checked too (issue 76); with each crawl run by two local processes
(`processes = 2`, SQLite), the killed crawl's other process ending with it; and with one process
and an honest sitemap, whose lastmod spares unchanged pages their requests (DECISION D16).

One process with semantic search on is one run, not two: the sequence is the same whether the
crawls embed or not (the site, its changes and the special crawls come from the seed's generators,
which the embeddings do not draw from), so the run with passages makes every check of the run
without them (the index, the anchors, the delta reports, after each of the 30 crawls) and the
passages' besides; it is also the product's default (semantic search is on unless turned off).
Crawls with semantic search off still run twice, in the two other runs (one process with a
sitemap, two processes). The long version: ``python -m tests.sequences --seeds 1,2,3 --crawls 300
[--processes 2] [--sitemap] [--embeddings wordllama]``."""

from __future__ import annotations

import re

import pytest

from tests.sequences import Sequence

# seed 89: its 15 crawls have 404, 410, 503 (one document leaving after 3 failures), 301, 302 inside
# and outside the boundary, noindex on and off, duplicates (one handover with lag), robots.txt rules
SEED = 89
CRAWLS = 15
# the special crawls, forced so that every run of this test has them (the rest comes from the seed)
EVENTS = {5: "kill:A", 8: "outage:B", 11: "robots503", 13: "kill:B", 14: "outage:A"}
FETCHED = re.compile(r"'response_received_count': [1-9]")  # in a process's stats
SPARED = re.compile(r"'searchcrawl/sitemap_spared': [1-9]")  # in a process's stats: pages not requested


@pytest.mark.parametrize(
    ("processes", "sitemap", "embeddings"),
    [(1, False, "wordllama"), (2, False, ""), (1, True, "")],
    ids=["one process with semantic search", "two processes", "a sitemap"],
)
def test_short_sequence_matches_the_oracle(
    project, serve, tmp_path, solr_url, processes: int, sitemap: bool, embeddings: str
) -> None:
    root = tmp_path / "site"
    root.mkdir()
    site = serve(root)
    lines: list[str] = []
    sequence = Sequence(
        SEED,
        CRAWLS,
        project,
        site,
        root,
        solr_url,
        events=EVENTS,
        log_dir=tmp_path / "logs",
        progress=lines.append,
        processes=processes,
        sitemap=sitemap,
        embeddings=embeddings,
    )
    result = sequence.run()
    assert result.crawls == CRAWLS
    assert {event.split("@")[0].split(":")[0] for event in result.events} >= {"kill", "outage", "robots503"}
    assert not result.mismatches, (
        f"{len(result.mismatches)} mismatches with the oracle\n{result.summary()}\n\n"
        + "\n\n".join(m.text() for m in result.mismatches)
        + "\n\nsteps:\n"
        + "\n".join(lines)
    )
    if sitemap:  # the sitemap spared unchanged pages their requests in many of the crawls
        spared = [log for log in (tmp_path / "logs").glob("*.log") if SPARED.search(log.read_text())]
        assert len(spared) >= CRAWLS // 2, [log.name for log in spared]
    if embeddings:  # the oracle of passages ran on documents that had them, after every finished crawl
        assert result.checks > 0 and sequence.solr.search("doc_type:passage", rows=0).hits >= 10
        checked = [log for log in (tmp_path / "logs").glob("*.log") if "Passages of " in log.read_text()]
        assert len(checked) >= CRAWLS // 2, [log.name for log in checked]
    if processes > 1:  # both processes fetched pages in most crawls of source A
        shared = [log for log in (tmp_path / "logs").glob("*-A.log") if len(FETCHED.findall(log.read_text())) >= 2]
        assert len(shared) >= CRAWLS // 2, [log.name for log in shared]
