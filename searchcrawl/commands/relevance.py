"""`scrapy relevance <source|all> --queries Q --judgments J`: how well the search finds what
people look for, measured on judged queries (search/evaluation.py: the formats and the figures).

Each query is searched exactly as the search page searches (search/results.py ``judged_run``:
``run_search``, best bets above the hits, the relevance page's boosts, one hit per URL), trimmed
to a searcher (``--as USER``: what that directory user may read; default: the public documents),
over ``<source>`` only or over the whole index (``all``). Printed: nDCG@10, MRR@10, recall@10 and
success@1/@3 for all queries, per kind of query and per source (the source of the judged pages a
query found), then each query's rank of its first answer (a grade-2 page).

Two runs compared: ``--save RUN`` writes this run's hits (a TREC run file); ``--compare RUN``
scores a saved run on the same judgments beside this one (before and after a change of the
configset or the rules); ``--against RANKING`` runs the queries a second time now under another
ranking (search/query.py ``RANKINGS``: ``plain`` is the content field alone, no weights or rules).
Each figure's difference comes with its paired randomization test's p-value.

``--from-clicks [FOLDER]``: no search is run; the query analytics' searches and clicks of the last
``--days`` days are read as judgments (search/click_judgments.py, with their known biases) and
written to FOLDER/queries.tsv and FOLDER/qrels.txt (default: the judged sets' folder's
``clicks``, SEARCHCRAWL_JUDGED_DIR, where the relevance page finds it), to run as any judged set.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.commands.search import rules_of, searcher_index
from searchcrawl.index.solr_client import IndexingError, SolrIndex
from searchcrawl.ops.terminal import printable
from searchcrawl.search.click_judgments import judged_from_clicks, qrels_text, queries_text
from searchcrawl.search.evaluation import (
    METRICS,
    JudgedQuery,
    JudgmentError,
    QueryScore,
    by_kind,
    by_source,
    compare,
    means,
    read_qrels,
    read_queries,
    read_run,
    score_run,
    write_run,
)
from searchcrawl.search.hybrid import semantic_search
from searchcrawl.search.query import RANKINGS, Coordination
from searchcrawl.search.results import judged_run
from searchcrawl.store import Database
from searchcrawl.store.searches import Period, Searches
from searchcrawl.system import paths


def table(groups: dict[str, list[QueryScore]], title: str) -> list[str]:
    """One line per group: its query count and each figure's mean."""
    lines = [f"{title:<24} {'queries':>7} " + " ".join(f"{metric:>10}" for metric in METRICS)]
    for name, scores in groups.items():
        figures = means(scores)
        lines.append(f"{name[:24]:<24} {len(scores):>7} " + " ".join(f"{figures[metric]:>10.3f}" for metric in METRICS))
    return lines


def report(scores: list[QueryScore], per_source: dict[str, list[QueryScore]]) -> list[str]:
    lines = table(by_kind(scores), "kind")
    lines += ["", *table(per_source, "source")]
    lines += ["", f"{'query':<8} {'kind':<13} {'answer at':>9} {'nDCG@10':>8}  text"]
    for item in scores:
        rank = str(item.first_answer) if item.first_answer else "-"
        text = printable(item.query.text)  # a query from the clicks is a searcher's: no terminal escape
        lines.append(
            f"{printable(item.query.qid):<8} {printable(item.query.kind):<13} {rank:>9} {item.figures['ndcg@10']:>8.3f}  {text}"
        )
    return lines


def comparison_lines(before: list[QueryScore], after: list[QueryScore], before_name: str, after_name: str) -> list[str]:
    lines = [f"{'figure':<10} {before_name[:12]:>12} {after_name[:12]:>12} {'change':>8} {'p':>7} {'better':>6} {'worse':>6}"]
    for row in compare(before, after):
        lines.append(
            f"{row.metric:<10} {row.before:>12.3f} {row.after:>12.3f} {row.change:>+8.3f} {row.p:>7.4f} {row.better:>6} {row.worse:>6}"
        )
    return lines


