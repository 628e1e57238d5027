"""A real Redmine for tests: Debian's ``redmine`` package (5.0) on SQLite, as an instance of its own
(``/usr/share/redmine/instances/<name>``, a link to a temporary folder), served by Rails' WEBrick
on 127.0.0.1, its users those of the tests' LDAP directory (searchcrawl/dev/servers/slapd.py).

``RedmineServer().start()`` copies the package's migrated database (or migrates one), sets it up
with ``rails runner`` (the REST API on; users, a group, roles, projects and memberships below),
and starts the server. What tests may rely on:

- ``url``: ``http://127.0.0.1:<port>/``; ``CRAWLER`` (an administrator) and ``password(user)``;
- users ``alice``, ``bob``, ``carol``, ``dave`` (no password: a locked user); the group
  ``auditors`` (carol); roles ``Developer`` (sees every issue), ``Reporter`` (sees public issues
  and private ones they wrote or are assigned), ``Watcher`` (sees only their own), ``Auditor``
  (sees only Support issues), the Non member role (sees public issues), the Anonymous role (sees
  nothing);
- projects: ``harbour`` (public: alice Developer, bob Reporter, the auditors Auditor), ``finance``
  (private: alice Reporter, bob Watcher), ``archive`` (public, issues module off);
- ``api(method, path, user=CRAWLER, **json)``: the REST API as a user (an administrator's key
  switching to them: ``X-Redmine-Switch-User``); ``issue(project, subject, ...)``, ``comment``,
  ``attach``, ``update``, ``delete``: change the issues;
- ``runner(ruby)``: Ruby run in the instance (a role's rights changed, say), by one ``rails runner``
  that stays up beside the server: Rails booted once, not once a script (some 5 s of CPU each);
- ``can_read(user, issue_id)``: Redmine's own answer for that user, the oracle;
  ``readable(users, issue_ids)``: its answers for many issues, one request a user.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import requests

from searchcrawl.dev.jvm_server import free_port
from searchcrawl.dev.servers.server_processes import stop, stopped_on_failure, wait_listening

PACKAGE = Path("/usr/share/redmine")
MIGRATED = Path("/var/lib/dbconfig-common/sqlite3/redmine/instances/default/redmine_default")
CRAWLER = "crawler"
USERS = ("alice", "bob", "carol")
SETUP = """
Setting.rest_api_enabled = '1'
Setting.login_required = '0'
Setting.default_projects_modules = ['issue_tracking']
def person(login, admin = false)
  user = User.new(firstname: login.capitalize, lastname: 'Test', mail: "#{login}@example.org")
  user.login = login
  user.admin = admin
  user.password = user.password_confirmation = "redmine-#{login}-password-4711"
  user.save!
  user
end
crawler = person('crawler', true)
people = %w[alice bob carol].map { |login| [login, person(login)] }.to_h
dave = person('dave')
dave.update!(status: User::STATUS_LOCKED)
auditors = Group.create!(lastname: 'auditors')
auditors.users << people['carol']
support = Tracker.find_by(name: 'Support')
developer = Role.find_by(name: 'Developer')
developer.update!(issues_visibility: 'all')
reporter = Role.find_by(name: 'Reporter')
reporter.update!(issues_visibility: 'default')
watcher = Role.create!(name: 'Watcher', issues_visibility: 'own', permissions: [:view_issues, :add_issues])
auditor = Role.create!(name: 'Auditor', issues_visibility: 'all', permissions: [:view_issues],
                       permissions_all_trackers: {'view_issues' => '0'},
                       permissions_tracker_ids: {'view_issues' => [support.id.to_s]})
non_member = Role.non_member
non_member.update!(issues_visibility: 'default')
non_member.add_permission!(:view_issues)
anonymous = Role.anonymous
anonymous.remove_permission!(:view_issues)
def project(identifier, is_public, modules = ['issue_tracking'])
  project = Project.new(name: identifier.capitalize, identifier: identifier, is_public: is_public)
  project.enabled_module_names = modules
  project.trackers = Tracker.all
  project.save!
  project
end
def member(project, principal, role)
  Member.create!(project: project, principal: principal, roles: [role])
