"""The mass-deletion guard's decision (searchcrawl/rules/maintenance.py), alone."""

from __future__ import annotations

from searchcrawl.rules.maintenance import deletion_guard


def test_deletions_above_the_share_are_refused_with_the_command_that_confirms_them() -> None:
    refusal = deletion_guard("handbook", 4, 10, 0.3, confirmed=False)
    assert refusal is not None and "refusing to delete 4 of 10 documents (40% > max_delete_share 30%)" in refusal
    # the hint names this source, ready to paste: no placeholder to fill in
    assert refusal.endswith("`scrapy crawl handbook -a delete=force`") and "<source>" not in refusal


def test_deletions_within_the_share_confirmed_or_of_an_empty_index_pass() -> None:
    assert deletion_guard("handbook", 3, 10, 0.3, confirmed=False) is None
    assert deletion_guard("handbook", 10, 10, 0.3, confirmed=True) is None
    assert deletion_guard("handbook", 0, 10, 0.0, confirmed=False) is None
    assert deletion_guard("handbook", 5, 0, 0.3, confirmed=False) is None
