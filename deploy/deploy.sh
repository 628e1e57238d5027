#!/usr/bin/env bash
# Builds the project's egg (code and packaged sources) and uploads it to scrapyd with
# scrapyd-deploy. Target: SEARCHCRAWL_SCRAPYD_URL if set, else scrapy.cfg's [deploy] url.
# Extra arguments go to scrapyd-deploy (e.g. --version 1.2, or --build-egg FILE to only build).
set -euo pipefail
cd "$(dirname "$0")/.."
# One deploy at a time per checkout: scrapyd-deploy writes setup.py and build/ into it, and a
# second deploy's cleanup would delete them under the first one's bdist_egg (CI saw it fail so)
exec 9<deploy/deploy.sh
flock 9
# scrapyd-deploy runs setuptools' bdist_egg in this environment: the `deploy` extra brings
# scrapyd-client and setuptools<81 (bootstrap.sh installs it into .venv)
[ -x .venv/bin/scrapyd-deploy ] || bash deploy/bootstrap.sh

if [ -z "${SEARCHCRAWL_SCRAPYD_PASSWORD:-}" ] && [ -n "${SEARCHCRAWL_SCRAPYD_PASSWORD_FILE:-}" ]; then
  SEARCHCRAWL_SCRAPYD_PASSWORD=$(cat "$SEARCHCRAWL_SCRAPYD_PASSWORD_FILE")
fi
export SEARCHCRAWL_SCRAPYD_USERNAME=${SEARCHCRAWL_SCRAPYD_USERNAME:-}
export SEARCHCRAWL_SCRAPYD_PASSWORD=${SEARCHCRAWL_SCRAPYD_PASSWORD:-}
target=default
[ -n "${SEARCHCRAWL_SCRAPYD_URL:-}" ] && target=env

# scrapyd-deploy writes a setup.py (entry point and package data come from pyproject.toml) and
# a build/ directory; neither belongs in the tree
created_setup=0
[ -e setup.py ] || created_setup=1
cleanup() { [ "$created_setup" = 1 ] && rm -f setup.py; rm -rf build; }
trap cleanup EXIT
if [ "${1:-}" = "--build-egg" ]; then
  .venv/bin/scrapyd-deploy "$@"
else
  .venv/bin/scrapyd-deploy "$target" "$@"
fi
