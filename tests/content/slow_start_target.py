"""A conversion target whose import is slow (tests/e2e/test_convert_workers.py): a worker
process that takes 2 s to start, as a fresh interpreter does on a loaded machine."""

import time

from searchcrawl.content.convert.in_process import convert

time.sleep(2)

__all__ = ["convert"]
