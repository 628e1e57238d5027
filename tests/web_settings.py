"""The project's settings with run counters saved (and control requests read) every second: the
web application's browser tests watch a crawl they start, and suspend it, within seconds."""

from searchcrawl.settings import *  # noqa: F403

SEARCHCRAWL_PROGRESS_INTERVAL = 1.0
