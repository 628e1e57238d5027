"""Download handler: Scrapy's HTTP/1.1 handler with a source's TLS rules (``[tls]``).

Scrapy 2.19 deprecates ``DOWNLOADER_CLIENTCONTEXTFACTORY`` (scrapy#7352, whose maintainers point
to subclassing the download handler instead); this handler is that subclass. It keeps everything
of Scrapy's handler and of its context factory (``DOWNLOAD_VERIFY_CERTIFICATES``, TLS versions and
ciphers, SNI, the non-verifying path) and adds, for one source (each source is crawled by its own
crawler): the CAs of ``ca_bundle`` as the trust root, and the client certificate of
``client_cert``/``client_key``, for the sites and for an https:// proxy alike. The context
factory subclasses Scrapy's internal base class ``_ScrapyClientContextFactory`` (its public alias
is deprecated for subclassing in 2.19) and takes the place of the handler's private
``_contextFactory``; tests/e2e/test_tls.py pins what is used of them, and pyproject.toml
pins Scrapy to one release (2.19.0).

It is the http and https handler of a source with a ``[tls]`` table (the others keep Scrapy's
own, which verifies too: ``DOWNLOAD_VERIFY_CERTIFICATES = True``). Verification is on unless the
source says ``[tls] verify = false``: the handler then logs a WARNING naming the source, once per
crawl. An encrypted client key is decrypted here with its secret (``client_key_secret``); if
that fails, the ERROR says why and every request gets status 937 (nothing is fetched without the
certificate, nothing removed), rather than a crawl of handshake failures.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from scrapy import Request
from scrapy.core.downloader.contextfactory import _ScrapyClientContextFactory
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.crawler import Crawler
from scrapy.http import Response
from twisted.internet.ssl import Certificate, optionsForClientTLS, trustRootFromCertificates

from searchcrawl.crawl.exceptions import TransportFailed
from searchcrawl.rules.status_codes import Status
from searchcrawl.rules.tls_settings import TlsFileError, TlsFiles, load_client_key
from searchcrawl.system.secrets import SecretError, required_secret

if TYPE_CHECKING:
    from twisted.internet._sslverify import ClientTLSOptions
    from twisted.web.iweb import IPolicyForHTTPS

logger = logging.getLogger(__name__)

UNVERIFIED_STAT = "searchcrawl/tls_unverified"
HANDLERS_STAT = "searchcrawl/tls_handlers"


class SourceTlsContextFactory(_ScrapyClientContextFactory):
    """Scrapy's client context factory with a source's trust root and client certificate."""

    def __init__(
        self, *args: Any, trust: list[Certificate] | None = None, client: ClientCertificate | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.trust_root = trustRootFromCertificates(trust) if trust else None
        self.client = client

    def _get_cert_options_kwargs(self) -> dict[str, Any]:
        kwargs = super()._get_cert_options_kwargs()
        if self.client is not None:  # both of Scrapy's paths (verifying or not) build their options from these
            kwargs.update(privateKey=self.client.key, certificate=self.client.certificate)
            if self.client.chain:
                kwargs["extraCertChain"] = list(self.client.chain)
        return kwargs

    def creatorForNetloc(self, hostname: bytes, port: int) -> ClientTLSOptions:  # type: ignore[override]  # noqa: N802
        if self.trust_root is None or not self._verify_certificates:
            return super().creatorForNetloc(hostname, port)
        creator = optionsForClientTLS(
            hostname.decode("ascii"), trustRoot=self.trust_root, extraCertificateOptions=self._get_cert_options_kwargs()
        )
        return cast("ClientTLSOptions", creator)


@dataclass(frozen=True)
class ClientCertificate:
    """A client certificate with its key (never printed) and the certificates completing its chain."""

    certificate: x509.Certificate
    key: PrivateKeyTypes = field(repr=False)
    chain: tuple[x509.Certificate, ...] = ()


def client_material(files: TlsFiles, passphrase_secret: str | None) -> ClientCertificate | None:
    """The source's client certificate, or None without one; TlsFileError when its key cannot be
    used (the message names the secret, never its value)."""
    if files.client_cert is None or files.client_key is None:
        return None
    passphrase = None
    if passphrase_secret is not None:
        try:
            passphrase = required_secret(passphrase_secret, "[tls] client_key_secret")
        except SecretError as exc:
            raise TlsFileError(str(exc)) from None
    key = load_client_key(files.client_key, passphrase)
    certificates = x509.load_pem_x509_certificates(files.client_cert)
    if certificates[0].public_key() != key.public_key():
        raise TlsFileError("the client key does not belong to the client certificate ([tls] client_cert, client_key)")
    return ClientCertificate(certificates[0], key, tuple(certificates[1:]))


def source_context_factory(crawler: Crawler, method: int | None) -> tuple[SourceTlsContextFactory, str | None]:
    """The context factory of the crawled source's ``[tls]`` table, and why no request may be sent
    (None: they may). Logs the WARNING of an unverified crawl, once per crawl."""
    source = getattr(crawler.spidercls, "source", None)
    rules = source.settings.tls if source is not None else None
    files: TlsFiles = getattr(source, "tls_files", None) or TlsFiles()
    name = source.name if source is not None else crawler.spidercls.name
    assert crawler.stats is not None
    if not crawler.settings.getbool("DOWNLOAD_VERIFY_CERTIFICATES") and crawler.stats.get_value(UNVERIFIED_STAT) is None:
        crawler.stats.set_value(UNVERIFIED_STAT, 1)  # the http and https handlers are two instances
        why = "[tls] verify = false" if rules is not None and not rules.verify else "DOWNLOAD_VERIFY_CERTIFICATES is false"
        logger.warning(
            "TLS certificates are NOT verified for source %s (%s): anyone between the crawler and its sites can "
            "read and change what it fetches",
            name,
            why,
        )
    problem = None
    try:
        client = client_material(files, rules.client_key_secret if rules is not None else None)
    except TlsFileError as exc:
        problem = f"[tls] of source {name}: {exc}"
        logger.error("%s: no request of this crawl is sent", problem)
        client = None
    trust = [Certificate.loadPEM(pem) for pem in files.ca_certificates]
    first = crawler.stats.get_value(HANDLERS_STAT) is None  # the http and https handlers are two instances
    crawler.stats.inc_value(HANDLERS_STAT)
    if first and (trust or client):
        logger.debug(
            "TLS of source %s: %d CA certificates of its own, %s client certificate", name, len(trust), "a" if client else "no"
        )
    factory = SourceTlsContextFactory.from_crawler(crawler, method=method, trust=trust, client=client)
    return factory, problem


class SourceTlsDownloadHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler whose TLS follows the crawled source's ``[tls]`` table."""

    lazy = False  # built when the crawl starts: a TLS problem is said at once, not at the first https URL

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        # Scrapy's factory, built by the parent from the same settings, is replaced by the source's
        method = getattr(self._contextFactory, "_ssl_method", None)
        factory, self.problem = source_context_factory(crawler, method)
        self._contextFactory = cast("IPolicyForHTTPS", factory)

    async def download_request(self, request: Request) -> Response:
        if self.problem is not None:
            raise TransportFailed(Status.TLS_FAILED, self.problem)
        return await super().download_request(request)
