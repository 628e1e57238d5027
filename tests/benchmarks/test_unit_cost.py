"""The unit layer's cost measurement (tests/benchmarks/unit_cost.py) reads pytest's last line."""

from __future__ import annotations

from tests.benchmarks.unit_cost import command, counted


def test_the_counts_are_read_from_pytests_last_line() -> None:
    last = "2 failed, 3866 passed, 1 error, 17 warnings in 300.1s (0:05:00)"
    assert (counted(last, "passed"), counted(last, "failed"), counted(last, "error")) == (3866, 2, 1)
    assert counted("3868 passed in 9.0s", "failed") == 0


def test_the_command_is_the_unit_layers_with_the_workers_and_what_is_added() -> None:
    line = command(2, ["-k", "links"])
    assert line[1:] == ["-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2", "tests", "--ignore=tests/e2e", "-k", "links"]
