"""Single sign-on with SAML 2.0 (issue 79), without HTTP routing: this application as a service
provider (pysaml2, which checks signatures with xmlsec1), for searchers and administrators alike
(views/sign_on_views.py routes it; what the protocols share: sign_on/providers.py).

The identity provider is read from its metadata (SEARCHCRAWL_SAML_IDP_METADATA: a URL or a file,
read once, bounded). A sign-in sends an AuthnRequest (HTTP-Redirect binding) whose id waits here,
with the sign-in's purpose, under a key the browser holds in a cookie of its own and that comes
back as the RelayState; the IdP's answer (HTTP-POST binding to the assertion consumer service) is
taken only for that browser's pending sign-in, once, and believed only when pysaml2 finds it
signed by the IdP's certificate (the assertion: ``want_assertions_signed``), in response to that
request (InResponseTo: no unsolicited answer), for this service provider (its audience), and
within its validity. The user is its ``user_attribute`` (default ``uid``), their groups its
``groups_attribute``; their principals come from the directory or those groups, as for OpenID
Connect.

The answer is a POST from the IdP's page, another site's: its path is exempt from the check that
refuses forms from other origins (origins.py), its authenticity being the signature, the request's
id and the browser's cookie. That cookie is SameSite=None (and Secure) over HTTPS, so browsers send
it with the IdP's POST: SAML sign-in needs the application served over HTTPS.
"""

from __future__ import annotations

import base64
import binascii
import logging
import secrets as random_tokens
import shutil
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests
from defusedxml import DefusedXmlException
from defusedxml import ElementTree as defused_tree

from searchcrawl.system.translations import N_
from searchcrawl.web.sign_on.providers import PendingSignIns, SignedOn, SignOnError, check_user, group_names, new_key

# pysaml2 (and the XML schemas it loads: half a second of CPU) is imported where a sign-in needs it,
# not by every process that imports the web application (each test worker, `scrapy web` without SAML)
if TYPE_CHECKING:
    from saml2.client import Saml2Client

logger = logging.getLogger(__name__)

SAML_COOKIE = "searchcrawl_saml"  # the pending sign-in's key (also the RelayState)
MAX_METADATA_BYTES = 1024 * 1024
MAX_RESPONSE_CHARS = 512 * 1024  # a SAMLResponse (base64) taken at most
TIMEOUT = 10.0
CLOCK_SKEW = 60  # seconds allowed between the IdP's clock and this one
RETRY_SECONDS = 30  # the IdP's metadata, not read, is not asked again for this long
MAX_XML_BYTES = 1024 * 1024  # a SAMLResponse's XML, once decoded (and inflated, if it was deflated)
# XML Signature's algorithms whose collisions are practical or near: an answer signed or digested with
# one is refused (pysaml2 accepts whatever the IdP signed with, SHA-1 included)
WEAK_ALGORITHMS = frozenset(
    {
        "http://www.w3.org/2000/09/xmldsig#rsa-sha1",
        "http://www.w3.org/2000/09/xmldsig#dsa-sha1",
        "http://www.w3.org/2000/09/xmldsig#hmac-sha1",
        "http://www.w3.org/2000/09/xmldsig#sha1",
        "http://www.w3.org/2001/04/xmldsig-more#rsa-md5",
        "http://www.w3.org/2001/04/xmldsig-more#hmac-md5",
        "http://www.w3.org/2001/04/xmldsig-more#md5",
        "http://www.w3.org/2009/xmldsig11#dsa-sha1",
    }
)


@dataclass(frozen=True)
class SamlConfig:
    """SEARCHCRAWL_SAML_*: the IdP's metadata, this service provider, what the assertion says."""

    idp_metadata: str  # a URL (https, or a provider on this machine) or a file
    entity_id: str = ""  # "": <public URL>/login/saml/metadata
    user_attribute: str = "uid"
    groups_attribute: str = "groups"
    principals: str = "auto"  # as OidcConfig's
    name: str = N_("single sign-on (SAML)")  # the sign-in button's words (the default in the page's language)


@dataclass(frozen=True)
class SamlPending:
    request_id: str
    purpose: str
    back: str
    entity_id: str
    acs_url: str


