"""Redmine sources against a real Redmine (tests/redmine_server.py: Debian's package on SQLite),
its users those of the tests' LDAP directory, issue 78 point 5.

The oracle is Redmine's own answer: after every crawl of a changing tracker (issues opened,
edited, commented, given attachments, made private, reassigned, deleted; memberships, a project's
visibility and the built-in roles' rights changed), each directory user's trimmed search, and an
anonymous one, finds exactly the issues Redmine shows them (asked of Redmine as that user): a
private project's members, roles that see all, public or only their own issues, a group's role
limited to one tracker, a public project's non-members, private issues to their authors and
assignees. Private notes are never indexed; an unchanged issue is never read again; a change of
memberships alone updates the access without a read; `scrapy explain-access` names the role.
"""

from __future__ import annotations

import os
import random
from dataclasses import replace

import pysolr

from searchcrawl.access.decision import Principals, decide
from searchcrawl.access.redmine_roles import issue_access
from searchcrawl.agents.redmine import RedmineAgent, issue_facts
from searchcrawl.index.solr_client import SolrIndex
from tests.conftest import Project, run_scrapy, solr_docs
from tests.directory_server import DirectoryServer
from tests.e2e.test_secure_search import directory_of_server, found_by
from tests.redmine_server import CRAWLER, RedmineServer

SECRET = "REDMINE_CRAWL_PASSWORD_TEST"
USERS = ("alice", "bob", "carol", "")  # "": not signed in
ACCESS_FIELDS = ("access_allow", "access_deny")
FIELDS = ("tracker_s", "status_s", "private_b", "last_modified")
WORDS = ("quay", "ledger", "tender", "pilot", "berth", "invoice", "audit", "ferry")
TRACKERS = (1, 2, 3)  # Bug, Feature, Support


def redmine_source(project: Project, name: str, server: RedmineServer) -> None:
    project.source(
        name,
        f"""type = "redmine"
max_delete_share = 1.0
[redmine]
url = "{server.url}"
username = "{CRAWLER}"
password_secret = "{SECRET}"
projects = ["harbour", "finance"]
anonymous_token = "public"
exclude = ["*.tmp"]
""",
    )


def crawl(project: Project, name: str, server: RedmineServer) -> str:
    result = run_scrapy(["crawl", name], project.env(**{SECRET: server.password(CRAWLER)}))
    assert result.returncode == 0, result.stderr[-3000:]
    assert server.password(CRAWLER) not in result.stderr + result.stdout
    return result.stderr


class Tracker:
    """The issues as the test changes them: id -> (subject, texts indexed, private notes)."""

    def __init__(self, server: RedmineServer, rng: random.Random) -> None:
        self.server, self.rng = server, rng
        self.number = 0
        self.texts: dict[int, list[str]] = {}
        self.secrets: dict[int, list[str]] = {}
        self.attachments: dict[int, list[str]] = {}
        self.projects: dict[int, str] = {}
        self.closed: set[str] = set()  # projects closed: their issues are read-only
        for _ in range(8):
            self.open()

    def words(self) -> str:
        self.number += 1
        return f"zebrafinch {self.number} " + " ".join(self.rng.choice(WORDS) for _ in range(12))

    def people(self) -> dict[str, int]:
        return {user["login"]: user["id"] for user in self.server.api("GET", "users.json").json()["users"]}

    def open(self) -> str:
        text = self.words()
        fields = {"tracker_id": self.rng.choice(TRACKERS), "is_private": self.rng.random() < 0.3}
        if self.rng.random() < 0.5:
            fields["assigned_to_id"] = self.people()[self.rng.choice(("alice", "bob"))]
        where = self.rng.choice(sorted({"harbour", "finance"} - self.closed))
        issue = self.server.issue(where, f"Issue {self.number}", text, **fields)
        self.projects[issue] = where
        self.texts[issue] = [text]
        self.secrets[issue] = []
        return f"#{issue} {fields}"

    def open_issues(self) -> list[int]:
        return sorted(issue for issue in self.texts if self.projects[issue] not in self.closed)

    def comment(self) -> str:
        issue = self.rng.choice(self.open_issues())
        text = self.words()
        private = self.rng.random() < 0.3
        self.server.comment(issue, text, private=private)
        (self.secrets if private else self.texts)[issue].append(text)
        return f"#{issue} private={private}"

    def attach(self) -> str:
        issue = self.rng.choice(self.open_issues())
        text = self.words()
        self.server.attach(issue, f"note-{self.number}.txt", text.encode())
        self.attachments.setdefault(issue, []).append(text)
        return f"#{issue}"

    def change(self) -> str:
        issue = self.rng.choice(self.open_issues())
        fields = self.rng.choice(
            [{"is_private": True}, {"is_private": False}, {"assigned_to_id": self.people()["bob"]}, {"tracker_id": 3}]
        )
        self.server.update(issue, **fields)
        return f"#{issue} {fields}"

    def delete(self) -> str:
        issue = self.rng.choice(self.open_issues())
        self.server.delete(issue)
        del self.texts[issue], self.secrets[issue]
        self.attachments.pop(issue, None)
        return f"#{issue}"

    def step(self, number: int) -> list[str]:
        kinds = [self.open, self.comment, self.attach, self.change, self.delete]
        actions = [kinds[number % len(kinds)], *self.rng.choices(kinds, k=self.rng.randint(1, 2))]
        return [f"{action.__name__}: {action()}" for action in actions]


