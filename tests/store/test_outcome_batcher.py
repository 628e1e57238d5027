"""Outcomes written in batches (issue 74): the batcher alone (store/outcome_batcher.py), and the
ledger's ``record_batch`` against ``record`` one outcome at a time, over a seeded sequence."""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence

import pytest

from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.frontier import Entry, Frontier
from searchcrawl.store.ledger import Ledger
from searchcrawl.store.outcome_batcher import BACKLOG, OutcomeBatcher
from searchcrawl.store.runs import Runs

WAIT = 30.0  # seconds a condition may take at most on a loaded machine (never a fixed sleep)


class Writes:
    """A ``write`` that keeps every batch, can be held (the database is slow) and can fail."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.threads: set[str] = set()
        self.open = threading.Event()
        self.open.set()
        self.written = threading.Condition()
        self.fail_next = False

    def __call__(self, batch: Sequence[tuple[str, Outcome]]) -> None:
        self.open.wait(WAIT)
        self.threads.add(threading.current_thread().name)
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("the database went away")
        with self.written:
            self.batches.append([url for url, _outcome in batch])
            self.written.notify_all()

    def wait_for(self, count: int) -> None:
        with self.written:
            assert self.written.wait_for(lambda: sum(map(len, self.batches)) >= count, WAIT)

    @property
    def urls(self) -> list[str]:
        return [url for batch in self.batches for url in batch]


def cached(checksum: str, **columns: str) -> Outcome:
    return Outcome(Event.CACHED, 200, columns={"checksum": checksum, **columns})


def test_outcomes_are_written_in_order_in_batches_of_at_most_size() -> None:
    writes = Writes()
    batcher = OutcomeBatcher(writes, size=10, interval=60)
    for number in range(35):
        batcher.add(f"u{number}", cached("c"))
    writes.wait_for(30)  # three full batches go without a flush; five wait for their interval
    assert batcher.flush() in (0, 5)
    assert writes.urls == [f"u{number}" for number in range(35)]
    assert all(len(batch) <= 10 for batch in writes.batches) and len(writes.batches) == 4
    assert writes.threads == {"searchcrawl-outcomes"}  # never the caller's thread
    batcher.close()


def test_a_batch_is_written_once_its_interval_has_passed_without_a_flush() -> None:
    writes = Writes()
    batcher = OutcomeBatcher(writes, size=1000, interval=0.05)
    batcher.add("a", cached("c"))
    writes.wait_for(1)
    assert writes.batches == [["a"]]
    batcher.close()


def test_an_outcome_added_while_the_writer_sleeps_is_written_after_its_interval() -> None:
    """The writer, asleep with nothing waiting, is woken by the next outcome to time its batch.
    Without it, a node of a shared crawl that never went idle kept 391 outcomes unwritten (their
    URLs leased, the run stalled) until its close (tests/e2e/test_local_processes.py, sixteen)."""
    writes = Writes()
    batcher = OutcomeBatcher(writes, size=1000, interval=0.05)
    batcher.add("a", cached("c"))
    writes.wait_for(1)  # the writer has nothing left: it sleeps
    batcher.add("b", cached("c"))
    writes.wait_for(2)
    assert writes.urls == ["a", "b"]
    batcher.close()


def test_flush_waits_for_what_was_added_and_returns_how_many() -> None:
    writes = Writes()
    batcher = OutcomeBatcher(writes, size=100, interval=60)
    assert batcher.flush() == 0
    for url in ("a", "b", "c"):
        batcher.add(url, cached("c"))
    assert batcher.flush() == 3
    assert writes.urls == ["a", "b", "c"]
    assert batcher.flush() == 0
    batcher.close()


def test_a_lookup_flushes_only_when_an_outcome_waiting_carries_its_value() -> None:
    """A pipeline about to look for a checksum or display URL in the table: written first when
    an outcome still waiting carries it, else no wait at all."""
    writes = Writes()
    batcher = OutcomeBatcher(writes, size=100, interval=60)
    batcher.add("a", cached("one", display_url="http://h/a"))
    batcher.add("b", Outcome(Event.FAILED, 503))
    assert batcher.holds("checksum", "one") and batcher.holds("display_url", "http://h/a")
    assert batcher.flush_for("checksum", "two") == 0 and writes.urls == []
    assert batcher.flush_for("display_url", "http://h/a") == 2 and writes.urls == ["a", "b"]
    assert not batcher.holds("checksum", "one")  # written: forgotten
    batcher.close()


def test_size_one_writes_each_outcome_at_once_on_the_callers_thread() -> None:
    writes = Writes()
    batcher = OutcomeBatcher(writes, size=1, interval=60)
    batcher.add("a", cached("c"))
    assert writes.batches == [["a"]] and writes.threads == {threading.current_thread().name}
    assert not batcher.batching


def test_the_backlog_is_bounded_add_waits_for_a_slow_database() -> None:
    writes = Writes()
    writes.open.clear()  # the database holds every write
    batcher = OutcomeBatcher(writes, size=2, interval=60)
    added = []

    def crawl() -> None:
        for number in range(3 * BACKLOG * 2):
            batcher.add(f"u{number}", cached("c"))
            added.append(number)

    crawler = threading.Thread(target=crawl, daemon=True)
    crawler.start()
    crawler.join(0.5)  # the crawl is stopped by the backlog, not by this join's time out
    assert crawler.is_alive() and len(added) <= BACKLOG * 2 + 2  # one batch taken by the writer, held
    writes.open.set()
    crawler.join(WAIT)
    assert not crawler.is_alive()
    batcher.flush()
    assert writes.urls == [f"u{number}" for number in range(3 * BACKLOG * 2)]
    batcher.close()


def test_a_failed_batch_does_not_stop_the_writer_and_close_writes_the_rest_at_once(caplog) -> None:
    writes = Writes()
    batcher = OutcomeBatcher(writes, size=100, interval=60)
    writes.fail_next = True
    batcher.add("lost", cached("c"))
    assert batcher.flush() == 1  # written, or failed and logged: the URL stays leased
    assert "failed" in caplog.text
    batcher.add("b", cached("c"))
    batcher.close()
    batcher.add("c", cached("c"))  # after the engine stopped: at once
    assert writes.urls == ["b", "c"]


# --- the ledger's batches against its one-by-one writes ---------------------------------------------


def random_outcome(rng: random.Random) -> Outcome:
    choice = rng.randrange(6)
    if choice == 0:
        return cached(rng.choice("xyz"), display_url=f"http://h/{rng.randrange(4)}")
    if choice == 1:
        return Outcome(Event.FAILED, 503, "HTTP 503")
    if choice == 2:
        return Outcome(Event.GONE, 404, "HTTP 404")
    if choice == 3:
        return Outcome(Event.UNCHANGED, 304, "not modified")
    if choice == 4:
        return Outcome(Event.EXCLUDED, 901, "off-site")
    return Outcome(Event.GONE, 933, "duplicate", columns={"duplicate_of": "http://h/u0", "checksum": rng.choice("xyz")})


def ledger_in_run(path, name: str) -> tuple[Ledger, Frontier]:
    table = DocumentTable(Database(f"sqlite:///{path / name}"))
    runs = Runs(table.database)
    run = runs.start("s", owner="me")
    frontier = Frontier(table.database, "s", run.id, "me")
    ledger = Ledger(table, "s", max_failures=2)
    ledger.in_run(run.id, False)
    return ledger, frontier


def rows_of(ledger: Ledger, urls: list[str]) -> list[tuple]:
    keep = ("state", "status", "reason", "failures", "checksum", "display_url", "duplicate_of", "delta", "frontier")
    return [tuple((ledger.table.get("s", url) or {}).get(key) for key in keep) for url in urls]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_batch_writes_what_one_transaction_per_outcome_writes(tmp_path, seed) -> None:
    """A seeded sequence of outcomes over a few URLs (a URL's several outcomes in one batch
    included), written one at a time and in batches of random sizes: the same rows."""
    rng = random.Random(seed)
    urls = [f"http://h/u{number}" for number in range(12)]
    sequence = [(rng.choice(urls), random_outcome(rng)) for _ in range(300)]
    one, one_frontier = ledger_in_run(tmp_path, "one.sqlite3")
    many, many_frontier = ledger_in_run(tmp_path, "many.sqlite3")
    for frontier in (one_frontier, many_frontier):
        frontier.add([Entry(url, 0) for url in urls])
    one_states = [one.record(url, outcome) for url, outcome in sequence]
    many_states = []
    start = 0
    while start < len(sequence):
        size = rng.randint(1, 40)
        many_states += many.record_batch(sequence[start : start + size])
        start += size
    assert many_states == one_states
    assert rows_of(many, urls) == rows_of(one, urls)
    assert many_frontier.counts() == one_frontier.counts()


def test_a_failing_outcome_in_a_batch_does_not_hold_back_the_others(tmp_path, monkeypatch, caplog) -> None:
    ledger, frontier = ledger_in_run(tmp_path, "db.sqlite3")
    frontier.add([Entry(url, 0) for url in ("http://h/a", "http://h/bad", "http://h/c")])
    original = Ledger._record

    def broken(self, connection, url, outcome, marks):
        if url == "http://h/bad":
            raise ValueError("a bad value")
        return original(self, connection, url, outcome, marks)

    monkeypatch.setattr(Ledger, "_record", broken)
    states = ledger.record_batch([(url, cached("one")) for url in ("http://h/a", "http://h/bad", "http://h/c")])
    assert states == ["pending", None, "pending"]
    assert "recorded one at a time" in caplog.text and "Not recorded for http://h/bad" in caplog.text
    bad = ledger.table.get("s", "http://h/bad")
    assert bad is not None and bad["frontier"] != "done" and bad["state"] != "pending"  # still to do: fetched again


# --- without a thread: the crawl's own (the default) ---------------------------------------------------


def test_without_a_thread_the_add_that_fills_a_batch_writes_it_on_the_callers_thread() -> None:
    writes = Writes()
    batcher = OutcomeBatcher(writes, size=3, interval=60, threaded=False)
    for url in ("a", "b", "c", "d"):
        batcher.add(url, cached("c"))
    assert writes.batches == [["a", "b", "c"]] and writes.threads == {threading.current_thread().name}
    assert batcher.write_due() == 0  # d's interval has not passed
    assert batcher.holds("checksum", "c") and batcher.flush_for("checksum", "c") == 1
    assert writes.batches == [["a", "b", "c"], ["d"]]
    batcher.close()
    batcher.add("e", cached("c"))
    assert writes.urls[-1] == "e"


def test_without_a_thread_the_timer_writes_a_batch_whose_interval_passed() -> None:
    writes = Writes()
    batcher = OutcomeBatcher(writes, size=100, interval=0.0, threaded=False)
    batcher.add("a", cached("c"))
    assert writes.urls == []  # the timer writes it, not the add
    assert batcher.write_due() == 1 and writes.urls == ["a"]
    assert batcher.write_due() == 0


def test_without_a_thread_a_flush_from_another_thread_keeps_the_order() -> None:
    """The Solr push flushes from its worker thread while the crawl adds: batches in order."""
    writes = Writes()
    batcher = OutcomeBatcher(writes, size=7, interval=60, threaded=False)
    pusher = threading.Thread(target=lambda: [batcher.flush() for _ in range(200)])
    pusher.start()
    for number in range(500):
        batcher.add(f"u{number}", cached("c"))
    pusher.join(WAIT)
    batcher.flush()
    assert writes.urls == [f"u{number}" for number in range(500)]


# --- writes before the outcomes: a page's links (issue 94) ---------------------------------------------


class WritesWithBefore(Writes):
    """A ``write`` that also takes the writes to run first, and runs them (as the ledger does)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[list[str], int]] = []  # (the batch's URLs, how many writes before it)

    def __call__(self, batch: Sequence[tuple[str, Outcome]], before: Sequence = ()) -> None:
        for write in before:
            write("the transaction")
        self.calls.append(([url for url, _outcome in batch], len(before)))
        super().__call__(batch)


