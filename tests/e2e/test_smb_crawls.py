"""Windows file shares crawled over SMB into the real Solr, against a real Active Directory
(Samba as a domain controller and file server, tests/samba_domain.py), issue 56.

The oracle is Samba's own access check: each domain user opens each file over SMB
(``SambaDomain.can_read``). Each user's principals come from the directory (tokenGroups), and
finds through Solr's trimmed search, on the search page signed in with their domain password,
and by ``decide`` exactly the files the oracle lets them read: allow and deny entries for a
group, a nested group, a deny of writing that hides nothing, a file's own allow over the deny it
inherits, a folder whose inheritance is broken, and a share whose permissions refuse a user.
A changed ACL is re-indexed without reading the file again; a server that does not answer is a
failed run that removes nothing; a DFS link to an admitted server is followed, one to another
server refused before any connection.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import uuid
from collections.abc import Iterator

import pysolr
import pytest
from scrapy.settings import Settings

from searchcrawl.access.decision import decide
from searchcrawl.access.directory import DirectoryConfig
from searchcrawl.access.explanation import access_of_fields
from searchcrawl.access.ldap_directory import LdapDirectory
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.store.runs import Runs
from tests.conftest import Project, run_scrapy, solr_docs
from tests.e2e.test_secure_search import found_by
from tests.e2e.test_web_access import shown, web_of
from tests.samba_domain import READ, SambaDomain
from tests.web.test_searcher import sign_in

USERS = ("alice", "bob", "carol", "dave")
SECRET = "SMB_CRAWL_PASSWORD_TEST"  # the variable the source's password_secret names
WORD = "zebrafinch"  # in every file's text


def crawl(project: Project, name: str, domain: SambaDomain, password: str = "") -> dict[str, list[str]]:
    result = run_scrapy(["crawl", name], project.env(**{SECRET: password or domain.admin_password}))
    assert result.returncode == 0, result.stderr[-3000:]
    assert domain.admin_password not in result.stderr + result.stdout
    report = project.scrapy("report", name, "--json")
    urls: dict[str, list[str]] = json.loads(report.stdout)["urls"]
    return urls


def smb_source(
    project: Project, name: str, domain: SambaDomain, roots: list[str], user: str = "Administrator", **extra: str
) -> None:
    lines = [
        'type = "smb"',
        "max_delete_share = 1.0",
        "[smb]",
        f"roots = {json.dumps(roots)}",
        f"username = {json.dumps(domain.domain + chr(92) + user)}",
        f'password_secret = "{SECRET}"',
        *(f"{key} = {value}" for key, value in extra.items()),
    ]
    project.source(name, "\n".join(lines) + "\n")


def directory(domain: SambaDomain) -> LdapDirectory:
    return LdapDirectory(
        DirectoryConfig(
            url=domain.ldaps_url,
            user_base=domain.base_dn,
            bind_dn=domain.bind_dn,
            bind_password=domain.bind_password,
            ca_file=domain.ca_file,
            kind="active_directory",
        )
    )


class Tree:
    """A folder of the docs share (and of the sealed one) with the ACLs of the module's
    docstring; ``files`` maps each file's URL to (share, path)."""

    def __init__(self, domain: SambaDomain) -> None:
        self.domain = domain
        self.base = f"crawl-{uuid.uuid4().hex[:8]}"
        self.files: dict[str, tuple[str, str]] = {}

    def url(self, share: str, path: str) -> str:
        return f"smb://{self.domain.address}/{share}/{path}"

    def write(self, share: str, path: str, text: str) -> str:
        self.domain.write(share, path, f"{text} {WORD}".encode())
        self.files[self.url(share, path)] = (share, path)
        return self.url(share, path)

    def build(self) -> None:
        d, b = self.domain, self.base
        for share in ("docs", "sealed"):
            d.mkdir(share, b)
            d.set_acl_entries(share, b, [("allow", "Domain Users")], protected=True, inherit=True)
        self.write("docs", f"{b}/open.txt", "the canteen menu, for everyone")
        d.mkdir("docs", f"{b}/staff")
        d.set_acl_entries("docs", f"{b}/staff", [("allow", "staff")], protected=True, inherit=True)
        self.write("docs", f"{b}/staff/plan.txt", "the staff plan: alice through managers, and bob")
        self.write("docs", f"{b}/staff/not-bob.txt", "staff but bob")
        d.set_acl_entries("docs", f"{b}/staff/not-bob.txt", [("deny", "bob"), ("allow", "staff")], protected=True)
        d.mkdir("docs", f"{b}/mixed")
        d.set_acl_entries("docs", f"{b}/mixed", [("deny", "managers"), ("allow", "Domain Users")], protected=True, inherit=True)
        self.write("docs", f"{b}/mixed/memo.txt", "every domain user but the managers")
        self.write("docs", f"{b}/mixed/alice-too.txt", "alice's own allow before the deny it inherits")
        self.add_explicit("docs", f"{b}/mixed/alice-too.txt", f"(A;;0x{READ:x};;;{d.sid('alice')})")
        d.mkdir("docs", f"{b}/audit")
        d.set_acl_entries("docs", f"{b}/audit", [("allow", "auditors")], protected=True, inherit=True)
        self.write("docs", f"{b}/audit/report.txt", "the auditors' report")
        self.write("docs", f"{b}/audit/no-writes.txt", "carol may read, not write nor delete")
        self.add_explicit("docs", f"{b}/audit/no-writes.txt", f"(D;;0x10116;;;{d.sid('carol')})")  # write, append, delete
        self.write("sealed", f"{b}/board.txt", "the board minutes, on the encrypted share")

    def add_explicit(self, share: str, path: str, ace: str) -> None:
        """An explicit entry before the inherited ones (Windows' order)."""
        sddl = self.domain.get_sddl(share, path)
        head, dacl = sddl.split("D:", 1)
        flags = dacl[: dacl.index("(")]
        self.domain.set_acl(share, path, f"{head}D:{flags}{ace}{dacl[len(flags) :]}")

    def oracle(self) -> dict[str, set[str]]:
        """Who may read what, as Samba decides (its own access check, over SMB)."""
        where = {place: url for url, place in self.files.items()}
        return {user: {where[place] for place in self.domain.readable(user, where)} for user in USERS}


