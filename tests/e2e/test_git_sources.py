"""Git sources against real repositories (tests/git_server.py: gitolite, and the same repositories
over smart HTTP from Apache and git-http-backend), issue 78 point 6.

The oracle is gitolite's own answer (``gitolite access <repo> <user> R any``, the users'
directory groups given to it as a site's GROUPLIST_PGM gives them): after every crawl of
changing repositories (files written, edited, deleted, moved; the rules rewritten: groups the
file defines, groups from the directory, a repository group, ``deny-rules``), each directory
user's trimmed search finds exactly the files of the repositories gitolite lets them read, and
the index holds exactly the regular files at each branch's head. Only changed files are read
again; a change of rules alone updates the access without a read; symbolic links are no files;
`scrapy explain-access` names the rule.
"""

from __future__ import annotations

import os
import random

import pysolr

from searchcrawl.access.decision import Principal, Principals, decide
from searchcrawl.access.gitolite_rules import GitoliteNames, read_gitolite
from searchcrawl.index.solr_client import SolrIndex
from tests.conftest import Project, run_scrapy, solr_docs
from tests.directory_server import READING_GROUPS, DirectoryServer
from tests.e2e.test_secure_search import directory_of_server, found_by
from tests.git_server import CRAWLER, DIRECTORY_GROUPS, GitServer
from tests.grouplist_program import documented_grouplist

SECRET = "GIT_CRAWL_PASSWORD_TEST"
USERS = ("alice", "bob", "carol", "")
REPOSITORIES = ("handbook", "secret", "hr/pay", "tools")
WORDS = ("quay", "ledger", "tender", "pilot", "berth", "invoice", "audit", "ferry")
RULES = [
    # the first rules, then those of later crawls: each a whole gitolite.conf (its admin repository aside)
    """@staff = alice bob
@docs = handbook tools
repo @docs
    R = @staff
    RW+ = carol
repo secret
    RW = bob
repo hr/pay
    R = @finance
""",
    """@staff = alice bob
@docs = handbook tools
repo @docs
    R = @all-staff
repo secret
    RW = bob carol
repo hr/pay
    R = @finance
    R = carol
""",
    """@staff = alice bob
@docs = handbook tools
repo @all
    R = carol
repo @docs
    option deny-rules = 1
    - = bob
    R = @staff
repo secret
    RW+ = @staff
repo hr/pay
    option deny-rules = 1
    R = alice
    - = @all-staff
    R = bob
""",
]


def git_source(project: Project, name: str, server: GitServer) -> None:
    repositories = "\n".join(
        f'"{repo}" = "{server.url(repo) if repo == "secret" else server.repositories / (repo + ".git")}"' for repo in REPOSITORIES
    )
    project.source(
        name,
        f"""type = "git"
max_delete_share = 1.0
[git]
branch = "main"
username = "{CRAWLER}"
password_secret = "{SECRET}"
cache_dir = "{project.data_dir / "git-cache"}"
gitolite_conf = "{server.conf}"
group_token = "group:{{id}}"
display_url = "https://git.example.org/{{repository}}/blob/{{branch}}/{{path}}"
exclude = ["*.tmp"]
[git.repositories]
{repositories}
""",
    )


def crawl(project: Project, name: str, server: GitServer) -> str:
    result = run_scrapy(["crawl", name], project.env(**{SECRET: server.crawler_password}))
    assert result.returncode == 0, result.stderr[-3000:]
    assert server.crawler_password not in result.stderr + result.stdout
    return result.stderr


