"""Forms posted from another origin (web/origins.py, issue 72): the decision, and the refusal
through Starlette's TestClient (real HTTP and a real browser: tests/e2e/test_web_proxies.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.datastructures import Headers

from searchcrawl.web.origins import foreign_post, origin_of, public_origins
from tests.web.test_searcher import StandInDirectory, web_client


def test_an_origin_is_its_scheme_host_and_port() -> None:
    assert origin_of("https://Search.Example") == "https://search.example:443"
    assert origin_of("http://search.example:8080/some/path?q=1") == "http://search.example:8080"
    assert origin_of("http://[::1]:8080") == "http://::1:8080"
    assert origin_of("null") is None and origin_of("ftp://h.example") is None and origin_of("http://h:port") is None


@pytest.mark.parametrize(
    ("headers", "refused"),
    [
        ({}, False),  # no browser says: the form's token decides
        ({"origin": "http://search.example:8080"}, False),
        ({"origin": "http://SEARCH.example:8080", "sec-fetch-site": "same-origin"}, False),
        ({"origin": "https://search.example"}, False),  # the public URL's (a proxy sends another Host)
        ({"origin": "http://search.example:8081"}, True),  # another port of this host: same site
        ({"origin": "http://wiki.search.example:8080"}, True),  # a sibling host: same site
        ({"origin": "https://search.example:8080"}, True),  # another scheme
        ({"origin": "null"}, True),  # a sandboxed page, or a browser too old to say more
        # this application's own pages carry Referrer-Policy: no-referrer: a browser's form says null
        ({"origin": "null", "sec-fetch-site": "same-origin"}, False),
        ({"origin": "null", "sec-fetch-site": "same-site"}, True),
        ({"origin": "http://evil.example", "sec-fetch-site": "same-origin"}, True),
        ({"sec-fetch-site": "same-site"}, True),
        ({"sec-fetch-site": "cross-site"}, True),
        ({"origin": "http://search.example:8080", "sec-fetch-site": "same-site"}, True),
    ],
)
def test_a_post_from_another_origin_is_refused(headers: dict[str, str], refused: bool) -> None:
    why = foreign_post(Headers(headers), "http", "search.example:8080", public_origins(["https://search.example/search/"]))
    assert (why is not None) is refused, why


def test_a_public_url_must_be_an_http_url() -> None:
    assert public_origins(["", "https://u:p@search.example/x"]) == ("https://search.example:443",)
    with pytest.raises(ValueError, match="SEARCHCRAWL_WEB_PUBLIC_URL"):
        public_origins(["search.example"])


def test_every_form_of_the_application_refuses_a_post_from_another_origin(tmp_path: Path) -> None:
    directory = StandInDirectory()
    web = web_client(tmp_path, directory)
    token = web.get("/login").cookies.get("searchcrawl_signin") or web.cookies["searchcrawl_signin"]
    data = {"signin_token": token, "username": "alice", "password": "alice-secret"}
    foreign = {"origin": "http://127.0.0.1:8081"}
    for path in ("/login", "/admin/login", "/logout", "/admin/logout", "/admin/explain-access"):
        answer = web.post(path, data=data, headers=foreign, follow_redirects=False)
        assert answer.status_code == 403 and "another address" in answer.text, path
        assert answer.headers["x-content-type-options"] == "nosniff"  # the security headers too
    own = web.post("/login", data=data, headers={"origin": "http://127.0.0.1"}, follow_redirects=False)
    assert own.status_code == 303
