"""The ``redmine`` source type: the issues of a Redmine (5.x), with their comments, and their
attachments, read through its REST API, with Redmine's own issue visibility as who may read each.

```toml
type = "redmine"

[redmine]
url = "https://redmine.example.org/"                 # the Redmine's base URL
username = "crawler"                                 # an administrator (users and roles are asked)
password_secret = "REDMINE_CRAWLER_PASSWORD"         # HTTP basic auth; over http:// only to loopback
projects = ["harbour", "finance"]                    # their identifiers (default: every project)
authenticated_token = "group:cn=staff,ou=groups,dc=example,dc=org"  # what public projects show non-members
anonymous_token = "public"                           # what they show anonymous users (unset: no one)
include = ["*.pdf", "*.docx"]                        # attachments, on <project>/<file name>; exclude too
```

The crawl's account must be an administrator: Redmine shows users, groups and role rights to
administrators only, and the issues of every project to them. It signs in to Redmine's
pages as well, to read each role's tracker rights from the role's form (the REST API does not
show them). The REST API must be on (Administration › Settings › API).

**Issues**: ``redmine://<source>/issues/<id>``, displayed at ``<url>issues/<id>``: the subject
(the title, ``#<id> <subject>``), the description and every comment that is not a private note
(private notes are for roles with their own right: they are left out), with ``project_s``,
``tracker_s``, ``status_s``, ``author`` and ``last_modified``. **Attachments**:
``redmine://<source>/attachments/<id>``, each a document of its own (the issue's access), read
from ``attachments/download/<id>``. Active and closed projects are crawled; archived ones and
projects without issue tracking are not.

**Changes**: an issue's token is its ``updated_on`` (a comment, an attachment or any change moves
it), an attachment's its id and size (attachments do not change): only what changed is read.
Every crawl lists the projects' issues whole (100 a page, each page the ids above the last one
seen, so that a deletion meanwhile shifts nothing): a deleted issue, or one moved to a project not
crawled, leaves the index, and a change of memberships or roles, which moves no issue's
``updated_on``, updates the access of the issues it concerns without reading them.

**Who may read** (searchcrawl/access/redmine_roles.py): Redmine's rule, from its users, groups,
roles (their ``view_issues`` right, issues visibility and trackers; the built-in ones found on
the roles' page), each project's memberships (its own roles for "Non member users" and
"Anonymous users" too), and whether Redmine lets anonymous users in, asked at every listing. A
Redmine that does not answer or refuses the account fails the crawl: nothing is removed.
"""

from __future__ import annotations

import json
import logging
import mimetypes
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from html import escape
from typing import Any, ClassVar
from urllib.parse import urlsplit

from lxml import html as lxml_html
from pydantic import Field, field_validator, model_validator

from searchcrawl.access.redmine_roles import RedmineIssue, RedmineProject, RedmineRole, RedmineTokens, RedmineUsers, issue_access
from searchcrawl.access.tokens import Access, AccessError, Grant
from searchcrawl.agents.base import Agent, AgentError, Content, DocumentTooLarge, Reference
from searchcrawl.agents.files import out_of_scope
from searchcrawl.agents.http_repository import HttpClient, HttpRepositoryOptions, checked_token, folder_url

logger = logging.getLogger(__name__)

TABLE = "redmine"
PAGE = 100  # Redmine's largest page
MAX_ANSWER_BYTES = 64 * 1024 * 1024
MAX_PAGES = 100_000  # of one listing: a Redmine whose pages never end fails it
ACTIVE, CLOSED = 1, 5  # projects' statuses: archived (9) and scheduled for deletion (10) are not crawled
EVERY_STATUS = {"f[]": "status", "op[status]": "*"}  # projects.json lists only active ones unless asked
_KEY = re.compile(r"(issues|attachments)/([1-9][0-9]{0,11})")
_IDENTIFIER = re.compile(r"[a-z][a-z0-9_-]{0,99}")


