"""Secrets: Solr basic auth and the database password come from the environment or files, work
against a real Solr that requires them, and never appear in a log line; nor do secret-ish Scrapy
settings, the user info of crawled URLs, or the contents of a file given as a seed file."""

from __future__ import annotations

import logging
import pprint
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from searchcrawl.config.source import SourceError, SourceFile, check_seed_url, load_source
from searchcrawl.crawl.extensions.secret_settings import SecretSettings
from searchcrawl.dev.solr_runner import DevSolr
from searchcrawl.rules.urls import canonical
from searchcrawl.system import paths, secrets
from tests.conftest import free_port

SOLR_USER, SOLR_PASSWORD = "crawler", "Solr-pw-7f3a9c"
DB_PASSWORD = "Db-pw-51e0b2"


@pytest.fixture(scope="module")
def auth_solr(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevSolr]:
    solr = DevSolr(tmp_path_factory.mktemp("auth-solr"), free_port(), auth=(SOLR_USER, SOLR_PASSWORD))
    solr.start(timeout=600)
    yield solr
    solr.stop()


def test_secret_from_environment_or_file(tmp_path: Path) -> None:
    password_file = tmp_path / "password"
    password_file.write_text("from-a-file\n")
    # a value no log holds otherwise: a secret read is masked in every later log of this process
    assert secrets.secret("X_PASSWORD", {"X_PASSWORD": "Direct-pw-7"}) == "Direct-pw-7"
    assert secrets.secret("X_PASSWORD", {"X_PASSWORD_FILE": str(password_file)}) == "from-a-file"
    assert secrets.secret("X_PASSWORD", {}) is None
    with pytest.raises(secrets.SecretError, match="X_PASSWORD_FILE: cannot read") as error:
        secrets.secret("X_PASSWORD", {"X_PASSWORD_FILE": str(tmp_path / "missing")})
    assert "from-a-file" not in str(error.value)


def test_credentials_leave_urls_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    url, auth = secrets.split_credentials("http://solr:Url-pw-93@127.0.0.1:8983/solr/core")
    assert (url, auth) == ("http://127.0.0.1:8983/solr/core", ("solr", "Url-pw-93"))
    secrets.install_log_redaction()
    with caplog.at_level(logging.INFO):
        logging.getLogger("test").info("pushing to %s with %s", "https://u:other-pw@host/x", "Url-pw-93")
        try:
            raise RuntimeError("failed with Url-pw-93")
        except RuntimeError:
            logging.getLogger("test").exception("boom")
    text = caplog.text
    assert "Url-pw-93" not in text and "other-pw" not in text
    assert "https://u:***@host/x" in text


def test_db_password_joins_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCHCRAWL_DB_PASSWORD", DB_PASSWORD)
    settings = Settings({"SEARCHCRAWL_DB_URL": "postgresql+psycopg://crawler@db.internal/search"})
    assert paths.db_url(settings) == f"postgresql+psycopg://crawler:{DB_PASSWORD}@db.internal/search"


def test_source_file_refuses_credentials(tmp_path: Path) -> None:
    path = tmp_path / "intranet.toml"
    path.write_text('seeds = ["http://admin:Seed-pw-1@intranet.example/"]\n')
    with pytest.raises(SourceError) as error:
        load_source(SourceFile("intranet", str(path), path))
    assert "credentials do not belong in a source file" in str(error.value)
    assert "Seed-pw-1" not in str(error.value)


# --- secret-ish settings ----------------------------------------------------------------------------


def overridden_settings_line(settings: dict[str, object]) -> str:
    """What Scrapy logs once the crawler is built (scrapy/crawler.py)."""
    return f"Overridden settings:\n{pprint.pformat(settings)}"


