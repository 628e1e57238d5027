"""The packaged example intranet (``demo_site/``) served on 127.0.0.1:8765, where the example
source's seeds point: by `searchcrawl demo`, and by the example source's own crawl.

`searchcrawl crawl example` on its own once met no server there and ended every URL with 935
(robots.txt unreachable): the source's site existed only while the demo ran. Its spider
(dev/example_spider.py, the source's ``spider_class``) now serves the site for the crawl's
duration when nothing listens on the port yet; while the demo serves it, the crawl uses the
demo's server.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

from searchcrawl.system.resources import package_dir

HOST, PORT = "127.0.0.1", 8765  # the example source's seeds point here


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        pass


@contextlib.contextmanager
def serving() -> Iterator[str]:
    """The example intranet served at its address, on a thread, until the block ends; OSError
    (the port is taken) before anything is served."""
    with package_dir("searchcrawl.dev", "demo_site") as site:
        server = ThreadingHTTPServer((HOST, PORT), functools.partial(QuietHandler, directory=str(site)))
        thread = threading.Thread(target=server.serve_forever, name="example-site", daemon=True)
        thread.start()
        try:
            yield f"http://{HOST}:{PORT}/"
        finally:
            server.shutdown()
            server.server_close()
