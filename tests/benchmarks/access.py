"""What secure search costs: a trimmed search against the same search untrimmed (issue 55, point 6).

`.venv/bin/python -m tests.benchmarks.access [--documents 100000] [--queries 300]`

In one run, all its own: a dev Solr on a free port (1 GB heap), ``--documents`` synthetic documents
(fixed seed) pushed into it with pysolr, each of 60-120 words drawn from a Zipf-shaped vocabulary
of 20,000 made-up words, and an access of the mixes an intranet has (``ACCESS_MIX``: public ones,
ones for one to three of 2,000 groups, some also behind a folder's level of other groups, a few
with a deny, some for one user by name or uidNumber). The searcher has 50 groups (each as DN and
cn, so 100 group tokens, plus their user, DN, uidNumber and gidNumber: 105 principals). Every
search is the web search page's (search/results.py): one word, collapsed on url, highlighted, with
its five facets, ten rows.

First, on the freshly committed index, one trimmed search: the cold one (Solr's caches empty,
its JIT cold for this query shape). Then 50 warm-up searches of each kind, then ``--queries``
words (from every frequency band of the vocabulary, in a fixed shuffled order), each asked three
ways in turn: untrimmed; trimmed for the same searcher (Solr's filter cache holds the trimming
filters after the first); trimmed for a different searcher each time (another 50 groups: the
filters computed anew, the first search of a searcher who just signed in). Prints the median
and 95th percentile of the time the client waits (pysolr, one connection) and of Solr's QTime,
in milliseconds, and the documents each finds, and writes them to ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pysolr

from searchcrawl.access.decision import Principal, Principals, solr_trimming
from searchcrawl.access.tokens import Access, Grant, Level
from searchcrawl.dev.solr_runner import DevSolr, free_port
from searchcrawl.search.query import search_params
from searchcrawl.search.results import FACET_PARAMS

GROUPS = 2000
USERS = 5000
VOCABULARY = 20_000
BATCH = 2000
GROUP_BASE = "ou=groups,dc=example,dc=org"
# (share of the documents, kind): kinds in ``access_of``
ACCESS_MIX = (
    (0.30, "public"),
    (0.35, "groups"),  # one to three groups (by cn or DN), a uidNumber's gid now and then
    (0.15, "groups behind a folder"),  # and a level above: the folder's one or two groups
    (0.10, "one user"),  # user:uNNNN, or uid:NNNN (a file's owner)
    (0.05, "groups with a deny"),  # one to three groups, one user or group denied
    (0.05, "groups behind two folders"),
)


def word(number: int) -> str:
    """A made-up word for a vocabulary rank: pronounceable, unique."""
    consonants, vowels = "bcdfghklmnprstvz", "aeiou"
    letters = []
    while True:
        number, c = divmod(number, len(consonants))
        number, v = divmod(number, len(vowels))
        letters.append(consonants[c] + vowels[v])
        if not number:
            return "".join(letters) + "x"


def group_token(rng: random.Random, number: int) -> str:
    return f"group:cn=g{number},{GROUP_BASE}" if rng.random() < 0.5 else f"group:g{number}"


def groups(rng: random.Random, count: int) -> tuple[Grant, ...]:
    # popular groups more often (a department's group holds more documents than a project's)
    numbers = {
        min(int(rng.paretovariate(1.0)) - 1, GROUPS - 1) if rng.random() < 0.5 else rng.randrange(GROUPS) for _ in range(count)
    }
    return tuple(Grant(group_token(rng, number), "bench") for number in sorted(numbers))


def access_of(rng: random.Random, kind: str) -> Access:
    if kind == "public":
        return Access.public("bench")
    if kind == "one user":
        user = rng.randrange(USERS)
        return Access.of([Grant(f"user:u{user}" if rng.random() < 0.5 else f"uid:{10000 + user}", "bench")])
    allow = groups(rng, rng.randint(1, 3))
    if rng.random() < 0.1:
        allow += (Grant(f"gid:{20000 + rng.randrange(GROUPS)}", "bench"),)
    made = Access.of(allow)
    if kind == "groups with a deny":
        denied = f"user:u{rng.randrange(USERS)}" if rng.random() < 0.7 else group_token(rng, rng.randrange(GROUPS))
        made = Access.of(allow, [Grant(denied, "bench")])
    for level in range({"groups behind a folder": 1, "groups behind two folders": 2}.get(kind, 0)):
        made = made.within(Level(f"folder {level}", groups(rng, rng.randint(1, 2))))
    return made


def documents(first: int, count: int) -> list[dict[str, Any]]:
    """Documents ``first`` .. ``first + count - 1`` (each batch its own fixed seed)."""
    rng = random.Random(55 + first)
    weights = [1 / (rank + 1) for rank in range(VOCABULARY)]
    cumulative = []
    total = 0.0
    for weight in weights:
        total += weight
        cumulative.append(total)
    kinds = [kind for _share, kind in ACCESS_MIX]
    shares = [share for share, _kind in ACCESS_MIX]
    types = ["text/html"] * 6 + ["application/pdf", "text/plain", "application/msword"]
    made = []
    for number in range(first, first + count):
        words = rng.choices(range(VOCABULARY), cum_weights=cumulative, k=rng.randint(60, 120))
        url = f"http://intranet.test/doc/{number}"
        made.append(
            {
                "id": f"bench!{url}",
                "url": url,
                "display_url": url,
                "source": "bench",
                "host": f"host{number % 7}.intranet.test",
                "title": " ".join(word(w) for w in words[:5]),
                "content": " ".join(word(w) for w in words),
                "mimetype": rng.choice(types),
                "language": "en",
                "last_modified": f"20{rng.randint(10, 25)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T00:00:00Z",
                **access_of(rng, rng.choices(kinds, weights=shares)[0]).fields(),
            }
        )
    return made


def searcher(rng: random.Random, name: str) -> Principals:
    """A searcher in 50 groups (as a directory gives them: each group's DN and cn)."""
    chosen = sorted(
        {min(int(rng.paretovariate(1.0)) - 1, GROUPS - 1) if rng.random() < 0.3 else rng.randrange(GROUPS) for _ in range(200)}
    )
    chosen = rng.sample(chosen, 50)
    entries = [
        Principal(f"user:{name}", "bench"),
        Principal(f"user:uid={name},ou=people,dc=example,dc=org", "bench"),
        Principal(f"uid:{10000 + rng.randrange(USERS)}", "bench"),
        Principal(f"gid:{20000 + rng.randrange(GROUPS)}", "bench"),
    ]
    for number in chosen:
        entries += [Principal(f"group:cn=g{number},{GROUP_BASE}", "bench"), Principal(f"group:g{number}", "bench")]
    return Principals.of(name, entries)


def page_params(principals: Principals, trimmed: bool) -> dict[str, Any]:
    """The web search page's request (run_search), with or without the trimming."""
    params = search_params(10, 0, highlight=("\ue000", "\ue001"))
    params.update(FACET_PARAMS)
    if trimmed:  # as TrimmedIndex sends it (search/trimmed_index.py): its filters first, its parameters over
        trimming, trimming_params = solr_trimming(principals)
        params = {**params, **trimming_params, "fq": [*trimming, *params["fq"]]}
    return params


def ask(client: pysolr.Solr, query: str, params: dict[str, Any]) -> tuple[float, int, int]:
    started = time.perf_counter()
    results = client.search(query, **params)
    return time.perf_counter() - started, int(results.qtime or 0), int(results.hits)


def summary(samples: list[tuple[float, int, int]]) -> dict[str, Any]:
    waits = sorted(sample[0] * 1000 for sample in samples)
    qtimes = sorted(float(sample[1]) for sample in samples)

    def p95(values: list[float]) -> float:
        return round(values[min(len(values) - 1, int(0.95 * len(values)))], 1)

    return {
        "n": len(samples),
        "median_ms": round(statistics.median(waits), 1),
        "p95_ms": p95(waits),
        "qtime_median_ms": statistics.median(qtimes),
        "qtime_p95_ms": p95(qtimes),
        "hits_median": statistics.median(sample[2] for sample in samples),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path("access-bench.json"))
    options = parser.parse_args()
    rng = random.Random(6)
    with tempfile.TemporaryDirectory(prefix="searchcrawl-access-bench-") as folder:
        solr = DevSolr(Path(folder) / "solr", free_port())
        solr.start(timeout=600)
        try:
            client = pysolr.Solr(solr.url, timeout=120)
            started = time.monotonic()
            for start in range(0, options.documents, BATCH):
                client.add(documents(start, min(BATCH, options.documents - start)), commit=False)
            client.commit()  # a hard commit: a new searcher, its caches empty
            indexing = time.monotonic() - started
            print(f"indexed {options.documents} documents in {indexing:.0f} s", flush=True)
            alice = searcher(rng, "alice")
            order = [word(rank) for rank in range(0, 5000, 5000 // max(options.queries, 1))][: options.queries]
            rng.shuffle(order)
            cold = ask(client, order[0], page_params(alice, trimmed=True))
            for query in order[:50]:  # warm-up: Solr's caches and JIT, both kinds
                ask(client, query, page_params(alice, trimmed=True))
                ask(client, query, page_params(alice, trimmed=False))
            untrimmed, same, fresh = [], [], []
            for number, query in enumerate(order):
                untrimmed.append(ask(client, query, page_params(alice, trimmed=False)))
                same.append(ask(client, query, page_params(alice, trimmed=True)))
                fresh.append(ask(client, query, page_params(searcher(rng, f"user{number}"), trimmed=True)))
            total = client.search("*:*", rows=0).hits
            readable = client.search(
                "*:*", rows=0, **{k: v for k, v in page_params(alice, True).items() if k.startswith(("fq", "access_"))}
            ).hits
            results = {
                "documents": total,
                "indexing_seconds": round(indexing),
                "searcher_principals": len(alice.entries),
                "documents_the_searcher_may_read": readable,
                "cold_first_trimmed_search": {"ms": round(cold[0] * 1000, 1), "qtime_ms": cold[1], "hits": cold[2]},
                "untrimmed": summary(untrimmed),
                "trimmed_same_searcher": summary(same),
                "trimmed_a_new_searcher_each_time": summary(fresh),
            }
        finally:
            solr.stop()
    options.out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
