"""The crawl's run as a value, and what a crawl is asked to be.

A crawl's components learn of its run once the frontier scheduler has started (or resumed, or
joined) it: the scheduler sends ``run_started(run, frontier)`` (crawl/signals.py) with a ``Run``,
which never changes after, and the run's ``Frontier`` (the store handle of what the run fetches).
A component that needs the run keeps what it receives; one that received nothing knows this
process took no run (a crawl of several processes that came up after its run ended, a conflict
with a running crawl, or a read-only crawl such as `scrapy explain`), and crawls nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scrapy.exceptions import IgnoreRequest
from scrapy.statscollectors import StatsCollector
from scrapy.utils.python import global_object_name

from searchcrawl.crawl.exceptions import SessionHeld, TransportFailed
from searchcrawl.rules.status_codes import status_class
from searchcrawl.store.models import FrontierState

# entries the agent's listing passed over, as no document can be made of them (a database row
# without a key, a second row of a key): the run's counters and report say how many
SKIPPED_STAT = "searchcrawl/skipped"
ANCHORS_STAT = "searchcrawl/anchors_set"  # documents whose anchor field a push set in place (index/push.py set_anchors)
_YES = ("1", "true", "yes", "force")

# The close reason of a crawl that handed SEARCHCRAWL_MAX_REQUESTS requests over (frontier_scheduler.py)
MAX_REQUESTS_REASON = "max_requests"
# Close reasons of a crawl that ended as asked: its end, a suspend or stop (scrapy control, Ctrl-C,
# SIGTERM), or a limit the user set (Scrapy's CloseSpider extension, SEARCHCRAWL_MAX_REQUESTS).
REQUESTED_ENDS = frozenset(
    {
        "finished",
        "suspended",
        "stopped",
        "shutdown",
        "closespider_timeout",
        "closespider_timeout_no_item",
        "closespider_itemcount",
        "closespider_pagecount",
        MAX_REQUESTS_REASON,
    }
)


@dataclass(frozen=True)
class CrawlArguments:
    """The crawl's spider arguments (`scrapy crawl <source> -a name=value`)."""

    forced: bool = False  # -a recrawl=force: validators and checksums ignored
    test_mode: bool = False  # -a test_mode=1: report only, nothing sent to Solr, index state untouched
    force_delete: bool = False  # -a delete=force: confirm deletions beyond max_delete_share

    @classmethod
    def of(cls, arguments: dict[str, Any]) -> CrawlArguments:
        return cls(
            forced=str(arguments.get("recrawl", "")).lower() == "force",
            test_mode=str(arguments.get("test_mode", "")).lower() in _YES,
            force_delete=str(arguments.get("delete", "")).lower() == "force",
        )


@dataclass(frozen=True)
class Run:
    """One run of a source, as this process works on it (decided when it starts: crawl/run_start.py).

    ``mode``: initial, maintenance, forced or test. ``forced``: validators and checksums are
    ignored (asked for, the settings changed, or Solr's documents were taken over). ``resumed``:
    an earlier session's run goes on; ``joined``: other live processes work on it too (what an
    earlier crawl left pending was the run's first process's to push, and what is pending now may
    be theirs). ``shared``: several processes may work on it (SEARCHCRAWL_SHARED_CRAWL, processes).
    ``owner``: this process in the run (its scheduler's name for it)."""

    id: int
    source: str
    mode: str
    started: datetime
    resumed: bool = False
    joined: bool = False
    forced: bool = False
    test_mode: bool = False
    force_delete: bool = False
    shared: bool = False
    owner: str = ""  # this process in the run's leases and node rows (``process_owner``)
    # this process makes the run's maintenance plan, while the crawl goes on (run_start.plan_run)
    plan_pending: bool = False

    def leaving(self) -> str:
        """What a log line says of documents that leave the index: a test-mode crawl changes
        nothing there (its delta report says what a crawl would delete)."""
        return "they would leave the index (test mode: the index is not touched)" if self.test_mode else "they leave the index"


