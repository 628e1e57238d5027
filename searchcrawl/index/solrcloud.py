"""SolrCloud administration: upload the configset and create the collection the crawlers index into.

In SolrCloud the schema and solrconfig.xml live in ZooKeeper as a named configset, and a
collection (shards x replicas spread over the nodes) is created from it through the Collections
API of any node, so that no node is special. `scrapy solr collection` uses these functions; tests
use them against the local SolrCloud of :class:`searchcrawl.dev.solr_runner.DevSolrCloud`. The
configset is package data of this package (``searchcrawl.index.configset``), so an installed wheel
uploads the same one as the checkout.

Every function takes the base URL of one node (``http://host:8983/solr``, credentials in it are
used and never shown) and raises :class:`SolrCloudError` with Solr's own reason when a call fails.
:func:`live_node` picks a node that answers from several. No Scrapy here: plain functions.
"""

from __future__ import annotations

import io
import re
import time
import zipfile
from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import requests

from searchcrawl.system import secrets
from searchcrawl.system.resources import CONFIGSET_PACKAGE, package_dir

__all__ = [
    "CONFIGSET_PACKAGE",
    "SolrCloudError",
    "collection_status",
    "collection_urls",
    "configset_dir",
    "create_collection",
    "list_collections",
    "live_node",
    "upload_configset",
    "wait_for_collection",
]

# The project's configset: package data (solr/configset of the checkout, see pyproject.toml), its
# files in conf/. Read it with configset_dir(): a real directory also from a zipped egg.

Auth = tuple[str, str] | None


class SolrCloudError(RuntimeError):
    """A Configsets/Collections API call failed or no node answered; the message says why
    (Solr's error message), never with credentials."""


def live_node(node_urls: Iterable[str], auth: Auth = None, timeout: float = 5) -> str:
    """The first of ``node_urls`` that answers its health check (connected to ZooKeeper): any live
    node can serve the admin APIs, so one node being down does not stop us."""
    failures = []
    for node_url in node_urls:
        try:
            body = _call(node_url, "admin/info/health", {}, auth, timeout, "health check")
        except SolrCloudError as exc:
            failures.append(str(exc))
            continue
        if body.get("status") == "OK":
            return node_url
        failures.append(f"{_clean(node_url)}: status {body.get('status')!r}")
    if not failures:
        raise SolrCloudError("no Solr node given")
    raise SolrCloudError("no Solr node answers: " + "; ".join(failures))


def configset_dir() -> AbstractContextManager[Path]:
    """The project's configset (the directory holding solrconfig.xml and schema.xml), on disk for
    the duration of the ``with`` block."""
    return package_dir(CONFIGSET_PACKAGE, "conf")


def upload_configset(
    node_url: str,
    name: str,
    conf_dir: str | Path | None = None,
    auth: Auth = None,
    overwrite: bool = True,
    timeout: float = 60,
) -> None:
    """Upload ``conf_dir`` (solrconfig.xml, schema.xml, ...; default: the project's configset,
    :func:`configset_dir`) to ZooKeeper as configset ``name``.

    With ``overwrite`` an existing configset is replaced, files missing from ``conf_dir`` included
    (``cleanup``), so the cluster gets exactly the configuration of this searchcrawl; collections
    using it pick it up when reloaded (:func:`create_collection` does that).
    """
    if conf_dir is None:
        with configset_dir() as conf:
            data = _configset_zip(conf)
    else:
        data = _configset_zip(Path(conf_dir))
    params = {"action": "UPLOAD", "name": name}
    if overwrite:
        params.update(overwrite="true", cleanup="true")
    _call(
        node_url,
        "admin/configs",
        params,
        auth,
        timeout,
        f"uploading configset {name!r}",
        data=data,
        headers={"Content-Type": "application/octet-stream"},
    )


def list_collections(node_url: str, auth: Auth = None, timeout: float = 30) -> list[str]:
    """Names of the cluster's collections."""
    body = _call(node_url, "admin/collections", {"action": "LIST"}, auth, timeout, "listing collections")
    return list(body.get("collections") or [])