def plain_response(saml_response: str) -> str:
    """A SAMLResponse as pysaml2 is given it: base64 of the XML itself. pysaml2 inflates whatever
    inflates, without a bound (a 500 KB answer inflated to 400 MB); here a deflated answer is
    inflated up to MAX_XML_BYTES, and an answer whose bytes inflate anyway is refused."""
    if not saml_response or len(saml_response) > MAX_RESPONSE_CHARS:
        raise SignOnError(N_("the IdP's answer holds no SAMLResponse"))
    try:
        raw = base64.b64decode(saml_response, validate=False)
    except (binascii.Error, ValueError):
        raise SignOnError(N_("the IdP's SAMLResponse is not base64")) from None
    inflated = _inflated(raw)
    xml = raw if inflated is None else inflated
    if _inflated(xml) is not None:  # pysaml2 would inflate it again
        raise SignOnError(N_("the IdP's SAMLResponse is no XML"))
    weak = weak_algorithm(xml)
    if weak:
        raise SignOnError(
            N_("the IdP signed its answer with %(algorithm)s, which is too weak: have it sign with SHA-256"), algorithm=weak
        )
    return base64.b64encode(xml).decode()


def weak_algorithm(xml: bytes) -> str:
    """The first weak signature or digest algorithm (WEAK_ALGORITHMS) an answer's signatures name, or
    "". Read with defusedxml (no DTD, no entity); an answer that is no XML is refused here. An
    encrypted assertion's own signature is out of sight until pysaml2 decrypts it: the IdP's
    configuration decides that one (docs/web-application.md)."""
    try:
        root = defused_tree.fromstring(xml, forbid_dtd=True)
    except (defused_tree.ParseError, DefusedXmlException, ValueError):
        raise SignOnError(N_("the IdP's SAMLResponse is no XML")) from None
    for element in root.iter():
        if isinstance(element.tag, str) and element.tag.endswith(("}SignatureMethod", "}DigestMethod")):
            algorithm = (element.get("Algorithm") or "").strip()
            if algorithm in WEAK_ALGORITHMS:
                return algorithm
    return ""


def _inflated(data: bytes) -> bytes | None:
    """``data`` inflated (raw deflate), at most MAX_XML_BYTES; None when it is no deflate stream."""
    inflater = zlib.decompressobj(-15)
    try:
        out = inflater.decompress(data, MAX_XML_BYTES + 1)
    except zlib.error:
        return None
    if len(out) > MAX_XML_BYTES or inflater.unconsumed_tail:
        raise SignOnError(N_("the IdP's SAMLResponse inflates to more than an answer may be"))
    return out if inflater.eof else None


