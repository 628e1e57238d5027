"""The boundary's checks one by one (tests/rules/test_boundary.py tests the whole chain): each decides
one concern, says nothing about URLs of another scheme, and gives its reason only to explain."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from searchcrawl.config.source import PathRule, PatternRules, PortRule, ScopeRules
from searchcrawl.rules.boundary import (
    Boundary,
    BoundaryCheck,
    DepthCheck,
    DomainCheck,
    DomainScope,
    DynamicPageCheck,
    PathCheck,
    PatternCheck,
    PortCheck,
    SchemeCheck,
    ScopeDecision,
    ScopeUrl,
    SeedFolderCheck,
    UrlLengthCheck,
    UrlSyntaxCheck,
)
from searchcrawl.rules.status_codes import Status


def parsed(text: str) -> ScopeUrl:
    url = ScopeUrl(text)
    url.parse()
    return url


def both(check: BoundaryCheck, text: str, depth: int = 0) -> tuple[ScopeDecision | None, ScopeDecision | None]:
    """What ``check`` says about a URL when checking and when explaining."""
    return check.check(parsed(text), depth, False), check.check(parsed(text), depth, True)


def refused(status: Status, rule: str) -> tuple[ScopeDecision, ScopeDecision]:
    return ScopeDecision(False, rule, status), ScopeDecision(False, rule, status)


def passed(rule: str) -> tuple[None, ScopeDecision]:
    return None, ScopeDecision(True, rule)


@dataclass(frozen=True)
class Domains:
    """A DomainScope without the source-file schema: the checks take plain values."""

    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    include_prefix: list[str] = field(default_factory=list)
    exclude_prefix: list[str] = field(default_factory=list)


def test_the_chain_in_order() -> None:
    boundary = Boundary(["http://h/"], ScopeRules())
    assert [check.name for check in boundary.checks] == [
        "max_url_length",
        "url",
        "scheme",
        "seed_folders",
        "domains",
        "ports",
        "paths",
        "patterns",
        "max_depth",
        "index_dynamic_pages",
    ]
    assert len({type(check) for check in boundary.checks}) == len(boundary.checks)
    assert repr(boundary.checks[4]) == "<DomainCheck domains>"


def test_trace_names_the_deciding_check() -> None:
    boundary = Boundary(["http://h/"], ScopeRules(max_depth=1))
    steps = boundary.trace("http://h/a?q=1", depth=1)
    assert [check.name for check, _ in steps] == [
        "scheme",
        "domains",
        "ports",
        "paths",
        "patterns",
        "max_depth",
        "index_dynamic_pages",
    ]
    check, decision = steps[-1]
    assert check.name == "index_dynamic_pages" and decision.status == Status.EXCLUDED_DYNAMIC
    assert [decision for _, decision in steps] == boundary.explain("http://h/a?q=1", depth=1)
    assert [check.name for check, _ in boundary.trace("http://h/" + "a" * 3000)] == ["max_url_length"]
    assert [check.name for check, _ in boundary.trace("http://[::1/")] == ["url"]
    assert [check.name for check, _ in boundary.trace("http://other/")] == ["scheme", "domains"]


def test_url_length() -> None:
    check = UrlLengthCheck(20)
    assert check.check(ScopeUrl("http://h/" + "a" * 11), 0, True) is None
    assert check.check(ScopeUrl("http://[" + "a" * 20), 0, False) == ScopeDecision(
        False, "URL is 28 characters long (more than SEARCHCRAWL_MAX_URL_LENGTH 20)", Status.URL_TOO_LONG
    )


def test_url_syntax_parses_as_browsers_do() -> None:
    check = UrlSyntaxCheck()
    url = ScopeUrl("HTTP://evil.com\\@WWW.Example.com./x?q")
    assert check.check(url, 0, True) is None
    assert (url.scheme, url.host, url.parts.path, url.parts.query) == ("http", "evil.com", "/@WWW.Example.com./x", "q")
    assert parsed("http://WWW.Bücher.DE./").host == "www.xn--bcher-kva.de"
    assert parsed("file:///srv/x").host == ""
    assert check.check(ScopeUrl("http://[::1/x"), 0, False) == ScopeDecision(
        False, "not a valid URL: Invalid IPv6 URL", Status.EXCLUDED_DOMAIN
    )


def test_scheme() -> None:
    web, files = SchemeCheck(file_seeds=False), SchemeCheck(file_seeds=True)
    assert both(web, "HTTPS://h/") == passed('scheme "https"')
    assert both(files, "file:///srv/x") == passed('scheme "file"')
    assert both(web, "file:///srv/x") == refused(
        Status.EXCLUDED_SCHEME, 'scheme "file" is crawled only by sources with file seeds'
    )
    assert both(files, "ftp://h/") == refused(
        Status.EXCLUDED_SCHEME, 'scheme "ftp" is not crawled (http, https, and file below the seeds\' folders)'
    )


def test_seed_folders() -> None:
    check = SeedFolderCheck(["/srv/docs/", "/srv/more/"])
    assert both(check, "file:///srv/more/a") == passed('file path below seed folder "/srv/more/"')
    assert both(check, "file:///srv/docs/%2e%2e/x") == refused(
        Status.EXCLUDED_PATH, "file URL outside the seeds' folders (seed folders: /srv/docs/, /srv/more/)"
    )
    assert both(check, "http://h/srv/docs/") == (None, None)  # web URLs: not its concern


def test_domains() -> None:
    seeds = DomainCheck(Domains(exclude_prefix=["test."]), {"h": {80}, "test.h": {80}})
    assert seeds.seed_default
    assert both(seeds, "http://h:8080/") == passed("seed host h")  # ports: the next check's concern
    assert both(seeds, "http://test.h/") == refused(Status.EXCLUDED_DOMAIN, 'domain exclude_prefix "test."')
    assert both(seeds, "http://x/") == refused(
        Status.EXCLUDED_DOMAIN, "host x is not a seed host (no domain include rule; seed hosts: h, test.h)"
    )
    assert both(seeds, "file:///x") == (None, None)
    included = DomainCheck(Domains(include=["example.com"], exclude=["uk.example.com"]), {"h": {80}})
    assert not included.seed_default
    assert both(included, "https://www.example.com/") == passed('domain include "example.com"')
    assert both(included, "https://www.uk.example.com/") == refused(Status.EXCLUDED_DOMAIN, 'domain exclude "uk.example.com"')
    assert both(included, "http://h/") == refused(
        Status.EXCLUDED_DOMAIN, "no domain include rule matches h (include: example.com)"
    )
    assert included.names_host("a.example.com") and not included.names_host("h")


def test_ports() -> None:
    check = PortCheck({"*": PortRule(exclude=[8443]), "h": PortRule(include=[80])}, None)
    assert check.check(parsed("http://h/"), 0, False) == ScopeDecision(True, "port include 80 on h")
    assert both(check, "https://h/") == refused(
        Status.EXCLUDED_PORT, "port 443 is not in the port include list of h (include: 80)"
    )
    assert both(check, "https://x:8443/") == refused(Status.EXCLUDED_PORT, 'port exclude 8443 on every host ("*")')
    assert both(check, "http://x:99999/") == refused(Status.EXCLUDED_PORT, "invalid port in http://x:99999/")
    assert both(check, "file:///x") == (None, None)
    seeds = PortCheck({}, {"h": {80, 8080}})
    assert seeds.decide("h", 8080) == ScopeDecision(True, "seed host h:8080")
    assert seeds.decide("h", 81) == ScopeDecision(
        False, "port 81 is not a seed port of h (seed ports: 80, 8080)", Status.EXCLUDED_PORT
    )
    assert seeds.decide("other", 81) == ScopeDecision(True, "no port rule for other: every port allowed")


def test_paths() -> None:
    check = PathCheck({"*": PathRule(exclude=["/private/"]), "h": PathRule(include=["/docs/"])})
    assert both(check, "http://h/docs/a") == passed('path include "/docs/" on h')
    assert both(check, "http://h/docs/../private/a") == refused(
        Status.EXCLUDED_PATH, 'path exclude "/private/" on every host ("*") (path /docs/../private/a read as /private/a)'
    )
    assert both(check, "http://h/docs/..%2Fprivate/a") == refused(
        Status.EXCLUDED_PATH,
        'path exclude "/private/" on every host ("*") (path /docs/..%2Fprivate/a read as /private/a)',
    )
    assert both(check, "http://h/docs/a;x") == passed('path include "/docs/" on h')
    assert both(check, "http://h") == refused(
        Status.EXCLUDED_PATH, "path / is not below a path include prefix on h (include: /docs/)"
    )
    assert both(check, "http://x/a") == passed("path /a is not excluded on x (no path include rule)")
    assert both(PathCheck({}), "http://x/a") == passed("no path rule for x: every path allowed")
    assert both(check, "file:///private/") == (None, None)


def test_patterns() -> None:
    assert both(PatternCheck(PatternRules()), "http://h/") == passed("no pattern rules")
    excludes = PatternCheck(PatternRules(exclude_glob=["*.zip"]))
    assert both(excludes, "http://h/a") == passed("no pattern rule excludes the URL")
    assert both(excludes, "file:///a.zip") == refused(Status.EXCLUDED_PATTERN, 'pattern exclude_glob "*.zip"')
    check = PatternCheck(PatternRules(include_regex=["/v[0-9]/"], exclude_regex=["print"]))
    assert both(check, "http://h/v2/a") == passed('pattern include_regex "/v[0-9]/"')
    assert both(check, "http://h/v2/print") == refused(Status.EXCLUDED_PATTERN, 'pattern exclude_regex "print"')
    assert both(check, "http://h/latest/") == refused(
        Status.EXCLUDED_PATTERN, "no include pattern matches the URL (include_regex: /v[0-9]/)"
    )


def test_depth() -> None:
    check = DepthCheck(2)
    assert both(check, "http://h/", 2) == passed("depth 2 <= max_depth 2")
    assert both(check, "http://h/", 3) == refused(Status.EXCLUDED_DEPTH, "depth 3 > max_depth 2")


@pytest.mark.parametrize("explain", [False, True])
def test_dynamic_pages_always_decide(explain: bool) -> None:
    # The last check: its decision is the verdict on an allowed URL, explained or not.
    static, dynamic = DynamicPageCheck(False), DynamicPageCheck(True)
    assert static.check(parsed("http://h/?"), 0, explain) == ScopeDecision(True, "no query string")
    assert static.check(parsed("http://h/?a"), 0, explain) == ScopeDecision(
        False, "query string and index_dynamic_pages is false", Status.EXCLUDED_DYNAMIC
    )
    assert dynamic.check(parsed("http://h/?a"), 0, explain) == ScopeDecision(
        True, "query string allowed (index_dynamic_pages is true)"
    )


def test_a_plain_scope_without_the_schema() -> None:
    @dataclass(frozen=True)
    class Scope:
        max_depth: int = 1
        index_dynamic_pages: bool = False
        domains: DomainScope = field(default_factory=Domains)
        ports: dict[str, PortRule] = field(default_factory=dict)
        paths: dict[str, PathRule] = field(default_factory=dict)
        patterns: PatternRules = field(default_factory=PatternRules)

    boundary = Boundary(["http://h/"], Scope())
    assert boundary.check("http://h/a", 1) == ScopeDecision(True, "no query string")
    assert boundary.check("http://h/a", 2).status == Status.EXCLUDED_DEPTH
    assert boundary.max_depth == 1 and isinstance(boundary.scope, Scope)
