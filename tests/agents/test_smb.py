"""The smb source type's logic alone (searchcrawl/agents/smb.py): roots, options, keys and URLs,
what the listing skips, and the guard on the servers a crawl may reach. The crawls against a
real Samba domain are in tests/e2e/test_smb_crawls.py."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

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


def test_a_share_answered_without_a_descriptor_is_unreadable_never_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """Samba answers srvsvc without a descriptor to an account that does not administer it, as
    for a share without permissions: the two cannot be told apart, so the files are not indexed."""
    from searchcrawl.agents import smb

    monkeypatch.setenv("SMB_PASSWORD", "pw-smb-unit-Zx81")
    monkeypatch.setattr(smb, "share_security_descriptor", lambda *args, **kwargs: None)
    agent = SmbAgent("shares", options())
    found = agent._share_access(agent.roots[0])
    assert isinstance(found, str) and "no descriptor" in found
    assert SmbAgent("shares", options(share_permissions="ignore"))._share_access(agent.roots[0]) is None
