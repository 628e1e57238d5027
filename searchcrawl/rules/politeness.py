"""Politeness as plain logic: the delay between requests to one site at a given moment, and the
pauses a site asks for (``Retry-After``).

The FAST seed lets the delay vary by time of day and day of week (gentle during office hours,
faster at night). A source lists ``[[delay_rules]]``; the first rule whose days and hours contain
the moment wins, otherwise the source's ``delay`` applies. Times are the crawler host's local time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Day = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
DAYS: tuple[Day, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
HOURS = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-4]):([0-5]\d)$")


def _minutes(hours: str) -> tuple[int, int]:
    match = HOURS.match(hours)
    if not match:
        raise ValueError(f"expected 'HH:MM-HH:MM' such as '08:00-18:00', got {hours!r}")
    start = int(match[1]) * 60 + int(match[2])
    end = int(match[3]) * 60 + int(match[4])
    if end > 24 * 60 or start == end:
        raise ValueError(f"expected a time range of some length within 00:00-24:00, got {hours!r}")
    return start, end


class DelayRule(BaseModel):
    """``[[delay_rules]] days = ["mon", "fri"] hours = "08:00-18:00" delay = 5.0``.

    ``hours`` may wrap past midnight ("22:00-06:00"); then the part after midnight belongs to the
    next day, so ``days = ["fri"]`` with "22:00-06:00" covers Friday night into Saturday morning.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    days: list[Day] = Field(default_factory=lambda: list(DAYS))
    hours: str = "00:00-24:00"
    delay: float = Field(ge=0)

    @field_validator("hours")
    @classmethod
    def _range(cls, value: str) -> str:
        _minutes(value)
        return value

    def applies(self, moment: datetime) -> bool:
        start, end = _minutes(self.hours)
        minute = moment.hour * 60 + moment.minute
        today = DAYS[moment.weekday()]
        if start < end:
            return today in self.days and start <= minute < end
        yesterday = DAYS[(moment.weekday() - 1) % 7]
        return (today in self.days and minute >= start) or (yesterday in self.days and minute < end)


def delay_at(moment: datetime, default: float, rules: Sequence[DelayRule]) -> float:
    """Seconds between two requests to one site at ``moment``: the first matching rule's delay."""
    for rule in rules:
        if rule.applies(moment):
            return rule.delay
    return default


def retry_after_seconds(value: str | bytes | None, now: datetime) -> float | None:
    """Seconds a ``Retry-After`` header asks us to wait (RFC 9110 §10.2.3: delay-seconds or an
    HTTP date; ``now`` is an aware UTC datetime); None when absent or unreadable."""
    if value is None:
        return None
    text = (value.decode("latin-1") if isinstance(value, bytes) else value).strip()
    if text.isascii() and text.isdigit():  # str.isdigit() alone holds for '\xb2' and '\u0663'
        return float(int(text[:12]))
    if not text.isascii():
        return None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


RETRY_AFTER_STATUSES = frozenset({429, 503})
"""The answers whose ``Retry-After`` asks the crawler to leave the whole site alone for a while."""


def asked_pause(status: int, retry_after: str | bytes | None, now: datetime, max_wait: float) -> float | None:
    """Seconds the site asks to be left alone by answering ``status`` with ``retry_after``, when the
    crawl holds that long (up to ``max_wait``: SEARCHCRAWL_RETRY_AFTER_MAX); None when it asks for
    nothing, or for longer (then the URL is left to the next crawl, and the site is not held)."""
    if status not in RETRY_AFTER_STATUSES:
        return None
    wait = retry_after_seconds(retry_after, now)
    if wait is None or wait <= 0 or wait > max_wait:
        return None
    return wait


class SitePauses:
    """Until when each site is left alone (``time.monotonic()``): a later pause asked of a site
    extends its pause, a shorter one never shortens it, and a pause over is forgotten."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}

    def pause(self, site: str, until: float) -> float:
        """Leave ``site`` alone until ``until`` at least; returns the end of its pause."""
        self._until[site] = max(self._until.get(site, until), until)
        return self._until[site]

    def active(self, now: float) -> dict[str, float]:
        """The pauses not over at ``now``: site -> until (``time.monotonic()``)."""
        return {site: until for site, until in self._until.items() if until > now}

    def remaining(self, site: str, now: float) -> float:
        """Seconds ``site`` is still left alone at ``now`` (0 when it is not paused)."""
        until = self._until.get(site)
        if until is None:
            return 0.0
        if until <= now:
            del self._until[site]  # a long crawl of many sites keeps no pause that is over
            return 0.0
        return until - now
