"""The ``git`` source type: the files at a branch's head in Git repositories, on this machine or
over HTTP(S), with gitolite's per-repository rules as who may read them where the source names
gitolite's configuration.

```toml
type = "git"

[git.repositories]                                   # name = where it is (a path or an http(s) URL)
handbook = "/srv/gitolite/repositories/handbook.git"
"tools/deploy" = "https://git.example.org/git/tools/deploy.git"

[git]
branch = "main"                                      # default: each repository's HEAD
username = "crawler"                                 # HTTP basic auth for the URLs
password_secret = "GIT_CRAWLER_PASSWORD"
cache_dir = "/var/cache/searchcrawl/git"             # where the URLs' copies are kept
gitolite_conf = "/srv/gitolite/.gitolite/conf/gitolite.conf"   # who may read (else [access])
group_token = "group:{id}"                           # a group as GROUPLIST_PGM gives it (the directory's)
# group_filter = "(|(memberUid=%{user})(member=%{dn}))"  # instead: the LDAP filter GROUPLIST_PGM searches
authenticated_token = "group:developers"             # gitolite's @all
display_url = "https://git.example.org/{repository}/blob/{branch}/{path}"
exclude = ["vendor/**", "*.min.js"]                  # include, exclude, max_depth and hidden on paths
```

A repository's name (the table's key) is its name in gitolite and the first part of its
documents' keys: ``git://<source>/<name>:<path>``. A local repository is read where it is; a URL
is copied (a bare, shallow copy of the branch alone, in ``cache_dir``: default
``~/.cache/searchcrawl/git/<source>``) and fetched again at each listing (``max_repository_bytes``
bounds the copy; a fetch beyond it, or beyond ten times ``timeout``, is killed with its process
group). Git runs without the machine's or the user's configuration, with no credential helper
and no prompt (the password comes from the secret, through an askpass program that reads it from
the environment of a fetch alone), HTTP(S) the only protocol of a fetch and none of a read
(``GIT_ALLOW_PROTOCOL``, which a repository's ``protocol.*.allow`` cannot widen), no missing
object fetched, no redirect followed, and a ``safe.directory`` for the repository alone; reading
runs only git's plumbing (``rev-parse``, ``ls-tree``, ``cat-file``).

Files: each regular file of the branch's head tree (symbolic links and submodules are not
files), with the rules of a files source on its path; ``repository_s``, ``branch_s``, ``path_s``,
``folder_s``, ``file_name_s`` and ``size_l``. A file's token is its blob's id: a maintenance
crawl reads only the files whose content changed, wherever they moved; a file deleted, or moved
away, leaves the index. A repository that cannot be read or fetched fails the crawl: nothing is
removed; so does a gitolite.conf newer than what gitolite compiled from it (the rules in force
unknown), with that said.

A gitolite group (``@name`` in a rule) is its members as the file defines them and, where
gitolite's ``GROUPLIST_PGM`` gives users groups, ``group_token`` (every group the directory
reading gives, nested ones too) or, for a program that prints the cn of each group one LDAP
search finds, ``group_filter``: that search's filter, written as DokuWiki's authldap
``groupfilter`` (``%{user}`` the name gitolite passes, ``%{uid}``, ``%{gid}``, ``%{dn}`` its
entry's), a group then the ``direct:`` tokens of its relations (access/tokens.py
``filter_relations``: one search, no nesting; a filter it cannot read fails the configuration).
"""

from __future__ import annotations

import logging
import mimetypes
import os
import posixpath
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

from pydantic import Field, field_validator

from searchcrawl.access.gitolite_rules import MAX_FILE_BYTES, GitoliteNames, GitoliteRules, read_gitolite
from searchcrawl.access.tokens import Access
from searchcrawl.agents.base import Agent, AgentError, Content, DocumentTooLarge, Reference
from searchcrawl.agents.files import file_reference, out_of_scope, path_out_of_scope
from searchcrawl.agents.http_repository import GroupOptions, HttpRepositoryOptions, checked_token, server_file, server_url
from searchcrawl.system.paths import user_cache_dir
from searchcrawl.system.secrets import SecretError, required_secret

logger = logging.getLogger(__name__)

TABLE = "git"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(?:/[A-Za-z0-9][A-Za-z0-9._-]*)*")
_BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,200}")
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
REGULAR = ("100644", "100755")
STALE = "gitolite.conf is newer than what gitolite compiled from it (refused, or not compiled yet)"
PASSWORD_VARIABLE = "GIT_CRAWL_ASKPASS_PASSWORD"
ASKPASS = '#!/bin/sh\n# git asks for the password of a repository: the crawl gives it in this variable\nprintf "%s\\n" "$GIT_CRAWL_ASKPASS_PASSWORD"\n'


