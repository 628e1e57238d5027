"""What used to rest on private internals of Scrapy and pysolr, through their public interfaces.

Solr's JSON update API is reached with plain HTTP (no pysolr private method): the request, as it
reaches the real Solr, is what pysolr sent (path, commitWithin, body, auth), and failures keep
their classification. delay_rules and the fleet's reservation set the downloader slots' delay
through the request_reached_downloader signal (no private downloader default): a probe spider
records the delay Scrapy's slots had when each response came. A shared crawl's nodes look at the
frontier every IDLE_RECHECK through the engine's public crawl() (no private heartbeat interval):
they see the run's end together.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pysolr
import pytest
from scrapy import signals

from searchcrawl.content.extract import solr_id
from searchcrawl.crawl.spider import SourceSpider
from searchcrawl.index.solr_client import IndexingError, SolrIndex
from tests.conftest import Project, Site, assert_spaced
from tests.sites import build_intranet

# --- Solr's JSON update API, through plain HTTP ----------------------------------------------------


class Recorded:
    """The requests a recording proxy passed on to Solr: (method, path, headers by lower-case name, body)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []


@pytest.fixture
def solr_proxy(solr_url: str) -> Iterator[tuple[str, Recorded]]:
    """A pass-through proxy in front of the real Solr that records each request: yields the core's
    URL through the proxy. Solr answers every request itself."""
    recorded = Recorded()
    base = solr_url.split("/solr/", 1)[0]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

        def forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            recorded.requests.append(
                (self.command, self.path, {name.lower(): value for name, value in self.headers.items()}, body)
            )
            headers = {name: value for name, value in self.headers.items() if name.lower() in ("content-type", "authorization")}
            request = urllib.request.Request(base + self.path, data=body or None, headers=headers, method=self.command)
            try:
                with urllib.request.urlopen(request, timeout=60) as answer:
                    status, answer_headers, content = answer.status, answer.headers, answer.read()
            except urllib.error.HTTPError as error:
                status, answer_headers, content = error.code, error.headers, error.read()
            self.send_response(status)
            self.send_header("Content-Type", answer_headers.get("Content-Type", "text/plain"))
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        do_GET = forward  # noqa: N815 - http.server's names
        do_POST = forward  # noqa: N815

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/solr/{solr_url.split('/solr/', 1)[1]}", recorded
    finally:
        server.shutdown()
        server.server_close()


def cached(document: dict[str, Any]) -> bytes:
    """A document as the cache holds it: Solr's JSON, compact, not ASCII-escaped."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def test_json_updates_reach_solr_as_pysolr_sent_them(solr_proxy, solr_url: str, solr: pysolr.Solr) -> None:
    """add_json posts the cached JSON as it is, to /update with commitWithin and overwrite, with
    the index's auth; add_new and copy_field_targets go the same way; Solr takes them all."""
    url, recorded = solr_proxy
    source = f"wire-{uuid.uuid4().hex[:8]}"
    index = SolrIndex(url, commit_within_ms=1500, auth=("crawler", "secret"))
    documents = [
        {"id": solr_id(source, f"http://wire.test/{i}"), "url": f"http://wire.test/{i}", "source": source, "title": f"doc {i}"}
        for i in range(3)
    ]
    documents[1]["content"] = 'Grüße \u00a0\x07\x00 «1» \U0001f600 "quoted"'
    bodies = [cached(document) for document in documents]
    index.add_json(bodies)

    method, path, headers, body = recorded.requests[-1]
    assert (method, path) == ("POST", f"/solr/{url.split('/solr/', 1)[1]}/update/?commitWithin=1500&overwrite=true")
    assert headers["content-type"] == "application/json; charset=utf-8"
    assert headers["authorization"] == "Basic Y3Jhd2xlcjpzZWNyZXQ="  # crawler:secret
    assert body == b"[" + b",".join(bodies) + b"]"  # sent as cached: nothing decoded and encoded again
    solr.commit()
    found = {doc["url"]: doc for doc in solr.search(f'source:"{source}"', fl="*", rows=10)}
    assert set(found) == {document["url"] for document in documents}
    assert found["http://wire.test/1"]["content"] == documents[1]["content"]

    index.add_json([cached({**documents[0], "title": "overwritten"})])  # overwrite=true: the id is replaced
    index.add_new([{**documents[2], "title": "not taken"}, {**documents[0], "id": solr_id(source, "http://wire.test/new")}])
    method, path, headers, body = recorded.requests[-1]
    assert (method, headers["content-type"]) == ("POST", "application/json; charset=utf-8")
    assert path.endswith("/update?commitWithin=1500&failOnVersionConflicts=false&wt=json")
    assert [document["_version_"] for document in json.loads(body)] == [-1, -1]
    solr.commit()
    titles = {doc["id"]: doc["title"] for doc in solr.search(f'source:"{source}"', fl="id,title", rows=10)}
    assert titles[documents[0]["id"]] == "overwritten" and titles[documents[2]["id"]] == "doc 2"
    assert len(titles) == 4  # the new id was added, the existing one kept

    targets = index.copy_field_targets()
    method, path, headers, _body = recorded.requests[-1]
    assert (method, path, headers["authorization"]) == (
        "GET",
        f"/solr/{url.split('/solr/', 1)[1]}/schema/copyfields?wt=json",
        "Basic Y3Jhd2xlcjpzZWNyZXQ=",
    )
    with urllib.request.urlopen(f"{solr_url}/schema/copyfields?wt=json", timeout=30) as answer:
        assert targets == sorted({rule["dest"] for rule in json.load(answer)["copyFields"]})
    index.search("*:*", rows=0)  # pysolr's own requests share the session and the auth
    assert recorded.requests[-1][2]["authorization"] == "Basic Y3Jhd2xlcjpzZWNyZXQ="