@pytest.fixture
def tree(samba_domain: SambaDomain) -> Iterator[Tree]:
    built = Tree(samba_domain)
    samba_domain.set_share_acl("sealed", f"D:(D;;0x1f01ff;;;{samba_domain.sid('carol')})(A;;0x1f01ff;;;WD)")
    try:
        built.build()
        yield built
    finally:
        samba_domain.reset_share_acl("sealed")
        for share in ("docs", "sealed"):
            samba_domain.remove(share, built.base)


def test_each_domain_user_finds_exactly_the_files_windows_lets_them_read(
    project: Project, solr: pysolr.Solr, samba_domain: SambaDomain, tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"shares-{tree.base}"
    roots = [f"smb://{samba_domain.address}/docs/{tree.base}", f"smb://{samba_domain.address}/sealed/{tree.base}"]
    smb_source(project, name, samba_domain, roots)
    report = crawl(project, name, samba_domain)
    assert sorted(report["new"]) == sorted(tree.files), report
    docs = {doc["url"]: doc for doc in solr_docs(solr, name)}
    assert set(docs) == set(tree.files)
    board = docs[tree.url("sealed", f"{tree.base}/board.txt")]
    assert board["display_url"] == f"file://{samba_domain.address}/sealed/{tree.base}/board.txt"
    assert board["path_s"] == f"\\\\{samba_domain.address}\\sealed\\{tree.base}\\board.txt"
    oracle = tree.oracle()
    assert oracle["alice"] == {
        tree.url("docs", f"{tree.base}/{p}") for p in ("open.txt", "staff/plan.txt", "staff/not-bob.txt", "mixed/alice-too.txt")
    } | {tree.url("sealed", f"{tree.base}/board.txt")}
    assert tree.url("docs", f"{tree.base}/audit/no-writes.txt") in oracle["carol"]  # a deny of writing hides nothing
    assert tree.url("sealed", f"{tree.base}/board.txt") not in oracle["carol"]  # the share refuses her

    known = directory(samba_domain)
    client = SolrIndex(project.solr_url, timeout=30)
    for user in USERS:
        principals = known.principals(user)
        assert not principals.error, principals.error
        decided = {url for url, doc in docs.items() if decide(access_of_fields(doc), principals).granted}  # type: ignore[arg-type]
        assert decided == oracle[user], (user, sorted(decided ^ oracle[user]))
        urls = {doc["id"]: url for url, doc in docs.items()}
        found = {urls[key] for key in found_by(client, principals, name)}
        assert found == oracle[user], (user, sorted(found ^ oracle[user]))

    # the search page, each user signed in with their domain password
    for key, value in samba_domain.settings().items():
        if key == "SEARCHCRAWL_LDAP_BIND_PASSWORD":
            monkeypatch.setenv(key, value)
    settings = Settings({k: v for k, v in samba_domain.settings().items() if k != "SEARCHCRAWL_LDAP_BIND_PASSWORD"})
    for user in USERS:
        web = web_of(project, settings)
        assert sign_in(web, user, samba_domain.passwords[user]) == 303
        page = web.get("/", params={"q": WORD, "source": name})
        assert page.status_code == 200
        expected = {url.rsplit("/", 1)[1] for url in oracle[user]}
        assert shown(page.text) == expected, user

    # explain-access names the SIDs
    url = tree.url("docs", f"{tree.base}/mixed/alice-too.txt")
    explained = project.scrapy("explain-access", "alice", url, **samba_domain.settings())
    assert explained.returncode == 0, explained.stderr
    text = explained.stdout
    assert f"sid:{samba_domain.sid('managers')} (managers)" in text and f"sid:{samba_domain.sid('alice')} (alice)" in text
    assert text.splitlines()[-1].startswith("  decision: GRANTED")


def test_a_changed_acl_is_reindexed_without_reading_the_file_and_an_outage_removes_nothing(
    project: Project, solr: pysolr.Solr, samba_domain: SambaDomain, tree: Tree
) -> None:
    name = f"shares-{tree.base}"
    smb_source(project, name, samba_domain, [f"smb://{samba_domain.address}/docs/{tree.base}"], share_permissions='"ignore"')
    crawl(project, name, samba_domain)
    tree.files = {url: where for url, where in tree.files.items() if where[0] == "docs"}  # its one root
    plan = tree.url("docs", f"{tree.base}/staff/plan.txt")
    before = {doc["url"]: doc for doc in solr_docs(solr, name)}

    # interns only, now; and its bytes change on disk with the same size and time: were the file
    # read again, Solr would hold the new text
    on_disk = samba_domain.share_path("docs") / tree.base / "staff" / "plan.txt"
    stat = on_disk.stat()
    on_disk.write_bytes(on_disk.read_bytes().replace(b"the staff plan", b"THE STAFF PLAN"))
    os.utime(on_disk, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    samba_domain.set_acl_entries("docs", f"{tree.base}/staff/plan.txt", [("allow", "interns")], protected=True)
    samba_domain.remove("docs", f"{tree.base}/open.txt")
    report = crawl(project, name, samba_domain)
    assert report["changed"] == [plan], report
    assert report["deleted"] == [tree.url("docs", f"{tree.base}/open.txt")], report
    del tree.files[tree.url("docs", f"{tree.base}/open.txt")]
    after = {doc["url"]: doc for doc in solr_docs(solr, name)}
    assert after[plan]["_version_"] != before[plan]["_version_"] and after[plan]["content"] == before[plan]["content"]
    assert "the staff plan" in after[plan]["content"]  # not read again
    assert f"sid:{samba_domain.sid('interns')}" in after[plan]["access_allow"]
    oracle = tree.oracle()
    assert plan in oracle["dave"] and plan not in oracle["alice"]
    known = directory(samba_domain)
    for user in USERS:
        decided = {url for url, doc in after.items() if decide(access_of_fields(doc), known.principals(user)).granted}  # type: ignore[arg-type]
        assert decided == oracle[user], user
    unchanged = [url for url in after if url != plan]
    assert all(after[url]["_version_"] == before[url]["_version_"] for url in unchanged)

    # the server does not answer: the run fails, nothing leaves the index
    samba_domain.stop()
    try:
        result = run_scrapy(["crawl", name], project.env(**{SECRET: samba_domain.admin_password}))
        assert "nothing is removed" in result.stderr, result.stderr[-3000:]
        database = project.table().database
        try:
            assert Runs(database).latest(name)["state"] == "failed"
        finally:
            database.close()
    finally:
        samba_domain.start()
    assert {doc["url"] for doc in solr_docs(solr, name)} == set(after)
    report = crawl(project, name, samba_domain)
    assert not report["deleted"] and not report["new"], report


def test_dfs_links_are_followed_to_admitted_servers_only(
    project: Project, solr: pysolr.Solr, samba_domain: SambaDomain, tree: Tree
) -> None:
    elsewhere = samba_domain.share_path("dfs") / f"elsewhere-{tree.base}"
    os.symlink("msdfs:192.0.2.7\\docs", elsewhere)  # TEST-NET-1: a server no source names
    try:
        name = f"dfs-{tree.base}"
        smb_source(
            project,
            name,
            samba_domain,
            [f"smb://{samba_domain.address}/dfs"],
            include=f'["linked/{tree.base}/**"]',
            share_permissions='"ignore"',
        )
        result = run_scrapy(["crawl", name], project.env(**{SECRET: samba_domain.admin_password}))
        assert result.returncode == 0, result.stderr[-3000:]
        assert "a DFS referral to '192.0.2.7' is not a server of this source" in result.stderr
        urls = {doc["url"] for doc in solr_docs(solr, name)}
        expected = {f"smb://{samba_domain.address}/dfs/linked/{path}" for share, path in tree.files.values() if share == "docs"}
        assert urls == expected
    finally:
        elsewhere.unlink()


GROUP_CHOICES = ("staff", "managers", "auditors", "interns", "Domain Users")


def test_a_changing_share_is_followed_crawl_after_crawl_with_a_kill(
    project: Project, solr: pysolr.Solr, samba_domain: SambaDomain, tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six crawls of a share that changes between them (files added, rewritten, touched without a
    change, removed, their ACLs changed), the fourth killed with SIGKILL mid-crawl and resumed:
    after each, the index holds exactly the share's files with their text, a file is pushed again
    only when its text or its ACL changed, and every user reads exactly what Samba grants."""
    rng = random.Random(56)
    monkeypatch.setenv(SECRET, samba_domain.admin_password)  # the killed crawl's environment too
    base = f"{tree.base}/seq"
    samba_domain.mkdir("docs", base)
    name = f"seq-{tree.base}"
    smb_source(project, name, samba_domain, [f"smb://{samba_domain.address}/docs/{base}"], share_permissions='"ignore"')
    texts: dict[str, str] = {}
    acls: dict[str, str] = {}
    counter = 0

    def new_file() -> None:
        nonlocal counter
        counter += 1
        path = f"{base}/{rng.choice(['', 'a/', 'a/b/'])}f{counter}.txt"
        for folder in (f"{base}/a", f"{base}/a/b"):
            if path.startswith(folder + "/") and not any(p.startswith(folder + "/") for p in texts):
                with contextlib.suppress(Exception):  # already there (its files since removed)
                    samba_domain.mkdir("docs", folder)
        texts[path] = f"file {counter} version 1 {WORD}"
        samba_domain.write("docs", path, texts[path].encode())
        set_group(path)

    def set_group(path: str) -> None:
        acls[path] = rng.choice(GROUP_CHOICES)
        samba_domain.set_acl_entries("docs", path, [("allow", acls[path])], protected=True)

    for _ in range(8):
        new_file()
    versions: dict[str, int] = {}
    known = directory(samba_domain)
    kill_at = 3
    for number in range(6):
        moved: set[str] = set()
        if number:
            for path in rng.sample(sorted(texts), 2):  # rewritten
                texts[path] = texts[path].replace(f"version {number - 1}", f"version {number}") + f" v{number}"
                samba_domain.write("docs", path, texts[path].encode())
                # the file keeps its ACL: an overwrite is no new file
                moved.add(path)
            for path in rng.sample(sorted(set(texts) - moved), 2):  # its ACL only
                before_group = acls[path]
                set_group(path)
                if acls[path] != before_group:
                    moved.add(path)
            touched = rng.choice(sorted(set(texts) - moved))  # the same bytes, written again
            samba_domain.write("docs", touched, texts[touched].encode())
            gone = rng.choice(sorted(set(texts) - moved - {touched}))
            samba_domain.remove("docs", gone)
            del texts[gone], acls[gone]
            new_file()
        if number == kill_at:
            project.killed_crawl(name, 3 + rng.random(), delay=0.5)
        result = run_scrapy(["crawl", name], project.env(**{SECRET: samba_domain.admin_password}))
        assert result.returncode == 0, result.stderr[-3000:]
        docs = {doc["url"]: doc for doc in solr_docs(solr, name)}
        urls = {tree.url("docs", path): path for path in texts}
        assert set(docs) == set(urls), f"crawl {number}"
        for url, path in urls.items():
            assert texts[path] in docs[url]["content"], f"crawl {number}: {path} holds old text"
            if url in versions and path not in moved and number != kill_at:
                assert docs[url]["_version_"] == versions[url], f"crawl {number}: {path} pushed again"
            elif url in versions and path in moved:
                assert docs[url]["_version_"] != versions[url], f"crawl {number}: {path} changed, not pushed"
        versions = {url: doc["_version_"] for url, doc in docs.items()}
        for user in ("alice", "dave"):
            principals = known.principals(user)
            decided = {url for url, doc in docs.items() if decide(access_of_fields(doc), principals).granted}  # type: ignore[arg-type]
            granted = {tree.url(share, path) for share, path in samba_domain.readable(user, [("docs", path) for path in texts])}
            assert decided == granted, (number, user, sorted(decided ^ granted))
    explained = project.scrapy("explain", name, tree.url("docs", f"{base}/.hidden.txt"))
    assert "hidden" in explained.stdout, explained.stdout


def test_a_descriptor_the_crawler_may_not_read_keeps_the_file_out_of_the_index(
    project: Project, solr: pysolr.Solr, samba_domain: SambaDomain, tree: Tree
) -> None:
    """The crawl's account (a plain domain user here) may list the folder but not read a file's
    permissions: the file is not indexed (927), never public; once it may, the file is indexed;
    a file whose permissions become unreadable leaves the index."""
    base = f"{tree.base}/guarded"
    samba_domain.mkdir("docs", base)
    samba_domain.set_acl_entries("docs", base, [("allow", "Domain Users")], protected=True, inherit=True)
    ok, closed = tree.write("docs", f"{base}/ok.txt", "readable"), tree.write("docs", f"{base}/closed.txt", "closed")
    samba_domain.set_acl_entries("docs", f"{base}/closed.txt", [("allow", "carol")], protected=True)
    samba_domain.set_acl(  # carol's alone: not even Administrators may read its permissions
        "docs", f"{base}/closed.txt", f"O:{samba_domain.sid('carol')}D:P(A;;0x1f01ff;;;{samba_domain.sid('carol')})"
    )
    name = f"guarded-{tree.base}"
    password = samba_domain.passwords["crawler"]
    smb_source(
        project, name, samba_domain, [f"smb://{samba_domain.address}/docs/{base}"], user="crawler", share_permissions='"ignore"'
    )
    report = crawl(project, name, samba_domain, password)
    assert report["new"] == [ok], report
    assert {doc["url"] for doc in solr_docs(solr, name)} == {ok}
    row = project.table().get(name, closed)
    assert row is not None and row["status"] == 927 and "access denied" in row["reason"], row

    samba_domain.set_acl_entries("docs", f"{base}/closed.txt", [("allow", "Domain Users")], protected=True)
    samba_domain.set_acl("docs", f"{base}/ok.txt", f"O:{samba_domain.sid('carol')}D:P(A;;0x1f01ff;;;{samba_domain.sid('carol')})")
    report = crawl(project, name, samba_domain, password)
    assert report["new"] == [closed] and report["deleted"] == [ok], report
    assert {doc["url"] for doc in solr_docs(solr, name)} == {closed}
    row = project.table().get(name, ok)
    assert row is not None and row["status"] == 927


def failed_crawl(project: Project, name: str, password: str) -> str:
    """A crawl that must fail: its stderr (the run is failed, and no secret is in it)."""
    result = run_scrapy(["crawl", name], project.env(**{SECRET: password}))
    assert password not in result.stderr + result.stdout
    database = project.table().database
    try:
        assert Runs(database).latest(name)["state"] == "failed", result.stderr[-3000:]
    finally:
        database.close()
    return result.stderr


def test_share_permissions_samba_withholds_fail_the_crawl_and_never_move_files(
    project: Project, solr: pysolr.Solr, samba_domain: SambaDomain, tree: Tree
) -> None:
    """Issue 72 point 13: Samba answers srvsvc for an account other than its Administrator
    without the share's descriptor until Administrator has asked through its worker, and with it
    after. Its files were 927 (out of the index) or indexed, by the server's history. Now an
    answer without one fails the crawl, naming share_permissions = "ignore", and removes nothing:
    the index holds the files as the share's read permissions allow them, whoever asked before."""
    base = f"{tree.base}/withheld"
    samba_domain.mkdir("docs", base)
    samba_domain.set_acl_entries("docs", base, [("allow", "Domain Users")], protected=True, inherit=True)
    files = {tree.write("docs", f"{base}/{word}.txt", f"the {word} note") for word in ("first", "second")}
    name = f"withheld-{tree.base}"
    password = samba_domain.passwords["crawler"]
    smb_source(project, name, samba_domain, [f"smb://{samba_domain.address}/docs/{base}"], user="crawler")

    samba_domain.restart_rpc_workers()  # a worker the Administrator has not asked through
    stderr = failed_crawl(project, name, password)
    assert "the permissions of share \\\\" + samba_domain.address + "\\docs cannot be read" in stderr, stderr[-3000:]
    assert 'set share_permissions = "ignore"' in stderr and "nothing is removed" in stderr
    assert not solr_docs(solr, name)
    assert all(project.table().get(name, url) is None for url in files)  # not listed: nothing judged

    assert samba_domain.share_descriptor("docs") is not None  # the Administrator asks: the worker learns
    report = crawl(project, name, samba_domain, password)
    assert sorted(report["new"]) == sorted(files), report
    indexed = {doc["url"]: doc["_version_"] for doc in solr_docs(solr, name)}
    assert set(indexed) == files

    samba_domain.restart_rpc_workers()  # withheld again: the files stay as they are
    failed_crawl(project, name, password)
    assert {doc["url"]: doc["_version_"] for doc in solr_docs(solr, name)} == indexed


def test_a_server_without_srvsvc_fails_the_crawl_naming_the_setting(
    project: Project, solr: pysolr.Solr, samba_domain: SambaDomain, tree: Tree
) -> None:
    """Issue 72 point 13: a server without a srvsvc pipe failed the whole crawl with an error that
    did not say share_permissions = "ignore" would crawl it; now it says so and what it means
    (the files' NTFS permissions alone decide), and with it the share's files are indexed."""
    root = f"smb://{samba_domain.address}/docs/{tree.base}"
    smb_source(project, f"nosrvsvc-{tree.base}", samba_domain, [root])
    smb_source(project, f"ignored-{tree.base}", samba_domain, [root], share_permissions='"ignore"')
    docs_files = {url for url, (share, _path) in tree.files.items() if share == "docs"}
    with samba_domain.without_rpc_helpers():
        stderr = failed_crawl(project, f"nosrvsvc-{tree.base}", samba_domain.admin_password)
        assert "the srvsvc pipe could not be opened" in stderr, stderr[-3000:]
        assert 'set share_permissions = "ignore"' in stderr and "NTFS permissions alone decide" in stderr
        report = crawl(project, f"ignored-{tree.base}", samba_domain)
    assert sorted(report["new"]) == sorted(docs_files), report
    assert {doc["url"] for doc in solr_docs(solr, f"ignored-{tree.base}")} == docs_files
