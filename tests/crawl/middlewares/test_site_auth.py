"""SiteAuthMiddleware built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a source
with ``[[auth]]`` tables): which requests get credentials, what a 401 or 403 means, digest's
nonce count, and the secret that must be set."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.meta import AUTH_SENT, ROBOTS_REQUEST
from searchcrawl.crawl.middlewares.site_auth import SiteAuthError, SiteAuthMiddleware
from searchcrawl.rules.status_codes import Status
from tests.components import source_crawler

SITE = "http://h.test:8080"
CHALLENGE = 'Digest realm="r", qop="auth", nonce="n1"'


def build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str = "basic") -> SiteAuthMiddleware:
    monkeypatch.setenv("UNIT_SECRET", "s3cret-value")
    table = (
        f'type = "{kind}"\nuser = "crawler"\nsecret = "UNIT_SECRET"'
        if kind in ("basic", "digest", "ntlm")
        else f'type = "{kind}"\nsecret = "UNIT_SECRET"'
    )
    source = f'seeds = ["{SITE}/"]\n[access]\npublic = true\n[[auth]]\norigins = ["{SITE}"]\n{table}\n'
    return build_from_crawler(SiteAuthMiddleware, source_crawler(tmp_path, source))


def answer(request: Request, status: int, **headers: str) -> HtmlResponse:
    return HtmlResponse(request.url, status=status, headers=headers, body=b"<html></html>", request=request)


def test_credentials_go_to_their_origin_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    middleware = build(tmp_path, monkeypatch)
    mine = Request(f"{SITE}/a.html")
    middleware.process_request(mine)
    assert mine.headers["Authorization"].startswith(b"Basic ")
    # a redirect to another port of the same host, carrying the copied header
    other = Request("http://h.test:9090/b.html", headers={"Authorization": mine.headers["Authorization"]})
    middleware.process_request(other)
    assert "Authorization" not in other.headers


def test_refusals_in_a_row_stop_the_origin_and_other_answers_end_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    middleware = build(tmp_path, monkeypatch)
    for n in range(2):
        request = Request(f"{SITE}/{n}.html")
        middleware.process_request(request)
        with pytest.raises(RequestRefused) as refused:
            middleware.process_response(request, answer(request, 401))
        assert refused.value.status == Status.AUTH_REFUSED and not refused.value.outcome.counted
    gone = Request(f"{SITE}/gone.html")
    middleware.process_request(gone)
    assert middleware.process_response(gone, answer(gone, 404)).status == 404  # ends the row
    for n in range(3):
        request = Request(f"{SITE}/again{n}.html")
        middleware.process_request(request)
        with pytest.raises(RequestRefused):
            middleware.process_response(request, answer(request, 401))
    with pytest.raises(RequestRefused, match="not asked again"):
        middleware.process_request(Request(f"{SITE}/later.html"))


def test_a_403_on_one_page_of_a_site_that_took_the_credentials_is_that_pages(tmp_path, monkeypatch) -> None:
    middleware = build(tmp_path, monkeypatch)
    ok = Request(f"{SITE}/ok.html")
    middleware.process_request(ok)
    middleware.process_response(ok, answer(ok, 200))
    secret_page = Request(f"{SITE}/hr-only.html")
    middleware.process_request(secret_page)
    assert middleware.process_response(secret_page, answer(secret_page, 403)).status == 403  # the spider records it


def test_robots_txt_refused_keeps_its_own_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a refusal that makes every URL of the site fail: robots.txt's 4xx allows all."""
    middleware = build(tmp_path, monkeypatch)
    robots = Request(f"{SITE}/robots.txt", meta={ROBOTS_REQUEST: True})
    middleware.process_request(robots)
    assert middleware.process_response(robots, answer(robots, 401)).status == 401


