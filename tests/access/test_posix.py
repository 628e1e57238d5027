"""searchcrawl.access.posix on real files: permission bits and ACLs set with chown, chmod and
Debian's setfacl in tmp_path, read back as tokens; the folders above a file as levels, through
the files agent's listing; an ACL that cannot be read."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest

from searchcrawl.access import posix
from searchcrawl.access.tokens import Access, AccessUnreadable
from searchcrawl.agents.files import FilesAgent, FilesOptions

OWNER, GROUP = 1001, 2001


def made(path: Path, mode: int, uid: int = OWNER, gid: int = GROUP, acl: str | None = None) -> Path:
    if not path.exists():
        path.write_text("text")
    os.chown(path, uid, gid)
    os.chmod(path, mode)
    if acl:
        subprocess.run(["setfacl", "-m", acl, str(path)], check=True)
    return path


def access_of(path: Path) -> Access:
    return posix.file_access(str(path), os.stat(path), str(path))


def fields(access: Access) -> tuple[list[str], list[str]]:
    shown = access.fields()
    return shown["access_allow"], shown["access_deny"]


def test_owner_group_and_others_read_permission(tmp_path: Path) -> None:
    assert fields(access_of(made(tmp_path / "a", 0o640))) == (["gid:2001", "uid:1001"], [])
    assert fields(access_of(made(tmp_path / "b", 0o644))) == (["gid:2001", "public", "uid:1001"], [])
    assert fields(access_of(made(tmp_path / "c", 0o600))) == (["uid:1001"], [])
    assert fields(access_of(made(tmp_path / "d", 0o000))) == ([], ["uid:1001"])  # no one (the crawler is root)


def test_exact_posix_where_others_could_read(tmp_path: Path) -> None:
    # the owner without r is refused, whatever group and other give
    assert fields(access_of(made(tmp_path / "a", 0o044))) == (["gid:2001", "public"], ["uid:1001"])
    # the owning group without r while other has it: its members are refused
    assert fields(access_of(made(tmp_path / "b", 0o604))) == (["public", "uid:1001"], ["gid:2001"])
    # without r for other, a group without r needs no deny: nothing lets its members in
    assert fields(access_of(made(tmp_path / "c", 0o600))) == (["uid:1001"], [])


def test_named_users_and_groups_under_the_mask(tmp_path: Path) -> None:
    path = made(tmp_path / "a", 0o640, acl="u:3001:r,u:3002:-,g:4001:r,g:4002:-,m::r")
    assert fields(access_of(path)) == (["gid:2001", "gid:4001", "uid:1001", "uid:3001"], ["uid:3002"])
    origins = {grant.token: grant.origin for grant in access_of(path).levels[0].allow}
    assert origins["uid:3001"] == f"POSIX ACL of {path}: user:3001 r"
    # the mask takes r away from named entries and the owning group, never from the owner (a
    # mask of x: an empty one makes Linux ignore the ACL, see the next test)
    subprocess.run(["setfacl", "-m", "m::x", str(path)], check=True)
    assert fields(access_of(path)) == (["uid:1001"], ["uid:3001", "uid:3002"])
    # ... and with other able to read, the masked entries are refused
    subprocess.run(["setfacl", "-n", "-m", "o::r", str(path)], check=True)  # -n: the mask stays
    assert fields(access_of(path)) == (["public", "uid:1001"], ["gid:2001", "gid:4001", "gid:4002", "uid:3001", "uid:3002"])


def test_a_mask_that_grants_nothing_leaves_named_entries_what_other_gets(tmp_path: Path) -> None:
    """Linux, with an empty mask (the mode's group bits 0), checks the permission bits alone: a
    named user or a named group's member reads as ``other``, the owning group's members get
    nothing (found by tests/e2e/test_secure_search_crawls.py, whose oracle is the kernel)."""
    path = made(tmp_path / "a", 0o640, acl="u:3001:r,u:3002:-,g:4001:r,m::-")
    assert fields(access_of(path)) == (["uid:1001"], [])  # no one but the owner: other has no r
    subprocess.run(["setfacl", "-n", "-m", "o::r", str(path)], check=True)
    assert fields(access_of(path)) == (["public", "uid:1001"], ["gid:2001"])


def test_the_owners_own_entry_wins_over_a_named_entry_for_it(tmp_path: Path) -> None:
    path = made(tmp_path / "a", 0o400, acl=f"u:{OWNER}:-")
    assert fields(access_of(path)) == (["uid:1001"], [])


def agent(root: Path) -> FilesAgent:
    return FilesAgent("docs", FilesOptions.model_validate({"roots": [str(root)]}))


def references(root: Path) -> dict[str, object]:
    return {Path(reference.key).name: reference for reference in agent(root).references(None)}


def test_every_folder_from_the_root_down_must_be_searchable(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    made(root, 0o755, uid=0, gid=0)
    hr = root / "hr"
    hr.mkdir()
    made(hr, 0o750, uid=0, gid=2002)  # a level: root and group 2002 only
    made(hr / "pay.txt", 0o640)
    made(root / "open.txt", 0o644)
    found = references(root)
    assert found["open.txt"].access.is_public  # type: ignore[attr-defined]
    pay = found["pay.txt"].access  # type: ignore[attr-defined]
    shown = pay.fields()
    assert shown["access_allow"] == ["gid:2001", "uid:1001"] and shown["access_allow_1"] == ["gid:2002", "uid:0"]
    assert shown["access_allow_2"] == ["public"] and shown["access_deny"] == []
    assert [level.name for level in pay.levels] == [f"file {hr / 'pay.txt'}", f"folder {hr}"]
    # the root is a folder like the others: closed, it is a level of every file
    made(root, 0o711, uid=0, gid=0)
    made(root, 0o710, uid=0, gid=3000)
    assert references(root)["open.txt"].access.fields()["access_allow_1"] == ["gid:3000", "uid:0"]  # type: ignore[attr-defined]
    # a named user of a folder without x is denied the files below it
    subprocess.run(["setfacl", "-m", "u:3001:r,o::x", str(hr)], check=True)
    assert references(root)["pay.txt"].access.fields()["access_deny"] == ["uid:3001"]  # type: ignore[attr-defined]


def test_default_acls_are_ignored(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    made(root, 0o755, uid=0, gid=0)
    made(root / "old.txt", 0o644)  # made before the default ACL: its own bits only
    subprocess.run(["setfacl", "-d", "-m", "u:5000:-,o::-", str(root)], check=True)
    assert "default:other::---" in subprocess.run(["getfacl", str(root)], capture_output=True, text=True).stdout
    # what new files would inherit says nothing of who may pass through the folder, or read old.txt
    assert references(root)["old.txt"].access.is_public  # type: ignore[attr-defined]


def test_an_acl_that_cannot_be_read_is_no_access_never_public(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    root.mkdir()
    made(root, 0o755, uid=0, gid=0)
    sub = root / "sub"
    sub.mkdir()
    made(sub, 0o755, uid=0, gid=0)
    made(root / "a.txt", 0o644)
    made(sub / "b.txt", 0o644)
    real = posix.read_acl

    def broken(path: str | int) -> object:
        target = os.readlink(f"/proc/self/fd/{path}") if isinstance(path, int) else path
        if target.endswith(("a.txt", "/sub")):
            raise OSError(errno.EIO, "Input/output error")
        return real(path)

    monkeypatch.setattr(posix, "read_acl", broken)
    with pytest.raises(AccessUnreadable, match="the ACL of .*a.txt cannot be read"):
        access_of(root / "a.txt")
    found = references(root)
    for name in ("a.txt", "b.txt"):  # a file's own ACL, or a folder's above it
        assert found[name].access is None  # type: ignore[attr-defined]
        assert "cannot be read" in found[name].access_unreadable  # type: ignore[attr-defined]
