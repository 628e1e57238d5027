#!/usr/bin/env bash
# The whole test suite, on a new machine too: installs what is missing, then runs pytest.
# Extra arguments go to pytest (e.g. `bash deploy/test.sh -k crawl`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/bootstrap.sh
# Lint, format and types first: a minute, and a failure here is cheaper to read than a crawl's.
.venv/bin/ruff check --quiet searchcrawl tests
.venv/bin/ruff format --check --quiet searchcrawl tests
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
