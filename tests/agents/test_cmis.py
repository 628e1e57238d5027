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
    # cmis:write reads only where the repository maps it so; the crawler is nobody's reader
    assert tokens == {"user:bob", "user:dave", "group:sales"}
    assert decide(access, Principals.of("x", [Principal("group:sales", "t")])).granted


def test_the_repositorys_anyone_and_anonymous_and_what_cannot_be_read() -> None:
    access, _ = ace_access([ace("GROUP_EVERYONE", "cmis:read")], options(anyone_token="group:staff"), REPOSITORY, READING, "o")
    assert access is not None and decide(access, Principals.of("x", [Principal("group:staff", "t")])).granted
    access, _ = ace_access([ace("GROUP_EVERYONE", "cmis:read"), ace("guest", "cmis:read")], options(), REPOSITORY, READING, "o")
    assert access is not None and not decide(access, Principals.of("x", [Principal("group:staff", "t")])).granted  # unset: no one
    access, _ = ace_access([ace("anyone", "cmis:read")], options(anyone_token="public"), {}, READING, "o")
    assert access is not None and not access.is_public  # a repository that names no anyone: a user called anyone
    for bad in (
        [ace("bob@partner.example", "cmis:read")],
        [ace("ROLE_OWNER", "cmis:all")],
        [{"principal": {}, "permissions": ["cmis:read"]}],
        [{"principal": "bob", "permissions": ["cmis:read"]}],
        ["junk"],
    ):
        access, why = ace_access(bad, options(), REPOSITORY, READING, "o")
        assert access is None and why is not None


def test_the_permissions_that_read_are_the_repositorys_own() -> None:
    agent = CmisAgent("dms", options())
    consumer = "{http://www.alfresco.org/model/content/1.0}cmobject.Consumer"
    agent._repository = {  # noqa: SLF001
        "aclCapabilities": {
            "permissionMapping": [
                {"key": "canGetProperties.Object", "permission": ["cmis:read", "base.ReadProperties"]},
                {"key": "canGetContentStream.Document", "permission": ["cmis:read", consumer]},
            ]
        }
    }
    assert agent.reading_permissions() == {"cmis:read", consumer, "cmis:all"}  # reading properties is not reading content
    agent._repository = {"aclCapabilities": {"permissionMapping": []}}  # noqa: SLF001
    assert agent.reading_permissions() == READING


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
    """Folders naming each other, a document filed twice, names that are paths, working copies
    and older versions, an ACL not called exact, and paging that never ends."""

    def item(object_id: str, name: str, kind: str, exact: bool = True, **more: Any) -> dict[str, Any]:
        properties = {"cmis:objectId": object_id, "cmis:name": name, "cmis:baseTypeId": kind, **more}
        return {"object": {"succinctProperties": properties, "exactACL": exact}}

    pages = {
        "top": [
            item("f1", "a", "cmis:folder"),
            item("d1", "x.txt", "cmis:document"),
            item("d9", "../etc/passwd", "cmis:document"),
        ],
        "f1": [
            item("top", "again", "cmis:folder"),
            item("d1", "x.txt", "cmis:document"),
            item("d2", "y.txt", "cmis:document", exact=False),
            item("d3", "draft.txt", "cmis:document", **{"cmis:isPrivateWorkingCopy": True}),
            item("d4", "old.txt", "cmis:document", **{"cmis:isLatestVersion": False}),
        ],
    }
    agent = CmisAgent("dms", options())
    agent._repository = {"rootFolderUrl": URL + "/A1/root", "repositoryUrl": URL + "/A1"}  # noqa: SLF001

    def answer(url: str, params: dict[str, str], what: str) -> Any:
        if params.get("cmisselector") == "object":
            return {"succinctProperties": {"cmis:objectId": "top"}}
        if params.get("cmisselector") == "acl":
            return {"aces": [ace("bob", "cmis:read")]}
        return {"objects": pages[params["objectId"]]}

    monkeypatch.setattr(agent, "_json", answer)
    references = list(agent.references(None))
    assert [reference.key for reference in references] == ["d1", "d2"]
    assert references[0].access is not None and references[1].access is None and "exact" in str(references[1].access_unreadable)
    monkeypatch.setattr(
        agent,
        "_json",
        lambda url, params, what: (
            answer(url, params, what)
            if params.get("cmisselector") != "children"
            else {"objects": pages["top"], "hasMoreItems": True}
        ),
    )
    with pytest.raises(AgentError, match="without end"):
        list(agent.references(None))
