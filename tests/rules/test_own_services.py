"""The installation's own services (rules/addresses.py ``OwnServices``) as plain decisions: a
service is met by its name and port, by an address its name resolved to on its port, and, when it
runs on this machine, on its port at any of this machine's addresses; another port of the same host
is a site like any other (the project's tests crawl sites on 127.0.0.1 beside their Solr)."""

from __future__ import annotations

import ipaddress

from searchcrawl.config.source import ScopeRules
from searchcrawl.rules.addresses import AddressPolicy, OwnService, OwnServices, ip_of
from searchcrawl.rules.boundary import Boundary
from searchcrawl.rules.status_codes import Status

SOLR = OwnService("a node of Solr", "127.0.0.1", 8983)
REMOTE = OwnService("Tika", "tika.corp.test", 9998)
PUBLIC = OwnService.of_url("the web application", "https://intranet.corp.test/search", behind_proxy=True)


def services() -> OwnServices:
    assert PUBLIC is not None
    return OwnServices([SOLR, REMOTE, PUBLIC], {"tika.corp.test": ["10.0.0.9"]}, machine={"10.0.0.5"}.__contains__)


def test_a_service_is_met_by_its_name_or_address_and_port_not_by_its_host_alone() -> None:
    own = services()
    assert own.at("127.0.0.1", 8983) == SOLR
    assert own.at("127.0.0.1", 8984) is None  # a site beside it: the source's to crawl
    assert own.at("tika.corp.test", 9998) == REMOTE
    assert own.at("TIKA.corp.test.", 9998) == REMOTE  # spellings normalise
    assert own.at("tika.corp.test", 80) is None
    assert own.at("10.0.0.9", 9998) == REMOTE  # the address its name resolved to
    assert own.at("alias.corp.test", 9998, addresses=["10.0.0.9"]) == REMOTE  # a name resolving to it
    assert own.at("alias.corp.test", 9998, addresses=["10.0.0.8"]) is None


def test_a_service_on_this_machine_answers_at_each_of_its_addresses() -> None:
    own = services()
    for host in ["127.0.0.2", "::1", "0.0.0.0", "::", "::ffff:127.0.0.1", "10.0.0.5", "[::1]"]:
        assert own.at(host, 8983) == SOLR, host
    assert own.at("localhost.", 8983, addresses=["127.0.0.1"]) == SOLR
    assert own.at("rebound.test", 8983, addresses=["93.184.216.34", "127.0.0.3"]) == SOLR  # any address counts
    assert own.at("10.0.0.6", 8983) is None  # another machine's 8983
    assert own.at("127.0.0.1", 9998) is None  # Tika runs elsewhere: this machine's 9998 is a site
    named = OwnServices([OwnService("scrapyd", "localhost", 6800)])
    assert named.at("127.0.0.1", 6800) is not None and named.at("[::1]", 6800) is not None


def test_a_public_address_behind_a_proxy_is_met_by_name_port_and_path_only() -> None:
    own = services()
    assert own.at("intranet.corp.test", 443, "/search") == PUBLIC
    assert own.at("intranet.corp.test", 443, "/search/admin/source-files") == PUBLIC
    for spelling in ["/%53earch/", "//search", "/wiki/../search/x", "/SEARCH", "\\search", "/x%2F..%2Fsearch"]:
        assert own.at("intranet.corp.test", 443, spelling) == PUBLIC, spelling  # as the proxy's server may read it
    assert own.at("intranet.corp.test", 443, "/searching") is None
    assert own.at("intranet.corp.test", 443, "/wiki/") is None  # the proxy's other sites
    assert own.at("other.corp.test", 443, "/search", addresses=["10.0.0.7"]) is None


def test_the_policy_refuses_a_service_whatever_the_source_admits() -> None:
    seed = "http://127.0.0.1:8983/solr/searchcrawl/select?q=*:*&wt=csv&fl=url,content"
    policy = AddressPolicy(Boundary([seed], ScopeRules()), [seed], services())
    refusal = policy.refusal("127.0.0.1", 8983, ["127.0.0.1"])
    assert refusal is not None and refusal[0] == Status.OWN_SERVICE
    assert refusal[1] == (
        "127.0.0.1:8983 is a node of Solr of this installation (127.0.0.1:8983): never crawled, whatever the source says"
    )
    public = policy.refusal("solr.example.org", 8983, ["93.184.216.34", "127.0.0.1"])
    assert public is not None and public[0] == Status.OWN_SERVICE
    assert policy.refusal("127.0.0.1", 8983, ["127.0.0.9"]) is not None
    site = AddressPolicy(Boundary(["http://127.0.0.1:8765/"], ScopeRules()), ["http://127.0.0.1:8765/"], services())
    assert site.refusal("127.0.0.1", 8765, ["127.0.0.1"]) is None  # a seed's site beside the services
    assert AddressPolicy(Boundary([seed], ScopeRules()), [seed]).refusal("127.0.0.1", 8983, ["127.0.0.1"]) is None


