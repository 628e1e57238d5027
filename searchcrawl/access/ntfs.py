"""Who may read a file on a Windows share: its NTFS security descriptor, as access tokens.

A file's descriptor (``parse_descriptor``: the self-relative SECURITY_DESCRIPTOR of MS-DTYP
2.4.6, as an SMB server sends it) holds an owner and a DACL: an ordered list of allow and deny
entries, each for a security identifier (a user, a group, a well-known SID such as Everyone)
and an access mask. Windows decides a read (``FILE_READ_DATA``) by walking the entries in
order: entries that are inherit-only (templates for files created later), or whose mask does not
name reading, are passed over; the first entry that names reading and one of the reader's SIDs
decides. Only reading counts: a deny of write or delete hides nothing (the mistake of reading
"deny delete" as "deny read"). Inheritance is resolved by the server: a file's descriptor holds
the entries it inherits (flagged INHERITED), after its own, and a folder whose inheritance is
broken (a protected DACL) passes none on.

``read_access`` turns the entries into ``Access`` (tokens.py): the denies before the first allow
entry are deny tokens, the allow entries the document's level, and the denies that follow an
allow entry are late denies, overridden by the allow entries before them (exact for a file's own
entries followed by inherited ones; with more alternations, conservative: tokens.py).

Special cases, as Windows has them: no DACL at all (or a NULL DACL) lets everyone read (here:
``sid:S-1-1-0``, Everyone, which a searcher who is not signed in is not: fail closed); an empty
DACL lets no one. OWNER RIGHTS (S-1-3-4) is the file's owner; CREATOR OWNER and CREATOR GROUP
(S-1-3-0, S-1-3-1) only matter as inherit-only templates and name no one on the file itself.
An allow entry with a condition (a callback ACE) or for an object type is passed over (it may not
apply: fail closed); a deny entry of those kinds denies as if unconditional. An entry of a type
this module does not know, or a descriptor that does not parse, is ``AccessUnreadable``: the
file is not indexed (status 927), never shown to everyone.

Everything here is plain data, tested without a server; the SMB agent reads the bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from searchcrawl.access.tokens import PUBLIC, Access, AccessUnreadable, Grant, Level, unique_grants

# access mask bits that let a reader read a file's contents
FILE_READ_DATA = 0x00000001
GENERIC_ALL = 0x10000000
GENERIC_READ = 0x80000000
READS = FILE_READ_DATA | GENERIC_ALL | GENERIC_READ

# ACE types (MS-DTYP 2.4.4.1)
ALLOWED, DENIED = 0x00, 0x01
ALLOWED_KINDS = frozenset({0x00, 0x04, 0x05, 0x09, 0x0B})  # plain, compound, object, callback, callback object
DENIED_KINDS = frozenset({0x01, 0x06, 0x0A, 0x0C})  # plain, object, callback, callback object
# ACE flags
INHERIT_ONLY = 0x08
INHERITED = 0x10
# SECURITY_DESCRIPTOR control bits
DACL_PRESENT = 0x0004
DACL_PROTECTED = 0x1000

MAX_DESCRIPTOR = 65536  # a descriptor is at most 64 KiB (an ACL's size is 16 bits)
EVERYONE = "S-1-1-0"
CREATOR_OWNER, CREATOR_GROUP, OWNER_RIGHTS = "S-1-3-0", "S-1-3-1", "S-1-3-4"

# names of the well-known SIDs an ACL or a searcher's token holds (MS-DTYP 2.4.2.4)
WELL_KNOWN = {
    "S-1-0-0": "NULL SID",
    "S-1-1-0": "Everyone",
    "S-1-2-0": "LOCAL",
    "S-1-3-0": "CREATOR OWNER",
    "S-1-3-1": "CREATOR GROUP",
    "S-1-3-4": "OWNER RIGHTS",
    "S-1-5-2": "NETWORK",
    "S-1-5-4": "INTERACTIVE",
    "S-1-5-7": "ANONYMOUS LOGON",
    "S-1-5-11": "Authenticated Users",
    "S-1-5-15": "This Organization",
    "S-1-5-18": "SYSTEM",
    "S-1-5-32-544": "BUILTIN\\Administrators",
    "S-1-5-32-545": "BUILTIN\\Users",
    "S-1-5-32-546": "BUILTIN\\Guests",
    "S-1-5-32-547": "BUILTIN\\Power Users",
    "S-1-5-32-551": "BUILTIN\\Backup Operators",
}
# what every domain user's token holds when it opens a file over the network, beside its own SID
# and its groups': Everyone, NETWORK, Authenticated Users and This Organization
NETWORK_LOGON_SIDS = ("S-1-1-0", "S-1-5-2", "S-1-5-11", "S-1-5-15")


@dataclass(frozen=True)
class Ace:
    """One entry of a DACL."""

    kind: int  # ACE type
    flags: int
    mask: int
    sid: str  # "S-1-5-21-..."; "" for an object or callback entry whose SID is not read

    @property
    def allows(self) -> bool:
        return self.kind in ALLOWED_KINDS

    @property
    def inherited(self) -> bool:
        return bool(self.flags & INHERITED)


@dataclass(frozen=True)
class Descriptor:
    """A security descriptor's owner and DACL (None: no DACL, everyone may do everything)."""

    owner: str
    dacl: tuple[Ace, ...] | None
    protected: bool = False


