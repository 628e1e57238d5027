"""SolrCloud: the local two-node cloud of the dev launcher, `scrapy solr collection` (configset
upload + Collections API), indexing through any node, routing by source (compositeId), migrating
ids, and surviving one node going down."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pysolr
import pytest

from searchcrawl.access.decision import Principals
from searchcrawl.access.tokens import Access
from searchcrawl.commands.search import format_hits, search
from searchcrawl.content.extract import solr_id
from searchcrawl.index import solrcloud
from searchcrawl.index.id_migration import migrate_ids
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.search.trimmed_index import TrimmedIndex
from tests.conftest import ROOT, LocalSolrCloud, run_scrapy, wait_for

# With the session's one SolrCloud, on one pytest-xdist worker (--dist loadgroup): a cluster
# (two Solr nodes and ZooKeeper) costs some 30 s of CPU to start. Tests that stop a node start it again.
pytestmark = pytest.mark.xdist_group("solrcloud")


@pytest.fixture
def cloud(solr_cloud: LocalSolrCloud) -> LocalSolrCloud:
    dev = solr_cloud.cloud
    if dev.start_seconds is not None and dev.build_seconds is not None:
        print(f"\nlocal SolrCloud: JVM up in {dev.start_seconds - dev.build_seconds:.1f}s (Maven {dev.build_seconds:.1f}s)")
    return solr_cloud


def scrapy_solr(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``scrapy solr *args``, forked from the worker's fork server as every other command of the
    tests (a fresh interpreter costs some 2.5 s of CPU to import Scrapy and searchcrawl)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), SEARCHCRAWL_DATA_DIR=str(data_dir))
    return run_scrapy(["solr", *args], env, timeout=600)


def docs(prefix: str, count: int) -> list[dict]:
    return [
        {
            "id": solr_id(prefix, f"http://cloud.test/{prefix}/{i}"),
            "url": f"http://cloud.test/{prefix}/{i}",
            "source": prefix,
            "title": f"Cloud document {i}",
            "content": f"Replicated text number {i}.",
            **Access.public("test").fields(),  # every search is trimmed: public, as a crawl indexes a site
        }
        for i in range(count)
    ]


def found(url: str, source: str) -> int:
    return pysolr.Solr(url, timeout=30).search(f'source:"{source}"', rows=0).hits


def test_local_cloud_nodes_answer_and_keep_data_in_the_data_dir(cloud: LocalSolrCloud) -> None:
    dev = cloud.cloud
    assert cloud.nodes == [f"http://127.0.0.1:{dev.port + i}/solr" for i in range(2)]
    state = json.loads(dev.state_path.read_text())
    assert state["nodes"] == cloud.nodes and state["states"] == ["up", "up"]
    assert state["zk"].startswith("127.0.0.1:")
    status = dev.status()
    assert status["running"] and status["ready"] and status["states"] == ["up", "up"]
    assert {p.name for p in dev.home.iterdir()} >= {"node0", "node1", "zookeeper"}
    assert dev.run_dir.is_relative_to(cloud.data_dir)
    listed = scrapy_solr(cloud.data_dir, "status", "--port", str(dev.port))
    assert listed.returncode == 0 and "SolrCloud is running" in listed.stdout, listed.stdout + listed.stderr


def test_collection_command_creates_shards_and_replicas_on_both_nodes(cloud: LocalSolrCloud, tmp_path: Path) -> None:
    nodes = ",".join(cloud.nodes)
    started = time.monotonic()
    result = scrapy_solr(tmp_path, "collection", "cmd", "--nodes", nodes, "--shards", "2", "--replicas", "2")
    print(f"\nscrapy solr collection: {time.monotonic() - started:.1f}s ({result.stderr.strip()})")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ",".join(f"{node}/cmd" for node in cloud.nodes)
    status = solrcloud.collection_status(cloud.nodes[1], "cmd")
    assert status["configset"] == "searchcrawl"
    assert status["router"] == "compositeId"  # ids <source>!<url> place documents by source
    assert sorted(status["shards"]) == ["shard1", "shard2"]
    for shard in status["shards"].values():
        replicas = shard["replicas"]
        assert len(replicas) == 2 and all(r["state"] == "active" and r["live"] for r in replicas)
        assert sum(r["leader"] for r in replicas) == 1
        assert {r["base_url"] for r in replicas} == set(cloud.nodes)  # one copy per node
    again = scrapy_solr(tmp_path, "collection", "cmd", "--nodes", nodes)
    assert again.returncode == 0 and "exists already" in again.stderr, again.stdout + again.stderr
    assert again.stdout.strip() == result.stdout.strip()


def test_collection_command_reports_solr_errors_without_credentials(cloud: LocalSolrCloud, tmp_path: Path) -> None:
    invalid = scrapy_solr(tmp_path, "collection", "no/slash", "--nodes", cloud.nodes[0])
    assert invalid.returncode == 1 and "Invalid collection" in invalid.stderr, invalid.stdout + invalid.stderr
    down = scrapy_solr(tmp_path, "collection", "x", "--nodes", "http://crawler:s3cr3t-pw@127.0.0.1:1/solr")
    assert down.returncode == 1 and "no Solr node answers" in down.stderr
    assert "s3cr3t-pw" not in down.stdout + down.stderr


def test_documents_added_through_one_node_are_found_through_the_other(cloud: LocalSolrCloud) -> None:
    urls = cloud.create_collection("spread")
    assert urls == [f"{node}/spread" for node in cloud.nodes]
    source = f"spread-{uuid.uuid4().hex[:8]}"
    pysolr.Solr(urls[0], always_commit=True, timeout=30).add(docs(source, 20))
    assert found(urls[1], source) == 20
    assert found(urls[0], source) == 20


def test_a_sources_documents_lie_on_one_shard_and_search_shows_a_url_once(cloud: LocalSolrCloud) -> None:
    """compositeId routing by the source prefix of <source>!<url> (URLs with "!" too). Collapsing
    works within a shard, so a URL two sources hold on two shards comes back twice from Solr:
    `scrapy search` shows it once."""
    urls = cloud.create_collection("routed")
    assert cloud.status("routed")["router"] == "compositeId"
    client = pysolr.Solr(urls[0], always_commit=True, timeout=30)
    sources = [f"routed-{number}" for number in range(12)]  # fixed names: a fixed placement
    pages = [f"http://routed.test/{i}" for i in range(5)] + ["http://routed.test/#!/app", "http://routed.test/a!b!c"]
    client.add(
        [
            {
                "id": solr_id(source, url),
                "url": url,
                "display_url": url,
                "source": source,
                "title": "Routed page",
                "content": "Routed capybara text.",
                **Access.public("a test").fields(),  # searches show documents with access tokens only
            }
            for source in sources
            for url in pages
        ]
    )
    shards: dict[str, set[str]] = {}
    for shard in ("shard1", "shard2"):
        for doc in pysolr.Solr(urls[1], timeout=30).search("capybara", fl="source", rows=1000, shards=shard):
            shards.setdefault(doc["source"], set()).add(shard)
    assert set(shards) == set(sources)
    assert all(len(placed) == 1 for placed in shards.values()), shards
    assert set().union(*shards.values()) == {"shard1", "shard2"}
    page = search(TrimmedIndex(SolrIndex(urls[0]), Principals.anonymous()), "capybara", rows=100)
    assert page.total == 2 * len(pages)  # one copy per shard
    assert sorted(line.strip() for line in format_hits(page) if line.startswith("   http")) == sorted(pages)


def test_migrating_ids_in_a_collection(cloud: LocalSolrCloud) -> None:
    urls = cloud.create_collection("migrated")
    source = f"cloudmig-{uuid.uuid4().hex[:8]}"
    old = [{**doc, "id": doc["url"]} for doc in docs(source, 12)]
    pysolr.Solr(urls[0], always_commit=True, timeout=30).add(old)
    index = SolrIndex(",".join(urls))
    assert migrate_ids(index, source, max_docs=5) == 12
    found_ids = {doc["id"] for doc in pysolr.Solr(urls[1], timeout=30).search(f'source:"{source}"', rows=100, fl="id")}
    assert found_ids == {solr_id(source, doc["url"]) for doc in old}
    assert migrate_ids(index, source) == 0


def test_collection_survives_a_node_going_down(cloud: LocalSolrCloud) -> None:
    urls = cloud.create_collection("failover")
    source = f"failover-{uuid.uuid4().hex[:8]}"
    pysolr.Solr(urls[0], always_commit=True, timeout=30).add(docs(source, 10))
    # Stop node 1, or node 0 if node 1 leads no shard: a leader must fail for this to mean much.
    leaders = {r["base_url"] for shard in cloud.status("failover")["shards"].values() for r in shard["replicas"] if r["leader"]}
    down = 1 if cloud.nodes[1] in leaders else 0
    up = 1 - down
    started = time.monotonic()
    cloud.stop_node(down)
    stopped = time.monotonic()
    try:
        with pytest.raises(pysolr.SolrError):
            pysolr.Solr(urls[down], timeout=5).search("*:*")

        survivor = pysolr.Solr(urls[up], always_commit=True, timeout=30)
        failures: list[str] = []

        def write_accepted() -> bool:
            try:
                survivor.add(docs(source, 30))  # 10 updated, 20 new: both shards must take writes
            except pysolr.SolrError as exc:
                failures.append(str(exc)[:200])
                return False
            return True

        wait_for(write_accepted, timeout=60, what="writes through the surviving node")
        writable = time.monotonic()
        assert found(urls[up], source) == 30
        print(
            f"\nnode {down} (leader of a shard) stopped in {stopped - started:.1f}s; writes accepted "
            f"again {writable - stopped:.1f}s later ({len(failures)} failed attempts)"
        )
    finally:
        back = time.monotonic()
        cloud.start_node(down)
    restarted = time.monotonic()
    status = cloud.wait_active("failover")
    print(f"node {down} back in {restarted - back:.1f}s, all replicas active {time.monotonic() - restarted:.1f}s later")
    assert all(r["live"] for shard in status["shards"].values() for r in shard["replicas"])
    assert found(urls[down], source) == 30


def test_search_and_the_web_pages_read_a_comma_separated_solr_url(cloud: LocalSolrCloud, tmp_path: Path) -> None:
    """SOLR_URL as the README says to write it for SolrCloud: the collection on every node,
    comma-separated. `scrapy search` and the web pages parse it as a crawl does (SolrIndex): one
    node at a time, the next when one is down. Regression: both sent the whole list as one URL
    (HTTP 400 "Ambiguous URI empty segment")."""
    from starlette.testclient import TestClient

    from searchcrawl.dev.solr_runner import free_port
    from searchcrawl.ops.launchers import LocalLauncher
    from searchcrawl.web.app import WebConfig, create_app
    from tests.e2e.test_web import PASSWORD, login

    urls = cloud.create_collection("commas", shards=1, replicas=2)
    pysolr.Solr(urls[0], always_commit=True, timeout=30).add(docs("commas", 3))
    down = f"http://127.0.0.1:{free_port()}/solr/commas"  # a node that is down: passed over
    for solr_url in (",".join(urls), ",".join([down, *urls])):
        env = dict(os.environ, PYTHONPATH=str(ROOT), SOLR_URL=solr_url, SEARCHCRAWL_DATA_DIR=str(tmp_path / "data"))
        searched = run_scrapy(["search", "replicated", "--source", "commas"], env, timeout=300)
        assert searched.returncode == 0, searched.stdout + searched.stderr
        assert searched.stdout.startswith("3 documents match") and "Cloud document 2" in searched.stdout, searched.stdout

        config = WebConfig(
            solr_url=solr_url,
            db_url=f"sqlite:///{tmp_path / 'documents.sqlite3'}",
            cache_root=tmp_path / "cache",
            project_dir=ROOT,
            source_names=lambda: [],
            schedule_of=lambda name: None,
            launcher=LocalLauncher(ROOT, tmp_path / "logs"),
            credentials=("admin", PASSWORD),
        )
        with TestClient(create_app(config), base_url="http://127.0.0.1") as web:
            page = web.get("/", params={"q": "replicated", "source": "commas"})
            assert page.status_code == 200 and page.text.count("Cloud document") == 3, page.text[-2000:]
            login(web)
            assert "Solr answers (OK)" in web.get("/admin").text


def test_synonyms_and_stopwords_reach_every_replica_of_a_collection(cloud: LocalSolrCloud) -> None:
    """Issue 59: the relevance page's synonyms and stopwords in a collection's managed resources
    (ZooKeeper), applied by a collection RELOAD on every replica, through either node."""
    from searchcrawl.index import managed

    urls = cloud.create_collection("managed", shards=1, replicas=2)
    doc = {"id": "m!http://m/1", "url": "http://m/1", "source": "m", "title": "Parking", "content": "automobile parking quux"}
    pysolr.Solr(urls[0], always_commit=True, timeout=30).add([{**doc, **Access.public("test").fields()}])

    def hits(url: str, query: str) -> int:
        return SolrIndex(url).search(query, rows=0, distrib="false").hits  # this node's replica alone

    assert [hits(url, "car") for url in urls] == [0, 0] and [hits(url, "quux") for url in urls] == [1, 1]
    assert managed.sync(SolrIndex(",".join(urls)), {"car": ["automobile", "car"]}, ["quux"]) is True
    assert [hits(url, "car") for url in urls] == [1, 1] and [hits(url, "quux") for url in urls] == [0, 0]
    assert managed.current(SolrIndex(urls[1])) == ({"car": ["automobile", "car"]}, ["quux"])  # one copy, in ZooKeeper


def test_the_search_pages_facets_sorts_and_date_range_across_shards(cloud: LocalSolrCloud) -> None:
    """Issue 59's searching on a two-shard collection: several values of one facet (OR within,
    AND across: Solr's tagged filters, excluded from their own facet's counts) and the facet's
    counts merged from both shards; sorting by date and by title merged across shards; a date range."""
    from searchcrawl.search.request import SearchRequest
    from searchcrawl.search.results import run_search

    urls = cloud.create_collection("faceted")
    client = pysolr.Solr(urls[0], always_commit=True, timeout=30)
    sources = [f"routed-{number}" for number in range(12)]  # fixed names: spread over both shards
    types = ["text/html", "application/pdf", "text/plain"]
    documents = []
    for s, source in enumerate(sources):
        for t, mimetype in enumerate(types):
            number = s * len(types) + t
            url = f"http://faceted.test/{source}/{t}"
            documents.append(
                {
                    "id": solr_id(source, url),
                    "url": url,
                    "display_url": url,
                    "source": source,
                    "host": "faceted.test",
                    "mimetype": mimetype,
                    "title": f"Quokka report {chr(ord('a') + (number * 7) % 26)}{number:02d}",
                    "content": "Quokka facts for the faceted search.",
                    "last_modified": f"2026-{1 + number % 12:02d}-{1 + number % 28:02d}T00:00:00Z",
                    **Access.public("a test").fields(),
                }
            )
    client.add(documents)
    shards = {
        shard: {
            doc["mimetype"] for doc in pysolr.Solr(urls[1], timeout=30).search("quokka", fl="mimetype", rows=100, shards=shard)
        }
        for shard in ("shard1", "shard2")
    }
    assert all(found_types == set(types) for found_types in shards.values()), shards  # every type on both shards
    index = SolrIndex(",".join(urls))
    anyone = Principals.anonymous()

    either = run_search(
        TrimmedIndex(index, anyone),
        SearchRequest("quokka", filters=(("type", "text/html"), ("type", "application/pdf"))),
        rows=50,
    )
    assert either.total == 24 and {hit.mimetype for hit in either.hits} == {"text/html", "application/pdf"}
    counts = {value.value: (value.count, value.selected) for value in either.facets["type"]}
    assert counts == {"text/html": (12, True), "application/pdf": (12, True), "text/plain": (12, False)}
    both = run_search(
        TrimmedIndex(index, anyone),
        SearchRequest("quokka", filters=(("type", "text/html"), ("type", "application/pdf"), ("source", sources[5]))),
        rows=50,
    )
    assert both.total == 2 and {hit.source for hit in both.hits} == {sources[5]}
    assert {value.value: value.count for value in both.facets["type"]}["text/plain"] == 1  # within the source

    newest = run_search(TrimmedIndex(index, anyone), SearchRequest("quokka", sort="date"), rows=50)
    assert [hit.date for hit in newest.hits] == sorted((hit.date for hit in newest.hits), reverse=True)
    assert len(newest.hits) == 36
    titled = run_search(TrimmedIndex(index, anyone), SearchRequest("quokka", sort="title"), rows=50)
    assert [hit.title for hit in titled.hits] == sorted(doc["title"] for doc in documents)
    march = run_search(
        TrimmedIndex(index, anyone), SearchRequest("quokka", date_from="2026-03-01", date_to="2026-03-31"), rows=50
    )
    expected = sorted(doc["url"] for doc in documents if doc["last_modified"].startswith("2026-03"))
    assert expected and sorted(hit.url for hit in march.hits) == expected


def test_semantic_passages_lie_with_their_documents_and_the_top_k_is_cut_after_merging(cloud: LocalSolrCloud) -> None:
    """Issue 76 on SolrCloud: a passage's id begins with its document's ``<source>!``, so the
    router places it on its document's shard; the kNN query asks each shard for its top k and the
    merge keeps the best ``rows`` of all shards, trimmed."""
    from searchcrawl.search.hybrid import SemanticModel, nearest_documents
    from searchcrawl.semantic.embedders import WordLlamaEmbedder, field_name
    from searchcrawl.semantic.passage_index import PassageIndex

    urls = cloud.create_collection("semantic")
    sources = [f"sem-{number}" for number in range(8)]  # fixed names: documents on both shards
    topics = ["boiling pasta in salted water", "tuning the garbage collector", "booking a meeting room", "rotating passwords"]
    index = SolrIndex(",".join(urls), timeout=60)
    index.add(
        [
            {
                "id": solr_id(source, f"http://sem.test/{n}"),
                "url": f"http://sem.test/{n}",
                "source": source,
                "title": f"Note {n}",
                "content": f"This note is about {topics[(n + i) % len(topics)]}. " * 5,
                **Access.public("test").fields(),
            }
            for i, source in enumerate(sources)
            for n in range(6)
        ]
    )
    index.commit()
    model = WordLlamaEmbedder()
    assert PassageIndex(index, model).sync().documents == len(sources) * 6
    field = field_name(model.model_id, model.dimension)
    client = pysolr.Solr(urls[1], timeout=30)
    placed: dict[str, set[str]] = {}
    for shard in ("shard1", "shard2"):
        for doc in client.search("*:*", fq="doc_type:passage", fl="parent_id", rows=1000, shards=shard):
            placed.setdefault(doc["parent_id"], set()).add(shard)
        for doc in client.search("*:*", fq="-doc_type:passage", fl="id", rows=1000, shards=shard):
            assert placed.get(doc["id"], {shard}) == {shard}  # with their document
    assert len(placed) == len(sources) * 6 and all(len(shards) == 1 for shards in placed.values())
    vector = [float(value) for value in model.embed_queries(["how long to cook spaghetti"])[0]]
    trimmed = TrimmedIndex(SolrIndex(urls[0]), Principals.anonymous())
    merged = trimmed.nearest(field, vector, 5, {"rows": 5, "fl": "id,parent_id,score"})
    per_shard = [
        doc
        for shard in ("shard1", "shard2")
        for doc in trimmed.nearest(field, vector, 5, {"rows": 5, "fl": "id,parent_id,score", "shards": shard}).docs
    ]
    best = sorted(per_shard, key=lambda doc: -doc["score"])[:5]
    # the best 5 of both shards' (copies of one text in two sources tie: compared by score)
    assert [round(doc["score"], 5) for doc in merged.docs] == [round(doc["score"], 5) for doc in best]
    assert len(merged.docs) == 5 and {doc["id"] for doc in merged.docs} <= {doc["id"] for doc in per_shard}
    assert {placed[doc["parent_id"]].pop() for doc in per_shard} == {"shard1", "shard2"}
    nearest = nearest_documents(
        trimmed, SemanticModel(model, 0.0), "how long to cook spaghetti", [], {}, 10
    )  # no floor: the merge
    assert len(nearest) == 10 and all("pasta" in passage["passage_text"] for _, passage in nearest[:5])


def test_a_crawl_never_requests_a_live_node_that_solr_url_does_not_name(cloud: LocalSolrCloud, tmp_path: Path) -> None:
    """Issue 91: SOLR_URL names one node; the cluster's other live node is the installation's
    Solr too. The crawl learns the live nodes from the cluster state when it starts and refuses
    a seed of the other node (944), by host and port."""
    from searchcrawl.crawl.own_services import live_solr_nodes
    from searchcrawl.rules.status_codes import Status
    from searchcrawl.rules.urls import canonical
    from tests.conftest import Project

    urls = cloud.create_collection("guarded", shards=1, replicas=2)
    found = live_solr_nodes(urls[0], None)
    assert found is not None
    services, _addresses = found
    assert {f"http://{service.host}:{service.port}/solr" for service in services} == set(cloud.nodes)
    (tmp_path / "sources").mkdir()
    project = Project(tmp_path / "data", tmp_path / "sources", urls[0])
    seed = f"{urls[1]}/select?q=*:*&wt=csv"
    name = f"cloud-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{seed}"]\nindex_dynamic_pages = true\n')
    done = project.scrapy("crawl", name)
    assert done.returncode == 0, done.stderr[-3000:]
    row = project.table().get(name, canonical(seed))
    # on failure, what the crawl said of the live nodes (learnt, or not and why)
    said = [line for line in done.stderr.splitlines() if "live nodes" in line]
    assert row is not None and row["status"] == Status.OWN_SERVICE, (row, said)
    assert "is a node of Solr of this installation" in row["reason"]
