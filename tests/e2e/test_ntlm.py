"""NtlmDownloadHandler built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a source
with an NTLM ``[[auth]]`` table), downloading from the IIS-like site of tests/ntlm_site.py.

The handler needs a running Twisted reactor, which a test process must not install (the other
tests choose theirs), so the scenarios run in a child Python that installs Scrapy's asyncio
reactor and, for each scenario, builds the handler, downloads the URLs it is given all at once and
prints the statuses."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from scrapy.utils.misc import build_from_crawler

from searchcrawl.config.source import SourceFile, load_source
from searchcrawl.crawl.handlers.ntlm import NtlmDownloadHandler
from searchcrawl.crawl.middlewares.site_auth import SiteAuthError
from searchcrawl.crawl.spiderloader import download_handlers
from tests.components import source_crawler
from tests.ntlm_site import PASSWORD, NtlmSite, ntlm_sites  # noqa: F401 - the fixture

ROOT = Path(__file__).resolve().parents[2]

# One child Python per test module (the scenarios run in it one after the other, each with a crawler,
# a handler and a secret of its own): a fresh interpreter importing Scrapy, Twisted and searchcrawl
# costs some 2 s of CPU, the scenario a tenth of that. The tests share a pytest-xdist worker
# (xdist_group) so that they share the child.
pytestmark = pytest.mark.xdist_group("ntlm")

SCENARIOS = """
import asyncio, json, os, sys, threading, traceback
from pathlib import Path
from scrapy.utils.reactor import install_reactor
install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
from twisted.internet import defer, reactor
from scrapy import Request
from scrapy.utils.misc import build_from_crawler
from searchcrawl.crawl.handlers.ntlm import NtlmDownloadHandler
from searchcrawl.crawl.meta import AUTH_SENT
from tests.components import source_crawler

async def scenario(tmp, source, urls, secret):
    os.environ["UNIT_SECRET"] = secret
    crawler = source_crawler(Path(tmp), source)
    handler = build_from_crawler(NtlmDownloadHandler, crawler)
    result = {}
    try:
        requests = [Request(url) for url in urls]
        responses = await asyncio.gather(*(handler.download_request(request) for request in requests))
        result["statuses"] = [response.status for response in responses]
        result["sent"] = [bool(request.meta.get(AUTH_SENT)) for request in requests]
        result["handshakes"] = crawler.stats.get_value("searchcrawl/ntlm_handshakes", 0)
    finally:
        await handler.close()
    return result

async def answer(line):
    try:
        result = await scenario(**json.loads(line))
    except Exception:
        result = {"error": traceback.format_exc()}
    print(json.dumps(result), flush=True)

def read():
    for line in sys.stdin:  # one scenario a line, answered in order
        done = threading.Event()
        def run(line=line):
            defer.Deferred.fromFuture(asyncio.ensure_future(answer(line))).addBoth(lambda _: done.set())
        reactor.callFromThread(run)
        done.wait()
    reactor.callFromThread(reactor.stop)

reactor.callWhenRunning(lambda: threading.Thread(target=read, daemon=True).start())
reactor.run()
"""


@dataclass
class Scenarios:
    """The module's child Python: ``download()`` runs a scenario in it."""

    child: subprocess.Popen[str]
    log: Path  # the child's stderr: every scenario's log lines so far

    def download(self, tmp_path: Path, source: str, urls: list[str], secret: str = PASSWORD) -> dict:
        """Build the handler of ``source`` (its secret ``secret``), download ``urls`` all at once:
        the statuses, whether each request carried credentials, the number of handshakes."""
        assert self.child.stdin is not None and self.child.stdout is not None
        self.child.stdin.write(json.dumps({"tmp": str(tmp_path), "source": source, "urls": urls, "secret": secret}) + "\n")
        self.child.stdin.flush()
        ready, _w, _x = select.select([self.child.stdout], [], [], 120)
        line = self.child.stdout.readline() if ready else ""
        log = self.log.read_text(errors="replace")
        assert line, f"no answer from the scenario child (exit status {self.child.poll()}): {log[-3000:]}"
        result = json.loads(line)
        assert "error" not in result, result["error"] + log[-3000:]
        assert secret not in line + log
        return result


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenarios]:
    log = tmp_path_factory.mktemp("ntlm-scenarios") / "stderr.log"
    with open(log, "w") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-c", SCENARIOS],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    yield Scenarios(child, log)
    assert child.stdin is not None
    child.stdin.close()
    try:
        assert child.wait(timeout=60) == 0, log.read_text(errors="replace")[-3000:]
    finally:
        child.kill()
        child.wait()


