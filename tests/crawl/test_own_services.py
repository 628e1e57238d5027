"""The installation's own services as its settings name them (crawl/own_services.py): every node
of SOLR_URL, Tika, the web application (where it listens, its public addresses), the remote model
servers, the crawl's metrics endpoint and scrapyd; nothing for a setting that is off."""

from __future__ import annotations

import errno
import fcntl
import ipaddress
import json
import os
import socket
import struct
from pathlib import Path

import pytest

from searchcrawl import settings as project_settings
from searchcrawl.crawl.own_services import (
    OWN_SERVICE_SETTINGS,
    is_standalone,
    live_solr_nodes,
    node_address,
    on_this_machine,
    own_service_environ,
    own_services,
    own_services_now,
    own_services_of,
)
from searchcrawl.index.solr_client import IndexingError, SolrIndex
from searchcrawl.rules.addresses import OwnService
from searchcrawl.system.listening import WEB_SERVICE, recorded


def test_every_service_the_settings_name() -> None:
    settings = {
        "SOLR_URL": "http://user:secret@solr1.test:8983/solr/docs, http://solr2.test:8984/solr/docs",
        "SEARCHCRAWL_TIKA_URL": "http://127.0.0.1:9998",
        "SEARCHCRAWL_WEB_HOST": "::",
        "SEARCHCRAWL_WEB_PORT": "8080",
        "SEARCHCRAWL_WEB_PUBLIC_URL": "https://intranet.test/search/",
        "SEARCHCRAWL_EMBEDDINGS": "openai:http://models.test:11434/v1?model=m&dimension=384",
        "SEARCHCRAWL_EMBEDDINGS_PREVIOUS": "wordllama",
        "SEARCHCRAWL_ANSWERS_URL": "http://models.test:8000/v1",
        "SEARCHCRAWL_METRICS_ADDRESS": "127.0.0.1",
        "SEARCHCRAWL_METRICS_PORT": 9410,
        "SEARCHCRAWL_SCRAPYD_URL": "http://scrapyd.test:6800",
    }
    assert set(settings) <= set(OWN_SERVICE_SETTINGS)
    assert own_services(settings.get) == [
        OwnService("a node of Solr", "solr1.test", 8983),
        OwnService("a node of Solr", "solr2.test", 8984),
        OwnService("Tika", "127.0.0.1", 9998),
        OwnService("the web application", "::", 8080),
        OwnService("the web application", "intranet.test", 443, "/search/"),
        OwnService("the embedding model's server", "models.test", 11434),
        OwnService("the answers' model server", "models.test", 8000),
        OwnService("a crawl's metrics endpoint", "127.0.0.1", 9410),
        OwnService("scrapyd", "scrapyd.test", 6800),
    ]


def test_the_defaults_name_solr_and_the_web_application_only() -> None:
    defaults = {name: getattr(project_settings, name) for name in OWN_SERVICE_SETTINGS}
    assert own_services(defaults.get) == [
        OwnService("a node of Solr", "127.0.0.1", 8983),
        OwnService("the web application", "127.0.0.1", 8080),
    ]
    assert own_services({"SOLR_URL": "", "SEARCHCRAWL_WEB_PORT": "none", "SEARCHCRAWL_EMBEDDINGS": "bogus:x"}.get) == []


def test_the_crawls_scrapy_web_starts_are_told_its_services_and_its_own_address() -> None:
    """`scrapy web --port 9000 -s SEARCHCRAWL_TIKA_URL=...`: a test crawl it starts read only the
    environment, and took the web application for 127.0.0.1:8080 and knew no Tika."""
    settings = {
        "SOLR_URL": "http://127.0.0.1:8983/solr/x",
        "SEARCHCRAWL_TIKA_URL": "http://127.0.0.1:9998",
        "SEARCHCRAWL_METRICS_PORT": 0,
    }
    environ = own_service_environ(settings.get, "::", 9000)
    assert environ == {
        "SOLR_URL": "http://127.0.0.1:8983/solr/x",
        "SEARCHCRAWL_TIKA_URL": "http://127.0.0.1:9998",
        "SEARCHCRAWL_METRICS_PORT": "0",
        "SEARCHCRAWL_WEB_HOST": "::",
        "SEARCHCRAWL_WEB_PORT": "9000",
    }
    assert OwnService("the web application", "::", 9000) in own_services(environ.get)
    # issue 100: semantic search is on by default: a server's "off" reaches its crawls too
    assert own_service_environ({**settings, "SEARCHCRAWL_EMBEDDINGS": ""}.get, "::", 9000)["SEARCHCRAWL_EMBEDDINGS"] == ""
    assert own_service_environ({**settings, "SEARCHCRAWL_TIKA_URL": ""}.get, "::", 9000).get("SEARCHCRAWL_TIKA_URL") is None


