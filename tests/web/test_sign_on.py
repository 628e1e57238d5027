"""What single sign-on's protocols share (issue 79: searchcrawl/web/sign_on/providers.py), without HTTP:
pending sign-ins bound to a key and taken once, bounded per client; user names and groups from a
provider checked; their principals, partial when groups were left out (fail closed). Each case of
the hostile review of the OpenID Connect sign-in is here."""

from __future__ import annotations

import pytest

from searchcrawl.access.decision import decide
from searchcrawl.access.tokens import Access, Grant
from searchcrawl.system.translations import speaking
from searchcrawl.web.sign_on.oidc import OidcClient, OidcConfig
from searchcrawl.web.sign_on.providers import (
    MAX_GROUPS,
    MAX_PER_OWNER,
    PENDING_SECONDS,
    PendingSignIns,
    SignOnError,
    Wording,
    check_user,
    group_names,
    provider_principals,
)


def test_a_pending_sign_in_is_taken_once_and_forgotten_when_old() -> None:
    now = [0.0]
    pending: PendingSignIns[str] = PendingSignIns(lambda: now[0])
    key = pending.add("first")
    assert pending.take(key) == "first"
    with pytest.raises(SignOnError, match="no sign-in of this browser is waiting"):
        pending.take(key)
    old = pending.add("old")
    now[0] = PENDING_SECONDS + 1
    with pytest.raises(SignOnError):
        pending.take(old)
    with pytest.raises(SignOnError):
        pending.take(None)


def test_one_client_cannot_push_the_others_sign_ins_out() -> None:
    """A hostile review flushed a real user's pending sign-in with 10,000 anonymous starts."""
    pending: PendingSignIns[str] = PendingSignIns()
    theirs = pending.add("a user's", owner="192.0.2.1")
    flood = [pending.add(f"flood {number}", owner="198.51.100.9") for number in range(1000)]
    assert len(pending) == 1 + MAX_PER_OWNER
    assert pending.take(theirs) == "a user's" and pending.take(flood[-1]) == "flood 999"


@pytest.mark.parametrize("name", ["alice@evil.example", "EVIL\\alice", "al\x00ice", "", "  ", None, 42, ["alice"], "a" * 300])
def test_a_user_name_the_index_would_read_as_another_is_refused(name: object) -> None:
    """alice@evil.example became user:alice, and alice's role and documents."""
    with pytest.raises(SignOnError):
        check_user(name, "preferred_username")


def test_a_plain_user_name_is_taken() -> None:
    assert check_user(" Alice ", "preferred_username") == "Alice" and check_user("j.doe", "uid") == "j.doe"


def test_groups_left_out_make_the_principals_partial_and_a_deny_refuses() -> None:
    """499 other groups, then staff, then contractors: the deny of contractors was lost."""
    many = [f"team{number}" for number in range(MAX_GROUPS - 1)] + ["staff", "contractors"]
    groups, partial = group_names(many)
    assert "staff" in groups and "contractors" not in groups and partial
    principals = provider_principals("alice", groups, "test", partial)
    access = Access.of([Grant("group:staff", "test")], [Grant("group:contractors", "test")])
    assert not decide(access, principals).granted  # partial: a deny it may lack refuses
    assert group_names("finance")[1] == "the provider's groups are not a list"
    assert group_names(None) == ((), "")
    assert group_names(["finance", "finance", "sales"]) == (("finance", "sales"), "")
    assert group_names(["ok", "bad\x00name"])[1]  # a value that is no token, left out: partial
    complete = provider_principals("alice", ("staff",), "test")
    assert decide(access, complete).granted and complete.tokens >= {"user:alice", "group:staff"}


def test_a_refusal_is_one_english_line_for_the_logs_and_a_message_for_the_page() -> None:
    """Issue 79: str() is the English line the logs keep; ``shown()`` words it in the page's language
    (the message is the catalogue's, the provider's or library's words a variable, never translated)."""
    refused = SignOnError("the code was not exchanged: %(error)s", error="HTTPError")
    assert str(refused) == "the code was not exchanged: HTTPError" == refused.shown()
    assert str(SignOnError("the provider gave no ID token")) == "the provider gave no ID token"
    kerberos = SignOnError("the provider's answer has no %(what)s", what=Wording("Kerberos principal"))
    claim = SignOnError("the provider's answer has no %(what)s", what="preferred_username")
    with speaking("de"):
        assert "Kerberos" in kerberos.shown() and "principal" not in kerberos.shown()  # our word, translated
        assert "preferred_username" in claim.shown() and claim.shown() != str(claim)  # a claim's name, as configured
    assert str(kerberos) == "the provider's answer has no Kerberos principal"


