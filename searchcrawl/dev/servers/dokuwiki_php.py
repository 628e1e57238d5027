"""A real DokuWiki for tests: Debian's ``dokuwiki`` package (2022-07-31 "Igor") under PHP's own
web server on 127.0.0.1, with a configuration and pages of its own, its users and groups those of
the tests' LDAP directory (searchcrawl/dev/servers/slapd.py), kept in its plain user file.

``WikiServer().start()`` copies the package's code into a temporary folder (its ``inc/preload.php``
pointing at a ``conf/`` of its own), writes the configuration (ACLs on, the XML-RPC interface open
to every user, ``@admin`` the superusers), and starts ``php -S`` with four workers. What tests may
rely on:

- ``url``: ``http://127.0.0.1:<port>/``; ``CRAWLER`` (in ``@admin``) and ``password(user)``;
- ``acl_file``: the rules' file (the one a source's ``acl_file`` names); ``set_rules(lines)``
  rewrites it (DokuWiki reads it at every request);
- ``put(page, text)``: save a page as the crawler (an empty text deletes it, as in DokuWiki);
  ``pages()``: the ids of the pages there are;
- ``can_read(user, page)``: the wiki's own answer for that user, signed in as them
  (``wiki.aclCheck``: their ``%USER%`` rules filled in; ``""`` not signed in), the oracle;
  ``readable(users, pages)``: the same answers for many pages, one request a user.

``WikiServer(directory).start()`` is a DokuWiki on LDAP instead: its users and groups those of
``directory`` (a searchcrawl/dev/servers/slapd.py ``DirectoryServer``, which must hold ``CRAWLER`` with
``password(CRAWLER)``) through DokuWiki's own authldap plugin (Debian's php-ldap), the crawler
its superuser, the users' passwords the directory's; ``set_groupfilter(text)`` sets authldap's
``groupfilter`` (read at every request).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import xmlrpc.client
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import requests

from searchcrawl.dev.jvm_server import free_port
from searchcrawl.dev.servers.server_processes import stop, stopped_on_failure, wait_listening
from searchcrawl.dev.servers.slapd import DirectoryServer

PACKAGE = Path("/usr/share/dokuwiki")
CRAWLER = "crawler"
# user -> the wiki's groups: the directory's memberships as the searchers' principals read them
# (nested ones flattened, primary groups included: a wiki whose groups are the directory's, which
# DokuWiki's authldap, one search by its groupfilter, is not), "user" DokuWiki's default group
GROUPS = {
    CRAWLER: ("admin", "user"),
    "alice": ("user", "accounting", "finance", "all-staff", "staff", "loop-a", "loop-b"),
    "bob": ("user", "all-staff", "developers"),
    "carol": ("user",),
}
DATA_FOLDERS = ("attic", "cache", "index", "locks", "log", "media", "media_attic", "media_meta", "meta", "pages", "tmp")


class WikiServer:
    def __init__(self, directory: DirectoryServer | None = None) -> None:
        self.directory = directory  # a DokuWiki on this LDAP directory (authldap), else its plain user file
        self.folder = Path(tempfile.mkdtemp(prefix="sc-dokuwiki-"))
        self.app, self.conf, self.data = self.folder / "app", self.folder / "conf", self.folder / "data"
        self.acl_file = self.conf / "acl.auth.php"
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def password(self, user: str) -> str:
        if self.directory is not None and user in self.directory.passwords:
            return self.directory.passwords[user]
        return f"wiki-{user}-password-4711"

    @stopped_on_failure
    def start(self) -> WikiServer:
        shutil.copytree(PACKAGE, self.app, symlinks=False, ignore=shutil.ignore_patterns(".htaccess*"))
        (self.app / "inc" / "preload.php").write_text(f"<?php\nif(!defined('DOKU_CONF')) define('DOKU_CONF', '{self.conf}/');\n")
        self.conf.mkdir()
        for item in Path("/etc/dokuwiki").iterdir():
            if (
                item.is_file()
                and item.suffix in (".php", ".conf", ".css", ".json")
                and not item.name.startswith(("acl.", "users."))
            ):
                shutil.copy(item, self.conf / item.name)
        for name in DATA_FOLDERS:
            (self.data / name).mkdir(parents=True)
        (self.conf / "local.php").write_text(
            f"""<?php
