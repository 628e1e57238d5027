"""A real Active Directory domain for tests: Debian's Samba as domain controller and SMB file server,
in a network namespace of its own.

``SambaDomain(folder).start()`` provisions a domain (``samba-tool domain provision``, realm
SC.TEST, no DNS), adds the users and groups below offline (Samba's own Python, one process),
writes the shares into its smb.conf and starts ``samba`` in a network namespace the fixture
creates (its own veth pair and 10.232.x.y/30 subnet, both derived from the pid, so that xdist
workers never meet), returning once SMB (445) answers and the crawler account binds over LDAPS.
Every worker starts its own (the session fixture ``samba_domain`` below, which tests/conftest.py
imports); ``close()`` kills samba and deletes the namespace (and so its veth pair) even after a
failed start. What tests may rely on:

- ``address``, ``realm``, ``domain``, ``base_dn``, ``domain_sid``, ``admin_password``,
  ``ldap_url``, ``ldaps_url`` and ``ca_file`` (the CA of the DC's certificate, issued for its
  address and host name: a client validates it), ``bind_dn`` / ``bind_password`` (the crawler);
- ``passwords``: each user's password (and the crawler's); ``sid(name)``, ``user_dn(name)``,
  ``group_dn(name)``;
- shares ``docs``, ``sealed`` (encryption required) and ``dfs`` (a DFS root whose link
  ``linked`` leads to ``\\\\<address>\\docs``); ``write``, ``mkdir``, ``remove`` over SMB as
  Administrator;
- ``set_acl(share, path, sddl)``, ``set_acl_entries(...)``, ``get_sddl(share, path)``: a file's
  or folder's NTFS ACL, ``set_share_acl(share, sddl)``: the share's permissions;
- ``can_read(user, share, path)``: the oracle, Samba's own decision whether that user may read;
- ``stop()`` / ``start()``: samba ends / comes back (an unreachable server).

The users: alice, bob, carol, dave and the service account crawler. The groups: staff (bob and
the group managers), managers (alice: she is in staff only through managers), auditors
(carol), interns (dave).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import ldap3
import pytest

REALM = "SC.TEST"
DOMAIN = "SC"
HOST_NAME = "dc1"
ADMIN_PASSWORD = "Adm-smb-5Tq!x"
# passwords that contain neither the account's name nor another's, as the complexity rule wants
USERS = {
    "alice": "Apple-smb-7Qz!",
    "bob": "Birch-smb-4Kw!",
    "carol": "Cedar-smb-9Xm!",
    "dave": "Delta-smb-2Rv!",
    "crawler": "Svc-smb-8Jn!q",
}
# group -> members (users or groups)
GROUPS = {
    "managers": ("alice",),
    "staff": ("bob", "managers"),
    "auditors": ("carol",),
    "interns": ("dave",),
}
SHARES = ("docs", "sealed", "dfs")
ROOT_SDDL = "O:BAG:DUD:PAI(A;OICI;FA;;;BA)(A;OICI;FA;;;SY)(A;OICI;0x1200a9;;;AU)"
READ = 0x120089  # FILE_GENERIC_READ, "FR" in SDDL
FILE_READ_DATA = 0x1
NETNS_PREFIX = "scsmb-"  # + the pid of the process that made it (stale ones are swept)
SUBNET = "10.232"  # /30 subnets of 10.232.0.0/16, one per process
SAMBA = "/usr/sbin/samba"

# Run by Debian's python3 (python3-samba): the users and groups, added offline before samba starts,
# and what the fixture needs to know of them.
_POPULATE = r"""
import json, sys
from samba.auth import system_session
from samba.dcerpc import security
from samba.ndr import ndr_unpack
from samba.param import LoadParm
from samba.samdb import SamDB

spec = json.load(sys.stdin)
lp = LoadParm()
lp.load(sys.argv[1])
samdb = SamDB(url=lp.private_path("sam.ldb"), session_info=system_session(), lp=lp)
for name, password in spec["users"].items():
    samdb.newuser(name, password)
