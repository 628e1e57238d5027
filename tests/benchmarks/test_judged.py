"""The judged-set benchmarks' own logic (tests/benchmarks/judged.py, fusion.py): the site a set
is crawled from, the sets a setting is chosen on, a set's figures with its nonsense queries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchcrawl.search.evaluation import NONSENSE
from tests.benchmarks.fusion import KeptSet
from tests.benchmarks.judged import HELD_OUT, judged_site, training
from tests.search.judged_packages import DOC_PACKAGES
from tests.search.test_judged_sets import built_deb


def test_a_documentation_package_set_is_crawled_from_its_deb(tmp_path: Path) -> None:
    html = DOC_PACKAGES["python-docs"].html
    deb = built_deb(tmp_path, "python3.11-doc", {f"{html}/index.html": "<p>", f"{html}/library/csv.html": "<p>"})
    other = built_deb(tmp_path, "python-scrapy-doc", {"usr/share/doc/python-scrapy-doc/html/index.html": "<p>"})
    source, site = judged_site("python-docs", [str(other), str(deb)], tmp_path / "site")
    assert source == DOC_PACKAGES["python-docs"].source and site.seed == "index.html"
    assert site.root == tmp_path / "site" / html and sorted(site.html_pages()) == ["index.html", "library/csv.html"]
    with pytest.raises(SystemExit, match="apt-get download python3.11-doc"):
        judged_site("python-docs", [str(other)], tmp_path / "again")
    with pytest.raises(SystemExit, match="no judged set"):
        judged_site("cooking", [], tmp_path / "none")


def test_a_held_out_set_is_scored_but_never_chosen_on() -> None:
    sets = {"scipy-lectures": 1, "nutch": 2, "scrapy-docs": 3, "python-docs": 4}
    assert "python-docs" in HELD_OUT
    assert training(sets, "nutch") == [1, 3]
    assert training(sets, "python-docs") == [1, 2, 3]


def test_a_sets_figures_leave_its_nonsense_queries_out_and_count_those_that_found_nothing(tmp_path: Path) -> None:
    (tmp_path / "python-docs.json").write_text(json.dumps({"lists": {}, "urls": {}}), encoding="utf-8")
    kept = KeptSet(tmp_path, "python-docs")
    nonsense = [query for query in kept.queries if query.kind == NONSENSE]
    assert nonsense and len(kept.judged) == len(kept.queries) - len(nonsense)
    ranked = {query.qid: [max(kept.judgments[query.qid], key=kept.judgments[query.qid].__getitem__)] for query in kept.judged}
    ranked.update({query.qid: [] if at % 2 else ["/library/csv.html"] for at, query in enumerate(nonsense)})
    figures = kept.figures(ranked)
    assert figures["success@3"] == 1.0  # every judged query's answer first: the nonsense ones count nothing
    assert figures["silent"] == pytest.approx(0.5)
    assert "silent" not in kept.figures(ranked, kept.judged[:3])  # a figure of the whole set only
