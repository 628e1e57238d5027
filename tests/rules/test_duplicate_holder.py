"""Which copy of a content the index keeps (searchcrawl/rules/maintenance.py ``holder_of``): the
one another copy names canonical, else one naming itself, else the first discovered, decided over
the whole group, so that the order the copies are fetched in never matters."""

from __future__ import annotations

import random
from itertools import permutations
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from searchcrawl.rules.maintenance import holder_of, named_canonical, original_of


def copy(name: str, row_id: int, canonical: str | None = None) -> dict[str, Any]:
    return {"id": row_id, "url": f"http://h/{name}", "canonical_url": f"http://h/{canonical}" if canonical else None}


def test_a_copy_another_names_canonical_holds_whatever_order_the_copies_come_in() -> None:
    """Issue 53, item 26: C (discovered first) names A canonical, B was discovered before A. Two at
    a time the rule went round in a circle, and each copy fetched replaced the holder in turn:
    both A and B ended in the index."""
    c, b, a = copy("c", 1, canonical="a"), copy("b", 2), copy("a", 3)
    assert original_of(a, c) is a and original_of(c, b) is c and original_of(b, a) is b  # the circle
    for order in permutations((a, b, c)):
        assert holder_of(order) is a
    assert holder_of((a, b)) is b  # once C moved away: the copy discovered first


def test_named_canonical_counts_only_copies_of_the_group() -> None:
    a, b = copy("a", 1, canonical="elsewhere"), copy("b", 2, canonical="b")
    assert named_canonical((a, b)) == set()  # another page, or itself, is no copy named by another
    assert holder_of((a, b)) is b  # naming itself canonical
    assert named_canonical((a, copy("c", 3, canonical="a"))) == {"http://h/a"}


@st.composite
def groups(draw: st.DrawFn) -> list[dict[str, Any]]:
    names = draw(st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=7, unique=True))
    ids = draw(st.permutations(list(range(1, len(names) + 1))))
    targets = st.one_of(st.none(), st.sampled_from([*names, "elsewhere"]))
    return [copy(name, row_id, draw(targets)) for name, row_id in zip(names, ids, strict=True)]


@given(groups(), st.randoms(use_true_random=False))
def test_the_holder_is_the_same_in_any_order_and_a_named_copy_when_there_is_one(
    group: list[dict[str, Any]], rng: random.Random
) -> None:
    holder = holder_of(group)
    shuffled = list(group)
    rng.shuffle(shuffled)
    assert holder_of(shuffled) is holder and holder_of(reversed(group)) is holder
    named = named_canonical(group)
    assert not named or holder["url"] in named
    # every copy's arrival, compared with the rest of the group, keeps the same holder
    for member in group:
        assert holder_of([member, *(other for other in group if other is not member)]) is holder
