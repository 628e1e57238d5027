"""The dokuwiki source's logic alone (no server): its options, page ids, a hostile server's XML-RPC
answers, titles and the text's hash. tests/e2e/test_dokuwiki_sources.py crawls a real DokuWiki."""

from __future__ import annotations

import xmlrpc.client
from typing import Any

import pytest
from pydantic import ValidationError

from searchcrawl.agents.base import AgentError
from searchcrawl.agents.dokuwiki import DokuwikiAgent, DokuwikiOptions, WikiFault, answer_of, page_html, text_hash

URL = "https://wiki.example.org/"


def agent(**changes: Any) -> DokuwikiAgent:
    return DokuwikiAgent("wiki", DokuwikiOptions.model_validate({"url": URL, **changes}))


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"url": "ftp://wiki.example.org/"}, "http"),
        ({"url": "https://u:p@wiki.example.org/"}, "without user"),
        ({"url": "http://wiki.example.org/", "username": "c", "password_secret": "P"}, "in clear"),
        ({"username": "c"}, "go together"),
        ({"acl_file": "acl.auth.php"}, "absolute"),
        ({"group_token": "group:x"}, "one {id}"),
        ({"namespace": "Projects"}, "namespace"),
        ({"namespace": "a/b"}, "namespace"),
        ({"superuser": ["@admin,cn=x"]}, "an @group"),
        ({"authenticated_token": "staff"}, "not an access token"),
        ({"group_filter": "(cn=*)"}, "is not a relation of a group"),
        ({"group_filter": "(member=%{dn})", "group_token": "group:{id}", "case_sensitive": False}, "set one"),
        ({"group_filter": "(member=%{dn})"}, "set case_sensitive = false"),
    ],
)
def test_options_refused_with_one_line_each(changes: dict[str, Any], error: str) -> None:
    with pytest.raises(ValidationError, match=error.replace("{", r"\{").replace("}", r"\}")):
        DokuwikiOptions.model_validate({"url": URL, **changes})


def test_urls_namespaces_and_superusers() -> None:
    options = DokuwikiOptions.model_validate(
        {"url": "http://127.0.0.1:8080/wiki", "namespace": ":projects:", "superuser": ["@admin, root"]}
    )
    assert (options.url, options.namespace, options.superuser) == ("http://127.0.0.1:8080/wiki/", "projects", ["@admin", "root"])
    assert not options.gives_access and DokuwikiOptions.model_validate({"url": URL, "acl_file": "/a/acl.auth.php"}).gives_access
    assert agent().display_url("ns:start") == URL + "doku.php?id=ns:start"


def test_a_wiki_on_ldap_names_its_groups_by_its_groupfilter() -> None:
    wiki = agent(group_filter="(&(objectClass=groupOfNames)(member=%{dn}))", case_sensitive=False)
    assert wiki.names.group_relations == (("member", "groupofnames"),) and wiki.names.group_token is None
    assert agent().names.group_relations == ()


@pytest.mark.parametrize(
    ("key", "refusal"),
    [
        ("projects:plan", None),
        ("projects:q1:numbers", None),
        ("start", "not in namespace projects"),
        ("projects:playground:test", "folder 'playground' excluded by 'playground'"),
        ("projects:Plan", "not a page id"),  # DokuWiki's ids are lower-case
        ("projects:../etc", "not a page id"),
        ("projects:a/b", "not a page id"),
        ("projects:a\nb", "not a page id"),
        ("projects::a", "not a page id"),
        ("", "not a page id"),
    ],
)
def test_page_ids_in_scope(key: str, refusal: str | None) -> None:
    assert agent(namespace="projects", exclude=["playground"]).refusal(key) == refusal


def test_a_hostile_answer_is_refused_and_a_fault_kept_apart() -> None:
    where = "the wiki answered the page list"
    assert answer_of(xmlrpc.client.dumps(([{"id": "a"}],), methodresponse=True).encode(), where) == [{"id": "a"}]
    laughs = b'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY a "aaaa">]><methodResponse><params><param><value>&a;</value></param></params></methodResponse>'
    with pytest.raises(AgentError, match="document type"):
        answer_of(laughs, where)
    with pytest.raises(AgentError, match="no XML-RPC answer"):
        answer_of(b"<html>an error page</html>", where)
    with pytest.raises(AgentError, match="no XML-RPC answer"):
        answer_of(b"<methodResponse><params></params></methodResponse>", where)
    fault = xmlrpc.client.dumps(xmlrpc.client.Fault(121, "The requested page does not exist"), methodresponse=True)
    with pytest.raises(WikiFault, match="fault 121") as raised:
        answer_of(fault.encode(), where)
    assert raised.value.code == 121
    odd = xmlrpc.client.dumps(xmlrpc.client.Fault("1e999", "odd"), methodresponse=True)  # type: ignore[arg-type]
    with pytest.raises(WikiFault, match="fault 0"):
        answer_of(odd.encode(), where)


def test_a_page_is_titled_by_its_first_heading_else_its_id() -> None:
    assert "<title>Plan &amp; budget</title>" in page_html("ns:plan", '<h1 id="p">Plan &amp; budget</h1><p>x</p>')
    assert "<title>Sub</title>" in page_html("ns:plan", "<p>x</p><h2>Sub</h2>")
    assert "<title>ns:plan</title>" in page_html("ns:plan", "<p>no heading</p>")
    assert "<title>ns:&lt;x&gt;</title>" in page_html("ns:<x>", "")


def test_the_texts_hash_is_dokuwikis() -> None:
    # md5(trim($text)) as PHP computes it: blanks, NUL and vertical tabs at both ends left out
    assert text_hash("\n hello \x0b\n") == "5d41402abc4b2a76b9719d911017c592"
