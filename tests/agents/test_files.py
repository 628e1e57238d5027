"""The ``files`` agent on real folders: a tree of the shared corpora's office documents and files
written here, links, FIFOs, files swapped between listing and fetch, a 20,000-file tree."""

from __future__ import annotations

import errno
import fnmatch
import inspect
import json
import logging
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from pydantic import ValidationError

from searchcrawl.access import posix
from searchcrawl.access.tokens import Access
from searchcrawl.agents import files as files_module
from searchcrawl.agents.base import AgentError, DocumentTooLarge
from searchcrawl.agents.files import FilesAgent, FilesOptions, out_of_scope, owner_name, path_out_of_scope
from searchcrawl.content.extract import file_name
from tests.conftest import unpack


def agent(*roots: Path | str, **options: object) -> FilesAgent:
    return FilesAgent("docs", FilesOptions.model_validate({"roots": [str(root) for root in roots], **options}))


def keys(files: FilesAgent) -> list[str]:
    return [reference.key for reference in files.references(None)]


def write(path: Path, text: str = "text") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def office(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpora's per-format documents (pdf, docx, xlsx, odt...), one folder per format."""
    return unpack("textract-tests.tar.xz", tmp_path_factory.mktemp("office")) / "textract-tests" / "tests"


def expected(root: Path, include: list[str], exclude_folders: set[str]) -> list[str]:
    """The files a walk should list, found another way (rglob and fnmatch on names)."""
    found = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if path.is_file() and not path.is_symlink() and not any(part.startswith(".") for part in rel.parts):
            if rel.parts[0] not in exclude_folders and any(fnmatch.fnmatchcase(path.name, p) for p in include):
                found.append(str(path))
    return found


# --- options -----------------------------------------------------------------------------------


def test_options_normalise_roots_and_reject_what_is_not_an_absolute_folder_path() -> None:
    options = FilesOptions.model_validate({"roots": ["//srv/./docs/", "/srv/other"]})
    assert options.roots == ["/srv/docs", "/srv/other"]
    assert options.include == [] and options.exclude == [] and options.max_depth is None
    assert options.hidden is False and options.follow_links is False
    for roots, message in [
        ([], "at least 1 item"),
        (["docs"], "absolute"),
        (["/srv/a/../b"], "'..'"),
        (["/srv/a\x00"], "NUL"),
        (["/srv", "/srv/docs"], "root '/srv/docs' is inside root '/srv'"),
    ]:
        with pytest.raises(ValidationError, match=message):
            FilesOptions.model_validate({"roots": roots})


def test_options_reject_unknown_keys_bad_patterns_and_depths() -> None:
    with pytest.raises(ValidationError, match="unknown key 'max_files'.*known keys: include, exclude, max_depth, hidden, roots"):
        FilesOptions.model_validate({"roots": ["/srv"], "max_files": 3})
    with pytest.raises(ValidationError, match="relative to its root"):
        FilesOptions.model_validate({"roots": ["/srv"], "include": ["/reports/*.pdf"]})
    with pytest.raises(ValidationError, match="non-empty glob"):
        FilesOptions.model_validate({"roots": ["/srv"], "exclude": [" "]})
    with pytest.raises(ValidationError, match="at most 4"):
        FilesOptions.model_validate({"roots": ["/srv"], "exclude": ["**/" * 5 + "x"]})
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        FilesOptions.model_validate({"roots": ["/srv"], "max_depth": -1})
    with pytest.raises(ValidationError):
        FilesOptions.model_validate({"roots": ["/srv"], "hidden": "yes"})  # strict: a TOML boolean


# --- scope: the one decision shared by the walk and the fetch ------------------------------------


def test_scope_name_and_path_patterns_exclusion_wins_and_double_star_may_match_no_folder() -> None:
    options = FilesOptions.model_validate(
        {"roots": ["/r"], "include": ["*.pdf", "reports/**/*.docx"], "exclude": ["draft*", "reports/old/**"]}
    )
    assert out_of_scope("a/b/x.pdf", False, options) is None  # a name pattern: any folder
    assert out_of_scope("reports/x.docx", False, options) is None  # "**/" matching no folder
    assert out_of_scope("reports/2026/q1/x.docx", False, options) is None
    assert out_of_scope("other/x.docx", False, options) == "matches no include pattern"
    assert out_of_scope("a/draft.pdf", False, options) == "excluded by 'draft*'"
    # a folder an exclude pattern matches is not descended; include never applies to folders
    assert out_of_scope("reports/old", True, options) == "excluded by 'reports/old/**'"
    assert out_of_scope("drafts", True, options) == "excluded by 'draft*'"
    assert out_of_scope("reports", True, options) is None
    assert path_out_of_scope("reports/old/x.pdf", options) == "folder 'reports/old' excluded by 'reports/old/**'"


def test_scope_hidden_and_depth() -> None:
    options = FilesOptions.model_validate({"roots": ["/r"], "max_depth": 1})
    assert out_of_scope("a.txt", False, options) is None
    assert out_of_scope("a/b.txt", False, options) is None
    assert out_of_scope("a/b/c.txt", False, options) == "deeper than max_depth 1"
    assert out_of_scope("a", True, options) is None
    assert out_of_scope("a/b", True, options) == "deeper than max_depth 1"
    assert out_of_scope(".git", True, options) == "hidden"
    assert path_out_of_scope(".git/config", options) == "folder '.git' hidden"
    assert path_out_of_scope("a/.env", options) == "hidden"
    shown = FilesOptions.model_validate({"roots": ["/r"], "hidden": True, "max_depth": 0})
    assert path_out_of_scope(".env", shown) is None
    assert path_out_of_scope("a/x", shown) == "folder 'a' deeper than max_depth 0"


# --- listing -----------------------------------------------------------------------------------


def test_lists_the_office_documents_with_their_fields_and_fetches_them(office: Path, tmp_path: Path) -> None:
    include = ["*.pdf", "*.docx", "*.xlsx", "*.odt"]
    files = agent(office, include=include, exclude=["html", "*.txt"])
    references = list(files.references(None))
    assert sorted(r.key for r in references) == sorted(expected(office, include, {"html"}))
    assert [r.key for r in references] == sorted(r.key for r in references)  # sorted names, depth first
    assert {Path(r.key).suffix for r in references} == {".pdf", ".docx", ".xlsx", ".odt"}
    docx = next(r for r in references if r.key.endswith("docx/raw_text.docx"))
    info = os.stat(docx.key)
    assert docx.token == f"{info.st_size}:{info.st_mtime_ns}:{info.st_ino}:{info.st_ctime_ns}"
    assert docx.modified == datetime.fromtimestamp(info.st_mtime_ns / 1e9, UTC)
    assert docx.content is None
    assert docx.fields == {
        "file_name_s": "raw_text.docx",
        "path_s": docx.key,
        "folder_s": str(office / "docx"),
        "size_l": info.st_size,
        "owner_s": pwd.getpwuid(info.st_uid).pw_name,
        "last_modified": docx.modified.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    assert docx.metadata == {
        "file_name": "raw_text.docx",
        "path": docx.key,
        "folder": str(office / "docx"),
        "extension": "docx",
        "owner": pwd.getpwuid(info.st_uid).pw_name,
    }
    content = files.fetch(docx.key, 10_000_000)
    assert content is not None
    assert content.body == Path(docx.key).read_bytes()
    assert content.content_type == "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    assert content.name == "raw_text.docx"
    pdf = files.fetch(str(office / "pdf" / "raw_text.pdf"), 0)
    assert pdf is not None and pdf.content_type == "application/pdf" and pdf.body.startswith(b"%PDF")


def test_an_excluded_folder_is_not_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, "searchcrawl.agents.files")
    write(tmp_path / "a" / "x.txt")
    write(tmp_path / "archive" / "deep" / "y.txt")
    write(tmp_path / "tmp" / "z.txt")
    scanned = 0
    scandir = os.scandir

    def counting(path):  # type: ignore[no-untyped-def]
        nonlocal scanned
        scanned += 1
        return scandir(path)

    monkeypatch.setattr(os, "scandir", counting)
    assert keys(agent(tmp_path, exclude=["archive/**", "tmp"])) == [str(tmp_path / "a" / "x.txt")]
    assert scanned == 2  # the root and "a": neither "archive", its "deep", nor "tmp"
    assert f"files docs: folder {str(tmp_path / 'archive')!r} not descended: excluded by 'archive/**'" in caplog.messages
    scanned = 0
    assert len(keys(agent(tmp_path))) == 3 and scanned == 5


def test_max_depth_and_hidden(tmp_path: Path) -> None:
    for rel in ["top.txt", "a/one.txt", "a/b/two.txt", ".hidden.txt", ".git/config", "a/.cache/c.txt"]:
        write(tmp_path / rel)
    assert keys(agent(tmp_path, max_depth=0)) == [str(tmp_path / "top.txt")]
    assert keys(agent(tmp_path, max_depth=1)) == [str(tmp_path / "a/one.txt"), str(tmp_path / "top.txt")]
    assert keys(agent(tmp_path)) == [str(tmp_path / p) for p in ["a/b/two.txt", "a/one.txt", "top.txt"]]
    assert keys(agent(tmp_path, hidden=True)) == [
        str(tmp_path / p) for p in [".git/config", ".hidden.txt", "a/.cache/c.txt", "a/b/two.txt", "a/one.txt", "top.txt"]
    ]
    files = agent(tmp_path, max_depth=1)
    assert files.fetch(str(tmp_path / "a/b/two.txt"), 0) is None  # as the walk: deeper than max_depth
    assert files.fetch(str(tmp_path / ".git/config"), 0) is None  # hidden
    assert agent(tmp_path, hidden=True).fetch(str(tmp_path / ".git/config"), 0) is not None


def test_links_are_skipped_unless_followed_and_then_never_outside_the_roots(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    write(root / "docs" / "a.txt", "a")
    write(outside / "secret.txt", "secret")
    (root / "link-to-file.txt").symlink_to(root / "docs" / "a.txt")
    (root / "link-to-docs").symlink_to(root / "docs")
    (root / "link-out.txt").symlink_to(outside / "secret.txt")
    (root / "link-out").symlink_to(outside)
    (root / "docs" / "loop").symlink_to(root)  # back to a folder on the descent path
    (root / "dangling.txt").symlink_to(root / "nothing")
    assert keys(agent(root)) == [str(root / "docs" / "a.txt")]
    followed = agent(root, follow_links=True)
    assert keys(followed) == [str(root / p) for p in ["docs/a.txt", "link-to-docs/a.txt", "link-to-file.txt"]]
    assert followed.fetch(str(root / "link-to-docs" / "a.txt"), 0).body == b"a"  # type: ignore[union-attr]
    assert followed.fetch(str(root / "link-out.txt"), 0) is None
    assert followed.fetch(str(root / "link-out" / "secret.txt"), 0) is None
    assert agent(root).fetch(str(root / "link-to-file.txt"), 0) is None
    assert agent(root).fetch(str(root / "link-to-docs" / "a.txt"), 0) is None


def test_a_loop_of_links_between_folders_terminates(tmp_path: Path) -> None:
    write(tmp_path / "a" / "x.txt")
    write(tmp_path / "b" / "y.txt")
    (tmp_path / "a" / "to-b").symlink_to(tmp_path / "b")
    (tmp_path / "b" / "to-a").symlink_to(tmp_path / "a")
    listed = keys(agent(tmp_path, follow_links=True))
    assert listed == [str(tmp_path / p) for p in ["a/to-b/y.txt", "a/x.txt", "b/to-a/x.txt", "b/y.txt"]]


def test_the_token_changes_with_the_modification_time_or_the_size(tmp_path: Path) -> None:
    path = write(tmp_path / "a.txt", "one")
    files = agent(tmp_path)
    (first,) = files.references(None)
    os.utime(path, ns=(0, os.stat(path).st_mtime_ns + 1))
    (touched,) = files.references(None)
    assert touched.token != first.token
    mtime = os.stat(path).st_mtime_ns
    path.write_text("three")
    os.utime(path, ns=(0, mtime))
    (grown,) = files.references(None)
    assert grown.token != touched.token and grown.modified == touched.modified
    (again,) = files.references(None)
    assert again.token == grown.token


def test_file_names_that_are_not_utf8_are_listed_fetched_and_shown(tmp_path: Path) -> None:
    raw = os.fsencode(tmp_path) + b"/caf\xe9 #1?.txt"
    with open(raw, "wb") as handle:
        handle.write(b"latin-1 name")
    files = agent(tmp_path)
    (reference,) = files.references(None)
    assert reference.key == os.fsdecode(raw)
    url = files.url_for(reference.key)
    assert url == pathlib_uri(raw) and url.isascii() and url.endswith("/caf%E9%20%231%3F.txt")
    assert files.key_of(url) == reference.key
    # issue 72: decoded as the title is (content/extract.py's file_name: UTF-8, else windows-1252)
    assert reference.fields["file_name_s"] == file_name(url) == "café #1?.txt"
    assert reference.fields["path_s"].endswith("/café #1?.txt")
    json.dumps(dict(reference.fields))  # Solr-ready: no lone surrogate
    assert files.fetch(reference.key, 0).body == b"latin-1 name"  # type: ignore[union-attr]


def test_a_latin1_name_in_a_utf8_folder_keeps_both_and_undefined_bytes_are_replaced(tmp_path: Path) -> None:
    """Issue 72: each name of a path is decoded on its own; the bytes windows-1252 leaves
    undefined become U+FFFD, as in the title."""
    folder = os.fsencode(tmp_path) + "/Übersicht".encode()
    os.mkdir(folder)
    for raw in (b"/r\xe9sum\xe9.txt", b"/odd\x81\x9d.txt"):
        with open(folder + raw, "wb") as handle:
            handle.write(b"x")
    shown = {reference.fields["file_name_s"]: reference for reference in agent(tmp_path).references(None)}
    assert sorted(shown) == ["odd\ufffd\ufffd.txt", "résumé.txt"]
    resume = shown["résumé.txt"]
    assert resume.fields["folder_s"].endswith("/Übersicht") and resume.fields["path_s"].endswith("/Übersicht/résumé.txt")
    assert file_name(agent(tmp_path).url_for(resume.key)) == "résumé.txt"


def pathlib_uri(raw: bytes) -> str:
    from urllib.parse import quote_from_bytes

    return "file://" + quote_from_bytes(raw)


def test_key_of_refuses_urls_not_of_a_root(tmp_path: Path) -> None:
    files = agent(tmp_path / "root")
    assert files.key_of(files.url_for(str(tmp_path / "root" / "a.txt"))) == str(tmp_path / "root" / "a.txt")
    for url in [
        "file:///etc/passwd",
        f"file://{tmp_path}/root",  # the root itself is no file of it
        f"file://{tmp_path}/root/../secret",
        f"file://{tmp_path}/root/a/./b",
        f"file://host{tmp_path}/root/a",
        f"http://docs{tmp_path}/root/a",
        f"file://{tmp_path}/root/a%00b",
        f"file://{tmp_path}/rootless/a",
    ]:
        assert files.key_of(url) is None, url


# --- roots that are not there --------------------------------------------------------------------


def test_a_missing_root_or_a_root_that_is_a_file_fails_before_anything_is_listed(tmp_path: Path) -> None:
    write(tmp_path / "here" / "a.txt")
    listing = agent(tmp_path / "here", tmp_path / "share").references(None)
    assert inspect.isgenerator(listing)
    with pytest.raises(AgentError, match=r"root '.*/share' does not exist \(a share not mounted\?\)"):
        next(listing)  # not even the first root's files: nothing listed, nothing removed
    with pytest.raises(AgentError, match="is not a folder"):
        keys(agent(tmp_path / "here" / "a.txt"))


def test_roots_that_are_one_folder_on_disk_are_refused(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "sub" / "a.txt")
    (tmp_path / "alias").symlink_to(tmp_path / "docs" / "sub")
    with pytest.raises(AgentError, match="inside root"):
        keys(agent(tmp_path / "docs", tmp_path / "alias"))


def listed_as_nobody(root: Path) -> list[str] | str:
    """The keys a listing gives in a forked child running as ``nobody`` when the tests run as
    root (root reads every folder), or the AgentError's message."""
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.close(reader)
            if os.geteuid() == 0:
                nobody = pwd.getpwnam("nobody")
                os.setgroups([])
                os.setresgid(nobody.pw_gid, nobody.pw_gid, nobody.pw_gid)
                os.setresuid(nobody.pw_uid, nobody.pw_uid, nobody.pw_uid)
            try:
                result: list[str] | str = keys(agent(root))
            except AgentError as error:
                result = str(error)
            os.write(writer, json.dumps(result).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        output = pipe.read()
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return json.loads(output)  # type: ignore[no-any-return]


def test_an_unreadable_folder_is_skipped_and_an_unreadable_root_fails() -> None:
    base = Path(tempfile.mkdtemp(prefix="files-agent-"))  # not under pytest's folder: nobody may enter it
    try:
        base.chmod(0o755)
        write(base / "open" / "a.txt")
        write(base / "closed" / "b.txt")
        (base / "closed").chmod(0)
        assert listed_as_nobody(base) == [str(base / "open" / "a.txt")]
        assert listed_as_nobody(base / "closed") == f"root {str(base / 'closed')!r} cannot be read: Permission denied"
    finally:
        (base / "closed").chmod(0o755)
        shutil.rmtree(base)


# --- fetch: admission and hostile changes between listing and fetch ------------------------------


def test_fetch_refuses_paths_outside_the_roots_and_out_of_scope(tmp_path: Path) -> None:
    write(tmp_path / "root" / "a.txt", "a")
    write(tmp_path / "root" / "b.log", "b")
    write(tmp_path / "secret.txt", "secret")
    files = agent(tmp_path / "root", include=["*.txt"])
    assert files.fetch(str(tmp_path / "root" / "a.txt"), 0).body == b"a"  # type: ignore[union-attr]
    for key in [
        str(tmp_path / "secret.txt"),
        str(tmp_path / "root" / ".." / "secret.txt"),
        str(tmp_path / "root"),
        "/etc/passwd",
        "root/a.txt",
        str(tmp_path / "root" / "b.log"),  # excluded by include, as in the walk
        str(tmp_path / "root" / "missing.txt"),
    ]:
        assert files.fetch(key, 0) is None, key


def test_a_file_or_folder_swapped_for_a_link_after_the_listing_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "a.txt", "a")
    write(root / "sub" / "b.txt", "b")
    write(tmp_path / "secret" / "b.txt", "secret")
    files = agent(root)
    assert keys(files) == [str(root / "a.txt"), str(root / "sub" / "b.txt")]
    (root / "a.txt").unlink()
    (root / "a.txt").symlink_to(tmp_path / "secret" / "b.txt")
    shutil.rmtree(root / "sub")
    (root / "sub").symlink_to(tmp_path / "secret")
    assert files.fetch(str(root / "a.txt"), 0) is None
    assert files.fetch(str(root / "sub" / "b.txt"), 0) is None


def test_a_fifo_is_not_listed_and_never_blocks_a_fetch(tmp_path: Path) -> None:
    write(tmp_path / "a.txt")
    os.mkfifo(tmp_path / "pipe.txt")
    files = agent(tmp_path)
    assert keys(files) == [str(tmp_path / "a.txt")]
    (tmp_path / "a.txt").unlink()
    os.mkfifo(tmp_path / "a.txt")  # swapped in after the listing
    results: list[object] = []
    thread = threading.Thread(target=lambda: results.append(files.fetch(str(tmp_path / "a.txt"), 0)), daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive() and results == [None]


def test_a_file_larger_than_max_bytes_is_not_read_and_a_vanished_file_is_gone(tmp_path: Path) -> None:
    path = write(tmp_path / "a.txt", "x" * 100)
    files = agent(tmp_path)
    assert files.fetch(str(path), 100).body == b"x" * 100  # type: ignore[union-attr]
    with pytest.raises(DocumentTooLarge, match="100 bytes, more than 99"):
        files.fetch(str(path), 99)
    path.unlink()
    assert files.fetch(str(path), 100) is None


# --- streaming ---------------------------------------------------------------------------------


def test_a_10000_file_tree_is_streamed(tmp_path: Path) -> None:
    for folder in range(100):
        os.mkdir(tmp_path / f"f{folder:03d}")
        for number in range(100):
            os.close(os.open(tmp_path / f"f{folder:03d}" / f"document-{number:03d}.txt", os.O_CREAT | os.O_WRONLY))
    listing = agent(tmp_path).references(None)
    assert inspect.isgenerator(listing)
    tracemalloc.start()
    try:
        count = 0
        for reference in listing:
            count += 1
            assert reference.key.startswith(str(tmp_path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 10_000
    assert peak < 2_000_000, peak  # the folders on the descent path only: the listing would hold 10,000 references


def test_a_listing_stopped_early_closes_its_folders(tmp_path: Path) -> None:
    write(tmp_path / "a" / "b" / "c" / "d" / "x.txt")
    write(tmp_path / "a" / "b" / "c" / "d" / "y.txt")
    before = len(os.listdir("/proc/self/fd"))
    listing = agent(tmp_path).references(None)
    next(listing)
    assert len(os.listdir("/proc/self/fd")) == before + 5  # the root and a, b, c, d: the descent path
    listing.close()
    assert len(os.listdir("/proc/self/fd")) == before


def test_an_owner_the_system_does_not_know_is_its_uid() -> None:
    known = {user.pw_uid for user in pwd.getpwall()}
    unknown = max(known) + 1
    assert owner_name(unknown) == str(unknown)
    assert owner_name(os.getuid()) == pwd.getpwuid(os.getuid()).pw_name


# --- hostile trees (review) ------------------------------------------------------------------------


def test_a_followed_link_cannot_bring_in_an_excluded_or_hidden_target(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "HR" / "salaries.txt", "salaries")
    write(root / ".private" / "p.txt", "private")
    write(root / "docs" / "a.txt", "a")
    write(root / "docs" / "private" / "b.txt", "b")
    write(root / "public" / "readme.txt", "readme")
    (root / "public" / "hrlink").symlink_to("../HR")
    (root / "public" / "s.txt").symlink_to("../HR/salaries.txt")
    (root / "public" / "plink").symlink_to("../.private")
    (root / "public" / "docs").symlink_to("../docs")  # its sub-folder "private" is excluded on disk
    files = agent(root, follow_links=True, exclude=["HR/**", "HR", "docs/private/**"])
    assert keys(files) == [str(root / p) for p in ["docs/a.txt", "public/docs/a.txt", "public/readme.txt"]]
    for rel in ["public/hrlink/salaries.txt", "public/s.txt", "public/plink/p.txt", "public/docs/private/b.txt"]:
        assert files.fetch(str(root / rel), 0) is None, rel
    assert files.fetch(str(root / "public" / "docs" / "a.txt"), 0).body == b"a"  # type: ignore[union-attr]


DEEP_LISTING = """
import json, resource, sys
from searchcrawl.agents.files import FilesAgent, FilesOptions
resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
files = FilesAgent("docs", FilesOptions.model_validate({"roots": [sys.argv[1]]}))
print(json.dumps([reference.key for reference in files.references(None)]))
"""


def test_a_tree_deeper_than_the_open_file_limit_is_listed_down_to_the_depth_bound(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "top.txt")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for depth in range(1, 1501):  # d/d/.../d, 1500 folders deep, with a file at 10, 256, 257 and 1500
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
            if depth in (10, 256, 257, 1500):
                os.close(os.open(f"at-{depth}.txt", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    finally:
        os.close(fd)
    try:
        done = subprocess.run(
            [sys.executable, "-c", DEEP_LISTING, str(root)], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr[-2000:]
        listed = json.loads(done.stdout)
        assert [key.rsplit("/", 1)[1] for key in listed] == ["at-10.txt", "at-256.txt", "top.txt"]
        assert "not descended: deeper than 256 folders" in done.stderr  # a WARNING: files are left out
        deep = str(root) + "/d" * 300 + "/x.txt"
        assert path_out_of_scope(deep[len(str(root)) + 1 :], FilesOptions(roots=[str(root)])) is not None
    finally:
        for depth in range(1500, 0, -1):  # shutil.rmtree recurses once per level: too deep for it
            folder = str(root) + "/d" * depth
            for name in os.listdir(folder):
                os.remove(f"{folder}/{name}")
            os.rmdir(folder)


@pytest.mark.parametrize("follow_links", [False, True])
def test_a_fetch_opens_nothing_but_a_regular_file(tmp_path: Path, follow_links: bool) -> None:
    os.mkfifo(tmp_path / "pipe.txt")
    opened = threading.Event()
    writer = threading.Thread(target=lambda: (os.close(os.open(tmp_path / "pipe.txt", os.O_WRONLY)), opened.set()), daemon=True)
    writer.start()  # its open returns only when someone opens the FIFO for reading
    wchan = Path(f"/proc/self/task/{writer.native_id}/wchan")
    for _ in range(500):  # until the writer waits in its open (else the fetch would come first)
        if wchan.read_text() == "wait_for_partner":
            break
        time.sleep(0.01)
    else:
        pytest.fail(f"the writer does not wait for a reader: {wchan.read_text()!r}")
    try:
        assert agent(tmp_path, follow_links=follow_links).fetch(str(tmp_path / "pipe.txt"), 0) is None
        assert not opened.wait(0.5), "the fetch opened the FIFO"
    finally:
        os.close(os.open(tmp_path / "pipe.txt", os.O_RDONLY | os.O_NONBLOCK))
        writer.join(10)


def test_explain_judges_a_path_through_a_followed_link_on_its_real_path(tmp_path) -> None:
    root = tmp_path / "share"
    (root / "HR").mkdir(parents=True)
    (root / "HR" / "salaries.txt").write_text("secret")
    (root / "public").mkdir()
    (root / "public" / "hrlink").symlink_to(root / "HR")
    agent = FilesAgent("s", FilesOptions(roots=[str(root)], exclude=["HR"], follow_links=True))
    reason = agent.refusal(str(root / "public" / "hrlink" / "salaries.txt"))
    assert reason is not None and "excluded by 'HR'" in reason
    assert agent.refusal(str(root / "public" / "x.txt")) is None


def listed_access(files: FilesAgent) -> dict[str, Access | None]:
    return {reference.key: reference.access for reference in files.references(None)}


def test_the_access_given_with_the_content_is_read_when_it_is_read_not_when_listed(tmp_path: Path) -> None:
    """Issue 72: a file listed as 0644, then made 0600 and rewritten before its turn, was indexed
    with its new text and its old, public, access; so was one whose folder was closed. The fetch
    gives the access read from the descriptor the text was read from, and the folders' read
    after it: the access a listing now gives."""
    root = tmp_path / "root"
    memo, plan = write(root / "memo.txt", "public memo"), write(root / "sub" / "plan.txt", "public plan")
    for path, mode in ((root, 0o755), (root / "sub", 0o755), (memo, 0o644), (plan, 0o644)):
        path.chmod(mode)
    files = agent(root)
    assert all(access is not None and access.is_public for access in listed_access(files).values())
    memo.chmod(0o600)
    memo.write_text("the secret memo")
    (root / "sub").chmod(0o700)
    plan.write_text("the secret plan")
    now = listed_access(files)
    for path, text in ((memo, b"the secret memo"), (plan, b"the secret plan")):
        content = files.fetch(str(path), 0)
        assert content is not None and content.body == text
        assert content.access is not None and not content.access.is_public, path
        assert content.access == now[str(path)] and content.access_unreadable is None
    assert now[str(memo)].fields()["access_allow"] == [f"uid:{os.getuid()}"]  # type: ignore[union-attr]
    assert now[str(plan)].fields()["access_allow_1"] == [f"uid:{os.getuid()}"]  # type: ignore[union-attr]


def test_a_file_replaced_or_swapped_for_a_link_since_the_listing_is_given_the_access_of_what_is_read(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for path in (write(root / "a.txt", "a"), write(root / "b.txt", "b"), write(root / "locked" / "secret.txt", "secret")):
        path.chmod(0o644)
    (root / "locked").chmod(0o700)
    root.chmod(0o755)
    files = agent(root, follow_links=True)
    listed = listed_access(files)
    assert listed[str(root / "a.txt")].is_public and listed[str(root / "b.txt")].is_public  # type: ignore[union-attr]
    # a.txt renamed over by a private file; b.txt swapped for a link into the locked folder
    private = write(root / "new.tmp", "private")
    private.chmod(0o600)
    private.rename(root / "a.txt")
    (root / "b.txt").unlink()
    (root / "b.txt").symlink_to(root / "locked" / "secret.txt")
    now = listed_access(files)
    replaced, swapped = files.fetch(str(root / "a.txt"), 0), files.fetch(str(root / "b.txt"), 0)
    assert replaced is not None and replaced.body == b"private" and replaced.access == now[str(root / "a.txt")]
    assert swapped is not None and swapped.body == b"secret" and swapped.access == now[str(root / "b.txt")]
    assert not replaced.access.is_public and not swapped.access.is_public  # type: ignore[union-attr]
    assert [level.name for level in swapped.access.levels] == [f"file {root / 'b.txt'}", f"folder {root / 'locked'}"]  # type: ignore[union-attr]


def test_a_file_replaced_while_it_is_read_is_not_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The access is read after the text, from the descriptor read; a file put in its place
    meanwhile is another file: the text read is not given with the access of either."""
    root = tmp_path / "root"
    write(root / "a.txt", "old")
    files = agent(root)
    read = files_module._read_bytes

    def replaced_while_read(reader: int, key: str, max_bytes: int) -> bytes:
        body = read(reader, key, max_bytes)
        write(root / "other.tmp", "new").rename(root / "a.txt")
        return body

    monkeypatch.setattr(files_module, "_read_bytes", replaced_while_read)
    assert files.fetch(str(root / "a.txt"), 0) is None


def test_an_acl_unreadable_when_the_file_is_read_is_said_with_the_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    write(root / "a.txt", "text")
    files = agent(root)
    assert listed_access(files)[str(root / "a.txt")] is not None
    real = posix.read_acl

    def broken(path: str | int) -> object:
        if isinstance(path, int) and os.readlink(f"/proc/self/fd/{path}").endswith("a.txt"):
            raise OSError(errno.EIO, "Input/output error")
        return real(path)

    monkeypatch.setattr(posix, "read_acl", broken)
    content = files.fetch(str(root / "a.txt"), 0)
    assert content is not None and content.access is None
    assert content.access_unreadable is not None and "cannot be read" in content.access_unreadable


# --- review of issue 72 points 5 and 6 ---------------------------------------------------------


def test_review_another_file_at_a_path_with_the_same_size_and_time_has_another_token(tmp_path: Path) -> None:
    """The token decides whether a file is read again (304: its access alone updated). Size and
    time are the owner's to set (utime): another file put at the path, given the same size and
    time, is another file, and must be read again, not given the text indexed for the first."""
    root = tmp_path / "root"
    private = write(root / "a.txt", "a private text")
    private.chmod(0o600)
    files = agent(root)
    [first] = list(files.references(None))
    info = os.stat(private)
    forged = write(tmp_path / "forged.txt", "x" * info.st_size)
    forged.chmod(0o644)
    os.utime(forged, ns=(info.st_atime_ns, info.st_mtime_ns))
    private.rename(tmp_path / "aside.txt")
    forged.rename(root / "a.txt")
    [then] = list(files.references(None))
    assert then.access is not None and then.access.is_public
    assert then.token != first.token


def test_a_new_file_in_a_freed_inode_with_the_same_size_and_time_has_another_token(tmp_path: Path) -> None:
    """A file deleted and another made in its place by someone who may write the folder can get
    the inode number it freed (file systems reuse them), and its size and time (utime): only the
    inode change time, which nobody sets, tells it apart. Without it the token matched, and the
    next crawl's 304 put the new file's (public) access on the private text indexed before."""
    path = write(tmp_path / "a.txt", "a private text")
    before = os.stat(path)
    fields = {name: getattr(before, name) for name in ("st_size", "st_mtime_ns", "st_ino")}
    later = SimpleNamespace(**fields, st_ctime_ns=before.st_ctime_ns + 1)  # the new file, in the freed inode
    assert files_module._token(cast(os.stat_result, later)) != files_module._token(before)


def test_a_change_of_permissions_alone_changes_the_token(tmp_path: Path) -> None:
    path = write(tmp_path / "a.txt", "text")
    files = agent(tmp_path)
    (first,) = files.references(None)
    mtime = os.stat(path).st_mtime_ns
    path.chmod(0o600)
    os.utime(path, ns=(0, mtime))
    (then,) = files.references(None)
    assert then.token != first.token


def test_review_the_listing_gives_the_token_and_the_access_of_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file renamed over between the listing's stat (the token) and its ACL read (by path):
    the token of one file and the access of the other. A private file's token with a public
    file's access is a 304 that makes the private text indexed public."""
    root = tmp_path / "root"
    private = write(root / "a.txt", "a private text")
    private.chmod(0o600)
    files = agent(root)
    [first] = list(files.references(None))
    assert first.access is not None and not first.access.is_public
    read_acl = posix.read_acl
    swapped = []

    def swapping(path: str | int) -> object:
        named = os.path.realpath(f"/proc/self/fd/{path}" if isinstance(path, int) else path)
        if not swapped and named.endswith("a.txt"):  # the stat is done: the ACL read next
            swapped.append(path)
            public = write(tmp_path / "public.txt", "a public text, another size")
            public.chmod(0o644)
            private.rename(tmp_path / "aside.txt")
            public.rename(root / "a.txt")
        return read_acl(path)

    monkeypatch.setattr(posix, "read_acl", swapping)
    [then] = list(files.references(None))
    assert swapped
    assert then.token != first.token or (then.access is not None and not then.access.is_public)


def test_review_a_followed_link_gives_the_token_and_the_access_of_one_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link repointed between the listing's realpath (the folders judged) and its stat (the
    token): the token of the file in the locked folder with the folders of the open one."""
    root = tmp_path / "root"
    secret = write(root / "locked" / "pay.txt", "the salary scale")
    mine = write(root / "open" / "mine.txt", "my notes")
    for path, mode in ((root, 0o755), (root / "locked", 0o700), (root / "open", 0o755), (secret, 0o644), (mine, 0o644)):
        path.chmod(mode)
    link = root / "open" / "notes.txt"
    link.symlink_to(secret)
    files = agent(root, follow_links=True)
    first = {reference.key: reference for reference in files.references(None)}[str(link)]
    assert first.access is not None and not first.access.is_public
    link.unlink()
    link.symlink_to(mine)
    realpath = os.path.realpath

    def repointing(path: str, *args: object, **kwargs: object) -> str:
        real = realpath(path, *args, **kwargs)  # type: ignore[arg-type]
        if path == str(link) and real == str(mine):
            (root / "open" / "notes.tmp").symlink_to(secret)
            (root / "open" / "notes.tmp").rename(link)
        return real

    monkeypatch.setattr(files_module.os.path, "realpath", repointing)
    then = {reference.key: reference for reference in files.references(None)}[str(link)]
    assert then.token != first.token or (then.access is not None and not then.access.is_public)


def test_review_a_fetch_gives_the_token_of_what_it_read(tmp_path: Path) -> None:
    """The token read with the content: the listing's when the file is the one listed, another
    when a followed link points elsewhere now (the handler indexes no ETag then)."""
    root = tmp_path / "root"
    secret = write(root / "locked" / "pay.txt", "the salary scale")
    mine = write(root / "open" / "mine.txt", "my notes")
    link = root / "open" / "notes.txt"
    link.symlink_to(mine)
    files = agent(root, follow_links=True)
    listed = {reference.key: reference.token for reference in files.references(None)}
    content = files.fetch(str(link), 0)
    assert content is not None and content.token == listed[str(link)]
    link.unlink()
    link.symlink_to(secret)
    content = files.fetch(str(link), 0)
    assert content is not None and content.body == b"the salary scale" and content.token != listed[str(link)]


def test_review_a_folder_renamed_while_a_links_target_folders_are_read_is_not_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A followed link's target's folders are read down from the root by name, after its real
    path was read: a folder on that path renamed meanwhile (a user who may write its parent
    moves a 0700 folder away and puts an open one of theirs in its place) had the open folder's
    search permission judged for a file that lies in the 0700 one."""
    root = tmp_path / "root"
    secret = write(root / "shared" / "locked" / "pay.txt", "the salary scale")
    write(root / "open" / "doc.txt", "the handbook")
    for path, mode in ((root, 0o755), (root / "shared", 0o777), (root / "shared" / "locked", 0o700), (root / "open", 0o755)):
        path.chmod(mode)
    secret.chmod(0o644)
    link = root / "open" / "notes.txt"
    link.symlink_to(secret)
    files = agent(root, follow_links=True)
    pass_of = files_module._pass_of
    moved = []

    def moving(fd: int, real: str, shown: str) -> object:
        if real == str(root / "shared") and not moved:  # the target's folders read down, by name
            moved.append(real)
            (root / "shared" / "locked").rename(root / "shared" / "moved")
            (root / "shared" / "locked").mkdir(mode=0o755)
            (root / "shared" / "locked").chmod(0o755)
        return pass_of(fd, real, shown)

    monkeypatch.setattr(files_module, "_pass_of", moving)
    listed = {reference.key: reference for reference in files.references(None)}
    assert moved
    notes = listed.get(str(link))
    assert notes is None or notes.access is None or not notes.access.is_public, notes
