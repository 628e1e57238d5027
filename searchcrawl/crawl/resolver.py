"""The crawl's DNS resolver: Scrapy's caching resolver, with the internal-address rule applied to
the addresses a connection is made to (``TWISTED_DNS_RESOLVER``).

Scrapy's HTTP handler connects through Twisted's ``HostnameEndpoint``, which asks the reactor's
name resolver for the addresses of host *and port* and connects to one of those. Filtering them
here means the rule (searchcrawl/rules/addresses.py) holds for the address actually connected to: a
name that resolved to a public address when the request was checked and to an internal one now
(DNS rebinding), or an IP literal in any spelling, gets no connection. A host left without
addresses fails like a name that does not resolve (Twisted's ``DNSLookupError``, which Scrapy
raises as its ``CannotResolveHostError``); ``refused`` remembers why, by host and port, so the
request's status says "internal address" (or "own service": a name that resolves to one of the
installation's services, which no policy admits), not "DNS failure", and it is not retried
(crawl/middlewares/address_guard.py ``ConnectionRefusalMiddleware``).

The resolver is made once per process (Scrapy builds it from the process's settings, before any
crawler exists); each crawler's ``AddressGuardMiddleware`` adds its source's policy when the
engine starts. With several crawlers in one process an internal address is allowed if any of
their sources admits it; `scrapy crawl` and scrapyd run one crawler per process.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

from scrapy.resolver import CachingHostnameResolver
from twisted.internet.interfaces import IAddress, IHostResolution, IResolutionReceiver
from zope.interface import implementer

from searchcrawl.rules.addresses import AddressPolicy, Refusal
from searchcrawl.rules.status_codes import Status

logger = logging.getLogger(__name__)

REFUSED_MEMORY = 1024  # hosts and ports whose refusal reason is kept for the request's status


class _Receiver(Protocol):
    """IResolutionReceiver as mypy can read it: zope declares an interface's methods without
    ``self``, which mypy (without the mypy-zope plugin) takes for methods missing it; nor does
    it see that ``@implementer`` makes a class provide an interface."""

    def resolutionBegan(self, resolution: IHostResolution) -> None: ...  # noqa: N802 - Twisted's names

    def addressResolved(self, address: IAddress) -> None: ...  # noqa: N802

    def resolutionComplete(self) -> None: ...  # noqa: N802


@implementer(IResolutionReceiver)
class _FilteringReceiver:
    """Passes on the addresses the policies allow; remembers why the others were refused."""

    def __init__(self, resolver: GuardedHostnameResolver, receiver: _Receiver, host: str, port: int) -> None:
        self.resolver, self.receiver, self.host, self.port = resolver, receiver, host, port
        self.refusals: list[Refusal] = []

    def resolutionBegan(self, resolution: IHostResolution) -> None:  # noqa: N802 - Twisted's name
        self.receiver.resolutionBegan(resolution)

    def addressResolved(self, address: IAddress) -> None:  # noqa: N802
        refusal = self.resolver.refusal(self.host, self.port, getattr(address, "host", ""))
        if refusal is None:
            self.receiver.addressResolved(address)
        else:
            self.refusals.append(refusal)

    def resolutionComplete(self) -> None:  # noqa: N802
        if self.refusals:
            self.resolver.remember_refusal(self.host, self.port, self.refusals[0])
            logger.debug("Connection refused by the internal-address guard: %s", self.refusals[0][1])
        self.receiver.resolutionComplete()


class GuardedHostnameResolver(CachingHostnameResolver):
    """CachingHostnameResolver (IPv4 and IPv6, cached) that never hands an internal address a
    source does not admit to a connection."""

    def __init__(self, reactor: Any, cache_size: int) -> None:
        super().__init__(reactor, cache_size)
        self.policies: list[AddressPolicy] = []
        self.refused: OrderedDict[tuple[str, int], Refusal] = OrderedDict()

    def add_policy(self, policy: AddressPolicy) -> None:
        self.policies.append(policy)

    def remove_policy(self, policy: AddressPolicy) -> None:
        if policy in self.policies:
            self.policies.remove(policy)

    def refusal(self, host: str, port: int, address: str) -> Refusal | None:
        """(status, reason) why ``address`` may not be connected to for ``host:port`` (None: it
        may): one of the installation's own services for any policy, else an internal address
        no policy admits."""
        reasons = [policy.refusal(host, port, [address]) for policy in self.policies]
        own = next((reason for reason in reasons if reason is not None and reason[0] == Status.OWN_SERVICE), None)
        if own is not None:
            return own
        if not reasons or any(reason is None for reason in reasons):
            return None
        return reasons[0]

    def remember_refusal(self, host: str, port: int, reason: Refusal) -> None:
        key = (host.lower(), port)
        self.refused[key] = reason
        self.refused.move_to_end(key)
        while len(self.refused) > REFUSED_MEMORY:
            self.refused.popitem(last=False)

    def remembered(self, host: str, port: int | None) -> Refusal | None:
        """Why the last connection to ``host:port`` got no address, if the guard refused it."""
        return self.refused.get((host.lower(), port or 0))

    def resolveHostName(  # noqa: N802 - Twisted's name
        self,
        resolutionReceiver: IResolutionReceiver,  # noqa: N803
        hostName: str,  # noqa: N803
        portNumber: int = 0,  # noqa: N803
        addressTypes: Sequence[type[IAddress]] | None = None,  # noqa: N803
        transportSemantics: str = "TCP",  # noqa: N803
    ) -> IHostResolution:
        receiver = _FilteringReceiver(self, resolutionReceiver, hostName, portNumber)
        return super().resolveHostName(
            receiver,  # type: ignore[arg-type]  # provides IResolutionReceiver (@implementer): mypy does not see it
            hostName,
            portNumber,
            addressTypes,
            transportSemantics,
        )
