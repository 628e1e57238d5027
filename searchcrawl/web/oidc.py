"""Single sign-on with OpenID Connect (issue 79), without HTTP routing: the authorization code flow
with PKCE, for searchers and administrators alike (signin_views.py routes it).

The provider is found by its issuer's discovery document (``/.well-known/openid-configuration``,
read once and kept); a sign-in is a pending login kept here, on the server (its ``state``,
``nonce`` and PKCE verifier never leave it but as the protocol says), bound to the browser that
started it by a cookie of its own (``OIDC_COOKIE``), bounded in number and in time. The provider's
answer is taken only for that browser's pending login, its code exchanged (authlib's OAuth2
client, the client's secret from the secrets mechanism: SEARCHCRAWL_OIDC_CLIENT_SECRET or _FILE),
and its ID token checked before anything of it is believed (joserfc: the signature by the
provider's published keys, the issuer, this client as its audience, the nonce, its time). The
user is the token's ``user_claim``; their principals are the directory's (SEARCHCRAWL_LDAP_*), or,
without a directory or with ``principals = "token"``, ``user:NAME`` and a ``group:`` for each value
of the token's ``groups_claim``: the same principals as every other sign-in.
"""

from __future__ import annotations

import logging
import secrets as random_tokens
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import requests
from authlib.integrations.requests_client import OAuth2Session
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.access.tokens import AccessError, normal_token

logger = logging.getLogger(__name__)

OIDC_COOKIE = "searchcrawl_oidc"  # the pending login's id, SameSite=Lax: sent back by the provider's redirect
PENDING_SECONDS = 600  # a sign-in the provider did not answer in this long is forgotten
MAX_PENDING = 10_000  # pending sign-ins kept at once (the oldest dropped first)
TIMEOUT = 10.0  # seconds per request to the provider
MAX_GROUPS = 500  # of one token
LEEWAY = 60  # seconds of clock difference allowed on the token's times


class SignOnError(Exception):
    """The provider's answer cannot be believed, or the provider cannot be reached: one line, never a token."""


@dataclass(frozen=True)
class OidcConfig:
    """SEARCHCRAWL_OIDC_*: the provider, this client, what the token says of the user."""

    issuer: str
    client_id: str
    client_secret: str = field(repr=False)
    scopes: str = "openid profile email"
    user_claim: str = "preferred_username"
    groups_claim: str = "groups"
    principals: str = "auto"  # "auto": the directory's when there is one; "token"; "directory"
    name: str = "single sign-on"  # the sign-in button's words


@dataclass(frozen=True)
class Pending:
    purpose: str  # "search" or "admin"
    state: str
    nonce: str
    verifier: str
    redirect_uri: str
    back: str
    created: float


@dataclass(frozen=True)
class SignedOn:
    """Who the provider signed in: the user's name and the groups its token gives."""

    user: str
    groups: tuple[str, ...]
    purpose: str
    back: str


