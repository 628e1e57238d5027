"""The judged query sets of tests/search/judged/ (their README says how they were made): each
reads as `scrapy relevance` reads it, has at least 50 queries of the four kinds, every query an
answer (a grade-2 page), and every judged page is an HTML page of its corpus, never a navigation
page or a copy."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest

from searchcrawl.search.evaluation import ANSWER, read_qrels, read_queries
from tests.conftest import CORPORA

JUDGED = Path(__file__).parent / "judged"
# set: (archive, its top folder)
SETS = {
    "scipy-lectures": ("scipy-lectures-site.tar.xz", "scipy-lectures.github.com"),
    "nutch": ("nutch-site.tar.xz", "nutch-site"),
}
KINDS = {"keyword", "question", "navigational", "error"}
NEVER_JUDGED = re.compile(r"/_sources/|/class-use/|/allclasses|/index-all\.html|-tree\.html|/package-use\.html")


# set: (its queries at least, of each kind at least)
SIZES = {"scipy-lectures": (50, 12), "nutch": (50, 12), "scrapy-docs": (24, 5)}  # scrapy-docs: issue 93's held-out set


@pytest.mark.parametrize("name", sorted(SIZES))
def test_a_judged_set_is_complete(name: str) -> None:
    queries = read_queries((JUDGED / name / "queries.tsv").read_text(encoding="utf-8"), name)
    judgments = read_qrels((JUDGED / name / "qrels.txt").read_text(encoding="utf-8"), name)
    least, least_of_a_kind = SIZES[name]
    assert len(queries) >= least
    assert {query.kind for query in queries} == KINDS
    assert all(sum(1 for query in queries if query.kind == kind) >= least_of_a_kind for kind in KINDS)
    assert set(judgments) == {query.qid for query in queries}
    assert all(any(grade >= ANSWER for grade in judgments[query.qid].values()) for query in queries)
    assert not [page for grades in judgments.values() for page in grades if NEVER_JUDGED.search(page)]


@pytest.mark.parametrize("name", sorted(SETS))
def test_every_judged_page_is_a_page_of_its_corpus(name: str) -> None:
    archive, top = SETS[name]
    if not (CORPORA / archive).exists():
        pytest.skip(f"{CORPORA / archive} is absent (the shared corpora are not on this machine)")
    with tarfile.open(CORPORA / archive) as tar:
        pages = {member.name.removeprefix(top) for member in tar.getmembers() if member.name.endswith(".html")}
    judgments = read_qrels((JUDGED / name / "qrels.txt").read_text(encoding="utf-8"), name)
    assert {page for grades in judgments.values() for page in grades} <= pages
