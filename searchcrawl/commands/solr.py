"""`scrapy solr start|stop|status [--port N] [--cloud [--nodes N]]`: the development Solr (see solr/
and dev/solr_runner.py), standalone or as a local SolrCloud; `scrapy solr collection NAME`: a SolrCloud
collection for the crawlers (configset upload + Collections API, see solrcloud.py);
`scrapy solr migrate-ids [source ...]`: documents indexed by an earlier searchcrawl (id = URL)
get their per-source id (``<source>!<url>``) in SOLR_URL (see index/id_migration.py)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.commands import hint_program, open_database
from searchcrawl.dev.solr_runner import DevSolr, DevSolrCloud, DevSolrError
from searchcrawl.index import solrcloud
from searchcrawl.index.id_migration import migrate_ids
from searchcrawl.index.solr_client import IndexingError, SolrIndex
from searchcrawl.store import DocumentTable
from searchcrawl.system import paths

ACTIONS = ("start", "stop", "status", "collection", "migrate-ids")
DEFAULT_CLOUD_NODES = 2


class Command(ScrapyCommand):
    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return (
            "start|stop|status [--port N] [--cloud [--nodes N]]\n"
            "       collection NAME [--nodes URL[,URL...]] [--shards 2] [--replicas 2] [--configset NAME]\n"
            "       migrate-ids [SOURCE ...]"
        )

    def short_desc(self) -> str:
        return "Start, stop or inspect the development Solr (data in the data directory); create a SolrCloud collection"

    def long_desc(self) -> str:
        return (
            "start/stop/status manage the development Solr on 127.0.0.1: one core, or with --cloud a "
            "local SolrCloud (ZooKeeper and --nodes nodes on ports PORT, PORT+1, ...; no collection). "
            "collection NAME uploads the project's configset (solr/configset/conf) and creates the "
            "collection through any live node of --nodes (default: the local SolrCloud on --port); it "
            "is idempotent (an existing collection is reloaded). It prints progress on stderr and, on "
            "stdout, the collection's URL on every node, comma-separated, for SOLR_URL. "
            "migrate-ids gives the documents that an earlier searchcrawl indexed into SOLR_URL with the "
            "URL as their id the id SOURCE!URL, for the sources named (default: every source in the "
            "index); a crawl does it for its own source when it starts. It is safe to run again."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--port", type=int, default=8983, help="port on 127.0.0.1 (default 8983); a local SolrCloud uses PORT, PORT+1, ..."
        )
        parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for Solr to answer")
        parser.add_argument("--cloud", action="store_true", help="start: a local SolrCloud instead of one core")
        parser.add_argument(
            "--nodes",
            metavar="N|URLS",
            help="start --cloud: number of nodes (default 2); "
            "collection: comma-separated node base URLs (http://host:8983/solr,...)",
        )
        parser.add_argument("--shards", type=int, default=2, help="collection: number of shards (default 2)")
        parser.add_argument("--replicas", type=int, default=2, help="collection: replicas per shard (default 2)")
        parser.add_argument(
            "--configset", default="searchcrawl", help="collection: name of the configset in ZooKeeper (default searchcrawl)"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args or args[0] not in ACTIONS:
            raise UsageError(f"expected one of {', '.join(ACTIONS)}")
        if args[0] != "migrate-ids" and len(args) != (2 if args[0] == "collection" else 1):
            raise UsageError("collection needs a NAME" if args[0] == "collection" else f"{args[0]} takes no arguments")
        assert self.settings is not None
        data_dir = paths.data_dir(self.settings)
        try:
            if args[0] == "migrate-ids":
                self._migrate_ids(args[1:])
            elif args[0] == "start":
                self._start(data_dir, opts)
            elif args[0] == "stop":
                cloud_stopped = DevSolrCloud(data_dir, opts.port).stop()
                solr_stopped = DevSolr(data_dir, opts.port).stop()
                if cloud_stopped:
                    print("SolrCloud stopped")
                if solr_stopped or not cloud_stopped:
                    print("Solr stopped" if solr_stopped else "Solr was not running")
            elif args[0] == "status":
                self._status(data_dir, opts)
            else:
                self._collection(args[1], data_dir, opts)
        except DevSolrError as exc:
            print(f"searchcrawl: {exc}")
            self.exitcode = 1
        except solrcloud.SolrCloudError as exc:
            print(f"searchcrawl: {exc}", file=sys.stderr)
            self.exitcode = 1
        except IndexingError as exc:
            print(f"searchcrawl: {exc}", file=sys.stderr)
            self.exitcode = 1

    def _migrate_ids(self, sources: list[str]) -> None:
        """Per source: how many documents got their per-source id (stdout), then the total."""
        assert self.settings is not None
        index = SolrIndex(
            paths.solr_url(self.settings),
            timeout=self.settings.getfloat("SEARCHCRAWL_SOLR_TIMEOUT"),
            auth=paths.solr_auth(self.settings),
        )
        total = 0
        with open_database(self.settings) as database:  # read only
            table = DocumentTable(database)
            for source in sources or index.sources():
                # the document table's word on who holds each URL, when it knows the source
                holders = table.holders if table.count_by(source, "state") else None
                migrated = migrate_ids(
                    index,
                    source,
                    holders=holders,
                    max_docs=min(self.settings.getint("SEARCHCRAWL_SOLR_BATCH_DOCS"), 200),
                    max_bytes=self.settings.getint("SEARCHCRAWL_SOLR_BATCH_BYTES"),
                )
                total += migrated
                print(f"{source}: {migrated} documents migrated to ids {source}!<url>")
        print(f"{total} documents migrated in all")

    def _start(self, data_dir: Path, opts: argparse.Namespace) -> None:
        if not opts.cloud:
            if opts.nodes is not None:
                raise UsageError("--nodes with start needs --cloud")
            solr = DevSolr(data_dir, opts.port)
            url = solr.start(timeout=opts.timeout)
            print(f"Solr is up at {url} (started in {solr.start_seconds:.1f}s; log: {solr.log_path})")
            return
        try:
            count = int(opts.nodes) if opts.nodes is not None else DEFAULT_CLOUD_NODES
        except ValueError:
            raise UsageError("--nodes with start --cloud is a number of nodes") from None
        if count < 1:
            raise UsageError("--nodes must be at least 1")
        cloud = DevSolrCloud(data_dir, opts.port, nodes=count)
        nodes = cloud.start(timeout=opts.timeout)
        print(
            f"SolrCloud is up: {len(nodes)} nodes at {','.join(nodes)} "
            f"(started in {cloud.start_seconds:.1f}s; log: {cloud.log_path})"
        )
        print(f"Create a collection with: {hint_program()} solr collection NAME --port {opts.port}")

    def _status(self, data_dir: Path, opts: argparse.Namespace) -> None:
        cloud = DevSolrCloud(data_dir, opts.port).status()
        if cloud["running"]:
            nodes = ", ".join(f"{url} ({state})" for url, state in zip(cloud["nodes"], cloud["states"], strict=False))
            print(f"SolrCloud is running: {nodes} (pid {cloud['pid']}, ZooKeeper {cloud['zk']}, log: {cloud['log']})")
            return
        state = DevSolr(data_dir, opts.port).status()
        if not state["running"]:
            print(f"Solr is not running on port {opts.port}")
            self.exitcode = 3
        else:
            print(f"Solr is running: {state['url']} (pid {state['pid']}, {state['num_docs']} documents, log: {state['log']})")

    def _collection(self, name: str, data_dir: Path, opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if opts.nodes:
            nodes = [url.strip().rstrip("/") for url in opts.nodes.split(",") if url.strip()]
        else:
            local = DevSolrCloud(data_dir, opts.port).status()
            if not local["running"]:
                raise UsageError(
                    f"give --nodes, or start a local SolrCloud: {hint_program()} solr start --cloud --port {opts.port}"
                )
            nodes = local["nodes"]
        auth = paths.solr_auth(self.settings)
        node = solrcloud.live_node(nodes, auth)
        started = time.monotonic()
        solrcloud.upload_configset(node, opts.configset, auth=auth)
        created = solrcloud.create_collection(node, name, opts.configset, opts.shards, opts.replicas, auth)
        seconds = time.monotonic() - started
        status = solrcloud.collection_status(node, name, auth)
        shards = status["shards"]
        replicas = sum(len(shard["replicas"]) for shard in shards.values())
        if created:
            log(
                f"Created collection {name}: {len(shards)} shards, {replicas} replicas, "
                f"configset {opts.configset} ({seconds:.1f}s)"
            )
        else:
            log(f"Collection {name} exists already ({len(shards)} shards, {replicas} replicas); reloaded it")
            if status["configset"] != opts.configset:
                log(f"Note: it uses configset {status['configset']}, not the uploaded {opts.configset}")
        print(",".join(solrcloud.collection_urls(nodes, name)))


def log(message: str) -> None:
    """Progress goes to stderr: stdout carries only the collection URLs, for scripts."""
    print(message, file=sys.stderr)
