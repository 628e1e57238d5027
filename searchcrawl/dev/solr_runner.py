"""A development Solr: the real Solr core, started locally for crawling, demos and tests.

Maven Central has no Solr server distribution, so the launcher (the Maven project in
``solr/launcher``, package data ``searchcrawl.dev.solr_launcher``) runs Solr through
``JettySolrRunner`` (solr-test-framework) in its own JVM, with one core, ``searchcrawl``, built
from the configset (``solr/configset/conf``, package data ``searchcrawl.index.configset``). Both
are read through :func:`searchcrawl.system.resources.package_dir`, so this works the same from
the checkout, from an installed wheel and from a zipped egg. This module builds that launcher with
Maven, starts it detached, waits until the core answers its ping, and stops it again.

It writes nothing beside its sources (they may be installed read-only): the build goes to a cache
directory, everything else under ``<data_dir>/solr``::

    ~/.cache/searchcrawl/solr-build/<digest>/    launcher classes + classpath.txt (Maven output,
                                                 one per version of the launcher sources, shared
                                                 by every data dir and installation with that
                                                 version; $XDG_CACHE_HOME honoured)
    <data_dir>/solr/<port>/home/solr.xml         Solr home of the instance on <port>
    <data_dir>/solr/<port>/home/searchcrawl/     the core: core.properties, conf/ (copied from
                                                 the configset on every start), data/ (the index)
    <data_dir>/solr/<port>/solr.log              JVM output, appended
    <data_dir>/solr/<port>/solr.pid              pid of the running JVM

Instances on different ports (or with different data dirs) are independent and can run at the
same time. Tests should use a fresh data dir and :func:`free_port` for a clean index; :meth:`wipe`
exists for resetting a long-lived one. Solr only ever listens on 127.0.0.1.

:class:`DevSolrCloud` runs the same launcher in SolrCloud mode instead (embedded ZooKeeper and
several nodes in one JVM, for multi-node tests); it keeps its files apart, under
``<data_dir>/solr/<port>-cloud`` (see its docstring).

Standard library only: it runs before (and without) any crawl machinery.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import time
import urllib.request
from pathlib import Path
from typing import Any

from searchcrawl.dev.jvm_server import (
    HOST,
    JvmServer,
    JvmServerError,
    free_port,
    free_port_range,
    locked,
    run_maven,
)
from searchcrawl.system.paths import user_cache_dir
from searchcrawl.system.resources import CONFIGSET_PACKAGE, package_dir

__all__ = [
    "CONFIGSET_PACKAGE",
    "CORE_NAME",
    "LAUNCHER_PACKAGE",
    "DevSolr",
    "DevSolrCloud",
    "DevSolrError",
    "free_port",
    "free_port_range",
]

CORE_NAME = "searchcrawl"
# Package data (pyproject.toml maps them to solr/launcher and solr/configset of the checkout).
LAUNCHER_PACKAGE = "searchcrawl.dev.solr_launcher"  # pom.xml, src/
MAIN_CLASS = "searchcrawl.solr.DevSolr"

# Solr home configuration of the standalone mode (its solrcloud section is unused there).
# DevSolrCloud's nodes get MiniSolrCloudCluster's own solr.xml, through ZooKeeper.
SOLR_XML = """\
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by searchcrawl/dev/solr_runner.py on every start; edits here are overwritten. -->
<solr>
  <int name="maxBooleanClauses">${solr.max.booleanClauses:1024}</int>
  <solrcloud>
    <str name="host">${host:127.0.0.1}</str>
    <int name="hostPort">${hostPort:8983}</int>
    <str name="hostContext">${hostContext:solr}</str>
    <bool name="genericCoreNodeNames">${genericCoreNodeNames:true}</bool>
    <int name="zkClientTimeout">${zkClientTimeout:30000}</int>
  </solrcloud>
  <shardHandlerFactory name="shardHandlerFactory" class="HttpShardHandlerFactory">
    <int name="socketTimeout">${socketTimeout:600000}</int>
    <int name="connTimeout">${connTimeout:60000}</int>
  </shardHandlerFactory>