def test_userinfo_claims_are_believed_only_of_the_id_tokens_subject() -> None:
    """Issue 91: the claims an ID token lacks are read at the provider's userinfo endpoint with the
    access token (OpenID Connect Core 5.3); an answer about another subject is refused, not merged;
    without an endpoint or an access token nothing is asked."""
    client = OidcClient(OidcConfig("http://127.0.0.1:1", "client", "secret"))
    client._discovery = {"issuer": "http://127.0.0.1:1", "userinfo_endpoint": "http://127.0.0.1:1/me"}
    asked: list[tuple[str, dict[str, str] | None]] = []
    answer = {"sub": "alice-id", "preferred_username": "alice", "groups": ["finance"]}

    def get_json(url: str, headers: dict[str, str] | None = None) -> dict[str, object]:
        asked.append((url, headers))
        return dict(answer)

    client._get_json = get_json  # type: ignore[method-assign]
    assert client.userinfo_claims("token-1", "alice-id") == answer
    assert asked == [("http://127.0.0.1:1/me", {"Authorization": "Bearer token-1", "Accept": "application/json"})]
    with pytest.raises(SignOnError, match="another user"):
        client.userinfo_claims("token-1", "mallory-id")
    asked.clear()
    with pytest.raises(SignOnError, match="no access token"):  # the endpoint cannot be read: fail closed
        client.userinfo_claims("", "alice-id")
    client._discovery = {"issuer": "http://127.0.0.1:1"}
    assert client.userinfo_claims("token-1", "alice-id") == {} and asked == []


def test_userinfo_is_asked_only_over_https_or_at_the_issuers_origin() -> None:
    """Issue 91 review: the userinfo endpoint came from the discovery document unchecked; with the
    user's name read from its unsigned answer, ``userinfo_endpoint: http://...`` let anyone on
    the path rename a user, and the access token went to any host. Only an https endpoint or one
    at the issuer's own origin (the tests' provider's, http://127.0.0.1) is asked."""
    client = OidcClient(OidcConfig("http://127.0.0.1:1", "client", "secret"))
    asked: list[str] = []

    def get_json(url: str, headers: dict[str, str] | None = None) -> dict[str, object]:
        asked.append(url)
        return {"sub": "alice-id", "preferred_username": "alice"}

    client._get_json = get_json  # type: ignore[method-assign]
    for endpoint in ("http://127.0.0.1:2/me", "http://idp.example/me", "ftp://127.0.0.1:1/me", "//127.0.0.1:1/me"):
        client._discovery = {"issuer": "http://127.0.0.1:1", "userinfo_endpoint": endpoint}
        with pytest.raises(SignOnError, match="neither https nor at its issuer's origin"):
            client.userinfo_claims("token-1", "alice-id")
    assert asked == []
    for endpoint in ("https://idp.example/me", "HTTP://127.0.0.1:1/userinfo"):
        client._discovery = {"issuer": "http://127.0.0.1:1", "userinfo_endpoint": endpoint}
        assert client.userinfo_claims("token-1", "alice-id")["preferred_username"] == "alice"
    assert asked == ["https://idp.example/me", "HTTP://127.0.0.1:1/userinfo"]


UNREAD = "the provider's groups were not read: "