def create_collection(
    node_url: str,
    name: str,
    configset: str,
    shards: int = 2,
    replicas: int = 2,
    auth: Auth = None,
    reload: bool = True,
    timeout: float = 300,
) -> bool:
    """Create collection ``name`` from ``configset`` with ``shards`` x ``replicas`` cores spread
    over the live nodes; return True when it was created, False when it existed already.

    The collection uses the compositeId router: a document's id ``<source>!<url>``
    (``extract.solr_id``) places it by the hash of its source prefix (the upper 16 bits of its
    hash), so the documents of a source lie together, on one shard as a rule.

    Idempotent, so deployment scripts and several crawler nodes can all run it: an existing
    collection is left as it is (its shard and replica counts are not changed) and, with
    ``reload``, reloaded so a just re-uploaded configset applies. Returns only once every replica
    is active (``waitForFinalState``).
    """
    if name in list_collections(node_url, auth):
        if reload:
            _call(
                node_url, "admin/collections", {"action": "RELOAD", "name": name}, auth, timeout, f"reloading collection {name!r}"
            )
        return False
    params = {
        "action": "CREATE",
        "name": name,
        "router.name": "compositeId",
        "numShards": str(shards),
        "replicationFactor": str(replicas),
        "collection.configName": configset,
        "waitForFinalState": "true",
    }
    try:
        _call(node_url, "admin/collections", params, auth, timeout, f"creating collection {name!r}")
    except SolrCloudError:
        if name in list_collections(node_url, auth):  # created by someone else meanwhile
            return False
        raise
    return True


def collection_status(node_url: str, name: str, auth: Auth = None, timeout: float = 30) -> dict[str, Any]:
    """Shards and replicas of collection ``name`` with their states, from CLUSTERSTATUS::

        {"name": ..., "configset": ..., "router": "compositeId", "health": "GREEN",
         "live_nodes": ["127.0.0.1:8983_solr", ...],
         "shards": {"shard1": {"state": "active", "replicas": [
             {"name": "core_node3", "core": ..., "node": ..., "base_url": ..., "state": "active",
              "leader": True, "live": True}, ...]}, ...}}

    A replica's ``state`` is what ZooKeeper last recorded; ``live`` says whether its node is up
    (a replica on a stopped node may still read "active").
    """
    body = _call(
        node_url,
        "admin/collections",
        {"action": "CLUSTERSTATUS", "collection": name},
        auth,
        timeout,
        f"status of collection {name!r}",
    )
    cluster = body.get("cluster") or {}
    collection = (cluster.get("collections") or {}).get(name)
    if collection is None:
        raise SolrCloudError(f"collection {name!r} not found")
    live_nodes = list(cluster.get("live_nodes") or [])
    shards = {}
    for shard_name, shard in sorted((collection.get("shards") or {}).items()):
        replicas = [
            {
                "name": replica_name,
                "core": replica.get("core"),
                "node": replica.get("node_name"),
                "base_url": replica.get("base_url"),
                "state": replica.get("state"),
                "leader": str(replica.get("leader", "false")).lower() == "true",
                "live": replica.get("node_name") in live_nodes,
            }
            for replica_name, replica in sorted((shard.get("replicas") or {}).items())
        ]
        shards[shard_name] = {"state": shard.get("state"), "health": shard.get("health"), "replicas": replicas}
    return {
        "name": name,
        "configset": collection.get("configName"),
        "router": (collection.get("router") or {}).get("name"),
        "health": collection.get("health"),
        "live_nodes": live_nodes,
        "shards": shards,
    }


