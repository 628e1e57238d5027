"""A crawl's own metrics over TLS with client certificates (crawl/extensions/crawl_metrics.py):
the extension built by get_crawler serves prometheus_client's server on 127.0.0.1; a scraper
with a certificate of the client CA reads the metrics, one without a certificate or with one of
another CA gets nothing, and plain HTTP gets no metrics either."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
import requests
import trustme

from searchcrawl.crawl.extensions.crawl_metrics import CrawlMetrics
from searchcrawl.dev.solr_runner import free_port
from tests.components import close_stores, source_crawler


@pytest.fixture
def certificates(tmp_path: Path) -> dict[str, Path]:
    server_ca, client_ca, stranger_ca = trustme.CA(), trustme.CA(), trustme.CA()
    paths = {name: tmp_path / f"{name}.pem" for name in ("server_ca", "client_ca", "cert", "key", "client", "stranger")}
    server_ca.cert_pem.write_to_path(str(paths["server_ca"]))
    client_ca.cert_pem.write_to_path(str(paths["client_ca"]))
    served = server_ca.issue_cert("127.0.0.1")
    served.cert_chain_pems[0].write_to_path(str(paths["cert"]))
    served.private_key_pem.write_to_path(str(paths["key"]))
    client_ca.issue_cert("prometheus.example").private_key_and_cert_chain_pem.write_to_path(str(paths["client"]))
    stranger_ca.issue_cert("prometheus.example").private_key_and_cert_chain_pem.write_to_path(str(paths["stranger"]))
    return paths


def test_the_crawls_metrics_answer_only_a_scraper_with_a_client_certificate(tmp_path: Path, certificates) -> None:
    port = free_port()
    crawler = source_crawler(
        tmp_path,
        SEARCHCRAWL_METRICS_PORT=port,
        SEARCHCRAWL_METRICS_CERTFILE=str(certificates["cert"]),
        SEARCHCRAWL_METRICS_KEYFILE=str(certificates["key"]),
        SEARCHCRAWL_METRICS_CLIENT_CAFILE=str(certificates["client_ca"]),
    )
    metrics = crawler.get_extension(CrawlMetrics)  # built with the crawler, as a crawl builds it
    metrics.opened()
    url = f"https://127.0.0.1:{port}/metrics"
    try:
        assert metrics.server is not None
        answer = requests.get(url, verify=str(certificates["server_ca"]), cert=str(certificates["client"]), timeout=30)
        assert answer.status_code == 200 and 'searchcrawl_crawl_documents_indexed_total{source="unit"}' in answer.text
        for cert in (None, str(certificates["stranger"])):
            with pytest.raises((requests.exceptions.SSLError, requests.exceptions.ConnectionError)):
                requests.get(url, verify=str(certificates["server_ca"]), cert=cert, timeout=30)
        with pytest.raises(OSError):  # plain HTTP on the TLS port: no metrics
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read()  # noqa: S310
    finally:
        metrics.closed()
        close_stores(crawler)
    assert metrics.server is None


def test_a_client_ca_without_a_certificate_is_refused_as_the_crawl_starts(tmp_path: Path, certificates) -> None:
    with pytest.raises(ValueError, match="need SEARCHCRAWL_METRICS_CERTFILE"):
        source_crawler(
            tmp_path, SEARCHCRAWL_METRICS_PORT=free_port(), SEARCHCRAWL_METRICS_CLIENT_CAFILE=str(certificates["client_ca"])
        )
