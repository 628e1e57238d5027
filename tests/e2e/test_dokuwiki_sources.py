"""DokuWiki sources against a real DokuWiki (tests/wiki_server.py: Debian's package under PHP's web
server), its users and groups those of the tests' LDAP directory, issue 78 point 4.

The oracle is the wiki's own answer: after every crawl of a changing wiki (pages saved, edited,
deleted; the rules rewritten), each directory user's trimmed search, and an anonymous one, finds
exactly the pages DokuWiki lets them read, asked of DokuWiki signed in as them: a namespace
closed to everyone but a group, a page of it denied to one member, a page of another opened to a
user outside its group, users' own namespaces (``%USER%``), the root's rule elsewhere. An
unchanged page is never read again; a change of rules alone updates the access without a read;
`scrapy explain-access` names the rule's line; a rule that cannot be read for certain keeps its
pages out. A DokuWiki on LDAP (authldap) grants its groups as its ``groupfilter`` finds them
(issue 91, point 2): asked of that wiki too.
"""

from __future__ import annotations

import random
import subprocess
from collections.abc import Iterator

import pysolr
import pytest

from searchcrawl.access.decision import Principal, Principals, decide
from searchcrawl.access.dokuwiki_acl import WikiNames, read_acl
from searchcrawl.index.solr_client import SolrIndex
from tests.conftest import Project, run_scrapy, solr_docs
from tests.directory_server import READING_GROUPS, DirectoryServer
from tests.e2e.test_secure_search import directory_of_server, found_by
from tests.wiki_server import CRAWLER, WikiServer

SECRET = "WIKI_CRAWL_PASSWORD_TEST"
ACCESS_FIELDS = ("access_allow", "access_deny", "access_deny_late", "access_allow_early")
USERS = ("alice", "bob", "carol", "")  # "": not signed in
NAMESPACES = ("", "wiki", "finance", "private", "users:alice", "users:bob", "staff", "playground")
FIXED = ("finance:payroll", "staff:board")  # pages the rules name one by one
WORDS = ("quay", "ledger", "tender", "pilot", "berth", "invoice", "audit", "ferry")
RULES = [
    "*                 @ALL        1",
    "finance:*         @ALL        0",
    "finance:*         @finance    1",
    "finance:payroll   alice       0",  # a member denied one page
    "private:*         @ALL        0",
    "private:*         bob         1",
    "users:*           @ALL        0",
    "users:%USER%:*    %USER%      16",
    "staff:*           @ALL        0",
    "staff:*           @all%2dstaff 1",  # all-staff, as DokuWiki writes the name
    "staff:board       carol       1",  # a user outside the group
]
CHANGES = [  # rules rewritten between crawls: (line taken out, line put in)
    ("private:*         bob         1", "private:*         @accounting 2"),
    ("finance:payroll   alice       0", "finance:payroll   @loop-a     0"),
    ("staff:board       carol       1", "staff:board       @ALL        0"),
]


def wiki_source(project: Project, name: str, server: WikiServer, rules: str = "") -> None:
    project.source(
        name,
        f"""type = "dokuwiki"
max_delete_share = 1.0
[dokuwiki]
url = "{server.url}"
username = "{CRAWLER}"
password_secret = "{SECRET}"
acl_file = "{server.acl_file}"
superuser = ["@admin"]
group_token = "group:{{id}}"
exclude = ["playground/*"]
{rules}""",
    )


def crawl(project: Project, name: str, server: WikiServer) -> str:
    result = run_scrapy(["crawl", name], project.env(**{SECRET: server.password(CRAWLER)}))
    assert result.returncode == 0, result.stderr[-3000:]
    assert server.password(CRAWLER) not in result.stderr + result.stdout
    return result.stderr