def test_solr_failures_keep_their_classification(solr_url: str) -> None:
    """A document Solr refuses (400), a request it refuses (404), a node that is down or does not
    answer: the same IndexingError (refused, status, reason) as through pysolr; a node down is
    passed over for the next."""
    source = f"fail-{uuid.uuid4().hex[:8]}"
    good = cached({"id": solr_id(source, "http://fail.test/a"), "url": "http://fail.test/a", "source": source})
    bad = cached({"id": solr_id(source, "http://fail.test/b"), "url": "http://fail.test/b", "last_modified": "not a date"})

    with pytest.raises(IndexingError) as refused:
        SolrIndex(solr_url).add_json([bad])
    assert (refused.value.refused, refused.value.status, refused.value.documents_refused) == (True, 400, True)
    assert "Invalid Date String" in refused.value.reason and "HTTP" not in refused.value.reason

    with pytest.raises(IndexingError) as no_core:
        SolrIndex(solr_url.rsplit("/", 1)[0] + "/no-such-core").add_json([good])
    assert (no_core.value.refused, no_core.value.status, no_core.value.documents_refused) == (True, 404, False)
    assert "Can not find" in no_core.value.reason and "<" not in no_core.value.reason

    with pytest.raises(IndexingError) as down:
        SolrIndex("http://127.0.0.1:9/solr/none").add_json([good])
    assert (down.value.refused, down.value.status) == (False, None)
    assert "cannot connect (Connection refused)" in down.value.reason

    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        with pytest.raises(IndexingError) as slow:
            SolrIndex(f"http://127.0.0.1:{silent.getsockname()[1]}/solr/none", timeout=1).add_json([good])
    assert (slow.value.refused, slow.value.status) == (False, None) and "timed out" in slow.value.reason

    index = SolrIndex(f"http://127.0.0.1:9/solr/none,{solr_url}")
    index.add_json([good])  # the first node is down: the second takes it
    assert index.current == 1
    assert index.copy_field_targets() == SolrIndex(solr_url).copy_field_targets()


# --- downloader slots: delay_rules and the fleet's reservation ----------------------------------------


class SlotProbeSpider(SourceSpider):
    """Records, as each response comes, the delay and jitter Scrapy's slot for it had (stats
    ``probe/...``, in the crawl's stats dump)."""

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> SlotProbeSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, SlotProbeSpider)
        crawler.signals.connect(spider.probe_slot, signal=signals.response_downloaded)
        return spider

    def probe_slot(self, request: Any) -> None:
        downloader = self.crawler.engine.downloader
        slot = downloader.slots.get(downloader.get_slot_key(request))
        if slot is not None:
            self.crawler.stats.max_value("probe/slot_delay_max", slot.delay)
            self.crawler.stats.min_value("probe/slot_delay_min", slot.delay)
            self.crawler.stats.max_value("probe/slot_jitter_max", slot.jitter)


PROBE = 'spider_class = "slot_probe"'


