"""Real Git repositories for tests: gitolite (Debian's gitolite3) in a home of its own, its
repositories also served over smart HTTP by Apache httpd and git's own ``git-http-backend``
behind basic auth, on 127.0.0.1.

``GitServer().start()`` sets gitolite up (``gitolite setup -a admin``), writes its rules
(``set_rules``: the groups and repositories below), and starts ``apache2 -DFOREGROUND`` on a free
port. What tests may rely on:

- ``repositories``: gitolite's repositories folder (``<name>.git`` in it); ``url(name)``: the
  repository over HTTP (``http://127.0.0.1:<port>/git/<name>.git``), ``CRAWLER`` and
  ``crawler_password`` the account Apache asks;
- ``conf``: gitolite.conf (the file a source's ``gitolite_conf`` names); ``set_rules(text)``
  rewrites it and compiles it, creating the repositories it names;
- ``commit(name, files)``: one commit on ``main`` writing (text) or deleting (None) files;
- ``can_read(user, name)``: gitolite's own answer (``gitolite access -q <name> <user> R any``),
  the users' directory groups given to gitolite by a ``GROUPLIST_PGM``; ``readable(users,
  names)``: the same answers for many users and repositories, asked of one ``gitolite access``;
  ``grouplist(script)``: another program while a block runs (one that asks the tests' slapd, say).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from searchcrawl.dev.jvm_server import free_port
from searchcrawl.dev.servers.server_processes import start_apache, stop, stopped_on_failure, write_htpasswd

CRAWLER = "crawler"
# the directory's groups of each user as the searchers' principals read them (searchcrawl/dev/servers/slapd.py:
# nested ones flattened, primary groups included), as the GROUPLIST_PGM that group_token asks for gives them
DIRECTORY_GROUPS = {
    "alice": ("accounting", "finance", "all-staff", "staff", "loop-a", "loop-b"),
    "bob": ("all-staff", "developers"),
}
MODULES = ("mpm_event", "authz_core", "authn_core", "auth_basic", "authn_file", "authz_user", "alias", "env", "cgid", "mime")


class GitServer:
    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="sc-git-"))
        self.folder.chmod(0o755)
        self.home = self.folder / "gitolite"
        self.repositories = self.home / "repositories"
        self.conf = self.home / ".gitolite" / "conf" / "gitolite.conf"
        self.work = self.folder / "work"
        self.crawler_password = "crawler-git-secret-0815"
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/git/{name}.git"

    @stopped_on_failure
    def start(self) -> GitServer:
        self.home.mkdir()
        self.gitolite("setup", "-a", "admin")
        # users' groups from the directory, as a site's GROUPLIST_PGM gives them (its LDAP groups)
        groups = self.folder / "groups.sh"
        cases = "".join(f"  {user}) echo {' '.join(names)} ;;\n" for user, names in DIRECTORY_GROUPS.items())
        groups.write_text(f'#!/bin/sh\ncase "$1" in\n{cases}esac\n')
        groups.chmod(0o755)
        rc = self.home / ".gitolite.rc"
        rc.write_text(rc.read_text().replace("%RC = (", f"%RC = (\n    GROUPLIST_PGM => '{groups}',", 1))
        write_htpasswd(self.folder / "htpasswd", CRAWLER, self.crawler_password)
        self.port = free_port()
        modules = "\n".join(f"LoadModule {name}_module /usr/lib/apache2/modules/mod_{name}.so" for name in MODULES)
        (self.folder / "httpd.conf").write_text(
            f"""ServerRoot {self.folder}
ServerName 127.0.0.1
Listen 127.0.0.1:{self.port}
PidFile {self.folder}/httpd.pid
ErrorLog {self.folder}/error.log
ScriptSock {self.folder}/cgid.sock
TypesConfig /etc/mime.types
{modules}
SetEnv GIT_PROJECT_ROOT {self.repositories}
SetEnv GIT_HTTP_EXPORT_ALL 1
SetEnv GIT_CONFIG_NOSYSTEM 1
ScriptAlias /git/ /usr/lib/git-core/git-http-backend/
<Location /git/>
  AuthType Basic
  AuthName git
  AuthUserFile {self.folder}/htpasswd
  Require user {CRAWLER}
