"""Has an indexed document changed? The source's ``modified_when`` signals (searchcrawl/rules/maintenance.py)."""

from __future__ import annotations

from searchcrawl.rules.maintenance import has_changed

DATE, OTHER_DATE = "Sat, 21 Nov 2026 10:00:00 GMT", "Sun, 22 Nov 2026 10:00:00 GMT"
ALL = ("date", "etag", "checksum")


def test_any_signal_that_differs_is_a_change() -> None:
    previous = {"checksum": "c1", "last_modified": DATE, "etag": '"e1"'}
    assert has_changed(previous, DATE, '"e1"', "c1", ALL) == (False, "same checksum and date and etag")
    assert has_changed(previous, OTHER_DATE, '"e1"', "c1", ALL) == (True, "Last-Modified")
    assert has_changed(previous, DATE, '"e2"', "c2", ALL) == (True, "ETag, checksum")
    assert has_changed(previous, DATE, '"e1"', "c2", ("date", "etag")) == (False, "same date and etag")


def test_a_validator_the_server_starts_or_stops_sending_is_a_change() -> None:
    assert has_changed({"checksum": "c", "last_modified": None, "etag": None}, DATE, None, "c", ALL)[0]
    assert has_changed({"checksum": "c", "last_modified": DATE, "etag": None}, None, None, "c", ALL)[0]
    assert not has_changed({"checksum": "c", "last_modified": None, "etag": None}, None, None, "c", ALL)[0]