FAILURE_CLASSES = ("4xx", "5xx")  # the response classes a run's failures count
FAILURE_STATS = {  # issue 60: the source page's chart of failures by kind, from the crawl's stats
    "network": ("downloader/exception_count",),
    "login refused": ("searchcrawl/auth_refused",),
    "Solr refused": ("searchcrawl/solr_refused",),
}
EXCEPTION_TYPE_STAT = "downloader/exception_type_count/"
# What a downloader middleware raises to keep a request from the network on purpose: Scrapy's
# DownloaderStats counts it among the download exceptions all the same (issue 91: a crawl with no
# network error showed "network 77", its requests held while a form login ran). A refusal by a
# rule (IgnoreRequest, RequestRefused, Unsent) or a request held for a login is no network failure;
# a request the source's TLS or proxy cannot carry (TransportFailed, a RequestRefused) is one.
HELD_BACK: tuple[type[BaseException], ...] = (IgnoreRequest, SessionHeld)
NOT_HELD_BACK: tuple[type[BaseException], ...] = (TransportFailed,)


def held_back_names() -> frozenset[str]:
    """The names Scrapy's stats give the exceptions of HELD_BACK and of their subclasses, but
    those of NOT_HELD_BACK and theirs."""
    found: set[str] = set()
    kinds = list(HELD_BACK)
    while kinds:
        kind = kinds.pop()
        if issubclass(kind, NOT_HELD_BACK):
            continue
        found.add(global_object_name(kind))
        kinds.extend(kind.__subclasses__())
    return frozenset(found)


def network_failures(stats: Mapping[str, Any]) -> int:
    """The download exceptions of the stats that are failures of the network (no response): all
    of them (``downloader/exception_count``) but those a middleware raised on purpose (HELD_BACK)."""
    held = held_back_names()
    kept_back = sum(
        value
        for key, value in stats.items()
        if key.startswith(EXCEPTION_TYPE_STAT) and key.removeprefix(EXCEPTION_TYPE_STAT) in held and isinstance(value, int)
    )
    return max(0, int(stats.get("downloader/exception_count") or 0) - kept_back)


def failure_counts(stats: Mapping[str, Any]) -> dict[str, int]:
    """The run's failed fetches by kind (those not 0): responses by status class (4xx, 5xx:
    each retry counted), network errors (no response), refused logins, documents Solr refused."""
    counts: dict[str, int] = {}
    for key, value in stats.items():
        code = key.removeprefix("downloader/response_status_count/")
        if code != key and code.isdigit() and isinstance(value, int):
            label = status_class(int(code), own=False)  # the metrics' classes (rules/status_codes.py)
            if label in FAILURE_CLASSES:
                counts[label] = counts.get(label, 0) + value
    for kind, keys in FAILURE_STATS.items():
        value = network_failures(stats) if kind == "network" else sum(stats.get(key) or 0 for key in keys)
        if isinstance(value, int) and value:
            counts[kind] = value
    return {kind: count for kind, count in sorted(counts.items()) if count}


def run_counters(stats: StatsCollector, frontier: Mapping[FrontierState, int] | None) -> dict[str, Any]:
    """The run's counters, as kept in the runs table and shown by `scrapy status`: the stats'
    and ``frontier``, the run's frontier counted by state (``Frontier.counts``)."""
    counters: dict[str, Any] = {
        "pages": stats.get_value("response_received_count", 0),
        "cached": stats.get_value("searchcrawl/cached", 0),
        "indexed": stats.get_value("searchcrawl/indexed", 0),
        "removed": stats.get_value("searchcrawl/removed", 0),
        "excluded": sum(v for k, v in stats.get_stats().items() if k.startswith("searchcrawl/excluded/")),
    }
    if stats.get_value(SKIPPED_STAT):
        counters["skipped"] = stats.get_value(SKIPPED_STAT)
    if stats.get_value(ANCHORS_STAT):  # Solr updates apart from the documents indexed (counted as adds by Solr)
        counters["anchors"] = stats.get_value(ANCHORS_STAT)
    if failures := failure_counts(stats.get_stats()):
        counters["failures"] = failures
    if frontier is not None:
        counters.update({state.value: number for state, number in frontier.items()})  # JSON
    return counters
