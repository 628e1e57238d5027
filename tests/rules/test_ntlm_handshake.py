"""searchcrawl.rules.ntlm_handshake: the scheme a 401 offers, its token, and whole handshakes against
pyspnego's own acceptor (a credential file, NTLM_USER_FILE, as a domain controller would hold)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import spnego
import spnego.exceptions

from searchcrawl.rules.credentials import SiteAuth
from searchcrawl.rules.ntlm_handshake import MAX_TOKEN_CHARS, NtlmError, NtlmHandshake, offered_scheme, server_token
from tests.ntlm_site import PASSWORD


@pytest.fixture
def user_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "users"
    path.write_text(f"CORP:crawler:{PASSWORD}\n")
    monkeypatch.setenv("NTLM_USER_FILE", str(path))
    return path


def test_the_scheme_offered_ntlm_first() -> None:
    assert offered_scheme(["Negotiate", "NTLM"]) == "NTLM"  # IIS offers both: plain NTLM is answered
    assert offered_scheme(["negotiate abc="]) == "Negotiate"
    assert offered_scheme(['Basic realm="x"', 'Digest realm="x", nonce="n"']) is None
    assert offered_scheme([]) is None


def test_the_servers_token() -> None:
    assert server_token(["NTLM"], "NTLM") is None  # bare: a refusal or a new handshake
    assert server_token(["Negotiate", "NTLM " + base64.b64encode(b"TlTM").decode()], "NTLM") == b"TlTM"
    with pytest.raises(NtlmError, match="base64"):
        server_token(["NTLM not*base64"], "NTLM")
    with pytest.raises(NtlmError, match="not read"):
        server_token(["NTLM " + "A" * (MAX_TOKEN_CHARS + 4)], "NTLM")


@pytest.mark.parametrize("scheme", ["NTLM", "Negotiate"])
def test_a_handshake_is_accepted_by_pyspnegos_acceptor(user_file: Path, scheme: str) -> None:
    server = spnego.server(protocol=scheme.lower())
    client = NtlmHandshake(scheme, "CORP\\crawler", PASSWORD, "intranet.test")
    negotiate = client.negotiate()
    assert negotiate.startswith(f"{scheme} ")
    challenge = server.step(base64.b64decode(negotiate.split(" ", 1)[1]))
    assert challenge is not None
    answer = client.authenticate([f"{scheme} {base64.b64encode(challenge).decode()}", 'Basic realm="x"'])
    assert answer is not None and answer.startswith(f"{scheme} ")
    server.step(base64.b64decode(answer.split(" ", 1)[1]))
    assert server.complete and server.client_principal == "CORP\\crawler"
    # the messages hold the user name, never the password
    for message in (negotiate, answer):
        assert PASSWORD.encode() not in base64.b64decode(message.split(" ", 1)[1])
        assert PASSWORD.encode("utf-16-le") not in base64.b64decode(message.split(" ", 1)[1])
    assert PASSWORD not in repr(client)


def test_a_wrong_password_is_refused_by_the_acceptor(user_file: Path) -> None:
    server = spnego.server(protocol="ntlm")
    client = NtlmHandshake("NTLM", "CORP\\crawler", "an-old-password", "intranet.test")
    challenge = server.step(base64.b64decode(client.negotiate()[5:]))
    answer = client.authenticate([f"NTLM {base64.b64encode(challenge or b'').decode()}"])
    assert answer is not None
    with pytest.raises(spnego.exceptions.SpnegoError):
        server.step(base64.b64decode(answer[5:]))


def test_no_challenge_no_answer_and_a_garbled_one_is_an_error() -> None:
    client = NtlmHandshake("NTLM", "CORP\\crawler", PASSWORD, "intranet.test")
    client.negotiate()
    assert client.authenticate(["NTLM"]) is None
    with pytest.raises(NtlmError) as error:
        client.authenticate(["NTLM " + base64.b64encode(b"NTLMSSP\x00\x02garbage").decode()])
    assert PASSWORD not in str(error.value)


def test_an_ntlm_table_needs_a_user() -> None:
    rule = SiteAuth(origins=["https://sharepoint.corp"], type="ntlm", user="CORP\\crawler", secret="SP_PASSWORD")
    assert rule.origins == ["https://sharepoint.corp:443"]
    with pytest.raises(ValueError, match="needs 'user'"):
        SiteAuth(origins=["https://sharepoint.corp"], type="ntlm", secret="SP_PASSWORD")
