"""Downloader middleware: the internal-address guard, for every request the crawl makes.

Every request passes here on its way to the network, whatever made it: a link, a seed, a
redirect of any kind, a meta refresh target, a robots.txt fetch or its redirects. The rule is
``searchcrawl.rules.addresses.AddressPolicy``: an internal address only for a host and port the
source's domain and port rules admit (or a seed's). A request to a host:port the rules admit
passes without a DNS look-up; any other host is resolved here and refused (status 941) when one
of its addresses is internal, or when it does not resolve at all. The connection itself then
goes through ``GuardedHostnameResolver`` (searchcrawl/crawl/resolver.py), which applies the same rule
to the addresses it connects to, so an answer that changes between this check and the connection
(DNS rebinding) gets no connection either; such a refusal is recorded with the guard's status,
never retried (``ConnectionRefusalMiddleware``).

Above that rule, the installation's own services (searchcrawl/crawl/own_services.py: every
node of its Solr, a SolrCloud's live nodes, Tika, the web application, the model servers, the
metrics endpoints) are refused with status 944, whatever the source says: by their name and port
here (also a redirect's target, which passes here again), and by the addresses a name is connected
to in the resolver. A SolrCloud's live nodes are read again every minute
(SEARCHCRAWL_SOLR_NODES_REFRESH); while they cannot be learnt, every internal address on a port of
SOLR_URL's nodes is refused (fail closed).

Schemes: only http and https reach the network. ``file:`` URLs (file sources only; the download
handler is off otherwise) are read only when the real path, links resolved, is below a seed's
folder. Anything else is refused with status 900.

Through a source's ``[proxy]``, the proxy's own address is admitted (the source file names it);
the proxy resolves the sites' names, so for those requests the rule holds for addresses written
in URLs and for names resolved here, not for what the proxy connects to. A name the rules admit
is resolved here too for such a request: one of its addresses being an own service's refuses it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.reactor import is_reactor_installed
from twisted.internet.defer import Deferred
from twisted.internet.task import LoopingCall
from twisted.internet.threads import deferToThread
from twisted.python.failure import Failure

from searchcrawl.config.source import Source
from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.own_services import LiveNodes, live_solr_nodes, own_services_now, own_services_of, solr_nodes
from searchcrawl.crawl.requests import admission_of
from searchcrawl.crawl.resolver import GuardedHostnameResolver
from searchcrawl.crawl.stores import source_of
from searchcrawl.rules.addresses import SAFE_SCHEMES, AddressPolicy, OwnServices, Refusal, ip_of, site_of_url
from searchcrawl.rules.boundary import Boundary
from searchcrawl.rules.proxies import goes_direct
from searchcrawl.rules.rendering import abort_heavy_request
from searchcrawl.rules.status_codes import Status, status_for_exception
from searchcrawl.system import paths

logger = logging.getLogger(__name__)


def file_folders(seeds: Sequence[str]) -> list[str]:
    """The real folders (links resolved) below which a file source may read."""
    folders = []
    for seed in seeds:
        parts = urlsplit(seed)
        if parts.scheme.lower() == "file":
            path = unquote(parts.path)
            folder = path if path.endswith("/") else os.path.dirname(path)
            folders.append(os.path.join(os.path.realpath(folder), ""))
    return folders


class AddressGuardMiddleware:
    """The internal-address guard (see the module's docstring), from the source (its seeds,
    proxy and fetch origins), its boundary, and its agent's scheme (None: a web source)."""

    def __init__(
        self,
        crawler: Crawler,
        source: Source,
        boundary: Boundary,
        agent_scheme: str | None = None,
        own: OwnServices | None = None,
    ) -> None:
        self.crawler = crawler
        self.source = source
        # the source's [proxy] is a site it names, as a seed is: it may be an internal address
        proxy = source.settings.proxy
        # so are the origins an agent's documents are downloaded from (fetch_origins)
        admitted = source.seed_urls + ((proxy.url,) if proxy else ()) + tuple(source.settings.fetch_origins)
        self.policy = AddressPolicy(boundary, admitted, own)
        browser_guard = crawler.settings.get("PLAYWRIGHT_ABORT_REQUEST")
        if isinstance(browser_guard, BrowserRequestGuard):
            browser_guard.policy = self.policy  # what the browser loads: the crawl's one policy
        self.folders = file_folders(source.seed_urls)
        # a source's agent answers its own scheme's URLs (crawl/handlers/agent.py): no network
        self.agent_scheme = agent_scheme
        self.resolver: GuardedHostnameResolver | None = None
        # a SolrCloud's live nodes, asked for when the engine starts (requests wait for that
        # first answer: ``answered`` stays false until ``_learnt`` ran once) and again every
        # SEARCHCRAWL_SOLR_NODES_REFRESH seconds, one question at a time (``in_question``). Not a
        # Deferred's ``called``: a chain is "called" once its first step (the names' addresses)
        # has its result, while its second (the cluster state) still runs, and the crawl's
        # first requests went on unguarded then (a CI run fetched the other node's select)
        self.asked = False
        self.answered = False
        self.in_question = False
        self.waiting: list[Deferred[None]] = []
        self.refresh: LoopingCall | None = None
        crawler.signals.connect(self.engine_started, signal=signals.engine_started)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AddressGuardMiddleware:
        agent = getattr(crawler.spider, "agent", None)  # a source of another type: its spider's
        boundary = admission_of(crawler).chain.boundary
        own = own_services_of(crawler.settings.get, crawler.settings.getbool("SEARCHCRAWL_CRAWL_SOLR_PORTS"))
        return cls(crawler, source_of(crawler), boundary, agent.scheme if agent is not None else None, own)

    def engine_started(self) -> None:
        resolver = guarded_resolver()
        if resolver is not None:
            self.resolver = resolver
            resolver.add_policy(self.policy)
        else:
            logger.warning(
                "TWISTED_DNS_RESOLVER is not searchcrawl.crawl.resolver.GuardedHostnameResolver: internal "
                "addresses are checked when a request is made, not again when it connects"
            )

        interval = self.crawler.settings.getfloat("SEARCHCRAWL_SOLR_NODES_REFRESH")
        if interval > 0:
            self.refresh = LoopingCall(self.learn_solr_nodes)
            self.refresh.start(interval, now=True)
        else:
            self.learn_solr_nodes()

    def learn_solr_nodes(self) -> None:
        """Resolve the services' names again, and ask a SolrCloud for its live nodes (on a
        thread, one question at a time): they are refused like SOLR_URL's, a node that joins
        later too, and a name's new address as well as its old."""
        if self.in_question:
            return
        self.asked = self.in_question = True
        settings = self.crawler.settings
        asking = deferToThread(own_services_now, settings.get)
        asking.addCallback(lambda found: self.policy.own.add(*found))
        asking.addCallback(lambda _: deferToThread(live_solr_nodes, paths.solr_url(settings), paths.solr_auth(settings)))
        asking.addCallbacks(self._learnt, self._not_learnt)

    def _learnt(self, found: LiveNodes | None) -> None:
        """The live nodes are refused; none learnt from what may be a SolrCloud: fail closed
        (``OwnServices.nodes_unknown``), with a WARNING when that begins."""
        own = self.policy.own
        try:
            if found is None:
                if not own.unknown_nodes:
                    logger.warning(
                        "The SolrCloud's live nodes cannot be learnt from SOLR_URL (its cluster state is refused or "
                        "does not answer): every internal address on a port of SOLR_URL's nodes is refused until they are"
                    )
                own.nodes_unknown(solr_nodes(self.crawler.settings.get))
            else:
                if own.unknown_nodes:
                    logger.info("The SolrCloud's live nodes are learnt again: only they are refused")
                own.nodes_known()
                own.add(*found)
        finally:  # whatever happened, the question is closed: no request waits for ever, none asks twice
            self.answered, self.in_question = True, False
            self._release()

    def _not_learnt(self, failure: Failure) -> None:
        logger.debug("No SolrCloud live nodes learnt: %s", failure.value)
        self._learnt(None)

    def _release(self) -> None:
        """The requests waiting for the live nodes go on."""
        for waiter in self.waiting:
            waiter.callback(None)
        self.waiting.clear()

    async def solr_nodes_learnt(self) -> None:
        """Wait until the SolrCloud's live nodes are known (or its asking failed)."""
        if self.asked and not self.answered:
            waiter: Deferred[None] = Deferred()
            self.waiting.append(waiter)
            await maybe_deferred_to_future(waiter)

    def engine_stopped(self) -> None:
        if self.refresh is not None and self.refresh.running:
            self.refresh.stop()
        if self.resolver is not None:
            self.resolver.remove_policy(self.policy)

    async def process_request(self, request: Request) -> None:
        scheme, _host, _port = site_of_url(request.url)
        if scheme == self.agent_scheme:
            return  # the agent admits its documents when it reads them (a file below its roots)
        if scheme == "file" and self.folders:
            self._check_file(request.url)
            return
        await self.solr_nodes_learnt()
        proxy = self.source.settings.proxy
        proxied = proxy is not None and not goes_direct(proxy.no_proxy, request.url)
        refused = await check_url(self.policy, request.url, proxied=proxied)
        if refused is not None:
            logger.debug("Refused (%s): %s", refused[1], request.url)
            raise RequestRefused(*refused)

    def _check_file(self, url: str) -> None:
        path = os.path.realpath(unquote(urlsplit(url).path))
        if not any(path.startswith(folder) or path + "/" == folder for folder in self.folders):
            raise RequestRefused(Status.EXCLUDED_PATH, f"{url} is (or links to) a file outside the seeds' folders")


