"""Kerberos sign-in without a KDC (issue 79: searchcrawl/web/sign_on/kerberos.py): the Negotiate header
read strictly, and a principal's user name refused, never rewritten, when a directory lookup or an
access token would read it as someone else (the hostile review's cases)."""

from __future__ import annotations

import base64

import pytest

from searchcrawl.web.sign_on.kerberos import MAX_TOKEN_BYTES, kerberos_user, negotiate_token
from searchcrawl.web.sign_on.providers import SignOnError


def test_the_negotiate_header_is_read_strictly() -> None:
    assert negotiate_token(None) is None and negotiate_token("Basic abc") is None and negotiate_token("Negotiate !!!") is None
    assert negotiate_token("Negotiate " + base64.b64encode(b"ticket").decode()) == b"ticket"
    with pytest.raises(SignOnError):
        negotiate_token("Negotiate " + base64.b64encode(b"x" * (MAX_TOKEN_BYTES + 1)).decode())


@pytest.mark.parametrize(
    "principal",
    [
        "alice@OTHER.REALM",
        "alice@sc.test",  # realms are case-sensitive
        " alice@SC.TEST",
        "alice @SC.TEST",
        "alice/admin@SC.TEST",
        "alice\\@OTHER@SC.TEST",
        "uid=alice,ou=people,dc=example,dc=org@SC.TEST",
        "EXAMPLE\\bob@SC.TEST",
        "@SC.TEST",
        "al\tice@SC.TEST",
    ],
)
def test_a_principal_read_as_another_user_is_refused(principal: str) -> None:
    with pytest.raises(SignOnError):
        kerberos_user(principal, "SC.TEST")


def test_a_plain_principal_is_its_user() -> None:
    assert kerberos_user("alice@SC.TEST", "SC.TEST") == "alice" and kerberos_user("j.doe@SC.TEST", "SC.TEST") == "j.doe"


def test_a_token_that_holds_no_kerberos_ticket_is_no_service() -> None:
    from searchcrawl.web.sign_on.kerberos import DerError, ticket_service

    for token in (b"", b"\x60", b"\x60\x03\x06\x01\x00", b"NTLMSSP\x00\x01", b"\x60\x84\xff\xff\xff\xff"):
        with pytest.raises(DerError):
            ticket_service(token)
