"""Query analytics (issue 59): every search logged, and which hit was opened, without ever
slowing or breaking a search.

What is logged, per search page asked for (the search page's and the JSON API's): when, the
query as typed, its normalized form (store/searches.py's ``normalize``), the filters chosen, the
sort, the page, the hit count, the time taken in milliseconds and the client kind (web or api);
the searcher's user name only when SEARCHCRAWL_WEB_LOG_USERS is on (off by default: the
administrators see what is searched, not who searches). Per hit opened: the search, the hit's
rank (1 is the first hit of the first page) and its URL. Nothing is logged when
SEARCHCRAWL_WEB_ANALYTICS_DAYS is 0; otherwise rows older than that many days are purged.

The searcher never waits for the database: ``Analytics.record`` and ``click`` put a record on a
bounded queue and return. One thread (the writer) takes the records off in batches and writes
them; when the queue is full (the database slow or gone), a record is dropped and counted, and
the count is logged at WARNING at most once a minute; a database error is caught and counted
the same way, and the writer goes on with the next batch. The writer (started by the application's
lifespan, not when the application is built) also purges old rows, at its start and every hour
(store/searches.py: a chunk a transaction), and reads the most frequent past queries that found documents
(COMPLETION_QUERIES of them) every COMPLETIONS_EVERY seconds: ``completions`` answers from
them in memory, at every key a searcher types, without asking the database.

A search's id is made here (a random 128-bit token), so the result page's links can name their
search before its row is written. Hit links go through ``/click`` (``ClickSigner``): the
application records the click and redirects (303) to the hit's URL, with no JavaScript. The link
is signed (HMAC-SHA256 over the search id, the rank, the URL and the time the link was made)
with a key the application holds, so ``/click`` redirects only to a URL a result page of this
application showed, never to one a third party put in a link (no open redirect), and only to
the schemes a hit's link may have (relevance.URL_SCHEMES, as results.display_url). A signed
link always redirects, however old; its click is counted only while the link is fresh (a day)
and once per search and rank (``Analytics.counts``): a link replayed, or put in another site's
page as an image, inflates no click-through and fills no queue. The key is random per process unless
SEARCHCRAWL_WEB_CLICK_KEY_FILE names a file holding one (several processes behind one address,
or links that outlive a restart, need the same key): a link signed by another key is refused
with a page saying the link has expired, and no redirect.
"""

from __future__ import annotations

import base64
import bisect
import csv
import hashlib
import heapq
import hmac
import io
import logging
import queue
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from sqlalchemy.exc import OperationalError

from searchcrawl.rules.ranking_rules import URL_SCHEMES, printable
from searchcrawl.search.request import day
from searchcrawl.store.database import now
from searchcrawl.store.searches import (
    MAX_COMPLETIONS,
    MAX_PREFIX_CHARS,
    MAX_QUERY_CHARS,
    MAX_URL_CHARS,
    Period,
    Searches,
    filters_json,
    normalize,
    shown_json,
)

logger = logging.getLogger(__name__)

QUEUE_SIZE = 5000  # records waiting for the writer (each a few KB at most: bounded memory)
BATCH = 500  # records written in one transaction
PURGE_EVERY = 3600.0  # seconds between purges of rows past the retention
WARN_EVERY = 60.0  # seconds: drops and errors are logged at most this often
MAX_POSITION = 100_000  # beyond any rank a result page shows (request.MAX_PAGE x rows)
CLIENTS = ("web", "api")
CLICK_FRESH = 86_400  # seconds: a click link's click counted this long after its result page
CLOCK_SKEW = 300  # seconds: a link made by another process (a shared key) whose clock is ahead
CLICKS_REMEMBERED = 100_000  # (search, rank) counted: a replayed link's click is counted once
SEARCH_ID = re.compile(r"[0-9a-f]{32}")
# the completions from past queries: the most frequent ones that found documents, kept in memory
# and read again by the writer this often (a completion is asked at every key a searcher types)
COMPLETION_QUERIES = 10_000
COMPLETIONS_EVERY = 300.0


def new_search_id() -> str:
    """A search's id: 128 random bits in hex, known before its row is written."""
    return secrets.token_hex(16)


def click_key(path: str = "") -> bytes:
    """The key signing click links: the bytes the file ``path`` holds, all of them as they are (at
    least 32, e.g. from ``head -c 32 /dev/urandom``: random bytes, so nothing is stripped, not
    even a final new line), or a random one for this process."""
    if not path:
        return secrets.token_bytes(32)
    key = Path(path).read_bytes()
    if len(key) < 32:
        raise ValueError(f"SEARCHCRAWL_WEB_CLICK_KEY_FILE: {path} holds {len(key)} bytes, fewer than 32")
    return key


