"""A real IMAP server for tests: Debian's Dovecot on 127.0.0.1, with its ACL plugin (RFC 4314).

``MailServer(folder).start()`` writes a dovecot.conf, its users and a certificate of a CA of its
own (trustme), and starts ``dovecot -F`` with IMAPS and IMAP (StartTLS) on free ports, returning
once it greets. Every worker of a test run starts its own (the session fixture ``mail_server``,
which tests/conftest.py imports). What tests may rely on:

- ``imaps_port``, ``imap_port``, ``ca_file``; ``CRAWLER`` (a master user: it logs in for any
  user by SASL PLAIN with the user as authorization identity) and ``crawler_password``; the
  global ACL gives it ``lra`` on every folder, as an admin would;
- ``USERS``: each user's password and Dovecot groups (``acl_groups``: ``$sales`` in an ACL);
- ``client(user)``: an imapclient logged in as the user, to change the mailbox as they would;
- ``folder_rights(user, owner, folder)``: what the server answers ``user`` for MYRIGHTS on
  ``owner``'s folder (through the shared namespace for others' folders): the oracle of who
  may read what; ``folders_rights(user, folders)``: the same for many folders, in one session;
- a public namespace (``Public/``) with one folder, ``Public/Notices``, that alice may write
  and read, and the crawler read (as itself).

Dovecot's processes run as the ``dovecot`` user: the server's files live in a folder of their
own under /tmp (pytest's temporary folders are private to root).
"""

from __future__ import annotations

import contextlib
import shutil
import ssl
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from searchcrawl.dev.jvm_server import free_port
from searchcrawl.dev.servers.server_processes import stop, stopped_on_failure, wait_listening

CRAWLER = "crawler"
# user -> (password, Dovecot groups)
USERS = {
    "alice": ("alice-imap-password", ()),
    "bob": ("bob-imap-password", ("sales",)),
    "carol": ("carol-imap-password", ("sales", "board")),
    "dave": ("dave-imap-password", ("board",)),
}


