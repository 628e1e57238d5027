"""CrawlMetrics: a crawl process's own live Prometheus metrics, when asked for.

With ``SEARCHCRAWL_METRICS_PORT`` set (0, the default: off), the crawl serves, on
``SEARCHCRAWL_METRICS_ADDRESS`` (127.0.0.1 by default: exposing it is a decision) and that port,
prometheus_client's text format of:

* ``searchcrawl_crawl_pages_total{source, status_class}``: responses by status class (Scrapy's
  ``downloader/response_status_count/<code>`` stats);
* ``searchcrawl_crawl_documents_indexed_total{source}``: documents pushed to Solr (the Solr
  pipeline's ``searchcrawl/indexed`` stat);
* ``searchcrawl_crawl_solr_push_seconds{source}``: a histogram of push latency (the
  ``solr_pushed`` signal, crawl/signals.py);
* ``searchcrawl_crawl_frontier_urls{source, state}``: the run's frontier as the progress line
  last counted it (RunMonitor's count);
* ``searchcrawl_crawl_last_fetch_timestamp_seconds{source}``: when the count of responses last
  grew, as seen by a scrape (to within the scrape interval: nothing runs per page).

Everything is read from the crawl's stats and signals (Scrapy's public APIs) at scrape time, by a
Collector on a CollectorRegistry of this crawler's own (none in the library's global registry).
Served over HTTPS when ``SEARCHCRAWL_METRICS_CERTFILE`` (and ``SEARCHCRAWL_METRICS_KEYFILE``,
unless the certificate file holds the key) name a certificate; with
``SEARCHCRAWL_METRICS_CLIENT_CAFILE`` too, only a scraper presenting a client certificate that CA
signed gets an answer (mutual TLS: the scrape of a fleet's crawlers across the network, where a
bearer token would travel in the clear without TLS anyway). A CA file without a certificate is
refused as the crawl starts: client certificates need TLS.
The server is ops/metrics_server.py's (each connection's handshake in its own thread, timed).
A port already taken is logged and the crawl goes on without metrics (two processes of a shared
crawl on one host: give each its own port with ``-s``). The server (prometheus_client's, a thread)
stops when the spider closes.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings

from searchcrawl.crawl.extensions.run_monitor import RunMonitor
from searchcrawl.crawl.signals import solr_pushed
from searchcrawl.crawl.stores import source_of
from searchcrawl.ops.metrics_server import MetricsTLS, serve_metrics
from searchcrawl.rules.status_codes import status_class
from searchcrawl.store.models import FrontierState

logger = logging.getLogger(__name__)

STATUS_STAT = "downloader/response_status_count/"
PUSH_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, float("inf"))


def pages_by_class(stats: dict[str, Any]) -> dict[str, int]:
    """Scrapy's response counts by status code, summed by class (rules/status_codes.py
    ``status_class``: 2xx..5xx, other; a site's code is never one of searchcrawl's own)."""
    classes: dict[str, int] = {}
    for key, value in stats.items():
        code = key[len(STATUS_STAT) :]
        if key.startswith(STATUS_STAT) and code.isdigit() and isinstance(value, int):
            label = status_class(int(code), own=False)
            classes[label] = classes.get(label, 0) + value
    return classes


class CrawlCollector(Collector):
    """The crawl's metrics read at scrape time: ``stats`` (Scrapy's stats), ``frontier`` (the
    run's frontier by state, as last counted) and ``last_fetch`` (a time.time(), or None)."""

    def __init__(
        self,
        source: str,
        stats: Callable[[], dict[str, Any]],
        frontier: Callable[[], dict[FrontierState, int]],
        last_fetch: Callable[[], float | None],
    ) -> None:
        self.source, self.stats, self.frontier, self.last_fetch = source, stats, frontier, last_fetch

    def collect(self) -> Iterator[Metric]:
        # a copy: Scrapy's stats are the live dict, which the crawl's thread grows while this
        # (the metrics server's thread) iterates it ("dictionary changed size during iteration");
        # dict() of a dict copies under the GIL, at once
        source, stats = self.source, dict(self.stats())
        pages = CounterMetricFamily("searchcrawl_crawl_pages", "Responses by status class", labels=["source", "status_class"])
        for label, count in sorted(pages_by_class(stats).items()):
            pages.add_metric([source, label], count)
        yield pages
        indexed = CounterMetricFamily("searchcrawl_crawl_documents_indexed", "Documents pushed to Solr", labels=["source"])
        indexed.add_metric([source], stats.get("searchcrawl/indexed", 0))
        yield indexed
        frontier = GaugeMetricFamily(
            "searchcrawl_crawl_frontier_urls", "The run's frontier as last counted", labels=["source", "state"]
        )
        for state, count in sorted(self.frontier().items()):
            frontier.add_metric([source, state.value], count)
        yield frontier
        last = self.last_fetch()
        if last is not None:
            family = GaugeMetricFamily(
                "searchcrawl_crawl_last_fetch_timestamp_seconds", "The last response's time", labels=["source"]
            )
            family.add_metric([source], last)
            yield family


def metrics_tls(settings: BaseSettings) -> MetricsTLS | None:
    """The TLS the settings ask of the crawl's metrics; None: plain HTTP. A client CA without a
    certificate is a mistake said at once (NotConfigured would quietly serve nothing)."""
    certfile = settings.get("SEARCHCRAWL_METRICS_CERTFILE") or None
    keyfile = settings.get("SEARCHCRAWL_METRICS_KEYFILE") or None
    client_cafile = settings.get("SEARCHCRAWL_METRICS_CLIENT_CAFILE") or None
    if certfile is None:
        if keyfile or client_cafile:
            raise ValueError(
                "SEARCHCRAWL_METRICS_KEYFILE and SEARCHCRAWL_METRICS_CLIENT_CAFILE need SEARCHCRAWL_METRICS_CERTFILE"
            )
        return None
    return MetricsTLS(str(certfile), keyfile and str(keyfile), client_cafile and str(client_cafile))


def crawl_registry(collector: CrawlCollector) -> tuple[CollectorRegistry, Histogram]:
    """A registry of the crawl's own with ``collector`` and the push latency histogram."""
    registry = CollectorRegistry(auto_describe=False)
    histogram = Histogram(
        "searchcrawl_crawl_solr_push_seconds", "Latency of pushes to Solr", ["source"], registry=registry, buckets=PUSH_BUCKETS
    )
    registry.register(collector)
    return registry, histogram


class CrawlMetrics:
    """See the module's docstring."""

    def __init__(self, crawler: Crawler, port: int, address: str, tls: MetricsTLS | None = None) -> None:
        self.crawler = crawler
        self.port, self.address = port, address
        self.tls = tls
        self.source = source_of(crawler).name
        self.last_fetch: float | None = None
        self.pages = 0
        self.registry, self.push_seconds = crawl_registry(
            CrawlCollector(self.source, self._stats, self._frontier, self._last_fetch)
        )
        self.server: Any = None
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)
        crawler.signals.connect(self.pushed, signal=solr_pushed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlMetrics:
        port = crawler.settings.getint("SEARCHCRAWL_METRICS_PORT")
        if port <= 0:
            raise NotConfigured
        settings = crawler.settings
        return cls(crawler, port, settings.get("SEARCHCRAWL_METRICS_ADDRESS") or "127.0.0.1", metrics_tls(settings))

    def _stats(self) -> dict[str, Any]:
        return self.crawler.stats.get_stats() if self.crawler.stats is not None else {}

    def _frontier(self) -> dict[FrontierState, int]:
        monitor = self.crawler.get_extension(RunMonitor)
        return dict(monitor.counts) if monitor is not None else {}

    def opened(self) -> None:
        try:
            self.server = serve_metrics(self.registry, self.address, self.port, self.tls)
        except (OSError, ssl.SSLError) as exc:  # a port taken, a certificate unreadable: no metrics
            logger.warning("Crawl metrics not served on %s:%d: %s", self.address, self.port, exc.strerror or exc)
            return
        scheme = "https" if self.tls else "http"
        clients = " (client certificates required)" if self.tls and self.tls.client_cafile else ""
        logger.info("Crawl metrics served on %s://%s:%d/metrics%s", scheme, self.address, self.port, clients)

    def _last_fetch(self) -> float | None:
        """Now, when the response count grew since the last scrape; else the time it last did."""
        pages = self._stats().get("response_received_count", 0)
        if pages > self.pages:
            self.pages, self.last_fetch = pages, time.time()
        return self.last_fetch

    def pushed(self, seconds: float, **_kwargs: Any) -> None:
        self.push_seconds.labels(self.source).observe(seconds)

    def closed(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
