"""searchcrawl.access.posix on real files: permission bits and ACLs set with chown, chmod and
Debian's setfacl in tmp_path, read back as tokens; the folders above a file as levels, through
the files agent's listing; an ACL that cannot be read; and random trees whose tokens are checked
against the kernel's own answer (``setpriv`` as each reader, ``test -r``)."""

from __future__ import annotations

import errno
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from searchcrawl.access import posix
from searchcrawl.access.decision import Principal, Principals, decide
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


def test_the_owning_group_named_again_with_r_is_granted(tmp_path: Path) -> None:
    """POSIX grants a member of a group when one of its entries grants: the owning group named
    again (``g:2001:r`` with ``group::-``) is allowed, not denied."""
    path = made(tmp_path / "a", 0o604, acl=f"g:{GROUP}:r")
    subprocess.run(["setfacl", "-m", "g::-", str(path)], check=True)
    assert fields(access_of(path)) == (["gid:2001", "public", "uid:1001"], [])


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
        # a descriptor, or a path (the listing reads a file's by its /proc descriptor)
        target = os.path.realpath(f"/proc/self/fd/{path}" if isinstance(path, int) else path)
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


# uid -> its gids (the primary first), as tests/directory_server.py's users; NOBODY: a visitor
READERS = {1001: (2000,), 1002: (2001,), 1003: (2002,), 65534: (65534,)}


def principals_of(uid: int) -> Principals:
    if uid == 65534:
        return Principals.anonymous()
    return Principals.of(f"u{uid}", [Principal(f"uid:{uid}", "test"), *(Principal(f"gid:{gid}", "test") for gid in READERS[uid])])


def kernel_reads(uid: int, path: Path) -> bool:
    gids = READERS[uid]
    groups = f"--groups={','.join(map(str, gids))}" if uid != 65534 else "--clear-groups"
    command = ["setpriv", f"--reuid={uid}", f"--regid={gids[0]}", groups, "--", "test", "-r", str(path)]
    return subprocess.run(command, check=False).returncode == 0


def listed_twice(uid: int, paths: list[Path]) -> bool:
    """Whether a reader matches a user entry (the owner or a named user) and a group entry, or two
    group entries, of one of ``paths``: the documented conservative corner, where the deny of a
    group without the permission may refuse them."""
    for path in paths:
        info = os.stat(path)
        acl = subprocess.run(["getfacl", "-n", "-c", str(path)], capture_output=True, text=True, check=True).stdout
        users = {info.st_uid} | {int(line.split(":")[1]) for line in acl.splitlines() if re.match(r"user:\d+:", line)}
        groups = [info.st_gid] + [int(line.split(":")[1]) for line in acl.splitlines() if re.match(r"group:\d+:", line)]
        theirs = {gid for gid in groups if gid in READERS[uid]}  # one gid named twice is no corner
        if (uid in users and theirs) or len(theirs) > 1:
            return True
    return False


def linked_tree(root: Path) -> list[Path]:
    """A tree of links into folders few may enter; returns the links' paths (as listed): a link
    in an open folder to a file inside a folder only root may enter, one to a folder in it, and
    a link in a folder of group 2001 (bob's) to an open file."""
    for folder, mode, gid in [
        ("", 0o755, 0),
        ("open", 0o755, 0),
        ("locked", 0o700, 0),
        ("locked/inner", 0o755, 0),
        ("team", 0o750, 2001),
    ]:
        (root / folder).mkdir(exist_ok=True)
        made(root / folder, mode, uid=0, gid=gid)
    for file, text in (
        ("locked/pay.txt", "the salary scale"),
        ("locked/inner/memo.txt", "the board memo"),
        ("open/doc.txt", "the handbook"),
    ):
        (root / file).write_text(text)
        made(root / file, 0o644)
    (root / "open" / "pay-link.txt").symlink_to(root / "locked" / "pay.txt")
    (root / "open" / "inner-link").symlink_to(root / "locked" / "inner")
    (root / "team" / "doc-link.txt").symlink_to(root / "open" / "doc.txt")
    return [root / "open" / "pay-link.txt", root / "open" / "inner-link" / "memo.txt", root / "team" / "doc-link.txt"]


