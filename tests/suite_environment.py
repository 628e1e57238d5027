"""The suite's environment (tests/conftest.py ``scrub_environment``: the shell's project variables
gone, the suite's own settings set), made as pytest loads this plugin: tests/conftest.py names it
in ``pytest_plugins``, so it runs before any conftest below imports searchcrawl.settings (which
reads the environment once) and before any pytest_configure.

A plugin, not code of the conftest itself: a crawl that imports a test module (a test's own
spider, registered in tests/installed/) imports tests/conftest.py as a plain module, and must keep
the environment its test gave it (the notifications' secrets' files, its data folder). Scrubbed
at the conftest's import, that crawl lost every SEARCHCRAWL_ variable at its spider's start."""

from __future__ import annotations

import os

from tests.conftest import scrub_environment

scrub_environment(os.environ)
