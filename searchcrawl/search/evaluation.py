"""Search quality measured: judged queries, the field's figures, and two runs compared.

The formats are the field's (TREC, as OpenSearch's Search Relevance Workbench and Elastic's
rank_eval import them), so a judged set made elsewhere runs here and ours runs elsewhere:

- a query file: one query a line, ``qid<TAB>kind<TAB>text`` (``kind``: keyword, question,
  navigational, error, or any word; ``qid<TAB>text`` is a query of no kind); a query of the kind
  ``nonsense`` is one no page answers, written to find nothing: it has no judgments, so it is left
  out of the figures, and ``silence`` is the share of them that found nothing;
- judgments (qrels): ``qid 0 docno grade`` a line, grades 0 (judged, not relevant), 1 (partly
  relevant) and 2 (answers the query); a docno is a page's URL, or its path from the site's root
  (``/intro/numpy/index.html``), which matches that path on any host (``grade_of``);
- a run: ``qid Q0 docno rank score tag`` a line, what a search returned, saved to compare later.

The figures, each over the first ``DEPTH`` (10) hits, as the search page shows them:
- **nDCG@10**: graded gain ``2^grade - 1``, discounted by ``log2(rank + 1)``, over the ideal
  ordering of the query's judgments;
- **MRR@10**, **success@1** and **@3**, **recall@10**: of the *answers*, the pages of grade 2
  (a page that only mentions the subject is not what the searcher wanted);
- each query's **first answer's rank** (None: not among the hits fetched).
A hit that was never judged counts as grade 0 (the judged sets are made by reading pages, not
from a pool of runs: say so when reading a low figure).

Two runs are compared query by query, with a paired randomization test (Fisher's, as Smucker,
Allan and Carterette recommend for IR: the sign of each query's difference flipped at random,
``TRIALS`` times, seeded): the two-sided p-value of the mean difference of each figure.
Nothing here knows Solr or Scrapy: commands/relevance.py runs the searches.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from w3lib.url import safe_url_string

from searchcrawl.content.language_detection import import_numpy

DEPTH = 10
ANSWER = 2  # the grade of a page that answers the query
GRADES = (0, 1, 2)
TRIALS = 10_000
ALL_KINDS = "all"  # the row of every query (no query's kind)
METRICS = ("ndcg@10", "mrr@10", "recall@10", "success@1", "success@3")
NONSENSE = "nonsense"  # the kind of a query no page answers: no judgments, it must find nothing


class JudgmentError(ValueError):
    """A query file, judgments or run that cannot be read; the message names the line."""


@dataclass(frozen=True)
class JudgedQuery:
    qid: str
    kind: str
    text: str


def read_queries(text: str, origin: str = "queries") -> list[JudgedQuery]:
    """The queries of a query file (see the module's docstring), in order; blank lines and
    lines starting with ``#`` are skipped."""
    queries: list[JudgedQuery] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.rstrip("\r\n").split("\t")
        if len(parts) == 2:
            qid, kind, query = parts[0], "", parts[1]
        elif len(parts) == 3:
            qid, kind, query = parts
        else:
            raise JudgmentError(f"{origin}:{number}: expected qid<TAB>kind<TAB>text, got {len(parts)} fields")
        qid, query, kind = qid.strip(), query.strip(), kind.strip()
        if not qid or not query:
            raise JudgmentError(f"{origin}:{number}: a query needs an id and a text")
        if kind == ALL_KINDS:
            raise JudgmentError(f"{origin}:{number}: {ALL_KINDS!r} is the row of every query, not a kind")
        if any(char.isspace() for char in qid):
            raise JudgmentError(f"{origin}:{number}: a query id has no space in it (a qrels line splits at spaces)")
        if qid in seen:
            raise JudgmentError(f"{origin}:{number}: query {qid} is given twice")
        seen.add(qid)
        queries.append(JudgedQuery(qid, kind, query))
    return queries


def read_qrels(text: str, origin: str = "judgments") -> dict[str, dict[str, int]]:
    """qid -> {docno: grade} of a TREC qrels file (grades 0-2; a docno judged twice keeps its
    higher grade)."""
    judged: dict[str, dict[str, int]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 4:
            raise JudgmentError(f"{origin}:{number}: expected 'qid 0 docno grade', got {len(parts)} fields")
        qid, _iteration, docno, grade_text = parts
        try:
            grade = int(grade_text)
        except ValueError:
            raise JudgmentError(f"{origin}:{number}: grade {grade_text!r} is not a number") from None
        if grade not in GRADES:
            raise JudgmentError(f"{origin}:{number}: grade {grade} is not one of 0, 1, 2")
        key = page_key(docno)
        grades = judged.setdefault(qid, {})
        grades[key] = max(grade, grades.get(key, 0))
    return judged


def page_key(docno_or_url: str) -> str:
    """What a judgment and a hit are matched by: a URL's host (lower-cased, port kept) with its
    path and query, or a path alone for a docno that is a path; ``/`` at the end read as
    ``/index.html`` (a site's folder page is served under both names). The scheme is left out;
    both sides percent-encoded alike (w3lib's ``safe_url_string``: a space, an accent, an IDN
    host written either way match)."""
    parts = urlsplit(safe_url_string(docno_or_url.strip()))
    path = parts.path or "/"
    if path.endswith("/"):
        path += "index.html"
    return parts.netloc.lower() + path + (f"?{parts.query}" if parts.query else "")


def judged_key(url: str, judged: Mapping[str, int]) -> str | None:
    """The judgment a hit matches: by its URL, else by its path alone (a judged set of paths
    follows a site to another host or port); None when not judged."""
    key = page_key(url)
    if key in judged:
        return key
    if not key.startswith("/"):
        path = key[key.find("/") :] if "/" in key else "/index.html"
        if path in judged:
            return path
    return None


def grade_of(url: str, judged: Mapping[str, int]) -> int | None:
    """A hit's grade (``judged_key``'s judgment), None when not judged."""
    key = judged_key(url, judged)
    return None if key is None else judged[key]


def write_run(ranked: Mapping[str, Sequence[str]], tag: str) -> str:
    """A TREC run of ``ranked`` (qid -> hit URLs in order), scores falling with the rank."""
    lines = []
    for qid, urls in ranked.items():
        for rank, url in enumerate(urls, 1):
            lines.append(f"{qid} Q0 {url} {rank} {len(urls) - rank + 1} {tag}")
    return "\n".join(lines) + ("\n" if lines else "")


def read_run(text: str, origin: str = "run") -> dict[str, list[str]]:
    """qid -> hit URLs in rank order of a TREC run."""
    rows: dict[str, list[tuple[int, str]]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 6:
            raise JudgmentError(f"{origin}:{number}: expected 'qid Q0 docno rank score tag', got {len(parts)} fields")
        try:
            rank = int(parts[3])
        except ValueError:
            raise JudgmentError(f"{origin}:{number}: rank {parts[3]!r} is not a number") from None
        rows.setdefault(parts[0], []).append((rank, parts[2]))
    return {qid: [url for _rank, url in sorted(hits)] for qid, hits in rows.items()}


# --- the figures ---------------------------------------------------------------------------------


def grades_of(hits: Sequence[str], judged: Mapping[str, int]) -> list[int]:
    """Each hit's grade (0 when not judged), a judgment counted once: a second hit matching it
    (the same page again, or one path on two hosts) gains nothing."""
    found, seen = [], set()
    for hit in hits:
        key = judged_key(hit, judged)
        found.append(0 if key is None or key in seen else judged[key])
        if key is not None:
            seen.add(key)
    return found


def _dcg(grades: Iterable[int]) -> float:
    return sum((2**grade - 1) / math.log2(rank + 1) for rank, grade in enumerate(grades, 1))


def ndcg(grades: Sequence[int], judged: Mapping[str, int], depth: int = DEPTH) -> float:
    ideal = _dcg(sorted(judged.values(), reverse=True)[:depth])
    return _dcg(grades[:depth]) / ideal if ideal else 0.0


def first_answer(grades: Sequence[int]) -> int | None:
    """The rank (from 1) of the first answer among ``grades``, or None."""
    return next((rank for rank, grade in enumerate(grades, 1) if grade >= ANSWER), None)


@dataclass
class QueryScore:
    query: JudgedQuery
    hits: list[str]
    first_answer: int | None
    figures: dict[str, float] = field(default_factory=dict)


def score(query: JudgedQuery, hits: Sequence[str], judged: Mapping[str, int]) -> QueryScore:
    """The figures of one query's hits (see the module's docstring)."""
    grades = grades_of(hits, judged)
    answers = sum(1 for grade in judged.values() if grade >= ANSWER)
    rank = first_answer(grades)
    top = grades[:DEPTH]
    figures = {
        "ndcg@10": ndcg(grades, judged),
        "mrr@10": 1 / rank if rank is not None and rank <= DEPTH else 0.0,
        "recall@10": sum(1 for grade in top if grade >= ANSWER) / answers if answers else 0.0,
        "success@1": 1.0 if rank == 1 else 0.0,
        "success@3": 1.0 if rank is not None and rank <= 3 else 0.0,
    }
    return QueryScore(query, list(hits), rank, figures)


def score_run(
    queries: Sequence[JudgedQuery], judgments: Mapping[str, Mapping[str, int]], ranked: Mapping[str, Sequence[str]]
) -> list[QueryScore]:
    """Every judged query's figures (a query without judgments is left out: it measures nothing;
    one the run lacks scores as no hits)."""
    return [score(query, ranked.get(query.qid, []), judgments[query.qid]) for query in queries if judgments.get(query.qid)]


def silence(queries: Sequence[JudgedQuery], ranked: Mapping[str, Sequence[str]]) -> float | None:
    """The share of the ``NONSENSE`` queries of ``queries`` that found nothing (qid -> hit URLs;
    one the run lacks found nothing), None when there are none: a search that answers whatever is
    asked scores 0."""
    nonsense = [query for query in queries if query.kind == NONSENSE]
    if not nonsense:
        return None
    return sum(1 for query in nonsense if not ranked.get(query.qid)) / len(nonsense)


def means(scores: Sequence[QueryScore]) -> dict[str, float]:
    return {metric: statistics.fmean(item.figures[metric] for item in scores) if scores else 0.0 for metric in METRICS}


def by_kind(scores: Sequence[QueryScore]) -> dict[str, list[QueryScore]]:
    """The scores of each kind of query, "all" first."""
    groups: dict[str, list[QueryScore]] = {ALL_KINDS: list(scores)}
    for item in scores:
        groups.setdefault(item.query.kind or "(none)", []).append(item)
    return groups


NO_SOURCE = "(no judged page found)"


def by_source(
    scores: Sequence[QueryScore], judgments: Mapping[str, Mapping[str, int]], hit_sources: Mapping[str, Sequence[str]]
) -> dict[str, list[QueryScore]]:
    """The scores grouped by the source of the first judged page (grade 1 or 2) among each
    query's hits (``hit_sources``: each hit's source, in order), sources in name order."""
    groups: dict[str, list[QueryScore]] = {}
    for item in scores:
        judged = judgments.get(item.query.qid, {})
        found = NO_SOURCE
        for url, source in zip(item.hits, hit_sources.get(item.query.qid, []), strict=False):
            if (grade_of(url, judged) or 0) > 0:
                found = source or NO_SOURCE
                break
        groups.setdefault(found, []).append(item)
    return dict(sorted(groups.items()))


# --- two runs compared ---------------------------------------------------------------------------


def randomization_p(differences: Sequence[float], trials: int = TRIALS, seed: int = 0) -> float:
    """Two-sided p-value of the mean of paired ``differences`` being 0: the share of random sign
    flips whose mean is at least as far from 0 (the observed arrangement counted, so never 0).
    The flips are one seeded matrix (numpy): 10,000 trials of 2,000 queries take milliseconds."""
    if not differences:
        return 1.0
    np = import_numpy()
    values = np.asarray(differences, dtype=float)
    signs = np.random.default_rng(seed).choice(np.array([-1.0, 1.0]), size=(trials, len(values)))
    as_far = int(np.count_nonzero(np.abs(signs @ values) >= abs(values.sum()) - 1e-12))
    return (as_far + 1) / (trials + 1)


@dataclass(frozen=True)
class Comparison:
    metric: str
    before: float
    after: float
    p: float
    better: int  # queries whose figure rose
    worse: int

    @property
    def change(self) -> float:
        return self.after - self.before


def compare(before: Sequence[QueryScore], after: Sequence[QueryScore], seed: int = 0) -> list[Comparison]:
    """Each figure's mean in both runs over the queries both scored, with the paired test."""
    earlier = {item.query.qid: item for item in before}
    pairs = [(earlier[item.query.qid], item) for item in after if item.query.qid in earlier]
    found = []
    for metric in METRICS:
        differences = [b.figures[metric] - a.figures[metric] for a, b in pairs]
        found.append(
            Comparison(
                metric,
                statistics.fmean(a.figures[metric] for a, _ in pairs) if pairs else 0.0,
                statistics.fmean(b.figures[metric] for _, b in pairs) if pairs else 0.0,
                randomization_p(differences, seed=seed),
                sum(1 for d in differences if d > 1e-12),
                sum(1 for d in differences if d < -1e-12),
            )
        )
    return found