def test_a_followed_link_is_read_behind_the_folders_of_its_path_and_of_its_target(passable: Path) -> None:
    """Issue 72: a link in an open folder to a file, or to a folder, inside a folder only root may
    enter was indexed as public (the folders of the link's path alone). A reader must pass the
    folders of both paths (the URL shown is the link's): as the kernel decides for the link's
    path, and the same access when the fetch reads it again with the content."""
    root = passable / "root"
    links = linked_tree(root)
    files = FilesAgent("docs", FilesOptions(roots=[str(root)], follow_links=True))
    found = {reference.key: reference.access for reference in files.references(None)}
    assert not any(kernel_reads(uid, link) for uid in READERS for link in links[:2])
    assert [uid for uid in READERS if kernel_reads(uid, links[2])] == [1002]
    for link in links:
        listed = found[str(link)]
        assert listed is not None
        for uid in READERS:
            assert decide(listed, principals_of(uid)).granted == kernel_reads(uid, link), (link, uid, listed.fields())
        content = files.fetch(str(link), 0)
        assert content is not None and content.access == listed, link  # the next crawl finds it unchanged
    assert found[str(root / "open" / "doc.txt")].is_public  # type: ignore[union-attr]


def test_random_trees_as_the_kernel_decides(passable: Path) -> None:
    """Random modes, owners, named entries and masks on a file and its folders: the file's tokens
    admit a reader exactly when the kernel lets them read it (``setpriv``, ``test -r``), except in
    the documented corner, where they may refuse, never admit."""
    chooser = random.Random(55)
    outcomes: dict[object, int] = {}
    for case in range(60):
        root = passable / f"case{case}"
        (root / "a" / "b").mkdir(parents=True)
        root.chmod(0o755)
        paths = [root / "a", root / "a" / "b", root / "a" / "b" / "f.txt", root / "a" / "g.txt"]
        for path in paths:
            if path.suffix:
                path.write_text("text")
            os.chown(path, chooser.choice([0, 1001, 1002, 1003]), chooser.choice([0, 2000, 2001, 2002]))
            path.chmod(chooser.randrange(0o1000))
            named = chooser.sample(["u:1001", "u:1002", "u:1003", "g:2000", "g:2001", "g:2002"], chooser.randint(0, 3))
            if named:
                entries = ",".join(f"{entry}:{chooser.choice(['r', 'x', 'rx', '-'])}" for entry in named)
                subprocess.run(["setfacl", "-m", entries, str(path)], check=True)
                mask = chooser.choice([None, "-", "r", "x", "rx"])
                if mask:
                    subprocess.run(["setfacl", "-m", f"m::{mask}", str(path)], check=True)
        found = references(root)
        for path in (paths[2], paths[3]):
            above = [folder for folder in paths[:2] if folder in path.parents]
            for uid in READERS:
                granted = path.name in found and decide(found[path.name].access, principals_of(uid)).granted  # type: ignore[attr-defined]
                kernel = kernel_reads(uid, path)
                assert kernel or not granted, (case, path, uid)  # never admits whom the kernel refuses
                if kernel and not granted and uid != 65534 and listed_twice(uid, [*above, path]):
                    outcomes["the corner"] = outcomes.get("the corner", 0) + 1
                    continue
                outcomes[(granted, kernel)] = outcomes.get((granted, kernel), 0) + 1
                assert granted == kernel, (case, path, uid, found.get(path.name))
    # the trees are not trivial: readers admitted and refused, and the corner rare
    assert outcomes[(True, True)] > 50 and outcomes[(False, False)] > 50, outcomes
    assert outcomes.get("the corner", 0) < outcomes[(True, True)] / 5, outcomes


# --- issue 99 point 8: the ACL read from its extended attribute, without pylibacl ----------------

GETFACL_TAGS = {("user", False): posix.ACL_USER_OBJ, ("user", True): posix.ACL_USER, ("group", False): posix.ACL_GROUP_OBJ}
GETFACL_TAGS |= {("group", True): posix.ACL_GROUP, ("mask", False): posix.ACL_MASK, ("other", False): posix.ACL_OTHER}


def getfacl(path: Path) -> list[posix.PosixAclEntry]:
    """The access ACL as Debian's getfacl prints it (numeric ids, no effective rights)."""
    printed = subprocess.run(["getfacl", "-a", "-c", "-n", "-E", str(path)], capture_output=True, text=True, check=True)
    entries = []
    for line in printed.stdout.split():
        tag, qualifier, mode = line.split(":")
        perm = sum(bit for bit, letter in zip((4, 2, 1), "rwx", strict=True) if letter in mode)
        entries.append(posix.PosixAclEntry(GETFACL_TAGS[tag, bool(qualifier)], int(qualifier) if qualifier else None, perm))
    return entries