@pytest.mark.parametrize("threaded", [False, True])
def test_writes_added_before_an_outcome_run_first_in_its_batch(threaded) -> None:
    """A page's links go into the batch of its outcome, before it, given that batch's transaction;
    a flush writes links that wait without an outcome, and counts them."""
    writes = WritesWithBefore()
    ran: list[str] = []
    batcher = OutcomeBatcher(writes, size=100, interval=60, threaded=threaded)
    batcher.add_before(lambda connection: ran.append(f"links of a in {connection}"))
    batcher.add("http://h/a", cached("one"))
    assert batcher.holds_before() and ran == []  # nothing written before the batch
    assert batcher.flush() == 2
    assert ran == ["links of a in the transaction"] and writes.calls == [(["http://h/a"], 1)]
    assert not batcher.holds_before()
    batcher.add_before(lambda connection: ran.append("links of b"))
    assert batcher.flush() == 1 and writes.calls[-1] == ([], 1)  # links alone: the scheduler needs them
    batcher.add("http://h/c", cached("two"))
    batcher.flush()
    assert writes.calls[-1] == (["http://h/c"], 0)  # no links: the write of outcomes alone
    batcher.close()


def test_not_batching_a_write_before_runs_at_once_in_a_transaction_of_its_own() -> None:
    writes = WritesWithBefore()
    ran: list[str] = []
    batcher = OutcomeBatcher(writes, size=1)
    batcher.add_before(lambda connection: ran.append("links"))
    assert ran == ["links"] and writes.calls == [([], 1)]


