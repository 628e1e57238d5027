"""A real LDAP directory for tests: Debian's OpenLDAP ``slapd`` on 127.0.0.1, with searchers.

``DirectoryServer(folder).start()`` writes a slapd.conf (mdb backend; schemas core, cosine, nis,
inetorgperson), loads the directory below with ``slapadd`` and starts slapd on a free port,
returning once it answers a search. Every worker of a test run starts its own (the session
fixture ``directory_server`` below, which tests/conftest.py imports). Anonymous clients may only bind; a service
account (``bind_dn``, ``bind_password``) reads everything but passwords, as in a real
installation. What tests may rely on:

- ``url``, ``suffix``, ``user_base``, ``group_base``, ``bind_dn``, ``bind_password``;
- ``passwords``: each user's password; ``user_dn(uid)``, ``group_dn(cn)``;
- ``settings()``: the SEARCHCRAWL_LDAP_* settings (and the bind password's variable) of a
  searchcrawl pointed at it;
- ``remove_member(group, uid)`` / ``add_member(group, uid)``: change a groupOfNames' members;
- ``added_person(uid, password)``: a context in which one more person (inetOrgPerson, in no
  group, no numbers unless ``numbers``: a posixAccount's uidNumber and gidNumber) is in the directory, such as ``bob@partner.example``; ``added_groups``
  likewise more groups (``READING_GROUPS``, say);
- ``DirectoryServer(folder, tls=True)``: also ``ldaps_url`` and StartTLS on ``url``, with a
  certificate of a CA of its own (``ca_file``);
- ``DirectoryServer(folder, private_groups=True)``: a directory hardened as some are: a user may
  read only their own entry, groups only the service account; an anonymous client may find
  people (so that a sign-in works without a service account) but sees no group.

``SlowProxy(url, delay)`` stands in front of a directory on a loopback port of its own and
passes each of its answers on ``delay`` seconds late (``delay`` None: never): a slow directory.

The users and groups (``USERS``, ``GROUPS``): alice (uidNumber 1001, primary group staff 2000)
is a member of accounting, which is a member of finance, which is a uniqueMember of all-staff;
she is in the posixGroup staff by memberUid too, and in loop-a (loop-a and loop-b are members of
each other). bob (1002, primary group developers 2001 without memberUid) is a uniqueMember of
all-staff; carol (1003, gid 2002, no group of that number) is in no group.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import ldap3

from searchcrawl.access.directory import DirectoryConfig
from searchcrawl.access.ldap_directory import LdapDirectory
from searchcrawl.dev.jvm_server import free_port
from searchcrawl.dev.servers.server_processes import stopped_on_failure

SCHEMAS = ("core", "cosine", "nis", "inetorgperson")
SUFFIX = "dc=example,dc=org"
ROOT_PASSWORD = "root-secret-for-tests"
SERVICE_PASSWORD = "service-secret-for-tests"
# uid -> (uidNumber, gidNumber, password)
USERS = {
    "alice": (1001, 2000, "alice-password"),
    "bob": (1002, 2001, "bob-password"),
    "carol": (1003, 2002, "carol-password"),
}
# cn -> (object class, members: ("user", uid) or ("group", cn)), gidNumber for a posixGroup
GROUPS: dict[str, tuple[str, tuple[tuple[str, str], ...], int | None]] = {
    "accounting": ("groupOfNames", (("user", "alice"),), None),
    "finance": ("groupOfNames", (("group", "accounting"),), None),
    "all-staff": ("groupOfUniqueNames", (("group", "finance"), ("user", "bob")), None),
    "staff": ("posixGroup", (("user", "alice"),), 2000),
    "developers": ("posixGroup", (), 2001),
    "loop-a": ("groupOfNames", (("user", "alice"), ("group", "loop-b")), None),
    "loop-b": ("groupOfNames", (("group", "loop-a"),), None),
}

# groups that tell readings of membership apart (issue 91 point 2), for ``added_groups``: bob is in
# inspectors by memberUid, in auditors only through it (a posixGroup inside a groupOfNames), in
# editors by member DN, in reviewers only through it (a groupOfNames inside one)
READING_GROUPS: dict[str, tuple[str, tuple[tuple[str, str], ...], int | None]] = {
    "inspectors": ("posixGroup", (("user", "bob"),), 3100),
    "auditors": ("groupOfNames", (("group", "inspectors"),), None),
    "editors": ("groupOfNames", (("user", "bob"),), None),
    "reviewers": ("groupOfNames", (("group", "editors"),), None),
}


class DirectoryServer:
    """One slapd in ``folder`` (see the module docstring)."""

    def __init__(self, folder: Path, tls: bool = False, private_groups: bool = False) -> None:
        self.folder = folder
        self.tls = tls  # also ldaps:// (``ldaps_url``) and StartTLS, a certificate of ``ca_file``'s CA
        self.private_groups = private_groups  # users read their own entry only, groups the service account only
        self.ca_file = ""
        self.port = self.tls_port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.suffix = SUFFIX
        self.user_base = f"ou=people,{SUFFIX}"
        self.group_base = f"ou=groups,{SUFFIX}"
        self.bind_dn = f"cn=searchcrawl,ou=services,{SUFFIX}"
        self.bind_password = SERVICE_PASSWORD
        self.root_dn = f"cn=admin,{SUFFIX}"
        self.passwords = {uid: password for uid, (_u, _g, password) in USERS.items()}

    @property
    def url(self) -> str:
        return f"ldap://127.0.0.1:{self.port}"

    @property
    def ldaps_url(self) -> str:
        return f"ldaps://127.0.0.1:{self.tls_port}"

    def user_dn(self, uid: str) -> str:
        return f"uid={uid},{self.user_base}"

    def group_dn(self, cn: str) -> str:
        return f"cn={cn},{self.group_base}"

    def searchers(self) -> LdapDirectory:
        """searchcrawl's client of this directory, as the web application makes it from ``settings()``."""
        return LdapDirectory(
            DirectoryConfig(
                url=self.url,
                user_base=self.user_base,
                group_base=self.group_base,
                bind_dn=self.bind_dn,
                bind_password=self.bind_password,
            )
        )

    def settings(self) -> dict[str, str]:
        """The settings (environment variables) of a searchcrawl that uses this directory."""
        return {
            "SEARCHCRAWL_LDAP_URL": self.url,
            "SEARCHCRAWL_LDAP_USER_BASE": self.user_base,
            "SEARCHCRAWL_LDAP_GROUP_BASE": self.group_base,
            "SEARCHCRAWL_LDAP_BIND_DN": self.bind_dn,
            "SEARCHCRAWL_LDAP_BIND_PASSWORD": self.bind_password,
        }

    @stopped_on_failure
    def start(self, timeout: float = 60) -> DirectoryServer:
        """Configure, load and start slapd; returns once it answers a search."""
        data = self.folder / "data"
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True)
        config = self.folder / "slapd.conf"
        config.write_text(self._config(data, self._certificates() if self.tls else ""), encoding="utf-8")
        ldif = self.folder / "directory.ldif"
        ldif.write_text(self._ldif(), encoding="utf-8")
        subprocess.run(["/usr/sbin/slapadd", "-f", str(config), "-l", str(ldif)], check=True, capture_output=True)
        self.port = free_port()
        listen = f"ldap://127.0.0.1:{self.port}/"
        if self.tls:
            self.tls_port = free_port()
            listen += f" ldaps://127.0.0.1:{self.tls_port}/"
        log = open(self.folder / "slapd.log", "wb")  # noqa: SIM115 - slapd writes it while it runs
        # -d 0: in the foreground (a child we can stop), without debug output
        command = ["/usr/sbin/slapd", "-f", str(config), "-h", listen, "-d", "0"]
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self.process.poll() is not None:
                raise RuntimeError(f"slapd ended ({self.process.returncode}): {(self.folder / 'slapd.log').read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"slapd did not answer on {self.url} within {timeout} s")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def remove_member(self, group: str, uid: str) -> None:
        """Take user ``uid`` out of the groupOfNames ``group``."""
        self._modify(group, {"member": [(ldap3.MODIFY_DELETE, [self.user_dn(uid)])]})

    def add_member(self, group: str, uid: str) -> None:
        """Put user ``uid`` into the groupOfNames ``group``."""
        self._modify(group, {"member": [(ldap3.MODIFY_ADD, [self.user_dn(uid)])]})

    @contextmanager
    def added_person(self, uid: str, password: str, numbers: tuple[int, int] | None = None) -> Iterator[str]:
        """One more person, ``uid`` with ``password``, in no group and without numbers (unless
        ``numbers``: a posixAccount's uidNumber and gidNumber), while the block runs; yields its DN."""
        dn = self.user_dn(uid)
        attributes: dict[str, object] = {"uid": uid, "cn": uid, "sn": uid, "userPassword": password}
        classes = ["inetOrgPerson"]
        if numbers is not None:
            classes.append("posixAccount")
            attributes.update(uidNumber=str(numbers[0]), gidNumber=str(numbers[1]), homeDirectory=f"/home/{uid}")
        with self._as_root() as connection:
            assert connection.add(dn, classes, attributes), connection.result
        try:
            yield dn
        finally:
            with self._as_root() as connection:
                assert connection.delete(dn), connection.result

    @contextmanager
    def added_groups(self, groups: dict[str, tuple[str, tuple[tuple[str, str], ...], int | None]]) -> Iterator[None]:
        """More groups, written as ``GROUPS`` is (a member may be a group of ``groups`` or of
        ``GROUPS``), while the block runs."""
        added: list[str] = []
        try:
            with self._as_root() as connection:
                for cn, (kind, members, gid) in groups.items():
                    attributes: dict[str, object] = {"cn": cn}
                    if kind == "posixGroup":
                        attributes["gidNumber"] = str(gid)
                        uids = [name for what, name in members if what == "user"]
                        if uids:
                            attributes["memberUid"] = uids
                    else:
                        dns = [self.user_dn(name) if what == "user" else self.group_dn(name) for what, name in members]
                        attributes["uniqueMember" if kind == "groupOfUniqueNames" else "member"] = [*dns, self.root_dn]
                    assert connection.add(self.group_dn(cn), [kind], attributes), connection.result
                    added.append(self.group_dn(cn))
            yield
        finally:
            with self._as_root() as connection:
                for dn in reversed(added):
                    assert connection.delete(dn), connection.result

    def _modify(self, group: str, changes: dict[str, list[tuple[str, list[str]]]]) -> None:
        with self._as_root() as connection:
            assert connection.modify(self.group_dn(group), changes), connection.result

    @contextmanager
    def _as_root(self) -> Iterator[ldap3.Connection]:
        connection = ldap3.Connection(ldap3.Server(self.url), self.root_dn, ROOT_PASSWORD, auto_bind=True)
        try:
            yield connection
        finally:
            connection.unbind()

    def _answers(self) -> bool:
        try:
            connection = ldap3.Connection(
                ldap3.Server(self.url, connect_timeout=2), self.bind_dn, self.bind_password, receive_timeout=5
            )
            if not connection.bind():
                return False
            found = connection.search(self.user_base, "(uid=alice)", attributes=["uid"])
            connection.unbind()
            return bool(found)
        except ldap3.core.exceptions.LDAPException:
            return False

    def _config(self, data: Path, tls: str) -> str:
        includes = "\n".join(f"include /etc/ldap/schema/{name}.schema" for name in SCHEMAS)
        return f"""{includes}
pidfile {self.folder / "slapd.pid"}
argsfile {self.folder / "slapd.args"}
{tls}modulepath /usr/lib/ldap
moduleload back_mdb
database mdb
maxsize 67108864
suffix "{SUFFIX}"
rootdn "{self.root_dn}"
rootpw {ROOT_PASSWORD}
directory {data}
index objectClass,uid,cn,member,uniqueMember,memberUid,gidNumber eq
access to attrs=userPassword by self write by anonymous auth by * none
{self._access()}
"""

    def _access(self) -> str:
        """Who reads what: the service account and every signed-in user everything (but
        passwords); with ``private_groups``, groups the service account alone, a user their own
        entry, an anonymous client the people (no group)."""
        if not self.private_groups:
            return "access to * by users read by * none"
        service = f'dn.exact="{self.bind_dn}"'
        return (
            f'access to dn.subtree="{self.group_base}" by {service} read by * none\n'
            f"access to * by {service} read by self read by anonymous read by * none"
        )

    def _certificates(self) -> str:
        """A CA of its own (trustme) and slapd's certificate for 127.0.0.1: the TLS lines."""
        import trustme

        ca = trustme.CA()
        certificate = ca.issue_cert("127.0.0.1")
        self.ca_file = str(self.folder / "ca.pem")
        ca.cert_pem.write_to_path(self.ca_file)
        certificate.cert_chain_pems[0].write_to_path(str(self.folder / "slapd.pem"))
        certificate.private_key_pem.write_to_path(str(self.folder / "slapd.key"))
        return (
            f"TLSCACertificateFile {self.ca_file}\n"
            f"TLSCertificateFile {self.folder / 'slapd.pem'}\n"
            f"TLSCertificateKeyFile {self.folder / 'slapd.key'}\n"
        )

    def _ldif(self) -> str:
        entries = [
            f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example",
            *(f"dn: ou={ou},{SUFFIX}\nobjectClass: organizationalUnit\nou: {ou}" for ou in ("people", "groups", "services")),
            f"dn: {self.bind_dn}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\n"
            f"cn: searchcrawl\nuserPassword: {SERVICE_PASSWORD}",
        ]
        for uid, (uid_number, gid_number, password) in USERS.items():
            entries.append(
                f"dn: {self.user_dn(uid)}\nobjectClass: inetOrgPerson\nobjectClass: posixAccount\n"
                f"uid: {uid}\ncn: {uid.title()}\nsn: {uid.title()}\nuidNumber: {uid_number}\n"
                f"gidNumber: {gid_number}\nhomeDirectory: /home/{uid}\nuserPassword: {password}"
            )
        for cn, (kind, members, group_gid) in GROUPS.items():
            lines = [f"dn: {self.group_dn(cn)}", f"objectClass: {kind}", f"cn: {cn}"]
            if kind == "posixGroup":
                lines.append(f"gidNumber: {group_gid}")
                lines.extend(f"memberUid: {name}" for what, name in members if what == "user")
            else:
                attribute = "uniqueMember" if kind == "groupOfUniqueNames" else "member"
                dns = [self.user_dn(name) if what == "user" else self.group_dn(name) for what, name in members]
                # and the root DN: a groupOfNames needs a member, and tests take its last person out
                lines.extend(f"{attribute}: {dn}" for dn in [*dns, self.root_dn])
            entries.append("\n".join(lines))
        return "\n\n".join(entries) + "\n"