def read_text(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")  # a byte order mark is no part of the first id
    except OSError as exc:
        raise UsageError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None


class Command(ScrapyCommand):
    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return (
            "<source|all> --queries FILE --judgments FILE [--as USER] [--ranking NAME] [--save RUN] "
            "[--compare RUN | --against NAME] | --from-clicks FOLDER [--days N]"
        )

    def short_desc(self) -> str:
        return "Measure the search on judged queries: nDCG@10, MRR@10, recall@10, success@1/@3"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--queries", help="query file: qid<TAB>kind<TAB>text a line")
        parser.add_argument("--judgments", help="TREC qrels: qid 0 docno grade (0-2) a line")
        parser.add_argument("--as", dest="user", default=None, help="search as this directory user (default: public only)")
        parser.add_argument("--ranking", default="page", choices=sorted(RANKINGS), help="how hits are ordered")
        parser.add_argument("--save", default=None, help="write this run's hits to this file (TREC run format)")
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--compare", default=None, help="a saved run, compared with this one")
        group.add_argument("--against", default=None, choices=sorted(RANKINGS), help="another ranking, run now and compared")
        parser.add_argument("--json", action="store_true", help="the figures as JSON")
        parser.add_argument(
            "--from-clicks",
            metavar="FOLDER",
            nargs="?",
            const="",
            help="write a judged set from the query analytics' clicks (default folder: the judged sets' 'clicks')",
        )
        parser.add_argument("--days", type=int, default=90, help="--from-clicks: the searches of this many days")
        parser.add_argument("--min-searches", type=int, default=3, help="--from-clicks: a query searched at least this often")

    def write_click_set(self, folder: Path, days: int, min_searches: int) -> None:
        assert self.settings is not None
        database = Database(paths.db_url(self.settings), migrate=False)
        try:
            impressions = Searches(database).impressions(Period.last(days))
        finally:
            database.close()
        found = judged_from_clicks(impressions, min_searches=min_searches)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        # the searchers' queries and the URLs they opened: readable by this user alone
        for name, text in (("queries.tsv", queries_text(found.queries)), ("qrels.txt", qrels_text(found.judgments))):
            descriptor = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
                stream.write(text)
        judged = sum(len(grades) for grades in found.judgments.values())
        print(
            f"{len(found.queries)} queries, {judged} judgments from {found.impressions} searches with a click "
            f"in the last {days} days: {folder / 'queries.tsv'}, {folder / 'qrels.txt'}"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if opts.from_clicks is not None:
            folder = Path(opts.from_clicks) if opts.from_clicks else paths.judged_dir(self.settings) / "clicks"
            self.write_click_set(folder, opts.days, opts.min_searches)
            return
        source, queries, judgments, saved = judged_inputs(args, opts)
        url = paths.solr_url(self.settings)
        solr = SolrIndex(url, timeout=30, auth=paths.solr_auth(self.settings))  # and the passages' counts
        index = searcher_index(self.settings, opts.user, solr)
        rules = rules_of(paths.db_url(self.settings))
        semantic = semantic_search(
            self.settings.get("SEARCHCRAWL_EMBEDDINGS") or "",
            self.settings.get("SEARCHCRAWL_EMBEDDINGS_PREVIOUS") or "",
            solr,
            self.settings.getfloat("SEARCHCRAWL_EMBED_TIMEOUT"),
        )
        try:
            coordination = Coordination.from_settings(self.settings.get)
            ranked, hit_sources = judged_run(index, queries, source, rules, opts.ranking, semantic, coordination)
            other = judged_run(index, queries, source, rules, opts.against, semantic, coordination)[0] if opts.against else saved
        except IndexingError as exc:
            print(f"searchcrawl: Solr at {url} did not answer: {exc.reason}")
            self.exitcode = 1
            return
        scores = score_run(queries, judgments, ranked)
        per_source = by_source(scores, judgments, hit_sources)
        if opts.save:
            Path(opts.save).write_text(write_run(ranked, opts.ranking), encoding="utf-8")
        other_scores = score_run(queries, judgments, other) if other is not None else None
        other_name = opts.against or (Path(opts.compare).name if opts.compare else "")
        if opts.json:
            print(json.dumps(as_json(scores, per_source, other_scores, opts.ranking, other_name), indent=2))
            return
        unjudged = len(queries) - len(scores)
        print(
            f"{len(scores)} judged queries over {source or 'all sources'}, ranking {opts.ranking!r}, "
            f"as {opts.user or 'a searcher who may read the public documents'}"
            + (f" ({unjudged} queries without judgments left out)" if unjudged else "")
        )
        for line in report(scores, per_source):
            print(line)
        if other_scores is not None:
            print()
            for line in comparison_lines(other_scores, scores, other_name, opts.ranking):
                print(line)


def judged_inputs(
    args: list[str], opts: argparse.Namespace
) -> tuple[str | None, list[JudgedQuery], dict[str, dict[str, int]], dict[str, list[str]] | None]:
    """The source (None: all), the judged queries, their judgments and a saved run to compare
    with (None), read from the command line's files; a usage error says what is wrong."""
    if len(args) != 1:
        raise UsageError("one source name, or 'all'")
    if not opts.queries or not opts.judgments:
        raise UsageError("--queries and --judgments are needed")
    try:
        queries = read_queries(read_text(opts.queries, "query file"), opts.queries)
        judgments = read_qrels(read_text(opts.judgments, "judgments"), opts.judgments)
        saved = read_run(read_text(opts.compare, "run"), opts.compare) if opts.compare else None
    except JudgmentError as exc:
        raise UsageError(str(exc)) from None
    return None if args[0] == "all" else args[0], queries, judgments, saved


def as_json(
    scores: list[QueryScore],
    per_source: dict[str, list[QueryScore]],
    other: list[QueryScore] | None,
    ranking: str,
    other_name: str,
) -> dict[str, Any]:
    query_sources = {item.query.qid: source for source, group in per_source.items() for item in group}
    found: dict[str, Any] = {
        "ranking": ranking,
        "by_kind": {name: {"queries": len(group), **means(group)} for name, group in by_kind(scores).items()},
        "queries": [
            {
                "qid": item.query.qid,
                "kind": item.query.kind,
                "text": item.query.text,
                "source": query_sources.get(item.query.qid),
                "first_answer": item.first_answer,
                **item.figures,
            }
            for item in scores
        ],
    }
    if other is not None:
        found["compared_with"] = other_name
        found["comparison"] = [
            {"metric": row.metric, "before": row.before, "after": row.after, "p": row.p, "better": row.better, "worse": row.worse}
            for row in compare(other, scores)
        ]
    return found
