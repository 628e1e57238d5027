"""Download handler: the source's TLS handler (Scrapy's HTTP/1.1 handler with its [tls] table), answering the
``type = "ntlm"`` origins on the connection they belong to.

NTLM authenticates the TCP connection (IIS, SharePoint): the negotiate and authenticate messages
must go on one keep-alive connection, and later requests on it need no handshake. A downloader
middleware cannot promise that (a request it sends again goes back through the scheduler, and
other requests to the site may take the connection between two legs), so the handshake happens
here, inside one ``download_request``, and requests to an NTLM origin go one at a time: with one
request in flight, Twisted's connection pool (``HTTPConnectionPool``, which puts a connection back
before the response is delivered) holds at most one connection to the origin, and each request
takes that one. A request is sent as it is; a 401 offering NTLM (or Negotiate) starts a
handshake on the connection: the request again with the negotiate message, the server's
challenge, the request again with the answer. A page costs one request on an authenticated
connection, three on a new one (the first page, or after the server closed the connection). An
answer challenged again (the pool replaced a connection the server had closed) gets one more
handshake; a 401 after that goes to SiteAuthMiddleware, which makes it status 936.

Other origins, and sources without NTLM, are downloaded exactly as by Scrapy's handler.
SiteAuthMiddleware strips every ``Authorization`` header before a request gets here, so the
messages only ever go to the credential's own origin (a redirect to another port carries none).
"""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from searchcrawl.crawl.handlers.tls import SourceTlsDownloadHandler
from searchcrawl.crawl.meta import AUTH_SENT
from searchcrawl.crawl.middlewares.site_auth import read_credentials
from searchcrawl.crawl.stores import source_of
from searchcrawl.rules.credentials import Credentials, origin_of
from searchcrawl.rules.ntlm_handshake import NtlmError, NtlmHandshake, offered_scheme

logger = logging.getLogger(__name__)

HANDSHAKES_PER_REQUEST = 2  # a second one only when the answer itself was challenged on a new connection


class NtlmDownloadHandler(SourceTlsDownloadHandler):
    """The source's TLS handler (its [tls] table, if any, applies to NTLM sites too), answering
    NTLM challenges on the connection they belong to."""

    def __init__(self, crawler: Crawler) -> None:
        rules = [rule for rule in source_of(crawler).settings.auth if rule.type == "ntlm"]
        self.by_origin: dict[str, Credentials] = {}
        for credential in read_credentials(rules):  # a secret not set stops the crawl, naming it
            for origin in credential.rule.origins:
                self.by_origin.setdefault(origin, credential)
        self.locks = {origin: asyncio.Lock() for origin in self.by_origin}
        self.stats = crawler.stats  # kept here: the parent's crawler attribute is private  # one request at a time
        super().__init__(crawler)  # its pool keeps CONCURRENT_REQUESTS_PER_DOMAIN (>= 1) connections per origin

    async def download_request(self, request: Request) -> Response:
        origin = origin_of(request.url)
        credential = self.by_origin.get(origin or "")
        if credential is None or origin is None:
            return await super().download_request(request)
        async with self.locks[origin]:
            response = await super().download_request(request)
            for _ in range(HANDSHAKES_PER_REQUEST):
                scheme = offered_scheme(_challenges(response)) if response.status == 401 else None
                if scheme is None:
                    break
                response = await self.handshake(request, response, credential, scheme, origin)
            return response

    async def handshake(self, request: Request, refused: Response, credential: Credentials, scheme: str, origin: str) -> Response:
        """The request's negotiate and authenticate legs on the origin's connection: the last
        answer (a 401 that cannot be answered as it is, for SiteAuthMiddleware to record)."""
        assert credential.rule.user is not None
        self.stats.inc_value("searchcrawl/ntlm_handshakes")
        logger.debug("%s asks for %s: handshake on its connection for %s", origin, scheme, request.url)
        try:
            context = NtlmHandshake(scheme, credential.rule.user, credential.value, urlsplit(request.url).hostname or "")
            refused = await super().download_request(_with_authorization(request, context.negotiate()))
            answer = context.authenticate(_challenges(refused)) if refused.status == 401 else None
        except NtlmError as exc:
            logger.error("%s: %s", origin, exc)
            return refused
        if answer is None:
            logger.debug("%s answered the %s negotiate message with HTTP %d", origin, scheme, refused.status)
            return refused
        request.meta[AUTH_SENT] = True
        return await super().download_request(_with_authorization(request, answer))


def _challenges(response: Response) -> list[str]:
    return [value.decode("latin-1") for value in response.headers.getlist("WWW-Authenticate")]


def _with_authorization(request: Request, value: str) -> Request:
    """A leg of the handshake: the request with an ``Authorization`` header (never logged)."""
    leg = request.replace()
    leg.headers["Authorization"] = value
    return leg