@dataclass(frozen=True)
class Click:
    search_id: str
    position: int
    url: str
    issued: int = 0  # when its link was made (Unix seconds, signed with it)


class ClickSigner:
    """Signs and checks click links: (search id, rank, URL) under the application's key."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def signature(self, search_id: str, position: int, url: str, issued: int) -> str:
        message = f"{search_id}\n{position}\n{url}\n{issued}".encode()
        digest = hmac.new(self._key, message, hashlib.sha256).digest()[:16]
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def query(self, search_id: str, position: int, url: str, issued: int | None = None) -> str:
        """The query string of the click link of a hit, made at ``issued`` (Unix seconds; now)."""
        issued = int(time.time()) if issued is None else issued
        signature = self.signature(search_id, position, url, issued)
        return urlencode({"s": search_id, "p": position, "u": url, "t": issued, "k": signature})

    def check(self, params: Any) -> Click | None:
        """The click a link's parameters (``s``, ``p``, ``u``, ``t``, ``k``) name, or None when
        they are not a link this key signed, or its URL's scheme is not a hit link's. A link
        signed is valid however old (it is ours): whether its click is counted is
        ``Analytics.counts``'s decision."""
        search_id, position, url, issued, signature = (str(params.get(name, "")) for name in ("s", "p", "u", "t", "k"))
        if (
            not SEARCH_ID.fullmatch(search_id)
            or not (position.isascii() and position.isdigit())
            or len(position) > 6
            or not (issued.isascii() and issued.isdigit())
            or len(issued) > 12
            or not url
            or len(url) > MAX_URL_CHARS
        ):
            return None
        if not 1 <= int(position) <= MAX_POSITION or urlsplit(url).scheme.lower() not in URL_SCHEMES:
            return None
        expected = self.signature(search_id, int(position), url, int(issued))
        if not hmac.compare_digest(expected.encode(), signature.encode()):
            return None
        return Click(search_id, int(position), url, int(issued))


