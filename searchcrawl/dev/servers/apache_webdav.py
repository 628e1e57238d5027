"""A real WebDAV server for tests: Debian's Apache httpd with mod_dav on 127.0.0.1, its users
signed in against the tests' LDAP directory (mod_authnz_ldap, searchcrawl/dev/servers/slapd.py), and
``Require`` rules per folder, as an intranet's file server would have them.

``WebdavServer(directory).start()`` writes an httpd configuration (``config_file``: the file a
source's ``apache_config`` names), a folder of files served as ``/dav/`` (``files``, owned by
www-data), and starts ``apache2 -DFOREGROUND`` on a free port, returning once it answers. What
tests may rely on:

- ``url``: ``http://127.0.0.1:<port>/dav/``; ``CRAWLER`` and ``crawler_password`` (a user of an
  htpasswd file, allowed everywhere by ``Require user crawler``);
- ``rules``: the sections below ``/dav/`` and who each lets read (the config is made from
  them): ``finance/`` the nested group finance (alice, by accounting), ``private/`` bob alone,
  ``board`` (a Location without a slash, which Apache matches in whole segments: not
  ``boardroom/``) the group all-staff and carol, everything else all-staff (the Directory's own rule);
- ``write(path, text)``, ``remove(path)``, ``move(old, new)``: change the tree on disk;
- ``can_read(user, path)``: Apache's own answer to a GET as that user (the oracle);
- ``set_rule(location, requires)``: rewrite a Location's Require lines (None: remove it) and
  reload Apache.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import requests

from searchcrawl.dev.jvm_server import free_port
from searchcrawl.dev.servers.server_processes import start_apache, stop, stopped_on_failure, write_htpasswd
from searchcrawl.dev.servers.slapd import SUFFIX, DirectoryServer

CRAWLER = "crawler"
MODULES = (
    "mpm_event", "authz_core", "authn_core", "auth_basic", "authn_file", "authz_user", "ldap", "authnz_ldap",
    "dav", "dav_fs", "alias", "mime", "dir",
)  # fmt: skip
FINANCE = f"cn=finance,ou=groups,{SUFFIX}"
ALL_STAFF = f"cn=all-staff,ou=groups,{SUFFIX}"


class WebdavServer:
    def __init__(self, directory: DirectoryServer) -> None:
        self.directory = directory
        self.folder = Path(tempfile.mkdtemp(prefix="sc-apache-"))
        self.folder.chmod(0o755)
        self.files = self.folder / "files"
        self.config_file = self.folder / "dav.conf"
        self.crawler_password = "crawler-dav-secret-0815"
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.clock = time.time() - 86400
        # Location (below /dav) -> its Require lines besides the crawler's
        self.rules: dict[str, list[str]] = {
            "finance/": [f"ldap-group {FINANCE}"],
            "private/": ["user bob"],
            "board": [f"ldap-group {ALL_STAFF}", "user carol"],
        }

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/dav/"

    @stopped_on_failure
    def start(self) -> WebdavServer:
        self.files.mkdir()
        shutil.chown(self.files, "www-data", "www-data")
        write_htpasswd(self.folder / "htpasswd", CRAWLER, self.crawler_password)
        self.port = free_port()
        self._write_config()
        self.process = start_apache(self.folder, self.port)
        return self

    def stop(self) -> None:
        stop(self.process)
        shutil.rmtree(self.folder, ignore_errors=True)

    def _write_config(self) -> None:
        root = self.folder
        modules = "\n".join(f"LoadModule {name}_module /usr/lib/apache2/modules/mod_{name}.so" for name in MODULES)
        (root / "httpd.conf").write_text(
            f"""ServerRoot {root}
ServerName 127.0.0.1
Listen 127.0.0.1:{self.port}
PidFile {root}/httpd.pid
ErrorLog {root}/error.log
{modules}
User www-data
Group www-data
TypesConfig /etc/mime.types
DavLockDB {root}/DavLock
LDAPCacheTTL 0
LDAPOpCacheTTL 0
Include {self.config_file}
"""
        )
        self.write_rules()

    def write_rules(self) -> None:
        """The site's file (the one the source names): the Directory's rule and each Location's."""
        auth = (
            "AuthType Basic\n  AuthName dav\n  AuthBasicProvider file ldap\n"
            f"  AuthUserFile {self.folder}/htpasswd\n"
            f'  AuthLDAPURL "{self.directory.url}/ou=people,{SUFFIX}?uid"\n'
            f'  AuthLDAPBindDN "{self.directory.bind_dn}"\n  AuthLDAPBindPassword "{self.directory.bind_password}"\n'
            "  AuthLDAPMaxSubGroupDepth 10\n"
        )
        locations = "".join(
            f"<Location /dav/{location}>\n  Require user {CRAWLER}\n"
            + "".join(f"  Require {line}\n" for line in lines)
            + "</Location>\n"
            for location, lines in self.rules.items()
        )
        self.config_file.write_text(
            f"""# the intranet's file server
Alias /dav {self.files}
<Directory {self.files}>
  Dav On
  AllowOverride None
  {auth}  Require user {CRAWLER}
  Require ldap-group {ALL_STAFF}
  <LimitExcept GET HEAD OPTIONS PROPFIND>
    Require user nobody-writes
  </LimitExcept>
</Directory>
{locations}"""
        )

    def set_rule(self, location: str, lines: list[str] | None) -> None:
        """A Location's Require lines changed (None: the Location removed), and Apache told (a
        graceful restart)."""
        if lines is None:
            del self.rules[location]
        else:
            self.rules[location] = lines
        self.write_rules()
        assert self.process is not None
        started = (self.folder / "error.log").read_text().count("resuming normal operations")
        self.process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 30
        while (self.folder / "error.log").read_text().count("resuming normal operations") <= started:
            assert time.monotonic() < deadline, "apache2 did not reload"
            time.sleep(0.05)

    # -- the tree ---------------------------------------------------------------------------

    def write(self, path: str, text: str) -> None:
        target = self.files / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        # a modification time of its own, a day back: Apache's ETag is strong (not "W/", as it is
        # in the second a file changed) and differs from every earlier version's
        self.clock += 1
        os.utime(target, (self.clock, self.clock))
        for part in [target, *target.relative_to(self.files).parents]:
            shutil.chown(self.files / part, "www-data", "www-data")

    def remove(self, path: str) -> None:
        (self.files / path).unlink()

    def move(self, old: str, new: str) -> None:
        target = self.files / new
        target.parent.mkdir(parents=True, exist_ok=True)
        (self.files / old).rename(target)

    def paths(self) -> list[str]:
        return sorted(str(path.relative_to(self.files)) for path in self.files.rglob("*") if path.is_file())

    def can_read(self, user: str, path: str) -> bool:
        """Apache's own answer: may ``user`` GET the file?"""
        password = self.crawler_password if user == CRAWLER else self.directory.passwords[user]
        answer = requests.get(self.url + path, auth=(user, password), timeout=30)
        assert answer.status_code in (200, 401, 403), (path, answer.status_code)
        return answer.status_code == 200