class Wiki:
    """The wiki's pages as the test changes them: id -> text."""

    def __init__(self, server: WikiServer, rng: random.Random) -> None:
        self.server, self.rng = server, rng
        self.number = 0
        self.pages: dict[str, str] = {}
        for page in FIXED:
            self.save(page)
        for _ in range(10):
            self.add()

    def save(self, page: str) -> str:
        self.number += 1
        self.pages[page] = f"zebrafinch note {self.number}: " + " ".join(self.rng.choice(WORDS) for _ in range(20))
        self.server.put(page, f"====== Page {self.number} ======\n{self.pages[page]}\n")
        return page

    def add(self) -> str:
        namespace = self.rng.choice(NAMESPACES)
        return self.save(f"{namespace}:page{self.number + 1}" if namespace else f"page{self.number + 1}")

    def edit(self) -> str:
        return self.save(self.rng.choice(sorted(self.pages)))

    def delete(self) -> str:
        page = self.rng.choice(sorted(set(self.pages) - set(FIXED)))
        self.server.put(page, "")  # DokuWiki deletes a page saved empty
        del self.pages[page]
        return page

    def crawled(self) -> list[str]:
        return sorted(page for page in self.pages if not page.startswith("playground:"))

    def step(self, number: int) -> list[str]:
        kinds = [self.add, self.edit, self.delete]
        actions = [kinds[number % len(kinds)], *self.rng.choices(kinds, k=self.rng.randint(0, 2))]
        return [f"{action.__name__}: {action()}" for action in actions]