def source_of(site_url: str, origin: str, user: str = "CORP\\\\crawler") -> str:
    return f'seeds = ["{site_url}"]\n[access]\npublic = true\n[[auth]]\norigins = ["{origin}"]\ntype = "ntlm"\nuser = "{user}"\nsecret = "UNIT_SECRET"\n'


def test_concurrent_requests_share_one_connection_and_one_handshake(tmp_path: Path, ntlm_sites, scenarios: Scenarios) -> None:  # noqa: F811
    site = ntlm_sites({f"/p{n}.html": f"<p>{n}</p>" for n in range(6)})
    origin = site.url.rstrip("/")
    result = scenarios.download(tmp_path, source_of(site.url, origin), [f"{site.url}p{n}.html" for n in range(6)])
    assert result["statuses"] == [200] * 6 and result["handshakes"] == 1
    assert sum(result["sent"]) == 1  # the one request that made the handshake
    assert {number for number, _p, _c in site.seen} == {1} and site.handshakes_on_their_connection()
    assert Counter(carried for _n, _p, carried in site.seen) == Counter({"": 6, "1": 1, "3": 1})


def test_a_wrong_password_comes_back_as_the_sites_401_after_two_handshakes(
    tmp_path: Path,
    ntlm_sites,  # noqa: F811
    scenarios: Scenarios,
) -> None:
    site = ntlm_sites({"/p.html": "<p>x</p>"})
    result = scenarios.download(
        tmp_path, source_of(site.url, site.url.rstrip("/")), [f"{site.url}p.html"], secret="not-the-password"
    )
    assert result["statuses"] == [401] and result["sent"] == [True] and result["handshakes"] == 2
    assert [carried for _n, _p, carried in site.seen] == ["", "1", "3", "1", "3"]


def test_another_origin_gets_no_handshake(tmp_path: Path, ntlm_sites, scenarios: Scenarios) -> None:  # noqa: F811
    site, other = ntlm_sites({"/p.html": "<p>x</p>"}), ntlm_sites({"/p.html": "<p>x</p>"})
    result = scenarios.download(tmp_path, source_of(site.url, other.url.rstrip("/")), [f"{site.url}p.html"])
    assert result["statuses"] == [401] and result["sent"] == [False] and result["handshakes"] == 0
    assert [carried for _n, _p, carried in site.seen] == [""] and not other.seen


def test_ntlm_sources_get_the_handler_and_its_secret_must_be_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "intranet.toml"
    path.write_text(source_of("http://127.0.0.1:8080/", "http://127.0.0.1:8080"))
    handlers = download_handlers(load_source(SourceFile("intranet", str(path), path)))
    assert handlers["http"] == handlers["https"] == "searchcrawl.crawl.handlers.ntlm.NtlmDownloadHandler"
    path.write_text('seeds = ["http://127.0.0.1:8080/"]\n')
    assert "http" not in download_handlers(load_source(SourceFile("plain", str(path), path)))

    monkeypatch.delenv("UNIT_SECRET", raising=False)
    with pytest.raises(SiteAuthError, match="UNIT_SECRET"):
        build_from_crawler(
            NtlmDownloadHandler, source_crawler(tmp_path, source_of("http://127.0.0.1:8080/", "http://127.0.0.1:8080"))
        )
