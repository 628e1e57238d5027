"""Judgments from clicks (search/click_judgments.py): skips above a click, dwell, the last click,
grades pooled per query; read from the analytics store's searches (SQLite) as the command does."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from searchcrawl.search.click_judgments import judged_from_clicks, labels, next_actions, qrels_text, queries_text
from searchcrawl.search.evaluation import read_qrels, read_queries
from searchcrawl.store import Database
from searchcrawl.store.searches import Impression, Period, Searches, shown_json

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
SHOWN = [f"http://h/p{n}.html" for n in range(1, 6)]


def impression(clicks: list[tuple[int, float]], user: str | None = None, at: datetime = T0, query: str = "tide") -> Impression:
    """A first page of SHOWN, clicked at ``(rank, seconds after the search)``."""
    return Impression(
        query, query, at, user, 1, SHOWN, [(rank, SHOWN[rank - 1], at + timedelta(seconds=s)) for rank, s in clicks]
    )


def test_skips_above_a_click_short_and_long_dwell_and_the_last_click() -> None:
    # rank 2 opened for 5 s, then rank 4 opened and nothing after it: 1 and 3 skipped, 5 unseen
    found = {url: label for url, label in labels(impression([(2, 3), (4, 8)]), None).values()}
    assert found == {SHOWN[0]: 0, SHOWN[1]: 1, SHOWN[2]: 0, SHOWN[3]: 2}
    # the same, but the searcher searched again 10 s after the last click: it was no answer either
    assert labels(impression([(2, 3), (4, 8)]), T0 + timedelta(seconds=18))["h/p4.html"] == (SHOWN[3], 1)
    # a click kept for a minute before the next one answered
    assert labels(impression([(1, 1), (3, 61)]), None)["h/p1.html"] == (SHOWN[0], 2)
    # a next search before the click (another tab): its dwell is unknown, not negative
    assert labels(impression([(1, 5)]), T0)["h/p1.html"] == (SHOWN[0], 2)


def test_a_hit_without_a_url_says_nothing_and_a_page_shown_twice_counts_once() -> None:
    shown = ["", "http://h/a.html", "http://h/a.html#top", "http://h/b.html"]
    item = Impression("q", "q", T0, None, 1, shown, [(4, "http://h/b.html", T0), (1, "", T0)])
    assert labels(item, None) == {"h/a.html": ("http://h/a.html", 0), "h/b.html": ("http://h/b.html", 2)}


def test_a_users_next_search_ends_the_dwell_within_a_session_only() -> None:
    first = impression([(1, 2)], user="alice")
    soon = impression([(2, 1)], user="alice", at=T0 + timedelta(seconds=20))
    much_later = impression([(2, 1)], user="alice", at=T0 + timedelta(hours=2))
    anonymous = impression([(1, 2)])
    assert next_actions([first, soon, much_later, anonymous]) == [soon.at, None, None, None]


def test_grades_are_pooled_per_query_and_kept_with_enough_evidence() -> None:
    searches = [impression([(2, 3)]) for _ in range(3)]  # rank 1 skipped three times, rank 2 the last click
    searches.append(impression([(1, 3)]))  # and once rank 1 opened: (0+0+0+2)/4 rounds up to 1
    searches += [impression([(1, 1)], query="rare")] * 2  # under min_searches
    found = judged_from_clicks(searches, min_searches=3, min_impressions=2)
    assert [(query.qid, query.kind, query.text) for query in found.queries] == [("c001", "clicks", "tide")]
    assert found.judgments == {"c001": {SHOWN[0]: 1, SHOWN[1]: 2}}
    assert found.impressions == 6
    # written in the judged sets' format, read back as the command reads them
    assert read_queries(queries_text(found.queries))[0].text == "tide"
    assert read_qrels(qrels_text(found.judgments)) == {"c001": {"h/p1.html": 1, "h/p2.html": 2}}


def test_the_store_gives_first_pages_with_their_clicks_and_what_they_showed(tmp_path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'searches.sqlite3'}")
    store = Searches(database)
    row = {"query": "Tide", "normalized": "tide", "filters": "[]", "sort": "", "hits": 9, "took_ms": 3, "client": "web"}
    store.write(
        [
            {**row, "id": "a", "at": T0, "page": 1, "user_name": "alice", "shown": shown_json(1, SHOWN)},
            {**row, "id": "b", "at": T0 + timedelta(seconds=30), "page": 2, "user_name": "alice", "shown": shown_json(11, SHOWN)},
            {**row, "id": "c", "at": T0 + timedelta(seconds=40), "page": 1, "user_name": None},  # logged before shown was kept
        ],
        [
            {"search_id": "a", "position": 3, "url": SHOWN[2], "at": T0 + timedelta(seconds=5)},
            {"search_id": "c", "position": 1, "url": SHOWN[0], "at": T0 + timedelta(seconds=41)},
        ],
    )
    found = store.impressions(Period(T0 - timedelta(days=1), T0 + timedelta(days=1)))
    database.close()
    assert [(item.query, item.user, item.first, item.shown, [c[:2] for c in item.clicks]) for item in found] == [
        ("Tide", "alice", 1, SHOWN, [(3, SHOWN[2])]),
        ("Tide", None, 1, [], [(1, SHOWN[0])]),
    ]
    assert found[0].at == T0 and found[0].clicks[0][2] == T0 + timedelta(seconds=5)


def test_what_a_page_showed_is_bounded() -> None:
    kept = shown_json(1, ["http://h/" + "x" * 8000] * 20)
    assert len(kept) <= 16 * 1024 and kept.count("http://h/") == 2
    assert json.loads(shown_json(3, [f"http://h/{n}" for n in range(80)]))["urls"][-1] == "http://h/49"
