"""The installation's own services, read from its settings, with the addresses they answer at:
what no crawl requests, whatever its source says (searchcrawl/rules/addresses.py ``OwnServices``;
docs/rules.md, "Hostile sites").

The settings that name them are ``OWN_SERVICE_SETTINGS``: every node of ``SOLR_URL`` (and, on a
SolrCloud, every live node its cluster state names, learnt when the crawl starts and every
SEARCHCRAWL_SOLR_NODES_REFRESH seconds after: ``live_solr_nodes``), Tika, the web
application (where it listens, and its public addresses behind a proxy; where it listens is also
read from the record it writes in the data directory, ``recorded_services``, so that a crawl whose
settings do not name its port knows it), a remote embedding model
and the answers' model server, the crawl's metrics endpoint and scrapyd. Their names are resolved
when the crawl starts and again with the live nodes (``own_services_now``); whether an address is this machine's own (a service on this
machine answers at each of them) is asked at each check (``on_this_machine``).
"""

from __future__ import annotations

import errno
import json
import logging
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from searchcrawl.index.solr_client import IndexingError, SolrIndex
from searchcrawl.rules.addresses import OwnService, OwnServices, ip_of
from searchcrawl.semantic.embedders import DimensionMismatch, ModelSpec
from searchcrawl.system import paths
from searchcrawl.system.host_addresses import addresses_of
from searchcrawl.system.listening import WEB_SERVICE, listening

logger = logging.getLogger(__name__)

# The settings that say where the installation's services are: the crawls `scrapy web` starts
# inherit them (commands/web.py), so that a test crawl knows the server it was started from.
OWN_SERVICE_SETTINGS = (
    "SOLR_URL",
    "SEARCHCRAWL_TIKA_URL",
    "SEARCHCRAWL_WEB_HOST",
    "SEARCHCRAWL_WEB_PORT",
    "SEARCHCRAWL_WEB_PUBLIC_URL",
    "SEARCHCRAWL_NOTIFY_BASE_URL",
    "SEARCHCRAWL_EMBEDDINGS",
    "SEARCHCRAWL_EMBEDDINGS_PREVIOUS",
    "SEARCHCRAWL_ANSWERS_URL",
    "SEARCHCRAWL_METRICS_ADDRESS",
    "SEARCHCRAWL_METRICS_PORT",
    "SEARCHCRAWL_SCRAPYD_URL",
)


# the settings whose empty value is one (off) rather than their default: semantic search is on by
# default (issue 100), so a server's SEARCHCRAWL_EMBEDDINGS="" must reach the crawls it starts too
EMPTY_IS_A_VALUE = frozenset({"SEARCHCRAWL_EMBEDDINGS"})


# services, with the addresses their names resolved to
LiveNodes = tuple[list[OwnService], dict[str, list[str]]]


def own_services(get: Callable[[str], Any]) -> list[OwnService]:
    """The services the settings name (``get``: a settings object's get), as host, port (and a
    path for an address behind a proxy)."""
    found: list[OwnService | None] = list(solr_nodes(get))
    found.append(OwnService.of_url("Tika", str(get("SEARCHCRAWL_TIKA_URL") or "")))
    found.append(_listening("the web application", get("SEARCHCRAWL_WEB_HOST"), get("SEARCHCRAWL_WEB_PORT")))
    for name in ("SEARCHCRAWL_WEB_PUBLIC_URL", "SEARCHCRAWL_NOTIFY_BASE_URL"):
        found.append(OwnService.of_url("the web application", str(get(name) or ""), behind_proxy=True))
    for name in ("SEARCHCRAWL_EMBEDDINGS", "SEARCHCRAWL_EMBEDDINGS_PREVIOUS"):
        try:
            spec = ModelSpec.parse(str(get(name) or ""))
        except DimensionMismatch:
            spec = None  # the crawl refuses it when it starts its embedder
        if spec is not None and spec.kind == "openai":
            found.append(OwnService.of_url("the embedding model's server", spec.location))
    found.append(OwnService.of_url("the answers' model server", str(get("SEARCHCRAWL_ANSWERS_URL") or "")))
    found.append(_listening("a crawl's metrics endpoint", get("SEARCHCRAWL_METRICS_ADDRESS"), get("SEARCHCRAWL_METRICS_PORT")))
    found.append(OwnService.of_url("scrapyd", str(get("SEARCHCRAWL_SCRAPYD_URL") or "")))
    return [service for service in found if service is not None]