for group in spec["groups"]:
    samdb.newgroup(group)
for group, members in spec["groups"].items():
    samdb.add_remove_group_members(group, members, add_members_operation=True)
found = {"domain_sid": str(samdb.get_domain_sid()), "base_dn": str(samdb.domain_dn()), "sids": {}, "dns": {}}
for name in [*spec["users"], *spec["groups"], "Administrator", "Domain Users"]:
    entry = samdb.search(base=samdb.domain_dn(), expression="(sAMAccountName=%s)" % name, attrs=["objectSid"])[0]
    found["sids"][name] = str(ndr_unpack(security.dom_sid, entry["objectSid"][0]))
    found["dns"][name] = str(entry.dn)
print(json.dumps(found))
"""


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run a command; its output in the error when it fails (no secrets: passwords go in files)."""
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        raise RuntimeError(
            f"{command[0]} {command[1] if len(command) > 1 else ''} failed ({result.returncode}): {result.stdout[-2000:]} {result.stderr[-2000:]}"
        )
    return result


def _smbclient() -> Any:
    """smbprotocol's high-level client, imported when used (every test session imports this module)."""
    import smbclient  # type: ignore[import-untyped]

    return smbclient


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_namespaces() -> None:
    """Delete the namespaces (and so their veth pairs) of test processes that died without cleaning up."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for line in listed.splitlines():
        name = line.split()[0] if line.split() else ""
        pid = name[len(NETNS_PREFIX) :]
        if name.startswith(NETNS_PREFIX) and pid.isdigit() and not _pid_alive(int(pid)):
            _delete_namespace(name)


def _delete_namespace(name: str) -> None:
    pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    subprocess.run(["ip", "netns", "delete", name], capture_output=True)


class SambaDomain:
    """One Samba AD DC in ``folder``, in a network namespace of its own (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.realm = REALM
        self.domain = DOMAIN
        self.admin_password = ADMIN_PASSWORD
        self.passwords = dict(USERS)
        self.namespace = f"{NETNS_PREFIX}{os.getpid()}"
        self.host_veth = f"vsmb{os.getpid()}h"
        self.namespace_veth = f"vsmb{os.getpid()}n"
        self.host_address = self.address = ""
        self.base_dn = self.domain_sid = ""
        self.ca_file = str(folder / "tls" / "ca.pem")
        self.config = folder / "etc" / "smb.conf"
        self.process: subprocess.Popen[bytes] | None = None
        self._sids: dict[str, str] = {}
        self._dns: dict[str, str] = {}
        self._admin_cache: dict[str, object] = {}

    # -- what tests read -------------------------------------------------------------------
    @property
    def ldap_url(self) -> str:
        return f"ldap://{self.address}"

    @property
    def ldaps_url(self) -> str:
        return f"ldaps://{self.address}"

    @property
    def bind_dn(self) -> str:
        return self.user_dn("crawler")

    @property
    def bind_password(self) -> str:
        return self.passwords["crawler"]

    def sid(self, name: str) -> str:
        """The SID of a user or group of the domain (or Administrator, Domain Users)."""
        return self._sids[name]

    def user_dn(self, name: str) -> str:
        return self._dns[name]

    def group_dn(self, name: str) -> str:
        return self._dns[name]

    def share_path(self, share: str) -> Path:
        """The folder a share serves (to look at it from the host; change it over SMB)."""
        return self.folder / "shares" / share

    def unc(self, share: str, relpath: str = "") -> str:
        path = rf"\\{self.address}\{share}"
        return path + ("\\" + relpath.replace("/", "\\") if relpath else "")

    def ldap_connection(self, name: str = "crawler") -> ldap3.Connection:
        """A bound LDAPS connection as user ``name``, validating the DC's certificate."""
        tls = ldap3.Tls(validate=ssl.CERT_REQUIRED, ca_certs_file=self.ca_file)
        server = ldap3.Server(self.ldaps_url, use_ssl=True, tls=tls, connect_timeout=5)
        password = self.admin_password if name == "Administrator" else self.passwords[name]
        return ldap3.Connection(server, self.user_dn(name), password, auto_bind=True, receive_timeout=10)

    # -- life ------------------------------------------------------------------------------
    def start(self, timeout: float = 120) -> SambaDomain:
        """Provision (once), then start samba in the namespace; returns once it answers."""
        if not self.address:
            sweep_stale_namespaces()
            self._make_namespace()
            self._provision()
        self._start_samba(timeout)
        return self

    def stop(self) -> None:
        """Kill samba and every process it started (smbd and winbindd are sessions of their own:
        everything in the namespace, which is this fixture's alone); the namespace stays."""
        self._reset_admin_cache()
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()  # samba stops its tasks
        for kill in (False, True):  # then SIGKILL what is left after 20 s
            deadline = time.monotonic() + 20
            while (pids := self._namespace_pids()) and time.monotonic() < deadline:
                for pid in pids if kill else ():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.05)
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)

    def _namespace_pids(self) -> list[int]:
        listed = subprocess.run(["ip", "netns", "pids", self.namespace], capture_output=True, text=True).stdout
        return [int(pid) for pid in listed.split() if pid.isdigit()]

    def close(self) -> None:
        """Stop samba and delete the namespace with its veth pair."""
        try:
            self.stop()
        finally:
            _delete_namespace(self.namespace)
            subprocess.run(["ip", "link", "delete", self.host_veth], capture_output=True)

    def _make_namespace(self) -> None:
        used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
        index = os.getpid() % 16384
        for attempt in range(16384):  # another process's subnet (of a pid equal modulo 16384): the next
            base = ((index + attempt) % 16384) * 4
            host, dc = f"{SUBNET}.{base >> 8}.{(base & 255) + 1}", f"{SUBNET}.{base >> 8}.{(base & 255) + 2}"
            if f" {host}/" not in used and f" {dc}/" not in used:
                break
        else:
            raise RuntimeError(f"no free /30 in {SUBNET}.0.0/16")
        _delete_namespace(self.namespace)  # a leftover of a process of the same pid
        subprocess.run(["ip", "link", "delete", self.host_veth], capture_output=True)
        ns = ["ip", "netns", "exec", self.namespace]
        _run(["ip", "netns", "add", self.namespace])
        _run(["ip", "link", "add", self.host_veth, "type", "veth", "peer", "name", self.namespace_veth])
        _run(["ip", "link", "set", self.namespace_veth, "netns", self.namespace])
        _run(["ip", "addr", "add", f"{host}/30", "dev", self.host_veth])
        _run(["ip", "link", "set", self.host_veth, "up"])
        _run([*ns, "ip", "addr", "add", f"{dc}/30", "dev", self.namespace_veth])
        _run([*ns, "ip", "link", "set", self.namespace_veth, "up"])
        _run([*ns, "ip", "link", "set", "lo", "up"])
        self.host_address, self.address = host, dc

    def _provision(self) -> None:
        shutil.rmtree(self.folder / "etc", ignore_errors=True)
        _run(
            [
                "samba-tool", "domain", "provision", f"--targetdir={self.folder}", f"--realm={REALM}",
                f"--domain={DOMAIN}", "--server-role=dc", "--dns-backend=NONE", f"--adminpass={ADMIN_PASSWORD}",
                f"--host-name={HOST_NAME}", f"--option=interfaces={self.address}", "--option=bind interfaces only=yes",
            ]
        )  # fmt: skip
        self._certificates()
        for name in ("run", "logs"):  # the sockets' folders samba makes itself (with its modes)
            (self.folder / name).mkdir(exist_ok=True)
        self._write_config()
        populate = subprocess.run(
            ["/usr/bin/python3", "-c", _POPULATE, str(self.config)],
            input=json.dumps({"users": USERS, "groups": GROUPS}),
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", "HOME": str(self.folder)},
        )
        if populate.returncode != 0:
            raise RuntimeError(f"adding the users failed: {populate.stderr[-3000:]}")
        found = json.loads(populate.stdout.strip().splitlines()[-1])
        self.domain_sid, self.base_dn = found["domain_sid"], found["base_dn"]
        self._sids, self._dns = found["sids"], found["dns"]
        # smbd opens files as the user: POSIX lets everyone in (the folder of mkdtemp is 0700), the
        # NT ACLs alone decide (acl_xattr:ignore system acls), as on Windows
        os.chmod(self.folder, 0o755)
        for share in SHARES:
            self.share_path(share).mkdir(parents=True, exist_ok=True)
            os.chmod(self.share_path(share), 0o777)
            os.chmod(self.share_path(share).parent, 0o755)
            # the share's root: Administrators (and SYSTEM) full control, authenticated users
            # read, inherited by everything created in it
            _run(
                [
                    "samba-tool",
                    "ntacl",
                    "set",
                    ROOT_SDDL,
                    str(self.share_path(share)),
                    f"--service={share}",
                    "-s",
                    str(self.config),
                ]
            )
        # the DFS root's one link: a symlink whose target names the share it leads to
        (self.share_path("dfs") / "linked").symlink_to(f"msdfs:{self.address}\\docs")

    def _certificates(self) -> None:
        """A CA of its own and the DC's certificate for its address and names: clients validate it."""
        import trustme

        ca = trustme.CA()
        certificate = ca.issue_cert(self.address, f"{HOST_NAME}.{REALM.lower()}", HOST_NAME)
        folder = self.folder / "tls"
        folder.mkdir(exist_ok=True)
        ca.cert_pem.write_to_path(self.ca_file)
        certificate.cert_chain_pems[0].write_to_path(str(folder / "dc.pem"))
        certificate.private_key_pem.write_to_path(str(folder / "dc.key"))
        os.chmod(folder / "dc.key", 0o600)  # samba refuses a key others may read

    def _write_config(self) -> None:
        text = self.config.read_text(encoding="utf-8")
        f = self.folder
        extra = f"""
	server services = s3fs, rpc, nbt, wrepl, ldap, cldap, kdc, drepl, winbindd, ntp_signd, kcc
	pid directory = {f / "run"}
	ncalrpc dir = {f / "ncalrpc"}
	winbindd socket directory = {f / "winbindd"}
	ntp signd socket directory = {f / "ntp_signd"}
	log file = {f / "logs" / "log.%m"}
	tls enabled = yes
	tls keyfile = {f / "tls" / "dc.key"}
	tls certfile = {f / "tls" / "dc.pem"}
	tls cafile = {self.ca_file}
	load printers = no
	printing = bsd
	printcap name = /dev/null
	disable spoolss = yes
	usershare max shares = 0
	host msdfs = yes
	panic action =
"""
        end = text.find("\n[", text.index("[global]"))  # the end of [global]: later values win
        head, rest = (text, "") if end < 0 else (text[:end], text[end:])
        shares = f"""
[docs]
	path = {self.share_path("docs")}
	read only = no
	acl_xattr:ignore system acls = yes

[sealed]
	path = {self.share_path("sealed")}
	read only = no
	acl_xattr:ignore system acls = yes
	smb encrypt = required

[dfs]
	path = {self.share_path("dfs")}
	read only = no
	acl_xattr:ignore system acls = yes
	msdfs root = yes
"""
        self.config.write_text(head.rstrip("\n") + "\n" + extra + rest + shares, encoding="utf-8")

    def _start_samba(self, timeout: float) -> None:
        log = open(self.folder / "samba.log", "ab")  # noqa: SIM115 - samba writes it while it runs
        command = ["ip", "netns", "exec", self.namespace, SAMBA, "-i", "-s", str(self.config), "--debug-stdout", "-d1"]
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self.process.poll() is not None:
                tail = (self.folder / "samba.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"samba ended ({self.process.returncode}): {tail}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"samba did not answer on {self.address} within {timeout} s")
            time.sleep(0.1)

    def _answers(self) -> bool:
        for port in (445, 389, 636):
            try:
                socket.create_connection((self.address, port), timeout=1).close()
            except OSError:
                return False
        try:
            connection = self.ldap_connection("crawler")
        except ldap3.core.exceptions.LDAPException:
            return False
        connection.unbind()
        return True

    # -- files over SMB, as Administrator --------------------------------------------------
    def _admin(self) -> dict[str, object]:
        return {
            "username": f"{DOMAIN}\\Administrator",
            "password": self.admin_password,
            "connection_cache": self._admin_cache,
            "auth_protocol": "ntlm",
        }

    def _reset_admin_cache(self) -> None:
        smbclient = _smbclient()
        with contextlib.suppress(Exception):  # a connection to a samba that is gone
            smbclient.reset_connection_cache(connection_cache=self._admin_cache)
        self._admin_cache.clear()

    def write(self, share: str, relpath: str, data: bytes) -> None:
        """Create or replace a file over SMB (so that it inherits its folder's ACL as on Windows)."""
        smbclient = _smbclient()
        with smbclient.open_file(self.unc(share, relpath), mode="wb", **self._admin()) as file:
            file.write(data)

    def mkdir(self, share: str, relpath: str) -> None:
        smbclient = _smbclient()
        smbclient.mkdir(self.unc(share, relpath), **self._admin())

    def remove(self, share: str, relpath: str) -> None:
        """Remove a file, or a folder and everything in it."""
        smbclient = _smbclient()
        path = self.unc(share, relpath)
        if smbclient.path.isdir(path, **self._admin()):
            for entry in smbclient.scandir(path, **self._admin()):
                self.remove(share, f"{relpath}/{entry.name}")
            smbclient.rmdir(path, **self._admin())
        else:
            smbclient.remove(path, **self._admin())

    # -- ACLs ------------------------------------------------------------------------------
    def _smbcacls(self, share: str, relpath: str, *options: str) -> str:
        credentials = self.folder / "admin.credentials"
        if not credentials.exists():
            credentials.write_text(
                f"username = Administrator\npassword = {ADMIN_PASSWORD}\ndomain = {DOMAIN}\n", encoding="utf-8"
            )
            os.chmod(credentials, 0o600)
        command = [
            "smbcacls", f"//{self.address}/{share}", relpath.replace("/", "\\"), "-A", str(credentials),
            "--use-kerberos=off", "-m", "SMB3", "--client-protection=encrypt", "--sddl",
            f"--domain-sid={self.domain_sid}", *options,
        ]  # fmt: skip
        return _run(command, env={**os.environ, "KRB5_CONFIG": "/dev/null"}).stdout

    def get_sddl(self, share: str, relpath: str) -> str:
        """The file's or folder's security descriptor in SDDL (SIDs of this domain as SIDs)."""
        output = self._smbcacls(share, relpath, "--numeric").strip()
        return output.split(":", 1)[1] if re.match(r"^[^:]*:O:", output) else output

    def set_acl(self, share: str, relpath: str, sddl: str) -> None:
        """Replace a file's or folder's security descriptor (SDDL: e.g. ``D:PARAI(A;OICI;FR;;;<sid>)``).
        Samba keeps AI (auto-inherited: what makes children's ACEs ID) only with AR beside it, as
        NtSetSecurityObject does; SIDs rather than domain aliases (DU, DA: smbcacls resolves them
        against the wrong domain)."""
        self._smbcacls(share, relpath, "--set", sddl)

    def set_acl_entries(
        self, share: str, relpath: str, entries: Iterable[tuple[str, str]], protected: bool = False, inherit: bool = False
    ) -> str:
        """Give a file or folder a DACL of READ (0x120089) ACEs: ``entries`` are ("allow" or
        "deny", a user's or group's name or a SID), denies first as Windows orders them;
        ``protected``: inheritance broken (``D:P``); ``inherit``: the ACEs are inherited by files
        and folders created in it later (OI|CI). Administrators keep full control (inherited
        likewise). Returns the SDDL set."""
        flags = "OICI" if inherit else ""
        aces = []
        for kind, who in sorted(entries, key=lambda entry: entry[0] != "deny"):
            if kind not in ("allow", "deny"):
                raise ValueError(f"an entry is allow or deny, not {kind!r}")
            sid = who if who.startswith("S-1-") else self.sid(who)
            aces.append(f"({'A' if kind == 'allow' else 'D'};{flags};0x{READ:x};;;{sid})")
        aces.append(f"(A;{flags};FA;;;BA)")
        # AI: files created in it get the inheritable ACEs flagged inherited (ID), as on Windows
        sddl = f"O:BAG:{self.sid('Domain Users')}D:{'P' if protected else ''}ARAI{''.join(aces)}"
        self.set_acl(share, relpath, sddl)
        return sddl

    def set_share_acl(self, share: str, sddl: str) -> None:
        """Replace the share's permissions (checked at tree connect), e.g. ``D:(A;;FA;;;<sid>)``."""
        _run(["sharesec", share, f"--setsddl={sddl}", "-s", str(self.config)])

    def reset_share_acl(self, share: str) -> None:
        """The share's permissions back to Samba's default (everyone: full control)."""
        _run(["sharesec", share, "--delete", "-s", str(self.config)])

    # -- the oracle ------------------------------------------------------------------------
    def can_read(self, user: str, share: str, relpath: str) -> bool:
        """Whether ``user`` may read the file, as Samba decides: a new SMB session as the user
        opens it for FILE_READ_DATA and reads a byte. False on access denied (at tree connect or
        at open); any other error raises."""
        smbclient = _smbclient()
        from smbprotocol.exceptions import AccessDenied, NtStatus, SMBOSError  # type: ignore[import-untyped]

        cache: dict[str, object] = {}
        password = self.admin_password if user == "Administrator" else self.passwords[user]
        try:
            with smbclient.open_file(
                self.unc(share, relpath),
                mode="rb",
                buffering=0,
                desired_access=FILE_READ_DATA,
                username=f"{DOMAIN}\\{user}",
                password=password,
                connection_cache=cache,
                auth_protocol="ntlm",
            ) as file:
                file.read(1)
            return True
        except AccessDenied:  # at tree connect (the share's permissions)
            return False
        except SMBOSError as error:  # at open (the file's ACL)
            if error.ntstatus == NtStatus.STATUS_ACCESS_DENIED:
                return False
            raise
        finally:
            with contextlib.suppress(Exception):
                smbclient.reset_connection_cache(connection_cache=cache)


