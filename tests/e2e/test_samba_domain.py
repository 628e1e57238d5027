"""The Samba domain of the tests (tests/samba_domain.py) is what the SMB tests rely on: users in
nested groups as a directory reports them, and the oracle ``can_read`` deciding as ACLs say."""

from __future__ import annotations

import smbclient  # type: ignore[import-untyped]

from tests.samba_domain import SambaDomain


def sid_text(value: bytes) -> str:
    """A binary SID (as tokenGroups holds them) as text."""
    authority = int.from_bytes(value[2:8], "big")
    subs = [int.from_bytes(value[8 + 4 * index : 12 + 4 * index], "little") for index in range(value[1])]
    return f"S-{value[0]}-{authority}-" + "-".join(str(sub) for sub in subs)


def test_alice_is_in_staff_through_managers_as_her_token_groups_say(samba_domain: SambaDomain) -> None:
    with samba_domain.ldap_connection("crawler") as connection:  # LDAPS, validating the DC's certificate
        assert connection.search(
            samba_domain.user_dn("alice"), "(objectClass=*)", search_scope="BASE", attributes=["tokenGroups"]
        )
        groups = {sid_text(value) for value in connection.entries[0].tokenGroups.values}
    assert {samba_domain.sid("managers"), samba_domain.sid("staff")} <= groups
    assert samba_domain.sid("auditors") not in groups
    assert samba_domain.sid("alice").startswith(samba_domain.domain_sid + "-")


def test_can_read_decides_as_the_file_acls_say(samba_domain: SambaDomain) -> None:
    domain = samba_domain
    domain.mkdir("docs", "acl")
    domain.write("docs", "acl/staff.txt", b"staff only")
    # an allow for a group reaches alice through managers; a deny for bob wins over staff's allow
    domain.set_acl_entries("docs", "acl/staff.txt", [("allow", "staff"), ("deny", "bob")], protected=True)
    assert [domain.can_read(user, "docs", "acl/staff.txt") for user in ("alice", "bob", "carol")] == [True, False, False]

    # a folder's inheritable allow: a file created in it later inherits it (ID), as on Windows
    domain.mkdir("docs", "acl/audit")
    domain.set_acl_entries("docs", "acl/audit", [("allow", "auditors")], protected=True, inherit=True)
    domain.write("docs", "acl/audit/report.txt", b"report")
    assert f"(A;ID;0x00120089;;;{domain.sid('auditors')})" in domain.get_sddl("docs", "acl/audit/report.txt")
    assert domain.can_read("carol", "docs", "acl/audit/report.txt")
    assert not domain.can_read("dave", "docs", "acl/audit/report.txt")

    # a folder whose inheritance is broken: the share's authenticated users no longer read in it
    domain.mkdir("docs", "acl/interns")
    domain.write("docs", "acl/interns/open.txt", b"before")
    assert domain.can_read("alice", "docs", "acl/interns/open.txt")  # inherited from the share's root
    domain.set_acl_entries("docs", "acl/interns", [("allow", "interns")], protected=True, inherit=True)
    domain.write("docs", "acl/interns/plan.txt", b"plan")
    assert domain.get_sddl("docs", "acl/interns").split("D:")[1].startswith("P")
    assert domain.can_read("dave", "docs", "acl/interns/plan.txt")
    assert not domain.can_read("alice", "docs", "acl/interns/plan.txt")

    domain.remove("docs", "acl")  # Administrators keep full control
    assert not (domain.share_path("docs") / "acl").exists()


def test_a_share_acl_refuses_at_tree_connect_and_the_sealed_share_is_read_encrypted(samba_domain: SambaDomain) -> None:
    domain = samba_domain
    domain.write("sealed", "secret.txt", b"sealed")
    assert domain.can_read("carol", "sealed", "secret.txt")  # smb encrypt = required: read encrypted
    domain.set_share_acl("sealed", f"D:(A;;FA;;;{domain.sid('alice')})(A;;FA;;;BA)")
    try:
        assert domain.can_read("alice", "sealed", "secret.txt")
        assert not domain.can_read("carol", "sealed", "secret.txt")
    finally:
        domain.reset_share_acl("sealed")
    assert domain.can_read("carol", "sealed", "secret.txt")


def test_the_dfs_link_leads_to_the_docs_share(samba_domain: SambaDomain) -> None:
    samba_domain.write("docs", "through-dfs.txt", b"dfs")
    cache: dict[str, object] = {}
    try:
        names = smbclient.listdir(
            rf"\\{samba_domain.address}\dfs\linked",
            username=f"{samba_domain.domain}\\bob",
            password=samba_domain.passwords["bob"],
            connection_cache=cache,
            auth_protocol="ntlm",
        )
    finally:
        smbclient.reset_connection_cache(connection_cache=cache)
    assert "through-dfs.txt" in names


def test_a_stopped_domain_refuses_connections_and_starts_again(samba_domain: SambaDomain) -> None:
    samba_domain.write("docs", "restart.txt", b"again")
    samba_domain.stop()
    try:
        try:
            samba_domain.can_read("alice", "docs", "restart.txt")
        except (OSError, ValueError) as error:  # smbprotocol: ValueError "Failed to connect ... refused"
            assert "refused" in str(error)
        else:
            raise AssertionError("a stopped samba answered")
    finally:
        samba_domain.start()
    assert samba_domain.can_read("alice", "docs", "restart.txt")
