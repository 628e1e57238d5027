"""A source's ``[tls]`` table, its PEM files, and what a failed handshake means, as plain logic
(certificates made by trustme, a private CA of the test's own)."""

from __future__ import annotations

import pytest
import trustme
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    PrivateFormat,
    load_pem_private_key,
)
from OpenSSL import SSL
from pydantic import ValidationError
from scrapy.core.downloader.handlers.http11 import TunnelError
from twisted.internet.error import ConnectionRefusedError as TxConnectionRefused
from twisted.python.failure import Failure
from twisted.web._newclient import ResponseNeverReceived

from searchcrawl.rules.status_codes import UNCOUNTED_FAILURES, Status, describe_failure, status_for_exception
from searchcrawl.rules.tls_settings import (
    TlsFileError,
    TlsRules,
    check_client_files,
    load_client_key,
    split_certificates,
    tls_failure_reason,
)

PASSPHRASE = "pp-Tr46-secret"  # noqa: S105 - the test's own


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def test_verification_is_the_default_and_contradictions_are_refused() -> None:
    assert TlsRules().verify and not TlsRules().customised
    assert TlsRules(verify=False).customised and TlsRules(ca_bundle="ca.pem").customised
    with pytest.raises(ValidationError, match="drop 'verify = false'"):
        TlsRules(verify=False, ca_bundle="ca.pem")
    with pytest.raises(ValidationError, match="'client_key' needs 'client_cert'"):
        TlsRules(client_key="k.pem")
    with pytest.raises(ValidationError, match="'client_key_secret' needs 'client_cert'"):
        TlsRules(client_key_secret="KEY_PASS")
    with pytest.raises(ValidationError, match="name of an environment variable"):
        TlsRules(client_cert="c.pem", client_key_secret="the passphrase")
    with pytest.raises(ValidationError, match="path of a PEM file"):
        TlsRules(ca_bundle=" ")


def test_a_bundle_is_split_into_its_certificates(ca: trustme.CA) -> None:
    other = trustme.CA()
    bundle = ca.cert_pem.bytes() + b"\n" + other.cert_pem.bytes()
    assert len(split_certificates(bundle, "ca_bundle")) == 2
    for broken in (b"", b"hello", ca.cert_pem.bytes()[:200]):
        with pytest.raises(TlsFileError, match="key 'ca_bundle': expected PEM certificates"):
            split_certificates(broken, "ca_bundle")


def test_client_files_plain_and_encrypted(ca: trustme.CA) -> None:
    client = ca.issue_cert("crawler@example.test")
    cert, key = client.cert_chain_pems[0].bytes(), client.private_key_pem.bytes()
    assert check_client_files(cert, key) is False
    assert check_client_files(cert + key, cert + key) is False  # the key in the certificate's file
    encrypted = load_pem_private_key(key, None).private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(PASSPHRASE.encode())
    )
    assert check_client_files(cert, encrypted) is True
    public = load_pem_private_key(key, None).public_key()
    assert load_client_key(encrypted, PASSPHRASE).public_key() == public
    assert load_client_key(key, PASSPHRASE).public_key() == public  # a passphrase for a plain key: ignored
    with pytest.raises(TlsFileError, match="cannot be decrypted") as wrong:
        load_client_key(encrypted, "not-it")
    assert PASSPHRASE not in str(wrong.value)
    with pytest.raises(TlsFileError, match="name the secret"):
        load_client_key(encrypted, None)
    with pytest.raises(TlsFileError, match="expected a PEM private key"):
        check_client_files(cert, cert)
    with pytest.raises(TlsFileError, match="not a readable PEM private key"):
        check_client_files(cert, b"-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n")


@pytest.mark.parametrize(
    ("message", "meaning"),
    [
        ("[('SSL routines', '', 'certificate verify failed')]", "not signed by a trusted CA"),
        ("[('SSL routines', '', 'tlsv13 alert certificate required')]", "asks for a client certificate"),
        ("[('SSL routines', '', 'sslv3 alert bad certificate')]", "refused the client certificate"),
        ("VerificationError(errors=[DNSMismatch(mismatched_id=DNS_ID(hostname=b'a.test'))])", "not valid for its host name"),
        ("[('SSL routines', '', 'certificate has expired')]", "expired"),
        ("[('SSL routines', '', 'wrong version number')]", "the TLS handshake failed"),
        ("Connection was refused by other side: 111", None),
        ("Could not open CONNECT tunnel with proxy", None),
    ],
)
def test_what_a_failed_handshake_means(message: str, meaning: str | None) -> None:
    found = tls_failure_reason(message)
    assert (found is None) if meaning is None else (meaning in (found or ""))


def test_status_of_tls_and_proxy_failures() -> None:
    handshake = ResponseNeverReceived([Failure(SSL.Error([("SSL routines", "", "certificate verify failed")]))])
    assert status_for_exception(handshake) == Status.TLS_FAILED
    assert "not signed by a trusted CA" in describe_failure(handshake)
    assert status_for_exception(TunnelError("Could not open CONNECT tunnel with proxy 127.0.0.1:3128 [{'status': 502}]")) == (
        Status.PROXY_FAILED
    )
    refused = TxConnectionRefused()
    assert status_for_exception(refused) == Status.CONNECTION_REFUSED  # the site's
    assert status_for_exception(refused, proxied=True) == Status.PROXY_FAILED  # the proxy's
    assert {Status.TLS_FAILED, Status.PROXY_FAILED, Status.AUTH_REFUSED} == UNCOUNTED_FAILURES
