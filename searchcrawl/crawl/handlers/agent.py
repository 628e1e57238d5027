"""Download handler: answers the requests of a source's agent (files, rows, messages; see
searchcrawl/agents/base.py) as an HTTP server would, so the spider and every component after it
treat them as pages.

- 304 when the reference's change token is the document's stored one (``If-None-Match``, sent
  by ConditionalGetMiddleware from the stored ETag): the document is not read at all; a
  duplicate whose token (and readers) did not change stays a duplicate of the same original, not
  read either;
- 200 with the reference's content, the document downloaded from its ``location`` (an origin
  in the source's ``fetch_origins``, through Scrapy's downloader), or the content the agent's
  ``fetch`` reads in a worker thread (``Content-Type``; the token as ``ETag``; the modification time as ``Last-Modified``);
- 404 when the agent says the document is gone;
- a reference whose access list could not be read (``Reference.access_unreadable``) is refused
  before anything, status 927: never read, never indexed, not even as public;
- an access the agent read with the content (``Content.access``) replaces the listing's in the
  request's reference, so the document is indexed with the access its content had when read
  (``Content.access_unreadable``: 927, as above); when the token read with it
  (``Content.token``) is not the listing's, no ETag is indexed: the next crawl reads it again (a
  304 on the listing's token would put the listed file's access on another text);
- a document larger than DOWNLOAD_MAXSIZE is not read (status 922), and a repository that cannot
  be read now fails the request (933, counted toward ``max_failures``; the indexed version stays).

It is the handler of the agent's URL scheme only (the spider loader sets DOWNLOAD_HANDLERS):
http(s) stay with Scrapy's handler, and a URL of the scheme that is not the agent's is refused.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
from dataclasses import replace
from datetime import datetime
from email.utils import format_datetime

from scrapy import Request
from scrapy.core.downloader.handlers.base import BaseDownloadHandler
from scrapy.crawler import Crawler
from scrapy.http import Headers, Response
from scrapy.responsetypes import responsetypes

from searchcrawl.agents.base import Agent, AgentError, Content, DocumentTooLarge
from searchcrawl.crawl.exceptions import RequestRefused, not_needed
from searchcrawl.crawl.meta import AGENT_DOWNLOAD, DONT_REDIRECT, DUPLICATE_OF, HANDLE_HTTPSTATUS_ALL, REFERENCE
from searchcrawl.crawl.pipelines.changes import duplicate_of
from searchcrawl.crawl.spider import same_readers
from searchcrawl.crawl.stores import source_of
from searchcrawl.rules.credentials import origin_of
from searchcrawl.rules.lifecycle import Event
from searchcrawl.rules.status_codes import Status

logger = logging.getLogger(__name__)


def header_token(token: str | None) -> str | None:
    """A change token as an ETag value: printable ASCII as it is, anything else (an agent's
    hostile or binary token) by its hash, so a header never carries a CR or LF."""
    if not token:
        return None
    if token.isascii() and token.isprintable() and len(token) <= 200:
        return token
    return "sha256:" + hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class AgentDownloadHandler(BaseDownloadHandler):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        agent = getattr(crawler.spider, "agent", None)  # an agent source's spider's (crawl/agent_spider.py)
        if agent is None:
            raise not_needed(type(self), "not a source with an agent")
        self.agent: Agent = agent
        self.max_bytes = crawler.settings.getint("DOWNLOAD_MAXSIZE")
        self.origins = frozenset(source_of(crawler).settings.fetch_origins)

    async def download_request(self, request: Request) -> Response:
        key = self.agent.key_of(request.url)
        if key is None:
            raise RequestRefused(Status.EXCLUDED_SCHEME, "not a document of the source's agent")
        data = request.meta.get(REFERENCE) or {}
        if data.get("access_unreadable"):  # never read, never indexed (not even as public): 927
            raise RequestRefused(Status.ACCESS_UNREADABLE, str(data["access_unreadable"]), event=Event.GONE)
        headers: dict[str, str] = {}
        token = header_token(data.get("token"))
        if token:
            headers["ETag"] = token
        if data.get("modified"):
            headers["Last-Modified"] = format_datetime(datetime.fromisoformat(data["modified"]), usegmt=True)
        if token and request.headers.get(b"If-None-Match") == token.encode("ascii"):
            logger.debug("Unchanged (same token %s): %s", token, request.url)
            return Response(request.url, status=304, headers=headers, request=request)
        duplicate = request.meta.get(DUPLICATE_OF)
        checksum = duplicate[2] if duplicate and len(duplicate) > 2 else None  # it holds the readers
        if (
            token
            and duplicate
            and duplicate[0] == token
            and same_readers(self.crawler.spider, request.url, request.meta, checksum)
        ):
            # still a duplicate (its readers too): not read, not converted
            logger.debug("Unchanged duplicate of %s (same token %s): %s", duplicate[1], token, request.url)
            refused = RequestRefused(Status.DUPLICATE, f"duplicate of {duplicate[1]}", event=Event.GONE)
            refused.outcome = replace(duplicate_of(duplicate[1]), fetched=False)
            raise refused
        content = await self.content(key, data, request.url)
        if content is None:
            logger.debug("Gone from the repository: %s", request.url)
            return Response(request.url, status=404, headers=headers, request=request)
        if content.access_unreadable:  # read with the content: never indexed, not even as public
            raise RequestRefused(Status.ACCESS_UNREADABLE, content.access_unreadable, event=Event.GONE)
        if content.access is not None:
            # read with the content, it is the one indexed (every step after reads REFERENCE)
            access = content.access.to_data()
            if access != data.get("access"):
                logger.debug("Access read with the content differs from the listing's, indexed as read: %s", request.url)
            request.meta[REFERENCE] = {**data, "access": access}
        if content.token is not None and content.token != data.get("token"):
            # what was read is not what was listed (changed since, or another file a link points
            # to now): no ETag is indexed, so the next crawl reads it again. The listing's would
            # make that crawl's 304 put the listed file's access on this text
            logger.debug("Token read with the content differs from the listing's, no ETag indexed: %s", request.url)
            headers.pop("ETag", None)
        headers["Content-Type"] = content.content_type
        response_class = responsetypes.from_args(headers=Headers(headers), url=request.url, body=content.body)
        return response_class(url=request.url, status=200, headers=headers, body=content.body, request=request)

    async def content(self, key: str, data: dict, url: str) -> Content | None:
        inline = data.get("content")
        content: Content | None
        if data.get("location") and inline is None:
            content = await self.download(data["location"], url)
        elif inline is not None:
            content = Content(base64.b64decode(inline["body"]), inline["content_type"], inline.get("name"))
        else:
            try:
                content = await asyncio.to_thread(self.agent.fetch, key, self.max_bytes)
            except DocumentTooLarge as exc:
                raise RequestRefused(Status.TOO_LARGE, f"larger than {self.max_bytes} bytes: {exc}", event=Event.GONE) from None
            except AgentError as exc:
                raise RequestRefused(
                    Status.CONNECTION_FAILED, f"the repository cannot be read: {exc}", event=Event.FAILED
                ) from None
        if content is not None and self.max_bytes and len(content.body) > self.max_bytes:
            raise RequestRefused(Status.TOO_LARGE, f"{len(content.body)} bytes, more than {self.max_bytes}", event=Event.GONE)
        return content

    async def download(self, location: str, url: str) -> Content | None:
        """The document at a reference's ``location``, through Scrapy's downloader and every
        downloader middleware (the address guard, robots.txt, credentials, politeness): only
        from an origin in the source's ``fetch_origins``, never redirected."""
        origin = origin_of(location)
        if origin is None or origin not in self.origins:
            raise RequestRefused(Status.EXCLUDED_DOMAIN, f"its location {location} is not on one of the source's fetch_origins")
        request = Request(location, meta={AGENT_DOWNLOAD: True, DONT_REDIRECT: True, HANDLE_HTTPSTATUS_ALL: True})
        engine = self.crawler.engine
        assert engine is not None
        response = await engine.download_async(request)
        logger.debug("Downloaded %s from %s: HTTP %d", url, location, response.status)
        if response.status in (404, 410):
            return None
        if response.status != 200:
            event = Event.FAILED if response.status >= 500 or response.status in (408, 429) else Event.GONE
            raise RequestRefused(response.status, f"its location {location} answered HTTP {response.status}", event=event)
        content_type = response.headers.get("Content-Type")
        return Content(response.body, content_type.decode("latin-1") if content_type else "application/octet-stream")