def test_secret_settings_are_masked_next_to_their_names() -> None:
    assert [
        name
        for name in (
            "HTTPAUTH_PASS",
            "FTP_PASSWORD",
            "MAIL_PASS",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "some_api_token",
            "PrivateKey",
            "GOOGLE_CREDENTIALS",
        )
        if not secrets.is_secret_name(name)
    ] == []
    assert [
        name
        for name in ("HTTPAUTH_USER", "HTTPPROXY_AUTH_ENCODING", "FTP_PASSIVE_MODE", "LOG_LEVEL")
        if secrets.is_secret_name(name)
    ] == []
    text = overridden_settings_line(
        {
            "BOT_NAME": "searchcrawl",
            "FTP_PASSIVE_MODE": False,
            "HTTPAUTH_PASS": "Pass-canary-0a",
            "HTTPAUTH_USER": "crawler-user",
            "LOG_LEVEL": "DEBUG",
            "LONG_PASSWORD": "long canary words " * 12,  # pprint splits it over lines
            "SERVICES": {"api_token": "Nested-canary-0b", "timeout": 5},
            "SOME_API_TOKEN": "Token-canary-0c",
            "SIGNING_KEYS": ["Key-canary-0d", "Key-canary-0e"],
        }
    )
    assert "long '\n" in text  # pprint split it: the masking must see through that
    masked = secrets.redact(text)
    assert "canary" not in masked, masked
    for kept in (
        "'BOT_NAME': 'searchcrawl'",
        "'FTP_PASSIVE_MODE': False",
        "'HTTPAUTH_USER': 'crawler-user'",
        "'LOG_LEVEL': 'DEBUG'",
        "'timeout': 5",
        "'HTTPAUTH_PASS': ***",
        "'SOME_API_TOKEN': ***",
    ):
        assert kept in masked, masked
    assert secrets.redact(masked) == masked
    assert secrets.redact('{"api_key": 12345, "rows": 10}') == '{"api_key": ***, "rows": 10}'


def test_overridden_settings_log_line_is_masked(caplog: pytest.LogCaptureFixture) -> None:
    secrets.install_log_redaction()
    with caplog.at_level(logging.INFO):
        logging.getLogger("scrapy.crawler").info(
            "Overridden settings:\n%(settings)s",
            {"settings": pprint.pformat({"HTTPAUTH_PASS": "Logged-canary-1a", "LOG_LEVEL": "INFO"})},
        )
    assert "Logged-canary-1a" not in caplog.text
    assert "'HTTPAUTH_PASS': ***" in caplog.text and "'LOG_LEVEL': 'INFO'" in caplog.text


def test_secret_settings_values_are_masked_in_any_later_line() -> None:
    settings = {
        "HTTPAUTH_PASS": "Remembered-canary-2a",
        "SERVICES": {"search": {"api_token": "Remembered-canary-2b"}},
        "HTTPAUTH_USER": "crawler-user-2c",  # a user name: not a secret
        "SHORT_KEY": "abc",  # too short to mask everywhere
        "CACHE_KEY_ENABLED": "True",  # a switch
        "LOG_LEVEL": "Remembered-but-not-secret-2d",
    }
    assert sorted(secrets.secret_values(settings)) == ["Remembered-canary-2a", "Remembered-canary-2b", "True", "abc"]
    crawler = get_crawler(settings_dict=settings)
    with pytest.raises(NotConfigured):
        SecretSettings.from_crawler(crawler)  # the extension: remembers, then gets out of the way
    assert crawler.settings["FTP_PASSWORD"] == "guest"  # Scrapy's default: no secret
    assert secrets.redact("anonymous FTP: guest") == "anonymous FTP: guest"
    line = "auth Remembered-canary-2a, token Remembered-canary-2b for crawler-user-2c; abc True Remembered-but-not-secret-2d"
    assert secrets.redact(line) == "auth ***, token *** for crawler-user-2c; abc True Remembered-but-not-secret-2d"


def test_a_secret_holding_another_is_masked_whole() -> None:
    secrets.remember("Inner-canary-3")
    secrets.remember("Outer-Inner-canary-3-and-more")
    assert secrets.redact("x Outer-Inner-canary-3-and-more y Inner-canary-3") == "x *** y ***"


# --- user info in crawled URLs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://user:Url-canary-4@127.0.0.1:8080/x.html", "http://127.0.0.1:8080/x.html"),
        ("HTTPS://User@Example.COM/a/../b?z=1&a=2#top", "https://example.com/b?a=2&z=1"),
        ("http://a%40b:p%3Aq@host/p@q?mail=me@example.com", "http://host/p@q?mail=me%40example.com"),
        ("http://u:p@w@[::1]:8080/", "http://[::1]:8080/"),
        ("http://@host/", "http://host/"),
        ("file://user@host/srv/share/doc.txt", "file://host/srv/share/doc.txt"),
        ("http://host/path?next=http://u:p@other/", "http://host/path?next=http%3A%2F%2Fu%3Ap%40other%2F"),
        ("mailto:someone@example.com", "mailto:someone@example.com"),
    ],
)
def test_canonical_urls_hold_no_user_info(url: str, expected: str) -> None:
    assert canonical(url) == expected
    assert canonical(expected) == expected