class GitOptions(HttpRepositoryOptions, GroupOptions):
    """The ``[git]`` table of a source of type ``git``."""

    repositories: dict[str, str] = Field(min_length=1)
    branch: str | None = None
    cache_dir: str | None = None
    display_url: str | None = None
    gitolite_conf: str | None = None
    authenticated_token: str | None = None
    max_repository_bytes: int = Field(default=4 << 30, gt=0)  # a URL's copy: a fetch beyond it is cut off

    @field_validator("repositories")
    @classmethod
    def _repositories(cls, values: dict[str, str]) -> dict[str, str]:
        for name, location in values.items():
            if not _NAME.fullmatch(name) or ".." in name or name.endswith(".git"):
                raise ValueError(f"{name!r} is not a repository name (letters, digits, . _ - and /, without .git)")
            if location.startswith(("http://", "https://")):
                server_url(location, f"repository {name}")
            elif not location.startswith("/") or "\x00" in location:
                raise ValueError(f"repository {name}: expected an absolute path or an http(s) URL, got {location!r}")
        return values

    @field_validator("branch")
    @classmethod
    def _branch(cls, value: str | None) -> str | None:
        if value is not None and (not _BRANCH.fullmatch(value) or ".." in value or value.endswith((".lock", "/"))):
            raise ValueError(f"{value!r} is not a branch name")
        return value

    @field_validator("cache_dir", "gitolite_conf")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and (not value.startswith("/") or "\x00" in value):
            raise ValueError(f"{value!r} is not an absolute path")
        return value

    @field_validator("display_url")
    @classmethod
    def _display(cls, value: str | None) -> str | None:
        if value is not None:
            server_url(value.replace("{repository}", "r").replace("{branch}", "b").replace("{path}", "p"), "a display URL")
        return value

    @field_validator("authenticated_token")
    @classmethod
    def _token(cls, value: str | None) -> str | None:
        return checked_token(value)

    def server_urls(self) -> list[str]:
        return [location for location in self.repositories.values() if location.startswith(("http://", "https://"))]

    def local_paths(self) -> list[tuple[str, str]]:
        """What the source reads on this machine, by key: its local repositories and gitolite's
        configuration (config/own_places.py refuses the installation's own; ``cache_dir`` is
        written, the URLs' copies in a ``git/<source>`` folder of their own, and read from there only)."""
        found = [(f"repositories.{name}", where) for name, where in self.repositories.items() if where.startswith("/")]
        return found + ([("gitolite_conf", self.gitolite_conf)] if self.gitolite_conf else [])

    @property
    def gives_access(self) -> bool:
        """Whether gitolite's rules say who may read (else the source's [access] table)."""
        return bool(self.gitolite_conf)


