#!/usr/bin/env bash
# The whole test suite, on a new machine too: installs what is missing, then runs pytest.
# Extra arguments go to pytest (e.g. `bash deploy/test.sh -k crawl`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/bootstrap.sh
exec .venv/bin/python -m pytest "$@"
