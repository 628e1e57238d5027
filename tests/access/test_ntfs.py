"""NTFS descriptors as access tokens (searchcrawl/access/ntfs.py), against Windows' own rule:
the first entry naming reading and one of the reader's SIDs decides."""

from __future__ import annotations

import random
import struct

import pytest

from searchcrawl.access.decision import Principal, Principals, decide
from searchcrawl.access.ntfs import (
    ALLOWED,
    DENIED,
    FILE_READ_DATA,
    INHERIT_ONLY,
    INHERITED,
    Ace,
    Descriptor,
    parse_descriptor,
    read_access,
    share_access,
    sid_bytes,
    sid_text,
)
from searchcrawl.access.tokens import AccessUnreadable

DOMAIN = "S-1-5-21-1-2-3"
ALICE, BOB, STAFF, MANAGERS = f"{DOMAIN}-1101", f"{DOMAIN}-1102", f"{DOMAIN}-1201", f"{DOMAIN}-1202"
EVERYONE = "S-1-1-0"
WRITE, DELETE = 0x2, 0x10000
FULL = 0x1F01FF


def descriptor_bytes(owner: str, aces: list[tuple[int, int, int, str]] | None, protected: bool = False) -> bytes:
    """A self-relative descriptor: owner, and a DACL of (type, flags, mask, sid) entries."""
    owner_sid = sid_bytes(owner)
    control = 0x8000 | (0x1000 if protected else 0) | (0x0004 if aces is not None else 0)
    body = b""
    for kind, flags, mask, sid in aces or []:
        ace = struct.pack("<I", mask) + sid_bytes(sid)
        body += struct.pack("<BBH", kind, flags, 4 + len(ace)) + ace
    dacl = struct.pack("<BBHHH", 2, 0, 8 + len(body), len(aces or []), 0) + body if aces is not None else b""
    dacl_at = 20 + len(owner_sid) if aces is not None else 0
    return struct.pack("<BBHIIII", 1, 0, control, 20, 0, 0, dacl_at) + owner_sid + dacl


def windows_reads(aces: tuple[Ace, ...] | None, owner: str, sids: set[str]) -> bool:
    """The oracle: Windows' access check for FILE_READ_DATA, entry by entry."""
    if aces is None:
        return True
    for ace in aces:
        if ace.flags & INHERIT_ONLY or not ace.mask & (FILE_READ_DATA | 0x10000000 | 0x80000000):
            continue
        sid = owner if ace.sid == "S-1-3-4" else ace.sid
        if sid in sids:
            return ace.kind == ALLOWED
    return False


def reader(*sids: str) -> Principals:
    return Principals.of("someone", [Principal(f"sid:{sid}", "test") for sid in sids])


def access_of(aces: list[tuple[int, int, int, str]] | None, owner: str = ALICE):
    return read_access(parse_descriptor(descriptor_bytes(owner, aces)), r"\\fs\docs\a.txt")


def test_sids_round_trip() -> None:
    for sid in (EVERYONE, ALICE, "S-1-5-32-545", "S-1-5-21-4294967295-1-2-3"):
        assert sid_text(sid_bytes(sid))[0] == sid


def test_allow_and_deny_for_read_only() -> None:
    access = access_of([(DENIED, 0, DELETE | WRITE, BOB), (ALLOWED, 0, FULL, STAFF)])
    assert decide(access, reader(BOB, STAFF)).granted  # a deny of delete and write hides nothing
    access = access_of([(DENIED, 0, FILE_READ_DATA, BOB), (ALLOWED, 0, FULL, STAFF)])
    assert not decide(access, reader(BOB, STAFF)).granted and decide(access, reader(ALICE, STAFF)).granted
    assert not decide(access, reader(ALICE)).granted


def test_explicit_allow_wins_over_an_inherited_deny() -> None:
    """Windows puts a file's own entries first: its own allow of bob beats the deny it inherits
    for staff, but staff's other members stay denied."""
    aces = [(ALLOWED, 0, FILE_READ_DATA, BOB), (DENIED, INHERITED, FULL, STAFF), (ALLOWED, INHERITED, FULL, EVERYONE)]
    access = access_of(aces)
    assert decide(access, reader(BOB, STAFF, EVERYONE)).granted
    assert not decide(access, reader(ALICE, STAFF, EVERYONE)).granted
    assert decide(access, reader(ALICE, EVERYONE)).granted
    assert access.fields()["access_deny_late"] == [f"sid:{STAFF}"]


def test_inherit_only_and_creator_owner_name_no_one_on_the_file() -> None:
    access = access_of([(ALLOWED, INHERIT_ONLY, FULL, BOB), (ALLOWED, 0, FULL, "S-1-3-0"), (ALLOWED, 0, FULL, "S-1-3-4")])
    assert not decide(access, reader(BOB, "S-1-3-0")).granted
    assert decide(access, reader(ALICE)).granted  # OWNER RIGHTS is the owner


def test_no_dacl_is_everyone_an_empty_dacl_is_no_one() -> None:
    assert decide(access_of(None), reader(EVERYONE)).granted
    assert not decide(access_of(None), Principals.anonymous()).granted  # not signed in: fail closed
    empty = access_of([])
    assert not decide(empty, reader(ALICE, EVERYONE)).granted and empty.fields()["access_allow"] == []