class Trees:
    """The repositories' files as the test changes them: (repository, path) -> text."""

    def __init__(self, server: GitServer, rng: random.Random) -> None:
        self.server, self.rng = server, rng
        self.number = 0
        self.files: dict[tuple[str, str], str] = {}
        for repo in REPOSITORIES:
            path = f"docs/start-{repo.replace('/', '-')}.md"
            self.server.commit(repo, {path: self.text(repo, path)})
        for _ in range(6):
            self.add()
        self.server.commit("handbook", {"scratch.tmp": "excluded zebrafinch"})

    def text(self, repo: str, path: str) -> str:
        self.number += 1
        text = f"zebrafinch {self.number} " + " ".join(self.rng.choice(WORDS) for _ in range(10))
        self.files[(repo, path)] = text
        return text

    def add(self) -> str:
        repo = self.rng.choice(REPOSITORIES)
        path = f"{self.rng.choice(('docs', 'notes', 'docs/deep'))}/file-{self.number + 1}.txt"
        self.server.commit(repo, {path: self.text(repo, path)})
        return f"{repo}:{path}"

    def edit(self) -> str:
        repo, path = self.rng.choice(sorted(self.files))
        self.server.commit(repo, {path: self.text(repo, path)})
        return f"{repo}:{path}"

    def delete(self) -> str:
        repo, path = self.rng.choice(sorted(self.files))
        self.server.commit(repo, {path: None})
        del self.files[(repo, path)]
        return f"{repo}:{path}"

    def move(self) -> str:
        repo, path = self.rng.choice(sorted(self.files))
        target = f"moved/{self.number}-{path.rsplit('/', 1)[1]}"
        text = self.files.pop((repo, path))
        self.files[(repo, target)] = text
        self.server.commit(repo, {path: None, target: text})
        return f"{repo}:{path} -> {target}"

    def step(self, number: int) -> list[str]:
        kinds = [self.add, self.edit, self.delete, self.move]
        actions = [kinds[number % len(kinds)], *self.rng.choices(kinds, k=self.rng.randint(0, 2))]
        return [f"{action.__name__}: {action()}" for action in actions]