class ConnectionRefusalMiddleware:
    """The guard's refusals at the connection, recorded as what they are. A connection the crawl's
    resolver (searchcrawl/crawl/resolver.py) gives no address fails as a name that does not
    resolve (Scrapy's ``CannotResolveHostError``); this middleware gives it the guard's status
    (944 for one of the installation's own services, 941 for an internal address) before the
    retry middleware would retry it as a DNS failure: it stands just above the retry middleware
    in DOWNLOADER_MIDDLEWARES (a download's exception passes the middlewares from the highest
    number down), below those that give back what a request held (a site's turn, the fleet's)."""

    def process_exception(self, request: Request, exception: Exception) -> None:
        resolver = guarded_resolver()
        refused = connection_refusal(request.url, exception, resolver.remembered) if resolver is not None else None
        if refused is not None:
            logger.debug("Refused at the connection (%s): %s", refused[1], request.url)
            raise RequestRefused(*refused)


def guarded_resolver() -> GuardedHostnameResolver | None:
    """The crawl's resolver (TWISTED_DNS_RESOLVER, one a process), None when it is another, or
    when no reactor runs (a component used without a crawl: importing one would install it)."""
    if not is_reactor_installed():
        return None
    from twisted.internet import reactor

    resolver = getattr(reactor, "nameResolver", None)
    return resolver if isinstance(resolver, GuardedHostnameResolver) else None


