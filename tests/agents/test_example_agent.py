"""The README's example agent works through base.py's interface, as the crawl uses it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from searchcrawl.agents.base import Agent, AgentError, DocumentTooLarge
from tests.agents.example_agent import ArticlesAgent


def write(path: Path, *articles: dict[str, str]) -> None:
    path.write_text("".join(json.dumps(a) + "\n" for a in articles) + "\n", encoding="utf-8")


def build(path: Path) -> Agent:
    """As the crawl builds it: the options table validated by the class's Options model."""
    return ArticlesAgent("articles", ArticlesAgent.Options.model_validate({"path": str(path)}))


def test_options_are_validated() -> None:
    with pytest.raises(ValidationError, match="extra"):
        ArticlesAgent.Options.model_validate({"path": "/a", "url": "x"})


def test_listing_fetch_and_changes(tmp_path: Path) -> None:
    path = tmp_path / "articles.jsonl"
    first = {"id": "a1", "title": "Crawlers", "body": "Agents list references.", "updated": "2026-11-03T10:20:30+01:00"}
    second = {"id": "a/2", "title": "Tokens", "body": "Unchanged is not fetched."}
    write(path, first, second)
    agent = build(path)
    assert not agent.incremental
    refs = list(agent.references(None))
    assert [r.key for r in refs] == ["a1", "a/2"]
    assert refs[0].fields["title"] == "Crawlers"
    assert refs[0].modified == datetime(2026, 11, 3, 9, 20, 30, tzinfo=UTC)
    assert refs[0].content is not None and refs[0].content.body == b"Agents list references."
    url = agent.url_for("a/2")
    assert url == "articles://articles/a%2F2" and agent.key_of(url) == "a/2"
    assert agent.key_of("mail://articles/a1") is None
    assert agent.fetch("a/2", 0) == refs[1].content
    with pytest.raises(DocumentTooLarge):
        agent.fetch("a1", 5)

    write(path, {**first, "body": "Edited."})  # a1 edited, a/2 deleted
    again = {r.key: r.token for r in agent.references(None)}
    assert set(again) == {"a1"} and again["a1"] != refs[0].token
    assert agent.fetch("a/2", 0) is None


def test_a_bad_file_fails_the_listing(tmp_path: Path) -> None:
    with pytest.raises(AgentError, match="cannot be read"):
        list(build(tmp_path / "none.jsonl").references(None))
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a1"}\n{"title": "no id"}\n')
    with pytest.raises(AgentError, match=r"bad.jsonl:2 is not an article"):
        list(build(path).references(None))
