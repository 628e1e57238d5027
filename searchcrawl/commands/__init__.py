"""searchcrawl's scrapy commands (COMMANDS_MODULE): one module a command, named as the command."""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from searchcrawl.system.processes import command_name

# A crawl turns the garbage collector off for its start-up and on again once its spider is open
# (commands/crawl.py, ``start_up_done``, says why). Off from here, before Scrapy imports the
# commands' modules, not only from the crawl command's options on: those imports are most of the
# start-up's objects, and the collector walked them in two full collections (0.08 s of a 0.65 s
# start; 0.1 s less to the first request, tests/benchmarks/README.md, issue 74). Only for `crawl`:
# any other command keeps its collector.
if command_name(sys.argv) == "crawl":
    gc.disable()

from scrapy.settings import BaseSettings  # noqa: E402 - after the collector is off
from twisted.internet.defer import Deferred  # noqa: E402
from twisted.python.failure import Failure  # noqa: E402

from searchcrawl.store import Database  # noqa: E402
from searchcrawl.system import paths  # noqa: E402


@contextmanager
def open_database(settings: BaseSettings, migrate: bool = False) -> Iterator[Database]:
    """The document table's database for a command: read-only commands (status, report, solr
    migrate-ids) never migrate it (explain reads it through its read-only crawl's stores (crawl/stores.py));
    commands that write (control) bring it up to date as a crawl would."""
    database = Database(paths.db_url(settings), migrate=migrate)
    try:
        yield database
    finally:
        database.close()


def on_failure(running: Any, report: Callable[[BaseException], None]) -> None:
    """``report`` the error a crawl started by a crawler process ends with (its Deferred or
    asyncio Task), instead of the process logging it (asyncio's "Task exception was never
    retrieved", with a traceback)."""
    if isinstance(running, Deferred):

        def failed(failure: Failure) -> None:
            if failure.value is not None:
                report(failure.value)

        running.addErrback(failed)
    elif isinstance(running, asyncio.Future):

        def done(task: asyncio.Future[Any]) -> None:
            error = None if task.cancelled() else task.exception()
            if error is not None:
                report(error)

        running.add_done_callback(done)


def is_setup_error(error: BaseException) -> bool:
    """Whether ``error`` says that a source cannot be crawled as it is configured, found as the
    crawler builds its components: a secret that is not set ([[auth]], [proxy], a [tls] key's
    passphrase), a [tls] key that does not fit. Its message names the secret or key, never a
    value: one line says it all, without a traceback."""
    from searchcrawl.crawl.middlewares.proxy import ProxyError  # the crawl's components, loaded by then
    from searchcrawl.crawl.middlewares.site_auth import SiteAuthError
    from searchcrawl.rules.tls_settings import TlsFileError
    from searchcrawl.system.secrets import SecretError

    return isinstance(error, SecretError | SiteAuthError | ProxyError | TlsFileError)


def hint_program() -> str:
    """The program a printed hint names (``scrapy search ...``): ``scrapy`` in a Scrapy project (a
    scrapy.cfg here or above), where it knows searchcrawl's commands; ``searchcrawl`` anywhere
    else, where ``scrapy`` answers "Unknown command"."""
    from scrapy.utils.conf import closest_scrapy_cfg

    return "scrapy" if closest_scrapy_cfg() else "searchcrawl"