def rights_change(server: RedmineServer, tracker: Tracker, number: int) -> str:
    """Memberships, a project's visibility or a built-in role's rights changed (no issue moves)."""
    if number == 2:
        answer = server.api(
            "POST", "projects/finance/memberships.json", membership={"user_id": user_id(server, "carol"), "role_ids": [4]}
        )
        assert answer.status_code == 201, answer.text
        return "carol Developer in finance"
    if number == 4:
        assert server.api("PUT", "projects/harbour.json", project={"is_public": False}).status_code == 204
        return "harbour private"
    if number == 3:
        server.runner("Project.find_by(identifier: 'finance').close")
        tracker.closed.add("finance")
        return "finance closed (its issues still shown)"
    if number == 5:
        server.runner(
            "Member.create!(project: Project.find_by(identifier: 'harbour'), principal: GroupNonMember.first, "
            "roles: [Role.find_by(name: 'Watcher')])"
        )
        return "harbour's non-members given the Watcher role (only their own issues)"
    if number == 6:
        server.runner("Role.anonymous.add_permission!(:view_issues)")
        assert server.api("PUT", "projects/harbour.json", project={"is_public": True}).status_code == 204
        return "harbour public again, anonymous users see its public issues"
    return ""


def user_id(server: RedmineServer, login: str) -> int:
    return next(user["id"] for user in server.api("GET", "users.json").json()["users"] if user["login"] == login)