def test_each_directory_user_finds_exactly_the_pages_dokuwiki_lets_them_read(
    project: Project, solr: pysolr.Solr, wiki_server: WikiServer, directory_server: DirectoryServer
) -> None:
    rng = random.Random(784)
    wiki_server.set_rules(RULES)
    wiki = Wiki(wiki_server, rng)
    name = "intranet-wiki"
    wiki_source(project, name, wiki_server)
    client = SolrIndex(project.solr_url, timeout=30)
    directory = directory_of_server(directory_server)
    rules = list(RULES)
    before: dict[str, dict] = {}
    for number in range(7):
        step = wiki.step(number) if number else ["first crawl"]
        if number in (2, 4, 6):  # the rules rewritten too
            old, new = CHANGES[number // 2 - 1]
            rules[rules.index(old)] = new
            wiki_server.set_rules(rules)
            step.append(f"rule: {new}")
        crawl(project, name, wiki_server)
        by_page = {doc["page_id_s"]: doc for doc in solr_docs(solr, name)}
        assert sorted(by_page) == wiki.crawled() == sorted(p for p in wiki_server.pages() if not p.startswith("playground:"))
        for page, doc in by_page.items():
            assert wiki.pages[page] in doc["content"], (number, step, page)
            assert doc["display_url"] == f"{wiki_server.url}doku.php?id={page}" and doc["title"].startswith("Page ")
            old = before.get(page)
            if old is not None and all(old.get(field) == doc.get(field) for field in ("content", *ACCESS_FIELDS)):
                assert old["_version_"] == doc["_version_"], (number, step, page)  # unchanged: not pushed again
        readable = wiki_server.readable(USERS, by_page)  # the wiki's answer for each user and page
        for user in USERS:
            oracle = readable[user]
            principals = directory.principals(user) if user else Principals.anonymous()
            visible = found_by(client, principals, name)
            found = {page for page, doc in by_page.items() if doc["id"] in visible}
            assert found == oracle, (number, step, user or "anonymous", sorted(found ^ oracle), rules)
        before = by_page
    assert wiki_server.can_read(
        "alice", "users:alice:" + next(p for p in before if p.startswith("users:alice:")).rsplit(":", 1)[1]
    )

    # a rule changed, and nothing else: the access is updated without reading a page
    rules[rules.index("private:*         @accounting 2")] = "private:*         @all%2dstaff 1"
    wiki_server.set_rules(rules)
    log = crawl(project, name, wiki_server)
    assert "'downloader/response_status_count/200'" not in log and "'searchcrawl/access_updates'" in log, log[-3000:]
    private = {doc["id"] for page, doc in before.items() if page.startswith("private:")}
    assert private and private <= found_by(client, directory.principals("bob"), name)

    # explain-access names the line that decided; the page found by its URL as indexed, as the
    # docs write it and as `scrapy search` prints it (issue 91, point 16)
    url = next(doc["url"] for page, doc in before.items() if page == "finance:payroll")
    assert url == f"dokuwiki://{name}/finance%3Apayroll"
    for asked in (url, f"dokuwiki://{name}/finance:payroll", f"{wiki_server.url}doku.php?id=finance:payroll"):
        explained = run_scrapy(["explain-access", "bob", asked], project.env(**directory_server.settings()))
        assert explained.returncode == 0, explained.stderr
        assert f"Source {name}: {url}" in explained.stdout, (asked, explained.stdout)
        assert "acl.auth.php line 3: finance:* @ALL 0" in explained.stdout, explained.stdout
        assert explained.stdout.splitlines()[-1].startswith("  decision: REFUSED")


def test_a_rule_that_cannot_be_read_keeps_its_pages_out_and_a_refusal_removes_nothing(
    project: Project, solr: pysolr.Solr, wiki_server: WikiServer
) -> None:
    wiki_server.set_rules(["*  @ALL  1"])
    wiki_server.put("lab:one", "zebrafinch lab one")
    wiki_server.put("lab:two", "zebrafinch lab two")
    name = "intranet-wiki-lab"
    wiki_source(project, name, wiki_server, 'namespace = "lab"\n')
    crawl(project, name, wiki_server)
    assert sorted(doc["page_id_s"] for doc in solr_docs(solr, name)) == ["lab:one", "lab:two"]

    # a wildcard in a comment (DokuWiki fills it in there too): the page leaves the index
    wiki_server.set_rules(["*  @ALL  1", "lab:two  @ALL  0  # not for %USER%"])
    crawl(project, name, wiki_server)
    assert [doc["page_id_s"] for doc in solr_docs(solr, name)] == ["lab:one"]
    out = project.table().get(name, f"dokuwiki://{name}/lab%3Atwo")
    assert out is not None and out["status"] == 927 and "a wildcard DokuWiki fills in" in out["reason"]

    refused = run_scrapy(["crawl", name], project.env(**{SECRET: "not-the-password-42"}))
    assert refused.returncode != 0 and "not-the-password-42" not in refused.stderr
    assert f"refused the crawl's account '{CRAWLER}'" in refused.stderr  # not taken for an anonymous reader
    assert [doc["page_id_s"] for doc in solr_docs(solr, name)] == ["lab:one"]


@pytest.fixture(scope="module")
def ldap_wiki(directory_server: DirectoryServer) -> Iterator[WikiServer]:
    """A DokuWiki on the tests' directory (authldap), the crawler a directory user with no group."""
    php = subprocess.run(["php", "-m"], capture_output=True, text=True, check=True).stdout.split()
    if "ldap" not in php:
        pytest.fail("PHP's ldap module (Debian's php-ldap) is missing: run deploy/bootstrap.sh")
    server = WikiServer(directory_server)
    with directory_server.added_person(CRAWLER, server.password(CRAWLER), (1099, 2002)):
        server.start()
        try:
            yield server
        finally:
            server.stop()


WIKI_GROUPS = (*READING_GROUPS, "developers", "all-staff", "accounting", "finance", "staff")
GROUPFILTERS = (
    "(&(objectClass=posixGroup)(|(gidNumber=%{gid})(memberUid=%{user})))",  # DokuWiki's example for OpenLDAP
    "(|(member=%{dn})(uniqueMember=%{dn}))",
    "(&(objectClass=groupOfNames)(member=%{dn}))",
)


def test_a_wiki_on_ldap_grants_its_groups_as_its_groupfilter_finds_them(
    project: Project, solr: pysolr.Solr, ldap_wiki: WikiServer, directory_server: DirectoryServer
) -> None:
    """Each directory user's trimmed search finds exactly the pages the wiki on authldap lets
    them read, for three groupfilters: by memberUid and primary gidNumber, by member or
    uniqueMember DN, by member DN in a groupOfNames only; never through nested groups."""
    ldap_wiki.set_rules(["*  @ALL  0", "open  @ALL  1", *(f"groups:{cn}:*  @{cn.replace('-', '%2d')}  1" for cn in WIKI_GROUPS)])
    ldap_wiki.put("open", "zebrafinch open")
    for cn in WIKI_GROUPS:
        ldap_wiki.put(f"groups:{cn}:notes", f"zebrafinch {cn}")
    name = "ldap-wiki"
    with directory_server.added_groups(READING_GROUPS):
        client, directory = SolrIndex(project.solr_url, timeout=30), directory_of_server(directory_server)
        granted: dict[str, dict[str, set[str]]] = {}
        for groupfilter in GROUPFILTERS:
            ldap_wiki.set_groupfilter(groupfilter)
            project.source(
                name,
                f'type = "dokuwiki"\n[dokuwiki]\nurl = "{ldap_wiki.url}"\nusername = "{CRAWLER}"\n'
                f'password_secret = "{SECRET}"\nacl_file = "{ldap_wiki.acl_file}"\nsuperuser = ["{CRAWLER}"]\n'
                f'case_sensitive = false\ngroup_filter = "{groupfilter}"\n',
            )
            crawl(project, name, ldap_wiki)
            by_page = {doc["page_id_s"]: doc for doc in solr_docs(solr, name)}
            assert sorted(by_page) == sorted(["open", *(f"groups:{cn}:notes" for cn in WIKI_GROUPS)])
            granted[groupfilter] = {}
            readable = ldap_wiki.readable(USERS, by_page)  # the wiki's answer for each user and page
            for user in USERS:
                oracle = readable[user]
                principals = directory.principals(user) if user else Principals.anonymous()
                visible = found_by(client, principals, name)
                found = {page for page, doc in by_page.items() if doc["id"] in visible}
                assert found == oracle, (groupfilter, user or "anonymous", sorted(found ^ oracle))
                granted[groupfilter][user] = {page.split(":")[1] for page in found if page != "open"}
        # what the wiki answered: no nesting, each filter its own relations
        posix, by_dn, names_only = (granted[groupfilter]["bob"] for groupfilter in GROUPFILTERS)
        assert (posix, by_dn, names_only) == ({"inspectors", "developers"}, {"editors", "all-staff"}, {"editors"})
        assert granted[GROUPFILTERS[1]]["alice"] == {"accounting"}  # not finance nor all-staff (nested)
        url = next(doc["url"] for page, doc in by_page.items() if page == "groups:reviewers:notes")
        explained = run_scrapy(["explain-access", "bob", url], project.env(**directory_server.settings()))
        assert explained.returncode == 0, explained.stderr
        assert "direct:member/groupofnames:reviewers" in explained.stdout, explained.stdout
        assert explained.stdout.splitlines()[-1].startswith("  decision: REFUSED"), explained.stdout


@pytest.fixture(autouse=True)
def _rules_as_they_were(wiki_server: WikiServer) -> None:
    """Each test starts with every page readable by everyone."""
    wiki_server.set_rules(["*  @ALL  1"])


def test_random_rules_are_decided_as_dokuwiki_decides_them(wiki_server: WikiServer) -> None:
    """Random rule files (scopes, groups, users, %USER% namespaces, denies at several levels,
    encoded names, comments), each page's access against DokuWiki's own answer for each user:
    never more, and the same but where the access says it was read conservatively."""

    rng = random.Random(7841)
    pages = ("start", "wiki:syntax", "finance:plan", "finance:q1:numbers", "users:alice:notes", "users:bob:todo")
    for page in pages:
        wiki_server.put(page, f"zebrafinch {page}")
    names = WikiNames(group_token="group:{id}", superusers=("@admin",), crawler=CRAWLER)
    scopes = ("*", "wiki:*", "finance:*", "finance:q1:*", "finance:plan", "users:*", "start")
    subjects = ("@ALL", "@user", "@finance", "@all%2dstaff", "alice", "bob", "carol", "@admin")
    groups = {"alice": ["user", "accounting", "finance", "all-staff"], "bob": ["user", "all-staff"], "carol": ["user"], "": []}
    checked = refused = 0
    for _ in range(25):
        lines = [f"{rng.choice(scopes)}  {rng.choice(subjects)}  {rng.choice((0, 0, 1, 2, 8))}" for _ in range(rng.randint(1, 7))]
        if rng.random() < 0.4:
            lines.append("users:%USER%:*  %USER%  16")
        wiki_server.set_rules(lines)
        acl = read_acl(wiki_server.acl_file.read_text(), str(wiki_server.acl_file))
        readable = wiki_server.readable(groups, pages)  # the wiki's answer for each user and page
        for page in pages:
            access, why = acl.access_of(page, names)
            assert access is not None, (lines, page, why)
            for user, user_groups in groups.items():
                wiki = page in readable[user]
                tokens = [f"user:{user}", *(f"group:{g}" for g in user_groups)] if user else []
                principals = Principals.of(user, [Principal(t, "test") for t in tokens]) if user else Principals.anonymous()
                granted = decide(access, principals).granted
                assert granted == wiki or (access.notes and not granted), (lines, page, user or "anonymous", access)
                checked += 1
                refused += wiki and not granted
    assert refused < checked / 20