</Location>
"""
        )
        self.process = start_apache(self.folder, self.port)
        return self

    def stop(self) -> None:
        stop(self.process)
        shutil.rmtree(self.folder, ignore_errors=True)

    def env(self) -> dict[str, str]:
        # the update hook gitolite installs refuses a push without its library and a bypass
        bypass = {"GL_BYPASS_ACCESS_CHECKS": "1", "GL_LIBDIR": "/usr/share/gitolite3/lib"}
        return {**os.environ, "HOME": str(self.home), "GIT_CONFIG_NOSYSTEM": "1", **bypass}

    def gitolite(self, *arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["gitolite", *arguments], env=self.env(), cwd=self.home, capture_output=True, text=True, timeout=120
        )

    def set_rules(self, text: str, check: bool = True) -> bool:
        """gitolite.conf rewritten (the admin repository's rules kept) and compiled: the
        repositories it names are created, with gitolite's hooks. Whether gitolite took it
        (``check``: it must).

        ``gitolite compile`` alone: it writes all that ``gitolite access`` reads (the compiled
        rules, each repository's gl-conf) and creates the new repositories with their update hook
        (gitolite's Conf.pm: new_repos, store). ``gitolite setup`` after it, as this did, compiled
        again and ran the POST_COMPILE triggers (authorized keys, git-daemon and gitweb lists,
        repository configs from ``config`` lines: none decides an access) and re-installed the
        hooks: 1.2 s of a loaded machine where the compile takes 0.14."""
        self.conf.write_text("repo gitolite-admin\n    RW+ = admin\n" + text)
        done = self.gitolite("compile")
        assert done.returncode == 0 or not check, done.stderr
        return done.returncode == 0

    def git(self, *arguments: str, cwd: Path | None = None) -> str:
        done = subprocess.run(
            ["git", "-c", "user.name=Tests", "-c", "user.email=tests@example.org", "-c", "init.defaultBranch=main", *arguments],
            env=self.env(), cwd=cwd or self.folder, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, (arguments, done.stderr)
        return done.stdout

    def commit(self, name: str, files: dict[str, str | None]) -> None:
        """One commit on main: each path written (its text) or deleted (None), pushed."""
        clone = self.work / name
        if not clone.is_dir():
            self.git("clone", "--quiet", str(self.repositories / f"{name}.git"), str(clone))
            self.git("checkout", "--quiet", "-B", "main", cwd=clone)
        for path, text in files.items():
            target = clone / path
            if text is None:
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        self.git("add", "--all", cwd=clone)
        self.git("commit", "--quiet", "--allow-empty", "-m", "tests", cwd=clone)
        self.git("push", "--quiet", "origin", "main", cwd=clone)
        self.git("--git-dir", str(self.repositories / f"{name}.git"), "symbolic-ref", "HEAD", "refs/heads/main")

    def readable(self, users: Iterable[str], names: Iterable[str]) -> dict[str, set[str]]:
        """Of ``names``, those gitolite lets each of ``users`` read: ``can_read``'s answers, all
        from one ``gitolite access % % R any`` (its batch mode: a repository and a user a line on
        stdin, each answered as the single query answers it, one line each) instead of a
        process each (0.1 s of a loaded machine's CPU, a Perl start and gitolite's rules read)."""
        users, names = list(users), list(names)
        pairs = [(name, user) for user in users for name in names]
        done = subprocess.run(
            ["gitolite", "access", "%", "%", "R", "any"], input="".join(f"{name} {user}\n" for name, user in pairs),
            env=self.env(), cwd=self.home, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        answers = [line.split("\t") for line in done.stdout.splitlines()]
        # each line "<repository>\t<user>\t<answer>", in the order asked: an answer missing fails
        assert [tuple(answer[:2]) for answer in answers] == pairs, (pairs, done.stdout, done.stderr)
        readable: dict[str, set[str]] = {user: set() for user in users}
        for name, user, answer in answers:
            if "DENIED" not in answer:
                readable[user].add(name)
        return readable

    @contextmanager
    def grouplist(self, script: str) -> Iterator[None]:
        """GROUPLIST_PGM is ``script`` (a shell script: ``$1`` the user) while the block runs."""
        program = self.folder / "groups.sh"
        before = program.read_text()
        program.write_text(script)
        try:
            yield
        finally:
            program.write_text(before)

    def can_read(self, user: str, name: str) -> bool:
        """gitolite's own answer."""
        return self.gitolite("access", "-q", name, user, "R", "any").returncode == 0
