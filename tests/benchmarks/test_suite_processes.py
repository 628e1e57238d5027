"""The suite's processes by kind (tests/benchmarks/suite_processes.py), from dump-acct's lines."""

from __future__ import annotations

from tests.benchmarks.suite_processes import by_kind, records

# name|version|utime|stime|etime|uid|gid|mem|io|pid|ppid|flags|exitcode|tty|start (clock ticks)
LINES = [
    "python          |v3|  1000.00|   200.00| 90000.00|     0|     0|  1.00|  1.00|     10|      5|     |       0|__      |Mon",  # pytest
    "python          |v3| 15000.00|  1000.00| 90000.00|     0|     0|  1.00|  1.00|     11|     10|     |       0|__      |Mon",  # worker
    "python          |v3| 12000.00|  1000.00| 90000.00|     0|     0|  1.00|  1.00|     12|     10|     |       0|__      |Mon",  # worker
    "python          |v3|   500.00|    70.00| 90000.00|     0|     0|  1.00|  1.00|     13|     11|     |       0|__      |Mon",  # fork server
    "python          |v3|     0.00|     1.00|   100.00|     0|     0|  1.00|  1.00|     14|     13|     |       0|__      |Mon",  # watcher
    "python          |v3|    40.00|    10.00|   100.00|     0|     0|  1.00|  1.00|     15|     14|     |       0|__      |Mon",  # forked crawl
    "python          |v3|    60.00|    20.00|   200.00|     0|     0|  1.00|  1.00|     16|     12|     |       0|__      |Mon",  # fresh interpreter
    "java            |v3|   900.00|   100.00|  2000.00|     0|     0|  1.00|  1.00|     17|      1|     |       0|__      |Mon",  # daemonised
    "short line",
]


def test_records_are_read_in_seconds() -> None:
    found = records(LINES)
    assert len(found) == 8  # the short line is no record
    assert found[5].name == "python" and found[5].cpu == 0.5 and found[5].seconds == 1.0
    assert (found[5].pid, found[5].parent) == (15, 14)


def test_each_process_is_counted_under_its_kind() -> None:
    kinds = {kind: (count, round(cpu, 2)) for kind, count, cpu in by_kind(records(LINES))}
    assert kinds["pytest worker 11"] == (1, 160.0) and kinds["pytest worker 12"] == (1, 130.0)
    assert kinds["python <- python <- python <- W"] == (1, 0.5)  # a command forked by the fork server
    assert kinds["python <- W"] == (2, 6.5)  # the fork server and a fresh interpreter
    assert kinds["python <- python <- W"] == (1, 0.01)  # the watcher
    assert kinds["java"] == (1, 10.0)  # its parent gone: the name alone
    assert sum(count for count, _cpu in kinds.values()) == 8