end
harbour = project('harbour', true)
member(harbour, people['alice'], developer)
member(harbour, people['bob'], reporter)
member(harbour, auditors, auditor)
finance = project('finance', false)
member(finance, people['alice'], reporter)
member(finance, people['bob'], watcher)
project('archive', true, ['wiki'])
puts crawler.api_key
"""
# The runner that stays up: each line on its stdin names a script, loaded at the top level as
# `rails runner` loads one (its own local variables), its output kept; a line of JSON answers it.
# Jobs (Redmine's mails, deliver_later) run in the runner's own thread: on Rails' async adapter a
# job's thread read beside the runner's transaction, and SQLite answered the transaction's write
# "database is locked" at once, without its busy wait (a lock upgrade SQLite will not wait for):
# the setup failed 1 in 8 under load.
RUNNER = """
ActiveJob::Base.queue_adapter = :inline
answers = STDOUT.dup
answers.sync = true
while (script = STDIN.gets)
  output = StringIO.new
  $stdout = output
  begin
    load(script.chomp)
    answer = {ok: true, output: output.string}
  rescue Exception => error
    answer = {ok: false, output: output.string, error: ([error.class.name + ': ' + error.message] + (error.backtrace || [])).join("\\n")}
  ensure
    $stdout = STDOUT
  end
  answers.puts(JSON.generate(answer))
