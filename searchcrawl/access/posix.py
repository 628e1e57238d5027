"""Who may read a file, from its POSIX permissions and access ACL, as tokens.

POSIX checks a reader against one class of entries, in this order: the owner (``user::``), a
named user (``user:N:``), every group entry of the reader's groups (the owning group ``group::``
and named groups ``group:G:``; granted when one of them grants), else ``other::``. Named users
and all group entries are limited by the ACL's mask; the owner and ``other`` are not. A file's
read permission (``r``) becomes, with uid and gid numbers (``uid:N``, ``gid:G``):

- the owner with ``r``: allow ``uid:<owner>``; without: deny ``uid:<owner>`` (POSIX refuses the
  owner even when a group or ``other`` would grant);
- a named user with ``r`` (under the mask): allow ``uid:N``; without: deny ``uid:N``;
- a group entry with ``r`` (under the mask): allow ``gid:G``; without it while ``other`` has
  ``r``: deny ``gid:G`` (POSIX refuses its members what ``other`` gives). The one conservative
  corner: a deny token refuses every member, so a reader in a granting and a non-granting group
  (or the owner, or a named user, in a non-granting group) is refused what POSIX would grant
  (one gid with a granting and a non-granting entry, the owning group named again, is granted);
- ``other`` with ``r``: allow ``public``.

As Linux checks it: a mask that grants nothing (``m::---``) makes Linux ignore the ACL and check
the permission bits alone, so named users and named groups' members get what ``other`` gets
(``linux_checked``), not the nothing their masked entries would say.

A folder is the same with the search permission (``x``): every folder from the source's root
down to the file's own folder must be traversable by the reader, so each is a level of the
document (``Access.within``; an open folder adds nothing). Default ACLs (what new files inherit)
say nothing of who may read what exists, and are ignored. An ACL that cannot be read raises
AccessUnreadable: the document is not indexed (status 927), never indexed as public.

The ACL is read as libacl's ``acl_get_file`` reads it, without a compiled library (issue 99): the
extended attribute ``system.posix_acl_access`` in Linux's format (``acl_entries``), or, when the
file has none, its permission bits as an ACL. An attribute that is not a valid ACL is unreadable.
"""

from __future__ import annotations

import errno
import os
import struct
from collections import Counter
from dataclasses import dataclass

from searchcrawl.access.tokens import PUBLIC, Access, AccessUnreadable, Grant, Level

READ, SEARCH = "r", "x"
# an entry's permission bits, and the one each permission asks for
ACL_READ, ACL_WRITE, ACL_EXECUTE = 0x4, 0x2, 0x1
_BITS = {READ: ACL_READ, SEARCH: ACL_EXECUTE}
# an entry's tag (include/uapi/linux/posix_acl.h)
ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ, ACL_GROUP, ACL_MASK, ACL_OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
# the access ACL's extended attribute (include/uapi/linux/posix_acl_xattr.h): a header, the
# version (2), then one entry per 8 bytes: tag, permissions, the user's or group's id; little-endian
ACL_XATTR = "system.posix_acl_access"
ACL_XATTR_VERSION = 2
_HEADER = struct.Struct("<I")
_ENTRY = struct.Struct("<HHI")
_NAMED = (ACL_USER, ACL_GROUP)


@dataclass(frozen=True)
class PosixAclEntry:
    """One entry of an access ACL: its tag, the uid or gid it names (a named user's or group's
    only) and its permission bits."""

    tag: int
    qualifier: int | None
    perm: int


@dataclass(frozen=True)
class Gate:
    """What one file or folder lets through for one permission: allow and deny grants."""

    allow: tuple[Grant, ...]
    deny: tuple[Grant, ...]


def read_acl(path: str | int) -> list[PosixAclEntry]:
    """The access ACL of ``path`` (a path, or an open descriptor): the permission bits as an ACL
    when it has no extended one. The seam the tests use to make an ACL unreadable. OSError when
    it cannot be read, ValueError when its attribute is not an ACL."""
    try:
        data = os.getxattr(path, ACL_XATTR)
    except OSError as exc:
        if exc.errno != errno.ENODATA:
            raise
        data = b""
    if data:
        return acl_entries(data)
    return mode_entries((os.fstat(path) if isinstance(path, int) else os.stat(path)).st_mode)


def acl_entries(data: bytes) -> list[PosixAclEntry]:
    """The entries of an ACL in Linux's extended attribute format; ValueError unless it is one
    the kernel would take (a whole number of entries of known tags, each of the owner, the
    owning group and other once, a mask with named entries and at most one, a named id once)."""
    if len(data) < _HEADER.size or (len(data) - _HEADER.size) % _ENTRY.size:
        raise ValueError(f"an ACL attribute of {len(data)} bytes is not a header and whole entries")
    (version,) = _HEADER.unpack_from(data)
    if version != ACL_XATTR_VERSION:
        raise ValueError(f"an ACL attribute of version {version}, not {ACL_XATTR_VERSION}")
    entries = []
    for tag, perm, qualifier in _ENTRY.iter_unpack(data[_HEADER.size :]):
        if tag not in (ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ, ACL_GROUP, ACL_MASK, ACL_OTHER):
            raise ValueError(f"an ACL entry of unknown tag {tag:#x}")
        if perm & ~(ACL_READ | ACL_WRITE | ACL_EXECUTE):
            raise ValueError(f"an ACL entry of unknown permissions {perm:#x}")
        entries.append(PosixAclEntry(tag, qualifier if tag in _NAMED else None, perm))
    tags = Counter(entry.tag for entry in entries)
    if any(tags[tag] != 1 for tag in (ACL_USER_OBJ, ACL_GROUP_OBJ, ACL_OTHER)) or tags[ACL_MASK] > 1:
        raise ValueError("an ACL without exactly one entry for the owner, the owning group and other, or with two masks")
    if (tags[ACL_USER] or tags[ACL_GROUP]) and not tags[ACL_MASK]:
        raise ValueError("an ACL with named entries and no mask")
    if max(Counter((entry.tag, entry.qualifier) for entry in entries).values()) > 1:
        raise ValueError("an ACL naming a user or group twice")
    return entries