class OidcClient:
    """The relying party of one provider (``config``), with its pending sign-ins."""

    def __init__(self, config: OidcConfig, clock: Any = time.monotonic) -> None:
        self.config = config
        self.clock = clock
        self._discovery: dict[str, Any] | None = None
        self._pending: OrderedDict[str, Pending] = OrderedDict()
        self._lock = threading.Lock()

    def discovery(self) -> dict[str, Any]:
        """The provider's discovery document (read once; its issuer must be the configured one)."""
        if self._discovery is None:
            url = self.config.issuer.rstrip("/") + "/.well-known/openid-configuration"
            document = self._get_json(url)
            if document.get("issuer") != self.config.issuer.rstrip("/") and document.get("issuer") != self.config.issuer:
                raise SignOnError("the provider's discovery document names another issuer")
            for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                if not isinstance(document.get(key), str):
                    raise SignOnError(f"the provider's discovery document has no {key}")
            self._discovery = document
        return self._discovery

    def _get_json(self, url: str) -> dict[str, Any]:
        try:
            answer = requests.get(url, timeout=TIMEOUT, allow_redirects=False)
            answer.raise_for_status()
            document = answer.json()
        except (requests.RequestException, ValueError) as exc:
            raise SignOnError(f"the provider does not answer as it should: {type(exc).__name__}") from None
        if not isinstance(document, dict):
            raise SignOnError("the provider's answer is no JSON object")
        return document

    def start(self, purpose: str, redirect_uri: str, back: str = "") -> tuple[str, str]:
        """A new sign-in: (the pending login's id, for OIDC_COOKIE; the provider's URL to go to)."""
        endpoint = self.discovery()["authorization_endpoint"]
        pending = Pending(
            purpose,
            random_tokens.token_urlsafe(32),
            random_tokens.token_urlsafe(32),
            random_tokens.token_urlsafe(48),
            redirect_uri,
            back,
            self.clock(),
        )
        session = OAuth2Session(
            self.config.client_id, scope=self.config.scopes, redirect_uri=redirect_uri, code_challenge_method="S256"
        )
        url, _state = session.create_authorization_url(
            endpoint, state=pending.state, nonce=pending.nonce, code_verifier=pending.verifier
        )
        key = random_tokens.token_urlsafe(32)
        with self._lock:
            self._forget_old()
            self._pending[key] = pending
            while len(self._pending) > MAX_PENDING:
                self._pending.popitem(last=False)
        return key, url

    def _forget_old(self) -> None:
        moment = self.clock()
        for key in [key for key, pending in self._pending.items() if moment - pending.created > PENDING_SECONDS]:
            del self._pending[key]

    def finish(self, key: str | None, params: dict[str, str]) -> SignedOn:
        """The provider's answer (``params``: the callback's query) to the pending login ``key``
        (the browser's cookie): its code exchanged and its ID token checked. Each pending login
        is taken once, whatever the answer."""
        with self._lock:
            self._forget_old()
            pending = self._pending.pop(key or "", None)
        if pending is None:
            raise SignOnError("no sign-in of this browser is waiting (it took too long, or was not started here)")
        if not random_tokens.compare_digest(params.get("state", ""), pending.state):
            raise SignOnError("the provider's answer is not to this sign-in (its state differs)")
        if "error" in params:
            raise SignOnError(f"the provider refused: {params.get('error', '')[:100]}")
        code = params.get("code", "")
        if not code or len(code) > 4096:
            raise SignOnError("the provider's answer has no code")
        document = self.discovery()
        session = OAuth2Session(
            self.config.client_id,
            self.config.client_secret,
            scope=self.config.scopes,
            redirect_uri=pending.redirect_uri,
            code_challenge_method="S256",
        )
        try:
            token = session.fetch_token(
                document["token_endpoint"], code=code, code_verifier=pending.verifier, timeout=TIMEOUT, allow_redirects=False
            )
        except Exception as exc:  # noqa: BLE001 - authlib raises its own and requests' errors
            raise SignOnError(f"the code was not exchanged: {type(exc).__name__}") from None
        claims = self.id_token_claims(str(token.get("id_token") or ""), pending.nonce)
        user = claims.get(self.config.user_claim)
        if not isinstance(user, str) or not user.strip() or len(user) > 256:
            raise SignOnError(f"the ID token has no {self.config.user_claim}")
        groups = claims.get(self.config.groups_claim) or []
        if not isinstance(groups, list):
            groups = []
        names = tuple(dict.fromkeys(str(group) for group in groups[:MAX_GROUPS] if isinstance(group, str) and group))
        return SignedOn(user.strip(), names, pending.purpose, pending.back)

    def id_token_claims(self, id_token: str, nonce: str) -> dict[str, Any]:
        """The ID token's claims, once its signature (the provider's published keys), issuer,
        audience (this client), nonce and times are checked."""
        if not id_token:
            raise SignOnError("the provider gave no ID token")
        keys = KeySet.import_key_set(self._get_json(self.discovery()["jwks_uri"]))  # type: ignore[arg-type]
        try:
            decoded = jwt.decode(id_token, keys, algorithms=["RS256", "PS256", "ES256", "EdDSA"])
            registry = jwt.JWTClaimsRegistry(
                leeway=LEEWAY,
                iss={"essential": True, "value": self.discovery()["issuer"]},
                aud={"essential": True, "value": self.config.client_id},
                sub={"essential": True},
                exp={"essential": True},
                iat={"essential": True},
                nonce={"essential": True, "value": nonce},
            )
            registry.validate(decoded.claims)
        except (JoseError, ValueError) as exc:
            raise SignOnError(f"the ID token cannot be believed: {type(exc).__name__}") from None
        audience = decoded.claims.get("aud")
        if isinstance(audience, list) and len(audience) > 1 and decoded.claims.get("azp") != self.config.client_id:
            raise SignOnError("the ID token is for several clients and was not issued to this one")
        return dict(decoded.claims)


def token_principals(user: str, groups: tuple[str, ...], source: str) -> Principals:
    """``user``'s principals from the token alone: ``user:NAME`` and a ``group:`` per group (those
    that are no token, left out)."""
    entries = [Principal(f"user:{user}", f"{source}: the signed-in user")]
    for group in groups:
        entries.append(Principal(f"group:{group}", f"{source}: a group of the ID token"))
    kept = []
    for entry in entries:
        try:
            normal_token(entry.token)
        except AccessError:
            continue
        kept.append(entry)
    return Principals.of(user, kept)
