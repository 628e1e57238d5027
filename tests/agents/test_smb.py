"""The smb source type's logic alone (searchcrawl/agents/smb.py): roots, options, keys and URLs,
what the listing skips, and the guard on the servers a crawl may reach. The crawls against a
real Samba domain are in tests/e2e/test_smb_crawls.py."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from searchcrawl.agents.base import AgentError
from searchcrawl.agents.smb import (
    DFS_TAG,
    DIRECTORY,
    HIDDEN,
    REPARSE_POINT,
    SYSTEM,
    ServerNotAdmitted,
    SmbAgent,
    SmbOptions,
    parse_root,
)
from searchcrawl.agents.smb_share_security import ShareSecurityUnreadable

CREDENTIALS = {"username": "EXAMPLE\\crawler", "password_secret": "SMB_PASSWORD"}


def options(**changes: object) -> SmbOptions:
    return SmbOptions.model_validate({"roots": ["smb://FS1.example.org/Docs/Policies"], **CREDENTIALS, **changes})


@pytest.mark.parametrize(
    ("url", "server", "share", "folder"),
    [
        ("smb://FS1.example.org/Docs", "fs1.example.org", "Docs", ""),
        ("smb://fs1/docs/a/b%20c/", "fs1", "docs", "a/b c"),
        ("smb://10.0.0.5/d$", "10.0.0.5", "d$", ""),
    ],
)
def test_roots_name_a_server_a_share_and_a_folder(url: str, server: str, share: str, folder: str) -> None:
    root = parse_root(url)
    assert (root.server, root.share, root.folder) == (server, share, folder)


@pytest.mark.parametrize(
    "url",
    [
        "smb://fs1",
        "smb://fs1/",
        "smb://user:pw@fs1/docs",
        "smb://fs1/docs?x=1",
        "smb://fs1/docs/../etc",
        "smb://fs1/docs/a%2Fb",
        "smb://fs1/docs/a%5Cb",
        "smb://fs1/do<cs",
        "file:///srv/docs",
        "\\\\fs1\\docs",
        "smb://-fs1/docs",
        "smb://fs1/docs/a%00b",
    ],
)
def test_what_is_not_a_root_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="expected smb://server/share"):
        parse_root(url)


def test_options_need_credentials_and_disjoint_roots() -> None:
    with pytest.raises(ValidationError, match="NTLM needs"):
        SmbOptions.model_validate({"roots": ["smb://fs1/docs"]})
    assert SmbOptions.model_validate({"roots": ["smb://fs1/docs"], "auth": "kerberos"}).auth == "kerberos"
    with pytest.raises(ValidationError, match="inside root"):
        options(roots=["smb://fs1/docs", "smb://FS1/Docs/policies"])
    with pytest.raises(ValidationError, match="NAME of an environment variable"):
        options(password_secret="hunter2 is my password")
    with pytest.raises(ValidationError, match="unknown key|Extra inputs|not a key"):
        options(password="hunter2")


def test_keys_urls_and_display_urls() -> None:
    agent = SmbAgent("shares", options())
    key = "fs1.example.org/Docs/Policies/Travel 2026/rules #1.pdf"
    url = agent.url_for(key)
    assert url == "smb://fs1.example.org/Docs/Policies/Travel%202026/rules%20%231.pdf"
    assert agent.key_of(url) == key
    assert agent.key_of("smb://fs1.example.org/Docs/Other/x.pdf") is None  # not under a root
    assert agent.key_of("smb://fs1.example.org/Docs/Policies/../../x.pdf") is None
    assert agent.key_of("file://fs1.example.org/Docs/Policies/x.pdf") is None
    assert agent.display_url(key) == "file://fs1.example.org/Docs/Policies/Travel%202026/rules%20%231.pdf"
    assert agent.unc(key) == "\\\\fs1.example.org\\Docs\\Policies\\Travel 2026\\rules #1.pdf"
    assert SmbAgent("shares", options(display="smb")).display_url(key) == url


def test_the_listing_skips_links_hidden_files_and_impossible_names() -> None:
    agent = SmbAgent("shares", options())
    assert agent._skipped("a.pdf", 0x20, 0) is None
    assert agent._skipped("folder", DIRECTORY, 0) is None
    assert "reparse point" in (agent._skipped("link", REPARSE_POINT, 0xA000000C) or "")
    assert "reparse point" in (agent._skipped("junction", DIRECTORY | REPARSE_POINT, 0xA0000003) or "")
    assert agent._skipped("dfs-link", DIRECTORY | REPARSE_POINT, DFS_TAG) is None  # a referral: followed
    assert "hidden" in (agent._skipped("desktop.ini", HIDDEN | SYSTEM, 0) or "")
    assert SmbAgent("shares", options(hidden=True))._skipped("desktop.ini", HIDDEN | SYSTEM, 0) is None
    for name in ("..", "a/b", "a\\b", "a\x00b", "a\x1bb"):
        assert agent._skipped(name, 0, 0) == "a name no Windows file has"


def test_rules_are_those_of_a_files_source() -> None:
    agent = SmbAgent("shares", options(exclude=["archive/**"], include=["*.pdf"]))
    assert agent.refusal("fs1.example.org/Docs/Policies/archive/old.pdf") == "folder 'archive' excluded by 'archive/**'"
    assert agent.refusal("fs1.example.org/Docs/Policies/a.txt") == "matches no include pattern"
    assert agent.refusal("fs1.example.org/Docs/Policies/a.pdf") is None
    assert agent.refusal("fs1.example.org/Elsewhere/a.pdf") == "not below a root"


def test_only_the_sources_servers_are_connected_to() -> None:
    """smbclient asks its connection cache before it connects anywhere (a DFS referral names any
    server): the cache refuses a server the source does not admit, before a socket is opened."""
    agent = SmbAgent("shares", options(servers=["FS2.example.org"]))
    assert agent.connections.get("fs1.example.org:445") is None
    assert agent.connections.get("fs2.example.org:445") is None
    with pytest.raises(ServerNotAdmitted, match="evil.example.net"):
        agent.connections.get("evil.example.net:445")
    with pytest.raises(ServerNotAdmitted):
        agent.connections.get("127.0.0.1:445")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (None, "answered without a descriptor"),  # Samba, to an account it does not map to root
        (ShareSecurityUnreadable("access denied (ERROR_ACCESS_DENIED)", status=5), "access denied"),  # Windows
        (ShareSecurityUnreadable("the srvsvc pipe could not be opened", status=0xC0000034), "srvsvc pipe"),  # none
        (ShareSecurityUnreadable("fault 0x1c010003 (unknown interface)", status=0x1C010003), "unknown interface"),
    ],
)
def test_a_share_whose_permissions_cannot_be_read_fails_the_crawl_saying_what_to_set(
    monkeypatch: pytest.MonkeyPatch, answer: ShareSecurityUnreadable | None, reason: str
) -> None:
    """Issue 72 point 13: a share answered without a descriptor is never "everyone", and its files
    were 927 (they left the index, to come back when Samba answered with one: the index followed
    the server's history); a refused call or a server without srvsvc failed the crawl without
    naming the way out. Each now fails the crawl (nothing is removed), naming the share, the
    reason, the account it takes and share_permissions = "ignore" with what it means; never the
    password. With "ignore", the server is not asked."""
    from searchcrawl.agents import smb

    def asked(*args: object, **kwargs: object) -> bytes | None:
        assert kwargs["password"] == "pw-smb-unit-Zx81"
        if isinstance(answer, Exception):
            raise ShareSecurityUnreadable(f"{answer} (password pw-smb-unit-Zx81)", status=answer.status)
        return answer

    monkeypatch.setenv("SMB_PASSWORD", "pw-smb-unit-Zx81")
    monkeypatch.setattr(smb, "share_security_descriptor", asked)
    agent = SmbAgent("shares", options())
    with pytest.raises(AgentError) as failed:
        agent._share_access(agent.roots[0])
    message = str(failed.value)
    assert message.startswith("the permissions of share \\\\fs1.example.org\\Docs cannot be read: ShareSecurityUnreadable: ")
    assert reason in message and "on Samba the domain's Administrator" in message
    assert 'set share_permissions = "ignore"' in message and "NTFS permissions alone decide" in message
    assert "pw-smb-unit-Zx81" not in message
    monkeypatch.setattr(smb, "share_security_descriptor", None)  # not called at all
    assert SmbAgent("shares", options(share_permissions="ignore"))._share_access(agent.roots[0]) is None
