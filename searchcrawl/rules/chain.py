"""The source's rules on a URL as one chain: the URL rewriter, each boundary check (or the
source's agent, for a source of another type than web sites), the scope filter.

``RuleChain`` is plain and immutable, built once from the source: the crawl decides with it (its
first refusal: crawl/requests.py ``Admission``; a maintenance crawl's known URLs) and `scrapy
explain` prints every step of it, so both answer with one implementation. It knows nothing of
Scrapy, the document table or what the crawl remembers; robots.txt and the internal-address guard
decide when a URL is requested (downloader middlewares).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol

from searchcrawl.rules.boundary import Boundary, ScopeDecision
from searchcrawl.rules.filters import FilterRules, FilterSet
from searchcrawl.rules.status_codes import Status
from searchcrawl.rules.url_rewriter import UrlRewriter, identity
from searchcrawl.rules.urls import canonical


class RuleStep(NamedTuple):  # a tuple: made for every URL the crawl meets, it must cost little
    """One decision of a source's rules on a URL (``RuleChain.steps``).

    ``name``: the rule: ``url_rewriter``, a boundary check's name (``Boundary.checks``: ``domains``,
    ``paths``, ...; ``boundary`` for the boundary's verdict when only the decisive steps were asked
    for), ``agent``, ``scope_filter``, ``skip``. ``decision``: allowed or not, the rule's words
    (what the document table keeps and `scrapy explain` prints), the crawler status when not.
    ``url``: the URL the rules after this one judge (the rewriter's result, for a link; else the
    URL judged)."""

    name: str
    decision: ScopeDecision
    url: str

    @property
    def allowed(self) -> bool:
        return self.decision.allowed

    @property
    def rule(self) -> str:
        return self.decision.rule

    @property
    def status(self) -> Status | None:
        return self.decision.status


class AgentDocuments(Protocol):
    """What the rule chain asks of a source's agent (searchcrawl/agents/base.py ``Agent``)."""

    def key_of(self, url: str) -> str | None: ...

    def refusal(self, key: str) -> str | None: ...


# What ``RuleChain.decide`` answers for a URL the source's rules let in (the crawl reads only ``allowed``).
ADMITTED = ScopeDecision(True, "inside the source's boundary and scope filter")
# What ``steps`` answers for a URL its ``skip`` passes over (as the rewriter made it): not judged
SKIPPED = ScopeDecision(True, "not judged: passed over")
# RuleStep(...) without its Python-level __new__, for the steps the crawl's hot path makes
_new_step = tuple.__new__
_UNCHANGED_BY_REWRITER = ScopeDecision(True, "the URL rewriter leaves it as it is")

# ``RuleChain.steps``' ``rewrite``: how the URL rewriter applies to the URL judged
#   "link":  a link found on a page: judged as the rewriter makes it (what the spider requests)
#   "known": a URL the document table knows (a maintenance crawl): the rewriter must leave it as it is
#   None:    a request's URL: the rewriter has had it already (links), or never does (seeds)
Rewrite = Literal["link", "known"] | None