$conf['savedir'] = '{self.data}';
$conf['title'] = 'Tests wiki';
$conf['useacl'] = 1;
$conf['superuser'] = '@admin';
$conf['remote'] = 1;
$conf['remoteuser'] = '';
$conf['userewrite'] = 0;
"""
        )
        if self.directory is not None:
            self._on_ldap(self.directory)
        # bcrypt at its lowest cost (4, not PHP's 10): every signed-in request checks the password
        # (XML-RPC signs in at each request), 130 ms of CPU at cost 10 where the rest of the request
        # takes 5; the hash is still what DokuWiki verifies, and no test is about its cost
        digests = subprocess.run(
            ["php", "-r", "foreach (array_slice($argv, 1) as $p) echo password_hash($p, PASSWORD_BCRYPT, ['cost' => 4]), \"\\n\";",
             *(self.password(user) for user in GROUPS)],
            check=True, capture_output=True, text=True,
        ).stdout.split()  # fmt: skip
        assert len(digests) == len(GROUPS), digests
        lines = [
            f"{user}:{digest}:{user.title()}:{user}@example.org:{','.join(groups)}\n"
            for (user, groups), digest in zip(GROUPS.items(), digests, strict=True)
        ]
        (self.conf / "users.auth.php").write_text("".join(lines))
        self.set_rules(["*  @ALL  1"])
        self.port = free_port()
        with (self.folder / "php.log").open("wb") as log:
            self.process = subprocess.Popen(
                # opcache checks each PHP file's time at every request: a configuration rewritten is read at once
                ["php", "-d", "opcache.revalidate_freq=0", "-S", f"127.0.0.1:{self.port}", "-t", str(self.app)],
                start_new_session=True,  # its workers with it: stopped as a group
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.app,
                env={**os.environ, "PHP_CLI_SERVER_WORKERS": "4"},
            )
        wait_listening(self.process, self.port, self.folder / "php.log")
        return self

    def stop(self) -> None:
        stop(self.process, group=True)
        shutil.rmtree(self.folder, ignore_errors=True)

    def _on_ldap(self, directory: DirectoryServer) -> None:
        """authldap against ``directory``: the crawler its superuser, groups by ``set_groupfilter``."""
        with (self.conf / "local.php").open("a") as local:
            local.write(
                f"""$conf['authtype'] = 'authldap';
$conf['superuser'] = '{CRAWLER}';
$conf['plugin']['authldap']['server'] = '{directory.url}';
$conf['plugin']['authldap']['version'] = 3;
$conf['plugin']['authldap']['usertree'] = '{directory.user_base}';
$conf['plugin']['authldap']['userfilter'] = '(&(uid=%{{user}})(objectClass=posixAccount))';
$conf['plugin']['authldap']['grouptree'] = '{directory.group_base}';
$conf['plugin']['authldap']['binddn'] = '{directory.bind_dn}';
$conf['plugin']['authldap']['bindpw'] = '{directory.bind_password}';
@include(DOKU_CONF . 'groupfilter.php');
"""
            )
        self.set_groupfilter("(&(objectClass=posixGroup)(|(gidNumber=%{gid})(memberUid=%{user})))")

    def set_groupfilter(self, groupfilter: str) -> None:
        """authldap's ``groupfilter`` (DokuWiki reads its configuration at every request)."""
        assert "'" not in groupfilter and "\\" not in groupfilter
        (self.conf / "groupfilter.php").write_text(f"<?php\n$conf['plugin']['authldap']['groupfilter'] = '{groupfilter}';\n")

    def set_rules(self, lines: list[str]) -> None:
        self.acl_file.write_text("# the intranet wiki's rules\n" + "".join(f"{line}\n" for line in lines))

    def call(self, user: str, method: str, *params: Any) -> Any:
        body = xmlrpc.client.dumps(params, method, encoding="utf-8").encode()
        answer = requests.post(
            self.url + "lib/exe/xmlrpc.php", data=body, auth=(user, self.password(user)) if user else None, timeout=60,
            headers={"Content-Type": "text/xml"},
        )  # fmt: skip
        answer.raise_for_status()
        return xmlrpc.client.loads(answer.content, use_builtin_types=True)[0][0]

    def put(self, page: str, text: str) -> None:
        assert self.call(CRAWLER, "wiki.putPage", page, text, {"sum": "tests"}) is True

    def pages(self) -> list[str]:
        return sorted(page["id"] for page in self.call(CRAWLER, "dokuwiki.getPagelist", "", {"depth": 0}))

    def can_read(self, user: str, page: str) -> bool:
        """The wiki's own answer, signed in as ``user`` ("": not signed in)."""
        return int(self.call(user, "wiki.aclCheck", page)) >= 1

    def readable(self, users: Iterable[str], pages: Iterable[str]) -> dict[str, set[str]]:
        """Of ``pages`` (pages the wiki has), those it lets each of ``users`` read: ``can_read``'s
        answer for every page, in one request per user instead of one per page (each is a
        sign-in, a bcrypt check, and a DokuWiki start: 0.1-0.2 s of a loaded machine). The
        request is the page list signed in as them (``dokuwiki.getPagelist``), which keeps a page
        when ``auth_quickaclcheck`` gives them read: the check ``wiki.aclCheck`` answers
        ``can_read`` with (DokuWiki 2022-07-31: inc/search.php's search_allpages, inc/Remote/ApiCore.php)."""
        asked = set(pages)
        missing = asked - set(self.pages())
        assert not missing, f"pages the wiki does not have (its list could not say who reads them): {sorted(missing)}"
        return {
            user: asked & {page["id"] for page in self.call(user, "dokuwiki.getPagelist", "", {"depth": 0})} for user in users
        }