def solr_nodes(get: Callable[[str], Any]) -> list[OwnService]:
    """The nodes ``SOLR_URL`` names (``get``: a settings object's get)."""
    found = [OwnService.of_url("a node of Solr", url) for url in str(get("SOLR_URL") or "").split(",")]
    return [node for node in found if node is not None]


def own_service_environ(get: Callable[[str], Any], web_host: str, web_port: int) -> dict[str, str]:
    """The environment that tells a crawl `scrapy web` starts where the installation's services
    are (its settings are read from the environment): the settings as this server has them
    (``-s`` included), and the address it listens on (``--host``, ``--port``)."""
    environ = {
        name: str(get(name))
        for name in OWN_SERVICE_SETTINGS
        if get(name) not in (None, "") or (name in EMPTY_IS_A_VALUE and get(name) == "")
    }
    environ.update(SEARCHCRAWL_WEB_HOST=str(web_host), SEARCHCRAWL_WEB_PORT=str(web_port))
    return environ


def _listening(what: str, host: Any, port: Any) -> OwnService | None:
    """The service listening at ``host:port`` (a port of 0 or none: not listening)."""
    try:
        number = int(port or 0)
    except (TypeError, ValueError):
        return None
    if not 0 < number < 65536:
        return None
    host = str(host or "127.0.0.1").strip()
    return OwnService.of_url(what, f"http://{f'[{host}]' if ':' in host else host}:{number}/")


def on_this_machine(address: str) -> bool:
    """Whether ``address`` is one of this machine's own (a service listening on every interface
    answers there): a socket can be bound to it. Asked at each check, without traffic, since
    what the host name resolves to is not every interface (eth0, docker0, a VPN), and
    interfaces come and go. A kernel that binds any address (``ip_nonlocal_bind``) makes every
    address this machine's: the services' ports are then refused everywhere (fail closed).

    Only the kernel's "not an address of this machine" (EADDRNOTAVAIL; EAFNOSUPPORT for an IPv6
    address where IPv6 is off) answers no: any other error (no file descriptor left, EMFILE,
    ENOBUFS, a sandbox's EPERM) leaves the question open, and the answer is yes (fail closed). A
    link-local IPv6 address is tried on each interface (the kernel binds it only with a zone)."""
    ip = ip_of(address)
    if ip is None or ip.is_multicast:
        return False
    if ip.is_loopback or ip.is_unspecified:
        return True
    if ip.version == 6 and ip.is_link_local:
        zones = [index for index, _name in _interfaces()]
        return any(_bindable(socket.AF_INET6, (str(ip), 0, 0, zone)) for zone in zones) if zones else True
    return _bindable(socket.AF_INET6 if ip.version == 6 else socket.AF_INET, (str(ip), 0))


# what bind() answers for an address that is not this machine's (any other error: it may be)
_NOT_THIS_MACHINE = frozenset({errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT})


def _bindable(family: socket.AddressFamily, where: tuple[Any, ...]) -> bool:
    """Whether a socket can be bound to ``where``; True when the kernel does not say it cannot."""
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind(where)
    except OSError as exc:
        if exc.errno in _NOT_THIS_MACHINE:
            return False
        logger.debug("Whether %s is this machine's is unknown (%s): taken as this machine's", where[0], exc)
        return True
    return True


def _interfaces() -> list[tuple[int, str]]:
    """This machine's network interfaces (index, name); none when they cannot be listed."""
    try:
        return socket.if_nameindex()
    except OSError:
        return []


def own_services_of(get: Callable[[str], Any], solr_ports_crawled: bool = False) -> OwnServices:
    """The installation's services (``own_services``) with their names' addresses, and how this
    machine's own addresses are told (``on_this_machine``); unless ``solr_ports_crawled``
    (SEARCHCRAWL_CRAWL_SOLR_PORTS), every internal address on a port of SOLR_URL's nodes too."""
    own = OwnServices(*own_services_now(get), on_this_machine)
    if not solr_ports_crawled:
        own.guard_solr_ports(solr_nodes(get))
    return own


