#!/usr/bin/env bash
# The quickstart: installs what is missing, starts the dev Solr, serves and crawls the example
# source, and prints search results (`scrapy demo`). Solr keeps running: `.venv/bin/scrapy solr stop`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/bootstrap.sh runtime
exec .venv/bin/scrapy demo "$@"