@given(
    st.builds(
        "{}://{}{}:{}@{}{}/{}?{}".format,
        st.sampled_from(["http", "https", "HTTP"]),
        st.text(max_size=8),
        st.sampled_from(["", "@"]),
        st.text(max_size=8),
        st.sampled_from(["host.test", "Host.Test:8080", "127.0.0.1", "[::1]"]),
        st.sampled_from(["", ":443"]),
        st.text(max_size=12),
        st.text(max_size=12),
    )
)
def test_canonical_is_idempotent_and_drops_user_info(url: str) -> None:
    try:
        once = canonical(url)
    except ValueError:
        return  # not a URL (canonical's callers handle it)
    assert canonical(once) == once
    authority = once.split("://", 1)[1].split("/", 1)[0]
    assert "@" not in authority


# --- seed files and seed ports ------------------------------------------------------------------------


def test_seed_file_errors_name_the_line_never_its_contents(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow"
    shadow.write_text("root:$6$Shadow-canary-5$hash:19000:0:99999:7:::\nhttp://127.0.0.1/\n")
    path = tmp_path / "leaky.toml"
    path.write_text(f'seed_files = ["{shadow}"]\n')
    with pytest.raises(SourceError) as error:
        load_source(SourceFile("leaky", str(path), path))
    message = str(error.value)
    assert message == f"{path}: key 'seed_files': {shadow}, line 1: expected an http(s) or file URL"
    assert "canary" not in message

    shadow.write_bytes(b"\xffShadow-canary-5\n")
    with pytest.raises(SourceError, match="expected UTF-8 text") as error:
        load_source(SourceFile("leaky", str(path), path))
    assert "canary" not in str(error.value) and "xff" not in str(error.value)

    shadow.write_text("http://[Shadow-canary-5/\n")  # urlsplit's own message would quote it
    with pytest.raises(SourceError) as error:
        load_source(SourceFile("leaky", str(path), path))
    assert "line 1: expected a URL" in str(error.value) and "canary" not in str(error.value)


def test_inline_seeds_may_be_quoted(tmp_path: Path) -> None:
    path = tmp_path / "inline.toml"
    path.write_text('seeds = ["gopher://127.0.0.1/"]\n')
    with pytest.raises(SourceError, match="expected an http\\(s\\) or file URL, got 'gopher://127.0.0.1/'"):
        load_source(SourceFile("inline", str(path), path))


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/", "http://127.0.0.1:0/", "https://host:http/", "http://host:-1/"])
def test_seed_ports_must_be_valid(url: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="expected a port from 1 to 65535"):
        check_seed_url(url)
    path = tmp_path / "ports.toml"
    path.write_text(f'seeds = ["{url}"]\n')
    with pytest.raises(SourceError, match="key 'seeds': expected a port from 1 to 65535"):
        load_source(SourceFile("ports", str(path), path))
    seed_file = tmp_path / "seeds.txt"
    seed_file.write_text(f"http://127.0.0.1:8080/\n{url}\n")
    path.write_text('seed_files = ["seeds.txt"]\n')
    with pytest.raises(SourceError, match="seeds.txt, line 2: expected a port from 1 to 65535$"):
        load_source(SourceFile("ports", str(path), path))


@pytest.mark.parametrize("url", ["http://127.0.0.1:1/", "https://host:65535/x", "http://host/", "file:///srv/docs/"])
def test_good_seed_ports(url: str) -> None:
    assert check_seed_url(f" {url} ") == url


def test_every_node_of_a_comma_separated_solr_url_loses_its_credentials() -> None:
    """Only the first node's were taken out: the others' reached the admin overview's Solr status
    and `scrapy search`'s output."""
    from scrapy.settings import Settings

    from searchcrawl.system.paths import solr_auth, solr_url

    settings = Settings({"SOLR_URL": "http://solr:s3cret@127.0.0.1:1/solr/c/,http://solr:s3cret@127.0.0.1:2/solr/c"})
    assert solr_url(settings) == "http://127.0.0.1:1/solr/c,http://127.0.0.1:2/solr/c"
    assert solr_auth(settings) == ("solr", "s3cret")
    assert solr_url(Settings({"SOLR_URL": "http://127.0.0.1:8983/solr/c/"})) == "http://127.0.0.1:8983/solr/c"
    assert solr_auth(Settings({"SOLR_URL": "http://127.0.0.1:8983/solr/c"})) is None