class RedmineOptions(HttpRepositoryOptions):
    """The ``[redmine]`` table of a source of type ``redmine``."""

    url: str
    projects: list[str] = Field(default_factory=list)
    authenticated_token: str | None = None
    anonymous_token: str | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return folder_url(value, "the Redmine")

    @field_validator("projects")
    @classmethod
    def _projects(cls, values: list[str]) -> list[str]:
        for value in values:
            if not _IDENTIFIER.fullmatch(value):
                raise ValueError(f"expected a project identifier such as 'harbour', got {value!r}")
        return list(dict.fromkeys(values))

    @field_validator("authenticated_token", "anonymous_token")
    @classmethod
    def _token(cls, value: str | None) -> str | None:
        return checked_token(value)

    @model_validator(mode="after")
    def _administrator(self) -> RedmineOptions:
        if not self.username:
            raise ValueError("'username' and 'password_secret' are needed: an administrator's")
        return self

    def server_urls(self) -> list[str]:
        return [self.url]


@dataclass(frozen=True)
class RedmineState:
    """What decides who sees what, read at each listing."""

    users: RedmineUsers
    roles: dict[int, RedmineRole]
    projects: dict[int, RedmineProject]
    anonymous_open: bool


class RedmineAgent(Agent):
    """Lists a Redmine's issues and attachments, with Redmine's visibility as their readers."""

    scheme: ClassVar[str] = "redmine"
    Options = RedmineOptions
    gives_access: ClassVar[bool] = True

    def __init__(self, source: str, options: Any) -> None:
        super().__init__(source, options)
        self.redmine = RedmineOptions.model_validate(options)
        parts = urlsplit(self.redmine.url)
        self.http = HttpClient(self.redmine, TABLE, f"the Redmine {parts.scheme}://{parts.netloc}")
        self.names = RedmineTokens(self.redmine.user_token, self.redmine.authenticated_token, self.redmine.anonymous_token)
        self._state: RedmineState | None = None
        self._projects: dict[int, dict[str, Any]] = {}

    # -- the Agent interface ----------------------------------------------------------------

    def references(self, since: datetime | None) -> Iterator[Reference]:
        """Every issue of the projects crawled, and its attachments (``since`` is ignored)."""
        state = self._state = self.read_state()
        self.names = replace(self.names, anonymous_open=state.anonymous_open)
        listed = 0
        for project in state.projects.values():
            for item in self._issues(project):
                issue = issue_facts(item, project.id)
                if issue is None:
                    continue
                access, unreadable = issue_access(issue, project, state.roles, state.users, self.names)
                listed += 1
                yield self._issue_reference(item, project, access, unreadable)
                for attachment in item.get("attachments") or ():
                    reference = self._attachment_reference(attachment, item, project, access, unreadable)
                    if reference is not None:
                        yield reference
        logger.info("redmine: %d issues listed in %d projects", listed, len(state.projects))

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        """An issue with its comments (as HTML), or an attachment's bytes; None when it is gone."""
        match = _KEY.fullmatch(key)
        if match is None:
            return None
        kind, number = match.groups()
        if kind == "attachments":
            return self._attachment(number, max_bytes)
        body = self._get_json(f"issues/{number}.json", {"include": "journals"}, f"issue #{number}", missing_ok=True)
        item = body.get("issue") if isinstance(body, dict) else None
        if not isinstance(item, dict):
            return None
        if self._state is None:
            self._state = self.read_state()
            self.names = replace(self.names, anonymous_open=self._state.anonymous_open)
        state = self._state
        project_data = item.get("project")
        project_id = project_data.get("id") if isinstance(project_data, dict) else None
        project = state.projects.get(project_id) if isinstance(project_id, int) else None
        issue = issue_facts(item, project_id if isinstance(project_id, int) else 0)
        if project is None or issue is None:
            return None  # moved to a project not crawled
        page = issue_html(item).encode("utf-8")
        if max_bytes and len(page) > max_bytes:
            raise DocumentTooLarge(key)
        access, unreadable = issue_access(issue, project, state.roles, state.users, self.names)
        token = str(item.get("updated_on"))
        return Content(
            page, "text/html; charset=utf-8", f"issue-{number}.html", access=access, access_unreadable=unreadable, token=token
        )

    def refusal(self, key: str) -> str | None:
        return None if _KEY.fullmatch(key) else "not an issue or an attachment"

    def display_url(self, key: str) -> str:
        return self.redmine.url + key

    # -- what decides who sees what ---------------------------------------------------------

    def read_state(self) -> RedmineState:
        """Users, groups, roles and projects with their memberships, as Redmine says now."""
        current = self._get_json("users/current.json", {}, "the crawl's account").get("user")
        if not isinstance(current, dict) or current.get("admin") is not True:
            raise AgentError(f"{self.http.where}: the crawl's account {self.redmine.username!r} is no administrator")
        self._sign_in()
        users: dict[int, dict[str, Any]] = {}
        for status in ("1", "2", "3"):  # active, registered (not yet activated), locked
            users.update(
                (u["id"], {**u, "status": status}) for u in self._pages("users.json", "users", {"status": status}) if _has_id(u)
            )
        logins = {uid: str(u["login"]) for uid, u in users.items() if own_token(self.redmine.user_token, u.get("login"))}
        active = frozenset(uid for uid, u in users.items() if u["status"] == "1")
        admins = frozenset(uid for uid in active if users[uid].get("admin") is True)
        groups, builtin = self._groups()
        directory = RedmineUsers(logins, active, admins, frozenset(users), groups)
        non_member, anonymous = self._builtin_roles()
        roles = self._roles(non_member, anonymous)
        projects = {}
        for item in self._pages("projects.json", "projects", {"include": "enabled_modules", **EVERY_STATUS}):
            project = self._project(item, builtin, non_member, anonymous)
            if project is not None:
                projects[project.id] = project
        missing = set(self.redmine.projects) - {p.identifier for p in projects.values()}
        if missing:
            raise AgentError(f"{self.http.where} has no project {sorted(missing)[0]!r} with issue tracking for the crawl")
        return RedmineState(directory, roles, projects, self._anonymous_open())

    def _groups(self) -> tuple[dict[int, frozenset[int]], dict[int, str]]:
        """Redmine's groups with their members, and its built-in groups (non-members, anonymous) by kind."""
        groups: dict[int, frozenset[int]] = {}
        builtin: dict[int, str] = {}
        for group in self._pages("groups.json", "groups", {"builtin": "1"}):
            if not _has_id(group):
                continue
            if group.get("builtin"):
                builtin[group["id"]] = str(group["builtin"])
                continue
            detail = self._get_json(f"groups/{group['id']}.json", {"include": "users"}, f"group {group['id']}").get("group")
            members = detail.get("users") if isinstance(detail, dict) else None
            groups[group["id"]] = frozenset(u["id"] for u in members or () if _has_id(u))
        return groups, builtin

    def _anonymous_open(self) -> bool:
        """Whether Redmine lets anonymous users in (its login_required off): asked without the
        account, at each listing (the setting may change)."""
        response = self.http.request("GET", self.redmine.url + "projects.json", params={"limit": "1"}, auth=_NO_AUTH)
        with response:
            if response.status_code in (401, 403):
                return False
            if response.status_code != 200:
                raise AgentError(f"{self.http.where} answered HTTP {response.status_code} to an anonymous user")
        return True

    def _project(self, item: dict[str, Any], builtin: dict[int, str], non_member: int, anonymous: int) -> RedmineProject | None:
        identifier = item.get("identifier")
        modules = {m.get("name") for m in item.get("enabled_modules") or () if isinstance(m, dict)}
        if not _has_id(item) or not isinstance(identifier, str) or item.get("status") not in (ACTIVE, CLOSED):
            return None
        if "issue_tracking" not in modules or self.redmine.projects and identifier not in self.redmine.projects:
            logger.debug("redmine: project %s not crawled (not named, or no issue tracking)", identifier[:100])
            return None
        members, overrides = self._memberships(item["id"], identifier, builtin)
        return RedmineProject(
            item["id"],
            identifier,
            item.get("is_public") is True,
            members,
            overrides.get("non_member", (non_member,)),
            overrides.get("anonymous", (anonymous,)),
        )

    def _memberships(
        self, project_id: int, identifier: str, builtin: dict[int, str]
    ) -> tuple[dict[int, tuple[int, ...]], dict[str, tuple[int, ...]]]:
        """A project's members with their roles, and the roles it gives the built-in groups
        (non-members, anonymous) instead of Redmine's defaults."""
        members: dict[int, tuple[int, ...]] = {}
        overrides: dict[str, tuple[int, ...]] = {}
        what = f"the members of {identifier}"
        for membership in self._pages(f"projects/{project_id}/memberships.json", "memberships", {}, what):
            role_ids = tuple(r["id"] for r in membership.get("roles") or () if _has_id(r))
            # a membership names its principal under the principal's kind: user, group,
            # group_non_member, group_anonymous (the built-in groups a project gives roles to)
            principals = [(kind, value) for kind, value in membership.items() if kind not in ("id", "project", "roles")]
            if len(principals) != 1 or not _has_id(principals[0][1]):
                raise AgentError(f"{self.http.where}: a membership of {identifier} names no principal the crawl knows")
            kind, principal = principals[0]
            if kind == "user":
                members[principal["id"]] = tuple(dict.fromkeys((*members.get(principal["id"], ()), *role_ids)))
            elif principal["id"] in builtin:
                overrides[builtin[principal["id"]]] = role_ids
            elif kind != "group":
                raise AgentError(
                    f"{self.http.where}: a membership of {identifier} names a {kind[:40]!r}, which the crawl does not know"
                )
        return members, overrides

    def _builtin_roles(self) -> tuple[int, int]:
        """The ids of the Non member and Anonymous roles: the two built-in roles of the roles'
        page, in Redmine's order (the REST API does not say which roles are built in)."""
        body = self.http.answer("GET", f"{self.redmine.url}roles", "the roles' page", MAX_ANSWER_BYTES) or b"<html/>"
        links = lxml_html.document_fromstring(body).xpath('//tr[contains(concat(" ", @class, " "), " builtin ")]//a/@href')
        ids = list(dict.fromkeys(int(m.group(1)) for link in links if (m := re.search(r"/roles/([0-9]+)/edit$", str(link)))))
        if len(ids) != 2:
            raise AgentError(f"{self.http.where}: the roles' page names {len(ids)} built-in roles, not the 2 Redmine has")
        return ids[0], ids[1]

    def _roles(self, non_member: int, anonymous: int) -> dict[int, RedmineRole]:
        """Every role, the built-in ones too, with its trackers read from its form."""
        listed = self._get_json("roles.json", {}, "the roles").get("roles")
        ids = [r["id"] for r in listed if _has_id(r)] if isinstance(listed, list) else []
        roles = {}
        for role_id in dict.fromkeys([non_member, anonymous, *ids]):
            item = self._get_json(f"roles/{role_id}.json", {}, f"role {role_id}").get("role")
            item = item if isinstance(item, dict) else {}
            permissions = item.get("permissions")
            views = isinstance(permissions, list) and "view_issues" in permissions
            visibility = str(item.get("issues_visibility") or "")
            trackers = self._role_trackers(role_id) if views else None
            roles[role_id] = RedmineRole(
                role_id, str(item.get("name") or role_id)[:100], views, visibility, role_id in (non_member, anonymous), trackers
            )
        return roles

    def _role_trackers(self, role_id: int) -> frozenset[int] | None:
        """The trackers a role's ``view_issues`` covers (None: all), from the role's form."""
        what = f"the form of role {role_id}"
        body = self.http.answer("GET", f"{self.redmine.url}roles/{role_id}/edit", what, MAX_ANSWER_BYTES)
        if body is None:
            raise AgentError(f"{what} is larger than {MAX_ANSWER_BYTES} bytes")
        page = lxml_html.document_fromstring(body or b"<html/>")
        every = page.xpath('//input[@type="checkbox"][@name="role[permissions_all_trackers][view_issues]"]')
        if len(every) != 1:
            raise AgentError(f"{self.http.where}: {what} has no tracker rights for viewing issues")
        if every[0].get("checked") is not None:
            return None
        chosen = page.xpath('//input[@type="checkbox"][@name="role[permissions_tracker_ids][view_issues][]"][@checked]')
        return frozenset(int(box.get("value")) for box in chosen if str(box.get("value") or "").isdigit())

    def _sign_in(self) -> None:
        """A session on Redmine's pages for this thread's client: the roles' forms are no REST
        resource. A new one at each listing (Redmine sends a signed-in session from its sign-in
        page elsewhere); AgentError when Redmine does not take the account there."""
        self.http.session().cookies.clear()
        body = self.http.answer("GET", f"{self.redmine.url}login", "the sign-in page", MAX_ANSWER_BYTES) or b"<html/>"
        tokens = lxml_html.document_fromstring(body).xpath('//input[@name="authenticity_token"]/@value')
        auth = self.http.session().auth
        password = auth[1] if isinstance(auth, tuple) else ""
        data = {"username": self.redmine.username, "password": password, "authenticity_token": tokens[0] if tokens else ""}
        answer = self.http.request("POST", f"{self.redmine.url}login", data=data)
        with answer:
            if answer.status_code != 302:
                raise AgentError(f"{self.http.where} refused the crawl's account on its sign-in page")

    # -- listing ----------------------------------------------------------------------------

    def _issues(self, project: RedmineProject) -> Iterator[dict[str, Any]]:
        """A project's issues (not its subprojects'), 100 at a time by id: each page asks the
        ids above the last one seen (an issue deleted or created meanwhile shifts nothing)."""
        last = 0
        for _ in range(MAX_PAGES):
            params = {
                "project_id": str(project.id), "include": "attachments", "sort": "id", "limit": str(PAGE),
                "f[]": ["status_id", "subproject_id", "issue_id"], "op[status_id]": "*", "op[subproject_id]": "!*",
                "op[issue_id]": ">=", "v[issue_id][]": str(last + 1),
            }  # fmt: skip
            items = self._get_json("issues.json", params, f"the issues of {project.identifier}").get("issues")
            if not isinstance(items, list):
                raise AgentError(f"{self.http.where} answered the issues of {project.identifier} with no list")
            ids = [item["id"] for item in items if _has_id(item)]
            if any(number <= last for number in ids) or ids != sorted(ids):
                raise AgentError(f"{self.http.where} answered the issues of {project.identifier} out of order")
            yield from (item for item in items if _has_id(item))
            if len(items) < PAGE or not ids:
                return
            last = ids[-1]
        raise AgentError(f"the issues of {project.identifier}: more than {MAX_PAGES} pages")

    def _pages(self, path: str, name: str, params: dict[str, Any], what: str = "") -> Iterator[dict[str, Any]]:
        """Every item of a paged list; AgentError when its total changes between pages."""
        offset, total = 0, None
        for _ in range(MAX_PAGES):
            body = self._get_json(path, {**params, "limit": str(PAGE), "offset": str(offset)}, what or name)
            items = body.get(name)
            count = body.get("total_count", 0)
            if not isinstance(items, list) or not isinstance(count, int):
                raise AgentError(f"{self.http.where} answered {what or name} with no list")
            if total is not None and count != total:
                raise AgentError(f"{what or name} changed while listed: read again next time")
            total = count
            yield from (item for item in items if isinstance(item, dict))
            offset += len(items)
            if not items or offset >= total:
                return
        raise AgentError(f"{what or name}: more than {MAX_PAGES} pages")

    def _issue_reference(
        self, item: dict[str, Any], project: RedmineProject, access: Access | None, unreadable: str | None
    ) -> Reference:
        key = f"issues/{item['id']}"
        modified = _date(item.get("updated_on"))
        fields = {
            "display_url": self.display_url(key),
            "project_s": project.identifier,
            "tracker_s": _name(item.get("tracker")),
            "status_s": _name(item.get("status")),
            "issue_id_l": item["id"],
            "private_b": item.get("is_private") is True,
            "author": _name(item.get("author")),
        }
        if modified is not None:
            fields["last_modified"] = modified.strftime("%Y-%m-%dT%H:%M:%SZ")
        token = str(item.get("updated_on"))
        return Reference(key=key, token=token, modified=modified, fields=fields, access=access, access_unreadable=unreadable)

    def _attachment_reference(
        self, attachment: Any, item: dict[str, Any], project: RedmineProject, access: Access | None, unreadable: str | None
    ) -> Reference | None:
        if not isinstance(attachment, dict) or not _has_id(attachment):
            return None
        name = str(attachment.get("filename") or attachment["id"])
        if "/" in name or re.search(r"[\x00-\x1f\x7f]", name):
            return None
        reason = out_of_scope(f"{project.identifier}/{name}", False, self.redmine)
        if reason is not None:
            logger.debug("redmine: attachment %s of issue #%s not listed: %s", attachment["id"], item["id"], reason)
            return None
        key = f"attachments/{attachment['id']}"
        size = attachment.get("filesize") if isinstance(attachment.get("filesize"), int) else 0
        fields = {
            "display_url": self.display_url(key),
            "project_s": project.identifier,
            "file_name_s": name[:500],
            "size_l": size,
        }
        return Reference(
            key=key,
            token=f"{attachment['id']}|{size}",
            modified=_date(attachment.get("created_on")),
            fields=fields,
            metadata={"file_name": name[:500]},
            parent=f"issues/{item['id']}",
            access=access,
            access_unreadable=unreadable,
        )

    # -- HTTP -------------------------------------------------------------------------------

    def _attachment(self, number: str, max_bytes: int) -> Content | None:
        body = self._get_json(f"attachments/{number}.json", {}, f"attachment {number}", missing_ok=True)
        item = body.get("attachment") if isinstance(body, dict) else None
        if not isinstance(item, dict):
            return None
        name = str(item.get("filename") or number).replace("/", "_")
        limit = max_bytes or MAX_ANSWER_BYTES
        response = self.http.request("GET", f"{self.redmine.url}attachments/download/{number}")
        with response:
            if response.status_code == 404:
                return None
            if response.status_code != 200:
                raise AgentError(f"{self.http.where} answered HTTP {response.status_code} for attachment {number}")
            data = self.http.read(response, limit, f"attachment {number}")
        if data is None:
            raise DocumentTooLarge(f"attachments/{number}")
        kind = mimetypes.guess_type(name, strict=False)[0] or "application/octet-stream"  # as files and shares
        return Content(data, kind, name)

    def _get_json(self, path: str, params: dict[str, Any], what: str, missing_ok: bool = False) -> dict[str, Any]:
        """A JSON object Redmine answers; {} for one it says is not there (``missing_ok``)."""
        absent = (403, 404) if missing_ok else ()
        body = self.http.answer("GET", self.redmine.url + path, what, MAX_ANSWER_BYTES, absent=absent, params=params)
        if body is None:
            raise AgentError(f"{self.http.where} answered more than {MAX_ANSWER_BYTES} bytes for {what}")
        if not body and missing_ok:
            return {}
        try:
            answer = json.loads(body)
        except (ValueError, RecursionError):
            raise AgentError(f"{self.http.where} answered {what} with no JSON") from None
        if not isinstance(answer, dict):
            raise AgentError(f"{self.http.where} answered {what} with no object")
        return answer


