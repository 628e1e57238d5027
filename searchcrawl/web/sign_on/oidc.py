"""Single sign-on with OpenID Connect (issue 79), without HTTP routing (what the protocols share:
sign_on/providers.py): the authorization code flow
with PKCE, for searchers and administrators alike (views/sign_on_views.py routes it).

The provider is found by its issuer's discovery document (``/.well-known/openid-configuration``,
read once and kept); a sign-in is a pending login kept here, on the server (its ``state``,
``nonce`` and PKCE verifier never leave it but as the protocol says), bound to the browser that
started it by a cookie of its own (``OIDC_COOKIE``), bounded in number and in time. The provider's
answer is taken only for that browser's pending login, its code exchanged (authlib's OAuth2
client, the client's secret from the secrets mechanism: SEARCHCRAWL_OIDC_CLIENT_SECRET or _FILE),
and its ID token checked before anything of it is believed (joserfc: the signature by the
provider's published keys, the issuer, this client as its audience, the nonce, its time). The
user is the token's ``user_claim`` (read from the userinfo endpoint, of the token's subject, when
the token lacks it, or lacks ``groups_claim`` where the principals come from it: providers that
follow the standard put them there alone; an https endpoint or the issuer's origin only; groups
needed but not read make the principals partial); their principals are the directory's (SEARCHCRAWL_LDAP_*), or,
without a directory or with ``principals = "token"``, ``user:NAME`` and a ``group:`` for each value
of the token's ``groups_claim``: the same principals as every other sign-in.
"""

from __future__ import annotations

import json
import logging
import re
import secrets as random_tokens
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import requests
from authlib.integrations.requests_client import OAuth2Session
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from searchcrawl.rules.credentials import origin_of  # scheme://host:port, the port always written
from searchcrawl.system.translations import N_
from searchcrawl.web.sign_on.providers import PendingSignIns, SignedOn, SignOnError, check_user, group_names

logger = logging.getLogger(__name__)

OIDC_COOKIE = "searchcrawl_oidc"  # the pending login's id, SameSite=Lax: sent back by the provider's redirect
TIMEOUT = 10.0  # seconds per request to the provider
MAX_DOCUMENT_BYTES = 1024 * 1024  # of its discovery document, its keys
KEYS_SECONDS = 3600  # its keys are kept this long (read again at once for a key not among them)
ERROR_CODE = re.compile(r"[a-z_]{1,60}")  # an OAuth error code, as it is logged
LEEWAY = 60  # seconds of clock difference allowed on the token's times


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
    name: str = N_("single sign-on")  # the sign-in button's words (the default in the page's language)


@dataclass(frozen=True)
class OidcPending:
    purpose: str  # "search" or "admin"
    state: str
    nonce: str
    verifier: str
    redirect_uri: str
    back: str