def probed(log: str, name: str) -> float:
    found = re.search(rf"'probe/{name}': ([0-9.e+-]+)", log)
    assert found, f"no probe/{name} in the stats:\n{log[-3000:]}"
    return float(found.group(1))


def small_site(tmp_path: Path, serve: Any) -> Site:
    root = tmp_path / "site"
    root.mkdir()
    build_intranet(root, sections=2, per_section=3)
    return serve(root)


@pytest.mark.parametrize("autothrottle", [False, True])
def test_delay_rules_set_the_delay_of_scrapys_slots(project: Project, serve, tmp_path: Path, autothrottle: bool) -> None:
    """The rule's delay (0.25 s; the source's own is 0) is the delay of every slot a response
    comes through; with AutoThrottle it is the floor. Measured at the server too."""
    site = small_site(tmp_path, serve)
    rules = "\n".join([f'seeds = ["{site.url}index.html"]', PROBE, f"autothrottle = {str(autothrottle).lower()}"])
    project.source("ruled", rules + "\n[[delay_rules]]\ndelay = 0.25\n")
    crawl = project.scrapy("crawl", "ruled", "-s", "AUTOTHROTTLE_START_DELAY=0")
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    log = crawl.stderr
    kind = "AutoThrottle floor" if autothrottle else "fixed"
    assert f"Delay between requests to one site is now 0.25 s (delay_rules, {kind})" in log
    assert probed(log, "slot_delay_min") >= 0.25
    if not autothrottle:
        assert probed(log, "slot_delay_max") == 0.25
        gaps = [later - earlier for earlier, later in zip(site.arrivals, site.arrivals[1:], strict=False)]
        assert sum(gaps) / len(gaps) >= 0.25 * 0.8, gaps  # Scrapy's jitter: 0.25 s +-50%, on average 0.25


@pytest.fixture
def shared_project(project: Project, postgres_url: str) -> Project:
    project.db_url = postgres_url
    return project


def test_a_shared_crawl_keeps_no_local_delay(shared_project: Project, serve, tmp_path: Path) -> None:
    """The fleet's reservation spaces requests (0.3 s): Scrapy's slots keep no delay nor jitter of
    their own, though DOWNLOAD_DELAY (the source's delay) is 0.3."""
    site = small_site(tmp_path, serve)
    shared_project.source("fleetprobe", f'seeds = ["{site.url}index.html"]\nshared = true\ndelay = 0.3\n{PROBE}\n')
    crawl = shared_project.scrapy("crawl", "fleetprobe")
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    assert (probed(crawl.stderr, "slot_delay_max"), probed(crawl.stderr, "slot_jitter_max")) == (0.0, 0.0)
    assert_spaced(site.arrivals, 0.3)  # the reservation still spaces them (without it: gaps of milliseconds)


# --- a shared crawl: nodes look at the frontier every IDLE_RECHECK ------------------------------------


def test_the_nodes_of_a_shared_crawl_see_its_end_together(shared_project: Project, serve, tmp_path: Path) -> None:
    """When the last page of a shared run is done, the nodes waiting for it close within about
    IDLE_RECHECK (0.5 s), not at Scrapy's own 5 s heartbeat."""
    root = tmp_path / "site"
    root.mkdir()
    build_intranet(root, sections=3, per_section=5)  # 34 pages, 0.2 s apart fleet-wide: about 7 s
    site = serve(root)
    shared_project.source("together", f'seeds = ["{site.url}index.html"]\nshared = true\ndelay = 0.2\n')
    closing: list[float] = []
    outputs: list[list[str]] = []

    def read(process: subprocess.Popen[str], lines: list[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "Closing spider (finished)" in line:
                closing.append(time.monotonic())

    processes = [shared_project.popen("crawl", "together", "-s", "CONCURRENT_REQUESTS=4") for _ in range(3)]
    readers = []
    for process in processes:
        outputs.append([])
        readers.append(threading.Thread(target=read, args=(process, outputs[-1]), daemon=True))
        readers[-1].start()
    for process, reader, lines in zip(processes, readers, outputs, strict=True):
        assert process.wait(timeout=600) == 0, "".join(lines)[-3000:]
        reader.join(timeout=30)
    logs = ["".join(lines) for lines in outputs]
    assert sum(1 for log in logs if re.search(r"'response_received_count': [1-9]", log)) >= 2, "the nodes did not share"
    assert len(closing) == 3, logs
    assert max(closing) - min(closing) < 2.5, [round(moment - min(closing), 2) for moment in closing]
