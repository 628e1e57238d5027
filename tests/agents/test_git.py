"""The git source's logic alone (no repository): its options, git's tree records as a hostile
repository may write them, keys and content types. tests/e2e/test_git_sources.py crawls real
repositories, local and over HTTP."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from searchcrawl.agents.base import AgentError
from searchcrawl.agents.git import GitAgent, GitOptions, _entry, content_type
from tests.grouplist_program import documented_grouplist

REPOSITORIES = {"handbook": "/srv/git/handbook.git", "tools/deploy": "https://git.example.org/git/tools/deploy.git"}
SHA = "7e74e68b2a782a3aead46d987a63ca1c91091c13"


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"repositories": {}}, "at least 1"),
        ({"repositories": {"../etc": "/srv/git/x.git"}}, "not a repository name"),
        ({"repositories": {"x.git": "/srv/git/x.git"}}, "not a repository name"),
        ({"repositories": {"x": "srv/git/x.git"}}, "absolute path or an http"),
        ({"repositories": {"x": "ssh://git@example.org/x.git"}}, "absolute path or an http"),
        ({"repositories": {"x": "http://git.example.org/x.git"}, "username": "c", "password_secret": "P"}, "in clear"),
        ({"branch": "../main"}, "not a branch name"),
        ({"branch": "-c"}, "not a branch name"),
        ({"display_url": "javascript:alert(1)//{path}"}, "http"),
        ({"gitolite_conf": "gitolite.conf"}, "absolute"),
        ({"authenticated_token": "developers"}, "not an access token"),
        ({"group_filter": "(memberUid=*)"}, "is not a relation of a group"),
        ({"group_filter": "(member=%{dn})", "group_token": "group:{id}"}, "set one"),
        ({"repositories": {"x": "/srv/git/x.git"}, "username": "c"}, "go together"),  # no URL: still half given
    ],
)
def test_options_refused_with_one_line_each(changes: dict[str, Any], error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        GitOptions.model_validate({"repositories": REPOSITORIES, **changes})


@pytest.mark.parametrize(
    ("record", "entry"),
    [
        (f"100644 blob {SHA}      12\tdocs/a.md".encode(), ("100644", SHA, 12, "docs/a.md")),
        (f"120000 blob {SHA}      11\tlink".encode(), ("120000", SHA, 11, "link")),  # listed, then left out: no file
        (f"160000 commit {SHA}       -\tvendor/lib".encode(), None),  # a submodule
        (f"100644 blob {SHA}      12\tname\nwith a newline".encode(), None),
        (f"100644 blob {SHA}      12\t".encode() + b"\xff\xfe.txt", None),  # no UTF-8
        (b"100644 blob nothex      12\tx", None),
        (b"garbage", None),
    ],
)
def test_tree_records_as_git_writes_them(record: bytes, entry: tuple[str, str, int, str] | None) -> None:
    assert _entry(record) == entry


def test_keys_and_content_types() -> None:
    agent = GitAgent("code", GitOptions.model_validate({"repositories": REPOSITORIES, "exclude": ["vendor/**"]}))
    assert agent.refusal("handbook:docs/a.md") is None and agent.refusal("tools/deploy:run.sh") is None
    assert agent.refusal("other:a.md") == "not a repository of the source"
    assert agent.refusal("handbook:vendor/x/y.js")
    assert content_type("README.md", b"# Title\n") == "text/plain; charset=utf-8"  # Markdown, code: their text
    assert content_type("Makefile", b"all:\n\ttrue\n") == "text/plain; charset=utf-8"
    assert content_type("report.pdf", b"%PDF-1.7") == "application/pdf"
    assert content_type("logo.png", b"\x89PNG\r\n") == "image/png"
    assert content_type("data.bin", b"\x00\x01") == "application/octet-stream"
    assert content_type("index.html", b"<html>") == "text/html"


def test_a_hostile_repositorys_configuration_runs_no_program(tmp_path: Path) -> None:
    """A partial clone whose promisor remote is an ``ext::`` command (and another through
    ``core.sshCommand``): listing its tree must not run them (a hostile review found both ran)."""
    repo, marker = tmp_path / "evil.git", tmp_path / "PWNED"
    work = tmp_path / "work"

    def git(*arguments: str, cwd: Path = tmp_path) -> str:
        command = ["git", "-c", "user.name=T", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main", *arguments]
        return subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True).stdout

    git("init", "--quiet", str(work))
    (work / "a.txt").write_text("hello")
    git("add", "a.txt", cwd=work)
    git("commit", "--quiet", "-m", "one", cwd=work)
    git("clone", "--quiet", "--bare", str(work), str(repo))
    blob = git("--git-dir", str(repo), "rev-parse", "HEAD:a.txt").strip()
    (repo / "objects" / blob[:2] / blob[2:]).unlink()  # missing: a lazy fetch would fetch it
    for key, value in [
        ("core.repositoryformatversion", "1"), ("extensions.partialClone", "origin"),
        ("remote.origin.promisor", "true"), ("remote.origin.url", f"ext::sh -c touch% {marker}"),
        ("protocol.ext.allow", "always"), ("protocol.ssh.allow", "always"), ("core.sshCommand", f"touch {marker} #"),
    ]:  # fmt: skip
        git("--git-dir", str(repo), "config", key, value)
    agent = GitAgent("code", GitOptions.model_validate({"repositories": {"evil": str(repo)}, "cache_dir": str(tmp_path / "c")}))
    with pytest.raises(AgentError):
        list(agent.references(None))
    git("--git-dir", str(repo), "config", "remote.origin.url", "ssh://example.invalid/x")
    with pytest.raises(AgentError):
        list(agent.references(None))
    assert not marker.exists()


@pytest.mark.listens("a silent server for git's fetch to wait on")
def test_a_fetch_from_a_server_that_never_answers_is_killed_whole(tmp_path: Path) -> None:
    """A server that takes the connection and says nothing: the fetch ends after ten times the
    timeout with every process git started (remote-http), none left behind holding the password."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}/silent.git"
    options = {"repositories": {"silent": url}, "branch": "main", "cache_dir": str(tmp_path / "c"), "timeout": 0.3}
    agent = GitAgent("code", GitOptions.model_validate(options))
    try:
        with pytest.raises(AgentError, match="took longer than 3 s"):
            list(agent.references(None))
        left = subprocess.run(["pgrep", "-f", f"127.0.0.1:{port}"], capture_output=True, text=True).stdout.split()
        assert left == []
    finally:
        stop.set()
        thread.join()
        listener.close()
        for connection in held:
            connection.close()