class OidcClient:
    """The relying party of one provider (``config``), with its pending sign-ins."""

    def __init__(self, config: OidcConfig, clock: Callable[[], float] = time.monotonic, groups_needed: bool = True) -> None:
        """``groups_needed``: whether the principals come from the token's groups (``principals``
        "token", or "auto" without a directory), so that a token without them asks the userinfo endpoint."""
        self.config = config
        self.groups_needed = groups_needed
        self._discovery: dict[str, Any] | None = None
        self._keys: tuple[float, KeySet] | None = None
        self.pending: PendingSignIns[OidcPending] = PendingSignIns(clock)

    def discovery(self) -> dict[str, Any]:
        """The provider's discovery document (read once; its issuer must be the configured one)."""
        if self._discovery is None:
            url = self.config.issuer.rstrip("/") + "/.well-known/openid-configuration"
            document = self._get_json(url)
            if document.get("issuer") != self.config.issuer.rstrip("/") and document.get("issuer") != self.config.issuer:
                raise SignOnError(N_("the provider's discovery document names another issuer"))
            for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                if not isinstance(document.get(key), str):
                    raise SignOnError(N_("the provider's discovery document has no %(key)s"), key=key)
            self._discovery = document
        return self._discovery

    def _get_json(self, url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
        """A JSON document of the provider's, bounded (MAX_DOCUMENT_BYTES), no redirect."""
        try:
            with requests.get(url, headers=headers, timeout=TIMEOUT, allow_redirects=False, stream=True) as answer:
                answer.raise_for_status()
                data = answer.raw.read(MAX_DOCUMENT_BYTES + 1, decode_content=True)
            if len(data) > MAX_DOCUMENT_BYTES:
                raise ValueError("too large")
            document = json.loads(data)
        except (requests.RequestException, ValueError, RecursionError) as exc:
            raise SignOnError(N_("the provider does not answer as it should: %(error)s"), error=type(exc).__name__) from None
        if not isinstance(document, dict):
            raise SignOnError(N_("the provider's answer is no JSON object"))
        return document

    def _decode(self, id_token: str, fresh: bool) -> Any:
        """The token decoded with the provider's keys (kept an hour; read again when ``fresh``)."""
        if fresh or self._keys is None or time.monotonic() - self._keys[0] > KEYS_SECONDS:
            self._keys = (time.monotonic(), KeySet.import_key_set(self._get_json(self.discovery()["jwks_uri"])))  # type: ignore[arg-type]
        return jwt.decode(id_token, self._keys[1], algorithms=["RS256", "PS256", "ES256", "EdDSA"])

    def start(self, purpose: str, redirect_uri: str, back: str = "", owner: str = "") -> tuple[str, str]:
        """A new sign-in: (the pending login's id, for OIDC_COOKIE; the provider's URL to go to)."""
        endpoint = self.discovery()["authorization_endpoint"]
        pending = OidcPending(
            purpose,
            random_tokens.token_urlsafe(32),
            random_tokens.token_urlsafe(32),
            random_tokens.token_urlsafe(48),
            redirect_uri,
            back,
        )
        session = OAuth2Session(
            self.config.client_id, scope=self.config.scopes, redirect_uri=redirect_uri, code_challenge_method="S256"
        )
        url, _state = session.create_authorization_url(
            endpoint, state=pending.state, nonce=pending.nonce, code_verifier=pending.verifier
        )
        return self.pending.add(pending, owner=owner), url

    def finish(self, key: str | None, params: dict[str, str]) -> SignedOn:
        """The provider's answer (``params``: the callback's query) to the pending login ``key``
        (the browser's cookie): its code exchanged and its ID token checked. Each pending login
        is taken once, whatever the answer."""
        pending = self.pending.take(key)
        if not random_tokens.compare_digest(params.get("state", "").encode(), pending.state.encode()):
            raise SignOnError(N_("the provider's answer is not to this sign-in (its state differs)"))
        if "error" in params:
            error = params.get("error", "")
            if ERROR_CODE.fullmatch(error):
                raise SignOnError(N_("the provider refused: %(error)s"), error=error)
            raise SignOnError(N_("the provider refused: an error"))
        code = params.get("code", "")
        if not code or len(code) > 4096:
            raise SignOnError(N_("the provider's answer has no code"))
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
            raise SignOnError(N_("the code was not exchanged: %(error)s"), error=type(exc).__name__) from None
        claims, unread = self.completed_claims(self.id_token_claims(str(token.get("id_token") or ""), pending.nonce), token)
        user = check_user(claims.get(self.config.user_claim), self.config.user_claim)
        groups, partial = group_names(claims.get(self.config.groups_claim))
        return SignedOn(user, groups, pending.purpose, pending.back, unread or partial)

    def completed_claims(self, claims: dict[str, Any], token: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
        """The checked ID token's ``claims``, with those it lacks read from the userinfo endpoint
        (a provider that follows the standard puts the profile's claims there alone:
        oidc-provider's default conformIdTokenClaims): asked only when the token lacks the user
        claim, or the groups claim while the principals come from it (``groups_needed``). What
        the signed token says wins. Without the user claim a failing endpoint refuses the
        sign-in; with it the sign-in goes on with the token's claims, and why the groups the
        principals need were not read ("" when they were): the principals are then partial,
        so a deny of a group the user may hold refuses (fail closed)."""
        has_user = self.config.user_claim in claims
        if has_user and (self.config.groups_claim in claims or not self.groups_needed):
            return claims, ""
        try:
            return {**self.userinfo_claims(str(token.get("access_token") or ""), claims["sub"]), **claims}, ""
        except SignOnError as exc:
            if not has_user:
                raise
            logger.warning("OpenID Connect: the groups the ID token lacks are not read (%s): a deny of any group refuses", exc)
            return claims, f"the provider's groups were not read: {exc}"

    def userinfo_claims(self, access_token: str, subject: str) -> dict[str, Any]:
        """The claims of the provider's userinfo endpoint (none without an endpoint: the token is
        all it says), read with the access token (SignOnError without one: they cannot be read);
        they are believed only of the ID token's subject
        (OpenID Connect Core 5.3.2: another ``sub`` is refused, never merged), and asked only of an
        https endpoint or one at the issuer's own origin: the access token goes nowhere else, and
        no one on the path of a plain http request rewrites the user's name."""
        endpoint = self.discovery().get("userinfo_endpoint")
        if not isinstance(endpoint, str) or not endpoint:
            return {}
        if not access_token:
            raise SignOnError(N_("the provider gave no access token to read its userinfo endpoint with"))
        issuer = origin_of(self.discovery()["issuer"])
        if not endpoint.lower().startswith("https://") and (issuer is None or origin_of(endpoint) != issuer):
            raise SignOnError(N_("the provider's userinfo endpoint is neither https nor at its issuer's origin"))
        claims = self._get_json(endpoint, {"Authorization": f"Bearer {access_token}", "Accept": "application/json"})
        if claims.get("sub") != subject:
            raise SignOnError(N_("the provider's userinfo is of another user than its ID token"))
        logger.debug("OpenID Connect: the claims the ID token lacks read from the userinfo endpoint")
        return claims

    def id_token_claims(self, id_token: str, nonce: str) -> dict[str, Any]:
        """The ID token's claims, once its signature (the provider's published keys), issuer,
        audience (this client), nonce and times are checked."""
        if not id_token:
            raise SignOnError(N_("the provider gave no ID token"))
        try:
            decoded = self._decode(id_token, fresh=False)
        except (JoseError, ValueError, KeyError, TypeError):  # a key rotated since it was kept: once more
            decoded = None
        try:
            decoded = decoded or self._decode(id_token, fresh=True)
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
        except (JoseError, ValueError, KeyError, TypeError) as exc:
            raise SignOnError(N_("the ID token cannot be believed: %(error)s"), error=type(exc).__name__) from None
        audience = decoded.claims.get("aud")
        if isinstance(audience, list) and len(audience) > 1 and decoded.claims.get("azp") != self.config.client_id:
            raise SignOnError(N_("the ID token is for several clients and was not issued to this one"))
        return dict(decoded.claims)
