"""Building searchcrawl's Scrapy components alone, with Scrapy's own ``get_crawler``.

``source_crawler`` gives a crawler of a source spider with the project's settings (and a data
dir of the test's own), its extensions built as Scrapy builds them; a component is then built
with ``build_from_crawler`` exactly as Scrapy would, and no crawl or subprocess is needed.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from scrapy import signals
from scrapy.core.engine import ExecutionEngine
from scrapy.crawler import Crawler
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.reactor import is_reactor_installed
from scrapy.utils.test import get_crawler, get_reactor_settings

from searchcrawl import settings as project_settings
from searchcrawl.config.source import SourceFile, load_source
from searchcrawl.crawl.ledger_writer import LedgerWriter
from searchcrawl.crawl.requests import admission_of
from searchcrawl.crawl.run import CrawlArguments, Run
from searchcrawl.crawl.run_start import begin_run, plan_run
from searchcrawl.crawl.signals import run_started
from searchcrawl.crawl.spiderloader import spider_class_for
from searchcrawl.crawl.stores import Stores, stores_of
from searchcrawl.ops.local_fleet import shared_crawl
from searchcrawl.store.database import Database, process_owner
from searchcrawl.store.frontier import Frontier

UNREACHABLE_SOLR = "http://127.0.0.1:9/solr/unit"  # a component that must not talk to Solr
DEFAULT_SOURCE = 'seeds = ["http://h.test/"]\n'
# A downloader without middlewares (its slots are what a test looks at), and no memory watchdog
# (it expects engine_started before engine_stopped, and an unstarted engine sends neither)
BARE_DOWNLOADER = {"DOWNLOADER_MIDDLEWARES_BASE": {}, "DOWNLOADER_MIDDLEWARES": {}, "MEMUSAGE_ENABLED": False}


# A component tested alone reads the document table right after a signal: its outcomes are written
# at once. Batching (issue 74) is tested alone (tests/store/test_outcome_batcher.py), with the
# components that flush it (tests/crawl/test_batched_outcomes.py, which passes its own setting),
# and by every end-to-end crawl, which runs with the default batches.
UNBATCHED = {"SEARCHCRAWL_OUTCOME_BATCH": 1}

_TEMPLATE: list[Path] = []  # the process's migrated, empty document table


def migrated_database(data_dir: Path) -> None:
    """An up-to-date, empty SQLite document table in ``data_dir`` (unless one is there), copied
    from one migrated once per process: migrating a new file takes a tenth of a second, in a
    quarter of the tests that build crawlers. The migrations themselves are tested in
    tests/store and by every end-to-end crawl."""
    target = data_dir / "documents.sqlite3"
    if target.exists():
        return
    if not _TEMPLATE:
        folder = Path(tempfile.mkdtemp(prefix="searchcrawl-template-db-"))
        atexit.register(shutil.rmtree, folder, True)
        Database(f"sqlite:///{folder / 'documents.sqlite3'}").close()  # closed: its WAL checkpointed
        _TEMPLATE.append(folder / "documents.sqlite3")
    data_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_TEMPLATE[0], target)


def source_crawler(tmp_path: Path, source: str = DEFAULT_SOURCE, name: str = "unit", **settings: Any) -> Crawler:
    """A crawler of the source file ``source`` (TOML text), built by ``get_crawler``; its data
    dir ``tmp_path`` holds a migrated document table (``migrated_database``) unless the settings
    name another database."""
    if not settings.get("SEARCHCRAWL_DB_URL"):
        migrated_database(tmp_path)
    path = tmp_path / f"{name}.toml"
    path.write_text(source)
    spidercls = spider_class_for(load_source(SourceFile(name, str(path), path)))
    # the project's own settings module, as `scrapy crawl` gives it (Scrapy's defaults stay defaults)
    values = {key: getattr(project_settings, key) for key in dir(project_settings) if key.isupper()}
    values.update({"SEARCHCRAWL_DATA_DIR": str(tmp_path), "SOLR_URL": UNREACHABLE_SOLR, **UNBATCHED, **settings})
    for key in get_reactor_settings():  # the reactor the test runs on, as get_crawler chooses it
        values.pop(key, None)
    return get_crawler(spidercls, settings_dict=values)


def ledger_of(crawler: Crawler) -> LedgerWriter:
    """The crawl's ledger writer (built with the crawler's extensions)."""
    ledger = crawler.get_extension(LedgerWriter)
    assert ledger is not None
    return ledger


def node_owner(crawler: Crawler) -> str:
    """This process as the node of ``crawler``, in a test that runs two nodes of a shared crawl
    in one process: host:pid names a process, so each node is told apart by its data dir's name."""
    return f"{process_owner()}/{Path(crawler.settings['SEARCHCRAWL_DATA_DIR']).name}"