def mode_entries(mode: int) -> list[PosixAclEntry]:
    """A file's permission bits as the ACL they are: the owner, the owning group, other."""
    return [
        PosixAclEntry(ACL_USER_OBJ, None, mode >> 6 & 7),
        PosixAclEntry(ACL_GROUP_OBJ, None, mode >> 3 & 7),
        PosixAclEntry(ACL_OTHER, None, mode & 7),
    ]


def gate(path: str | int, info: os.stat_result, permission: str, shown: str) -> Gate:
    """Who ``permission`` (READ or SEARCH) lets through ``path``, whose ``stat`` is ``info``
    (``shown``: its name in the grants' origins). AccessUnreadable when its ACL cannot be read."""
    try:
        acl = read_acl(path)
        entries = [(entry.tag, entry.qualifier, bool(entry.perm & _BITS[permission])) for entry in acl]
        empty_mask = any(entry.tag == ACL_MASK and not entry.perm for entry in acl)
    except (OSError, ValueError, TypeError) as exc:
        raise AccessUnreadable(f"the ACL of {shown} cannot be read: {exc}") from None
    return gate_of(linux_checked(entries, empty_mask), info.st_uid, info.st_gid, permission, shown)


def linux_checked(entries: list[tuple[int, int | None, bool]], empty_mask: bool) -> list[tuple[int, int | None, bool]]:
    """The entries Linux checks: all of them, but with a mask that grants nothing (``m::---``,
    the mode's group bits 0) Linux does not read the ACL (``acl_permission_check`` in
    fs/namei.c) and checks the permission bits alone, so a named user and the members of a named
    group get what ``other`` gets: their entries are left out. The owner, the owning group
    (under the empty mask: nothing) and ``other`` stay."""
    if not empty_mask:
        return entries
    return [entry for entry in entries if entry[0] not in (ACL_USER, ACL_GROUP)]


def gate_of(entries: list[tuple[int, int | None, bool]], owner: int, group: int, permission: str, shown: str) -> Gate:
    """The Gate of an ACL's entries (tag, qualifier, whether the entry has ``permission``), as
    the module's docstring says."""
    masked = all(has for tag, _q, has in entries if tag == ACL_MASK)
    other = any(has for tag, _q, has in entries if tag == ACL_OTHER)
    allow: list[Grant] = []
    deny: list[Grant] = []
    where = f"POSIX ACL of {shown}"
    for tag, qualifier, has in entries:
        decided = _entry_grant(tag, qualifier, has, (owner, group), masked, permission, where)
        if decided is None:
            continue
        granted, grant = decided
        if granted:
            allow.append(grant)
        elif other or not grant.token.startswith("gid:"):  # a group's members are refused what other gives
            deny.append(grant)
    if other:
        allow.append(Grant(PUBLIC, f"{where}: other {permission}"))
    # a gid with a granting entry and one without (the owning group named again): POSIX grants
    granting = {grant.token for grant in allow}
    return Gate(tuple(allow), tuple(grant for grant in deny if not (grant.token.startswith("gid:") and grant.token in granting)))


def _entry_grant(
    tag: int, qualifier: int | None, has: bool, owners: tuple[int, int], masked: bool, permission: str, where: str
) -> tuple[bool, Grant] | None:
    """What one ACL entry grants (True) or refuses (False), with its explanation; None for the
    entries that name no one of their own (the mask, other) and a named entry of the owner (the
    owner's own entry wins over it). A named user's or a group's entry grants only within the mask."""
    owner, group = owners
    if tag == ACL_USER_OBJ:
        return has, Grant(f"uid:{owner}", f"{where}: owner (uid {owner}) {_mode(has, permission)}")
    granted = has and masked
    shown = f"{_mode(granted, permission)}{'' if masked or not has else ' (masked)'}"
    if tag == ACL_USER and qualifier != owner:
        return granted, Grant(f"uid:{qualifier}", f"{where}: user:{qualifier} {shown}")
    if tag in (ACL_GROUP_OBJ, ACL_GROUP):
        gid = group if tag == ACL_GROUP_OBJ else qualifier
        name = f"owning group (gid {gid})" if tag == ACL_GROUP_OBJ else f"group:{gid}"
        return granted, Grant(f"gid:{gid}", f"{where}: {name} {shown}")
    return None


def file_access(path: str | int, info: os.stat_result, shown: str) -> Access:
    """A file's own level (read permission), with its deny tokens: ``path`` a path, or the
    descriptor its content is read from (what it says when read, not when listed)."""
    own = gate(path, info, READ, shown)
    return Access.of(own.allow, own.deny, name=f"file {shown}")


def within_folder(access: Access, folder: Gate, shown: str) -> Access:
    """``access`` behind a folder (its search permission: ``gate(..., SEARCH, ...)``)."""
    return access.within(Level(f"folder {shown}", folder.allow), folder.deny)


def _mode(has: bool, permission: str) -> str:
    return permission if has else f"no {permission}"