def interface_addresses() -> list[str]:
    """This machine's IPv4 interface addresses (SIOCGIFADDR), loopback's included: no traffic."""
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _index, name in socket.if_nameindex():
            try:
                answer = fcntl.ioctl(probe.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue  # an interface without an IPv4 address
            found.append(socket.inet_ntoa(answer[20:24]))
    return found


def link_local_addresses() -> list[str]:
    """This machine's link-local IPv6 addresses (/proc/net/if_inet6; none where IPv6 is off)."""
    try:
        with open("/proc/net/if_inet6", encoding="ascii") as table:
            rows = [line.split()[0] for line in table]
    except OSError:
        return []
    found = [str(ipaddress.IPv6Address(bytes.fromhex(row))) for row in rows]
    return [address for address in found if ipaddress.IPv6Address(address).is_link_local]


def test_where_the_web_application_records_it_listens_is_refused_though_the_settings_do_not_name_it(tmp_path: Path) -> None:
    """Issue 99: a crawl started from a shell without SEARCHCRAWL_WEB_PORT knew the application at
    the default port only, and indexed its pages: it reads the application's own record in the
    data directory (system/listening.py), at the crawl's start and with the live nodes."""
    get = {"SOLR_URL": "", "SEARCHCRAWL_DATA_DIR": str(tmp_path)}.get
    assert own_services_of(get).at("127.0.0.1", 9123) is None
    with recorded(tmp_path, WEB_SERVICE, [("0.0.0.0", 9123)]) as paths:
        services, _addresses = own_services_now(get)
        assert services == [OwnService(f"the web application (its record {paths[0]})", "0.0.0.0", 9123)]
        own = own_services_of(get)
        for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):  # listening on every interface
            refused = own.refusal(host, 9123)
            assert refused is not None and f"is the web application (its record {paths[0]})" in refused, host
        assert own.at("127.0.0.1", 9124) is None  # a site beside it
    assert own_services_now(get) == ([], {})


def test_every_interface_address_is_this_machines_not_only_what_its_name_resolves_to() -> None:
    """Review of issue 91 point 1: "this machine" was the addresses gethostname() resolves to
    (127.0.0.1 here, while eth0 has another): with SOLR_URL on localhost, Solr was crawled at the
    eth0 address's 8983; with SOLR_URL on the eth0 address, at 127.0.0.1:8983 and [::1]:8983.
    Deciding needs no traffic: an address a socket can be bound to is this machine's."""
    addresses = interface_addresses()
    assert "127.0.0.1" in addresses
    for address in [*addresses, "127.0.0.2", "::1", "0.0.0.0", "::"]:
        assert on_this_machine(address), address
    for address in ["203.0.113.9", "2001:db8::9", "224.0.0.1", "solr.test"]:
        assert not on_this_machine(address), address
    for address in addresses:
        by_name = own_services_of({"SOLR_URL": "http://localhost:8983/solr"}.get)
        assert by_name.at(address, 8983) is not None, address
        assert by_name.at(address, 8984) is None, address  # a site beside Solr
        host = f"[{address}]" if ":" in address else address
        by_address = own_services_of({"SOLR_URL": f"http://{host}:8983/solr"}.get)
        for other in ["127.0.0.1", "localhost", "::1", "127.0.0.2", *addresses]:
            assert by_address.at(other, 8983) is not None, (address, other)
        assert by_address.at("93.184.216.34", 8983) is None  # another machine's


def test_an_address_is_not_this_machines_only_when_the_kernel_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile review of issue 91 point 1: any error of bind() counted as "not this machine", so
    with the file descriptors used up (EMFILE), or a sandbox's EPERM, this machine's LAN address
    on Solr's port was crawled. Only EADDRNOTAVAIL (EAFNOSUPPORT: IPv6 off) answers no."""
    lan = next(address for address in interface_addresses() if not address.startswith("127."))
    solr = own_services_of({"SOLR_URL": "http://localhost:8983/solr"}.get)

    def failing(code: int) -> type[socket.socket]:
        class Failing(socket.socket):
            def bind(self, address: object) -> None:
                raise OSError(code, os.strerror(code))

        return Failing

    for code in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.EPERM, errno.EACCES):
        monkeypatch.setattr(socket, "socket", failing(code))
        assert on_this_machine(lan), code
        assert on_this_machine("203.0.113.9"), code  # unknown: taken as this machine's
        assert solr.at(lan, 8983) is not None, code
    for code in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
        monkeypatch.setattr(socket, "socket", failing(code))
        assert not on_this_machine("203.0.113.9"), code
        assert not on_this_machine("fe80::1"), code