class MailServer:
    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="sc-dovecot-"))
        self.folder.chmod(0o755)
        self.crawler_password = "crawler-imap-secret-4711"
        self.imaps_port = self.imap_port = 0
        self.ca_file = ""
        self.process: subprocess.Popen[bytes] | None = None

    @stopped_on_failure
    def start(self) -> MailServer:
        import trustme

        ca = trustme.CA()
        certificate = ca.issue_cert("127.0.0.1", "localhost")
        self.ca_file = str(self.folder / "ca.pem")
        ca.cert_pem.write_to_path(self.ca_file)
        certificate.cert_chain_pems[0].write_to_path(str(self.folder / "server.pem"))
        # the key and the password files are the server's alone: the folder is world-readable (dovecot's
        # processes walk it), the key read by dovecot's config process (root), the passwords by its auth
        # process (the dovecot user)
        key = self.folder / "server.key"
        key.touch(0o600)
        certificate.private_key_pem.write_to_path(str(key))
        for name in ("mail", "public", "state", "run"):
            (self.folder / name).mkdir()
        # a public folder, Public/Notices: alice may write it, and nobody else has rights but the crawler
        notices = self.folder / "public" / ".Notices"
        for name in ("cur", "new", "tmp"):
            (notices / name).mkdir(parents=True)
        (notices / "dovecot-acl").write_text("user=alice lrwstipekxa\n")
        for path in (notices, *notices.iterdir()):
            shutil.chown(path, "dovecot", "dovecot")
        shutil.chown(self.folder / "mail", "dovecot", "dovecot")
        shutil.chown(self.folder / "public", "dovecot", "dovecot")
        shutil.chown(self.folder / "state", "dovecot", "dovecot")
        users = [
            f"{user}:{{PLAIN}}{password}::::::userdb_acl_groups={','.join(groups)}" for user, (password, groups) in USERS.items()
        ]
        users.append(f"{CRAWLER}:{{PLAIN}}{self.crawler_password}::::::")  # as itself too: public folders
        secret_file(self.folder / "users", "\n".join(users) + "\n")
        secret_file(self.folder / "masters", f"{CRAWLER}:{{PLAIN}}{self.crawler_password}::::::\n")
        # the crawler's rights everywhere (a global ACL file: shown as "#crawler" by GETACL)
        (self.folder / "global-acl").write_text(f"* user={CRAWLER} lra\n")
        self.imaps_port, self.imap_port = free_port(), free_port()
        config = self.folder / "dovecot.conf"
        config.write_text(dovecot_config(self.folder, self.imap_port, self.imaps_port))
        with (self.folder / "dovecot.log").open("wb") as log:
            self.process = subprocess.Popen(["/usr/sbin/dovecot", "-F", "-c", str(config)], stdout=log, stderr=subprocess.STDOUT)
        wait_listening(self.process, self.imap_port, self.folder / "dovecot.log", greeting=b"* OK")
        return self

    def stop(self) -> None:
        stop(self.process)
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- as the users do -------------------------------------------------------------------

    @contextlib.contextmanager
    def client(self, user: str, public: bool = False) -> Iterator[Any]:
        """An imapclient logged in as ``user`` (the crawler: as itself, for public folders)."""
        import imapclient

        context = ssl.create_default_context(cafile=self.ca_file)
        client = imapclient.IMAPClient("127.0.0.1", port=self.imaps_port, ssl=True, ssl_context=context, timeout=30)
        if user == CRAWLER:
            client.plain_login(CRAWLER, self.crawler_password)
        else:
            client.login(user, USERS[user][0])
        try:
            yield client
        finally:
            with contextlib.suppress(Exception):
                client.logout()

    def folder_rights(self, user: str, owner: str, folder: str) -> str:
        """MYRIGHTS of ``user`` on ``owner``'s ``folder`` ("" when the server says none)."""
        return self.folders_rights(user, [(owner, folder)])[owner, folder]

    def folders_rights(self, user: str, folders: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """``folder_rights`` of ``user`` on each (owner, folder) of ``folders``, asked in one
        session logged in as them (a TLS handshake and a login each, 30-50 ms of a loaded
        machine, where a MYRIGHTS takes 1): each folder's answer as the server gives it to that
        user, nothing in between changing a right."""
        rights = {}
        with self.client(user) as client:
            for owner, folder in folders:
                name = folder if owner == user or owner == "#public" else f"shared/{owner}/{folder}"
                rights[owner, folder] = my_rights(client, name)
        return rights


def my_rights(client: Any, name: str) -> str:
    """The server's MYRIGHTS answer to ``client`` for the folder ``name`` ("" when it says none,
    or that there is no such folder)."""
    try:
        typ, data = client._imap._simple_command("MYRIGHTS", client._normalise_folder(name))  # noqa: SLF001
        _typ, data = client._imap._untagged_response(typ, data, "MYRIGHTS")  # noqa: SLF001
    except client.Error:
        return ""
    if typ != "OK" or not data or data[0] is None:
        return ""
    return str(data[0].decode().rsplit(" ", 1)[-1])


def secret_file(path: Path, text: str) -> None:
    """``text`` in a file only the dovecot user (its auth process) reads: never world-readable,
    not even for a moment."""
    path.touch(0o600)
    shutil.chown(path, "dovecot", "dovecot")
    path.write_text(text)


def dovecot_config(root: Path, imap_port: int, imaps_port: int) -> str:
    """The server's dovecot.conf: docs/non-web-sources.md shows its ACL, namespace and master
    user lines (tests/test_readme.py holds them equal)."""
    return f"""
base_dir = {root}/run
state_dir = {root}/state
instance_name = sc-dovecot-{imap_port}
protocols = imap
listen = 127.0.0.1
log_path = {root}/dovecot.log
ssl = yes
ssl_cert = <{root}/server.pem
ssl_key = <{root}/server.key
disable_plaintext_auth = no
auth_mechanisms = plain
first_valid_uid = 1
mail_uid = dovecot
mail_gid = dovecot
mail_location = maildir:{root}/mail/%u
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap_port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {imaps_port}
  }}
}}
service anvil {{
  chroot =
}}
passdb {{
  driver = passwd-file
  args = {root}/masters
  master = yes
  result_success = continue
}}
passdb {{
  driver = passwd-file
  args = {root}/users
}}
userdb {{
  driver = passwd-file
  args = {root}/users
  default_fields = uid=dovecot gid=dovecot home={root}/mail/%u
}}
namespace inbox {{
  inbox = yes
  separator = /
  prefix =
}}
namespace shared {{
  type = shared
  separator = /
  prefix = shared/%%u/
  location = maildir:{root}/mail/%%u:INDEXPVT={root}/mail/%u/shared/%%u
  subscriptions = no
  list = children
}}
namespace public {{
  type = public
  separator = /
  prefix = Public/
  location = maildir:{root}/public
  subscriptions = no
}}
mail_plugins = $mail_plugins acl
protocol imap {{
  mail_plugins = $mail_plugins imap_acl
}}
plugin {{
  acl = vfile:{root}/global-acl:cache_secs=0
  acl_shared_dict = file:{root}/state/shared-mailboxes.db
}}
"""
