"""The source's rule chain alone (rules/chain.py): plain and immutable, built from a boundary,
the scope filter's rules and a rewriter, with no crawler, no table and no Solr. The crawl decides
with ``decide`` and ``refusal``; `scrapy explain` prints ``steps`` with ``every``: one chain."""

from __future__ import annotations

import dataclasses

import pytest

from searchcrawl.config.source import SourceSettings
from searchcrawl.rules.boundary import Boundary
from searchcrawl.rules.chain import ADMITTED, SKIPPED, RuleChain
from searchcrawl.rules.filters import FilterRules
from searchcrawl.rules.status_codes import Status
from tests.rewriters import strip_session

SEEDS = ("http://h.test/",)


def chain(agent: object = None, **settings: object) -> RuleChain:
    options = SourceSettings.model_validate({"max_depth": 2, "paths": {"*": {"exclude": ["/private/"]}}, **settings})
    return RuleChain.of(Boundary(SEEDS, options, 2048), FilterRules(exclude_urls=["*/drafts/*"]), strip_session, agent)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "depth", "status"),
    [
        ("http://h.test/a.html", 2, None),
        ("http://h.test/a.html", 3, Status.EXCLUDED_DEPTH),
        ("http://other.test/a.html", 1, Status.EXCLUDED_DOMAIN),
        ("http://h.test/private/a.html", 1, Status.EXCLUDED_PATH),
        ("http://h.test/drafts/a.html", 1, Status.EXCLUDED_FILTER),
        ("http://h.test/q?x=1", 1, Status.EXCLUDED_DYNAMIC),
        ("ftp://h.test/a.txt", 1, Status.EXCLUDED_SCHEME),
    ],
)
def test_decide_takes_the_first_refusal(url: str, depth: int, status: Status | None) -> None:
    step = chain().decide(url, depth)
    if status is None:
        assert step.decision is ADMITTED and step.url == url
        return
    assert (step.allowed, step.status) == (False, status) and step.rule
    # the decisive step is the last of every step explain prints
    assert chain().steps(url, depth, every=True)[-1].decision == step.decision


def test_a_link_is_judged_as_the_rewriter_makes_it() -> None:
    rules = chain()
    step = rules.decide("http://h.test/a.html?sessionid=1", 1, rewrite="link")
    assert (step.allowed, step.url) == (True, "http://h.test/a.html")
    assert rules.decide("http://h.test/print/a.html", 1, rewrite="link").status == Status.EXCLUDED_REWRITER
    every = rules.steps("http://h.test/a.html?sessionid=1", 1, rewrite="link", every=True)
    assert every[0].name == "url_rewriter" and every[0].rule == "the URL rewriter makes it http://h.test/a.html"
    assert [step.name for step in every[1:]][-1] == "scope_filter"


def test_refusal_judges_known_urls_as_they_are() -> None:
    rules = chain()
    assert rules.refusal("http://h.test/a.html", 1) is None
    assert rules.refusal("http://h.test/private/a.html", 1) == (
        Status.EXCLUDED_PATH,
        rules.decide("http://h.test/private/a.html", 1).rule,
    )
    # a URL the rewriter would change or drop is not one the crawl would request now
    assert rules.refusal("http://h.test/a.html?sessionid=1", 1) == (
        Status.EXCLUDED_REWRITER,
        "the URL rewriter makes it http://h.test/a.html",
    )
    assert rules.refusal("http://h.test/print/a.html", 1) == (Status.EXCLUDED_REWRITER, "dropped by the URL rewriter")
    assert rules.refusal("http://h.test:99999/a.html", 1) == (Status.EXCLUDED_PORT, "invalid port in http://h.test:99999/a.html")


def test_a_url_skip_passes_over_is_not_judged() -> None:
    step = chain().decide("http://other.test/", 1, skip=lambda url: True)
    assert step.decision is SKIPPED


def test_a_rewriter_that_raises_refuses_only_that_link() -> None:
    def broken(url: str) -> str:
        raise ValueError("no")

    rules = dataclasses.replace(chain(), rewriter=broken)
    step = rules.decide("http://h.test/a.html", 1, rewrite="link")
    assert (step.status, step.rule) == (Status.EXCLUDED_REWRITER, "the URL rewriter raised ValueError")


class Documents:
    """An agent's documents: ``doc://unit/<key>``, those under /hidden/ not listed."""

    def key_of(self, url: str) -> str | None:
        return url.removeprefix("doc://unit/") if url.startswith("doc://unit/") else None

    def refusal(self, key: str) -> str | None:
        return "a hidden file" if key.startswith("hidden/") else None


def test_an_agents_documents_are_its_boundary() -> None:
    rules = chain(Documents())
    assert rules.decide("doc://unit/a.txt", 0).allowed
    assert rules.decide("http://h.test/", 0).status == Status.EXCLUDED_SCHEME
    assert rules.decide("doc://unit/hidden/a.txt", 0).allowed  # the listing applies its own rules
    assert rules.steps("doc://unit/hidden/a.txt", 0, every=True)[-1].rule == "its agent does not list it: a hidden file"
    assert rules.decide("doc://unit/drafts/a.txt", 0).status == Status.EXCLUDED_FILTER  # the scope filter applies too


def test_the_chain_is_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        chain().rewriter = str  # type: ignore[misc]