def test_a_pages_links_and_its_outcome_commit_together_or_not_at_all(tmp_path, monkeypatch) -> None:
    """``record_batch`` with writes before: the links are queued in the batch's transaction; when
    it fails, and the links fail again alone, no outcome of the batch is recorded (its pages stay
    leased, fetched again with their links)."""
    ledger, frontier = ledger_in_run(tmp_path, "db.sqlite3")
    frontier.add([Entry("http://h/a", 0)])
    assert frontier.lease(10)
    links = [Entry("http://h/a/1", 1), Entry("http://h/a/2", 1)]

    def queue_links(connection) -> int:
        return frontier.add(links, connection=connection)

    assert ledger.record_batch([("http://h/a", cached("one"))], [queue_links]) == ["pending"]
    assert [ledger.table.get("s", link.url)["frontier"] for link in links] == ["queued", "queued"]

    frontier.add([Entry("http://h/b", 0)])
    assert frontier.lease(10)

    def broken(connection) -> int:
        frontier.add([Entry("http://h/b/1", 1)], connection=connection)
        raise ValueError("the disk is full")

    with pytest.raises(ValueError):
        ledger.record_batch([("http://h/b", cached("two"))], [broken])
    assert ledger.table.get("s", "http://h/b/1") is None  # rolled back with the batch
    b = ledger.table.get("s", "http://h/b")
    assert b is not None and b["frontier"] == "leased" and b["state"] != "pending"
