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
from searchcrawl.web.sign_on.sessions import FREE_FAILURES
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
    throttle = web.app.state.web.throttle  # type: ignore[attr-defined]
    # Its clock stopped: the first wait after the free failures is 1 s, which a loaded machine's
    # requests and server shutdown outlasted (CI saw the wait gone, 0.0, by the last assertion).
    throttle.clock = lambda: 1000.0
    with served(web.app) as site:
        assert [attempt_from(site, "203.0.113.7") for _ in range(FREE_FAILURES)] == [403] * FREE_FAILURES
        assert attempt_from(site, "203.0.113.7") == 429
        other = attempt_from(site, "198.51.100.9", PASSWORD)
    counted, uncounted = ("203.0.113.7", "127.0.0.1") if proxies else ("127.0.0.1", "203.0.113.7")
    assert other == (303 if proxies else 429)
    # counted by address, and by address and the name guessed at (web/views/sign_on_views.py throttle_key)
    assert throttle.wait(counted) > 0 and throttle.wait(uncounted) == 0 and len(throttle) == 2


# --- issue 72: the sign-in posted from a page of the same site (another port, a sibling host) ---


def sign_in_from(site: str, origin: str | None, **headers: str) -> int:
    """The searcher's sign-in over real HTTP, its POST saying it came from ``origin``."""
    with requests.Session() as http:
        http.headers.update(headers)
        token = re.search(r'name="signin_token" value="([^"]+)"', http.get(site + "/login", timeout=30).text)
        assert token is not None
        data = {"signin_token": token[1], "username": "alice", "password": "alice-secret"}
        # the form's cookie sent as a browser would (it is Secure when the proxy says https)
        sent = {"Cookie": f"searchcrawl_signin={token[1]}", **({"Origin": origin} if origin else {})}
        return http.post(site + "/login", data=data, headers=sent, allow_redirects=False, timeout=30).status_code


def test_a_sign_in_posted_from_another_origin_is_refused_over_http(tmp_path: Path) -> None:
    """Behind a proxy on 127.0.0.1 that says https and sends its own Host, the public URL's origin
    is the one a browser's form comes from; another port of the host is refused, and so is http."""
    from searchcrawl.web.origins import public_origins
    from tests.web.test_searcher import StandInDirectory

    config = unit_config(
        tmp_path,
        directory=StandInDirectory(),
        proxies=trusted_proxies(["127.0.0.1"]),
        public_origins=public_origins(["https://search.example/"]),
    )
    with served(create_app(config)) as site:
        port = site.rsplit(":", 1)[1]
        assert sign_in_from(site, None) == 303  # no browser says where from: the token decides
        assert sign_in_from(site, site) == 303
        assert sign_in_from(site, f"http://127.0.0.1:{int(port) + 1}") == 403
        assert sign_in_from(site, "http://localhost:" + port) == 403
        behind = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"}
        assert sign_in_from(site, "https://search.example", **behind) == 303
        assert sign_in_from(site, "http://search.example", **behind) == 403


def test_a_page_on_another_port_cannot_sign_a_browser_in_as_its_author(tmp_path: Path, serve) -> None:
    """Login CSRF in Chromium: a page of 127.0.0.1 on another port (the same site: its cookies
    reach the application) plants the sign-in form's cookie and posts the form with the
    attacker's account. The browser's Origin header gives it away: refused, nobody signed in."""
    from playwright.sync_api import sync_playwright

    from tests.e2e.test_web_browser import CHROMIUM
    from tests.web.test_searcher import StandInDirectory

    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} missing (apt-get install chromium)")
    with served(create_app(unit_config(tmp_path, directory=StandInDirectory(), proxies=()))) as site:
        root = tmp_path / "attacker"
        root.mkdir()
        (root / "index.html").write_text(
            "<!doctype html><html><body>"
            f'<form method="post" action="{site}/login">'
            '<input name="signin_token" value="planted"><input name="username" value="bob">'
            '<input name="password" value="bob-secret"></form>'
            '<script>document.cookie = "searchcrawl_signin=planted; path=/"; document.forms[0].submit();</script>'
            "</body></html>"
        )
        attacker = serve(root)
        assert attacker.url.rsplit(":", 1)[0] == site.rsplit(":", 1)[0]  # 127.0.0.1: the same site
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
            try:
                page = browser.new_page()
                with page.expect_response(lambda answer: answer.url == f"{site}/login") as posted:
                    page.goto(attacker.url + "index.html")
                refused = posted.value
                home = page.goto(site + "/")
                assert home is not None
                text = page.content()
            finally:
                browser.close()
    assert refused.status == 403, refused.status
    assert "Signed in as" not in text and 'href="/login">Sign in</a>' in text