</solr>
"""


class DevSolrError(JvmServerError):
    """The development Solr could not be built, started or stopped; the message says why."""


def default_build_dir() -> Path:
    """Where Maven builds the launcher: under a cache directory, one build per version of the
    launcher sources (see :meth:`DevSolr.build`); never beside the sources, which may be installed
    read-only."""
    return user_cache_dir() / "solr-build"


class DevSolr(JvmServer):
    """One development Solr instance: a data dir plus a port.

    ``start()`` returns the core URL (``http://127.0.0.1:<port>/solr/searchcrawl``) for pysolr.
    After it, ``start_seconds`` holds how long the call took (build included) and
    ``build_seconds`` the Maven part of it (0.0 when the build was up to date).
    """

    kind = "solr"
    label = "Solr"
    error = DevSolrError

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        port: int = 8983,
        *,
        build_dir: str | os.PathLike[str] | None = None,
        java: str | None = None,
        heap: str = "1g",
        auth: tuple[str, str] | None = None,
    ) -> None:
        super().__init__(data_dir, port, java=java)
        # Maven's output: build_dir if given, else default_build_dir()/<digest of the launcher
        # sources>, so one build serves every data dir, port and installation with those sources,
        # and installations with other sources neither share nor rebuild it. Set by build().
        self._build_dir = Path(build_dir).expanduser().resolve() if build_dir else None
        self.build_dir: Path | None = self._build_dir
        self.home = self.run_dir / "home"
        self.core_dir = self.home / CORE_NAME
        self.base_url = f"http://{HOST}:{self.port}/solr"
        self.url = f"{self.base_url}/{CORE_NAME}"
        self.heap = heap
        self.auth = auth  # basic auth required of every client (Solr's BasicAuthPlugin)
        self.build_seconds: float | None = None

    # -- build ------------------------------------------------------------------------------

    def build(self, force: bool = False) -> list[str]:
        """Compile the launcher if needed; return the JVM classpath (classes dir, then jars).

        Maven runs only when the output is missing or was built from other launcher sources
        (pom and src/, by digest), because even an up-to-date ``mvn package`` costs several seconds.
        """
        with package_dir(LAUNCHER_PACKAGE) as launcher:
            digest = _sources_digest(launcher)
            build_dir = self._build_dir or default_build_dir() / digest[:16]
            self.build_dir = build_dir
            with locked(build_dir.parent / f".{build_dir.name}.lock"):
                if force or _build_needed(build_dir, digest):
                    started = time.monotonic()
                    _run_maven(launcher, build_dir)
                    (build_dir / ".devsolr-built").write_text(digest)
                    self.build_seconds = time.monotonic() - started
                else:
                    self.build_seconds = 0.0
                return [str(build_dir / "classes"), *_dependency_jars(build_dir)]

    # -- start / stop -----------------------------------------------------------------------

    def prepare(self) -> list[str]:
        """Build the launcher if needed, write the Solr home; the JVM command."""
        classpath = self.build()
        self._prepare_home()
        return self.java_command(classpath)

    def _found_running(self) -> None:
        self.build_seconds = 0.0

    def _owns(self, cmdline: str) -> bool:
        return MAIN_CLASS in cmdline and str(self.home) in cmdline

    def status(self) -> dict[str, Any]:
        """Running state, pid, URL, port, document count and log path (for CLI status output).

        ``running`` means the JVM is alive; ``ready`` that the core answers its ping.
        """
        pid = self._running_pid()
        ready = pid is not None and self._ping()
        num_docs: int | None = None
        if ready:
            try:
                body = _get_json(f"{self.url}/select?q=*:*&rows=0&hl=false&wt=json", timeout=5, auth=self.auth)
                num_docs = int(body["response"]["numFound"])
            except (OSError, ValueError, KeyError, TypeError):
                num_docs = None
        return {
            "running": pid is not None,
            "ready": ready,
            "pid": pid,
            "url": self.url,
            "port": self.port,
            "num_docs": num_docs,
            "log": str(self.log_path),
            "data_dir": str(self.data_dir),
            "index_dir": str(self.core_dir / "data"),
            "start_seconds": self.start_seconds,
        }

    def wipe(self) -> None:
        """Stop Solr and delete the core's index and transaction log (config is kept).

        For a clean slate in a long-lived data dir; tests are better off with a fresh data dir.
        """
        self.stop()
        shutil.rmtree(self.core_dir / "data", ignore_errors=True)

    # -- internals --------------------------------------------------------------------------

    def java_command(self, classpath: list[str]) -> list[str]:
        """The JVM command line (exposed so it can be shown or run by hand)."""
        return [
            self.java,
            "-Xms256m",
            f"-Xmx{self.heap}",
            "-XX:+ExitOnOutOfMemoryError",  # die visibly rather than limp on
            "-Dfile.encoding=UTF-8",
            f"-Dsolr.log.dir={self.run_dir}",
            f"-Dsolr.install.dir={self.home}",
            "-cp",
            os.pathsep.join(classpath),
            MAIN_CLASS,
            "--home",
            str(self.home),
            "--port",
            str(self.port),
        ]

    def _prepare_home(self) -> None:
        """Write solr.xml and core.properties and refresh the core's conf/ from the configset.

        conf/ is replaced on every start so schema and config edits in the repo apply; the
        index (data/) is left alone.
        """
        self.core_dir.mkdir(parents=True, exist_ok=True)
        (self.home / "solr.xml").write_text(SOLR_XML, encoding="utf-8")
        (self.core_dir / "core.properties").write_text(
            f"# Written by searchcrawl/dev/solr_runner.py on every start.\nname={CORE_NAME}\n",
            encoding="utf-8",
        )
        security = self.home / "security.json"
        if self.auth:
            security.write_text(json.dumps(security_json(*self.auth)), encoding="utf-8")
            security.chmod(0o600)
        else:
            security.unlink(missing_ok=True)
        conf = self.core_dir / "conf"
        shutil.rmtree(conf, ignore_errors=True)
        with package_dir(CONFIGSET_PACKAGE, "conf") as configset:
            if not (configset / "solrconfig.xml").is_file():
                raise DevSolrError(f"Solr configset not found: {configset / 'solrconfig.xml'}")
            shutil.copytree(configset, conf, ignore=shutil.ignore_patterns("*~", ".*"))

    def _startup_failure(self, log_tail: str) -> str:
        # The launcher's own summary ("DevSolr: giving up ...: <root cause>"), if any.
        reasons = [line for line in log_tail.splitlines() if "DevSolr: giving up" in line]
        return reasons[-1].split("DevSolr: ", 1)[1] if reasons else "see the log"

    def _readiness_check(self) -> str:
        """What ``_ping`` asks, for error messages."""
        return f"{self.url}/admin/ping"

    def _ping(self) -> bool:
        try:
            body = _get_json(f"{self.url}/admin/ping?wt=json", timeout=2, auth=self.auth)
        except (OSError, ValueError):  # refused, 503 while the core loads, not JSON yet
            return False
        return isinstance(body, dict) and body.get("status") == "OK"


class DevSolrCloud(DevSolr):
    """A local SolrCloud for multi-node tests: ZooKeeper plus ``nodes`` Solr nodes in one JVM.

    The launcher's ``--cloud`` mode (MiniSolrCloudCluster). Node ``i`` listens on
    ``http://127.0.0.1:<port + i>/solr`` (``nodes`` holds these base URLs); ZooKeeper picks a
    free port. No collection exists after ``start()``: create one with
    :func:`searchcrawl.index.solrcloud.upload_configset` and :func:`~searchcrawl.index.solrcloud.create_collection`
    (``scrapy solr collection``), as against a production cluster.

    A local cloud starts afresh every time: ``start()`` deletes the previous cluster's ZooKeeper
    data and indexes, because ZooKeeper comes up on a new port. No basic auth (the standalone
    ``auth`` option is not supported here). Its files::

        <data_dir>/solr/<port>-cloud/home/           node0/, node1/, ... and zookeeper/
        <data_dir>/solr/<port>-cloud/cloud.json      node URLs, their states ("up"/"down"), ZooKeeper
        <data_dir>/solr/<port>-cloud/control/        stop-<i>/start-<i> requests (see stop_node)
        <data_dir>/solr/<port>-cloud/solr.log, solr.pid
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        port: int = 8983,
        *,
        nodes: int = 2,
        build_dir: str | os.PathLike[str] | None = None,
        java: str | None = None,
        heap: str = "1g",
    ) -> None:
        if int(nodes) < 1:
            raise ValueError("a SolrCloud needs at least one node")
        self.node_count = int(nodes)
        super().__init__(data_dir, port, build_dir=build_dir, java=java, heap=heap)
        self.state_path = self.run_dir / "cloud.json"
        self.control_dir = self.run_dir / "control"
        self.nodes = [f"http://{HOST}:{port}/solr" for port in self._ports()]
        self.url = self.base_url  # node 0; there is no core to point at

    def _run_dir_name(self) -> str:
        return f"{self.port}-cloud"

    def _ports(self) -> list[int]:
        return [self.port + index for index in range(self.node_count)]

    def start(self, timeout: float = 180) -> list[str]:  # type: ignore[override]
        """Start the cluster unless it is running; return the node base URLs once all answer.

        An already running cluster is reused as it is (its node count wins over ``nodes``).
        """
        super().start(timeout)
        return list(self.nodes)

    def status(self) -> dict[str, Any]:
        """Running state, pid, node URLs and states (``up`` = answers its health check), ZooKeeper."""
        pid = self._running_pid()
        state = self._state() if pid is not None else None
        if state is not None:
            self.nodes = list(state["nodes"])
        node_states = ["up" if pid is not None and self._healthy(url) else "down" for url in self.nodes]
        return {
            "running": pid is not None,
            "ready": state is not None and all(s == "up" for s in node_states),
            "pid": pid,
            "url": self.url,
            "port": self.port,
            "nodes": list(self.nodes),
            "states": node_states,
            "zk": state.get("zk") if state else None,
            "log": str(self.log_path),
            "data_dir": str(self.data_dir),
            "start_seconds": self.start_seconds,
        }

    def wipe(self) -> None:
        """Stop the cluster and delete its ZooKeeper data and indexes."""
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)

    def stop_node(self, index: int, timeout: float = 60) -> None:
        """Stop node ``index`` while the others (and ZooKeeper) keep running: a node failure.

        Returns once the node's Jetty is stopped; its replicas are then gone from the live nodes.
        """
        self._control("stop", index, timeout)

    def start_node(self, index: int, timeout: float = 120) -> None:
        """Restart node ``index`` on its old port; returns once it is a live node again and
        answers its health check. Its replicas recover from the leaders afterwards (see
        :func:`searchcrawl.index.solrcloud.wait_for_collection`)."""
        self._control("start", index, timeout)
        deadline = time.monotonic() + timeout
        while not self._healthy(self.nodes[index]):
            if time.monotonic() >= deadline:
                raise DevSolrError(f"node {index} ({self.nodes[index]}) did not answer its health check in time")
            time.sleep(0.2)

    # -- internals --------------------------------------------------------------------------

    def java_command(self, classpath: list[str]) -> list[str]:
        return [*super().java_command(classpath), "--cloud", "--nodes", str(self.node_count)]

    def _prepare_home(self) -> None:
        """An empty home, no control requests and no cloud.json from a previous cluster."""
        shutil.rmtree(self.home, ignore_errors=True)
        shutil.rmtree(self.control_dir, ignore_errors=True)
        self.state_path.unlink(missing_ok=True)
        self.home.mkdir(parents=True)
        self.control_dir.mkdir()

    def _readiness_check(self) -> str:
        return f"the health checks of {', '.join(self.nodes)} (/admin/info/health)"

    def _ping(self) -> bool:
        """Ready: the launcher wrote cloud.json (every node is live in ZooKeeper) and each node
        that should be up answers its health check."""
        state = self._state()
        if state is None:
            return False
        if not all(self._healthy(url) for url, up in zip(state["nodes"], state["states"], strict=False) if up == "up"):
            return False
        self.nodes = list(state["nodes"])
        return True

    @staticmethod
    def _healthy(node_url: str) -> bool:
        try:
            body = _get_json(f"{node_url}/admin/info/health?wt=json", timeout=2)
        except (OSError, ValueError):
            return False
        return isinstance(body, dict) and body.get("status") == "OK"

    def _state(self) -> dict[str, Any] | None:
        """cloud.json (written atomically by the launcher), or None before it exists."""
        try:
            state = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return None
        return state if isinstance(state, dict) and "nodes" in state else None

    def _control(self, action: str, index: int, timeout: float) -> None:
        """Ask the launcher to stop or start a node: it polls control/ for ``<action>-<index>``,
        acts, updates cloud.json and deletes the file."""
        pid = self._running_pid()
        if pid is None:
            raise DevSolrError(f"the local SolrCloud on port {self.port} is not running")
        if not 0 <= index < len(self.nodes):
            raise DevSolrError(f"no node {index}: the local SolrCloud has nodes 0..{len(self.nodes) - 1}")
        self.control_dir.mkdir(parents=True, exist_ok=True)
        request = self.control_dir / f"{action}-{index}"
        request.touch()
        deadline = time.monotonic() + timeout
        while request.exists():
            if not self._alive(pid):
                raise DevSolrError(f"the local SolrCloud exited; last lines of {self.log_path}:\n{self._log_tail(None)}")
            if time.monotonic() >= deadline:
                raise DevSolrError(
                    f"node {index} did not {action} within {timeout:.0f}s; last lines of {self.log_path}:\n{self._log_tail(None)}"
                )
            time.sleep(0.1)
        state = self._state()
        expected = "down" if action == "stop" else "up"
        if state is None or state["states"][index] != expected:
            raise DevSolrError(f"node {index} failed to {action}; see {self.log_path}")