def test_a_link_local_ipv6_address_is_tried_on_each_interface() -> None:
    """The kernel binds a link-local IPv6 address only with a zone (EINVAL without): each
    interface's is tried, so this machine's own fe80:: address is told from another's."""
    assert not on_this_machine("fe80::1")
    for address in link_local_addresses():
        assert on_this_machine(address), address


def test_a_solr_that_does_not_name_its_live_nodes_is_not_taken_for_a_standalone_one() -> None:
    """Issue 91 review: a cluster state that was refused (403) or did not answer counted as "no
    live nodes" and the crawl went on unguarded. Only Solr's own answer that it is no SolrCloud
    is a standalone Solr; anything else is unknown (None: the crawl fails closed)."""
    assert live_solr_nodes("http://127.0.0.1:9/solr/unit", None) is None  # nothing listens there
    standalone = IndexingError("no", refused=True, status=400, reason="Solr instance is not running in SolrCloud mode.")
    assert is_standalone(standalone)
    assert not is_standalone(IndexingError("no", refused=True, status=403, reason="Unauthorized request, Response code: 403"))
    assert not is_standalone(IndexingError("no", status=None, reason="http://solr.test:8983/solr: timed out"))
    assert not is_standalone(IndexingError("no", refused=True, status=400, reason="unknown action"))


def test_a_live_nodes_name_is_split_at_its_ports_underscore(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile review of issue 91 point 1: a live node's name was cut at its first ``_``, so
    ``solr_node1:8983_solr`` became solr:80 and the node itself was crawled."""
    state = {"cluster": {"live_nodes": ["solr_node1:8983_solr", "10.0.0.8:8984_solr"]}}
    monkeypatch.setattr(SolrIndex, "request", lambda self, *args, **kwargs: json.dumps(state))
    learnt = live_solr_nodes("http://solr_node1:8983/solr/docs", None)
    assert learnt is not None
    assert [(node.host, node.port) for node in learnt[0]] == [("solr_node1", 8983), ("10.0.0.8", 8984)]
    assert node_address("solr_node1:8983_solr") == "solr_node1:8983"
    assert node_address("10.0.0.8:8983_solr") == "10.0.0.8:8983"
    assert node_address("solr-1.solr_headless:8984_solr_x") == "solr-1.solr_headless:8984"
    assert node_address("[::1]:8983_solr") == "[::1]:8983"
    assert node_address("solr_node1") is None


def test_a_replicas_node_is_refused_while_it_is_out_of_the_live_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI run on a loaded machine: the cluster's other node had dropped out of the live nodes
    for a moment (its ZooKeeper session lost) when the crawl read them, and its select was
    fetched (200). Every node a replica is on is the installation's Solr too, live or not; a
    cluster state of another shape names only its live nodes."""
    replica = {"node_name": "10.0.0.9:8984_solr", "base_url": "http://10.0.0.9:8984/solr", "state": "down"}
    state = {
        "cluster": {
            "live_nodes": ["10.0.0.8:8983_solr"],
            "collections": {
                "docs": {
                    "shards": {"shard1": {"replicas": {"core_node1": {"node_name": "10.0.0.8:8983_solr"}, "core_node2": replica}}}
                },
                "odd": {"shards": ["not", "an", "object"]},
                "odder": None,
            },
        }
    }
    monkeypatch.setattr(SolrIndex, "request", lambda self, *args, **kwargs: json.dumps(state))
    learnt = live_solr_nodes("http://10.0.0.8:8983/solr/docs", None)
    assert learnt is not None
    assert [(node.host, node.port) for node in learnt[0]] == [("10.0.0.8", 8983), ("10.0.0.9", 8984)]
    state["cluster"]["collections"] = "no objects"
    learnt = live_solr_nodes("http://10.0.0.8:8983/solr/docs", None)
    assert learnt is not None and [(node.host, node.port) for node in learnt[0]] == [("10.0.0.8", 8983)]
