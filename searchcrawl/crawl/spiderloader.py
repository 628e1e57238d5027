"""Makes every source file a spider, so that `scrapy list` and `scrapy crawl <source>` just work."""

from __future__ import annotations

import builtins
import logging

from scrapy import Request
from scrapy.settings import BaseSettings

from searchcrawl.config.implementations import SPIDERS, ImplementationError, url_rewriter
from searchcrawl.config.own_places import check_own_places, own_places
from searchcrawl.config.source import Source, SourceError, SourceFile, find_source_files, load_source
from searchcrawl.crawl.agent_spider import AgentSpider
from searchcrawl.crawl.middlewares.address_guard import BrowserRequestGuard
from searchcrawl.crawl.spider import SourceSpider
from searchcrawl.rules.addresses import AddressPolicy
from searchcrawl.rules.boundary import Boundary
from searchcrawl.system import paths

logger = logging.getLogger(__name__)

# Source keys that are Scrapy settings under another name; applied as the spider's
# custom_settings, so `-s NAME=value` on the command line still wins.
SETTINGS_OF_KEYS = {
    "max_download_bytes": "DOWNLOAD_MAXSIZE",
    "delay": "DOWNLOAD_DELAY",
    "concurrent_requests": "CONCURRENT_REQUESTS",
    "concurrent_per_site": "CONCURRENT_REQUESTS_PER_DOMAIN",
    "concurrent_sites": "SEARCHCRAWL_MAX_SITES",
    "autothrottle": "AUTOTHROTTLE_ENABLED",
    "autothrottle_target": "AUTOTHROTTLE_TARGET_CONCURRENCY",
    "download_timeout": "DOWNLOAD_TIMEOUT",
    "log_file": "LOG_FILE",
    "log_level": "LOG_LEVEL",
    "temp_dir": "SEARCHCRAWL_TEMP_DIR",
    "shared": "SEARCHCRAWL_SHARED_CRAWL",
    "processes": "SEARCHCRAWL_PROCESSES",
}


TLS_HANDLER = "searchcrawl.crawl.handlers.tls.SourceTlsDownloadHandler"


def download_handlers(source: Source) -> dict[str, str | None]:
    """Scrapy's DOWNLOAD_HANDLERS for a source: http and https only (Scrapy's own handler; with a
    [tls] table, its subclass that applies it; with NTLM credentials, that subclass's subclass that
    answers NTLM challenges on their connection: searchcrawl/crawl/handlers/ntlm.py; Playwright
    when the source renders pages), plus ``file`` when its own seeds are file URLs. The file, FTP,
    S3 and data handlers are off otherwise, so no redirect or link can make the crawler read them."""
    handlers: dict[str, str | None] = {"file": None, "ftp": None, "s3": None, "data": None}
    if source.agent_class is not None:  # its agent's scheme only: files, rows, messages
        handlers[source.agent_class.scheme] = "searchcrawl.crawl.handlers.agent.AgentDownloadHandler"
        return handlers
    if source.settings.tls.customised:
        handlers.update(http=TLS_HANDLER, https=TLS_HANDLER)
    if any(seed.lower().startswith("file:") for seed in source.seed_urls):
        handlers["file"] = "scrapy.core.downloader.handlers.file.FileDownloadHandler"
    if any(rule.type == "ntlm" for rule in source.settings.auth):
        handler = "searchcrawl.crawl.handlers.ntlm.NtlmDownloadHandler"
        handlers.update(http=handler, https=handler)
    if source.settings.render_js or source.settings.render_rules:
        # Only sources that render start Playwright (and, on first use, Chromium).
        handler = "searchcrawl.crawl.handlers.chromium.ChromiumDownloadHandler"
        handlers.update(http=handler, https=handler)
    return handlers


def spider_class_for(source: Source) -> type[SourceSpider]:
    """A SourceSpider subclass bound to ``source`` (the registered spider its ``spider_class`` names,
    if any), its URL rewriter checked."""
    base: type = SourceSpider if source.agent_class is None else AgentSpider
    try:
        if source.settings.spider_class:
            base = SPIDERS.load(source.settings.spider_class, SourceSpider)
        url_rewriter(source.settings.url_rewriter)
    except ImplementationError as exc:
        raise SourceError(f"{source.origin}: key '{exc.key}': {exc}") from None
    custom_settings = dict(getattr(base, "custom_settings", None) or {})
    for key, setting in SETTINGS_OF_KEYS.items():
        if key in source.settings.model_fields_set and getattr(source.settings, key) is not None:
            custom_settings[setting] = getattr(source.settings, key)
    custom_settings["DOWNLOAD_HANDLERS"] = download_handlers(source)
    if not source.settings.tls.verify:  # the explicit choice; the handler logs it as a WARNING
        custom_settings["DOWNLOAD_VERIFY_CERTIFICATES"] = False
    if source.settings.render_js or source.settings.render_rules:
        custom_settings["PLAYWRIGHT_MAX_PAGES_PER_CONTEXT"] = source.settings.render_pages
        policy = AddressPolicy(Boundary(source.seed_urls, source.settings), source.seed_urls)
        custom_settings["PLAYWRIGHT_ABORT_REQUEST"] = BrowserRequestGuard(policy)
    return type(
        f"{base.__name__}[{source.name}]",
        (base,),
        {"name": source.name, "source": source, "__module__": base.__module__, "custom_settings": custom_settings},
    )


class SourceSpiderLoader:
    """Scrapy's spider loader interface over source files."""

    def __init__(self, settings: BaseSettings) -> None:
        self.settings = settings
        self.sources_dir = paths.sources_dir(settings)
        self._loaded: dict[str, type[SourceSpider]] = {}

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SourceSpiderLoader:
        return cls(settings)

    def _files(self) -> dict[str, SourceFile]:
        return find_source_files(self.sources_dir)

    def load(self, spider_name: str) -> type[SourceSpider]:
        """The spider of one source; SourceError if its file is broken (or its agent would read
        the installation's own data), KeyError if unknown."""
        if spider_name not in self._loaded:
            files = self._files()
            if spider_name not in files:
                raise KeyError(f"Spider not found: {spider_name}")
            source = load_source(files[spider_name])
            if source.agent_options is not None:
                check_own_places(source, own_places(self.settings))
            self._loaded[spider_name] = spider_class_for(source)
        return self._loaded[spider_name]

    def reload(self) -> None:
        """Forget loaded sources, so that edited source files are read again (long-lived processes)."""
        self._loaded.clear()

    def list(self) -> list[str]:
        """The names of the usable sources; each broken one is named in an error log line."""
        names = []
        for name in self._files():
            try:
                self.load(name)
            except SourceError as exc:
                logger.error("Broken source %s (not listed): %s", name, exc)
            else:
                names.append(name)
        return names

    def find_by_request(self, request: Request) -> builtins.list[str]:  # in this class, list is the method above
        return [name for name, spider in self._loaded.items() if spider.handles_request(request)]