def sid_text(data: bytes, offset: int = 0) -> tuple[str, int]:
    """The SID at ``offset`` as ``S-1-...`` text, and its length; ValueError if malformed."""
    if offset < 0 or offset + 8 > len(data):
        raise ValueError("a SID runs past the end")
    revision, count = data[offset], data[offset + 1]
    if revision != 1 or count > 15:
        raise ValueError(f"a SID of revision {revision} with {count} sub-authorities")
    end = offset + 8 + 4 * count
    if end > len(data):
        raise ValueError("a SID runs past the end")
    authority = int.from_bytes(data[offset + 2 : offset + 8], "big")
    subs = struct.unpack_from(f"<{count}I", data, offset + 8)
    return "S-1-" + "-".join(str(part) for part in (authority, *subs)), end - offset


def sid_bytes(sid: str) -> bytes:
    """A SID's binary form (what an LDAP filter on objectSid compares)."""
    parts = sid.upper().split("-")
    if len(parts) < 3 or parts[0] != "S" or parts[1] != "1" or len(parts) - 3 > 15:
        raise ValueError(f"{sid!r} is not a SID")
    authority, subs = int(parts[2]), [int(part) for part in parts[3:]]
    return bytes([1, len(subs)]) + authority.to_bytes(6, "big") + struct.pack(f"<{len(subs)}I", *subs)


def parse_descriptor(data: bytes) -> Descriptor:
    """A self-relative security descriptor's owner and DACL; AccessUnreadable when it does not
    parse (hostile or broken: every offset and size is checked against the bytes)."""
    try:
        return _parse(data)
    except (ValueError, struct.error) as exc:
        raise AccessUnreadable(f"the security descriptor does not parse ({exc})") from None


def _parse(data: bytes) -> Descriptor:
    if len(data) > MAX_DESCRIPTOR:
        raise ValueError(f"{len(data)} bytes, more than a descriptor holds")
    if len(data) < 20:
        raise ValueError("shorter than its header")
    revision, _sbz, control, owner_at, _group_at, _sacl_at, dacl_at = struct.unpack_from("<BBHIIII", data)
    if revision != 1:
        raise ValueError(f"revision {revision}")
    owner = sid_text(data, owner_at)[0] if owner_at else ""
    if not control & DACL_PRESENT or not dacl_at:
        return Descriptor(owner, None, bool(control & DACL_PROTECTED))
    return Descriptor(owner, _acl(data, dacl_at), bool(control & DACL_PROTECTED))


def _acl(data: bytes, at: int) -> tuple[Ace, ...]:
    if at + 8 > len(data):
        raise ValueError("the DACL runs past the end")
    _revision, _sbz, size, count, _sbz2 = struct.unpack_from("<BBHHH", data, at)
    end = at + size
    if size < 8 or end > len(data):
        raise ValueError("the DACL's size runs past the end")
    aces: list[Ace] = []
    offset = at + 8
    for _ in range(count):
        if offset + 4 > end:
            raise ValueError("an ACE runs past its ACL")
        kind, flags, ace_size = struct.unpack_from("<BBH", data, offset)
        if ace_size < 4 or offset + ace_size > end:
            raise ValueError("an ACE's size runs past its ACL")
        aces.append(_ace(data[offset : offset + ace_size], kind, flags))
        offset += ace_size
    return tuple(aces)


