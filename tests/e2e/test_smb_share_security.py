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
    # Samba makes up this descriptor for a share that sharesec never set; once one was set and
    # deleted, it answers a NULL pointer (None): the same "Everyone: full control" (MS-SRVS)
    descriptor = read_as_admin(domain, "docs", connections)
    assert descriptor is None or dacl(descriptor) == [(ALLOWED, FULL_CONTROL, EVERYONE)]


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


def test_a_normal_user_is_not_refused(domain, connections):
    domain.set_share_acl("docs", "D:(D;;0x1f01ff;;;BG)(A;;0x1200a9;;;AU)")
    try:
        descriptor = share_security_descriptor(
            domain.address,
            "docs",
            username=f"{domain.domain}\\alice",
            password=domain.passwords["alice"],
            connection_cache=connections,
        )
        # not refused; but Samba 4.17 answers a user who does not administer it now with the
        # descriptor, now without one (a NULL pointer, as for a share without permissions): a
        # crawl cannot tell, and takes no descriptor as unreadable (agents/smb.py)
        assert descriptor is None or dacl(descriptor) == [
            (DENIED, FULL_CONTROL, "S-1-5-32-546"),
            (ALLOWED, 0x1200A9, "S-1-5-11"),
        ]
    finally:
        domain.reset_share_acl("docs")