def test_ipv6_forms_that_carry_an_ipv4_address_are_that_address() -> None:
    """Issue 91 review: [::127.0.0.1] (IPv4-compatible), [::ffff:0:127.0.0.1] (SIIT) and
    [64:ff9b::7f00:1] (NAT64) reach 127.0.0.1 through a translator, and passed OwnServices."""
    own = services()
    for host in ["[::127.0.0.1]", "::ffff:0:127.0.0.1", "[64:ff9b::7f00:1]", "64:ff9b:1::7f00:1", "::ffff:7f00:1"]:
        assert ip_of(host) == ipaddress.ip_address("127.0.0.1"), host
        assert own.at(host, 8983) == SOLR, host
        assert own.at("rebound.test", 8983, addresses=[host]) == SOLR, host
    assert str(ip_of("::1")) == "::1" and str(ip_of("::")) == "::"  # IPv6's own loopback and unspecified
    assert str(ip_of("2001:db8::7f00:1")) == "2001:db8::7f00:1"


def test_a_hosts_address_is_read_once(monkeypatch) -> None:
    """Issue 102: every request asked ``ip_of`` of its host several times (the own services, the
    policy, its addresses), each a parse (for a name, an exception in ``ipaddress``): once a host now."""
    from searchcrawl.rules import addresses

    read: list[str] = []
    literal_ip = addresses.literal_ip
    monkeypatch.setattr(addresses, "literal_ip", lambda host: read.append(host) or literal_ip(host))
    ip_of.cache_clear()
    for _ in range(3):
        assert ip_of("10.1.2.3") == ipaddress.ip_address("10.1.2.3") and ip_of("wiki.corp.test") is None
        assert ip_of("[::ffff:10.1.2.4]") == ipaddress.ip_address("10.1.2.4")
    assert read == ["10.1.2.3", "wiki.corp.test", "[::ffff:10.1.2.4]"]
    ip_of.cache_clear()  # the other tests' answers read afresh, not this one's stand-in's


def test_a_known_service_read_again_keeps_its_new_addresses() -> None:
    """Hostile review of issue 91 point 1: ``add`` skipped a service it knew, so when a SolrCloud
    node's pod restarted at another address, the new address was thrown away and crawled. A name
    read again adds its new addresses; the old ones stay refused."""
    own = OwnServices([SOLR])
    node = OwnService("a node of Solr", "solr-1.solr-headless", 8983)
    own.add([node], {"solr-1.solr-headless": ["10.244.1.5"]})
    own.add([node], {"solr-1.solr-headless": ["10.244.2.9"]})
    assert own.at("10.244.2.9", 8983) == node
    assert own.at("10.244.1.5", 8983) == node
    assert own.at("10.244.2.9", 8984) is None


def test_an_internal_address_on_solrs_port_is_refused_unless_the_setting_allows_it() -> None:
    """Hostile review of issue 91 point 1: with Solr in a container (Docker's -p 8983:8983,
    SOLR_URL=http://localhost:8983), its container address 172.17.0.2:8983 was neither known nor
    refused. Every internal address on a port of SOLR_URL's nodes is (SEARCHCRAWL_CRAWL_SOLR_PORTS
    off); by port: a site on another port of the same address is crawled, and 80 and 443, every
    intranet site's, are not guarded so."""
    nodes = [OwnService("a node of Solr", "localhost", 8983), OwnService("a node of Solr", "solr.corp.test", 443)]
    own = OwnServices(nodes)
    assert own.at("172.17.0.2", 8983) is None  # SEARCHCRAWL_CRAWL_SOLR_PORTS on: not known
    own.guard_solr_ports(nodes)
    for host, addresses in [("172.17.0.2", []), ("container.test", ["172.17.0.2"]), ("fe80::2", []), ("10.1.2.3", [])]:
        assert own.at(host, 8983, addresses=addresses) is not None, host
    assert own.at("172.17.0.2", 8984) is None  # a site beside it
    assert own.at("www.example.org", 8983, addresses=["93.184.216.34"]) is None  # a public address: another machine's
    assert own.at("10.1.2.3", 443) is None  # the intranet's https sites
    seed = "http://172.17.0.2:8983/solr/core/select?q=*:*&wt=csv"
    policy = AddressPolicy(Boundary([seed], ScopeRules()), [seed], own)
    refused = policy.refusal("172.17.0.2", 8983, ["172.17.0.2"])
    assert refused is not None and refused[0] == Status.OWN_SERVICE  # a seed's site too