def test_share_permissions_must_be_passed_too() -> None:
    file = access_of([(ALLOWED, 0, FULL, STAFF)])
    share = access_of([(DENIED, 0, FULL, BOB), (ALLOWED, 0, FULL, EVERYONE)])
    both = share_access(file, share)
    assert decide(both, reader(ALICE, STAFF, EVERYONE)).granted
    assert not decide(both, reader(BOB, STAFF, EVERYONE)).granted
    only_managers = share_access(file, access_of([(ALLOWED, 0, FULL, MANAGERS)]))
    assert not decide(only_managers, reader(ALICE, STAFF, EVERYONE)).granted
    assert decide(only_managers, reader(ALICE, STAFF, MANAGERS)).granted


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x01" * 19,
        struct.pack("<BBHIIII", 1, 0, 0x8004, 0, 0, 0, 10_000),  # a DACL past the end
        struct.pack("<BBHIIII", 1, 0, 0x8004, 0, 0, 0, 20) + struct.pack("<BBHHH", 2, 0, 0xFFFF, 1, 0),
        struct.pack("<BBHIIII", 1, 0, 0x8004, 0, 0, 0, 20) + struct.pack("<BBHHH", 2, 0, 16, 1, 0) + b"\x00\x00\xff\xff" * 2,
        struct.pack("<BBHIIII", 1, 0, 0x8004, 20, 0, 0, 0) + b"\x01\x0f" + b"\x00" * 6,  # 15 sub-authorities, none there
        struct.pack("<BBHIIII", 2, 0, 0x8004, 0, 0, 0, 0),  # revision 2
        b"\x00" * 70_000,
    ],
)
def test_a_hostile_descriptor_is_unreadable_never_public(data: bytes) -> None:
    with pytest.raises(AccessUnreadable):
        parse_descriptor(data)


def test_an_unknown_ace_type_is_unreadable() -> None:
    data = bytearray(descriptor_bytes(ALICE, [(ALLOWED, 0, FULL, BOB)]))
    data[20 + len(sid_bytes(ALICE)) + 8] = 0x11  # a mandatory label in a DACL
    with pytest.raises(AccessUnreadable):
        parse_descriptor(bytes(data))


def test_conditional_entries_fail_closed() -> None:
    aces = [(0x0A, 0, FULL, BOB), (0x09, 0, FULL, ALICE), (ALLOWED, 0, FULL, STAFF)]
    data = descriptor_bytes(ALICE, aces)
    access = read_access(parse_descriptor(data), "x")
    assert not decide(access, reader(BOB, STAFF)).granted  # a conditional deny denies
    assert not decide(access, reader(ALICE)).granted  # a conditional allow does not allow


SIDS = [ALICE, BOB, STAFF, MANAGERS, EVERYONE, "S-1-3-4", "S-1-3-0"]


def test_random_acls_never_show_what_windows_refuses_and_agree_on_two_blocks() -> None:
    """A model-based check: 3,000 random DACLs and readers; the tokens never grant what Windows'
    rule refuses, and agree with it exactly where the ACL has at most two deny/allow blocks."""
    rng = random.Random(55)
    exact = 0
    for _ in range(3000):
        aces = [
            (
                rng.choice((ALLOWED, DENIED)),
                rng.choice((0, INHERITED, INHERIT_ONLY, 0)),
                rng.choice((FULL, FILE_READ_DATA, WRITE | DELETE, 0x80000000)),
                rng.choice(SIDS),
            )
            for _ in range(rng.randrange(0, 7))
        ]
        owner = rng.choice((ALICE, BOB))
        descriptor = parse_descriptor(descriptor_bytes(owner, aces))
        access = read_access(descriptor, "f")
        sids = set(rng.sample(SIDS[:5], rng.randrange(0, 5)))
        windows = windows_reads(descriptor.dacl, owner, sids)
        ours = decide(access, reader(*sids)).granted
        assert not (ours and not windows), (aces, owner, sids)
        if _blocks(descriptor, owner) <= 2:
            assert ours == windows, (aces, owner, sids)
            exact += 1
    assert exact > 2000


def test_a_third_block_is_read_conservatively() -> None:
    """Three deny/allow blocks: a reader allowed by the second allow block (managers) and denied
    by the third deny (everyone) is refused here, where Windows lets them read: fail closed."""
    aces = [(DENIED, 0, FULL, BOB), (ALLOWED, 0, FULL, ALICE), (DENIED, INHERITED, FULL, STAFF)]
    aces += [(ALLOWED, INHERITED, FULL, MANAGERS), (DENIED, INHERITED, FULL, EVERYONE), (ALLOWED, INHERITED, FULL, STAFF)]
    access = access_of(aces)
    manager = reader(MANAGERS, EVERYONE)
    assert windows_reads(parse_descriptor(descriptor_bytes(ALICE, aces)).dacl, ALICE, {MANAGERS, EVERYONE})
    assert not decide(access, manager).granted
    assert decide(access, reader(ALICE, STAFF, EVERYONE)).granted


def _blocks(descriptor: Descriptor, owner: str) -> int:
    kinds = [
        ace.kind
        for ace in descriptor.dacl or ()
        if not ace.flags & INHERIT_ONLY and ace.mask & 0x90000001 and ace.sid not in ("S-1-3-0",)
    ]
    changes = sum(1 for before, after in zip(kinds, kinds[1:], strict=False) if before == ALLOWED and after == DENIED)
    return changes + 1


def test_a_share_open_to_everyone_adds_no_level() -> None:
    file = access_of([(ALLOWED, 0, FULL, STAFF)])
    both = share_access(file, access_of([(ALLOWED, 0, FULL, EVERYONE)]))
    assert both.levels == file.levels and both.fields() == file.fields()