@dataclass(frozen=True)
class RuleChain:
    """A source's rules on a URL, in the crawl's order. ``agent``: the source's agent, whose
    documents are its boundary (a source of another type than web sites), else None."""

    boundary: Boundary
    scope_filter: FilterSet
    rewriter: UrlRewriter = identity
    agent: AgentDocuments | None = None
    # whether the scope filter has a rule: one with every key at its default passes every URL,
    # and the crawl's hot path (``steps`` without ``every``) need not ask it
    scope_filtering: bool = field(default=True)

    @classmethod
    def of(
        cls, boundary: Boundary, filters: FilterRules, rewriter: UrlRewriter | None = None, agent: AgentDocuments | None = None
    ) -> RuleChain:
        return cls(boundary, FilterSet(filters, "scope"), rewriter or identity, agent, filters != FilterRules())

    def steps(
        self, url: str, depth: int, *, rewrite: Rewrite = None, every: bool = False, skip: Callable[[str], bool] | None = None
    ) -> list[RuleStep]:
        """The rules on ``url``, found ``depth`` links from a seed, in the crawl's order: the URL
        rewriter (``rewrite``, see ``Rewrite``), each boundary check, the scope filter. They stop
        at the first refusal, which is then the last step.

        With ``every``, each rule that has something to say about the URL gives a step, passed
        ones with the reason they pass (what explain prints). Without it (the crawl's hot path:
        every link, every known URL), only the steps that change the outcome: the rewriter's when
        it refuses or rewrites a link, and the first refusal (from the boundary's verdict, named
        ``boundary``); no step, or no refusal, is an allowed URL. A URL ``skip`` passes over (as
        the rewriter made it: e.g. queued in this run already) is one ``SKIPPED`` step. The URL is
        expected in canonical form."""
        steps: list[RuleStep] = []
        if rewrite is not None:
            step = self.rewrite_step(url, link=rewrite == "link")
            if every or not step.allowed or step.url != url:
                steps.append(step)
                if not step.decision.allowed:
                    return steps
                url = step.url
        if skip is not None and skip(url):
            return [_new_step(RuleStep, ("skip", SKIPPED, url))]
        if self.agent is not None:
            # a source of another type: its agent's documents are its boundary (the agent admits
            # a file, a row, a message when it reads it); the scope filter applies as to pages
            agent_step = self._agent_step(url, every)
            if agent_step is not None:
                steps.append(agent_step)
                if not agent_step.allowed:
                    return steps
        elif every:
            for check, decision in self.boundary.trace(url, depth):
                steps.append(RuleStep(check.name, decision, url))
            if not steps[-1].decision.allowed:
                return steps
        else:
            verdict = self.boundary.check(url, depth)
            if not verdict.allowed:
                steps.append(_new_step(RuleStep, ("boundary", verdict, url)))
                return steps
        if not (every or self.scope_filtering):
            return steps
        filtered = self.scope_filter.check_url(url)
        if not filtered.passed:
            steps.append(RuleStep("scope_filter", ScopeDecision(False, filtered.rule, Status.EXCLUDED_FILTER), url))
        elif every:
            steps.append(RuleStep("scope_filter", ScopeDecision(True, filtered.rule), url))
        return steps

    def decide(self, url: str, depth: int, *, rewrite: Rewrite = None, skip: Callable[[str], bool] | None = None) -> RuleStep:
        """The rules' one decision on a URL: ``steps``' first refusal, else an allowed step whose
        URL is the one to request (the rewriter's result, with ``rewrite="link"``), or the
        ``SKIPPED`` step of a URL ``skip`` passes over."""
        steps = self.steps(url, depth, rewrite=rewrite, skip=skip)
        if not steps:
            return _new_step(RuleStep, ("boundary", ADMITTED, url))
        return steps[-1]

    def off_domains(self, url: str) -> bool:
        """Is ``url`` (canonical) kept out by a web source's domain rules, whatever its path and
        depth (``Boundary.off_domains``)? Never for a source of another type: its agent decides."""
        return self.agent is None and self.boundary.off_domains(url)

    def refusal(self, url: str, depth: int) -> tuple[int, str] | None:
        """(status, rule) when the rules keep a URL the document table knows out now (the URL
        rewriter must leave it as it is, the boundary, the scope filter), else None: what a
        maintenance crawl applies to every known URL."""
        try:
            step = self.decide(url, depth, rewrite="known")
        except ValueError as exc:
            return int(Status.EXCLUDED_PORT), f"not a valid URL: {exc}"
        status = step.decision.status
        return None if step.decision.allowed or status is None else (int(status), step.decision.rule)

    def _agent_step(self, url: str, every: bool) -> RuleStep | None:
        """The agent's step on ``url``: a refusal when it is no document of the agent; with
        ``every`` (explain), the agent's own rules, as its listing applies them; else None."""
        assert self.agent is not None
        key = self.agent.key_of(url)
        if key is None:
            return RuleStep("agent", ScopeDecision(False, "not a document of the source's agent", Status.EXCLUDED_SCHEME), url)
        if not every:
            return None
        refusal = self.agent.refusal(key)
        if refusal is not None:
            return RuleStep("agent", ScopeDecision(False, f"its agent does not list it: {refusal}", Status.EXCLUDED_FILTER), url)
        return RuleStep("agent", ScopeDecision(True, "a document of the source's agent"), url)

    def rewrite_step(self, url: str, *, link: bool) -> RuleStep:
        """The URL rewriter's step on ``url`` (canonical): what it made of it, or raised. A link
        is judged as the rewriter makes it (the step's URL, canonical; a refusal when the rewriter
        drops it, raises, or makes an invalid URL of it); a known URL it changes is excluded (its
        rewritten form is a URL of its own)."""
        try:
            rewritten: str | Exception | None = self.rewriter(url)
        except Exception as exc:  # a user's rewriter: one bad URL must not stop the page's other links
            rewritten = exc
        if isinstance(rewritten, Exception):
            refusal = ScopeDecision(False, f"the URL rewriter raised {type(rewritten).__name__}", Status.EXCLUDED_REWRITER)
            return RuleStep("url_rewriter", refusal, url)
        if rewritten is None:
            return RuleStep("url_rewriter", ScopeDecision(False, "dropped by the URL rewriter", Status.EXCLUDED_REWRITER), url)
        if rewritten == url:  # most links: made without RuleStep's Python-level __new__
            return _new_step(RuleStep, ("url_rewriter", _UNCHANGED_BY_REWRITER, url))
        if not link:
            refusal = ScopeDecision(False, f"the URL rewriter makes it {rewritten}", Status.EXCLUDED_REWRITER)
            return RuleStep("url_rewriter", refusal, url)
        try:
            target = canonical(rewritten)
        except ValueError as exc:  # e.g. a port out of range
            return RuleStep("url_rewriter", ScopeDecision(False, f"not a valid URL: {exc}", Status.EXCLUDED_PORT), rewritten)
        return RuleStep("url_rewriter", ScopeDecision(True, f"the URL rewriter makes it {target}"), target)
