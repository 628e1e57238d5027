"""A source's TLS rules as plain logic: the ``[tls]`` table, its PEM files, and what a failed
handshake means.

Certificates are verified by default (``DOWNLOAD_VERIFY_CERTIFICATES = True``; Scrapy's own
default is not to). ``ca_bundle`` names the PEM certificates of the CAs that source trusts,
*instead of* the system's (as curl's ``--cacert``): an intranet's own CA, and nothing else for its
sites; a source that also crawls public sites puts the system's bundle in the file too. ``client_cert`` and ``client_key`` are the
client certificate a site may ask for (the key in ``client_cert`` too if ``client_key`` is not
given); an encrypted key's passphrase comes from the secret named by ``client_key_secret``.
``verify = false`` turns verification off for the source: an explicit choice, logged as a
WARNING naming the source at every crawl. Relative paths are relative to the source file's
folder (as ``seed_files``). The files are read when the source file is loaded, so a missing or
broken one is a broken source (``scrapy list`` names it), not a crawl of failures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import Encoding, load_pem_private_key
from pydantic import BaseModel, ConfigDict, field_validator, model_validator

_SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ENCRYPTED_KEY = (b"-----BEGIN ENCRYPTED PRIVATE KEY-----", b"Proc-Type: 4,ENCRYPTED")


class TlsRules(BaseModel):
    """The ``[tls]`` table of a source file."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    verify: bool = True
    ca_bundle: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    client_key_secret: str | None = None  # the NAME of the secret holding an encrypted key's passphrase

    @field_validator("ca_bundle", "client_cert", "client_key")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or "\0" in value):
            raise ValueError("expected the path of a PEM file")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> TlsRules:
        if not self.verify and self.ca_bundle is not None:
            raise ValueError("'ca_bundle' is the way to verify a private CA's certificates: drop 'verify = false'")
        if self.client_key is not None and self.client_cert is None:
            raise ValueError("'client_key' needs 'client_cert'")
        if self.client_key_secret is not None:
            if self.client_cert is None:
                raise ValueError("'client_key_secret' needs 'client_cert'")
            if not _SECRET_NAME.fullmatch(self.client_key_secret):
                raise ValueError("'client_key_secret' is the name of an environment variable holding the passphrase")
        return self

    @property
    def customised(self) -> bool:
        """Whether the source asks for anything but the default (verified, system CAs, no client certificate)."""
        return not self.verify or self.ca_bundle is not None or self.client_cert is not None


@dataclass(frozen=True)
class TlsFiles:
    """The PEM files a ``[tls]`` table names, as read when the source was loaded (the key
    possibly encrypted; never printed)."""

    ca_certificates: tuple[bytes, ...] = ()  # each one PEM certificate
    client_cert: bytes | None = field(default=None, repr=False)
    client_key: bytes | None = field(default=None, repr=False)
    key_encrypted: bool = False


class TlsFileError(ValueError):
    """A ``[tls]`` file that is not what its key says; the message names the key, never the content."""


def split_certificates(pem: bytes, key: str) -> tuple[bytes, ...]:
    """Each PEM certificate of ``pem``, checked to parse; TlsFileError if there is none or one is broken."""
    try:
        certificates = x509.load_pem_x509_certificates(pem)
    except ValueError:
        raise TlsFileError(f"key '{key}': expected PEM certificates (-----BEGIN CERTIFICATE-----)") from None
    return tuple(certificate.public_bytes(Encoding.PEM) for certificate in certificates)


def check_client_files(cert_pem: bytes, key_pem: bytes) -> bool:
    """Whether the client key is encrypted; TlsFileError if the certificate or key is not PEM.
    An unencrypted key is parsed here; an encrypted one when its passphrase is read (the crawl)."""
    split_certificates(cert_pem, "client_cert")
    if b"PRIVATE KEY-----" not in key_pem:
        raise TlsFileError(
            "key 'client_key': expected a PEM private key (-----BEGIN PRIVATE KEY-----); with no "
            "'client_key', 'client_cert' must hold the key too"
        )
    if any(marker in key_pem for marker in _ENCRYPTED_KEY):
        return True
    try:
        load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        raise TlsFileError("key 'client_key': not a readable PEM private key") from None
    return False


def load_client_key(key_pem: bytes, passphrase: str | None) -> PrivateKeyTypes:
    """The private key of ``key_pem``, decrypted with ``passphrase`` when it is encrypted (a
    passphrase for a key that is not is ignored); TlsFileError saying what is wrong, never the
    passphrase."""
    try:
        return load_pem_private_key(key_pem, password=passphrase.encode() if passphrase else None)
    except TypeError:
        if passphrase:  # "Password was given but private key is not encrypted"
            return load_client_key(key_pem, None)
        raise TlsFileError("the client key is encrypted: name the secret holding its passphrase in 'client_key_secret'") from None
    except ValueError:
        raise TlsFileError("the client key cannot be decrypted with the passphrase of 'client_key_secret'") from None


# --- what a failed handshake means -------------------------------------------------------------

_REASONS = (
    ("certificate verify failed", "the site's certificate is not signed by a trusted CA (a private CA: set [tls] ca_bundle)"),
    ("unable to get local issuer", "the site's certificate is not signed by a trusted CA (a private CA: set [tls] ca_bundle)"),
    ("self-signed", "the site's certificate is self-signed (trust it with [tls] ca_bundle)"),
    ("certificate has expired", "the site's certificate has expired"),
    ("certificate required", "the site asks for a client certificate ([tls] client_cert) or refused the one sent"),
    ("alert bad certificate", "the site refused the client certificate ([tls] client_cert)"),
    ("alert unknown ca", "the site does not trust the client certificate's CA ([tls] client_cert)"),
    ("alert handshake failure", "the TLS handshake failed (perhaps a client certificate is required: [tls] client_cert)"),
)


def tls_failure_reason(message: str) -> str | None:
    """What an error's text says about a failed TLS handshake, in a user's words; None when it is
    not a TLS failure. OpenSSL's messages are matched: ``certificate verify failed``, alerts."""
    lowered = message.lower()
    if "hostname mismatch" in lowered or "doesn't match" in lowered or "verificationerror" in lowered:
        return "the site's certificate is not valid for its host name"
    for needle, reason in _REASONS:
        if needle in lowered:
            return reason
    if "ssl routines" in lowered or "ssl.error" in lowered or "tls" in lowered and "alert" in lowered:
        return "the TLS handshake failed"
    return None