@pytest.mark.parametrize(
    "acl",
    [
        None,  # no extended ACL: the permission bits as one
        "u:3001:r",
        "u:3001:rwx,u:3002:-,g:4001:rw,g:4002:x,m::rx,o::r",
        "g:4001:r,m::-",  # a mask that grants nothing
        "u:0:r,u:4294967294:rx,g:0:rwx,o::-",  # the owner and group named again, the highest id
    ],
)
def test_the_acl_read_from_its_attribute_is_getfacls(tmp_path: Path, acl: str | None) -> None:
    """The entries decoded from ``system.posix_acl_access`` are libacl's (getfacl's), on a file
    and on a folder (with a default ACL beside, which is not read), by path and by descriptor."""
    folder = tmp_path / "folder"
    folder.mkdir()
    subprocess.run(["setfacl", "-d", "-m", "u:5000:r", str(folder)], check=True)
    for path in (made(tmp_path / "file", 0o640, acl=acl), made(folder, 0o751, acl=acl)):
        expected = getfacl(path)
        assert posix.read_acl(str(path)) == expected, path
        descriptor = os.open(path, os.O_RDONLY)
        try:
            assert posix.read_acl(descriptor) == expected
        finally:
            os.close(descriptor)
        if acl is None:
            with pytest.raises(OSError) as none:
                os.getxattr(path, posix.ACL_XATTR)
            assert none.value.errno == errno.ENODATA
        else:
            assert posix.acl_entries(os.getxattr(path, posix.ACL_XATTR)) == expected


HEADER = (2).to_bytes(4, "little")


def entry(tag: int, perm: int, qualifier: int = 0xFFFFFFFF) -> bytes:
    return tag.to_bytes(2, "little") + perm.to_bytes(2, "little") + qualifier.to_bytes(4, "little")


BASE = entry(posix.ACL_USER_OBJ, 6) + entry(posix.ACL_GROUP_OBJ, 4) + entry(posix.ACL_OTHER, 4)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x02\x00",  # shorter than the header
        HEADER + BASE + b"\x01\x00\x06",  # a part of an entry
        (1).to_bytes(4, "little") + BASE,  # another version
        HEADER + BASE + entry(0x40, 4),  # an unknown tag
        HEADER + entry(posix.ACL_USER_OBJ, 0x8) + BASE[8:],  # an unknown permission bit
        HEADER + BASE[:16],  # no entry for other
        HEADER + BASE + entry(posix.ACL_OTHER, 4),  # other twice
        HEADER + BASE + entry(posix.ACL_USER, 4, 3001),  # a named user and no mask
        HEADER + BASE + entry(posix.ACL_MASK, 4) + entry(posix.ACL_MASK, 4),  # two masks
        HEADER + BASE + entry(posix.ACL_USER, 4, 3001) + entry(posix.ACL_USER, 0, 3001) + entry(posix.ACL_MASK, 4),
        HEADER + BASE * 2730,  # as long as an attribute may be (64 KiB), and not an ACL
    ],
)
def test_an_attribute_that_is_not_an_acl_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError, match="ACL"):
        posix.acl_entries(data)


def test_an_attribute_that_is_not_an_acl_makes_the_file_unreadable_never_public(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Malformed bytes in place of the ACL are an ACL that cannot be read (status 927), as an
    attribute that cannot be read is."""
    path = made(tmp_path / "a", 0o644)
    assert access_of(path).is_public
    monkeypatch.setattr(os, "getxattr", lambda *_args, **_kwargs: HEADER + BASE[:16])
    with pytest.raises(AccessUnreadable, match="the ACL of .*a cannot be read: an ACL without exactly one entry"):
        access_of(path)


def test_an_acl_is_read_without_pylibacl() -> None:
    """pylibacl had to be compiled (the quickstart installed gcc for it): nothing imports it."""
    code = (
        "import sys; sys.modules['posix1e'] = None; sys.modules['pylibacl'] = None\n"
        "import os, tempfile\nfrom searchcrawl.access import posix\nfrom searchcrawl.agents import files\n"
        "path = tempfile.mkstemp()[1]; os.chmod(path, 0o604)\n"
        "print(sorted(posix.file_access(path, os.stat(path), path).fields()['access_allow'])); os.unlink(path)\n"
    )
    environ = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=environ)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[0].startswith("['public', 'uid:")
