"""What the nonsense rule costs a search (issue 100): the words query of every query of a judged
set, as the search page asks it, and the rule's count of the documents holding the required share
of its asked words (search/results.py ``answered``), asked alternately of a Solr that holds the
set's site (a kept run's, e.g. ``tests.benchmarks.fusion_lists``' while it runs); Solr's own time
(QTime) of each, so that the machine's load weighs on both alike:

    .venv/bin/python -m tests.benchmarks.nonsense_cost http://127.0.0.1:PORT/solr/searchcrawl pythondocs python-docs

The count is asked only where the model found nothing (hybrid) or always (words alone), and only
for a query with two asked words or more that found something.
"""

from __future__ import annotations

import argparse
import statistics

import pysolr

from searchcrawl.access.decision import Principals
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.search.evaluation import read_queries
from searchcrawl.search.query import COORDINATION, coordination_filter, search_params, words_text
from searchcrawl.search.trimmed_index import TrimmedIndex
from tests.benchmarks.judged import JUDGED

ROUNDS = 3
UNCACHED = "{!edismax cache=false v=$typed}"  # the words query, kept out of Solr's result cache: every round asks anew


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("core", help="the Solr core's URL")
    parser.add_argument("source", help="the set's source in it")
    parser.add_argument("set", help="the judged set's name")
    args = parser.parse_args()
    index = TrimmedIndex(SolrIndex(args.core, timeout=60), Principals.anonymous())
    queries = read_queries((JUDGED / args.set / "queries.tsv").read_text(encoding="utf-8"))
    words: list[float] = []
    counts: list[float] = []
    for _round in range(ROUNDS):
        for query in queries:
            params = {
                **search_params(100, 0, source=args.source),
                "fl": "id,url",
                "hl": "false",
                "facet": "false",
                "typed": words_text(query.text),
            }
            found: pysolr.Results = index.search(UNCACHED, params)
            check = coordination_filter(query.text, COORDINATION.words)
            if check is None or not found.hits:
                continue
            asked = {**params, **check[1], "fq": [*params["fq"], check[0]], "rows": 0}
            counted: pysolr.Results = index.search(UNCACHED, asked)
            words.append(float(found.qtime))
            counts.append(float(counted.qtime))
    print(f"{args.set}: {len(words) // ROUNDS} queries asked the count, {ROUNDS} rounds, Solr's QTime in ms")
    for name, values in (("words query (100 ids)", words), ("the rule's count (rows 0)", counts)):
        print(f"  {name:<28} median {statistics.median(values):6.1f}  p95 {percentile(values, 0.95):6.1f}")
    print(f"  count / words, medians: {statistics.median(counts) / max(statistics.median(words), 0.1):.2f}")


if __name__ == "__main__":
    main()
