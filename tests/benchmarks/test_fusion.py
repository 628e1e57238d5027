"""The fusion benchmark's own logic (tests/benchmarks/fusion.py, extract_choice.py; issue 100
points 5 and 7): the leave-one-set-out folds, the passage-level words list, two runs' URLs matched,
and the passages an answer would gather."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from tests.benchmarks.extract_choice import sources
from tests.benchmarks.fusion import folds, passage_words, path_of


def test_every_set_is_left_out_once_and_a_held_out_set_is_never_chosen_on() -> None:
    found = folds(["nutch", "python-docs", "scipy-lectures", "scrapy-docs"])
    assert [out for out, _train in found] == ["nutch", "python-docs", "scipy-lectures", "scrapy-docs"]
    assert dict(found) == {
        "nutch": ["scipy-lectures", "scrapy-docs"],
        "python-docs": ["nutch", "scipy-lectures", "scrapy-docs"],
        "scipy-lectures": ["nutch", "scrapy-docs"],
        "scrapy-docs": ["nutch", "scipy-lectures"],
    }


def test_passage_words_orders_by_the_words_said_the_knn_order_on_a_tie() -> None:
    nearest = [
        ("a", "Crawl control code and tools."),
        ("b", "Duplicate pages are removed from the index by the deduplication job."),
        ("c", "Nothing of it here."),
        ("d", "Pages with duplicate content."),
    ]
    # "how do I" is scaffolding: a passage saying "how" says nothing of the question
    assert passage_words("how do I remove duplicate pages from the index", nearest) == ["b", "d"]


def test_two_runs_of_one_site_on_two_ports_share_their_paths() -> None:
    assert path_of("http://127.0.0.1:18983/intro/numpy.html") == path_of("http://127.0.0.1:40001/intro/numpy.html")
    assert path_of("http://127.0.0.1:18983/intro/") == "/intro/index.html"


def test_an_answer_gathers_passages_over_the_floor_and_the_threshold_within_its_budget() -> None:
    passage = "word " * 300  # 1,500 characters, cut to 1,200
    kept = SimpleNamespace(
        kept={
            "lists": {"m": {"q1": {"nearest": [[f"d{n}", 0.9 - n / 100, passage] for n in range(10)] + [["low", 0.5, "x"]]}}},
            "urls": {f"d{n}": f"http://h/{n}.html" for n in range(10)},
            "titles": {},
        }
    )
    found = sources(cast(Any, kept), "m", "q1", 0.85, {"d1"})
    # d0, d2..d5 over the floor (0.85), d1 withheld; 5 of 1,200 characters fit the 6,000 budget
    assert [source.document for source in found] == ["d0", "d2", "d3", "d4", "d5"]
    assert all(len(source.text) == 1200 for source in found)