class Analytics:
    """The searches and clicks to log, and the thread that writes them (``store`` gives the
    store; it is called in the writer's thread, so opening the database never blocks a search).
    ``days`` 0: nothing is logged, and no thread is started."""

    def __init__(
        self,
        store: Callable[[], Searches],
        days: int,
        log_users: bool = False,
        key: bytes | None = None,
        queue_size: int = QUEUE_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.days = max(int(days), 0)
        self.log_users = log_users
        self.signer = ClickSigner(key or secrets.token_bytes(32))
        self._store = store
        self._queue: queue.Queue[tuple[str, dict[str, Any]] | None] = queue.Queue(maxsize=queue_size)
        self._clock = clock
        self._lock = threading.Lock()
        self.dropped = 0  # records dropped (queue full) or lost (a database error), since the start
        self.written = 0
        self._unreported = 0
        self._warned_at: float | None = None
        self._thread: threading.Thread | None = None
        self._opened: OrderedDict[tuple[str, int], None] = OrderedDict()  # clicks counted: Analytics.counts
        # (sorted queries, their counts): the completions' source, replaced whole by the writer
        self._frequent: tuple[list[str], list[int]] = ([], [])

    @property
    def enabled(self) -> bool:
        return self.days > 0

    def start(self) -> None:
        if self.enabled and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="searchcrawl-analytics", daemon=True)
            self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        """Writes what is queued (within ``timeout``) and stops the writer."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        thread.join(timeout)

    # --- what the searcher's request does: no waiting ------------------------------------------

    def record(
        self,
        query: str,
        filters: Iterable[tuple[str, str]] = (),
        sort: str = "",
        page: int = 1,
        hits: int = 0,
        took_ms: float = 0,
        client: str = "web",
        user: str | None = None,
        search_id: str | None = None,
        shown: tuple[int, Sequence[str]] = (1, ()),
    ) -> str:
        """Logs a search (a page of results found) and returns its id (``search_id`` when given,
        else a new one), whether it was logged or not. ``shown``: the rank of the page's first
        hit, and the hits' URLs in order (what its clicks skipped, search/click_judgments.py).
        Never raises, never waits."""
        search_id = search_id or new_search_id()
        if not self.enabled:
            return search_id
        try:
            row = {
                "id": search_id,
                "at": now(),
                "query": printable(query[:MAX_QUERY_CHARS]),
                "normalized": normalize(query),
                "filters": filters_json(filters),
                "sort": printable((sort or "")[:20]),
                "page": max(int(page), 1),
                "hits": max(int(hits), 0),
                "took_ms": max(int(round(took_ms)), 0),
                "client": client if client in CLIENTS else "web",
                "user_name": (user or None) and printable(str(user)[:256]) if self.log_users else None,
                "shown": shown_json(*shown),
            }
        except (TypeError, ValueError) as exc:  # a caller's mistake must not break its search
            logger.warning("Query analytics: a search not logged: %s", exc)
            return search_id
        self._put("search", row)
        return search_id

    def counts(self, click: Click, moment: float | None = None) -> bool:
        """Whether a click (its link checked by ``signer``) is counted: only when its link was
        made within CLICK_FRESH seconds (``moment``: Unix seconds, now) and its (search, rank)
        was not counted already by this process (the last CLICKS_REMEMBERED remembered), so a
        link kept, replayed or put in another page as an image does not inflate the
        click-through nor fill the writer's queue. The redirect is made whatever this says."""
        moment = time.time() if moment is None else moment
        if not -CLOCK_SKEW <= moment - click.issued <= CLICK_FRESH:
            return False
        opened = (click.search_id, click.position)
        with self._lock:
            if opened in self._opened:
                self._opened.move_to_end(opened)
                return False
            self._opened[opened] = None
            if len(self._opened) > CLICKS_REMEMBERED:
                self._opened.popitem(last=False)
        return True

    def click(self, click: Click) -> None:
        """Logs a hit opened (a click link checked by ``signer``). Never raises, never waits."""
        if self.enabled:
            row = {"search_id": click.search_id, "position": click.position, "url": printable(click.url), "at": now()}
            self._put("click", row)

    def click_url(self, search_id: str, position: int, url: str) -> str:
        """The query string of a hit's click link (for ``/click``)."""
        return self.signer.query(search_id, position, url)

    def _put(self, kind: str, row: dict[str, Any]) -> None:
        try:
            self._queue.put_nowait((kind, row))
        except queue.Full:
            self._lost(1, "the queue is full")

    def _lost(self, count: int, why: str) -> None:
        """Counts records dropped; warns at most once every WARN_EVERY seconds."""
        with self._lock:
            self.dropped += count
            self._unreported += count
            moment = self._clock()
            if self._warned_at is not None and moment - self._warned_at < WARN_EVERY:
                return
            self._warned_at, reported, self._unreported = moment, self._unreported, 0
        logger.warning("Query analytics: %d records not logged (%s; %d since the start)", reported, why, self.dropped)

    # --- the writer's thread ------------------------------------------------------------------

    def _run(self) -> None:
        next_purge = next_completions = 0.0
        while True:
            if self._clock() >= next_purge:
                self._purge()
                next_purge = self._clock() + PURGE_EVERY
            if self._clock() >= next_completions:
                self.refresh_completions()
                next_completions = self._clock() + COMPLETIONS_EVERY
            try:
                first = self._queue.get(timeout=max(min(next_purge, next_completions) - self._clock(), 0.01))
            except queue.Empty:
                continue
            batch = [first]
            while len(batch) < BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = None in batch
            self.write([item for item in batch if item is not None])
            if stop:
                return

    def write(self, batch: list[tuple[str, dict[str, Any]]]) -> None:
        """Writes a batch; a database error never stops the writer. When the database refuses
        the batch's data (a row it cannot take), the batch is written again in halves, so only
        the rows refused are lost (counted); when it cannot be reached or is locked
        (``OperationalError``), the whole batch is lost (counted) at once, not tried row by row."""
        if not batch:
            return
        try:
            store = self._store()
        except Exception as exc:  # noqa: BLE001 - whatever the database says, the searcher never hears of it
            self._lost(len(batch), f"the database cannot be opened: {short_error(exc)}")
            return
        self._write(store, batch)

    def _write(self, store: Searches, batch: list[tuple[str, dict[str, Any]]]) -> None:
        rows = [row for kind, row in batch if kind == "search"]
        clicks = [row for kind, row in batch if kind == "click"]
        try:
            store.write(rows, clicks)
        except Exception as exc:  # noqa: BLE001
            if len(batch) > 1 and not isinstance(exc, OperationalError):
                middle = len(batch) // 2  # in order: a click after its search
                self._write(store, batch[:middle])
                self._write(store, batch[middle:])
                return
            self._lost(len(batch), f"the database refused them: {short_error(exc)}")
            return
        self.written += len(batch)

    def _purge(self) -> None:
        try:
            deleted = self._store().purge(now() - timedelta(days=self.days))
        except Exception as exc:  # noqa: BLE001
            logger.warning("Query analytics: old searches not purged: %s", short_error(exc))
            return
        if deleted:
            logger.info("Query analytics: %d searches older than %d days purged", deleted, self.days)

    def refresh_completions(self) -> None:
        """Reads the most frequent past queries that found documents (of the retention period)
        for ``completions``; on a database error the ones read before are kept."""
        try:
            frequent = self._store().frequent_queries(now() - timedelta(days=self.days), COMPLETION_QUERIES)
        except Exception as exc:  # noqa: BLE001
            logger.warning("Query analytics: past queries for the completions not read: %s", short_error(exc))
            return
        frequent.sort()
        self._frequent = ([query for query, _count in frequent], [count for _query, count in frequent])

    def completions(self, prefix: str, limit: int = 10) -> list[str]:
        """Past queries (normalized) that found documents and start with ``prefix``, most
        searched first: from memory (``refresh_completions``), never waiting for the database.
        They are anyone's queries: show one to a searcher only if it finds something they may
        read (a query can name what it found for another)."""
        prefix = normalize(prefix)[:MAX_PREFIX_CHARS]
        limit = max(0, min(limit, MAX_COMPLETIONS))
        queries, counts = self._frequent
        if not prefix or not limit:
            return []
        start = bisect.bisect_left(queries, prefix)
        found: list[tuple[int, str]] = []
        for index in range(start, len(queries)):
            if not queries[index].startswith(prefix):
                break
            found.append((-counts[index], queries[index]))
        return [query for _count, query in heapq.nsmallest(limit, found)]

    def pending(self) -> int:
        return self._queue.qsize()


