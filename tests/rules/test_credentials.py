"""searchcrawl.rules.credentials: origins, the [[auth]] table's validation, and the headers credentials
make (digest against RFC 7616's own examples)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from searchcrawl.rules.credentials import (
    SiteAuth,
    basic_authorization,
    digest_authorization,
    origin_of,
    parse_digest_challenge,
    safe_header_value,
)


def test_origins_name_scheme_host_and_port() -> None:
    assert origin_of("https://Wiki.Example.com/a?b") == "https://wiki.example.com:443"
    assert origin_of("http://127.0.0.1:8081/x") == "http://127.0.0.1:8081"
    assert origin_of("http://127.0.0.1/x") == "http://127.0.0.1:80"
    assert origin_of("ftp://h/") is None and origin_of("http://h:99999/") is None


def test_an_auth_table_names_exact_origins_and_a_secret_by_name() -> None:
    rule = SiteAuth(origins=["http://127.0.0.1:8081"], type="basic", user="crawler", secret="WIKI_PASSWORD")
    assert rule.origins == ["http://127.0.0.1:8081"]
    for bad in (
        {"origins": ["http://h/path"], "type": "bearer", "secret": "T"},  # more than an origin
        {"origins": ["http://u:p@h"], "type": "bearer", "secret": "T"},  # credentials in it
        {"origins": ["file:///etc"], "type": "bearer", "secret": "T"},
        {"origins": ["http://h"], "type": "basic", "secret": "T"},  # no user
        {"origins": ["http://h"], "type": "bearer", "secret": "hunter2!"},  # a value, not a name
        {"origins": ["http://h"], "type": "header", "secret": "T", "header": "X-Key\r\nEvil"},
    ):
        with pytest.raises(ValidationError):
            SiteAuth(**bad)


def test_basic_and_header_values() -> None:
    assert basic_authorization("Aladdin", "open sesame") == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="  # RFC 7617
    assert safe_header_value("Bearer abc") and not safe_header_value("abc\r\nX-Evil: 1")


# RFC 7616, section 3.9.1
RFC_CHALLENGE = (
    'Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm={algorithm}, '
    'nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"'
)
RFC_CNONCE = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"


@pytest.mark.parametrize(
    ("algorithm", "response"),
    [
        ("MD5", "8ca523f5e9506fed4657c9700eebdbec"),
        ("SHA-256", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"),
    ],
)
def test_digest_answers_rfc_7616s_examples(algorithm: str, response: str) -> None:
    challenge = parse_digest_challenge(RFC_CHALLENGE.format(algorithm=algorithm))
    assert challenge is not None and challenge["qop"] == "auth"
    header = digest_authorization(challenge, "Mufasa", "Circle of Life", "GET", "/dir/index.html", 1, RFC_CNONCE)
    assert f'response="{response}"' in header
    assert 'username="Mufasa"' in header and "nc=00000001" in header and f'cnonce="{RFC_CNONCE}"' in header
    assert 'opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"' in header


def test_challenges_we_cannot_answer() -> None:
    assert parse_digest_challenge('Basic realm="x"') is None
    assert parse_digest_challenge('Digest realm="x"') is None  # no nonce
    assert parse_digest_challenge('Digest realm="x", nonce="n", algorithm=SHA-1') is None
    assert parse_digest_challenge('Digest realm="x", nonce="n", qop="auth-int"') is None
