"""Single sign-on with Kerberos (SPNEGO, "Negotiate"; issue 79), without HTTP routing: a browser
on a machine of the domain signs in with the user's Windows or MIT Kerberos ticket, no password
typed (views/sign_on_views.py routes it; what the protocols share: sign_on/providers.py).

The browser sends ``Authorization: Negotiate <token>`` when asked (a 401 with
``WWW-Authenticate: Negotiate``) and when the site is one it trusts for it (Chrome's
AuthServerAllowlist, Firefox's network.negotiate-auth.trusted-uris, the intranet zone on
Windows). The token is accepted with GSS-API (python-gssapi over MIT Kerberos) and the keytab of
this service's principal (``HTTP/<host>``: SEARCHCRAWL_KERBEROS_KEYTAB, made by the domain's
administrator: ``samba-tool domain exportkeytab`` or Windows' ``ktpass``). The user is the
initiator's principal, believed only in the configured realm (SEARCHCRAWL_KERBEROS_REALM); their
principals are the directory's (SEARCHCRAWL_LDAP_*, the domain's: their groups and SIDs), or their
name alone without one, as for a trusted proxy's header. A token is accepted once: GSS-API's replay
cache refuses it again.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from dataclasses import dataclass

from searchcrawl.system.translations import N_
from searchcrawl.web.sign_on.providers import SignOnError, Wording, check_user

logger = logging.getLogger(__name__)

NEGOTIATE = re.compile(r"Negotiate\s+([A-Za-z0-9+/=]{1,70000})\s*", re.IGNORECASE)
SPNEGO = "1.3.6.1.5.5.2"  # the mechanism browsers negotiate Kerberos in
MAX_TOKEN_BYTES = 48 * 1024  # a Kerberos ticket with a large PAC (many groups) stays well under it


@dataclass(frozen=True)
class KerberosConfig:
    """SEARCHCRAWL_KERBEROS_*: the service's keytab, its principal (None: any in the keytab), the realm believed."""

    keytab: str
    realm: str
    service: str  # HTTP/search.example.org: the one principal whose tickets are taken
    name: str = N_("Windows sign-in (Kerberos)")  # the sign-in button's words (the default in the page's language)


def negotiate_token(header: str | None) -> bytes | None:
    """The SPNEGO token of an ``Authorization: Negotiate ...`` header (None: no such header)."""
    found = NEGOTIATE.fullmatch(header or "")
    if found is None:
        return None
    try:
        token = base64.b64decode(found[1], validate=True)
    except (binascii.Error, ValueError):
        raise SignOnError(N_("the Negotiate token is not base64")) from None
    if not token or len(token) > MAX_TOKEN_BYTES:
        raise SignOnError(N_("the Negotiate token is empty or too large"))
    return token


def kerberos_user(principal: str, realm: str) -> str:
    """The user name of ``principal`` (``name@REALM``), or SignOnError: the realm exactly the
    configured one (Kerberos' realms are case-sensitive), and the name one part as it is, with
    nothing a directory lookup or an access token would read otherwise (no instance ``/``, no
    escaped ``@``, no ``\\``, ``=`` or ``,``, no white space around it): refused, never rewritten."""
    user, _at, found = principal.rpartition("@")
    if not user or found != realm:
        raise SignOnError(N_("the ticket is of another realm"))
    if user != user.strip() or any(char in user for char in "/\\=,@") or any(ord(char) < 33 or ord(char) == 127 for char in user):
        raise SignOnError(N_("the ticket's principal is no plain user name"))
    return check_user(user, Wording(N_("Kerberos principal")))


class DerError(ValueError):
    """Bytes that are not the DER a Kerberos or SPNEGO token is made of."""


def _element(data: bytes, position: int) -> tuple[int, int, int]:
    """The DER element at ``position``: (its tag byte, where its content starts, where it ends)."""
    if position + 2 > len(data):
        raise DerError("truncated")
    tag, length = data[position], data[position + 1]
    position += 2
    if length & 0x80:
        count = length & 0x7F
        if not 1 <= count <= 4 or position + count > len(data):
            raise DerError("a length of an unexpected form")
        length = int.from_bytes(data[position : position + count], "big")
        position += count
    if position + length > len(data):
        raise DerError("truncated")
    return tag, position, position + length


def _children(data: bytes, start: int, end: int) -> dict[int, tuple[int, int]]:
    """The elements of a constructed element's content, by tag byte: (content start, end)."""
    found: dict[int, tuple[int, int]] = {}
    while start < end:
        tag, content, after = _element(data, start)
        found.setdefault(tag, (content, after))
        start = after
    return found