def _ace(body: bytes, kind: int, flags: int) -> Ace:
    if kind not in ALLOWED_KINDS and kind not in DENIED_KINDS:
        raise ValueError(f"an ACE of type {kind:#x} in a DACL")
    if len(body) < 8:
        raise ValueError("an ACE without its mask")
    mask = struct.unpack_from("<I", body, 4)[0]
    if kind in (ALLOWED, DENIED, 0x09, 0x0A):  # mask, then the SID
        return Ace(kind, flags, mask, sid_text(body, 8)[0])
    if kind == 0x04:  # compound (impersonation): never on a file; its SID is not where ours are
        return Ace(kind, flags, mask, "")
    # object ACEs: mask, flags, up to two GUIDs, then the SID
    object_flags = struct.unpack_from("<I", body, 8)[0] if len(body) >= 12 else 0
    at = 12 + (16 if object_flags & 1 else 0) + (16 if object_flags & 2 else 0)
    return Ace(kind, flags, mask, sid_text(body, at)[0])


def token(sid: str) -> str:
    """A SID as an access token: ``sid:S-1-5-21-...``."""
    return f"sid:{sid}"


def read_access(descriptor: Descriptor, where: str, level: str = "NTFS ACL") -> Access:
    """Who may read (FILE_READ_DATA) by the descriptor's DACL (the module's docstring); ``where``
    names the file in each token's origin (what `scrapy explain-access` shows)."""
    if descriptor.dacl is None:
        grant = Grant.of(token(EVERYONE), f"{where}: no DACL (everyone may read)")
        return Access((Level(level, (grant,)),))
    deny_first: list[Grant] = []
    allow: list[Grant] = []
    early: list[Grant] = []  # the allow entries before the first late deny
    late: list[Grant] = []
    for number, ace in enumerate(descriptor.dacl, start=1):
        if ace.flags & INHERIT_ONLY or not ace.mask & READS:
            continue
        sid = descriptor.owner if ace.sid == OWNER_RIGHTS else ace.sid
        if not sid or sid in (CREATOR_OWNER, CREATOR_GROUP, OWNER_RIGHTS):
            continue  # no one on the file itself
        if ace.allows and ace.kind != ALLOWED:
            continue  # conditional or for an object type: it may not apply (fail closed)
        grant = Grant.of(token(sid), f"{where}: {'inherited ' if ace.inherited else ''}{_kind(ace)} entry {number}")
        if ace.allows:
            allow.append(grant)
            if not late:
                early.append(grant)
        elif allow:
            late.append(grant)
        else:
            deny_first.append(grant)
    access = Access.of(allow, deny_first, name=level)
    if late:
        return Access(access.levels, access.deny, late_deny=unique_grants(late), overriding=unique_grants(early))
    return access


def _kind(ace: Ace) -> str:
    shown = "allow" if ace.allows else "deny"
    return shown if ace.kind in (ALLOWED, DENIED) else f"{shown} (type {ace.kind:#x}, as unconditional)"


def share_access(file_access: Access, share: Access) -> Access:
    """A file's access behind its share's permissions: a reader must pass both. The share's
    denies all refuse (its late ones too: conservative); its allow entries are a level, but for a
    share that lets Everyone in: every reader holding one of the file's ``sid:`` tokens is a
    signed-in domain user, and so holds Everyone (the default share, "Everyone: full control")."""
    allow = share.levels[0].allow if share.levels else ()
    denied = (*share.deny, *share.late_deny)
    if any(grant.token == token(EVERYONE) for grant in allow) and all(_sid_only(level) for level in file_access.levels):
        return file_access.within(Level("share permissions", (Grant(PUBLIC, "share lets Everyone in"),)), denied)
    return file_access.within(Level("share permissions", allow), denied)


def _sid_only(level: Level) -> bool:
    return all(grant.token.startswith("sid:") for grant in level.allow)


def sid_name(sid: str, names: dict[str, str] | None = None) -> str:
    """A SID's name: the directory's (``names``), else a well-known one's, else ""."""
    return (names or {}).get(sid) or WELL_KNOWN.get(sid, "")