def skip_reason() -> str | None:
    """Why this machine cannot run the domain, or None."""
    if os.geteuid() != 0:
        return "the Samba domain needs root (a network namespace, samba as root)"
    for program in (SAMBA, "/usr/bin/samba-tool", "/usr/bin/smbcacls", "/usr/bin/sharesec"):
        if not os.path.exists(program):
            return f"{program} is missing (Debian packages samba, samba-ad-dc, smbclient: deploy/bootstrap.sh)"
    if shutil.which("ip") is None:
        return "ip (iproute2) is missing"
    return None


@pytest.fixture(scope="session")
def samba_domain() -> Iterator[SambaDomain]:
    """This worker's Samba domain controller, in a namespace of its own (see the module docstring)."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    folder = Path(tempfile.mkdtemp(prefix="searchcrawl-samba-"))
    domain = SambaDomain(folder)
    try:
        domain.start()
        yield domain
    finally:
        domain.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":  # start one by hand: python -m tests.samba_domain /tmp/somewhere
    import sys

    domain = SambaDomain(Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="searchcrawl-samba-")))
    began = time.monotonic()
    try:
        domain.start()
        print(f"{domain.address} {domain.realm} {domain.domain_sid} started in {time.monotonic() - began:.1f} s")
        signal.pause()
    finally:
        domain.close()
