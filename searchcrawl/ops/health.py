"""Solr's and Tika's health as metrics and stall detection see it: a ping, cached.

A scrape of /metrics every 15 s, `scrapy status` and the overview page each want to know whether
Solr and Tika answer; asking them every time would put a request on Solr per scrape and make a
scrape as slow as a Solr that does not answer (its timeout). So each answer is kept ``ttl``
seconds (SEARCHCRAWL_HEALTH_CACHE_SECONDS) and each ping is bounded by ``timeout``. Tika's ping is
its ``/version`` (as the converter's own check, content/convert/tika_client.py); without
SEARCHCRAWL_TIKA_URL there is no Tika to ask (None).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import requests

from searchcrawl.index.solr_client import SolrIndex


@dataclass(frozen=True)
class Health:
    solr: bool | None  # None: not asked (no Solr configured)
    tika: bool | None  # None: no Tika configured
    checked: float  # time.time() of the answers


def tika_ping(url: str, timeout: float = 5) -> bool:
    """Whether the Tika server at ``url`` answers its /version with 200."""
    try:
        return requests.get(url.rstrip("/") + "/version", timeout=timeout).status_code == 200
    except requests.RequestException:
        return False


class HealthCheck:
    """Solr's and Tika's pings, each answer kept ``ttl`` seconds (thread-safe: the web
    application's worker threads share one)."""

    def __init__(self, solr: Callable[[], bool] | None, tika: Callable[[], bool] | None, ttl: float = 30) -> None:
        self.solr, self.tika, self.ttl = solr, tika, ttl
        self._lock = threading.Lock()
        self._last: Health | None = None

    @classmethod
    def of(
        cls, solr_url: str, tika_url: str, ttl: float = 30, timeout: float = 5, solr_auth: tuple[str, str] | None = None
    ) -> HealthCheck:
        index = SolrIndex(solr_url, timeout=timeout, auth=solr_auth) if solr_url else None
        return cls(index.ping if index is not None else None, (lambda: tika_ping(tika_url, timeout)) if tika_url else None, ttl)

    def now(self) -> Health:
        with self._lock:
            last = self._last
            if last is not None and time.time() - last.checked < self.ttl:
                return last
            solr = self.solr() if self.solr is not None else None
            tika = self.tika() if self.tika is not None else None
            self._last = Health(solr, tika, time.time())
            return self._last