class SamlClient:
    """The service provider of one IdP, for one assertion consumer service URL."""

    def __init__(self, config: SamlConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.pending: PendingSignIns[SamlPending] = PendingSignIns(clock)
        self._clients: dict[tuple[str, str], Saml2Client] = {}
        self._metadata: str | None = None
        self._failed_until = 0.0

    def metadata(self) -> str:
        """The IdP's metadata XML (read once, bounded)."""
        if self._metadata is None:
            if time.monotonic() < self._failed_until:  # a failure is remembered a while: no fetch per request
                raise SignOnError(N_("the IdP's metadata cannot be read now"))
            source = self.config.idp_metadata
            if source.lower().startswith(("http://", "https://")):
                try:
                    with requests.get(source, timeout=TIMEOUT, allow_redirects=False, stream=True) as answer:
                        answer.raise_for_status()
                        data = answer.raw.read(MAX_METADATA_BYTES + 1, decode_content=True)
                except Exception as exc:  # noqa: BLE001 - requests' and urllib3's own (a read timeout, bad gzip)
                    self._failed_until = time.monotonic() + RETRY_SECONDS
                    raise SignOnError(N_("the IdP's metadata cannot be read: %(error)s"), error=type(exc).__name__) from None
            else:
                try:
                    data = Path(source).read_bytes()[: MAX_METADATA_BYTES + 1]
                except OSError as exc:
                    raise SignOnError(
                        N_("the IdP's metadata cannot be read: %(error)s"), error=str(exc.strerror or exc)
                    ) from None
            if len(data) > MAX_METADATA_BYTES:
                raise SignOnError(N_("the IdP's metadata is larger than a metadata file may be"))
            self._metadata = data.decode("utf-8", "replace")
        return self._metadata

    def client(self, entity_id: str, acs_url: str) -> Saml2Client:
        """pysaml2's client for this service provider (its entity id and ACS URL)."""
        from saml2 import BINDING_HTTP_POST
        from saml2.client import Saml2Client
        from saml2.config import SPConfig

        key = (entity_id, acs_url)
        if key not in self._clients:
            xmlsec = shutil.which("xmlsec1")
            if xmlsec is None:
                raise SignOnError(N_("xmlsec1 is missing (Debian's xmlsec1): SAML answers cannot be checked"))
            settings: dict[str, Any] = {
                "entityid": entity_id,
                "service": {
                    "sp": {
                        "endpoints": {"assertion_consumer_service": [(acs_url, BINDING_HTTP_POST)]},
                        "allow_unsolicited": False,
                        "authn_requests_signed": False,
                        "want_assertions_signed": True,
                        "want_response_signed": False,
                        "want_assertions_or_response_signed": True,
                    }
                },
                "metadata": {"inline": [self.metadata()]},
                "xmlsec_binary": xmlsec,
                "allow_unknown_attributes": True,
                "accepted_time_diff": CLOCK_SKEW,
            }
            config = SPConfig()
            try:
                config.load(settings)
                self._clients[key] = Saml2Client(config=config)
            except Exception as exc:  # noqa: BLE001 - pysaml2 raises many kinds on bad metadata
                raise SignOnError(N_("the IdP's metadata cannot be used: %(error)s"), error=type(exc).__name__) from None
        return self._clients[key]

    def start(self, purpose: str, entity_id: str, acs_url: str, back: str = "", owner: str = "") -> tuple[str, str]:
        """A new sign-in: (its key, for SAML_COOKIE and the RelayState; the IdP's URL to go to)."""
        from saml2 import BINDING_HTTP_REDIRECT

        client = self.client(entity_id, acs_url)
        key = new_key()
        try:
            request_id, info = client.prepare_for_authenticate(relay_state=key, binding=BINDING_HTTP_REDIRECT)
        except Exception as exc:  # noqa: BLE001 - pysaml2's kinds
            raise SignOnError(N_("no request could be made to the IdP: %(error)s"), error=type(exc).__name__) from None
        self.pending.add(SamlPending(str(request_id), purpose, back, entity_id, acs_url), key, owner)
        return key, dict(info["headers"])["Location"]

    def sp_metadata(self, entity_id: str, acs_url: str) -> str:
        """This service provider's metadata XML (its entity id, its ACS), for the IdP."""
        from saml2.metadata import entity_descriptor

        return str(entity_descriptor(self.client(entity_id, acs_url).config))

    def finish(self, key: str | None, relay_state: str, saml_response: str, entity_id: str, acs_url: str) -> SignedOn:
        """The IdP's answer to the pending sign-in ``key`` (the browser's cookie, which the
        RelayState must name too), checked by pysaml2."""
        if not key or not random_tokens.compare_digest(relay_state.encode(), key.encode()):
            # not taken: a page of another site posting a wrong RelayState cancels no sign-in
            raise SignOnError(N_("the IdP's answer is not to a sign-in of this browser"))
        pending = self.pending.take(key)
        if (pending.entity_id, pending.acs_url) != (entity_id, acs_url):
            raise SignOnError(N_("the IdP's answer came to another service provider than the request"))
        from saml2 import BINDING_HTTP_POST

        client = self.client(entity_id, acs_url)
        try:
            response = client.parse_authn_request_response(
                plain_response(saml_response), BINDING_HTTP_POST, outstanding={pending.request_id: "/"}
            )
        except SignOnError:
            raise
        except Exception as exc:  # noqa: BLE001 - pysaml2 raises a kind for each way an answer is wrong
            raise SignOnError(N_("the IdP's answer cannot be believed: %(error)s"), error=type(exc).__name__) from None
        if response is None:
            raise SignOnError(N_("the IdP's answer cannot be believed"))
        idps = list(client.metadata.identity_providers())
        issuers = {
            response.issuer(),
            *(assertion.issuer.text for assertion in response.assertions if assertion.issuer is not None),
        }
        if len(idps) != 1 or issuers != {idps[0]}:  # signed by the IdP of the metadata, as itself
            raise SignOnError(N_("the IdP's answer is issued by another entity than the IdP"))
        identity = response.get_identity() or {}
        users = identity.get(self.config.user_attribute) or []
        user = check_user(users[0] if isinstance(users, list) and len(users) == 1 else None, self.config.user_attribute)
        groups, partial = group_names(identity.get(self.config.groups_attribute))
        return SignedOn(user, groups, pending.purpose, pending.back, partial)