def _build_needed(build_dir: Path, digest: str) -> bool:
    stamp = build_dir / ".devsolr-built"
    outputs = [
        stamp,
        build_dir / "classpath.txt",
        build_dir / "classes" / "searchcrawl" / "solr" / "DevSolr.class",
    ]
    if not all(p.is_file() for p in outputs):
        return True
    # Missing jars: the Maven repository was cleaned since the last build.
    if not all(Path(jar).exists() for jar in _dependency_jars(build_dir)):
        return True
    return stamp.read_text() != digest


def _dependency_jars(build_dir: Path) -> list[str]:
    try:
        text = (build_dir / "classpath.txt").read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return []
    return [entry for entry in text.split(os.pathsep) if entry]


def _run_maven(launcher: Path, build_dir: Path) -> None:
    env = {"SEARCHCRAWL_SOLR_BUILD_DIR": str(build_dir)}
    run_maven(["-f", str(launcher / "pom.xml"), "package"], build_dir, "the dev Solr launcher", DevSolrError, env)


def _sources_digest(launcher: Path) -> str:
    """A hash of the launcher's pom and sources (paths relative to ``launcher``, so a checkout and
    an installed wheel with the same sources share one build): a build is reused while it is the same."""
    if not (launcher / "pom.xml").is_file():
        raise DevSolrError(f"Solr launcher sources not found: {launcher / 'pom.xml'} is missing")
    digest = hashlib.sha256()
    sources = [launcher / "pom.xml"]
    sources += sorted(p for p in (launcher / "src").rglob("*") if p.is_file())
    for path in sources:
        digest.update(path.relative_to(launcher).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _get_json(url: str, timeout: float, auth: tuple[str, str] | None = None) -> Any:
    """GET a local Solr URL and decode JSON; HTTP errors raise (urllib's HTTPError is OSError)."""
    request = urllib.request.Request(url)
    if auth:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode("ascii")
        request.add_header("Authorization", f"Basic {token}")
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - 127.0.0.1 only
        return json.loads(response.read().decode("utf-8"))


def security_json(user: str, password: str) -> dict[str, Any]:
    """Solr's security.json requiring basic auth of ``user`` (Sha256AuthenticationProvider's
    salted double SHA-256)."""
    salt = os.urandom(32)
    digest = hashlib.sha256(hashlib.sha256(salt + password.encode("utf-8")).digest()).digest()
    credential = f"{base64.b64encode(digest).decode()} {base64.b64encode(salt).decode()}"
    return {
        "authentication": {"class": "solr.BasicAuthPlugin", "blockUnknown": True, "credentials": {user: credential}},
        "authorization": {
            "class": "solr.RuleBasedAuthorizationPlugin",
            "user-role": {user: "admin"},
            "permissions": [{"name": "all", "role": "admin"}],
        },
    }