def test_each_directory_user_finds_exactly_the_issues_redmine_shows_them(
    project: Project, solr: pysolr.Solr, redmine_server: RedmineServer, directory_server: DirectoryServer
) -> None:
    rng = random.Random(785)
    tracker = Tracker(redmine_server, rng)
    name = "issue-tracker"
    redmine_source(project, name, redmine_server)
    client = SolrIndex(project.solr_url, timeout=30)
    directory = directory_of_server(directory_server)
    before: dict[str, dict] = {}
    for number in range(8):
        step = tracker.step(number) if number else ["first crawl"]
        changed = rights_change(redmine_server, tracker, number)
        step += [changed] if changed else []
        crawl(project, name, redmine_server)
        docs = {doc["url"].rsplit("/", 1)[1].replace("%2F", "/"): doc for doc in solr_docs(solr, name)}
        issues = {int(key.split("/")[1]): doc for key, doc in docs.items() if key.startswith("issues/")}
        assert sorted(issues) == sorted(tracker.texts) == redmine_server.issues(), (number, step)
        for issue, doc in issues.items():
            assert all(text in doc["content"] for text in tracker.texts[issue]), (number, step, issue)
            assert not any(text in doc["content"] for text in tracker.secrets[issue]), (number, step, issue)  # private notes
            assert doc["display_url"] == f"{redmine_server.url}issues/{issue}" and doc["title"].startswith(f"#{issue} Issue ")
        attached = sorted(text for texts in tracker.attachments.values() for text in texts)
        assert sorted(doc["content"].strip() for key, doc in docs.items() if key.startswith("attachments/")) == attached
        for key, doc in docs.items():
            old = before.get(key)
            if old is not None and all(
                old.get(field) == doc.get(field) for field in ("content", "title", *FIELDS, *ACCESS_FIELDS)
            ):
                assert old["_version_"] == doc["_version_"], (number, step, key)  # unchanged: not pushed again
        readable = redmine_server.readable(USERS, issues)  # Redmine's answer for each user and issue
        for user in USERS:
            oracle = readable[user]
            principals = directory.principals(user) if user else Principals.anonymous()
            visible = found_by(client, principals, name)
            found = {issue for issue, doc in issues.items() if doc["id"] in visible}
            assert found == oracle, (number, step, user or "anonymous", sorted(found ^ oracle))
            for key, doc in docs.items():  # an attachment is shown with its issue
                if key.startswith("attachments/"):
                    parent = next(i for i, texts in tracker.attachments.items() if doc["content"].strip() in texts)
                    assert (doc["id"] in visible) == (parent in oracle), (number, step, user, key)
        before = docs

    # a membership changed, and nothing else: the access is updated without a read
    membership = next(
        m["id"] for m in redmine_server.api("GET", "projects/harbour/memberships.json").json()["memberships"]
        if m.get("user", {}).get("name", "").startswith("Bob")
    )  # fmt: skip
    assert redmine_server.api("DELETE", f"memberships/{membership}.json").status_code == 204
    log = crawl(project, name, redmine_server)
    assert "'searchcrawl/access_updates'" in log and "'downloader/response_status_count/200'" not in log, log[-3000:]
    visible = found_by(client, directory.principals("bob"), name)
    readable = redmine_server.readable(("bob", "alice"), issues)
    assert {i for i, doc in issues.items() if doc["id"] in visible} == readable["bob"]

    # explain-access names the role that decided
    issue = next(i for i, doc in issues.items() if doc["project_s"] == "finance" and i in readable["alice"])
    explained = run_scrapy(["explain-access", "alice", issues[issue]["url"]], project.env(**directory_server.settings()))
    assert explained.returncode == 0, explained.stderr
    assert "member, role Reporter" in explained.stdout, explained.stdout
    assert explained.stdout.splitlines()[-1].startswith("  decision: GRANTED")


def test_a_refused_account_removes_nothing(project: Project, solr: pysolr.Solr, redmine_server: RedmineServer) -> None:
    redmine_server.issue("harbour", "Lone issue", "zebrafinch lone")
    name = "issue-tracker-refused"
    redmine_source(project, name, redmine_server)
    crawl(project, name, redmine_server)
    count = len(solr_docs(solr, name))
    refused = run_scrapy(["crawl", name], project.env(**{SECRET: "not-the-password-42"}))
    assert refused.returncode != 0 and "not-the-password-42" not in refused.stderr
    assert "refused the crawl's account" in refused.stderr
    assert len(solr_docs(solr, name)) == count


SETTLED = """
finance = Project.find_by(identifier: 'finance')
finance.reopen if finance.closed?
developer = Role.find_by(name: 'Developer')
developer.add_permission!(:view_issues)
%w[harbour finance].each do |identifier|
  project = Project.find_by(identifier: identifier)
  Member.where(project: project).destroy_all
  User.where(login: %w[alice bob]).each { |person| Member.create!(project: project, principal: person, roles: [developer]) }
end
"""
WORLD = """
rng = Random.new({seed})
roles = [Role.find_by(name: 'Developer'), Role.find_by(name: 'Reporter'), Role.find_by(name: 'Watcher'), Role.find_by(name: 'Auditor')]
roles.each do |role|
  role.update!(issues_visibility: %w[all default own].sample(random: rng))
  rng.rand < 0.2 ? role.remove_permission!(:view_issues) : role.add_permission!(:view_issues)
end
[Role.non_member, Role.anonymous].each do |role|
  role.update!(issues_visibility: %w[all default own].sample(random: rng))
  rng.rand < 0.5 ? role.remove_permission!(:view_issues) : role.add_permission!(:view_issues)
end
people = User.where(login: %w[alice bob carol]).to_a
Project.where(identifier: %w[harbour finance]).each do |project|
  project.update!(is_public: rng.rand < 0.5)
  Member.where(project: project).destroy_all
  people.each do |person|
    next if rng.rand < 0.4
    Member.create!(project: project, principal: person, roles: roles.sample(rng.rand(1..2), random: rng))
  end
  Member.create!(project: project, principal: Group.find_by(lastname: 'auditors'), roles: [roles[3]]) if rng.rand < 0.5
  if rng.rand < 0.3
    Member.create!(project: project, principal: GroupNonMember.first, roles: [roles.sample(random: rng)])
  end
end
"""


