"""A share's security descriptor read from a real Samba AD DC (the encoding and the hostile answers:
tests/agents/test_smb_share_security.py).

The server comes from the ``samba_domain`` fixture (``address``, ``admin_password``, ``domain``,
``set_share_acl(share, acl)``, and a share ``docs``); where it is not defined, these tests skip."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import smbclient
from smbprotocol.security_descriptor import SMB2CreateSDBuffer

from searchcrawl.agents.smb_share_security import ShareSecurityUnreadable, share_security_descriptor

EVERYONE = "S-1-1-0"
FULL_CONTROL = 0x001F01FF
ALLOWED, DENIED = 0, 1


@pytest.fixture
def domain(request: pytest.FixtureRequest) -> Any:
    try:
        return request.getfixturevalue("samba_domain")
    except pytest.FixtureLookupError:
        pytest.skip("no samba_domain fixture in this branch (tests/samba_domain.py): no Samba to ask")


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
    # Samba makes up this descriptor for a share that sharesec never set (no NULL pointer)
    descriptor = read_as_admin(domain, "docs", connections)
    assert descriptor is not None
    assert dacl(descriptor) == [(ALLOWED, FULL_CONTROL, EVERYONE)]


def test_share_acl_set_is_read_back(domain, connections):
    domain.set_share_acl("docs", "D:(D;;0x1f01ff;;;BG)(A;;0x1200a9;;;AU)")  # guests denied, users read
    try:
        descriptor = read_as_admin(domain, "docs", connections)
        assert descriptor is not None
        assert dacl(descriptor) == [(DENIED, FULL_CONTROL, "S-1-5-32-546"), (ALLOWED, 0x1200A9, "S-1-5-11")]
    finally:
        # Everyone: full control, the same descriptor as Samba's default (Samba 4.17's SDDL "FA" is
        # 0x1ff only, without the standard rights: the mask is written out)
        domain.set_share_acl("docs", "D:(A;;0x1f01ff;;;WD)")


def test_unknown_share_names_the_share_never_the_password(domain, connections):
    with pytest.raises(ShareSecurityUnreadable) as caught:
        read_as_admin(domain, "no-such-share", connections)
    message = str(caught.value)
    assert "'no-such-share'" in message and "no such share" in message
    assert domain.admin_password not in message
    assert caught.value.status == 123  # ERROR_INVALID_NAME, Samba's answer


def test_normal_user_reads_it_too_on_samba(domain, connections):
    password_of = getattr(domain, "password_of", None)
    if password_of is None:
        pytest.skip("the samba_domain fixture names no normal user's password (password_of)")
    descriptor = share_security_descriptor(
        domain.address, "docs", username=f"{domain.domain}\\alice", password=password_of("alice"), connection_cache=connections
    )
    assert descriptor is not None