def close_stores(crawler: Crawler) -> None:
    """Close what the crawler's stores opened (the engine's stop does it in a crawl)."""
    stores = crawler.get_extension(Stores)
    if stores is not None:
        stores.close()


def start_run(
    crawler: Crawler,
    arguments: dict[str, Any] | None = None,
    *,
    owner: str | None = None,
    lease_seconds: float = 300.0,
    allow_shared: bool | None = None,
    taken_over: bool = False,
    plan: bool = True,
) -> tuple[Run, Frontier]:
    """Start (or resume, or join) the source's run as the frontier scheduler does when it opens,
    without its loops and threads: ``Runs.start``, ``begin_run``, ``run_started`` sent to the
    crawler's components, and the run's maintenance plan made whole (``plan_run``, which the
    scheduler makes on a thread while the crawl goes on; ``plan=False``: left to the caller).
    The run and its frontier."""
    stores, ledger, admission = stores_of(crawler), ledger_of(crawler), admission_of(crawler)
    source = crawler.spidercls.source  # type: ignore[attr-defined]
    owner = owner or process_owner()
    shared = shared_crawl(crawler.settings) if allow_shared is None else allow_shared
    info = stores.runs.start(source.name, allow_shared=shared, stale_after=lease_seconds, owner=owner)
    frontier = Frontier(stores.database, source.name, info.id, owner, lease_seconds)
    run = begin_run(
        info,
        CrawlArguments.of(arguments or {}),
        source=source,
        runs=stores.runs,
        ledger=ledger,
        known=admission.known,
        taken_over=taken_over,
        shared=shared,
        owner=owner,
    )
    crawler.signals.send_catch_log(run_started, run=run, frontier=frontier)
    if run.plan_pending and plan:
        plan_run(run, source=source, runs=stores.runs, ledger=ledger, known=admission.known)
    return run, frontier


@contextlib.asynccontextmanager
async def engine_of(crawler: Crawler) -> AsyncIterator[ExecutionEngine]:
    """A real engine (built the public way, never started) on the crawler, closed as Scrapy
    closes it: for components that read ``crawler.engine`` (download slots, the downloader)."""
    engine = ExecutionEngine(crawler, lambda _spider: None)
    crawler.engine = engine
    try:
        yield engine
    finally:
        await engine.close_async()
        await crawler.signals.send_catch_log_async(signal=signals.engine_stopped)
        crawler.engine = None


Component = TypeVar("Component")


def run_with_engine(crawler: Crawler, component: type[Component], scenario: Callable[[Component], Awaitable[None]]) -> None:
    """Run ``scenario`` on ``component`` built from ``crawler`` as Scrapy builds it, with an
    engine on the crawler (opened, never started): for a middleware that sends requests of its
    own through the engine (robots.txt, a login form)."""

    async def main() -> None:
        crawler.spider = crawler.spidercls.from_crawler(crawler)  # what Crawler.crawl() does first
        engine = ExecutionEngine(crawler, lambda _spider: None)
        crawler.engine = engine
        try:
            await engine.open_spider_async(close_if_idle=False)
            await scenario(build_from_crawler(component, crawler))
        finally:
            await engine.close_async()
            await crawler.signals.send_catch_log_async(signal=signals.engine_stopped)

    asyncio.run(main())
    assert not is_reactor_installed()  # nothing installed a reactor for the tests that follow