def test_a_gitolite_conf_newer_than_its_compiled_rules_reads_nothing(tmp_path: Path) -> None:
    """gitolite keeps the rules it compiled when it refuses a change (the admin repository's hook
    checks the new file out first): a conf newer than them is not what is in force (927)."""
    conf = tmp_path / "gitolite.conf"
    compiled = tmp_path / "gitolite.conf-compiled.pm"
    conf.write_text("repo handbook\n    R = alice\n")
    compiled.write_text("# compiled\n")
    os.utime(conf, ns=(1_000_000_000_000, 1_000_000_000_000))
    os.utime(compiled, ns=(2_000_000_000_000, 2_000_000_000_000))
    options = {"repositories": {"handbook": "/srv/git/handbook.git"}, "gitolite_conf": str(conf)}
    agent = GitAgent("code", GitOptions.model_validate(options))
    access, why = agent._access("handbook")  # noqa: SLF001
    assert access is not None and why is None
    os.utime(conf, ns=(3_000_000_000_000, 3_000_000_000_000))
    agent = GitAgent("code", GitOptions.model_validate(options))
    access, why = agent._access("handbook")  # noqa: SLF001
    assert access is None and why is not None and "newer than what gitolite compiled" in why
    # issue 91 point 21: the listing fails, saying why, rather than find every file 927 (gone)
    with pytest.raises(AgentError, match="newer than what gitolite compiled from it .*nothing is removed"):
        next(iter(agent.references(None)))
    compiled.unlink()
    agent = GitAgent("code", GitOptions.model_validate(options))
    assert agent._access("handbook")[0] is None  # noqa: SLF001


STUB_LDAPSEARCH = """#!/bin/sh
printf '%s\\n' "$*" >> "$(dirname "$0")/asked"
case "$*" in
  *"(uid=bob)"*) printf 'dn: uid=bob (ext),ou=contractors,dc=example,dc=org\\n\\n' ;;
  *"(uid=twice)"*) printf 'dn: uid=twice,ou=a,dc=example,dc=org\\n\\ndn: uid=twice,ou=b,dc=example,dc=org\\n\\n' ;;
  *) printf 'dn: cn=finance,ou=groups,dc=example,dc=org\\ncn: finance\\ncn: money\\n\\n'
     printf 'dn: cn=equipe,ou=groups,dc=example,dc=org\\ncn:: w6lxdWlwZQ==\\ncn: second\\n\\n' ;;
esac
"""


def test_the_documented_grouplist_program_looks_the_dn_up_and_prints_first_cns(tmp_path: Path) -> None:
    """Issue 91 (review of point 2, finding 4): the docs' GROUPLIST_PGM (the one the e2e test runs
    against slapd) searches member by the user's own entry's DN wherever it is (escaped in the
    filter), prints each group's first cn only, a base64 one decoded, and no group for a name two
    entries bear. Run with a stub ldapsearch printing LDIF."""
    stub = tmp_path / "bin" / "ldapsearch"
    stub.parent.mkdir()
    stub.write_text(STUB_LDAPSEARCH)
    stub.chmod(0o755)
    program = tmp_path / "groups.sh"
    program.write_text(documented_grouplist("ldapsearch -x", "ou=people,dc=test", "ou=groups,dc=test"))
    env = {**os.environ, "PATH": f"{stub.parent}:{os.environ['PATH']}"}

    def groups(user: str) -> str:
        return subprocess.run(["sh", str(program), user], capture_output=True, text=True, env=env, check=True, timeout=30).stdout

    assert groups("bob") == "finance\néquipe\n"
    asked = (stub.parent / "asked").read_text().splitlines()
    assert (
        asked[-1] == "-x -b ou=groups,dc=test (|(memberUid=bob)(member=uid=bob \\28ext\\29,ou=contractors,dc=example,dc=org)) cn"
    )
    assert groups("twice") == ""
