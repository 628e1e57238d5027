"""A crawl's own metrics over TLS with client certificates (crawl/extensions/crawl_metrics.py):
the extension built by get_crawler serves prometheus_client's server on 127.0.0.1; a scraper
with a certificate of the client CA reads the metrics, one without a certificate or with one of
another CA gets nothing, and plain HTTP gets no metrics either."""

from __future__ import annotations

import socket
import threading
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
    names = ("server_ca", "client_ca", "cert", "key", "bundle", "client", "stranger")
    paths = {name: tmp_path / f"{name}.pem" for name in names}
    server_ca.cert_pem.write_to_path(str(paths["server_ca"]))
    client_ca.cert_pem.write_to_path(str(paths["client_ca"]))
    served = server_ca.issue_cert("127.0.0.1")
    served.cert_chain_pems[0].write_to_path(str(paths["cert"]))
    served.private_key_pem.write_to_path(str(paths["key"]))
    served.private_key_and_cert_chain_pem.write_to_path(str(paths["bundle"]))  # the key in the certificate's file
    client_ca.issue_cert("prometheus.example").private_key_and_cert_chain_pem.write_to_path(str(paths["client"]))
    stranger_ca.issue_cert("prometheus.example").private_key_and_cert_chain_pem.write_to_path(str(paths["stranger"]))
    return paths


@pytest.mark.parametrize("key_file", [True, False], ids=["key-file", "key-in-certificate-file"])
def test_the_crawls_metrics_answer_only_a_scraper_with_a_client_certificate(tmp_path: Path, certificates, key_file: bool) -> None:
    """With the key in the certificate's file (no KEYFILE), prometheus_client's own server
    served plain HTTP to anyone: both ways are TLS with client certificates required."""
    port = free_port()
    files = {"SEARCHCRAWL_METRICS_CERTFILE": str(certificates["cert" if key_file else "bundle"])}
    if key_file:
        files["SEARCHCRAWL_METRICS_KEYFILE"] = str(certificates["key"])
    crawler = source_crawler(
        tmp_path, SEARCHCRAWL_METRICS_PORT=port, SEARCHCRAWL_METRICS_CLIENT_CAFILE=str(certificates["client_ca"]), **files
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


def test_a_silent_connection_blocks_neither_scrapes_nor_the_crawls_end(tmp_path: Path, certificates) -> None:
    """prometheus_client's TLS server shook hands in ``accept``, on its one thread, without a
    timeout: a connection that never spoke blocked every scrape and the server's shutdown."""
    port = free_port()
    crawler = source_crawler(
        tmp_path,
        SEARCHCRAWL_METRICS_PORT=port,
        SEARCHCRAWL_METRICS_CERTFILE=str(certificates["bundle"]),
        SEARCHCRAWL_METRICS_CLIENT_CAFILE=str(certificates["client_ca"]),
    )
    metrics = crawler.get_extension(CrawlMetrics)
    metrics.opened()
    silent = socket.create_connection(("127.0.0.1", port))  # says nothing, stays open
    try:
        answer = requests.get(
            f"https://127.0.0.1:{port}/metrics",
            verify=str(certificates["server_ca"]),
            cert=str(certificates["client"]),
            timeout=(5, 5),  # a bound on the test: a blocked server fails it
        )
        assert answer.status_code == 200
        closing = threading.Thread(target=metrics.closed, daemon=True)
        closing.start()
        closing.join(timeout=5)
        assert not closing.is_alive(), "the server's shutdown waits for a silent connection"
    finally:
        silent.close()
        metrics.closed()
        close_stores(crawler)
