"""The README's example agent works through base.py's interface, as the crawl uses it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from searchcrawl.access.decision import Principal, Principals, decide
from searchcrawl.agents.base import Agent, AgentError, DocumentTooLarge
from tests.agents.example_agent import ArticlesAgent


def write(path: Path, *articles: Mapping[str, object]) -> None:
    path.write_text("".join(json.dumps(a) + "\n" for a in articles) + "\n", encoding="utf-8")


def build(path: Path) -> Agent:
    """As the crawl builds it: the options table validated by the class's Options model."""
    return ArticlesAgent("articles", ArticlesAgent.Options.model_validate({"path": str(path)}))


def test_options_are_validated() -> None:
    with pytest.raises(ValidationError, match="extra"):
        ArticlesAgent.Options.model_validate({"path": "/a", "url": "x"})


def test_listing_fetch_and_changes(tmp_path: Path) -> None:
    path = tmp_path / "articles.jsonl"
    first = {
        "id": "a1",
        "title": "Crawlers",
        "body": "Agents list references.",
        "updated": "2026-11-03T10:20:30+01:00",
        "readers": ["group:Editors", "user:EXAMPLE\\Alice"],
    }
    second = {"id": "a/2", "title": "Tokens", "body": "Unchanged is not fetched."}  # no readers
    write(path, first, second)
    agent = build(path)
    assert not agent.incremental
    refs = list(agent.references(None))
    assert [r.key for r in refs] == ["a1", "a/2"]
    assert refs[0].fields["title"] == "Crawlers"
    assert refs[0].modified == datetime(2026, 11, 3, 9, 20, 30, tzinfo=UTC)
    assert refs[0].content is not None and refs[0].content.body == b"Agents list references."
    # who may read it: its readers, normalised, each with its origin; the second names none
    access = refs[0].access
    assert ArticlesAgent.gives_access is True and access is not None
    assert access.fields()["access_allow"] == ["group:editors", "user:alice"]
    assert [grant.origin for grant in access.levels[0].allow] == ["readers of article a1"] * 2
    assert decide(access, Principals.of("alice", [Principal("user:alice", "directory")])).granted
    assert not decide(access, Principals.anonymous()).granted
    assert refs[1].access is None  # the source's [access] table says
    url = agent.url_for("a/2")
    assert url == "articles://articles/a%2F2" and agent.key_of(url) == "a/2"
    assert agent.key_of("mail://articles/a1") is None
    assert agent.fetch("a/2", 0) == refs[1].content
    with pytest.raises(DocumentTooLarge):
        agent.fetch("a1", 5)

    write(path, {**first, "body": "Edited."})  # a1 edited, a/2 deleted
    again = {r.key: r.token for r in agent.references(None)}
    assert set(again) == {"a1"} and again["a1"] != refs[0].token
    write(path, {**first, "readers": ["public"]})  # a change of readers alone is a change
    [public] = agent.references(None)
    assert public.token != refs[0].token and public.access is not None and public.access.is_public
    assert agent.fetch("a/2", 0) is None


def test_a_bad_file_fails_the_listing(tmp_path: Path) -> None:
    with pytest.raises(AgentError, match="cannot be read"):
        list(build(tmp_path / "none.jsonl").references(None))
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a1"}\n{"title": "no id"}\n')
    with pytest.raises(AgentError, match=r"bad.jsonl:2 is not an article"):
        list(build(path).references(None))
    for readers in (["alice"], ["-user:bob"], "user:alice", [7]):  # not tokens, not a list of them
        write(path, {"id": "a1"}, {"id": "a2", "readers": readers})
        with pytest.raises(AgentError, match=r"bad.jsonl:2 is not an article with an id \(and readers\)"):
            list(build(path).references(None))
