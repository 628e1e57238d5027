"""Downloader middleware: a source's HTTP(S) proxy (``[proxy]``), for every request it decides.

Scrapy's HttpProxyMiddleware, subclassed: its ``meta["proxy"]`` and ``Proxy-Authorization``
handling stays (Scrapy's handler then sends http URLs to the proxy and tunnels https ones with
CONNECT, the credentials on the CONNECT only). What changes: the proxy comes from the source file,
never from the environment's ``http_proxy``/``https_proxy`` (a crawl server's environment does not
decide where a source's traffic goes); ``no_proxy`` (searchcrawl/rules/proxies.py) sends hosts,
domains or origins direct; and the decision is made afresh for every request, whatever its meta
or headers carry (a redirect's copy): ``Proxy-Authorization`` is removed from every request and
added only to one that goes through the source's proxy, so the password reaches only the proxy.
The password is read from the secret the table names (and so masked in every log line).

A proxy that refuses the credentials (407) or a CONNECT, or cannot be reached, gives the URL
status 938: a failure of the source's configuration, not counted toward ``max_failures``, nothing
removed for it.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.httpproxy import HttpProxyMiddleware
from scrapy.http import Response

from searchcrawl.crawl.exceptions import TransportFailed
from searchcrawl.crawl.meta import PROXY, PROXY_KEYS
from searchcrawl.rules.proxies import ProxyRule, goes_direct
from searchcrawl.rules.status_codes import Status
from searchcrawl.system.secrets import SecretError, required_secret

logger = logging.getLogger(__name__)


class ProxyError(ValueError):
    """A source's proxy cannot be used (its secret is not set); the message names the secret."""


class SourceProxyMiddleware(HttpProxyMiddleware):
    def __init__(self, auth_encoding: str | None = "latin-1", rule: ProxyRule | None = None, password: str | None = None) -> None:
        super().__init__(auth_encoding)
        self.proxies = {}  # the environment's proxies are not used
        self.rule = rule
        self.credentials: bytes | None = None
        self.refusals = 0
        if rule is not None and rule.user is not None and password is not None:
            self.credentials = b"Basic " + self._basic_auth_header(rule.user, password)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SourceProxyMiddleware:
        source = getattr(crawler.spidercls, "source", None)
        if source is not None and source.settings.proxy is not None and not crawler.settings.getbool("HTTPPROXY_ENABLED"):
            raise ProxyError(f"source {source.name} has a [proxy] table, and HTTPPROXY_ENABLED is off: it would go direct")
        middleware = super().from_crawler(crawler)  # NotConfigured when HTTPPROXY_ENABLED is off
        if source is None or source.settings.proxy is None:
            return middleware  # direct: the environment's proxies are not read
        rule: ProxyRule = source.settings.proxy
        password = None
        if rule.secret is not None:
            try:
                password = required_secret(rule.secret, "[proxy]")
            except SecretError as exc:
                raise ProxyError(str(exc)) from None
        logger.info("Source %s goes through the proxy %s (%d no_proxy entries)", source.name, rule.url, len(rule.no_proxy))
        return cls(middleware.auth_encoding, rule, password)

    def process_request(self, request: Request, spider: Any = None) -> None:
        request.headers.pop(b"Proxy-Authorization", None)
        for key in PROXY_KEYS:
            request.meta.pop(key, None)
        if self.rule is None or goes_direct(self.rule.no_proxy, request.url):
            return None
        if self.rule.url.startswith("https:") and request.url.lower().startswith("https:"):
            raise TransportFailed(
                Status.PROXY_FAILED,
                "Scrapy's HTTP/1.1 handler cannot tunnel an https URL through an https:// proxy: give the proxy's http:// address",
            )
        request.meta[PROXY] = self.rule.url
        if self.credentials is not None:
            request.headers[b"Proxy-Authorization"] = self.credentials
            # HttpProxyMiddleware's private key (crawl/meta.py PROXY_KEYS; Scrapy pinned to one
            # release for it): Scrapy keeps the Proxy-Authorization header only while the request's
            # proxy is the one it was set for, so a redirect elsewhere never carries it
            request.meta["_auth_proxy"] = self.rule.url
        return None

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Response:
        if response.status == 407 and request.meta.get(PROXY):
            self.refusals += 1
            if self.refusals == 1:  # once: every URL of the crawl would say the same
                logger.error(
                    "The proxy %s refused the request for %s (407): check [proxy] user and secret",
                    request.meta[PROXY],
                    request.url,
                )
            raise TransportFailed(Status.PROXY_FAILED, "HTTP 407: the source's proxy refused its credentials")
        return response