class GitAgent(Agent):
    """Lists the files at a branch's head in Git repositories, with gitolite's rules as readers."""

    scheme: ClassVar[str] = "git"
    Options = GitOptions

    def __init__(self, source: str, options: Any) -> None:
        super().__init__(source, options)
        self.git = GitOptions.model_validate(options)
        self.cache = (Path(self.git.cache_dir) if self.git.cache_dir else user_cache_dir()) / "git" / quote(source, safe="")
        self.names = GitoliteNames(
            self.git.user_token, self.git.group_token, self.git.authenticated_token, self.git.group_relations
        )
        self._rules: GitoliteRules | None = None
        self._heads: dict[str, tuple[str, str]] = {}  # name -> (branch, commit) of this listing

    # -- the Agent interface ----------------------------------------------------------------

    def references(self, since: datetime | None) -> Iterator[Reference]:
        """Every file at each repository's branch head (``since`` is ignored); none while
        gitolite.conf is newer than what gitolite compiled: the listing fails and removes nothing
        (every file would be status 927, left the index, or tripped the deletion guard unexplained)."""
        self._rules = self._read_rules() if self.git.gives_access else None
        if self._rules is not None and self._rules.uncertain == STALE:
            raise AgentError(
                f"git: {self.git.gitolite_conf} is newer than what gitolite compiled from it (gitolite refused it, "
                "or it was not compiled yet: `gitolite compile`, or push the gitolite-admin repository): "
                "the rules in force are not known; nothing is removed"
            )
        for name in self.git.repositories:
            branch, commit = self._head(name, update=True)
            access, unreadable = self._access(name)
            listed = 0
            for mode, sha, size, path in self._tree(name, commit):
                reason = "not a regular file" if mode not in REGULAR else out_of_scope(path, False, self.git)
                if reason is None and "/" in path:
                    reason = path_out_of_scope(path, self.git)
                if reason is not None:
                    logger.debug("git: %s:%s not listed: %s", name, path[:200], reason)
                    continue
                listed += 1
                yield self._reference(name, branch, path, sha, size, access, unreadable)
            logger.info("git: %d files listed in %s at %s (%s)", listed, name, branch, commit[:12])

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        """The file's blob at the branch's head of this listing; None when it is no file there."""
        name, _, path = key.partition(":")
        if name not in self.git.repositories or not path:
            return None
        _branch, commit = self._heads.get(name) or self._head(name, update=False)
        entries = [entry for entry in self._tree(name, commit, path) if entry[3] == path]
        if len(entries) != 1 or entries[0][0] not in REGULAR:
            return None
        _mode, sha, size, _path = entries[0]
        if max_bytes and size > max_bytes:
            raise DocumentTooLarge(key)
        body = self._run(["cat-file", "blob", sha], self._git_dir(name), limit=size + 1)
        if len(body) != size:
            raise AgentError(f"git: the blob {sha} of {name} is not the size its tree says")
        kind = content_type(path, body)
        access, unreadable = self._access(name) if self.git.gives_access else (None, None)
        return Content(body, kind, posixpath.basename(path), access=access, access_unreadable=unreadable, token=sha)

    def refusal(self, key: str) -> str | None:
        name, colon, path = key.partition(":")
        if not colon or name not in self.git.repositories:
            return "not a repository of the source"
        return path_out_of_scope(path, self.git)

    # -- repositories -----------------------------------------------------------------------

    def _git_dir(self, name: str) -> Path:
        location = self.git.repositories[name]
        return self.cache / f"{quote(name, safe='')}.git" if location.startswith(("http://", "https://")) else Path(location)

    def _head(self, name: str, update: bool) -> tuple[str, str]:
        """The branch crawled in ``name`` and its head commit (a URL's copy fetched first)."""
        git_dir = self._git_dir(name)
        remote = self.git.repositories[name].startswith(("http://", "https://"))
        if remote and update:
            branch = self.git.branch or self._remote_head(name)
            self._fetch(name, branch)
        elif remote:
            branch = self.git.branch or self._local_head(git_dir)
        else:
            branch = self.git.branch or self._local_head(git_dir)
        commit = (
            self._run(["rev-parse", "--verify", "--end-of-options", f"refs/heads/{branch}^{{commit}}"], git_dir).decode().strip()
        )
        if not _SHA.fullmatch(commit):
            raise AgentError(f"git: {name} has no branch {branch}")
        self._heads[name] = (branch, commit)
        return branch, commit

    def _local_head(self, git_dir: Path) -> str:
        ref = self._run(["symbolic-ref", "--quiet", "HEAD"], git_dir).decode().strip()
        branch = ref.removeprefix("refs/heads/")
        if not ref.startswith("refs/heads/") or not _BRANCH.fullmatch(branch):
            raise AgentError(f"git: {git_dir} has no branch as its HEAD: name 'branch'")
        return branch

    def _remote_head(self, name: str) -> str:
        answer = self._run(["ls-remote", "--symref", "--", self.git.repositories[name], "HEAD"], None, network=True).decode()
        found = re.search(r"^ref: refs/heads/(\S+)\tHEAD$", answer, re.MULTILINE)
        if found is None or not _BRANCH.fullmatch(found.group(1)):
            raise AgentError(f"git: {name} names no branch as its HEAD: name 'branch'")
        return found.group(1)

    def _fetch(self, name: str, branch: str) -> None:
        """The branch's head into the bare, shallow copy (created the first time)."""
        git_dir = self._git_dir(name)
        if not (git_dir / "HEAD").is_file():
            git_dir.mkdir(parents=True, exist_ok=True)
            self._run(["init", "--quiet", "--bare", str(git_dir)], None)
        refspec = f"+refs/heads/{branch}:refs/heads/{branch}"
        url = self.git.repositories[name]
        self._run(["fetch", "--quiet", "--depth=1", "--no-tags", "--prune", "--", url, refspec], git_dir, network=True)

    def _tree(self, name: str, commit: str, path: str | None = None) -> Iterator[tuple[str, str, int, str]]:
        """(mode, blob id, size, path) of each entry of the commit's tree (or of ``path``),
        read as git writes them, one at a time."""
        arguments = ["ls-tree", "-r", "-l", "-z", "--full-tree", commit]
        if path is not None:
            arguments += ["--", path]
        with self._popen(arguments, self._git_dir(name)) as process:
            assert process.stdout is not None
            pending = b""
            while chunk := process.stdout.read(65536):
                pending += chunk
                *records, pending = pending.split(b"\0")
                for record in records:
                    try:
                        entry = _entry(record)
                    except ValueError as error:
                        raise AgentError(f"git: {name} cannot be read whole: {error}") from None
                    if entry is not None:
                        yield entry
            if process.wait() != 0:
                raise AgentError(f"git: the tree of {name} at {commit[:12]} cannot be read")

    # -- access -----------------------------------------------------------------------------

    def _access(self, name: str) -> tuple[Access | None, str | None]:
        if not self.git.gives_access:
            return None, None
        rules = self._rules if self._rules is not None else self._read_rules()
        self._rules = rules
        return rules.access_of(name, self.names)

    def _read_rules(self) -> GitoliteRules:
        """gitolite.conf, read at each listing; uncertain while it is newer than what gitolite
        compiled from it (a change gitolite refused keeps the rules before it in force)."""
        path = Path(self.git.gitolite_conf or "")
        text = server_file(str(path), "gitolite's configuration", MAX_FILE_BYTES).decode("utf-8", errors="replace")
        rules = read_gitolite(text, str(path))
        try:
            stale = path.with_name(path.name + "-compiled.pm").stat().st_mtime_ns < path.stat().st_mtime_ns
        except OSError:
            stale = True
        if stale:
            rules.uncertain = STALE
        return rules

    def _reference(
        self, name: str, branch: str, path: str, sha: str, size: int, access: Access | None, unreadable: str | None
    ) -> Reference:
        folder, _, file_name = path.rpartition("/")
        display = ""
        if self.git.display_url:
            display = (
                self.git.display_url.replace("{repository}", quote(name, safe="/"))
                .replace("{branch}", quote(branch, safe="/"))
                .replace("{path}", quote(path, safe="/"))
            )
        reference = file_reference(
            key=f"{name}:{path}",
            token=sha,
            path="/" + path,
            folder="/" + folder,
            name=file_name,
            size=size,
            modified=None,
            access=access,
            unreadable=unreadable,
            display_url=display,
        )
        fields = {**reference.fields, "repository_s": name, "branch_s": branch}
        return replace(reference, fields=fields, metadata={**reference.metadata, "repository": name})

    # -- running git ------------------------------------------------------------------------

    def _environment(self, network: bool = False) -> dict[str, str]:
        """Git without the machine's or the user's configuration, prompts or helpers; HTTP(S) the
        only protocol, and none when it reads (``GIT_ALLOW_PROTOCOL`` wins over any
        ``protocol.*.allow`` a repository's configuration holds); the password only for a
        command that goes to the network."""
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.cache),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_PROTOCOL_FROM_USER": "0",
            "GIT_ALLOW_PROTOCOL": "http:https" if network else "none",
            "GIT_NO_LAZY_FETCH": "1",  # git 2.44 and later: a missing object is never fetched
            "GIT_NO_REPLACE_OBJECTS": "1",
            "LC_ALL": "C",
        }
        if network and self.git.username:
            try:
                environment[PASSWORD_VARIABLE] = required_secret(self.git.password_secret or "", TABLE)
            except SecretError as error:
                raise AgentError(str(error)) from None
            environment["GIT_ASKPASS"] = str(self._askpass())
        return environment

    def _askpass(self) -> Path:
        program = self.cache / "askpass.sh"
        if not program.is_file():
            self.cache.mkdir(parents=True, exist_ok=True)
            partial = program.with_suffix(".partial")
            partial.write_text(ASKPASS)
            partial.chmod(0o700)
            partial.replace(program)
        return program

    def _command(self, arguments: list[str], git_dir: Path | None, network: bool = False) -> list[str]:
        config = ["-c", "core.fsmonitor=false", "-c", "credential.helper=", "-c", "protocol.allow=never"]
        if git_dir is not None:
            config += ["-c", f"safe.directory={git_dir}", f"--git-dir={git_dir}"]
        if network:
            config += [
                "-c",
                "protocol.http.allow=always",
                "-c",
                "protocol.https.allow=always",
                "-c",
                "http.followRedirects=false",
            ]
            config += ["-c", "http.lowSpeedLimit=1", "-c", f"http.lowSpeedTime={int(self.git.timeout)}"]
            if self.git.username:
                config += ["-c", f"credential.username={self.git.username}"]
            if self.git.ca_file:
                config += ["-c", f"http.sslCAInfo={self.git.ca_file}"]
        return [shutil.which("git") or "git", *config, *arguments]

    def _popen(self, arguments: list[str], git_dir: Path | None) -> subprocess.Popen[bytes]:
        self.cache.mkdir(parents=True, exist_ok=True)
        return subprocess.Popen(
            self._command(arguments, git_dir),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=self._environment(),
            cwd=self.cache,
        )

    def _run(self, arguments: list[str], git_dir: Path | None, network: bool = False, limit: int = 1 << 20) -> bytes:
        """What git writes (at most ``limit`` bytes); AgentError when it fails (its own message,
        which names no secret: the password never is in a command line or a URL), takes longer
        than ten times the timeout, or, fetching, grows the copy beyond ``max_repository_bytes``:
        then git and every process it started are killed."""
        self.cache.mkdir(parents=True, exist_ok=True)
        process = subprocess.Popen(
            self._command(arguments, git_dir, network),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self._environment(network),
            cwd=self.cache,
            start_new_session=True,  # its own process group: killed whole
        )
        deadline = time.monotonic() + self.git.timeout * 10
        while True:
            try:
                out, err = process.communicate(timeout=1)
                break
            except subprocess.TimeoutExpired:
                why = None
                if time.monotonic() > deadline:
                    why = f"took longer than {self.git.timeout * 10:.0f} s"
                elif network and git_dir is not None and _size(git_dir) > self.git.max_repository_bytes:
                    why = f"grew the copy beyond {self.git.max_repository_bytes} bytes"
                if why is not None:
                    _kill(process)
                    if git_dir is not None:
                        _remove_partial_objects(git_dir)
                    raise AgentError(f"git {arguments[0]} {why}") from None
        if process.returncode != 0:
            if network and git_dir is not None:
                _remove_partial_objects(git_dir)
            message = " ".join(err.decode(errors="replace").split())[:300]
            raise AgentError(f"git {arguments[0]} failed: {message}")
        if len(out) > limit:
            raise AgentError(f"git {arguments[0]} wrote more than {limit} bytes")
        return out


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Git and what it started (remote-http, fetch-pack, index-pack)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.communicate()


