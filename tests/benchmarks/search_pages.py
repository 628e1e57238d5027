"""Response times of the web application: the search page and the administration overview.

`.venv/bin/python -m tests.benchmarks.search_pages [--site synthetic] [--pages 10000] [--queries 200]`

In one run, all its own: a dev Solr on a free port, a site served by nginx and crawled into it by
`scrapy crawl` (the full pipeline), then `scrapy web` as a user starts it (uvicorn, one process)
on 127.0.0.1. The site (``--site``) is the crawl benchmark's synthetic one by default
(tests/benchmarks/synthetic.py: ``--pages`` pages of 20-60 KB, one PDF per 500), or one of its real
sites (tests/benchmarks/real_sites.py: sphinx, nutch, nutch-releases), unpacked from the shared
corpora and crawled from its seed as the crawl benchmark does; ``--pages`` is then ignored (the
site is what it is). The client asks one request at a time (what one searcher waits for), over
one kept-alive connection: 20 warm-up queries, then ``--queries`` queries of one real English
word each, in a fixed shuffled order: on the synthetic site from WORDS below (its vocabulary,
thousands of hits each, and words it does not hold); on a real site REAL_WORDS of its own
words, read back from its index (real_vocabulary: a seeded sample of the TOP_TERMS most
frequent words of its titles and text, each checked to find documents), and REAL_WORDS of
OTHER_WORDS checked to find nothing. Each page is a full search: collapse on url, highlighting,
the five facets; a word without hits also asks Solr's spellcheck component (a second request).
The CPU the web process and Solr spend on them is read from /proc around each page (with hits
and without). Then the administration overview (sources, runs, document counts, cache, Solr's
ping and count), logged in, 50 times; then the JSON API (api_latency). Prints the median and
95th percentile of each, in milliseconds, and writes them to ``--out`` as JSON, with the load
average (a shared machine shows there).

Suggestions while typing (GET /suggest, web/suggestions.py): ``--suggest-words`` of the site's
own words typed one letter at a time, each prefix of 1 to 4 letters asked as the search box's
script asks it (after 20 warm-up prefixes), by length and together; on the synthetic site each
prefix begins words of thousands of titles ("Budget page 1234"), on a real site the prefixes
are those of its real words (a prefix need not begin a word of a title). The same prefixes are
also asked of ``suggestions.suggest`` in this process (one pysolr connection), with ten past
queries to check each time (words of the run's words that begin with the prefix, and
"<word> page"), as the page asks them from the query log.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

import tests.conftest  # noqa: F401  # its CheckoutConfigset: the dev Solr gets THIS checkout's configset
from searchcrawl.access.decision import Principals
from searchcrawl.dev.solr_runner import DevSolr, free_port
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.search.suggestions import suggest
from searchcrawl.search.trimmed_index import TrimmedIndex
from tests.benchmarks.measure import process_tree_cpu
from tests.benchmarks.real_sites import SITES, build_site, site_seed
from tests.benchmarks.synthetic import WORDS as SITE_WORDS
from tests.benchmarks.synthetic import nginx

ROOT = Path(__file__).resolve().parents[2]
# Real English words: the synthetic site's vocabulary (each found in thousands of documents) and
# words it does not hold (no hits: those pages also ask for spelling suggestions).
OTHER_WORDS = """
apple harbour river mountain garden window kitchen letter morning evening winter summer autumn
spring holiday village castle bridge forest island desert valley ocean planet station market
doctor teacher farmer pilot captain soldier painter writer singer dancer lawyer banker baker
bicycle engine rocket ticket pocket button blanket candle mirror pillow basket bucket ladder
hammer needle thread cotton leather silver copper marble crystal diamond feather shadow thunder
lightning rainbow weather climate volcano glacier canyon meadow orchard vineyard harvest bakery
cheese butter honey pepper ginger lemon orange banana cherry grape melon peach potato tomato onion
carrot garlic salad soup bread coffee sugar flour olive walnut almond violin guitar piano trumpet
drum melody rhythm poetry novel chapter theatre museum gallery statue painting sculpture portrait
journey voyage passport luggage compass anchor lantern tunnel tower palace temple chapel cottage
cabin tent saddle wagon carriage harness stable meadowlark sparrow eagle falcon pigeon penguin
dolphin whale salmon turtle rabbit squirrel badger beaver otter""".split()
WORDS = SITE_WORDS + OTHER_WORDS[: 200 - len(SITE_WORDS)]
# A real site's words (--site other than synthetic): REAL_WORDS of its TOP_TERMS most frequent words
# (field spell: its titles and text as written), and as many of OTHER_WORDS that find nothing in it.
TOP_TERMS = 1000
REAL_WORDS = 100
WORD = re.compile(r"[a-z]{4,}")
STOPWORDS = ROOT / "solr" / "configset" / "conf" / "stopwords_en.txt"


def hit_count(solr_url: str, word: str) -> int:
    """Documents the index holds for ``word``, asked as the search page asks (the /select handler's
    edismax over title, description, subject and content)."""
    answer = requests.get(f"{solr_url}/select", params={"q": word, "rows": 0, "hl": "false", "wt": "json"}, timeout=60)
    answer.raise_for_status()
    return int(answer.json()["response"]["numFound"])


def real_vocabulary(solr_url: str) -> tuple[list[str], list[str], dict[str, int]]:
    """A real site's own words and words it does not hold, read back from its index: of the
    TOP_TERMS most frequent terms of field ``spell`` (titles and text, lower-cased, not stemmed;
    Solr's /admin/luke), those of 4 letters or more that are no stop words and find documents, a
    seeded sample of REAL_WORDS of them; then the first REAL_WORDS of OTHER_WORDS that find
    nothing. Returns both lists (sorted: the run shuffles them) and every word's hit count."""
    luke = requests.get(
        f"{solr_url}/admin/luke",
        params={"fl": "spell", "numTerms": TOP_TERMS, "wt": "json", "json.nl": "arrarr"},
        timeout=300,
    )
    luke.raise_for_status()
    stopwords = {line.strip() for line in STOPWORDS.read_text(encoding="utf-8").splitlines() if not line.startswith("#")}
    frequent = [term for term, _count in luke.json()["fields"]["spell"]["topTerms"]]
    candidates = sorted(term for term in frequent if WORD.fullmatch(term) and term not in stopwords)
    hits = {word: hit_count(solr_url, word) for word in candidates}
    found = [word for word in candidates if hits[word]]
    site_words = sorted(random.Random(72).sample(found, min(REAL_WORDS, len(found))))
    missing: list[str] = []
    for word in OTHER_WORDS:
        if len(missing) == REAL_WORDS:
            break
        hits[word] = hit_count(solr_url, word)
        if not hits[word] and word not in missing:
            missing.append(word)
    return site_words, missing, {word: hits[word] for word in site_words + missing}


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "median_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 1),
        "max_ms": round(ordered[-1] * 1000, 1),
    }


