"""Search quality on the judged sets (issue 75): the shared corpora's Sphinx site (Scipy Lecture
Notes) and the Nutch Javadoc crawled into a development Solr, then each judged set of
tests/search/judged/ searched as the search page searches (`scrapy relevance`'s code) under the
page's ranking and under the plain baseline (the content field alone), with the figures per kind
of query and the paired test between them, and the share of the nonsense queries that found
nothing. The sets whose corpus is a Debian documentation package are crawled from its .deb.

    .venv/bin/python -m tests.benchmarks.judged --out bench-judged
    .venv/bin/python -m tests.benchmarks.judged --out bench-after --before bench-judged   # after a change
    apt-get download python3.11-doc   # the fourth corpus, held out: Python 3.11's documentation
    .venv/bin/python -m tests.benchmarks.judged --out bench-python --sets python-docs --deb python3.11-doc_3.11.2-6+deb12u9_all.deb

``--before DIR``: a previous run's folder; its saved runs (``<set>-page.run``) are scored beside
this one's page ranking, with the paired test (before/after a change of the configset, the
schema or the crawl). Each run starts a new Solr core from the repository's configset and crawls
both sites from an empty data folder, so a change of either is measured whole.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urldefrag, urljoin

import pysolr
from lxml import etree, html

from searchcrawl.access.decision import Principals
from searchcrawl.dev.solr_runner import DevSolr, free_port
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.rules.ranking_rules import Rules
from searchcrawl.search.evaluation import (
    QueryScore,
    by_kind,
    compare,
    means,
    read_qrels,
    read_queries,
    read_run,
    score_run,
    silence,
    write_run,
)
from searchcrawl.search.hybrid import SemanticModel, SemanticSearch
from searchcrawl.search.query import Ranking
from searchcrawl.search.results import judged_run
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.semantic.embedders import Embedder, embedder_from
from searchcrawl.semantic.passage_index import PassageIndex, SyncResult
from tests.benchmarks.measure import python_path, run_measured
from tests.benchmarks.real_sites import RealSite
from tests.benchmarks.synthetic import nginx
from tests.conftest import ROOT
from tests.search.judged_packages import DOC_PACKAGES, deb_of, unpacked

JUDGED = ROOT / "tests" / "search" / "judged"
# judged set: (real site, source name); the sets of Debian's documentation packages: DOC_PACKAGES
SETS = {"scipy-lectures": ("sphinx", "scipy"), "nutch": ("nutch", "nutch")}
# the sets only ever reported held out, never tuned on (issue 100: settings chosen on the older sets)
HELD_OUT = frozenset({"python-docs"})
Item = TypeVar("Item")
RANKINGS = ("page", "plain")
TARGET_HYBRID_OVER_WORDS = 1.3  # nDCG@10, hybrid over the words query alone (issue 76)


def add_deb_option(parser: argparse.ArgumentParser) -> None:
    """``--deb DEB``, repeated: the .deb of a judged set's documentation package (``--scrapy-docs``,
    its older name, still read)."""
    packages = " ".join(package.package for package in DOC_PACKAGES.values())
    parser.add_argument(
        "--deb",
        "--scrapy-docs",
        dest="debs",
        action="append",
        default=[],
        metavar="DEB",
        help=f"a documentation package's .deb, for its judged set (apt-get download {packages})",
    )


def judged_site(name: str, debs: Sequence[str], work: Path) -> tuple[str, RealSite]:
    """(source name, site unpacked under ``work``) of the judged set ``name``: a shared corpus's
    site, or the site of the Debian documentation package that one of ``debs`` holds."""
    if name in SETS:
        site_name, source = SETS[name]
        return source, RealSite.unpack(site_name, work)
    if name not in DOC_PACKAGES:
        raise SystemExit(f"{name}: no judged set of that name ({', '.join([*SETS, *DOC_PACKAGES])})")
    package = DOC_PACKAGES[name]
    deb = deb_of(name, [Path(deb) for deb in debs])
    if deb is None:
        raise SystemExit(f"{name}: give {package.package}'s .deb with --deb (apt-get download {package.package})")
    return package.source, RealSite(name, unpacked(name, deb, work), "index.html")


def training(sets: Mapping[str, Item], name: str) -> list[Item]:
    """The sets a setting is chosen on when the set ``name`` is scored with it: every other set
    but those only ever held out (``HELD_OUT``)."""
    return [item for other, item in sets.items() if other != name and other not in HELD_OUT]


def own_rankings(given: list[str]) -> dict[str, Ranking]:
    """``NAME=PARAMS`` (a query string of Solr parameters) as rankings without rules."""
    found = {}
    for text in given:
        name, _, params = text.partition("=")
        found[name] = Ranking(dict(parse_qsl(params, keep_blank_values=True)), False, params)
    return found


TARGET_OVER_BEFORE = 1.15  # nDCG@10 over today's (issue 75)


def crawl(site: RealSite, source: str, work: Path, solr_url: str, extra: str = "") -> dict[str, Any]:
    """One `scrapy crawl` of ``site`` (served by nginx) as source ``source`` (``extra``: more
    lines of its source file)."""
    with nginx(site.root, work / f"nginx-{source}") as server:
        sources = work / "sources"
        sources.mkdir(parents=True, exist_ok=True)
        (sources / f"{source}.toml").write_text(f'seeds = ["{server.url}{site.seed}"]\nmax_depth = 20\n{extra}', encoding="utf-8")
        env = dict(
            os.environ,
            SEARCHCRAWL_SOURCES_DIR=str(sources),
            SEARCHCRAWL_DATA_DIR=str(work / "data"),
            SOLR_URL=solr_url,
            SEARCHCRAWL_DB_URL="",
            SEARCHCRAWL_EMBEDDINGS="",  # the passages are embedded after the crawl, with the model measured
            PYTHONPATH=python_path(ROOT),
        )
        measured = run_measured([sys.executable, "-m", "scrapy", "crawl", source, "-s", "LOG_LEVEL=WARNING"], ROOT, env)
        return {"seconds": round(measured.seconds, 1), "requests": len(server.arrivals()), "base": server.url}


def embedded_passages(core: str, spec: str, source: str) -> tuple[str, Embedder, SyncResult]:
    """(the model's kind, its embedder, the pass) of ``source``'s passages embedded with the model
    ``spec`` (SEARCHCRAWL_EMBEDDINGS' form) into the Solr core ``core``."""
    embedder = embedder_from(spec)
    assert embedder is not None
    result = PassageIndex(SolrIndex(core, timeout=120), embedder, page=100).sync(source)
    assert not result.error, result.error
    return spec.split(":")[0], embedder, result


def add_anchor_texts(site: RealSite, base: str, core: str, source: str) -> int:
    """An experiment (``--anchors``): the text of every link to a page, from every page of the
    site, set on the page's Solr document as ``anchor_t`` (an atomic update), as Nutch's LinkDb
    gives a page its inlinks' anchors. Returns the documents updated."""
    anchors: dict[str, list[str]] = {}
    for path in site.root.rglob("*.html"):
        page = base + path.relative_to(site.root).as_posix()
        try:
            tree = html.fromstring(path.read_bytes())
        except (etree.ParserError, ValueError):
            continue
        for link in tree.iter("a"):
            href = link.get("href")
            text = " ".join(link.text_content().split())
            if not href or not text:
                continue
            target = urldefrag(urljoin(page, href))[0]
            if target != page:
                anchors.setdefault(target, []).append(text)
    client = pysolr.Solr(core, timeout=120)
    docs = client.search(f'source:"{source}"', fl="id,url", rows=100_000).docs
    updates = [
        {"id": doc["id"], "anchor_t": {"set": "\n".join(anchors[doc["url"]][:200])}} for doc in docs if doc["url"] in anchors
    ]
    for start in range(0, len(updates), 500):
        client.add(updates[start : start + 500])
    client.commit()
    return len(updates)


def shingles(text: str, width: int = 5) -> frozenset[int]:
    """The hashes of a text's runs of ``width`` words (lower-cased), for ``near_duplicates_collapsed``."""
    words = text.lower().split()
    return frozenset(hash(" ".join(words[start : start + width])) for start in range(max(len(words) - width + 1, 1)))


def near_duplicates_collapsed(
    ranked: dict[str, list[str]], texts: dict[str, frozenset[int]], measure: str, threshold: float
) -> dict[str, list[str]]:
    """An experiment (``--near-duplicates``): each query's hits without those that repeat a hit
    above them: ``jaccard`` (their 5-word runs alike, at least ``threshold`` of both), or
    ``contained`` (at least ``threshold`` of the lower hit's runs in the higher one: the Scipy
    preface holding its AUTHORS page whole), as a results page that collapses them would show."""
    collapsed = {}
    for qid, urls in ranked.items():
        kept: list[str] = []
        held: list[frozenset[int]] = []
        for url in urls:
            runs = texts.get(url)
            if runs:
                for other in held:
                    common = len(runs & other)
                    share = common / len(runs | other) if measure == "jaccard" else common / len(runs)
                    if share >= threshold:
                        break
                else:
                    held.append(runs)
                    kept.append(url)
                continue
            kept.append(url)
        collapsed[qid] = kept
    return collapsed


def figures(scores: list[QueryScore]) -> dict[str, dict[str, float]]:
    return {
        kind: {"queries": len(group), **{k: round(v, 4) for k, v in means(group).items()}}
        for kind, group in by_kind(scores).items()
    }


def print_table(title: str, found: dict[str, dict[str, dict[str, float]]]) -> None:
    print(f"\n{title}")
    print(
        f"{'kind':<14} {'queries':>7} " + " ".join(f"{ranking + ' nDCG@10':>15} {ranking + ' MRR@10':>14}" for ranking in found)
    )
    kinds = next(iter(found.values()))
    for kind in kinds:
        cells = " ".join(f"{found[r][kind]['ndcg@10']:>15.3f} {found[r][kind]['mrr@10']:>14.3f}" for r in found)
        print(f"{kind:<14} {int(kinds[kind]['queries']):>7} {cells}")


def workspace(prefix: str, out: str) -> tuple[Path, Path, DevSolr]:
    """A new work folder, the results' folder (``out``, else one in the work folder) and a
    development Solr of the repository's configset in the work folder, not started yet."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    results = Path(out or work / "results")
    results.mkdir(parents=True, exist_ok=True)
    return work, results, DevSolr(work / "solr", free_port(), heap="1g")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="")
    parser.add_argument("--before", default="", help="a previous run's folder, compared with this one")
    parser.add_argument("--sets", default=",".join(SETS))
    add_deb_option(parser)
    parser.add_argument("--source-lines", default="", help="more lines of each source file, e.g. 'navigation_pages = []'")
    parser.add_argument("--anchors", action="store_true", help="experiment: the inlinks' anchor texts as a field, anchor_t")
    parser.add_argument(
        "--ranking", action="append", default=[], metavar="NAME=PARAMS", help="another ranking: Solr parameters as a query string"
    )
    parser.add_argument(
        "--embeddings",
        action="append",
        default=[],
        metavar="SPEC",
        help="a model (SEARCHCRAWL_EMBEDDINGS' form): its passages embedded after the crawl, timed, and the hybrid ranking measured",
    )
    parser.add_argument(
        "--near-duplicates",
        action="append",
        default=[],
        metavar="MEASURE:THRESHOLD",
        help="experiment: the page's hits with near-duplicates of a hit above collapsed (jaccard:0.9, contained:0.8)",
    )
    args = parser.parse_args()
    work, out, solr = workspace("searchcrawl-judged-", args.out)
    core = solr.start(timeout=600)
    report: dict[str, Any] = {"sets": {}}
    try:
        index = TrimmedIndex(SolrIndex(core, timeout=60), Principals.anonymous())
        for name in args.sets.split(","):
            source, site = judged_site(name, args.debs, work / f"site-{name}")
            crawled = crawl(site, source, work, core, args.source_lines.replace("\\n", "\n") + "\n")
            pysolr.Solr(core, timeout=120).commit()  # the last pushes searchable now
            if args.anchors:
                crawled["anchored"] = add_anchor_texts(site, crawled.pop("base"), core, source)
            else:
                crawled.pop("base")
            queries = read_queries((JUDGED / name / "queries.tsv").read_text(encoding="utf-8"))
            judgments = read_qrels((JUDGED / name / "qrels.txt").read_text(encoding="utf-8"))
            scores = {}
            rankings: dict[str, str | Ranking] = {known: known for known in RANKINGS}
            rankings.update(own_rankings(args.ranking))
            semantic: dict[str, SemanticSearch | None] = {ranking: None for ranking in rankings}
            embedded: dict[str, dict[str, Any]] = {}
            for spec in args.embeddings:
                kind, embedder, result = embedded_passages(core, spec, source)
                embedded[kind] = {
                    "model": embedder.model_id,
                    "documents": result.documents,
                    "passages": result.embedded,
                    "seconds": round(result.seconds, 1),
                    "passages_a_second": round(result.embedded / max(result.seconds, 1e-9), 1),
                }
                print(f"{name}: {kind}: {embedded[kind]}")
                rankings[f"hybrid-{kind}"] = "page"
                semantic[f"hybrid-{kind}"] = SemanticSearch(SemanticModel(embedder))
            if args.embeddings:
                rankings["words"] = "words"
            runs: dict[str, dict[str, list[str]]] = {}
            for ranking, chosen in rankings.items():
                ranked, _sources = judged_run(index, queries, source, Rules(), chosen, semantic.get(ranking))
                (out / f"{name}-{ranking}.run").write_text(write_run(ranked, ranking), encoding="utf-8")
                scores[ranking] = score_run(queries, judgments, ranked)
                runs[ranking] = ranked
            if args.near_duplicates:
                found = pysolr.Solr(core, timeout=120).search(f'source:"{source}"', fl="url,content", rows=100_000).docs
                texts = {doc["url"]: shingles(str(doc.get("content") or "")) for doc in found}
                for spec in args.near_duplicates:
                    measure, _, threshold = spec.partition(":")
                    ranked = near_duplicates_collapsed(runs["page"], texts, measure, float(threshold))
                    scores[f"page-{measure}-{threshold}"] = score_run(queries, judgments, ranked)
                    dropped = sum(len(set(runs["page"][qid][:10]) - set(ranked[qid][:10])) for qid in ranked)
                    print(f"{name}: {spec}: {dropped} hits of the first tens collapsed into a hit above them")
            entry: dict[str, Any] = {
                "embedded": embedded,
                "hybrid_vs_words": {
                    ranking: {
                        "ndcg_ratio": round(means(scores[ranking])["ndcg@10"] / max(means(scores["words"])["ndcg@10"], 1e-9), 3),
                        "rows": [row.__dict__ for row in compare(scores["words"], scores[ranking])],
                    }
                    for ranking in rankings
                    if ranking.startswith("hybrid-")
                },
                "crawl": crawled,
                "figures": {ranking: figures(found) for ranking, found in scores.items()},
                "page_vs_plain": [row.__dict__ for row in compare(scores["plain"], scores["page"])],
                "first_answers": {item.query.qid: item.first_answer for item in scores["page"]},
                "silent": {ranking: silence(queries, ranked) for ranking, ranked in runs.items()},
            }
            print_table(f"{name}: {crawled['requests']} requests crawled in {crawled['seconds']} s", entry["figures"])
            for ranking, silent in entry["silent"].items():
                if silent is not None:
                    print(f"  {ranking}: {silent:.3f} of the nonsense queries found nothing")
            if args.before:
                earlier = Path(args.before) / f"{name}-page.run"
                before = score_run(queries, judgments, read_run(earlier.read_text(encoding="utf-8")))
                entry["before"] = figures(before)
                entry["page_vs_before"] = [row.__dict__ for row in compare(before, scores["page"])]
                print_table(
                    f"{name}: before ({args.before}) and now", {"before": entry["before"], "now": entry["figures"]["page"]}
                )
                ratio = means(scores["page"])["ndcg@10"] / max(means(before)["ndcg@10"], 1e-9)
                entry["ndcg_over_before"] = round(ratio, 3)
                print(f"nDCG@10 now / before: {ratio:.3f} (target {TARGET_OVER_BEFORE})")
            for ranking, found in entry["hybrid_vs_words"].items():
                print(f"  {ranking} / words nDCG@10: {found['ndcg_ratio']:.3f} (target {TARGET_HYBRID_OVER_WORDS})")
                for row in found["rows"]:
                    print(f"    {row['metric']}: {row['before']:.3f} -> {row['after']:.3f}, p = {row['p']:.4f}")
            for row in entry["page_vs_plain"]:
                print(f"  page vs plain {row['metric']}: {row['before']:.3f} -> {row['after']:.3f}, p = {row['p']:.4f}")
            report["sets"][name] = entry
            (out / "results.json").write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    finally:
        solr.stop()
    print(f"results in {out}")


if __name__ == "__main__":
    main()
