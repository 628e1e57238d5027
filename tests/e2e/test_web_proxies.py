"""The web application behind a reverse proxy, served by a real uvicorn as `scrapy web` serves
it (its own proxy headers off: the application reads X-Forwarded-For from SEARCHCRAWL_WEB_PROXIES
itself); the login's slowing down alone, through Starlette's TestClient: tests.web.test_app."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import uvicorn
from starlette.testclient import TestClient

from searchcrawl.commands.web import trusted_proxies
from searchcrawl.web.app import create_app
from searchcrawl.web.sessions import FREE_FAILURES
from tests.conftest import free_port, wait_for
from tests.web.test_app import PASSWORD, unit_config


@contextlib.contextmanager
def served(app: object) -> Iterator[str]:
    """``app`` served by a real uvicorn on 127.0.0.1 with `scrapy web`'s options (uvicorn's
    proxy headers off: the application believes forwarded headers from its proxies itself)."""
    config = uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning", proxy_headers=False)  # type: ignore[arg-type]
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, timeout=30, what="uvicorn")
        yield f"http://127.0.0.1:{config.port}"
    finally:
        server.should_exit = True
        thread.join(10)


def attempt_from(site: str, client: str, password: str = "wrong") -> int:
    """A login attempt relayed by a proxy on 127.0.0.1 for ``client`` (X-Forwarded-For)."""
    with requests.Session() as http:
        http.headers["X-Forwarded-For"] = client
        token = re.search(r'name="login_token" value="([^"]+)"', http.get(site + "/admin/login", timeout=30).text)
        assert token is not None
        data = {"login_token": token[1], "username": "admin", "password": password}
        return http.post(site + "/admin/login", data=data, allow_redirects=False, timeout=30).status_code


@pytest.mark.parametrize("proxies", [["127.0.0.1"], []])
def test_behind_a_trusted_proxy_each_forwarded_client_is_counted_on_its_own(tmp_path: Path, proxies: list[str]) -> None:
    """Every client behind a reverse proxy shared the proxy's count: one guesser locked everyone
    out. The forwarded address now counts, believed only from SEARCHCRAWL_WEB_PROXIES; with none
    trusted the header is ignored, so nobody picks the address they are counted under."""
    web = TestClient(create_app(unit_config(tmp_path, proxies=trusted_proxies(proxies))))
    with served(web.app) as site:
        assert [attempt_from(site, "203.0.113.7") for _ in range(FREE_FAILURES)] == [403] * FREE_FAILURES
        assert attempt_from(site, "203.0.113.7") == 429
        other = attempt_from(site, "198.51.100.9", PASSWORD)
    throttle = web.app.state.web.throttle  # type: ignore[attr-defined]
    counted, uncounted = ("203.0.113.7", "127.0.0.1") if proxies else ("127.0.0.1", "203.0.113.7")
    assert other == (303 if proxies else 429)
    assert throttle.wait(counted) > 0 and throttle.wait(uncounted) == 0 and len(throttle) == 1
