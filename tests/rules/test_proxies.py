"""A source's ``[proxy]`` table and ``no_proxy`` as plain logic."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from searchcrawl.rules.proxies import ProxyRule, goes_direct


def rule(**keys: object) -> ProxyRule:
    return ProxyRule.model_validate({"url": "http://proxy.example:3128", **keys})


def test_the_proxy_url_is_normalised_with_its_port() -> None:
    assert rule(url="HTTP://Proxy.Example").url == "http://proxy.example:80"
    assert rule(url="https://proxy.example/").url == "https://proxy.example:443"
    assert rule(url="http://[::1]:8080").url == "http://[::1]:8080"
    assert rule(url="http://127.0.0.1:3128").site == ("127.0.0.1", 3128)


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://crawler:hunter2-secret@proxy.example:3128", "without user name and password"),
        ("socks5://proxy.example:1080", "http:// or https://"),
        ("proxy.example:3128", "http:// or https://"),
        ("http://proxy.example:3128/path", "nothing after host and port"),
        ("http://proxy.example:99999", "proxy URL such as"),
    ],
)
def test_a_bad_proxy_url_is_refused(url: str, words: str) -> None:
    with pytest.raises(ValidationError, match=words) as refused:
        rule(url=url)
    # the message a broken source file prints (searchcrawl/config/source.py: the message, not the
    # input, of a value error) never echoes a password written in the URL
    assert "hunter2" not in refused.value.errors()[0]["msg"]


def test_user_and_secret_go_together_and_the_secret_is_a_name() -> None:
    assert rule(user="crawler", secret="PROXY_PASSWORD").secret == "PROXY_PASSWORD"
    with pytest.raises(ValidationError, match="both 'user' and 'secret'"):
        rule(user="crawler")
    with pytest.raises(ValidationError, match="both 'user' and 'secret'"):
        rule(secret="PROXY_PASSWORD")
    with pytest.raises(ValidationError, match="name of an environment variable"):
        rule(user="crawler", secret="pass word!")
    with pytest.raises(ValidationError, match="cannot be empty or hold ':'"):
        rule(user="a:b", secret="PROXY_PASSWORD")


def test_no_proxy_entries_are_normalised() -> None:
    entries = rule(no_proxy=[".Example.COM", "10.1.2.3", "HTTPS://Wiki.Example:8443/", "::1", "example.com"]).no_proxy
    assert entries == ["example.com", "10.1.2.3", "https://wiki.example:8443", "::1"]


@pytest.mark.parametrize("entry", ["*", "*.example.com", "intranet:8080", "http://a.example/path", "a b", ""])
def test_a_bad_no_proxy_entry_is_refused(entry: str) -> None:
    with pytest.raises(ValidationError, match="no_proxy entry"):
        rule(no_proxy=[entry])


@pytest.mark.parametrize(
    ("url", "direct"),
    [
        ("http://example.com/", True),  # the domain itself
        ("https://wiki.example.com:8443/x", True),  # and every host below it, any scheme and port
        ("http://notexample.com/", False),  # not a suffix of the name
        ("http://example.com.evil.test/", False),
        ("http://10.1.2.3:8080/", True),  # an IP address: itself
        ("http://110.1.2.3/", False),
        ("https://intranet.test:8443/a", True),  # an origin: exactly
        ("http://intranet.test:8443/a", False),  # another scheme
        ("https://intranet.test/a", False),  # another port
        ("http://[::1]:9000/", True),
        ("ftp://example.com/", False),  # not an http(s) URL
    ],
)
def test_goes_direct(url: str, direct: bool) -> None:
    entries = rule(no_proxy=["example.com", "10.1.2.3", "https://intranet.test:8443", "::1"]).no_proxy
    assert goes_direct(entries, url) is direct


def test_without_no_proxy_everything_goes_through_the_proxy() -> None:
    assert not goes_direct([], "http://127.0.0.1/")