@pytest.mark.parametrize(
    ("claims", "groups_needed", "answer", "expected", "partial"),
    [
        # the token names the user, the principals are the directory's: nothing asked
        ({"sub": "s", "preferred_username": "alice"}, False, "fails", {"sub": "s", "preferred_username": "alice"}, ""),
        ({"sub": "s", "preferred_username": "alice", "groups": ["a"]}, True, "fails", None, ""),
        # groups the principals need, from the endpoint; the token's name wins
        (
            {"sub": "s", "preferred_username": "alice"},
            True,
            {"sub": "s", "preferred_username": "mallory", "groups": ["a"]},
            {"sub": "s", "preferred_username": "alice", "groups": ["a"]},
            "",
        ),
        # an endpoint that answers without groups: the provider gives the user none
        ({"sub": "s", "preferred_username": "alice"}, True, {"sub": "s"}, {"sub": "s", "preferred_username": "alice"}, ""),
        # an endpoint that fails, or names another sub, while the token names the user: signed in,
        # no groups, partial (a deny refuses)
        ({"sub": "s", "preferred_username": "alice"}, True, "fails", {"sub": "s", "preferred_username": "alice"}, UNREAD),
        ({"sub": "s", "preferred_username": "alice"}, True, "another", {"sub": "s", "preferred_username": "alice"}, UNREAD),
        # no user claim: the endpoint must say it
        ({"sub": "s"}, False, {"sub": "s", "preferred_username": "alice"}, {"sub": "s", "preferred_username": "alice"}, ""),
        ({"sub": "s"}, False, "fails", SignOnError, ""),
    ],
)
def test_userinfo_is_asked_only_for_what_the_sign_in_needs(
    claims: dict[str, object], groups_needed: bool, answer: object, expected: object, partial: str
) -> None:
    """Issue 91 review: the endpoint was asked whenever the groups claim was missing, also when
    the principals come from the directory, and a failing endpoint refused sign-ins that worked
    before. It is asked when the token lacks the user claim, or the groups the principals need;
    its failure refuses only a sign-in that has no user without it, and otherwise says why the
    groups are missing."""
    client = OidcClient(OidcConfig("https://idp.example", "client", "secret"), groups_needed=groups_needed)
    client._discovery = {"issuer": "https://idp.example", "userinfo_endpoint": "https://idp.example/me"}
    asked: list[str] = []

    def get_json(url: str, headers: dict[str, str] | None = None) -> dict[str, object]:
        asked.append(url)
        if answer == "fails":
            raise SignOnError("the provider does not answer as it should: %(error)s", error="ConnectionError")
        return {"sub": "other"} if answer == "another" else dict(answer)  # type: ignore[call-overload]

    client._get_json = get_json  # type: ignore[method-assign]
    if expected is SignOnError:
        with pytest.raises(SignOnError):
            client.completed_claims(dict(claims), {"access_token": "token-1"})
        return
    completed, unread = client.completed_claims(dict(claims), {"access_token": "token-1"})
    assert completed == (expected or claims)
    assert unread.startswith(partial) and bool(unread) == bool(partial)
    assert bool(asked) == (not ("groups" in claims or not groups_needed) or "preferred_username" not in claims)


@pytest.mark.parametrize(
    ("discovery", "access_token"),
    [
        ({"userinfo_endpoint": "https://idp.example/me"}, "token-1"),  # the endpoint fails
        ({"userinfo_endpoint": "http://127.0.0.1:2/me"}, "token-1"),  # refused: http at another host
        ({"userinfo_endpoint": "https://idp.example/me"}, ""),  # no access token to ask with
    ],
)
def test_a_contractor_whose_groups_were_not_read_is_refused_a_document_contractors_are_denied(
    monkeypatch: pytest.MonkeyPatch, discovery: dict[str, str], access_token: str
) -> None:
    """Issue 91 final review: with the user claim in the ID token, the groups the principals need
    in the userinfo endpoint alone, and that endpoint failing, refused or not asked, the user was
    signed in with no groups and complete principals: a document allowed to everyone signed in
    but denying group:contractors (here: carol's) was shown to a contractor. The sign-in is now partial, so the
    deny refuses (fail closed), as a group walk cut at its bounds does."""
    client = OidcClient(OidcConfig("https://idp.example", "client", "secret"))
    client._discovery = {
        "issuer": "https://idp.example",
        "authorization_endpoint": "https://idp.example/auth",
        "token_endpoint": "https://idp.example/token",
        "jwks_uri": "https://idp.example/jwks",
        **discovery,
    }

    def get_json(url: str, headers: dict[str, str] | None = None) -> dict[str, object]:
        raise SignOnError("the provider does not answer as it should: %(error)s", error="ConnectionError")

    client._get_json = get_json  # type: ignore[method-assign]
    client.id_token_claims = lambda id_token, nonce: {"sub": "carol-id", "preferred_username": "carol"}  # type: ignore[method-assign]
    monkeypatch.setattr(
        "searchcrawl.web.sign_on.oidc.OAuth2Session.fetch_token",
        lambda *args, **kwargs: {"id_token": "checked", "access_token": access_token},
    )
    key, _url = client.start("search", "https://search.example/login/oidc/callback")
    state = client.pending._pending[key][1].state
    signed = client.finish(key, {"state": state, "code": "code-1"})
    assert (signed.user, signed.groups) == ("carol", ()) and signed.partial.startswith(UNREAD)
    principals = provider_principals(signed.user, signed.groups, "test", signed.partial)
    access = Access.of([Grant("user:carol", "test")], [Grant("group:contractors", "test")])
    assert not decide(access, principals).granted
    assert decide(access, provider_principals("carol", (), "test")).granted  # the groups read, none: shown
