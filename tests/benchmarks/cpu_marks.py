"""Run a ``scrapy`` command line and note the process's CPU seconds at Scrapy's signals: where a
small crawl's CPU goes, split the same way for bare Scrapy and for searchcrawl.

    python tests/benchmarks/cpu_marks.py MARKS.json crawl onepage -s LOG_LEVEL=WARNING

(the arguments after MARKS.json are ``scrapy``'s). MARKS.json gets ``[[mark, CPU seconds], ...]``
(``time.process_time()``: every thread of the process, since it started), written as the
interpreter exits (atexit: after Scrapy's and the command's own work, before the modules are torn
down). The signals are heard through PyDispatcher's public ``connect`` for any sender, so neither
Scrapy nor searchcrawl is changed for it. The startup benchmark (``--marks``) runs it and reads the
file; the CPU the measuring runner counts beyond the last mark is the interpreter's tear-down.
"""

from __future__ import annotations

import time

MARKS: list[tuple[str, float]] = [("interpreter started", time.process_time())]

import atexit  # noqa: E402 - after the first mark: the interpreter's own start, nothing more
import json  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402

# the signals noted, once each (the first time they are sent), in the order a crawl sends them
SIGNALS = ("spider_opened", "engine_started", "response_received", "item_scraped", "spider_closed", "engine_stopped")
EXIT = "exit (atexit)"


def mark(name: str) -> None:
    if all(name != noted for noted, _cpu in MARKS):
        MARKS.append((name, time.process_time()))


def main() -> None:
    out, args = sys.argv[1], sys.argv[2:]
    import scrapy.cmdline
    from pydispatch import dispatcher
    from scrapy import signals

    mark("Scrapy imported")
    for name in SIGNALS:

        def noted(*_args: Any, _name: str = name, **_kwargs: Any) -> None:
            mark(_name)

        dispatcher.connect(noted, signal=getattr(signals, name), sender=dispatcher.Any, weak=False)

    def write() -> None:
        mark(EXIT)
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(MARKS, handle)

    atexit.register(write)
    sys.argv = ["scrapy", *args]
    scrapy.cmdline.execute()


if __name__ == "__main__":
    main()
