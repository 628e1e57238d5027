"""GuardedHostnameResolver against a real DNS server: a name that a site's DNS answers with a public
address when the request is checked, and with 127.0.0.1 when the connection is made (DNS
rebinding), gets no connection.

The resolver needs a running Twisted reactor, which a test process must not install: a child
Python runs the scenario. It serves DNS on 127.0.0.1 (twisted.names, answers with a TTL of 0
from a script), makes that server the reactor's resolver (``installResolver``, the public API),
installs the crawl's resolver over it as Scrapy does (``install_on_reactor``), and connects with
``HostnameEndpoint``, as Scrapy's HTTP handler does, to a TCP server on 127.0.0.1 that counts the
connections it accepts. Nothing leaves the loopback interface: the public answer is only looked
up, never connected to.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

SCENARIO = r"""
import json
from scrapy.utils.reactor import install_reactor
install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
from twisted.internet import defer, protocol, reactor
from twisted.internet.endpoints import HostnameEndpoint
from twisted.names import client, common, dns, server

from searchcrawl.config.source import ScopeRules
from searchcrawl.crawl.resolver import GuardedHostnameResolver
from searchcrawl.rules.addresses import AddressPolicy, OwnService, OwnServices
from searchcrawl.rules.boundary import Boundary

ANSWERS = {
    b"rebind.test": ["93.184.216.34", "127.0.0.1"],
    b"intranet.test": ["127.0.0.1"],
    b"solr-alias.test": ["127.0.0.1"],
}
asked = []

class Script(common.ResolverBase):
    # Each name's answers in turn (the last one from then on), TTL 0: a rebinding site's DNS.
    def _lookup(self, name, cls, type, timeout):
        asked.append(name.decode())
        answers = ANSWERS.get(name)
        if not answers:
            return defer.fail(dns.DomainError(name))
        address = answers.pop(0) if len(answers) > 1 else answers[0]
        record = dns.RRHeader(name=name, type=dns.A, ttl=0, payload=dns.Record_A(address, ttl=0))
        return defer.succeed(([record] if type in (dns.A, dns.ALL_RECORDS) else [], [], []))

class Counting(protocol.Factory):
    accepted = 0
    def buildProtocol(self, addr):
        Counting.accepted += 1
        return protocol.Protocol()

async def connect(host, port):
    endpoint = HostnameEndpoint(reactor, host.encode(), port, timeout=5)
    try:
        connection = await defer.Deferred.fromCoroutine(_connect(endpoint))
    except Exception as failure:
        return type(failure).__name__
    connection.transport.loseConnection()
    return "connected"

async def _connect(endpoint):
    return await endpoint.connect(protocol.Factory.forProtocol(protocol.Protocol))

async def main():
    dns_port = reactor.listenUDP(0, dns.DNSDatagramProtocol(server.DNSServerFactory(clients=[Script()])), interface="127.0.0.1")
    lookup = client.Resolver(servers=[("127.0.0.1", dns_port.getHost().port)])
    reactor.installResolver(lookup)
    site = reactor.listenTCP(0, Counting(), interface="127.0.0.1")
    port = site.getHost().port
    solr = reactor.listenTCP(0, Counting(), interface="127.0.0.1")  # the installation's Solr
    solr_port = solr.getHost().port
    own = OwnServices([OwnService("a node of Solr", "127.0.0.1", solr_port)])
    seeds = [f"http://intranet.test:{port}/", f"http://solr-alias.test:{solr_port}/"]  # the source names it: refused all the same
    guarded = GuardedHostnameResolver(reactor, 100)
    guarded.add_policy(AddressPolicy(Boundary(seeds, ScopeRules()), seeds, own))
    guarded.install_on_reactor()
    result = {"port": port, "checked": await lookup.getHostByName("rebind.test")}  # the request's check: public
    result["rebound"] = await connect("rebind.test", port)  # the connection's look-up: 127.0.0.1
    result["accepted_after_rebinding"] = Counting.accepted
    result["refused"] = guarded.remembered("rebind.test", port)
    result["again"] = await connect("rebind.test", port)  # a second try: refused again
    result["admitted"] = await connect("intranet.test", port)  # the seed's own site may be internal
    result["accepted"] = Counting.accepted
    result["own"] = await connect("solr-alias.test", solr_port)  # a name of the installation's Solr
    result["own_refused"] = guarded.remembered("solr-alias.test", solr_port)
    result["accepted_at_the_end"] = Counting.accepted
    result["asked"] = asked
    print(json.dumps(result), flush=True)

def run():
    d = defer.Deferred.fromCoroutine(main())
    d.addErrback(lambda failure: print(json.dumps({"error": failure.getTraceback()}), flush=True))
    d.addBoth(lambda _: reactor.stop())

reactor.callWhenRunning(run)
reactor.run()
"""


def test_a_name_rebound_to_an_internal_address_after_the_check_gets_no_connection() -> None:
    done = subprocess.run([sys.executable, "-c", SCENARIO], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert "error" not in result, result["error"]
    assert result["checked"] == "93.184.216.34"
    assert result["rebound"] == "DNSLookupError"
    assert result["accepted_after_rebinding"] == 0
    assert result["refused"] == [
        941,
        f"rebind.test:{result['port']} is an internal address (127.0.0.1) and the source's domain and port rules do not admit it",
    ]
    assert result["again"] == "DNSLookupError"
    assert result["asked"][:2] == ["rebind.test", "rebind.test"]  # the check's look-up, the connection's
    assert result["admitted"] == "connected"
    assert result["accepted"] == 1
    # issue 91: a name resolving to the installation's Solr (host and port) gets no connection,
    # though the source names it as a seed
    assert result["own"] == "DNSLookupError" and result["accepted_at_the_end"] == 1
    assert result["own_refused"][0] == 944 and "is a node of Solr of this installation" in result["own_refused"][1]