def own_services_now(get: Callable[[str], Any]) -> LiveNodes:
    """The services the settings name and the web application's records say listen, with the
    addresses their names resolve to now (read again with a SolrCloud's live nodes: a name's
    address changes, a server starts)."""
    services = own_services(get) + recorded_services(paths.data_dir_named(get("SEARCHCRAWL_DATA_DIR")))
    return services, addresses_of(service.host for service in services)


def recorded_services(data_dir: Path) -> list[OwnService]:
    """Where the web application listens, as it recorded it in the data directory
    (system/listening.py): known to a crawl whose settings do not name its port."""
    found = [
        OwnService(f"the web application (its record {where.record})", where.host, where.port)
        for where in listening(data_dir)
        if where.service == WEB_SERVICE
    ]
    if found:
        logger.debug(
            "The web application listens, as it recorded: %s", ", ".join(f"{service.host}:{service.port}" for service in found)
        )
    return found


LIVE_NODES_TIMEOUT = 10.0  # seconds the crawl's first requests wait for a SolrCloud's live nodes


def live_solr_nodes(solr_url: str, auth: tuple[str, str] | None) -> LiveNodes | None:
    """A SolrCloud's live nodes (its cluster state's, through any node of ``solr_url``), with
    their names' addresses: the nodes SOLR_URL does not name are the installation's too. A
    standalone Solr (it says it is not a SolrCloud): none. None when they cannot be learnt (the
    cluster state refused, 401 or 403, timed out, no node answering, an answer without them):
    SOLR_URL may be a SolrCloud whose other nodes are unknown, and the caller fails closed."""
    index = SolrIndex(solr_url, timeout=LIVE_NODES_TIMEOUT, auth=auth)
    try:
        answer = index.request("get", "admin/collections?action=CLUSTERSTATUS&wt=json", "did not name its live nodes", node=True)
        live = cluster_nodes(json.loads(answer)["cluster"])
    except IndexingError as exc:
        if is_standalone(exc):
            logger.debug("A standalone Solr: no SolrCloud live nodes to learn")
            return [], {}
        logger.debug("No SolrCloud live nodes learnt: %s", exc)
        return None
    except (ValueError, KeyError, TypeError) as exc:
        logger.debug("No SolrCloud live nodes in the cluster state: %r", exc)
        return None
    scheme = urlsplit(solr_url.split(",")[0]).scheme or "http"
    nodes = [OwnService.of_url("a node of Solr", f"{scheme}://{address}/") for address in map(node_address, live) if address]
    services = [node for node in nodes if node is not None]
    logger.debug("SolrCloud's live nodes, never crawled: %s", ", ".join(f"{node.host}:{node.port}" for node in services))
    return services, addresses_of(node.host for node in services)


def cluster_nodes(cluster: dict[str, Any]) -> list[str]:
    """The names of a SolrCloud's nodes in its cluster state: the live nodes, and every node a
    replica of a collection is on, live or not. A node that dropped out of the live nodes for a
    moment (its ZooKeeper session lost on a busy machine) is the installation's Solr still, and
    answers again a moment later: refused like the live ones."""
    names = [str(name) for name in cluster["live_nodes"]]
    for collection in _members(cluster, "collections"):
        for shard in _members(collection, "shards"):
            for replica in _members(shard, "replicas"):
                name = replica.get("node_name")
                if isinstance(name, str) and name not in names:
                    names.append(name)
    return names


def _members(parent: object, key: str) -> list[dict[str, Any]]:
    """The objects under ``parent[key]`` (a JSON object of objects), none where it is not one."""
    found = parent.get(key) if isinstance(parent, dict) else None
    return [value for value in found.values() if isinstance(value, dict)] if isinstance(found, dict) else []


# a live node's name: host:port_context (``solr_node1:8983_solr``; a host name may hold ``_``)
_NODE_NAME = re.compile(r"^(.+):(\d+)_")


def node_address(name: object) -> str | None:
    """The host:port of a SolrCloud live node's name, None for a name of another form."""
    match = _NODE_NAME.match(str(name))
    return f"{match[1]}:{match[2]}" if match else None


def is_standalone(error: IndexingError) -> bool:
    """Whether Solr refused the cluster state because it is no SolrCloud (its collections API
    answers 400 "Solr instance is not running in SolrCloud mode")."""
    return error.refused and error.status == 400 and "solrcloud mode" in error.reason.lower()