end
"""


class RedmineServer:
    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="sc-redmine-"))
        self.folder.chmod(0o755)
        self.instance = f"sc-{secrets.token_hex(6)}"
        self.link = PACKAGE / "instances" / self.instance
        self.port = 0
        self.key = ""
        self.process: subprocess.Popen[bytes] | None = None
        self.scripts: subprocess.Popen[str] | None = None  # the runner that stays up (RUNNER)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @staticmethod
    def password(user: str) -> str:
        return f"redmine-{user}-password-4711"

    @stopped_on_failure
    def start(self) -> RedmineServer:
        for name in ("config", "files", "log", "tmp", "public/plugin_assets"):
            (self.folder / name).mkdir(parents=True)
        # timeout: SQLite's busy wait (Rails sets none without it): Redmine's own background work
        # (its mails, deliver_later) writes beside a runner's transaction, whose commit otherwise
        # failed at once with the database locked (a CI run of the dev examples, 1 in 3)
        (self.folder / "config" / "database.yml").write_text(
            f"production:\n  adapter: sqlite3\n  database: {self.folder}/redmine.sqlite3\n  encoding: utf8\n  timeout: 10000\n"
        )
        # its mails kept in the process (ActionMailer's test delivery): none leaves for an MTA on localhost:25
        (self.folder / "config" / "configuration.yml").write_text("production:\n  email_delivery:\n    delivery_method: :test\n")
        key = self.folder / "config" / "secret_key.txt"
        key.touch(0o600)  # Redmine signs its cookies with it; it runs as this process's user
        key.write_text(secrets.token_hex(32))
        if MIGRATED.is_file():
            shutil.copy(MIGRATED, self.folder / "redmine.sqlite3")
        # the instance's link in the package's folder last, once its folder is ready: stop() removes
        # it, and a start that fails before leaves nothing outside /tmp
        self.link.symlink_to(self.folder)
        if not MIGRATED.is_file():
            self.rails("db:migrate")
            self.rails("redmine:load_default_data", REDMINE_LANG="en")
        self.key = self.runner(SETUP).strip().splitlines()[-1]
        self.port = free_port()
        with (self.folder / "server.log").open("wb") as log:
            self.process = subprocess.Popen(
                ["ruby", "bin/rails", "server", "-u", "thin", "-b", "127.0.0.1", "-p", str(self.port), "-P", str(self.folder / "tmp" / "server.pid")],
                cwd=PACKAGE, env=self.env(), stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        wait_listening(self.process, self.port, self.folder / "server.log", timeout=120)
        return self

    def stop(self) -> None:
        if self.scripts is not None and self.scripts.stdin is not None:
            self.scripts.stdin.close()  # its loop ends
        stop(self.scripts)  # type: ignore[arg-type]
        stop(self.process)
        self.link.unlink(missing_ok=True)
        shutil.rmtree(self.folder, ignore_errors=True)

    def env(self, **more: str) -> dict[str, str]:
        return {**os.environ, "REDMINE_INSTANCE": self.instance, "RAILS_ENV": "production", **more}

    def rails(self, task: str, **more: str) -> None:
        subprocess.run(
            ["ruby", "bin/rails", task], cwd=PACKAGE, env=self.env(**more), check=True, capture_output=True, timeout=600
        )

    def runner(self, ruby: str) -> str:
        """Ruby run in the instance (its output), by the runner that stays up (RUNNER)."""
        if self.scripts is None:
            (self.folder / "tmp" / "runner.rb").write_text(RUNNER)
            with (self.folder / "runner.log").open("wb") as log:
                self.scripts = subprocess.Popen(
                    ["ruby", "bin/rails", "runner", str(self.folder / "tmp" / "runner.rb")],
                    cwd=PACKAGE, env=self.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                )  # fmt: skip
        assert self.scripts.stdin is not None and self.scripts.stdout is not None
        script = self.folder / "tmp" / f"runner-{secrets.token_hex(4)}.rb"
        script.write_text(ruby)
        self.scripts.stdin.write(f"{script}\n")
        self.scripts.stdin.flush()
        line = self.scripts.stdout.readline()
        while line and not line.startswith('{"ok":'):  # what Rails itself printed (a warning) is not an answer
            line = self.scripts.stdout.readline()
        said = self.folder / "runner.log"
        assert line, f"the runner gave no answer (exit status {self.scripts.poll()}):\n{said.read_text(errors='replace')[-3000:]}"
        answer = json.loads(line)
        # the error's first lines (its class and message) and the end of its trace
        assert answer["ok"], answer["error"][:1500] + "\n...\n" + answer["error"][-1500:]
        return str(answer["output"])

    # -- the REST API -----------------------------------------------------------------------

    def api(self, method: str, path: str, user: str = CRAWLER, **body: Any) -> requests.Response:
        headers = {"X-Redmine-API-Key": self.key}
        if user != CRAWLER:
            headers["X-Redmine-Switch-User"] = user
        return requests.request(method, self.url + path, json=body or None, headers=headers, timeout=60)

    def issue(self, project: str, subject: str, description: str, **fields: Any) -> int:
        answer = self.api(
            "POST", "issues.json", issue={"project_id": project, "subject": subject, "description": description, **fields}
        )
        assert answer.status_code == 201, answer.text
        return int(answer.json()["issue"]["id"])

    def update(self, issue: int, **fields: Any) -> None:
        answer = self.api("PUT", f"issues/{issue}.json", issue=fields)
        assert answer.status_code == 204, answer.text

    def comment(self, issue: int, notes: str, private: bool = False) -> None:
        self.update(issue, notes=notes, private_notes=private)

    def attach(self, issue: int, name: str, data: bytes, content_type: str = "text/plain") -> None:
        upload = requests.post(
            self.url + f"uploads.json?filename={name}", data=data, timeout=60,
            headers={"X-Redmine-API-Key": self.key, "Content-Type": "application/octet-stream"},
        )  # fmt: skip
        assert upload.status_code == 201, upload.text
        token = upload.json()["upload"]["token"]
        self.update(issue, uploads=[{"token": token, "filename": name, "content_type": content_type}])

    def delete(self, issue: int) -> None:
        assert self.api("DELETE", f"issues/{issue}.json").status_code == 204

    def issues(self) -> list[int]:
        found = self.api("GET", "issues.json?status_id=*&limit=100").json()
        assert found["total_count"] <= 100
        return sorted(issue["id"] for issue in found["issues"])

    def can_read(self, user: str, issue: int) -> bool:
        """Redmine's own answer for ``user`` ("": not signed in)."""
        answer = self.as_user("GET", f"issues/{issue}.json", user)
        assert answer.status_code in (200, 401, 403, 404), answer.status_code
        return answer.status_code == 200

    def readable(self, users: Iterable[str], issues: Iterable[int]) -> dict[str, set[int]]:
        """Of ``issues``, those Redmine shows each of ``users`` ("": not signed in): its issue
        list as them, asked for these issues in any status (``issue_id``, ``status_id=*``). One
        request a user instead of ``can_read``'s one an issue (a Rails request each, 60 ms of a
        loaded machine): the list keeps the issues ``Issue.visible`` keeps, the scope Redmine
        writes as SQL beside ``Issue#visible?``, which the issue's own page asks; a refused list
        (Redmine requiring a sign-in) shows none."""
        asked = sorted(set(issues))
        readable: dict[str, set[int]] = {}
        for user in users:
            path = f"issues.json?issue_id={','.join(map(str, asked))}&status_id=*&limit=100"
            answer = self.as_user("GET", path, user) if asked else None
            if answer is None or answer.status_code in (401, 403):
                readable[user] = set()
                continue
            assert answer.status_code == 200, (answer.status_code, answer.text[:1000])
            found = answer.json()
            assert found["total_count"] <= 100 and found["total_count"] == len(found["issues"]), found["total_count"]
            readable[user] = {int(issue["id"]) for issue in found["issues"]}
            assert readable[user] <= set(asked), (user, sorted(readable[user] - set(asked)))
        return readable

    def as_user(self, method: str, path: str, user: str) -> requests.Response:
        """The REST API as ``user`` (the administrator's key switching to them), or without an
        account ("")."""
        if user:
            return self.api(method, path, user=user)
        return requests.request(method, self.url + path, timeout=60)