def wait_for_collection(node_url: str, name: str, auth: Auth = None, timeout: float = 120) -> dict[str, Any]:
    """Wait until every shard has a leader and every replica is active on a live node (e.g. after a
    node came back and its replicas recovered); return the final :func:`collection_status`."""
    deadline = time.monotonic() + timeout
    problem: str | None
    while True:
        try:
            status = collection_status(node_url, name, auth)
        except SolrCloudError as exc:
            problem = str(exc)
        else:
            problem = _not_active(status)
            if problem is None:
                return status
        if time.monotonic() >= deadline:
            raise SolrCloudError(f"collection {name!r} not fully active after {timeout:.0f}s: {problem}")
        time.sleep(0.5)


def collection_urls(node_urls: Iterable[str], name: str) -> list[str]:
    """The collection's URL on each node (``http://node/solr/<name>``), e.g. for SOLR_URL: any of
    them accepts updates and queries for the whole collection."""
    return [f"{_clean(node_url)}/{name}" for node_url in node_urls]


# -- internals ------------------------------------------------------------------------------


def _not_active(status: dict[str, Any]) -> str | None:
    for shard_name, shard in status["shards"].items():
        if not any(replica["leader"] and replica["live"] for replica in shard["replicas"]):
            return f"{shard_name} has no live leader"
        for replica in shard["replicas"]:
            if not replica["live"] or replica["state"] != "active":
                where = replica["node"] if replica["live"] else f"{replica['node']}, not live"
                return f"{shard_name} replica {replica['name']} is {replica['state']} ({where})"
    return None


def _configset_zip(conf: Path) -> bytes:
    """The configset as the Configsets API wants it: its files at the root of a zip."""
    if not (conf / "solrconfig.xml").is_file():
        raise SolrCloudError(f"not a configset directory (no solrconfig.xml): {conf}")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(conf.rglob("*")):
            relative = path.relative_to(conf)
            if path.is_file() and not any(part.startswith(".") or part.endswith("~") for part in relative.parts):
                archive.write(path, relative.as_posix())
    return buffer.getvalue()


def _clean(node_url: str) -> str:
    return secrets.split_credentials(node_url.rstrip("/"))[0]


def _call(
    node_url: str,
    path: str,
    params: dict[str, str],
    auth: Auth,
    timeout: float,
    what: str,
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One admin API request (POST when there is a body); its JSON answer, or SolrCloudError."""
    base, url_auth = secrets.split_credentials(node_url.rstrip("/"))
    try:
        response = requests.request(
            "POST" if data is not None else "GET",
            f"{base}/{path}",
            params={**params, "wt": "json"},
            data=data,
            headers=headers,
            auth=auth or url_auth,
            timeout=timeout,
        )
    except requests.RequestException as exc:
        raise SolrCloudError(f"{what}: cannot reach {base}: {_reason(exc)}") from None
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code >= 400 or not isinstance(body, dict) or _failure(body):
        raise SolrCloudError(f"{what} failed (HTTP {response.status_code} from {base}): {_message(response, body)}")
    return body


def _failure(body: dict[str, Any]) -> bool:
    """Collections API calls can report a failure in a 200 answer."""
    return bool(body.get("error") or body.get("exception") or body.get("failure"))


def _message(response: requests.Response, body: dict[str, Any] | None) -> str:
    if response.status_code in (401, 403):
        return "not authorised (check SEARCHCRAWL_SOLR_USERNAME and SEARCHCRAWL_SOLR_PASSWORD)"
    if isinstance(body, dict):
        for key in ("error", "exception"):
            if isinstance(body.get(key), dict) and body[key].get("msg"):
                return secrets.redact(str(body[key]["msg"]))
        failure = body.get("failure")
        if isinstance(failure, dict):
            return secrets.redact("; ".join(f"{node}: {error}" for node, error in failure.items()))
        if failure:
            return secrets.redact(str(failure))
    text = re.sub(r"<[^>]+>", " ", response.text or "")
    return secrets.redact(" ".join(text.split())[:300]) or response.reason or "no answer"


def _reason(exc: requests.RequestException) -> str:
    if isinstance(exc, requests.Timeout):
        return "timed out"
    text = str(exc)
    errno = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    return errno.group(1).strip() if errno else secrets.redact(text)
