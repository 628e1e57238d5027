"""SourceProxyMiddleware built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a
source with a ``[proxy]`` table): which requests go through the proxy, where Proxy-Authorization
goes, what a 407 means, and the environment's proxies left unused."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.middlewares.proxy import ProxyError, SourceProxyMiddleware
from searchcrawl.rules.status_codes import Status
from tests.components import source_crawler

PROXY = "http://proxy.test:3128"
PASSWORD = "pp-Vb81-secret"  # noqa: S105 - the test's own
CREDENTIALS = b"Basic " + base64.b64encode(f"crawler:{PASSWORD}".encode())


def build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str | None = None) -> SourceProxyMiddleware:
    monkeypatch.setenv("UNIT_PROXY_PASSWORD", PASSWORD)
    monkeypatch.setenv("http_proxy", "http://env-proxy.test:8080")  # never used
    monkeypatch.setenv("https_proxy", "http://env-proxy.test:8080")
    if table is None:
        table = f'[proxy]\nurl = "{PROXY}"\nuser = "crawler"\nsecret = "UNIT_PROXY_PASSWORD"\nno_proxy = ["direct.test"]\n'
    source = f'seeds = ["http://site.test/"]\n{table}'
    return build_from_crawler(SourceProxyMiddleware, source_crawler(tmp_path, source))


def test_requests_go_through_the_proxy_with_its_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    middleware = build(tmp_path, monkeypatch)
    for url in ("http://site.test/a.html", "https://site.test/b.html"):
        request = Request(url)
        middleware.process_request(request)
        assert request.meta["proxy"] == "http://proxy.test:3128"
        assert request.headers["Proxy-Authorization"] == CREDENTIALS


def test_no_proxy_hosts_go_direct_without_the_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    middleware = build(tmp_path, monkeypatch)
    proxied = Request("http://site.test/a.html")
    middleware.process_request(proxied)
    # a redirect to a no_proxy host, carrying the copied meta and header
    redirected = proxied.replace(url="http://www.direct.test/b.html")
    assert redirected.headers["Proxy-Authorization"] == CREDENTIALS
    middleware.process_request(redirected)
    assert redirected.meta.get("proxy") is None and "_auth_proxy" not in redirected.meta
    assert "Proxy-Authorization" not in redirected.headers


def test_a_request_of_its_own_proxy_is_overruled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    middleware = build(tmp_path, monkeypatch)
    request = Request("http://site.test/", meta={"proxy": "http://elsewhere.test:1"}, headers={"Proxy-Authorization": "x"})
    middleware.process_request(request)
    assert request.meta["proxy"] == "http://proxy.test:3128" and request.headers["Proxy-Authorization"] == CREDENTIALS


def test_without_a_proxy_table_requests_go_direct_whatever_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    middleware = build(tmp_path, monkeypatch, table="")
    request = Request("http://site.test/", headers={"Proxy-Authorization": "Basic leaked"})
    middleware.process_request(request)
    assert request.meta.get("proxy") is None and "Proxy-Authorization" not in request.headers


def test_a_proxy_without_credentials_sends_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    middleware = build(tmp_path, monkeypatch, table=f'[proxy]\nurl = "{PROXY}"\n')
    request = Request("https://site.test/")
    middleware.process_request(request)
    assert request.meta["proxy"] == "http://proxy.test:3128" and "Proxy-Authorization" not in request.headers


def test_https_through_an_https_proxy_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    middleware = build(tmp_path, monkeypatch, table='[proxy]\nurl = "https://proxy.test:3129"\n')
    plain = Request("http://site.test/")
    middleware.process_request(plain)
    assert plain.meta["proxy"] == "https://proxy.test:3129"
    with pytest.raises(RequestRefused) as refused:
        middleware.process_request(Request("https://site.test/"))
    assert refused.value.status == Status.PROXY_FAILED and not refused.value.outcome.counted


def test_a_407_is_938_not_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    middleware = build(tmp_path, monkeypatch)
    request = Request("http://site.test/a.html")
    middleware.process_request(request)
    response = HtmlResponse(request.url, status=407, body=b"", request=request)
    with pytest.raises(RequestRefused) as refused:
        middleware.process_response(request, response)
    assert refused.value.status == Status.PROXY_FAILED and not refused.value.outcome.counted
    direct = Request("http://direct.test/")  # a site's own 407, not through the proxy, is its answer
    middleware.process_request(direct)
    assert middleware.process_response(direct, HtmlResponse(direct.url, status=407, request=direct)).status == 407


def test_the_secret_must_be_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = f'[proxy]\nurl = "{PROXY}"\nuser = "crawler"\nsecret = "UNIT_PROXY_UNSET"\n'
    monkeypatch.delenv("UNIT_PROXY_UNSET", raising=False)
    with pytest.raises(ProxyError, match="UNIT_PROXY_UNSET"):
        build(tmp_path, monkeypatch, table=table)


def test_a_proxy_table_with_the_proxy_middleware_switched_off_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNIT_PROXY_PASSWORD", PASSWORD)
    source = f'seeds = ["http://site.test/"]\n[proxy]\nurl = "{PROXY}"\n'
    with pytest.raises(ProxyError, match="HTTPPROXY_ENABLED is off"):
        build_from_crawler(SourceProxyMiddleware, source_crawler(tmp_path, source, HTTPPROXY_ENABLED=False))
