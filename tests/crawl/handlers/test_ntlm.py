"""NtlmDownloadHandler built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a source
with an NTLM ``[[auth]]`` table), downloading from the IIS-like site of tests/ntlm_site.py.

The handler needs a running Twisted reactor, which a test process must not install (the other
tests choose theirs), so each scenario runs in a child Python that installs Scrapy's asyncio
reactor, builds the handler, downloads the URLs it is given all at once and prints the statuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from scrapy.utils.misc import build_from_crawler

from searchcrawl.config.source import SourceFile, load_source
from searchcrawl.config.spiderloader import download_handlers
from searchcrawl.crawl.handlers.ntlm import NtlmDownloadHandler
from searchcrawl.crawl.middlewares.site_auth import SiteAuthError
from tests.components import source_crawler
from tests.ntlm_site import PASSWORD, NtlmSite, ntlm_sites  # noqa: F401 - the fixture

ROOT = Path(__file__).resolve().parents[3]

SCENARIO = """
import asyncio, json, sys
from pathlib import Path
from scrapy.utils.reactor import install_reactor
install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
from twisted.internet import defer, reactor
from scrapy import Request
from scrapy.utils.misc import build_from_crawler
from searchcrawl.crawl.handlers.ntlm import NtlmDownloadHandler
from searchcrawl.crawl.meta import AUTH_SENT
from tests.components import source_crawler

tmp, source, urls = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
crawler = source_crawler(tmp, source)
handler = build_from_crawler(NtlmDownloadHandler, crawler)
result = {}

async def main():
    requests = [Request(url) for url in urls]
    try:
        responses = await asyncio.gather(*(handler.download_request(request) for request in requests))
        result["statuses"] = [response.status for response in responses]
        result["sent"] = [bool(request.meta.get(AUTH_SENT)) for request in requests]
        result["handshakes"] = crawler.stats.get_value("searchcrawl/ntlm_handshakes", 0)
    finally:
        await handler.close()
        reactor.stop()

reactor.callWhenRunning(lambda: defer.Deferred.fromFuture(asyncio.ensure_future(main())))
reactor.run()
print(json.dumps(result))
"""


def source_of(site_url: str, origin: str, user: str = "CORP\\\\crawler") -> str:
    return f'seeds = ["{site_url}"]\n[[auth]]\norigins = ["{origin}"]\ntype = "ntlm"\nuser = "{user}"\nsecret = "UNIT_SECRET"\n'


def download(tmp_path: Path, source: str, urls: list[str], secret: str = PASSWORD) -> dict:
    env = {**os.environ, "UNIT_SECRET": secret, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", SCENARIO, str(tmp_path), source, json.dumps(urls)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert secret not in run.stdout + run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_concurrent_requests_share_one_connection_and_one_handshake(tmp_path: Path, ntlm_sites) -> None:  # noqa: F811
    site = ntlm_sites({f"/p{n}.html": f"<p>{n}</p>" for n in range(6)})
    origin = site.url.rstrip("/")
    result = download(tmp_path, source_of(site.url, origin), [f"{site.url}p{n}.html" for n in range(6)])
    assert result["statuses"] == [200] * 6 and result["handshakes"] == 1
    assert sum(result["sent"]) == 1  # the one request that made the handshake
    assert {number for number, _p, _c in site.seen} == {1} and site.handshakes_on_their_connection()
    assert Counter(carried for _n, _p, carried in site.seen) == Counter({"": 6, "1": 1, "3": 1})


def test_a_wrong_password_comes_back_as_the_sites_401_after_two_handshakes(tmp_path: Path, ntlm_sites) -> None:  # noqa: F811
    site = ntlm_sites({"/p.html": "<p>x</p>"})
    result = download(tmp_path, source_of(site.url, site.url.rstrip("/")), [f"{site.url}p.html"], secret="not-the-password")
    assert result["statuses"] == [401] and result["sent"] == [True] and result["handshakes"] == 2
    assert [carried for _n, _p, carried in site.seen] == ["", "1", "3", "1", "3"]


def test_another_origin_gets_no_handshake(tmp_path: Path, ntlm_sites) -> None:  # noqa: F811
    site, other = ntlm_sites({"/p.html": "<p>x</p>"}), ntlm_sites({"/p.html": "<p>x</p>"})
    result = download(tmp_path, source_of(site.url, other.url.rstrip("/")), [f"{site.url}p.html"])
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
