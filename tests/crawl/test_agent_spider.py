"""The agent spider's plain parts: which of an agent's fields the crawl takes, a listing batch's
bounds, a reference as request data."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from searchcrawl.agents.base import Content, Reference
from searchcrawl.crawl.agent_spider import _take, given_fields, reference_data


def test_an_agent_may_not_set_the_identity_or_what_the_crawl_computes() -> None:
    reference = Reference(
        "k",
        fields={
            "title": "T",
            "size_l": 3,
            "tags_ss": ["a", "b"],
            "last_modified": datetime(2026, 1, 2, tzinfo=UTC),
            "url": "https://evil.example/x",
            "source": "other-source",
            "id": "x",
            "_version_": 1,
            "checksum": "c",
            "content": "injected",
            "nested_s": {"set": "atomic update"},
            "display_url": "javascript:alert(1)",
        },
    )
    assert given_fields(reference) == {"title": "T", "size_l": 3, "tags_ss": ["a", "b"], "last_modified": "2026-01-02T00:00:00Z"}
    assert given_fields(Reference("k", fields={"display_url": "https://dms.example/d/1"})) == {
        "display_url": "https://dms.example/d/1"
    }


def test_an_agents_number_beyond_its_fields_int_or_long_is_left_out(caplog) -> None:
    """Issue 53: an int attribute of 99999999999 was sent to Solr, which stored it wrapped
    (1215752191). A number beyond Solr's int (32 bits) or long (64 bits) is left out, with a
    DEBUG line; one in range, a list in range and a double are kept."""
    reference = Reference(
        "k",
        fields={
            "big_i": 99999999999,
            "edge_i": 2**31 - 1,
            "low_i": -(2**31),
            "under_i": -(2**31) - 1,
            "big_l": 99999999999,
            "huge_l": 2**63,
            "many_i": [1, 2**40],
            "few_i": [1, 2],
            "ratio_d": 1e300,
        },
    )
    with caplog.at_level("DEBUG", logger="searchcrawl.crawl.agent_spider"):
        fields = given_fields(reference)
    assert fields == {"edge_i": 2**31 - 1, "low_i": -(2**31), "big_l": 99999999999, "few_i": [1, 2], "ratio_d": 1e300}
    assert "Field 'big_i' of k left out: 99999999999 is beyond Solr's int" in caplog.text


def test_a_listing_batch_is_bounded_in_count_and_in_bytes() -> None:
    big = [Reference(str(n), content=Content(b"x" * 1000, "text/plain")) for n in range(100)]
    iterator = iter(big)
    assert len(_take(iterator, 500, 10_000)) == 10  # cut short by the byte budget
    assert len(_take(iterator, 5, 10**9)) == 5  # and by the count
    assert len(_take(iter([]), 5, 10)) == 0


def test_a_references_time_is_kept_in_utc_and_large_content_is_left_to_fetch() -> None:
    moment = datetime(2026, 3, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    data = reference_data(Reference("k", token="t", modified=moment, content=Content(b"y" * 20, "text/plain")), inline_bytes=10)
    assert data["modified"] == "2026-03-01T10:00:00+00:00" and "content" not in data
    naive = reference_data(Reference("k", modified=datetime(2026, 3, 1, 12, 0)), inline_bytes=10)
    assert naive["modified"] == "2026-03-01T12:00:00+00:00"


def test_a_change_token_never_injects_a_header() -> None:
    from searchcrawl.crawl.handlers.agent import header_token

    assert header_token("1234:5678") == "1234:5678"
    assert header_token("a\r\nSet-Cookie: x=1").startswith("sha256:")
    assert header_token("é" * 3).startswith("sha256:") and header_token(None) is None