def test_a_robots_txt_behind_digest_answers_its_challenge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its rules are behind the challenge (and it is most often the origin's first request): a
    401 left as robots.txt's answer would allow everything."""
    middleware = build(tmp_path, monkeypatch, "digest")
    robots = Request(f"{SITE}/robots.txt", meta={ROBOTS_REQUEST: True})
    middleware.process_request(robots)
    retry = middleware.process_response(robots, answer(robots, 401, **{"WWW-Authenticate": CHALLENGE}))
    assert isinstance(retry, Request) and retry.meta[ROBOTS_REQUEST]
    middleware.process_request(retry)
    assert b"nc=00000001" in retry.headers["Authorization"]
    # the answer refused: robots.txt's own rule (a 4xx allows all), neither answered again nor a refusal
    assert middleware.process_response(retry, answer(retry, 401, **{"WWW-Authenticate": CHALLENGE})).status == 401
    page = Request(f"{SITE}/a.html")
    middleware.process_request(page)
    assert b"nc=00000002" in page.headers["Authorization"]  # the pages answer the challenge at once


def test_digest_answers_once_and_counts_its_nonce_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    middleware = build(tmp_path, monkeypatch, "digest")
    first = Request(f"{SITE}/a.html")
    middleware.process_request(first)
    assert "Authorization" not in first.headers  # no challenge yet
    retry = middleware.process_response(first, answer(first, 401, **{"WWW-Authenticate": CHALLENGE}))
    assert isinstance(retry, Request)
    middleware.process_request(retry)
    assert b"nc=00000001" in retry.headers["Authorization"]
    second = Request(f"{SITE}/b.html")
    middleware.process_request(second)
    assert b"nc=00000002" in second.headers["Authorization"]
    # the same nonce challenged again (a concurrent first request): the count goes on, not back to 1
    again = middleware.process_response(second, answer(second, 401, **{"WWW-Authenticate": CHALLENGE}))
    assert isinstance(again, Request)
    middleware.process_request(again)
    assert b"nc=00000003" in again.headers["Authorization"]
    with pytest.raises(RequestRefused):  # the answer itself refused: not answered again
        middleware.process_response(again, answer(again, 401, **{"WWW-Authenticate": CHALLENGE}))


def test_a_redirect_of_an_answered_request_answers_its_own_challenge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scrapy's RedirectMiddleware copies a request's meta to its redirect: the redirect of the
    request sent answering a challenge is not itself that answer, so a new challenge to it (a
    nonce gone stale meanwhile) is answered, not refused (status 936, counted toward the origin's
    refusal limit)."""
    middleware = build(tmp_path, monkeypatch, "digest")
    first = Request(f"{SITE}/dir")
    middleware.process_request(first)
    retry = middleware.process_response(first, answer(first, 401, **{"WWW-Authenticate": CHALLENGE}))
    assert isinstance(retry, Request)
    middleware.process_request(retry)
    moved = retry.replace(url=f"{SITE}/dir/")  # as Scrapy builds a 301's redirect: the meta copied
    middleware.process_request(moved)
    stale = 'Digest realm="r", qop="auth", nonce="n2", stale=true'
    again = middleware.process_response(moved, answer(moved, 401, **{"WWW-Authenticate": stale}))
    assert isinstance(again, Request)
    middleware.process_request(again)
    assert b'nonce="n2"' in again.headers["Authorization"]
    with pytest.raises(RequestRefused):  # and the answer refused is a refusal, once
        middleware.process_response(again, answer(again, 401, **{"WWW-Authenticate": stale}))


def test_a_request_sent_without_credentials_is_not_refused_for_a_copied_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request carrying another request's AUTH_SENT (a redirect's copied meta) but no
    credentials of its own: its 401 is a first challenge, answered."""
    middleware = build(tmp_path, monkeypatch, "digest")
    page = Request(f"{SITE}/a.html", meta={AUTH_SENT: True})
    middleware.process_request(page)
    assert AUTH_SENT not in page.meta and "Authorization" not in page.headers
    assert isinstance(middleware.process_response(page, answer(page, 401, **{"WWW-Authenticate": CHALLENGE})), Request)


def test_ntlm_adds_nothing_and_a_401_through_the_handler_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The download handler answers NTLM on the connection; what comes back as 401 is a refusal."""
    middleware = build(tmp_path, monkeypatch, "ntlm")
    request = Request(f"{SITE}/a.html", headers={"Authorization": "NTLM copied-from-a-redirect"}, meta={AUTH_SENT: True})
    middleware.process_request(request)
    assert "Authorization" not in request.headers and AUTH_SENT not in request.meta
    request.meta[AUTH_SENT] = True  # the handler's handshake answered the challenge
    with pytest.raises(RequestRefused) as refused:
        middleware.process_response(request, answer(request, 401, **{"WWW-Authenticate": "NTLM"}))
    assert refused.value.status == Status.AUTH_REFUSED and not refused.value.outcome.counted
    assert "cannot give" not in caplog.text
    basic_only = Request(f"{SITE}/b.html")  # a site that offers no NTLM: the handler could not answer
    middleware.process_request(basic_only)
    with pytest.raises(RequestRefused):
        middleware.process_response(basic_only, answer(basic_only, 401, **{"WWW-Authenticate": 'Basic realm="x"'}))
    assert "asks for credentials this crawl cannot give (Basic)" in caplog.text and "s3cret-value" not in caplog.text


def test_a_secret_that_is_not_set_stops_the_crawl_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UNIT_SECRET", raising=False)
    source = (
        f'seeds = ["{SITE}/"]\n[access]\npublic = true\n[[auth]]\norigins = ["{SITE}"]\ntype = "bearer"\nsecret = "UNIT_SECRET"\n'
    )
    with pytest.raises(SiteAuthError, match="UNIT_SECRET"):
        build_from_crawler(SiteAuthMiddleware, source_crawler(tmp_path, source))


def test_credentials_and_rendering_are_refused_together(tmp_path: Path) -> None:
    from searchcrawl.config.source import SourceSettings

    with pytest.raises(ValueError, match="render"):
        SourceSettings(seeds=[f"{SITE}/"], render_js=True, auth=[{"origins": [SITE], "type": "bearer", "secret": "T"}])