def connection_refusal(url: str, error: BaseException, remembered: Callable[[str, int | None], Refusal | None]) -> Refusal | None:
    """The guard's (status, reason) behind a download of ``url`` that failed with ``error``, or
    None: a DNS failure (``status_for_exception``'s, Twisted's or Scrapy's) of a host and port
    whose connection the resolver refused (``remembered``), not a name that does not resolve."""
    if status_for_exception(error) != Status.DNS_FAILURE:
        return None
    _scheme, _host, port = site_of_url(url)
    return remembered(urlsplit(url).hostname or "", port)  # the host as the connection named it


async def check_url(policy: AddressPolicy, url: str, connects_itself: bool = False, proxied: bool = False) -> Refusal | None:
    """(status, reason) when ``url`` may not be requested under ``policy``, else None: a scheme
    other than http(s), one of the installation's own services, a name that does not resolve,
    or an internal address the policy does not admit. Names are resolved only for a host and
    port the policy does not admit anyway (the crawl's resolver checks the addresses an
    admitted name is connected to), and, for a request through a proxy (``proxied``: the
    resolver sees only the proxy's name), for the own services' rule: an admitted name that
    resolves here to one of them is refused; one that does not resolve here is the proxy's."""
    scheme, host, port = site_of_url(url)
    if scheme not in SAFE_SCHEMES:
        return Status.EXCLUDED_SCHEME, f'scheme "{scheme}" is never fetched: {url}'
    own = policy.own.refusal(host, port, urlsplit(url).path or "/")
    if own is not None:
        return Status.OWN_SERVICE, own
    if ip_of(host) is None and policy.admits(host, port) and not connects_itself:
        own = await own_service_refusal(policy, url) if proxied else None
        # a name the rules admit: the crawl's resolver checks what it is connected to
        return None if own is None else (Status.OWN_SERVICE, own)
    addresses = await addresses_now(host, port)
    if addresses is None:
        return Status.DNS_FAILURE, f"{host} does not resolve: not requested"
    return policy.refusal(host, port, addresses)


async def addresses_now(host: str, port: int | None) -> list[str] | None:
    """The addresses ``host`` is (an address) or resolves to now; None when it does not resolve."""
    literal = ip_of(host)
    if literal is not None:
        return [str(literal)]
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return None
    return sorted({str(info[4][0]) for info in infos})


async def own_service_refusal(policy: AddressPolicy, url: str) -> str | None:
    """Why ``url`` is one of the installation's own services (by its name and path, or an address
    its name resolves to now), or None: for what an agent asks its repository itself."""
    _scheme, host, port = site_of_url(url)
    if not host or port is None:
        return None  # a local path, or a scheme of no known port: no service of this installation
    return policy.own.refusal(host, port, urlsplit(url).path or "/", await addresses_now(host, port) or [])


class BrowserRequestGuard:
    """PLAYWRIGHT_ABORT_REQUEST of a rendering source: what the browser loads for a page (its
    scripts' fetch and XHR, frames, stylesheets, and the page's own redirects) passes the same
    rule as every request of the crawl (``check_url``), through scrapy-playwright's request
    routing; data, blob and about URLs never leave the browser; heavy resources (images, fonts,
    media) are not loaded at all.

    The browser resolves names itself, so this check is made on the name's addresses just before
    the browser connects, not on the connection (a DNS answer that changes in between is the
    remaining window for rendered pages; the crawler's own requests have none)."""

    def __init__(self, policy: AddressPolicy) -> None:
        self.policy = policy

    async def __call__(self, request: Any) -> bool:
        if abort_heavy_request(request):
            return True
        if site_of_url(request.url)[0] in ("data", "blob", "about"):
            return False
        return await check_url(self.policy, request.url, connects_itself=True) is not None