def _size(folder: Path) -> int:
    """The bytes of the files below ``folder``."""
    total = 0
    for root, _folders, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def _remove_partial_objects(git_dir: Path) -> None:
    """What a fetch cut off left behind (``objects/pack/tmp_*``, ``objects/tmp_obj_*``)."""
    for pattern in ("objects/pack/tmp_*", "objects/tmp_obj_*", "objects/incoming-*"):
        for leftover in git_dir.glob(pattern):
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)


def content_type(path: str, body: bytes) -> str:
    """A file's type by its name, as files and shares have it; but a repository's text (Markdown,
    source code, JSON, YAML, a file without an extension) is indexed as plain text, the
    converters having no reader of its own type."""
    kind = mimetypes.guess_type(path, strict=False)[0] or "application/octet-stream"
    document = kind in ("text/html", "application/pdf", "application/msword", "application/rtf")
    if document or kind.startswith(("application/vnd", "image/", "audio/", "video/")) or b"\0" in body[:8192]:
        return kind
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return kind
    return "text/plain; charset=utf-8"


def _entry(record: bytes) -> tuple[str, str, int, str] | None:
    """One ``ls-tree -l -z`` record: ``<mode> <type> <id> <size>\\t<path>``; None for one that is
    not a blob, or whose path is no UTF-8 without control characters; ValueError for a blob
    that is missing."""
    head, tab, raw_path = record.partition(b"\t")
    fields = head.split()
    if not tab or len(fields) != 4 or fields[1] != b"blob":
        return None
    if not fields[3].isdigit():  # "BAD": the blob is missing (a partial clone, a broken repository)
        raise ValueError(f"the blob {fields[2][:64].decode(errors='replace')} is missing")
    try:
        path = raw_path.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not path or re.search(r"[\x00-\x1f\x7f]", path) or path.startswith("/") or "/../" in f"/{path}/":
        return None
    sha = fields[2].decode()
    return (fields[0].decode(), sha, int(fields[3]), path) if _SHA.fullmatch(sha) else None
