"""The per-page cost ledger's plain parts (tests/benchmarks/page_costs.py): the alternated order
of the codes and the round-by-round ratio."""

from __future__ import annotations

from pathlib import Path

from tests.benchmarks.page_costs import Code, order, round_ratios


def test_the_codes_alternate_round_by_round() -> None:
    old, new = Code("old", "4750b3c", Path("/old")), Code("new", "checkout", Path("/new"))
    assert [order([old, new], number) for number in range(3)] == [[old, new], [new, old], [old, new]]


def test_the_ratio_is_taken_within_each_round() -> None:
    old = [{"cpu_s_per_1000_pages": value} for value in (8.0, 6.0)]
    new = [{"cpu_s_per_1000_pages": value} for value in (7.6, 6.6)]
    assert [round(each, 3) for each in round_ratios(old, new)] == [0.95, 1.1]