def test_random_roles_and_memberships_are_decided_as_redmine_decides_them(
    redmine_server: RedmineServer, directory_server: DirectoryServer
) -> None:
    """Random roles (their visibility and view_issues), memberships (users, a group, the
    non-members' override) and projects' visibility: each issue's access against Redmine's own
    answer for each directory user and an anonymous one."""
    redmine_server.runner(SETTLED)  # whatever the tests before left: both projects open, alice and bob assignable
    people = {user["login"]: user["id"] for user in redmine_server.api("GET", "users.json").json()["users"]}
    issues = [
        redmine_server.issue(project, f"World {n}", "zebrafinch", is_private=private, tracker_id=tracker, **assignee)
        for n, (project, private, tracker, assignee) in enumerate(
            [
                ("harbour", False, 1, {}), ("harbour", True, 3, {"assigned_to_id": people["bob"]}),
                ("finance", False, 3, {}), ("finance", True, 1, {"assigned_to_id": people["alice"]}),
                ("harbour", False, 2, {}),
            ]
        )
    ]  # fmt: skip
    directory = directory_of_server(directory_server)
    agent = RedmineAgent(
        "worlds",
        {"url": redmine_server.url, "username": CRAWLER, "password_secret": SECRET, "anonymous_token": "public"},
    )
    os.environ[SECRET] = redmine_server.password(CRAWLER)
    checked = 0
    try:
        for seed in range(8):
            redmine_server.runner(WORLD.format(seed=seed))
            state = agent.read_state()
            names = replace(agent.names, anonymous_open=state.anonymous_open)
            readable = redmine_server.readable(USERS, issues)  # Redmine's answer for each user and issue
            for number in issues:
                item = redmine_server.api("GET", f"issues/{number}.json").json()["issue"]
                project = state.projects[item["project"]["id"]]
                facts = issue_facts(item, project.id)
                assert facts is not None
                access, why = issue_access(facts, project, state.roles, state.users, names)
                assert access is not None, why
                for user in USERS:
                    principals = directory.principals(user) if user else Principals.anonymous()
                    granted = decide(access, principals).granted
                    assert granted == (number in readable[user]), (seed, number, user or "anonymous", access)
                    checked += 1
        # Redmine requiring a sign-in: what its Anonymous role sees is shown to no anonymous searcher
        redmine_server.runner(
            "Setting.login_required = '1'; Role.anonymous.add_permission!(:view_issues); "
            "Project.where(identifier: %w[harbour finance]).update_all(is_public: true)"
        )
        state = agent.read_state()
        assert not state.anonymous_open
        names = replace(agent.names, anonymous_open=state.anonymous_open)
        for number in issues:
            item = redmine_server.api("GET", f"issues/{number}.json").json()["issue"]
            facts = issue_facts(item, item["project"]["id"])
            assert facts is not None
            access, _ = issue_access(facts, state.projects[facts.project], state.roles, state.users, names)
            assert access is not None and not decide(access, Principals.anonymous()).granted
        assert not redmine_server.readable([""], issues)[""]
    finally:
        redmine_server.runner("Setting.login_required = '0'")
        os.environ.pop(SECRET, None)
    assert checked == 8 * len(issues) * len(USERS)
