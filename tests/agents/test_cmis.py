"""The cmis source's logic alone (no repository): ACLs as access tokens, options, and the
listing of a hostile repository. tests/e2e/test_cmis_sources.py crawls a real one."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from searchcrawl.access.decision import Principal, Principals, decide
from searchcrawl.agents.base import AgentError
from searchcrawl.agents.cmis import READING, CmisAgent, CmisOptions, ace_access

URL = "https://dms.example.org/cmis/browser"
REPOSITORY = {"principalIdAnyone": "GROUP_EVERYONE", "principalIdAnonymous": "guest"}


def options(**changes: Any) -> CmisOptions:
    return CmisOptions.model_validate({"url": URL, "username": "crawler", "password_secret": "CMIS_PASSWORD", **changes})


def ace(principal: str, *permissions: str) -> dict[str, Any]:
    return {"principal": {"principalId": principal}, "permissions": list(permissions), "isDirect": True}


def test_each_principal_whose_permissions_read_is_a_reader() -> None:
    reading = READING | {"{http://www.alfresco.org/model/content/1.0}cmobject.Consumer"}
    aces = [
        ace("bob", "cmis:read"),
        ace("carol", "cmis:write"),
        ace("dave", "{http://www.alfresco.org/model/content/1.0}cmobject.Consumer"),
        ace("erin", "{custom}cmobject.Nothing"),  # a permission that does not read
        ace("GROUP_sales", "cmis:all"),
        ace("crawler", "cmis:read"),
    ]
    access, why = ace_access(aces, options(group_prefix="GROUP_"), REPOSITORY, reading, "object 7")
    assert why is None and access is not None
    tokens = {grant.token for level in access.levels for grant in level.allow}
    assert tokens == {"user:bob", "user:carol", "user:dave", "group:sales"}  # the crawler is nobody's reader
    assert decide(access, Principals.of("x", [Principal("group:sales", "t")])).granted


def test_the_repositorys_anyone_and_anonymous_and_what_cannot_be_read() -> None:
    access, _ = ace_access([ace("GROUP_EVERYONE", "cmis:read")], options(), REPOSITORY, READING, "o")
    assert access is not None and access.is_public
    access, _ = ace_access([ace("guest", "cmis:read")], options(anyone_token=None), REPOSITORY, READING, "o")
    assert access is not None and not decide(access, Principals.anonymous()).granted  # anyone_token unset: no one
    for bad in ([ace("bob@partner.example", "cmis:read")], [{"principal": {}, "permissions": ["cmis:read"]}], ["junk"]):
        access, why = ace_access(bad, options(), REPOSITORY, READING, "o")
        assert access is None and why is not None


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"url": "ftp://dms.example.org/"}, "http"),
        ({"url": "http://dms.example.org/cmis"}, "in clear"),
        ({"folder": "Sites"}, "repository path"),
        ({"folder": "/Sites/../etc"}, "repository path"),
        ({"password_secret": "a password"}, "NAME of an environment variable"),
    ],
)
def test_options_refused_with_one_line_each(changes: dict[str, Any], error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        options(**changes)


def test_a_hostile_listing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Folders naming each other, a document filed twice, names that are paths, and paging that never ends."""

    def item(object_id: str, name: str, kind: str) -> dict[str, Any]:
        return {"object": {"succinctProperties": {"cmis:objectId": object_id, "cmis:name": name, "cmis:baseTypeId": kind}}}

    pages = {
        "/": [item("f1", "a", "cmis:folder"), item("d1", "x.txt", "cmis:document"), item("d9", "../etc/passwd", "cmis:document")],
        "/a": [item("f1", "a", "cmis:folder"), item("d1", "x.txt", "cmis:document"), item("d2", "y.txt", "cmis:document")],
    }
    agent = CmisAgent("dms", options())
    agent._repository = {"rootFolderUrl": URL + "/A1/root", "repositoryUrl": URL + "/A1"}  # noqa: SLF001
    monkeypatch.setattr(agent, "_access", lambda object_id: (None, "not asked here"))
    monkeypatch.setattr(agent, "_json", lambda url, params, what: {"objects": pages[url.split("/root", 1)[1] or "/"]})
    assert [reference.key for reference in agent.references(None)] == ["d1", "d2"]
    monkeypatch.setattr(agent, "_json", lambda url, params, what: {"objects": pages["/"], "hasMoreItems": True})
    with pytest.raises(AgentError, match="without end"):
        list(agent.references(None))
