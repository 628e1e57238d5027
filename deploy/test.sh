#!/usr/bin/env bash
# The whole test suite, on a new machine too: installs what is missing, then runs pytest.
# Extra arguments go to pytest (e.g. `bash deploy/test.sh -k crawl`); SEARCHCRAWL_TEST_WORKERS
# sets the number of pytest-xdist workers (default 3; 0: one process).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/bootstrap.sh test
# Bytecode, and pytest's rewritten test modules, are kept between runs, outside the source tree
# (in .venv): a shell with PYTHONDONTWRITEBYTECODE set (as this machine's are) compiles them anew
# in every pytest worker (3 s of CPU each to collect the tests) and in every Python process the
# tests start. Compiled once here, on both cores, before the workers and the crawls need them.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-$PWD/.venv/pycache}"
.venv/bin/python -m compileall -q -j 0 searchcrawl tests
# Lint, format and types first: a minute, and a failure here is cheaper to read than a crawl's.
.venv/bin/ruff check --quiet searchcrawl tests
.venv/bin/ruff format --check --quiet searchcrawl tests
.venv/bin/mypy
# Three workers (pytest-xdist): the end-to-end crawls mostly wait on subprocesses, servers and
# Solr, so three at once use the 2 cores better than one. Four were faster in two pairs of runs
# (9 min 25 s and 10 min 21 s against 10 min 39 s and 11 min 42 s) but not in CI (11 min 4 s),
# and the fleet's politeness test, whose tolerances were measured with three, failed under four.
# Measured again on 2026-11-29 with 4,907 tests, clean clones one after the other on the quiet
# machine: three workers 17 min 44 s, four 18 min 49 s, the 2 cores 95 % busy throughout the
# four's run (/proc/stat): the suite is CPU-bound here, and a fourth worker only adds contention. --dist loadgroup hands out one test at a
# time (the default sends each worker a quarter of its share at once, so one worker got every long
# crawl), and keeps the tests marked xdist_group("...") on one worker, which starts their JVM or
# server once (tests/conftest.py: GROUPED_E2E, the Samba domain's four files among them).
# --no-loadscope-reorder keeps the order tests/conftest.py gives (the longest first): by default
# pytest-xdist hands out the groups of the most tests first, so the unit-test files went before
# the end-to-end crawls, and the longest crawls ran last.
exec .venv/bin/python -m pytest -n "${SEARCHCRAWL_TEST_WORKERS:-3}" --dist loadgroup --no-loadscope-reorder "$@"