def timed(session: requests.Session, url: str, **params: str) -> tuple[float, requests.Response]:
    started = time.perf_counter()
    response = session.get(url, params=params, timeout=60)
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed, response


def process_cpu(pid: int) -> float:
    """Seconds of CPU (user + system) process ``pid`` has used: /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def api_latency(base: str, password: str, words: list[str], web_pid: int, solr_pid: int) -> dict[str, Any]:
    """The JSON API (/api/search) against the search page, the same words in turn (issue 59):
    a token made on the administration page, then each word asked of the API and of the page,
    alternately, after 20 warm-up requests of each; the times waited and the web process's CPU
    per request (user + system: less sensitive to a shared machine than the wall clock), and
    Solr's JVM's."""
    session = requests.Session()
    form = session.get(base + "/admin/login", timeout=30)
    login = re.search(r'name="login_token" value="([^"]+)"', form.text)
    assert login is not None
    session.post(
        base + "/admin/login",
        data={"login_token": login[1], "username": "admin", "password": password},
        timeout=30,
    ).raise_for_status()
    csrf = re.search(r'name="csrf" value="([^"]+)"', session.get(base + "/admin/api", timeout=30).text)
    assert csrf is not None
    made = session.post(base + "/admin/api", data={"csrf": csrf[1], "name": "benchmark"}, timeout=30)
    token = re.search(r'id="new-token">([^<]+)<', made.text)
    assert token is not None
    client = requests.Session()
    client.headers["authorization"] = f"Bearer {token[1]}"
    for word in words[:20]:
        timed(client, base + "/api/search", q=word)
        timed(client, base + "/", q=word)
    api: list[float] = []
    api_hits: list[float] = []
    api_misses: list[float] = []
    page: list[float] = []
    api_cpu = page_cpu = api_solr_cpu = page_solr_cpu = 0.0
    for word in words:
        before, solr_before = process_cpu(web_pid), process_tree_cpu(solr_pid)
        elapsed, response = timed(client, base + "/api/search", q=word)
        middle, solr_middle = process_cpu(web_pid), process_tree_cpu(solr_pid)
        api.append(elapsed)
        (api_hits if response.json()["total"] > 0 else api_misses).append(elapsed)
        elapsed, _response = timed(client, base + "/", q=word)
        page_cpu += process_cpu(web_pid) - middle
        page_solr_cpu += process_tree_cpu(solr_pid) - solr_middle
        api_cpu += middle - before
        api_solr_cpu += solr_middle - solr_before
        page.append(elapsed)
    return {
        "api_search": percentiles(api),
        "api_search_with_hits": percentiles(api_hits) if api_hits else None,
        "api_search_without_hits": percentiles(api_misses) if api_misses else None,
        "api_search_cpu_ms_per_request": round(api_cpu / len(words) * 1000, 2),
        "api_search_solr_cpu_ms_per_request": round(api_solr_cpu / len(words) * 1000, 2),
        "search_page_alternating": percentiles(page),
        "search_page_cpu_ms_per_request": round(page_cpu / len(words) * 1000, 2),
        "search_page_alternating_solr_cpu_ms_per_request": round(page_solr_cpu / len(words) * 1000, 2),
    }


def typed_prefixes(words: list[str]) -> list[str]:
    """What a searcher typing each word asks, one letter at a time: its first 1 to 4 letters."""
    return [word[:length] for word in words for length in range(1, 5) if len(word) >= length]


def suggestion_latency(
    session: requests.Session,
    base: str,
    solr_url: str,
    words: list[str],
    pids: tuple[int, int],
    vocabulary: list[str] = WORDS,
) -> dict[str, Any]:
    """GET /suggest for each prefix of ``words`` (typed_prefixes), by prefix length, and the CPU
    the web application and Solr (``pids``) spent on them; then the same prefixes asked of
    suggestions.suggest with ten past queries to check (words of ``vocabulary``)."""
    for prefix in typed_prefixes(vocabulary[-5:]):  # warm-up: 20 prefixes
        timed(session, base + "/suggest", q=prefix)
    by_length: dict[int, list[float]] = {1: [], 2: [], 3: [], 4: []}
    shown: list[int] = []
    cpu_before = [process_tree_cpu(pid) for pid in pids]
    for prefix in typed_prefixes(words):
        elapsed, response = timed(session, base + "/suggest", q=prefix)
        by_length[len(prefix)].append(elapsed)
        shown.append(len(response.json()["suggestions"]))
    web_cpu, solr_cpu = (process_tree_cpu(pid) - before for pid, before in zip(pids, cpu_before, strict=True))
    asked = len(shown)
    solr = SolrIndex(solr_url, timeout=60)
    visitor = Principals.anonymous()
    with_queries: list[float] = []
    for prefix in typed_prefixes(words):
        candidates = [word for word in vocabulary if word.startswith(prefix)][:5]
        candidates += [f"{word} page" for word in candidates][: 10 - len(candidates)]
        started = time.perf_counter()
        suggest(TrimmedIndex(solr, visitor), prefix, candidates)
        with_queries.append(time.perf_counter() - started)
    return {
        "suggest_all_prefixes": percentiles([sample for samples in by_length.values() for sample in samples]),
        **{f"suggest_prefix_{length}_letters": percentiles(samples) for length, samples in by_length.items() if samples},
        "suggestions_shown_median": statistics.median(shown),
        "prefixes_with_no_suggestion": sum(1 for count in shown if not count),
        "suggest_cpu_ms_per_request": {
            "web": round(web_cpu * 1000 / asked, 2),
            "solr": round(solr_cpu * 1000 / asked, 2),
        },
        "suggest_function_with_10_past_queries": percentiles(with_queries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", default="synthetic", choices=["synthetic", *SITES], help="the site crawled (default synthetic)")
    parser.add_argument("--pages", type=int, default=10000, help="the synthetic site's pages (ignored for a real site)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--suggest-words", type=int, default=50)
    parser.add_argument("--out", type=Path, default=Path("search-pages.json"))
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="searchcrawl-search-bench-") as folder:
        work = Path(folder)
        (work / "sources").mkdir()
        solr = DevSolr(work / "solr", free_port())
        solr.start(timeout=600)
        web = None
        try:
            site = build_site(options.site, work / "site", options.pages)
            with nginx(site.root, work / "nginx") as server:
                (work / "sources" / "bench.toml").write_text(
                    f'seeds = ["{server.url}{site_seed(site)}"]\nmax_depth = 10\n', encoding="utf-8"
                )
                env = dict(
                    os.environ,
                    SEARCHCRAWL_SOURCES_DIR=str(work / "sources"),
                    SEARCHCRAWL_DATA_DIR=str(work / "data"),
                    SOLR_URL=solr.url,
                    PYTHONPATH=str(ROOT),
                    SEARCHCRAWL_DB_URL="",
                    SEARCHCRAWL_WEB_USERNAME="admin",
                    SEARCHCRAWL_WEB_PASSWORD="bench-" + os.urandom(8).hex(),
                )
                load = {"before_crawl": os.getloadavg()[0]}
                started = time.monotonic()
                crawl = subprocess.run(
                    [sys.executable, "-m", "scrapy", "crawl", "bench", "-s", "LOG_LEVEL=WARNING"],
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                )
                if crawl.returncode != 0:
                    raise SystemExit(f"the crawl failed:\n{crawl.stderr[-3000:]}")
                crawl_seconds = round(time.monotonic() - started, 1)
                print(f"crawled the {options.site} site ({site.pages:,} pages) in {crawl_seconds:.0f} s", flush=True)
            documents = requests.get(f"{solr.url}/select", params={"q": "*:*", "rows": 0, "wt": "json"}, timeout=60).json()
            indexed = documents["response"]["numFound"]
            if options.site == "synthetic":
                site_words, vocabulary, hit_counts = SITE_WORDS, WORDS, None
            else:  # the site's own words, read back from its index, and words it does not hold
                site_words, missing, hit_counts = real_vocabulary(solr.url)
                vocabulary = site_words + missing
            port = free_port()
            web = subprocess.Popen(
                [sys.executable, "-m", "scrapy", "web", "--port", str(port)],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                try:
                    requests.get(base + "/", timeout=2)
                    break
                except requests.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            session = requests.Session()
            order = vocabulary[:]
            random.Random(26).shuffle(order)
            solr_pid = int(solr.pid_path.read_text())
            load["before_searches"] = os.getloadavg()[0]
            for word in order[:20]:  # warm-up: Solr's caches and JIT, the templates
                timed(session, base + "/", q=word)
            hits: list[float] = []
            misses: list[float] = []
            # CPU seconds of the web process and of Solr, for pages with hits and without
            cpu = {"with_hits": [0.0, 0.0], "without_hits": [0.0, 0.0]}
            queries = (order * (options.queries // len(order) + 1))[: options.queries]
            for word in queries:
                web_before, solr_before = process_cpu(web.pid), process_tree_cpu(solr_pid)
                elapsed, response = timed(session, base + "/", q=word)
                found = "No document matches" not in response.text
                (hits if found else misses).append(elapsed)
                spent = cpu["with_hits" if found else "without_hits"]
                spent[0] += process_cpu(web.pid) - web_before
                spent[1] += process_tree_cpu(solr_pid) - solr_before
            # the site's own words, whose beginnings begin words of its titles ("Budget page 1234")
            typed = [word for word in order if word in site_words and len(word) >= 4][: options.suggest_words]
            suggesting = suggestion_latency(session, base, solr.url, typed, (web.pid, solr_pid), vocabulary)
            form = session.get(base + "/admin/login", timeout=30)
            token = re.search(r'name="login_token" value="([^"]+)"', form.text)
            assert token is not None
            session.post(
                base + "/admin/login",
                data={"login_token": token[1], "username": "admin", "password": env["SEARCHCRAWL_WEB_PASSWORD"]},
                timeout=30,
            ).raise_for_status()
            overview = [timed(session, base + "/admin")[0] for _ in range(55)][5:]
            results: dict[str, Any] = {
                "site": options.site,
                "site_pages": site.pages,
                "crawl_seconds": crawl_seconds,
                "documents_in_index": indexed,
                "words": {
                    "site_words": len(site_words),
                    "other_words": len(vocabulary) - len(site_words),
                    **({"hits": hit_counts} if hit_counts is not None else {}),
                },
                "search_page": percentiles(hits + misses),
                "search_page_with_hits": percentiles(hits) if hits else None,
                "search_page_without_hits": percentiles(misses) if misses else None,
                "search_page_cpu_ms_per_request_first_round": {
                    "web": round((cpu["with_hits"][0] + cpu["without_hits"][0]) * 1000 / len(queries), 2),
                    "solr": round((cpu["with_hits"][1] + cpu["without_hits"][1]) * 1000 / len(queries), 2),
                    **{
                        split: {
                            "web": round(spent[0] * 1000 / count, 2),
                            "solr": round(spent[1] * 1000 / count, 2),
                        }
                        for split, spent, count in (
                            ("with_hits", cpu["with_hits"], len(hits)),
                            ("without_hits", cpu["without_hits"], len(misses)),
                        )
                        if count
                    },
                },
                "admin_overview": percentiles(overview),
                **suggesting,
            }
            results.update(api_latency(base, env["SEARCHCRAWL_WEB_PASSWORD"], queries, web.pid, solr_pid))
            load["after"] = os.getloadavg()[0]
            results["load_average_1min"] = load
        finally:
            if web is not None:
                web.send_signal(signal.SIGTERM)
                web.wait(timeout=30)
            solr.stop()
    options.out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