def own_token(template: str, login: Any) -> bool:
    """Whether a login is a token of its own in ``template``: letters, digits, ``.``, ``_``, ``-``
    (``bob@partner`` would be ``bob``'s token, ``a,ou=x`` another DN)."""
    if not isinstance(login, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", login):
        return False
    try:
        Grant.of(template.replace("{id}", login), "check")
    except AccessError:
        return False
    return True


def _no_auth(request: Any) -> Any:
    """No authorization on a request (not the session's account): an anonymous user's."""
    return request


_NO_AUTH = _no_auth


def issue_facts(item: dict[str, Any], project: int) -> RedmineIssue | None:
    """What decides who sees an issue, from its JSON; None for an issue without an id."""
    if not _has_id(item):
        return None

    def principal(name: str) -> int | None:
        value = item.get(name)
        return value["id"] if isinstance(value, dict) and _has_id(value) else None

    tracker = principal("tracker")
    return RedmineIssue(
        item["id"], project, tracker or 0, item.get("is_private") is not False, principal("author"), principal("assigned_to")
    )


def issue_html(item: dict[str, Any]) -> str:
    """An issue as a page: its subject, description and every comment that is no private note."""
    subject = str(item.get("subject") or "")
    title = f"#{item.get('id')} {subject}"
    parts = [f"<h1>{escape(title)}</h1>", f"<div>{_text(item.get('description'))}</div>"]
    for journal in item.get("journals") or ():
        if not isinstance(journal, dict) or journal.get("private_notes") is not False or not journal.get("notes"):
            continue
        parts.append(f"<h2>{escape(_name(journal.get('user')))}</h2><div>{_text(journal.get('notes'))}</div>")
    author = escape(_name(item.get("author")))
    head = f'<meta charset="utf-8"><title>{escape(title)}</title><meta name="author" content="{author}">'
    return f"<!DOCTYPE html><html><head>{head}</head><body>{''.join(parts)}</body></html>"


def _text(value: Any) -> str:
    """Redmine's text (Textile or Markdown, as written) as paragraphs of escaped text."""
    return "".join(f"<p>{escape(paragraph)}</p>" for paragraph in re.split(r"\n\s*\n", str(value or "")) if paragraph.strip())


def _name(value: Any) -> str:
    return str(value.get("name") or "")[:200] if isinstance(value, dict) else ""


def _has_id(value: Any) -> bool:
    return (
        isinstance(value, dict) and isinstance(value.get("id"), int) and not isinstance(value.get("id"), bool) and value["id"] > 0
    )


def _date(value: Any) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
