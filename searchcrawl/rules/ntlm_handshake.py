"""NTLM (and Negotiate carrying NTLM) as plain logic: which scheme a 401 offers, and the tokens of
one handshake, made by pyspnego.

NTLM authenticates a connection, not a request: the client's negotiate message (type 1) and its
authenticate message (type 3) must go on the same keep-alive connection, with the server's
challenge (type 2) between them; later requests on that connection need nothing. Keeping to one
connection is the download handler's part (searchcrawl/crawl/handlers/ntlm.py); this module only
reads challenges and makes the ``Authorization`` values, so it is tested with pyspnego on both
sides. The password goes into pyspnego and nowhere else: the messages hold a user name and an
HMAC over the server's challenge, never the password.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable

import spnego

# Answered schemes, preferred first: IIS offers both; plain NTLM has one round trip less to check
SCHEMES = ("NTLM", "Negotiate")
MAX_TOKEN_CHARS = 16 * 1024  # a challenge is ~200 bytes; a longer token is not read
_OPTIONS = {"NTLM": spnego.NegotiateOptions.use_ntlm, "Negotiate": spnego.NegotiateOptions.use_negotiate}


class NtlmError(ValueError):
    """A challenge that cannot be answered (garbled, or refused by pyspnego); never holds a secret."""


def _split(header: str) -> tuple[str, str]:
    scheme, _, token = header.strip().partition(" ")
    return scheme, token.strip()


def offered_scheme(challenges: Iterable[str]) -> str | None:
    """The scheme of ``WWW-Authenticate`` values to answer: NTLM if offered, else Negotiate, else
    None (a 401 offering neither is not ours to answer)."""
    offered = {_split(header)[0].lower() for header in challenges}
    return next((scheme for scheme in SCHEMES if scheme.lower() in offered), None)


def server_token(challenges: Iterable[str], scheme: str) -> bytes | None:
    """The server's token in ``WWW-Authenticate: <scheme> <base64>`` (its challenge, or a final
    Negotiate token), or None when the scheme is offered bare (a refusal, or a new handshake)."""
    for header in challenges:
        name, token = _split(header)
        if name.lower() != scheme.lower() or not token:
            continue
        if len(token) > MAX_TOKEN_CHARS:
            raise NtlmError(f"a {scheme} token of {len(token)} characters is not read")
        try:
            return base64.b64decode(token, validate=True)
        except (binascii.Error, ValueError):
            raise NtlmError(f"the {scheme} token is not base64") from None
    return None


class NtlmHandshake:
    """One handshake of ``user`` (``DOMAIN\\user`` or ``user@domain``) on one connection: the
    negotiate message, then the answer to the server's challenge."""

    def __init__(self, scheme: str, user: str, password: str, hostname: str) -> None:
        if scheme not in SCHEMES:
            raise NtlmError(f"{scheme!r} is not NTLM or Negotiate")
        self.scheme = scheme
        self._context = spnego.client(
            user, password, hostname=hostname, service="HTTP", protocol=scheme.lower(), options=_OPTIONS[scheme]
        )

    def __repr__(self) -> str:
        return f"NtlmHandshake({self.scheme})"

    def negotiate(self) -> str:
        """The first ``Authorization`` value (type 1 message)."""
        return self._header(self._step(None))

    def authenticate(self, challenges: Iterable[str]) -> str | None:
        """The ``Authorization`` value answering the challenge among a 401's ``WWW-Authenticate``
        values (type 3 message), or None when the 401 holds no challenge of this scheme."""
        token = server_token(challenges, self.scheme)
        return None if token is None else self._header(self._step(token))

    def _step(self, token: bytes | None) -> bytes:
        try:
            answer = self._context.step(token)
        except Exception as exc:  # pyspnego's parsers raise KeyError, struct.error... on a garbled token
            raise NtlmError(f"the {self.scheme} challenge cannot be answered: {type(exc).__name__}") from None
        if not answer:
            raise NtlmError(f"the {self.scheme} handshake gave no message to send")
        return answer

    def _header(self, token: bytes) -> str:
        return f"{self.scheme} {base64.b64encode(token).decode('ascii')}"
