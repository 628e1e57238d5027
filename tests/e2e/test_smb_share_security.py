"""A share's security descriptor read from a real Samba AD DC (the encoding and the hostile answers:
tests/agents/test_smb_share_security.py).

The server is the ``samba_domain`` fixture's (tests/samba_domain.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import smbclient
from smbprotocol.security_descriptor import SMB2CreateSDBuffer

from searchcrawl.agents.smb_share_security import ShareSecurityUnreadable, share_security_descriptor
from tests.samba_domain import SambaDomain

EVERYONE = "S-1-1-0"
FULL_CONTROL = 0x001F01FF
ALLOWED, DENIED = 0, 1


@pytest.fixture
def domain(samba_domain: SambaDomain) -> SambaDomain:
    return samba_domain


@pytest.fixture
def connections() -> Iterator[dict[str, Any]]:
    cache: dict[str, Any] = {}
    yield cache
    smbclient.reset_connection_cache(connection_cache=cache)


def read_as_admin(domain: Any, share: str, cache: dict[str, Any]) -> bytes | None:
    return share_security_descriptor(
        domain.address,
        share,
        username=f"{domain.domain}\\Administrator",
        password=domain.admin_password,
        connection_cache=cache,
    )


def dacl(descriptor: bytes) -> list[tuple[int, int, str]]:
    """The DACL's entries as (type, mask, SID), decoded by smbprotocol."""
    buffer = SMB2CreateSDBuffer()
    buffer.unpack(descriptor)
    return [
        (ace["ace_type"].get_value(), ace["mask"].get_value(), str(ace["sid"])) for ace in buffer.get_dacl()["aces"].get_value()
    ]


def test_share_without_acl_is_everyone_full_control(domain, connections):
    # Samba makes up this descriptor for a share whose permissions were never set (or were
    # deleted): what it enforces at tree connect; Administrator always gets it
    descriptor = read_as_admin(domain, "dfs", connections)
    assert descriptor is not None and dacl(descriptor) == [(ALLOWED, FULL_CONTROL, EVERYONE)]


def test_share_acl_set_is_read_back(domain, connections):
    domain.set_share_acl("docs", "D:(D;;0x1f01ff;;;BG)(A;;0x1200a9;;;AU)")  # guests denied, users read
    try:
        descriptor = read_as_admin(domain, "docs", connections)
        assert descriptor is not None
        assert dacl(descriptor) == [(DENIED, FULL_CONTROL, "S-1-5-32-546"), (ALLOWED, 0x1200A9, "S-1-5-11")]
    finally:
        domain.reset_share_acl("docs")


def test_unknown_share_names_the_share_never_the_password(domain, connections):
    with pytest.raises(ShareSecurityUnreadable) as caught:
        read_as_admin(domain, "no-such-share", connections)
    message = str(caught.value)
    assert "'no-such-share'" in message and "no such share" in message
    assert domain.admin_password not in message
    assert caught.value.status == 123  # ERROR_INVALID_NAME, Samba's answer


def test_samba_answers_another_account_than_administrator_by_its_workers_history(domain):
    """Measured for issue 72 point 13 (agents/smb.py, NO_DESCRIPTOR): Samba refuses level 502 to no
    one, but a fresh srvsvc worker answers every account except Administrator (mapped to root)
    without a descriptor, for every share, whether it has permissions of its own or not; once
    Administrator has asked through that worker, it answers everyone with the share's
    permissions, or with Everyone: full control for a share without. A crawl cannot tell such a
    None from a share without permissions, so it never reads one as "everyone"."""
    own = [(DENIED, FULL_CONTROL, "S-1-5-32-546"), (ALLOWED, 0x1200A9, "S-1-5-11")]  # guests denied, users read
    domain.set_share_acl("docs", "D:(D;;0x1f01ff;;;BG)(A;;0x1200a9;;;AU)")
    try:
        domain.restart_rpc_workers()
        for user in ("crawler", "alice"):
            assert domain.share_descriptor("docs", user) is None, user  # though it has permissions
            assert domain.share_descriptor("dfs", user) is None, user
        descriptor = domain.share_descriptor("docs")  # Administrator: always the share's own
        assert descriptor is not None and dacl(descriptor) == own
        for user in ("crawler", "alice"):
            descriptor = domain.share_descriptor("docs", user)
            assert descriptor is not None and dacl(descriptor) == own, user
            descriptor = domain.share_descriptor("dfs", user)
            assert descriptor is not None and dacl(descriptor) == [(ALLOWED, FULL_CONTROL, EVERYONE)], user
        domain.restart_rpc_workers()  # and over again with the next worker
        assert domain.share_descriptor("docs", "crawler") is None
    finally:
        domain.reset_share_acl("docs")


def test_a_server_without_srvsvc_refuses_to_open_the_pipe(domain):
    """Samba without its RPC helpers has no srvsvc pipe: opening it is refused (object name not
    found, or connection refused where a stale socket of the helpers is left)."""
    with domain.without_rpc_helpers():
        with pytest.raises(ShareSecurityUnreadable) as caught:
            domain.share_descriptor("docs")
    assert "the srvsvc pipe could not be opened" in str(caught.value), caught.value
    assert caught.value.status in (0xC0000034, 0xC0000236), caught.value