def short_error(exc: BaseException) -> str:
    """The database's own message, short: SQLAlchemy's whole message repeats the statement and
    its parameters (searchers' queries)."""
    original = getattr(exc, "orig", None) or exc
    return f"{type(original).__name__}: {str(original).splitlines()[0][:200] if str(original) else ''}"


def period_of(params: Any, today: datetime | None = None) -> tuple[Period, dict[str, str]]:
    """The period an analytics page asks for (``days`` one of PERIOD_DAYS, or ``from`` and
    ``to`` days, both included) and the parameters that say it again; the last 7 days by default."""
    moment = today or now()
    start, end = day(params.get("from")), day(params.get("to"))
    if start or end:
        if start and end and start > end:
            start, end = end, start
        since = datetime.combine(start, datetime.min.time(), moment.tzinfo) if start else moment - timedelta(days=3650)
        until = datetime.combine(end, datetime.min.time(), moment.tzinfo) + timedelta(days=1) if end else moment
        chosen = {"from": start.isoformat() if start else "", "to": end.isoformat() if end else ""}
        return Period(since, until), chosen
    days = str(params.get("days", ""))
    days = days if days in PERIOD_DAYS else "7"
    return Period.last(int(days), moment), {"days": days}


PERIOD_DAYS = ("1", "7", "30", "90")
PAGE_ROWS = 50  # rows of a report on the page (its CSV has up to 1,000)
REPORTS = {
    "top": "top queries",
    "none": "queries with no hits",
    "abandoned": "queries with hits never opened",
    "positions": "click-through by position",
    "searchers": "searches by signed-in searcher",
}
CSV_DANGEROUS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> str:
    """A cell safe to open in a spreadsheet (OWASP's CSV injection advice): text starting with
    = + - @ tab or carriage return is prefixed with a single quote, so it is never a formula;
    numbers are written as they are."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return str(round(value, 4)) if isinstance(value, float) else str(value)
    text = str(value)
    return "'" + text if text.startswith(CSV_DANGEROUS) else text


def csv_text(header: list[str], rows: Iterable[Iterable[Any]]) -> str:
    """The CSV of a report (RFC 4180 quoting, CRLF line ends), every cell through csv_cell."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([csv_cell(value) for value in row])
    return out.getvalue()


def report_rows(searches: Searches, report: str, period: Period, limit: int = 1000) -> tuple[list[str], list[list[Any]]]:
    """A report's header and rows, as the CSV export gives them."""
    if report == "top":
        header = ["query", "searches", "average hits", "searches with a click", "click-through"]
        return header, [
            [row.query, row.searches, round(row.average_hits, 2), row.clicked, round(row.click_through, 4)]
            for row in searches.top_queries(period, limit)
        ]
    if report in ("none", "abandoned"):
        header = ["query", "searches", "last searched (UTC)"]
        found = searches.no_hits(period, limit) if report == "none" else searches.abandoned(period, limit)
        return header, [[row.query, row.searches, row.last.strftime("%Y-%m-%d %H:%M:%S")] for row in found]
    if report == "searchers":
        header = ["user", "searches", "searches with no hits", "searches with a click", "last searched (UTC)"]
        return header, [
            [row.user, row.searches, row.no_hits, row.clicked, row.last.strftime("%Y-%m-%d %H:%M:%S")]
            for row in searches.searchers(period, limit)
        ]
    header = ["position", "clicks", "share"]
    return header, [[row.position, row.clicks, round(row.share, 4)] for row in searches.positions(period)]


def csv_filename(report: str, period: Period) -> str:
    """The download's file name: the report and the period's days (plain ASCII: nothing to quote)."""
    last = period.until - timedelta(microseconds=1)
    return f"searchcrawl-{report}-{period.since:%Y-%m-%d}-{last:%Y-%m-%d}.csv"
