"""The ``files`` source type: the documents in local folders (a mounted share is a local folder).

A ``[files]`` table names the ``roots`` (absolute folder paths) and which files under them are
crawled: ``include``/``exclude`` globs (a pattern with a ``/`` matches the path relative to its
root, such as ``reports/**/*.pdf``; one without matches the file name, such as ``*.tmp``; fnmatch
wildcards, case-sensitive as the file system is: ``*`` also crosses ``/``, and ``**/`` may also
match no folder at all; exclusion wins, and a folder that an exclude pattern matches is not even
opened), ``max_depth`` (0: only the files directly in a root), ``hidden`` (files and folders
whose names start with ``.`` are skipped unless true) and ``follow_links`` (symbolic links are
skipped unless true; when true, a link is followed only when its real target is inside one of the
roots, never outside, and only when that real path passes the same rules (hidden, exclude,
include) as if it were reached without the link, as does every file and folder reached through
it: a link cannot bring in an excluded or hidden file; a link back to a folder being walked is
not followed again).

Folders more than 256 levels below a root are not walked: the walk holds one open descriptor per
level (a deeper tree would exhaust the open-file limit and fail every crawl). Such a folder is
skipped with a WARNING, and its files are not indexed.

Only regular files are crawled (never FIFOs, devices or sockets). A document's URL is the file's
``file://`` URL; its path, folder, file name, size, owner and modification time are indexed as
``path_s``, ``folder_s``, ``file_name_s``, ``size_l``, ``owner_s`` (the user name, or the uid when
the system knows no such user) and ``last_modified``; the source's ``attributes`` mapping may map
``path``, ``folder``, ``file_name``, ``extension`` (lower-case, without the dot) and ``owner``. The
content type comes from the file name's extension (``application/octet-stream`` when unknown).
A link followed (``follow_links``) gives its files their paths through the link, so a file reached
both ways is two documents (the duplicate detection still applies).

Who may read a file (``Reference.access``, ``gives_access``): its read permission and the search
permission of every folder from its root down, from their POSIX permissions and access ACLs
(searchcrawl/access/posix.py), each folder's read once a listing; a file or folder whose ACL
cannot be read gives ``access_unreadable`` (the document is not indexed: status 927). A change of
permissions alone changes the token (its inode change time): the file is read again and its new
access indexed. Through a followed link, the folders of the link's path AND those its
target lies in (from the root that holds its real path down): a reader must pass both, as the
URL shown is the link's and the kernel passes the target's folders (a link in an open folder
into a 0700 folder is no way in). When a file is read, its access is read again, after the
text, from the descriptor the text was read from and from its folders then
(``Content.access``): that is the one indexed, not the listing's (a file made private and
rewritten in between is indexed private); the size and time indexed are the listing's until
the next crawl, which reads it again: when what is read is not what was listed (its token,
``Content.token``, another), no token is indexed (a 304 on the listing's token would put the
listed file's access on the text read: a link repointed between listing and fetch, and back).

Changes: a file's token is its size, modification time (nanoseconds), inode number and inode
change time: a maintenance crawl reads again only the files whose size, modification time or
permissions changed, or that are another file (renamed over, a link repointed, a new file in a
freed inode: size and time alone can be set to another file's, the change time cannot).
Deletions: every crawl lists the roots completely; a file it does not list (deleted, moved, renamed, newly excluded or hidden) leaves
the index. A root that is missing, not a folder or unreadable fails the crawl and nothing is removed,
so a share that is not mounted does not empty the index. But an EMPTY mount point (the share not
mounted, its mount point folder still there) cannot be told from an empty folder: its documents
would be removed (the deletion guard still applies). Name a folder INSIDE the share as the root
(``/mnt/share/documents``, not ``/mnt/share``): when the share is not mounted, that root is missing.
A folder the crawler may not read is skipped (a DEBUG line), and its files leave the index; any
other error reading a folder (an I/O error, a stale share) fails the crawl, and nothing is removed.
A file name that is not UTF-8 is kept as it is on disk in the file's key and URL, and shown with
U+FFFD in the indexed fields.

Hostile trees: when ``follow_links`` is false, every folder and the file itself are opened without
following links (``O_NOFOLLOW``, relative to their parent), so a folder or file swapped for a link
after the listing is never read; whatever it follows, a fetch first names the file without
opening it (``O_PATH``), and opens it for reading (through /proc/self/fd) only when it is a
regular file whose real path is inside a root's real path and that passes the same rules as the
listing: a device, FIFO or socket swapped in is never opened. It reads at most the size limit
(plus one byte). A file put in place of another after the listing is indexed with its own
access (read from it); one put in its place while it is read (another file at its path when
the access is read) is answered gone, and the next crawl reads what is there.
"""