def _inside(data: bytes, span: tuple[int, int], *tags: int) -> tuple[int, int]:
    """Down the path of ``tags`` from the constructed element whose content is ``span``."""
    start, end = span
    for tag in tags:
        children = _children(data, start, end)
        if tag not in children:
            raise DerError(f"no element {tag:#x}")
        start, end = children[tag]
    return start, end


def ticket_service(token: bytes) -> str:
    """The service principal (``HTTP/host@REALM``) a browser's first token holds a ticket for, read
    from the ticket's clear part (RFC 4120's Ticket: its realm and sname), in SPNEGO's NegTokenInit
    or a bare Kerberos token. GSS-API does not tell it, and MIT Kerberos accepts a ticket for any
    name of the account whose key the keytab holds. DerError when the token is neither."""
    tag, start, end = _element(token, 0)
    if tag != 0x60:  # [APPLICATION 0]: the GSS-API initial token
        raise DerError("not a GSS-API initial token")
    children = _children(token, start, end)
    if 0xA0 in children:  # SPNEGO: [0] NegTokenInit { [2] mechToken OCTET STRING }
        inner = _inside(token, children[0xA0], 0x30, 0xA2, 0x04)
        token = token[inner[0] : inner[1]]
        tag, start, end = _element(token, 0)
        if tag != 0x60:
            raise DerError("the mechanism's token is no GSS-API token")
    oid_tag, oid_start, oid_end = _element(token, start)  # the Kerberos mechanism's OID, then TOK_ID 01 00
    if oid_tag != 0x06 or token[oid_end : oid_end + 2] != b"\x01\x00":
        raise DerError("not a Kerberos AP-REQ")
    ap_tag, ap_start, ap_end = _element(token, oid_end + 2)
    if ap_tag != 0x6E:  # [APPLICATION 14] AP-REQ
        raise DerError("not a Kerberos AP-REQ")
    ticket = _inside(token, (ap_start, ap_end), 0x30, 0xA3, 0x61, 0x30)
    fields = _children(token, *ticket)
    if 0xA1 not in fields or 0xA2 not in fields:
        raise DerError("a ticket without its realm or server name")
    realm = _inside(token, fields[0xA1], 0x1B)
    names = _inside(token, fields[0xA2], 0x30, 0xA1, 0x30)
    parts, position = [], names[0]
    while position < names[1]:
        tag, content, after = _element(token, position)
        if tag != 0x1B:
            raise DerError("a name part that is no GeneralString")
        parts.append(token[content:after].decode("utf-8"))
        position = after
    return "/".join(parts) + "@" + token[realm[0] : realm[1]].decode("utf-8")


class KerberosAcceptor:
    """Accepts SPNEGO tokens for this service, with its keytab."""

    def __init__(self, config: KerberosConfig) -> None:
        self.config = config

    def accept(self, token: bytes) -> tuple[str, bytes | None]:
        """The user a token signs in (their name, without the realm) and the answer token for the
        browser (mutual authentication), or SignOnError."""
        import gssapi  # python-gssapi: imported only where Kerberos is configured

        service = f"{self.config.service}@{self.config.realm}"
        try:
            # Active Directory's service names are case-insensitive: the browser's spelling of the host may differ
            if ticket_service(token).casefold() != service.casefold():
                raise SignOnError(N_("the ticket is for another service"))
        except (DerError, UnicodeDecodeError):
            raise SignOnError(N_("the Negotiate token holds no Kerberos ticket")) from None
        try:
            name = gssapi.Name(service, gssapi.NameType.kerberos_principal)
            # SPNEGO (what browsers send) over Kerberos, from this service's keytab alone
            mechs = [gssapi.OID.from_int_seq(SPNEGO), gssapi.MechType.kerberos]
            credentials = gssapi.Credentials(name=name, usage="accept", mechs=mechs, store={"keytab": self.config.keytab})
            context = gssapi.SecurityContext(creds=credentials, usage="accept")
            answer = context.step(token)
            if not context.complete:  # SPNEGO turned down what was offered (NTLM alone, say)
                raise SignOnError(N_("the browser offered no Kerberos ticket this service accepts"))
            principal = bytes(context.initiator_name).decode("utf-8")
        except gssapi.raw.misc.GSSError as exc:  # every GSS-API failure: a replay, a foreign or forged ticket
            raise SignOnError(N_("the Kerberos ticket was not accepted: %(error)s"), error=type(exc).__name__) from None
        except UnicodeDecodeError:
            raise SignOnError(N_("the ticket's names are not UTF-8")) from None
        return kerberos_user(principal, self.config.realm), answer
