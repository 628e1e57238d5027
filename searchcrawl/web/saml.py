"""Single sign-on with SAML 2.0 (issue 79), without HTTP routing: this application as a service
provider (pysaml2, which checks signatures with xmlsec1), for searchers and administrators alike
(signin_views.py routes it; what the protocols share: sign_on.py).

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

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.client import Saml2Client
from saml2.config import SPConfig

from searchcrawl.web.sign_on import PendingSignIns, SignedOn, SignOnError, check_user, group_names, new_key

logger = logging.getLogger(__name__)

SAML_COOKIE = "searchcrawl_saml"  # the pending sign-in's key (also the RelayState)
MAX_METADATA_BYTES = 1024 * 1024
MAX_RESPONSE_CHARS = 512 * 1024  # a SAMLResponse (base64) taken at most
TIMEOUT = 10.0
CLOCK_SKEW = 60  # seconds allowed between the IdP's clock and this one


@dataclass(frozen=True)
class SamlConfig:
    """SEARCHCRAWL_SAML_*: the IdP's metadata, this service provider, what the assertion says."""

    idp_metadata: str  # a URL (https, or a provider on this machine) or a file
    entity_id: str = ""  # "": <public URL>/login/saml/metadata
    user_attribute: str = "uid"
    groups_attribute: str = "groups"
    principals: str = "auto"  # as OidcConfig's
    name: str = "single sign-on (SAML)"


@dataclass(frozen=True)
class SamlPending:
    request_id: str
    purpose: str
    back: str


class SamlClient:
    """The service provider of one IdP, for one assertion consumer service URL."""

    def __init__(self, config: SamlConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.pending: PendingSignIns[SamlPending] = PendingSignIns(clock)
        self._clients: dict[tuple[str, str], Saml2Client] = {}
        self._metadata: str | None = None

    def metadata(self) -> str:
        """The IdP's metadata XML (read once, bounded)."""
        if self._metadata is None:
            source = self.config.idp_metadata
            if source.lower().startswith(("http://", "https://")):
                try:
                    answer = requests.get(source, timeout=TIMEOUT, allow_redirects=False, stream=True)
                    answer.raise_for_status()
                    data = answer.raw.read(MAX_METADATA_BYTES + 1, decode_content=True)
                except requests.RequestException as exc:
                    raise SignOnError(f"the IdP's metadata cannot be read: {type(exc).__name__}") from None
            else:
                try:
                    data = Path(source).read_bytes()[: MAX_METADATA_BYTES + 1]
                except OSError as exc:
                    raise SignOnError(f"the IdP's metadata cannot be read: {exc.strerror or exc}") from None
            if len(data) > MAX_METADATA_BYTES:
                raise SignOnError("the IdP's metadata is larger than a metadata file may be")
            self._metadata = data.decode("utf-8", "replace")
        return self._metadata

    def client(self, entity_id: str, acs_url: str) -> Saml2Client:
        """pysaml2's client for this service provider (its entity id and ACS URL)."""
        key = (entity_id, acs_url)
        if key not in self._clients:
            xmlsec = shutil.which("xmlsec1")
            if xmlsec is None:
                raise SignOnError("xmlsec1 is missing (Debian's xmlsec1): SAML answers cannot be checked")
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
                raise SignOnError(f"the IdP's metadata cannot be used: {type(exc).__name__}") from None
        return self._clients[key]

    def start(self, purpose: str, entity_id: str, acs_url: str, back: str = "", owner: str = "") -> tuple[str, str]:
        """A new sign-in: (its key, for SAML_COOKIE and the RelayState; the IdP's URL to go to)."""
        client = self.client(entity_id, acs_url)
        key = new_key()
        try:
            request_id, info = client.prepare_for_authenticate(relay_state=key, binding=BINDING_HTTP_REDIRECT)
        except Exception as exc:  # noqa: BLE001 - pysaml2's kinds
            raise SignOnError(f"no request could be made to the IdP: {type(exc).__name__}") from None
        self.pending.add(SamlPending(str(request_id), purpose, back), key, owner)
        return key, dict(info["headers"])["Location"]

    def sp_metadata(self, entity_id: str, acs_url: str) -> str:
        """This service provider's metadata XML (its entity id, its ACS), for the IdP."""
        from saml2.metadata import entity_descriptor

        return str(entity_descriptor(self.client(entity_id, acs_url).config))

    def finish(self, key: str | None, relay_state: str, saml_response: str, entity_id: str, acs_url: str) -> SignedOn:
        """The IdP's answer to the pending sign-in ``key`` (the browser's cookie, which the
        RelayState must name too), checked by pysaml2."""
        if not key or relay_state != key:
            self.pending.take(key)  # spent
            raise SignOnError("the IdP's answer is not to a sign-in of this browser")
        pending = self.pending.take(key)
        if not saml_response or len(saml_response) > MAX_RESPONSE_CHARS:
            raise SignOnError("the IdP's answer holds no SAMLResponse")
        client = self.client(entity_id, acs_url)
        try:
            response = client.parse_authn_request_response(
                saml_response, BINDING_HTTP_POST, outstanding={pending.request_id: "/"}
            )
        except Exception as exc:  # noqa: BLE001 - pysaml2 raises a kind for each way an answer is wrong
            raise SignOnError(f"the IdP's answer cannot be believed: {type(exc).__name__}") from None
        if response is None:
            raise SignOnError("the IdP's answer cannot be believed")
        identity = response.get_identity() or {}
        users = identity.get(self.config.user_attribute) or []
        user = check_user(users[0] if isinstance(users, list) and len(users) == 1 else None, self.config.user_attribute)
        groups, partial = group_names(identity.get(self.config.groups_attribute))
        return SignedOn(user, groups, pending.purpose, pending.back, partial)