from __future__ import annotations

import errno
import fnmatch
import functools
import logging
import mimetypes
import os
import pathlib
import posixpath
import pwd
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

from pydantic import BaseModel, Field, field_validator, model_validator

from searchcrawl.access.posix import SEARCH, Gate, file_access, gate, within_folder
from searchcrawl.access.tokens import Access, AccessUnreadable
from searchcrawl.agents.base import Agent, AgentError, Content, DocumentTooLarge, Reference
from searchcrawl.content.extract import decode_path
from searchcrawl.rules.tables import RuleTable

logger = logging.getLogger(__name__)

MAX_FOLDER_DEPTH = 256  # folders below a root walked: the walk holds a descriptor per level
MAX_DOUBLE_STARS = 4  # "**/" per pattern: each may match no folder, so 2**n regular expressions
READ_CHUNK = 1 << 20
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC  # a FIFO must never block the fetch
_PATH = os.O_PATH | os.O_CLOEXEC  # names a file without opening it: its type and place are checked first
_GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)  # vanished, or a link where none may be


def _root(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected an absolute folder path such as '/srv/documents', got {value!r}")
    if "\x00" in value:
        raise ValueError(f"a path cannot contain a NUL character, got {value!r}")
    if not value.startswith("/"):
        raise ValueError(f"expected an absolute folder path (starting with '/'), got {value!r}")
    parts = [part for part in value.split("/") if part not in ("", ".")]
    if ".." in parts:
        # "a/../b" is not "b" on disk when "a" is a link: say the folder meant
        raise ValueError(f"expected a path without '..' (name the folder itself), got {value!r}")
    return "/" + "/".join(parts)


def _pattern(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a non-empty glob such as '*.pdf' or 'reports/**/*.pdf', got {value!r}")
    if "\x00" in value:
        raise ValueError(f"a pattern cannot contain a NUL character, got {value!r}")
    if value.startswith("/"):
        raise ValueError(f"a path pattern is relative to its root: expected no leading '/', got {value!r}")
    if len(_DOUBLE_STAR.findall(value)) > MAX_DOUBLE_STARS:
        raise ValueError(f"expected at most {MAX_DOUBLE_STARS} '**/' in a pattern, got {value!r}")
    return value


class TreeRules(RuleTable):
    """Which files of a tree of folders are crawled: the rules a ``[files]`` and an ``[smb]``
    table share (``out_of_scope``)."""

    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    max_depth: int | None = Field(default=None, ge=0)
    hidden: bool = False

    @field_validator("include", "exclude")
    @classmethod
    def _patterns(cls, values: list[str]) -> list[str]:
        return list(dict.fromkeys(_pattern(value) for value in values))


class FilesOptions(TreeRules):
    """The ``[files]`` table of a source of type ``files``."""

    roots: list[str] = Field(min_length=1)
    follow_links: bool = False

    @field_validator("roots")
    @classmethod
    def _roots(cls, values: list[str]) -> list[str]:
        return list(dict.fromkeys(_root(value) for value in values))

    @model_validator(mode="after")
    def _disjoint(self) -> FilesOptions:
        # a file under two roots would be listed twice, as two documents
        for root in self.roots:
            for other in self.roots:
                if other != root and _inside(root, other):
                    raise ValueError(f"root {root!r} is inside root {other!r}: list {other!r} alone")
        return self

    def local_paths(self) -> list[tuple[str, str]]:
        """The folders the source reads, by key (config/own_places.py refuses the installation's own)."""
        return [("roots", root) for root in self.roots]


# --- scope: one decision for the listing and the fetch ---------------------------------------

_DOUBLE_STAR = re.compile(r"(?:^|(?<=/))\*\*/")


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    """fnmatch's wildcards, except that each ``**/`` may also match no folder at all."""
    pieces = _DOUBLE_STAR.split(pattern)
    variants = [pieces[0]]
    for piece in pieces[1:]:
        variants = [v + "**/" + piece for v in variants] + [v + piece for v in variants]
    return re.compile("|".join(fnmatch.translate(variant) for variant in variants))


def _matches(pattern: str, rel: str, name: str) -> bool:
    return _compiled(pattern).match(rel if "/" in pattern else name) is not None


def out_of_scope(rel: str, folder: bool, options: TreeRules) -> str | None:
    """Why the file (or folder) at ``rel`` (relative to its root, ``/``-separated) is not crawled,
    or None when it is. A folder is judged by hidden, depth and exclude (it is descended when it
    may hold a file in scope); include applies to files only."""
    name = rel.rsplit("/", 1)[-1]
    if not options.hidden and name.startswith("."):
        return "hidden"
    depth = rel.count("/") + (1 if folder else 0)  # the depth of the files in it, for a folder
    if depth > MAX_FOLDER_DEPTH:
        return f"deeper than {MAX_FOLDER_DEPTH} folders (the crawler's bound)"
    if options.max_depth is not None and depth > options.max_depth:
        return f"deeper than max_depth {options.max_depth}"
    for pattern in options.exclude:
        # "archive/**" (or "archive/") also matches the folder "archive" itself: not opened
        if _matches(pattern, rel, name) or (folder and "/" in pattern and _matches(pattern, rel + "/", name)):
            return f"excluded by {pattern!r}"
    if not folder and options.include and not any(_matches(pattern, rel, name) for pattern in options.include):
        return "matches no include pattern"
    return None


def path_out_of_scope(rel: str, options: TreeRules) -> str | None:
    """Why the file at ``rel`` would not be listed: it, or a folder on its way from the root."""
    parts = rel.split("/")
    for end in range(1, len(parts)):
        folder = "/".join(parts[:end])
        reason = out_of_scope(folder, True, options)
        if reason:
            return f"folder {folder!r} {reason}"
    return out_of_scope(rel, False, options)


def target_out_of_scope(real: str, folder: bool, reals: list[str], options: FilesOptions) -> str | None:
    """Why a followed link's real target (or a file or folder reached through one) would not be
    listed had it been reached without the link: ``path_out_of_scope`` on its real path relative
    to the root it is in (hidden, exclude and include; max_depth not, as the path through the
    link is judged by it), or None. So a link cannot bring an excluded or hidden file in."""
    for root in reals:
        if _inside(real, root):
            rel = real[len(root.rstrip("/")) + 1 :] if real != root else ""
            break
    else:
        return "its real path is outside the roots"
    if not rel:
        return None
    rules = options.model_copy(update={"max_depth": None})
    parts = rel.split("/")
    for end in range(1, len(parts) + (1 if folder else 0)):
        reason = out_of_scope("/".join(parts[:end]), True, rules)
        if reason:
            return f"its real path {_shown(real)!r}: folder {'/'.join(parts[:end])!r} {reason}"
    reason = None if folder else out_of_scope(rel, False, rules)
    return f"its real path {_shown(real)!r} {reason}" if reason else None


# --- helpers -----------------------------------------------------------------------------------


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _shown(path: str) -> str:
    """A path as text for Solr and logs, decoded name by name as the title is (content/extract.py's
    ``decode_path``: UTF-8, else windows-1252); the key keeps the bytes, so the file is still found."""
    return decode_path(os.fsencode(path))


def file_reference(
    *,
    key: str,
    token: str,
    path: str,
    folder: str,
    name: str,
    size: int,
    modified: datetime | None,
    access: Access | None,
    unreadable: str | None,
    owner: str = "",
    display_url: str = "",
) -> Reference:
    """A file's reference, the same for a folder's files and a share's: its path, folder, name,
    size, owner and time as Solr fields (``path_s`` ...) and as metadata the attributes mapping
    may map (``path``, ``folder``, ``file_name``, ``extension``, ``owner``)."""
    fields: dict[str, Any] = {"file_name_s": name, "path_s": path, "folder_s": folder, "size_l": size}
    if owner:
        fields["owner_s"] = owner
    if modified is not None:
        fields["last_modified"] = modified.strftime("%Y-%m-%dT%H:%M:%SZ")  # as extract.http_date_to_iso
    if display_url:
        fields["display_url"] = display_url
    extension = posixpath.splitext(name)[1][1:].lower()
    metadata = {"file_name": name, "path": path, "folder": folder, "extension": extension, "owner": owner}
    return Reference(
        key=key,
        token=token,
        modified=modified,
        fields=fields,
        metadata={item: value for item, value in metadata.items() if value},
        access=access,
        access_unreadable=unreadable,
    )


@functools.lru_cache(maxsize=1024)
def owner_name(uid: int) -> str:
    """The user name of ``uid``, or the uid as text when the system does not know it (a share's
    files may belong to users of another machine)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _modified(mtime_ns: int) -> datetime | None:
    try:
        return datetime.fromtimestamp(mtime_ns / 1e9, UTC)
    except (OverflowError, OSError, ValueError):  # a hostile or broken timestamp
        return None


def _token(info: os.stat_result) -> str:
    """A file's change token: its size, modification time (nanoseconds), inode number and inode
    change time. Size and time are the owner's to set (utime): without the inode, another file
    given them, put at the path (renamed over it, or a link repointed to it), would be a 304 that
    puts its access on the text indexed for the first. Without the change time, which nobody can
    set, the same holds for another file given the inode number a deleted one freed (the file
    system reuses them). A change of permissions alone changes the change time too: such a file is
    read again, and its access re-indexed with it (its text's checksum decides nothing more)."""
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ino}:{info.st_ctime_ns}"


def _fd_path(fd: int) -> str | None:
    """The real path of an open file or folder (Linux' /proc), or None when unknown."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def _reopen(fd: int, real: str, info: os.stat_result) -> int:
    """The file an ``O_PATH`` descriptor names, opened for reading: through Linux' /proc (the
    very file), else by its real path without following a link, and only if it is the same file."""
    try:
        return os.open(f"/proc/self/fd/{fd}", _FILE)
    except FileNotFoundError:
        if os.path.isdir("/proc/self/fd"):
            raise
    reader = os.open(real, _FILE | os.O_NOFOLLOW)
    now = os.fstat(reader)
    if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
        os.close(reader)
        raise FileNotFoundError(errno.ENOENT, "replaced while opened")
    return reader


@dataclass(frozen=True)
class _Pass:
    """A folder a reader passes to reach a file: its real path (one folder is one level, however
    often a file's paths pass it), its name as shown, and its search permission (``gate``), or
    why that cannot be read (``unreadable``)."""

    real: str
    shown: str
    gate: Gate | None
    unreadable: str | None = None


def _pass_of(fd: int, real: str, shown: str) -> _Pass:
    """The search permission of the open folder ``fd``, read now."""
    try:
        return _Pass(real, shown, gate(fd, os.fstat(fd), SEARCH, shown))
    except AccessUnreadable as exc:
        return _Pass(real, shown, None, str(exc))
    except OSError as exc:
        return _Pass(real, shown, None, f"the ACL of {shown} cannot be read: {exc}")


def _real_passes(real: str, reals: list[str], identity: os.stat_result) -> tuple[_Pass, ...]:
    """The folders a followed link's target lies in (``real``, its real path): from the root
    whose real path holds it down to its own folder, each opened relative to its parent without
    following a link, and its search permission read now. The target is reached through them
    too, so a link cannot open a folder nobody may enter. One that cannot be opened (gone since,
    a link now, refused) is unreadable: the files below the link are not indexed (927), and so
    is a target no longer found in the last folder opened (``identity``: its ``stat``): a folder
    on its path renamed meanwhile, and another put in its place, is not the one it lies in."""
    root = next(root for root in reals if _inside(real, root))
    if real == root:
        return ()
    names = real[len(root.rstrip("/")) + 1 :].split("/")[:-1]
    path = root
    try:
        fd = os.open(root, _DIRECTORY)
    except OSError as exc:
        return (_Pass(root, _shown(root), None, f"the folder {_shown(root)} cannot be read: {exc.strerror}"),)
    passes = [_pass_of(fd, root, _shown(root))]
    try:
        for name in names:
            path = f"{path.rstrip('/')}/{name}"
            try:
                child = os.open(name, _DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                passes.append(_Pass(path, _shown(path), None, f"the folder {_shown(path)} cannot be read: {exc.strerror}"))
                break
            os.close(fd)
            fd = child
            passes.append(_pass_of(fd, path, _shown(path)))
        else:
            try:
                found = os.stat(real.rsplit("/", 1)[1], dir_fd=fd, follow_symlinks=False)
            except OSError:
                found = None
            if found is None or (found.st_dev, found.st_ino) != (identity.st_dev, identity.st_ino):
                passes.append(_Pass(real, _shown(real), None, f"{_shown(real)} was moved while its folders were read"))
    finally:
        os.close(fd)
    return tuple(passes)


def _passes_of(stack: list[_Folder]) -> list[_Pass]:
    """The folders passed to reach a file in the last folder of ``stack``, from the root down."""
    return [passed for folder in stack for passed in (*folder.above, folder.own)]


def _passed(fd: int, expected: str, reals: list[str], passes: list[_Pass]) -> str:
    """The real path of the folder or file ``fd``, reached at ``expected`` (its folder's real
    path and its name); when it is elsewhere (a followed link), the folders its target lies in
    are added to ``passes``, as the listing adds them (a target outside the roots: unreadable)."""
    real = _fd_path(fd) or expected
    if real != expected:
        if any(_inside(real, root) for root in reals):
            passes.extend(_real_passes(real, reals, os.fstat(fd)))
        else:
            passes.append(_Pass(real, _shown(real), None, f"{_shown(real)} is outside the roots"))
    return real


def _behind(own: Access, passes: Iterable[_Pass]) -> Access:
    """A file's own access behind the folders it is reached through (``passes``, from the root
    down; a folder passed twice, on a link's path and on its target's, counts once), nearest
    first. AccessUnreadable when one's permission could not be read."""
    unique: dict[str, _Pass] = {}
    for passed in passes:
        unique.setdefault(passed.real, passed)
    access = own
    for passed in reversed(unique.values()):
        if passed.gate is None:
            raise AccessUnreadable(passed.unreadable or f"the ACL of {passed.shown} cannot be read")
        access = within_folder(access, passed.gate, passed.shown)
    return access


@dataclass
class _Folder:
    """A folder on the current descent path: its open descriptor and its names still to visit."""

    fd: int
    rel: str
    real: str
    names: Iterator[str]
    linked: bool  # reached through a followed link: its real path is judged too
    own: _Pass  # who may pass through it (its search permission, read once a listing)
    # reached through a followed link: the folders its target lies in, from a root down (read then)
    above: tuple[_Pass, ...] = ()


class FilesAgent(Agent):
    """Lists the regular files under the roots; the key of a file is its absolute path as under
    its root (links not resolved)."""

    scheme = "file"
    Options = FilesOptions
    gives_access = True  # each file's POSIX permissions and ACL (searchcrawl/access/posix.py)

    def __init__(self, source: str, options: BaseModel) -> None:
        if not isinstance(options, FilesOptions):
            raise TypeError(f"expected FilesOptions, got {type(options).__name__}")
        super().__init__(source, options)
        self.files = options
        if not mimetypes.inited:  # read the system's types once, before fetches in several threads
            mimetypes.init()

    # -- URLs ---------------------------------------------------------------------------------

    def url_for(self, key: str) -> str:
        """The file's ``file://`` URL (bytes that are not UTF-8 percent-encoded as they are)."""
        return pathlib.PurePosixPath(key).as_uri()

    def key_of(self, url: str) -> str | None:
        """The path of a ``file://`` URL under one of the roots, or None."""
        parts = urlsplit(url)
        if parts.scheme != "file" or parts.netloc or parts.query or parts.fragment:
            return None
        path = os.fsdecode(unquote_to_bytes(parts.path))
        return path if self._locate(path) else None

    def refusal(self, key: str) -> str | None:
        """The listing's rules on one path, for `scrapy explain`: ``path_out_of_scope`` on the path
        as listed, and, when links are followed and it runs through one, ``target_out_of_scope``
        on its real path (links are never followed otherwise: the listing skips them)."""
        located = self._locate(key)
        if located is None:
            return "not below a root"
        reason = path_out_of_scope(located[1], self.files)
        if reason is not None or not self.files.follow_links:
            return reason
        real = os.path.realpath(key)
        if real == key:
            return None
        reals = [os.path.realpath(root) for root in self.files.roots]
        return target_out_of_scope(real, False, reals, self.files)

    def _locate(self, key: str) -> tuple[str, str] | None:
        """The root a key is under and its path relative to it; None for anything else."""
        if "\x00" in key or not key.startswith("/") or posixpath.normpath(key) != key:
            return None
        for root in self.files.roots:
            if key.startswith(root.rstrip("/") + "/"):
                return root, key[len(root.rstrip("/")) + 1 :]
        return None

    # -- listing ------------------------------------------------------------------------------

    def _real_roots(self) -> dict[str, str]:
        """Each root's real path; AgentError when one is missing or not a folder (nothing is
        listed then, so nothing is removed: a share that is not mounted keeps its documents)."""
        reals: dict[str, str] = {}
        for root in self.files.roots:
            try:
                mode = os.stat(root).st_mode
            except FileNotFoundError:
                raise AgentError(f"root {root!r} does not exist (a share not mounted?)") from None
            except OSError as error:
                raise AgentError(f"root {root!r} cannot be read: {error.strerror}") from None
            if not stat.S_ISDIR(mode):
                raise AgentError(f"root {root!r} is not a folder")
            reals[root] = os.path.realpath(root)
        for root, real in reals.items():
            for other, other_real in reals.items():
                if other != root and _inside(real, other_real):
                    raise AgentError(f"root {root!r} is {real!r} on disk, inside root {other!r}: list {other!r} alone")
        return reals

    def references(self, since: datetime | None) -> Iterator[Reference]:
        """Every regular file in scope, root by root, each folder's names in sorted order. Only
        the folders on the current descent path are held (an open descriptor and their names)."""
        reals = self._real_roots()
        for root, real in reals.items():
            count = 0
            for reference in self._walk(root, real, list(reals.values())):
                count += 1
                yield reference
            logger.info("files %s: %d files listed under %r", self.source, count, root)

    def _walk(self, root: str, root_real: str, reals: list[str]) -> Iterator[Reference]:
        try:
            fd = os.open(root, _DIRECTORY)
        except OSError as error:
            raise AgentError(f"root {root!r} cannot be read: {error.strerror}") from None
        names = self._names(fd, root)
        if names is None:
            os.close(fd)
            raise AgentError(f"root {root!r} cannot be read: permission denied")
        stack = [_Folder(fd, "", root_real, names, False, _pass_of(fd, root_real, _shown(root)))]
        try:
            while stack:
                folder = stack[-1]
                name = next(folder.names, None)
                if name is None:
                    os.close(stack.pop().fd)
                    continue
                rel = f"{folder.rel}/{name}" if folder.rel else name
                path = f"{root.rstrip('/')}/{rel}"
                entry = self._entry(folder, name, path, reals)
                if entry is None:
                    continue
                link, info, real = entry
                if link or folder.linked:  # through a link: the real path must pass the rules too
                    real = real or f"{folder.real.rstrip('/')}/{name}"
                    reason = target_out_of_scope(real, stat.S_ISDIR(info.st_mode), reals, self.files)
                    if reason:
                        logger.debug("files %s: %r skipped: %s", self.source, _shown(path), reason)
                        continue
                if stat.S_ISDIR(info.st_mode):
                    child = self._descend(folder, name, rel, path, link, reals, stack)
                    if child is not None:
                        stack.append(child)
                elif not stat.S_ISREG(info.st_mode):
                    logger.debug("files %s: %r skipped: not a regular file", self.source, _shown(path))
                elif reason := out_of_scope(rel, False, self.files):
                    logger.debug("files %s: %r skipped: %s", self.source, _shown(path), reason)
                elif (reference := self._listed(folder, name, path, info, link, real, reals, stack)) is not None:
                    yield reference
        finally:
            for folder in stack:  # the consumer stopped early, or the listing failed
                os.close(folder.fd)

    def _names(self, fd: int, path: str) -> Iterator[str] | None:
        """A folder's names, sorted (a listing in a stable order); None when it may not be read."""
        try:
            with os.scandir(fd) as entries:
                return iter(sorted(entry.name for entry in entries))
        except PermissionError:
            logger.debug("files %s: folder %r skipped: permission denied", self.source, _shown(path))
            return None

    def _entry(self, folder: _Folder, name: str, path: str, reals: list[str]) -> tuple[bool, os.stat_result, str | None] | None:
        """Whether the name is a link, what it is (the link's target when links are followed)
        and a followed link's real path; None when it is skipped: a link not followed, a target
        outside the roots, a file that vanished."""
        try:
            info = os.stat(name, dir_fd=folder.fd, follow_symlinks=False)
            if not stat.S_ISLNK(info.st_mode):
                return False, info, None
            if not self.files.follow_links:
                logger.debug("files %s: %r skipped: a symbolic link (follow_links is false)", self.source, _shown(path))
                return None
            real = os.path.realpath(path)
            if not any(_inside(real, root) for root in reals):
                logger.debug("files %s: link %r skipped: its target is outside the roots", self.source, _shown(path))
                return None
            return True, os.stat(name, dir_fd=folder.fd), real
        except OSError as error:
            if error.errno not in _GONE and not isinstance(error, PermissionError):
                raise AgentError(f"{_shown(path)!r} cannot be read: {error.strerror}") from None
            logger.debug("files %s: %r skipped: %s", self.source, _shown(path), error.strerror)
            return None

    def _descend(
        self, parent: _Folder, name: str, rel: str, path: str, link: bool, reals: list[str], stack: list[_Folder]
    ) -> _Folder | None:
        """The folder to walk next, opened relative to its parent (without following a link
        unless it is one that is followed); None when it is skipped."""
        reason = out_of_scope(rel, True, self.files)
        if reason:
            deep = rel.count("/") + 1 > MAX_FOLDER_DEPTH  # files lost: the admin is told
            (logger.warning if deep else logger.debug)("files %s: folder %r not descended: %s", self.source, _shown(path), reason)
            return None
        try:
            fd = os.open(name, _DIRECTORY if link else _DIRECTORY | os.O_NOFOLLOW, dir_fd=parent.fd)
        except OSError as error:
            if error.errno not in _GONE and not isinstance(error, PermissionError):
                raise AgentError(f"folder {_shown(path)!r} cannot be read: {error.strerror}") from None
            logger.debug("files %s: folder %r skipped: %s", self.source, _shown(path), error.strerror)
            return None
        real = (_fd_path(fd) or os.path.realpath(path)) if link else f"{parent.real.rstrip('/')}/{name}"
        if link and not any(_inside(real, root) for root in reals):
            reason = "its target is outside the roots"
        elif link and any(folder.real == real for folder in stack):
            reason = f"a loop back to {_shown(real)!r}"
        if reason:
            os.close(fd)
            logger.debug("files %s: link %r not followed: %s", self.source, _shown(path), reason)
            return None
        names = self._names(fd, path)
        if names is None:
            os.close(fd)
            return None
        above = _real_passes(real, reals, os.fstat(fd)) if link else ()
        return _Folder(fd, rel, real, names, link or parent.linked, _pass_of(fd, real, _shown(path)), above)

    def _own_access(self, file: str | int, info: os.stat_result, shown: str) -> Access:
        """A file's own level (its read permission: searchcrawl/access/posix.py), by its path
        when listed, by the descriptor its content is read from when fetched. AccessUnreadable."""
        return file_access(file, info, shown)

    def _access(
        self, file: str | int, info: os.stat_result, shown: str, passes: Iterable[_Pass]
    ) -> tuple[Access | None, str | None]:
        """Who may read the file: its own read permission behind the search permission of every
        folder it is reached through (``passes``: from its root down, and, through a followed
        link, the folders of the link's target too), or why that cannot be read."""
        try:
            return _behind(self._own_access(file, info, shown), passes), None
        except AccessUnreadable as exc:
            logger.debug("files %s: %r not indexed: %s", self.source, shown, exc)
            return None, str(exc)

    def _listed(
        self,
        folder: _Folder,
        name: str,
        path: str,
        info: os.stat_result,
        link: bool,
        real: str | None,
        reals: list[str],
        stack: list[_Folder],
    ) -> Reference | None:
        """A regular file's reference: its token and its own access read from one file, named by
        an ``O_PATH`` descriptor (its ACL through /proc), not by its path again: a file renamed
        over it, or a link repointed, between the stat and the ACL read gave one file's token
        with another's access (a private file's token with a public one's access: a 304 that
        puts the public access on the private text). A followed link repointed since is judged
        on where it points now. None when it is gone, or no longer a file in scope."""
        try:
            fd = os.open(name, _PATH if link else _PATH | os.O_NOFOLLOW, dir_fd=folder.fd)
        except OSError as error:
            if error.errno not in _GONE and not isinstance(error, PermissionError):
                raise AgentError(f"{_shown(path)!r} cannot be read: {error.strerror}") from None
            logger.debug("files %s: %r skipped: %s", self.source, _shown(path), error.strerror)
            return None
        try:
            now = os.fstat(fd)
            if not stat.S_ISREG(now.st_mode):
                logger.debug("files %s: %r skipped: not a regular file", self.source, _shown(path))
                return None
            if link and (target := _fd_path(fd) or real) != real:  # repointed since: judged again
                reason = target_out_of_scope(target, False, reals, self.files) if target else "its target is unknown"
                if reason:
                    logger.debug("files %s: %r skipped: %s", self.source, _shown(path), reason)
                    return None
                real = target
            # a followed link to a file: the folders its target lies in are passed too
            above = _real_passes(real, reals, now) if link and real else ()
            named = f"/proc/self/fd/{fd}" if os.path.isdir("/proc/self/fd") else path
            return self._reference(path, now, [*_passes_of(stack), *above], named)
        finally:
            os.close(fd)

    def _reference(self, path: str, info: os.stat_result, passes: list[_Pass], named: str | None = None) -> Reference:
        """``named``: the path its ACL is read by (the file's /proc descriptor), else ``path``."""
        shown = _shown(path)
        access, unreadable = self._access(named or path, info, shown, passes)
        folder, name = shown.rsplit("/", 1)
        return file_reference(
            key=path,
            token=_token(info),
            path=shown,
            folder=folder or "/",
            name=name,
            size=info.st_size,
            modified=_modified(info.st_mtime_ns),
            owner=owner_name(info.st_uid),
            access=access,
            unreadable=unreadable,
        )

    # -- fetching -----------------------------------------------------------------------------

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        """The file's bytes, when the listing would list it now; None when it is gone (or is no
        longer a regular file in scope)."""
        located = self._locate(key)
        if located is None:
            logger.debug("files %s: fetch of %r refused: not under a root", self.source, _shown(key))
            return None
        root, rel = located
        reason = path_out_of_scope(rel, self.files)
        if reason:
            logger.debug("files %s: fetch of %r refused: %s", self.source, _shown(key), reason)
            return None
        try:
            fd = self._open(root, rel)
            try:
                return self._read(fd, root, rel, key, max_bytes)
            finally:
                os.close(fd)
        except OSError as error:
            if error.errno in _GONE:
                logger.debug("files %s: %r is gone: %s", self.source, _shown(key), error.strerror)
                return None
            raise AgentError(f"{_shown(key)!r} cannot be read: {error.strerror}") from None

    def _open(self, root: str, rel: str, reals: list[str] | None = None, passes: list[_Pass] | None = None) -> int:
        """The file named by an ``O_PATH`` descriptor: nothing is opened for reading before its
        type and real path are checked (opening a device may have effects). Every folder from
        the root down is opened relative to its parent, and so is the file, without following a
        link unless ``follow_links`` is true (ELOOP if one is; a link is then no regular file).
        With ``passes`` (and the roots' real paths), each folder's search permission is read on
        the way and added to it, as the listing reads them: a folder reached through a followed
        link, and a file that is one, add the folders their target lies in (``_real_passes``)."""
        nofollow = 0 if self.files.follow_links else os.O_NOFOLLOW
        *folders, name = rel.split("/")
        fd = os.open(root, _DIRECTORY)
        try:
            path = real = root
            if passes is not None:
                real = os.path.realpath(root)
                passes.append(_pass_of(fd, real, _shown(root)))
            for folder in folders:
                child = os.open(folder, _DIRECTORY | nofollow, dir_fd=fd)
                os.close(fd)
                fd = child
                path = f"{path.rstrip('/')}/{folder}"
                if passes is not None:
                    real = _passed(fd, f"{real.rstrip('/')}/{folder}", reals or [], passes)
                    passes.append(_pass_of(fd, real, _shown(path)))
            file = os.open(name, _PATH | nofollow, dir_fd=fd)
            if passes is not None:
                _passed(file, f"{real.rstrip('/')}/{name}", reals or [], passes)
            return file
        finally:
            os.close(fd)

    def _read(self, fd: int, root: str, rel: str, key: str, max_bytes: int) -> Content | None:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            logger.debug("files %s: %r refused: not a regular file", self.source, _shown(key))
            return None
        real = _fd_path(fd) or os.path.realpath(key)
        reals = [os.path.realpath(root) for root in self.files.roots]
        if not any(_inside(real, root) for root in reals):
            logger.debug("files %s: %r refused: its real path is outside the roots", self.source, _shown(key))
            return None
        if self.files.follow_links and (reason := target_out_of_scope(real, False, reals, self.files)):
            logger.debug("files %s: %r refused: %s", self.source, _shown(key), reason)
            return None
        if max_bytes and info.st_size > max_bytes:
            raise DocumentTooLarge(f"{_shown(key)!r} has {info.st_size} bytes, more than {max_bytes}")
        reader = _reopen(fd, real, info)
        try:
            body = _read_bytes(reader, key, max_bytes)
            # who may read it now that it is read (not when listed: it may have been made private
            # and rewritten since): from the descriptor read, and the folders that hold it now
            read = os.fstat(reader)
            passes: list[_Pass] = []
            named = self._open(root, rel, reals, passes)
            try:
                now = os.fstat(named)
            finally:
                os.close(named)
            if (now.st_dev, now.st_ino) != (read.st_dev, read.st_ino):
                logger.debug("files %s: %r refused: replaced while it was read", self.source, _shown(key))
                return None
            access, unreadable = self._access(reader, read, _shown(key), passes)
        finally:
            os.close(reader)
        name = _shown(key).rsplit("/", 1)[-1]
        content_type = mimetypes.guess_type(name, strict=False)[0] or "application/octet-stream"
        # the token of what was read (its size and time before it was read: a write since is
        # a change the next crawl sees): when not the listing's, none is indexed (the next crawl
        # reads it again), as the listing's may be another file's
        return Content(
            body=body, content_type=content_type, name=name, access=access, access_unreadable=unreadable, token=_token(info)
        )


def _read_bytes(reader: int, key: str, max_bytes: int) -> bytes:
    """A file's bytes: ``max_bytes`` at most (0: no limit); DocumentTooLarge when it has more."""
    chunks: list[bytes] = []
    size = 0
    while not max_bytes or size <= max_bytes:  # the file may grow after fstat: read one byte more at most
        chunk = os.read(reader, READ_CHUNK if not max_bytes else min(READ_CHUNK, max_bytes + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if max_bytes and size > max_bytes:
        raise DocumentTooLarge(f"{_shown(key)!r} grew past {max_bytes} bytes while read")
    return b"".join(chunks)