def test_each_directory_user_finds_exactly_the_files_gitolite_lets_them_read(
    project: Project, solr: pysolr.Solr, git_server: GitServer, directory_server: DirectoryServer
) -> None:
    rng = random.Random(786)
    git_server.set_rules(RULES[0])
    trees = Trees(git_server, rng)
    link = git_server.work / "handbook" / "link-to-passwd"
    os.symlink("/etc/passwd", link)  # a symbolic link: no file of the repository's to index
    git_server.commit("handbook", {})
    name = "code"
    git_source(project, name, git_server)
    client = SolrIndex(project.solr_url, timeout=30)
    directory = directory_of_server(directory_server)
    before: dict[tuple[str, str], dict] = {}
    for number in range(6):
        step = trees.step(number) if number else ["first crawl"]
        if number in (2, 4):
            git_server.set_rules(RULES[number // 2])
            step.append(f"rules {number // 2}")
        crawl(project, name, git_server)
        docs = {(doc["repository_s"], doc["path_s"][1:]): doc for doc in solr_docs(solr, name)}
        assert sorted(docs) == sorted(trees.files), (number, step)
        for (repo, path), doc in docs.items():
            assert doc["content"].strip() == trees.files[(repo, path)], (number, step, repo, path)
            assert doc["display_url"] == f"https://git.example.org/{repo}/blob/main/{path}"
            old = before.get((repo, path))
            if old is not None and all(
                old.get(f) == doc.get(f) for f in ("content", "access_allow", "access_deny", "access_deny_late")
            ):
                assert old["_version_"] == doc["_version_"], (number, step, repo, path)  # unchanged: not pushed again
        readable = git_server.readable([user for user in USERS if user], REPOSITORIES)  # gitolite's answer for each
        for user in USERS:
            oracle = {key for key in docs if user and key[0] in readable[user]}
            principals = directory.principals(user) if user else Principals.anonymous()
            visible = found_by(client, principals, name)
            found = {key for key, doc in docs.items() if doc["id"] in visible}
            assert found == oracle, (number, step, user or "anonymous", sorted(found ^ oracle))
        before = docs

    # the rules changed, and nothing else: the access is updated without reading a file
    git_server.set_rules(RULES[0])
    log = crawl(project, name, git_server)
    assert "'searchcrawl/access_updates'" in log and "'downloader/response_status_count/200'" not in log, log[-3000:]
    assert {key for key, doc in docs.items() if doc["id"] in found_by(client, directory.principals("carol"), name)} == {
        key for key in docs if key[0] in ("handbook", "tools")
    }

    # explain-access names the rule that decided
    url = next(doc["url"] for key, doc in docs.items() if key[0] == "hr/pay")
    explained = run_scrapy(["explain-access", "alice", url], project.env(**directory_server.settings()))
    assert explained.returncode == 0, explained.stderr
    assert "gitolite.conf line 11: R = @finance" in explained.stdout, explained.stdout
    assert explained.stdout.splitlines()[-1].startswith("  decision: GRANTED")


GROUP_REPOSITORIES = (*READING_GROUPS, "developers", "all-staff", "accounting", "finance", "staff")


def test_a_grouplist_program_searching_ldap_grants_the_groups_its_filter_finds(
    project: Project, solr: pysolr.Solr, git_server: GitServer, directory_server: DirectoryServer
) -> None:
    """A GROUPLIST_PGM that prints the cn of the groups one ldapsearch finds (memberUid or member
    DN, no nesting): each directory user's trimmed search finds exactly the repositories gitolite
    lets them read, the source stating the program's filter (``group_filter``)."""
    groupfilter = "(|(memberUid=%{user})(member=%{dn}))"
    search = (
        f"ldapsearch -x -LLL -o ldif-wrap=no -H {directory_server.url} -D '{directory_server.bind_dn}' "
        f"-w '{directory_server.bind_password}'"
    )
    script = documented_grouplist(search, directory_server.user_base, directory_server.group_base)  # the docs' own
    git_server.set_rules("".join(f"repo groups/{cn}\n    R = @{cn}\n" for cn in GROUP_REPOSITORIES))
    for cn in GROUP_REPOSITORIES:
        git_server.commit(f"groups/{cn}", {"notes.txt": f"zebrafinch {cn}"})
    name = "code-groups"
    repositories = "\n".join(f'"groups/{cn}" = "{git_server.repositories / f"groups/{cn}.git"}"' for cn in GROUP_REPOSITORIES)
    project.source(
        name,
        f'type = "git"\n[git]\nbranch = "main"\ngitolite_conf = "{git_server.conf}"\ngroup_filter = "{groupfilter}"\n'
        f"[git.repositories]\n{repositories}\n",
    )
    with directory_server.added_groups(READING_GROUPS), git_server.grouplist(script):
        crawl(project, name, git_server)
        client, directory = SolrIndex(project.solr_url, timeout=30), directory_of_server(directory_server)
        docs = {doc["repository_s"]: doc for doc in solr_docs(solr, name)}
        assert sorted(docs) == sorted(f"groups/{cn}" for cn in GROUP_REPOSITORIES)
        found: dict[str, set[str]] = {}
        readable = git_server.readable([user for user in USERS if user], docs)  # gitolite's answer for each
        for user in USERS:
            oracle = {repo for repo in docs if user and repo in readable[user]}
            principals = directory.principals(user) if user else Principals.anonymous()
            visible = found_by(client, principals, name)
            found[user] = {repo for repo, doc in docs.items() if doc["id"] in visible}
            assert found[user] == oracle, (user or "anonymous", sorted(found[user] ^ oracle))
        # what gitolite answered: memberUid and member DN, never the primary group nor a nested one
        assert found["bob"] == {"groups/inspectors", "groups/editors"}
        assert found["alice"] == {"groups/accounting", "groups/staff"}


def crawled_once(project: Project, solr: pysolr.Solr, server: GitServer, name: str, tables: str) -> list[str]:
    """A source of one repository (``tables``: its own, [git.repositories] last) crawled once,
    with deletions unguarded: its documents' ids, which a failed crawl must leave as they are."""
    project.source(name, f'type = "git"\nmax_delete_share = 1.0\n{tables}')
    crawl(project, name, server)
    ids = sorted(doc["id"] for doc in solr_docs(solr, name))
    assert ids
    return ids


def test_a_refused_fetch_removes_nothing(project: Project, solr: pysolr.Solr, git_server: GitServer) -> None:
    git_server.set_rules(RULES[0])
    git_server.commit("secret", {"lone.txt": "zebrafinch lone"})
    name = "code-refused"
    tables = f"""[access]
public = true
[git]
username = "{CRAWLER}"
password_secret = "{SECRET}"
cache_dir = "{project.data_dir / "git-cache"}"
[git.repositories]
secret = "{git_server.url("secret")}"
"""
    before = crawled_once(project, solr, git_server, name, tables)
    refused = run_scrapy(["crawl", name], project.env(**{SECRET: "not-the-password-42"}))
    assert refused.returncode != 0 and "not-the-password-42" not in refused.stderr
    assert sorted(doc["id"] for doc in solr_docs(solr, name)) == before


def test_an_uncompiled_gitolite_conf_fails_the_crawl_and_removes_nothing(
    project: Project, solr: pysolr.Solr, git_server: GitServer
) -> None:
    """Issue 91 point 21: gitolite.conf edited and not compiled is not what gitolite enforces (it
    still answers by its compiled rules): the crawl fails, saying so, and the index keeps what it
    had, rather than every file 927 and removed (or a deletion guard tripped without a cause)."""
    git_server.set_rules(RULES[0])
    git_server.commit("handbook", {"kept.txt": "zebrafinch kept"})
    name = "code-uncompiled"
    tables = f"""[git]
branch = "main"
gitolite_conf = "{git_server.conf}"
[git.repositories]
handbook = "{git_server.repositories / "handbook.git"}"
"""
    before = crawled_once(project, solr, git_server, name, tables)
    assert git_server.can_read("alice", "handbook")
    try:
        git_server.conf.write_text(git_server.conf.read_text().replace("R = @staff", "R = carol"))
        compiled = git_server.conf.with_name("gitolite.conf-compiled.pm").stat().st_mtime_ns
        os.utime(git_server.conf, ns=(compiled + 10**9, compiled + 10**9))
        assert git_server.can_read("alice", "handbook")  # gitolite still answers by what it compiled
        failed = run_scrapy(["crawl", name], project.env())
        assert failed.returncode != 0 and "newer than what gitolite compiled from it" in failed.stderr, failed.stderr[-3000:]
        assert sorted(doc["id"] for doc in solr_docs(solr, name)) == before
    finally:
        git_server.set_rules(RULES[0])


def test_random_rules_are_decided_as_gitolite_decides_them(git_server: GitServer) -> None:
    """Random gitolite.conf files (groups defined, redefined and nested, repository groups,
    patterns, @all on both sides, deny-rules, C and RW rules), each repository's access against
    ``gitolite access`` for each user: the same, but never more where read conservatively."""
    rng = random.Random(7861)
    repos = ["r1", "r2", "r3", "docs-a"]
    users = {"alice": DIRECTORY_GROUPS["alice"], "bob": DIRECTORY_GROUPS["bob"], "carol": (), "mallory": ()}
    names = GitoliteNames(group_token="group:{id}", authenticated_token="group:gitolite-users")
    who = ("alice", "bob", "carol", "mallory", "@all", "@g1", "@g2", "@finance", "@all-staff")
    checked = conservative = 0
    for _ in range(30):
        lines = [f"repo {' '.join(repos)}", "    C = nobody"]
        for group in ("@g1", "@g2", "@g1"):
            if rng.random() < 0.6:
                lines.append(f"{group} = {' '.join(rng.sample(('alice', 'bob', 'carol', 'mallory', '@g1', '@all'), 2))}")
        lines = [line for line in lines if not line.startswith("@g1 = ") or "@g1" not in line.split("=", 1)[1]]
        if rng.random() < 0.5:
            lines.append("@rg = r1 docs-a")
        for _ in range(rng.randint(1, 4)):
            target = rng.choice(
                ("r1", "r2 r3", "@rg" if "@rg = r1 docs-a" in lines else "r3", "r[0-9]", "@all", "docs-.*", "r2.git")
            )
            lines.append(f"repo {target}")
            if rng.random() < 0.3:
                lines.append(f"    option deny-rules = {rng.choice(('1', '0', 'yes'))}")
            for _ in range(rng.randint(1, 3)):
                lines.append(f"    {rng.choice(('R', 'RW', 'RW+', '-', 'C'))} = {' '.join(rng.sample(who, rng.randint(1, 2)))}")
        text = "\n".join(lines) + "\n"
        if not git_server.set_rules(text, check=False):
            continue  # gitolite refused it (an undefined group, say): its last rules stay, and so does the oracle
        rules = read_gitolite(git_server.conf.read_text(), str(git_server.conf))
        readable = git_server.readable(users, repos)  # gitolite's answer for each user and repository
        for user, groups in users.items():
            oracle = readable[user]
            tokens = [f"user:{user}", "group:gitolite-users", *(f"group:{group}" for group in groups)]
            principals = Principals.of(user, [Principal(token, "test") for token in tokens])
            for repo in repos:
                access, why = rules.access_of(repo, names)
                if access is None:
                    continue  # fail closed: shown to no one
                granted = decide(access, principals).granted
                assert granted == (repo in oracle) or (access.notes and not granted), (text, repo, user, access)
                checked += 1
                conservative += granted != (repo in oracle)
    assert checked > 200 and conservative < checked / 20
