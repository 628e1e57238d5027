"""The redmine source's logic alone (no server): its options, keys, an issue as a page (private
notes left out, a hostile text escaped) and what decides who sees it. tests/e2e/test_redmine_sources.py
crawls a real Redmine."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from searchcrawl.agents.redmine import RedmineAgent, RedmineOptions, issue_facts, issue_html

URL = "https://redmine.example.org/"
CREDENTIALS = {"username": "crawler", "password_secret": "P"}


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"url": "ftp://redmine.example.org/"}, "http"),
        ({"url": "http://redmine.example.org/"}, "in clear"),
        ({"username": None, "password_secret": None}, "an administrator's"),
        ({"projects": ["Harbour"]}, "project identifier"),
        ({"authenticated_token": "staff"}, "not an access token"),
    ],
)
def test_options_refused_with_one_line_each(changes: dict[str, Any], error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        RedmineOptions.model_validate({"url": URL, **CREDENTIALS, **changes})


def test_keys_and_display_urls() -> None:
    agent = RedmineAgent("tracker", RedmineOptions.model_validate({"url": "http://127.0.0.1:3000/redmine", **CREDENTIALS}))
    assert agent.redmine.url == "http://127.0.0.1:3000/redmine/"
    assert agent.refusal("issues/12") is None and agent.refusal("attachments/3") is None
    assert agent.refusal("issues/0") and agent.refusal("issues/../users") and agent.refusal("projects/1")
    assert agent.display_url("issues/12") == "http://127.0.0.1:3000/redmine/issues/12"


def test_an_issue_as_a_page_leaves_private_notes_out_and_escapes_text() -> None:
    item = {
        "id": 7,
        "subject": "Crane <script>alert(1)</script>",
        "description": "First paragraph.\n\nSecond & last.",
        "author": {"id": 3, "name": "Ann <Admin>"},
        "journals": [
            {"notes": "a public comment", "private_notes": False, "user": {"name": "Ben"}},
            {"notes": "the private note", "private_notes": True, "user": {"name": "Cid"}},
            {"notes": "no private_notes key", "user": {"name": "Dee"}},
            {"notes": "", "private_notes": False, "details": [{"property": "attr"}]},
        ],
    }
    page = issue_html(item)
    assert "<title>#7 Crane &lt;script&gt;alert(1)&lt;/script&gt;</title>" in page and "<script>" not in page
    assert "<p>First paragraph.</p><p>Second &amp; last.</p>" in page and "a public comment" in page
    assert "the private note" not in page and "no private_notes key" not in page  # unsure: left out
    assert 'content="Ann &lt;Admin&gt;"' in page


def test_what_decides_who_sees_an_issue() -> None:
    facts = issue_facts({"id": 5, "tracker": {"id": 2}, "is_private": False, "author": {"id": 3}, "assigned_to": {"id": 10}}, 7)
    assert facts is not None and (facts.tracker, facts.private, facts.author, facts.assignee) == (2, False, 3, 10)
    unsure = issue_facts({"id": 6}, 7)
    assert unsure is not None and unsure.private  # no is_private: taken as private (fail closed)
    assert issue_facts({"id": True}, 7) is None and issue_facts({"id": "5"}, 7) is None
