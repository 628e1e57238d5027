"""What a source's settings decide, for every side that reads a source: the crawl (its admission,
crawl/requests.py; a finished run's fingerprint, crawl/extensions/run_end.py), `scrapy explain`, and
the source editor's check of a text (web/source_editor.py), which applies the crawl's own rules."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from searchcrawl.config.implementations import url_rewriter
from searchcrawl.config.source import Source
from searchcrawl.rules.boundary import Boundary
from searchcrawl.rules.chain import RuleChain
from searchcrawl.rules.maintenance import INDEXING_RULES, settings_fingerprint
from searchcrawl.rules.navigation_pages import effective_patterns

if TYPE_CHECKING:
    from searchcrawl.agents.base import Agent


def rule_chain(source: Source, max_url_length: int, agent: Agent | None = None) -> RuleChain:
    """The source's rule chain, as the crawl and `scrapy explain` apply it."""
    settings = source.settings
    boundary = Boundary(source.seed_urls, settings, max_url_length)
    return RuleChain.of(boundary, settings.filters.scope, url_rewriter(settings.url_rewriter), agent)


def fingerprint(source: Source) -> dict[str, Any]:
    """The settings whose change forces a full recrawl (kept with a finished run)."""
    settings = source.settings
    agent = None
    if source.agent_class is not None and source.agent_options is not None:
        # the class and its options, as JSON (a secret's value is never an option: only its name)
        agent = {
            "class": f"{source.agent_class.__module__}.{source.agent_class.__qualname__}",
            "options": source.agent_options.model_dump(mode="json"),
            # an incremental listing would not name a document a new scope filter excludes
            "filters": settings.filters.model_dump(mode="json"),
        }
    indexing = settings.model_dump(mode="json", include=set(INDEXING_RULES))
    # the patterns in force, the default's too: a later version's new default is a changed rule
    indexing["navigation_pages"] = effective_patterns(settings.navigation_pages)
    return settings_fingerprint(settings.index_dynamic_pages, settings.attributes, agent, indexing)
