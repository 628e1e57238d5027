"""The TLS of SourceTlsDownloadHandler alone: ``source_context_factory`` on a ``get_crawler``
crawler of a source with a ``[tls]`` table, and the context factory it makes shaking hands for
real with TLS servers on 127.0.0.1 (trustme certificates).

This test process runs without a Twisted reactor (see tests/e2e/test_robots.py), and
Scrapy's HTTP/1.1 handler needs one: the handler itself runs in the crawls of
tests/e2e/test_proxies_and_certificates.py. Here the factory's connection creator is used as the
handler would use it, its OpenSSL context (Scrapy's ``_get_creator_context``, the one internal
name of Scrapy's context factory this pins besides ``_ScrapyClientContextFactory`` and its
``_get_cert_options_kwargs``/``_verify_certificates``) driving a handshake over a plain socket.
"""

from __future__ import annotations

import logging
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import trustme
from OpenSSL import SSL
from scrapy.core.downloader.contextfactory import _get_creator_context

from searchcrawl.crawl.handlers.tls import UNVERIFIED_STAT, SourceTlsContextFactory, source_context_factory
from tests.components import source_crawler


class TlsServer:
    """Accepts TLS connections on 127.0.0.1 and says "ok" on each."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.context = context
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with connection:
                try:
                    with self.context.wrap_socket(connection, server_side=True) as tls:
                        tls.sendall(b"ok")
                except OSError:  # a handshake the server refused (ssl.SSLError): the client says so
                    pass

    def close(self) -> None:
        self.listener.close()


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def server(ca: trustme.CA):
    started: list[TlsServer] = []

    def start(client_ca: trustme.CA | None = None) -> TlsServer:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ca.issue_cert("127.0.0.1").configure_cert(context)
        if client_ca is not None:
            context.verify_mode = ssl.CERT_REQUIRED
            client_ca.configure_trust(context)
        started.append(TlsServer(context))
        return started[-1]

    yield start
    for tls_server in started:
        tls_server.close()


def handshake(factory: SourceTlsContextFactory, port: int) -> bytes:
    """Connect as Scrapy's handler would (the creator for 127.0.0.1:port) and read the server's word."""
    context = _get_creator_context(factory.creatorForNetloc(b"127.0.0.1", port))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        connection = SSL.Connection(context, sock)
        connection.set_connect_state()
        return patiently(lambda: (connection.do_handshake(), connection.recv(2))[1], sock)


def patiently(step: Callable[[], bytes], sock: socket.socket) -> bytes:
    """``step`` again while OpenSSL wants to read (a socket with a timeout is non-blocking to it)."""
    deadline = time.monotonic() + 5
    while True:
        try:
            return step()
        except SSL.WantReadError:
            if time.monotonic() > deadline:
                raise
            select.select([sock], [], [], 0.5)


def factory_of(tmp_path: Path, tls: str, **settings: object):
    crawler = source_crawler(tmp_path, f'seeds = ["https://127.0.0.1/"]\n[tls]\n{tls}', **settings)
    return crawler, *source_context_factory(crawler, None)


def test_the_source_ca_bundle_is_the_trust_root(tmp_path: Path, ca: trustme.CA, server) -> None:
    site = server()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    _crawler, factory, problem = factory_of(tmp_path, 'ca_bundle = "ca.pem"\n')
    assert problem is None and handshake(factory, site.port) == b"ok"

    _crawler, plain, _problem = factory_of(tmp_path, "")  # the system's CAs: the private CA is unknown
    with pytest.raises(SSL.Error, match="certificate verify failed"):
        handshake(plain, site.port)


def test_verify_false_shakes_hands_and_warns_once(tmp_path: Path, server, caplog: pytest.LogCaptureFixture) -> None:
    site = server()
    with caplog.at_level(logging.WARNING):
        crawler, factory, _problem = factory_of(tmp_path, "verify = false\n")
        source_context_factory(crawler, None)  # the second handler (http and https) says nothing more
    assert handshake(factory, site.port) == b"ok"
    warnings = [record for record in caplog.records if "NOT verified" in record.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING and "unit" in warnings[0].getMessage()
    assert crawler.stats.get_value(UNVERIFIED_STAT) == 1


def test_the_client_certificate_is_sent(tmp_path: Path, ca: trustme.CA, server) -> None:
    client_ca = trustme.CA()
    site = server(client_ca)
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    client_ca.issue_cert("crawler@example.test").private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "client.pem"))
    _crawler, factory, problem = factory_of(tmp_path, 'ca_bundle = "ca.pem"\nclient_cert = "client.pem"\n')
    assert problem is None and "certificate" in factory._get_cert_options_kwargs()
    assert handshake(factory, site.port) == b"ok"

    _crawler, without, _problem = factory_of(tmp_path, 'ca_bundle = "ca.pem"\n')
    with pytest.raises(SSL.Error):  # TLS 1.3: the server's alert arrives with the first read
        handshake(without, site.port)


def test_a_passphrase_that_is_not_set_is_the_crawls_problem(tmp_path: Path, ca: trustme.CA, monkeypatch) -> None:
    from cryptography.hazmat.primitives.serialization import (
        BestAvailableEncryption,
        Encoding,
        PrivateFormat,
        load_pem_private_key,
    )

    client = ca.issue_cert("crawler@example.test")
    client.cert_chain_pems[0].write_to_path(str(tmp_path / "client.pem"))
    key = load_pem_private_key(client.private_key_pem.bytes(), None)
    (tmp_path / "client.key").write_bytes(
        key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(b"pp-Zx19-secret"))
    )
    monkeypatch.delenv("UNIT_KEY_PASSPHRASE", raising=False)
    tls = 'client_cert = "client.pem"\nclient_key = "client.key"\nclient_key_secret = "UNIT_KEY_PASSPHRASE"\n'
    _crawler, _factory, problem = factory_of(tmp_path, tls)
    assert problem is not None and "UNIT_KEY_PASSPHRASE" in problem and "is not set" in problem
    monkeypatch.setenv("UNIT_KEY_PASSPHRASE", "pp-Zx19-secret")
    _crawler, factory, problem = factory_of(tmp_path, tls)
    assert problem is None and "privateKey" in factory._get_cert_options_kwargs()


def test_scrapys_private_names_the_handler_replaces_and_reads_are_there() -> None:
    """SourceTlsDownloadHandler replaces HTTP11DownloadHandler's ``_contextFactory`` and reads the
    replaced factory's ``_ssl_method`` (through getattr, which would fall back silently): a Scrapy
    release that renames either fails here before the pin in pyproject.toml is moved to it."""
    import inspect

    from scrapy.core.downloader.contextfactory import _ScrapyClientContextFactory
    from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler

    assert _ScrapyClientContextFactory(method=SSL.TLS_METHOD)._ssl_method == SSL.TLS_METHOD
    assert "self._contextFactory" in inspect.getsource(HTTP11DownloadHandler.__init__)
    assert "contextFactory=self._contextFactory" in inspect.getsource(HTTP11DownloadHandler)  # what it connects with
