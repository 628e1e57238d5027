"""searchcrawl's scrapy commands (COMMANDS_MODULE): one module a command, named as the command."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from scrapy.settings import BaseSettings
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from searchcrawl.store import Database
from searchcrawl.system import paths


@contextmanager
def open_database(settings: BaseSettings, migrate: bool = False) -> Iterator[Database]:
    """The document table's database for a command: read-only commands (status, report, solr
    migrate-ids) never migrate it (explain reads it through its read-only crawl's stores (crawl/extensions/stores.py));
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
