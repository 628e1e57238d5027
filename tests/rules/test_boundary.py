"""The crawl boundary: scope rules (domains, ports, paths, patterns, depth, dynamic pages), their
validation messages, and the default boundary of the seeds' hosts and ports."""

from __future__ import annotations

import time
import tomllib
from typing import Any

import pytest
from pydantic import ValidationError

from searchcrawl.config.source import ScopeRules
from searchcrawl.rules.boundary import (
    CACHED_LENGTH,
    Boundary,
    ScopeDecision,
    _remembered_readings,
    host_port,
    server_paths,
)
from searchcrawl.rules.status_codes import Status
from searchcrawl.rules.urls import canonical


def rules(**data: Any) -> ScopeRules:
    return ScopeRules.model_validate(data)


def boundary(seeds: list[str], toml: str = "", **data: Any) -> Boundary:
    return Boundary(seeds, ScopeRules.model_validate({**tomllib.loads(toml), **data}))


def verdict(b: Boundary, url: str, depth: int = 0) -> tuple[bool, Status | None]:
    decision = b.check(url, depth)
    return decision.allowed, decision.status


def errors(data: dict[str, Any]) -> list[str]:
    """The validation errors as a user sees them: the key path, then the message."""
    with pytest.raises(ValidationError) as info:
        ScopeRules.model_validate(data)
    return [
        f"{'.'.join(str(part) for part in error['loc'])}: {error['msg'].removeprefix('Value error, ')}"
        for error in info.value.errors()
    ]


ALLOWED = (True, None)
DOMAIN = (False, Status.EXCLUDED_DOMAIN)
PORT = (False, Status.EXCLUDED_PORT)
PATH = (False, Status.EXCLUDED_PATH)
PATTERN = (False, Status.EXCLUDED_PATTERN)
DEPTH = (False, Status.EXCLUDED_DEPTH)
DYNAMIC = (False, Status.EXCLUDED_DYNAMIC)

ORACLE_TOML = """
[domains]
include = ["www.oracle.com", "otn.oracle.com"]

[paths."otn.oracle.com"]
include = ["/products/database/", "/products/ias/"]
exclude = ["/products/ias/web_cache/"]
"""


# -- the default boundary: the seeds' hosts and ports ------------------------------------------


def test_seed_hosts_and_ports_only() -> None:
    b = Boundary(["http://intranet.example.com/start", "https://docs.example.com:8443/"], ScopeRules(max_depth=2))
    assert b.check("http://intranet.example.com/a/b.html").allowed
    assert b.check("http://INTRANET.example.com:80/x").allowed
    assert b.check("https://docs.example.com:8443/x").allowed
    decision = b.check("http://www.example.com/")
    assert (decision.allowed, decision.status) == DOMAIN
    assert "www.example.com" in decision.rule
    decision = b.check("http://intranet.example.com:8080/")
    assert (decision.allowed, decision.status) == PORT
    assert decision.rule == "port 8080 is not a seed port of intranet.example.com (seed ports: 80)"
    assert b.check("https://docs.example.com/").status == Status.EXCLUDED_PORT
    assert b.check("mailto:someone@intranet.example.com").status == Status.EXCLUDED_SCHEME
    # Subdomains of a seed host are other hosts.
    assert verdict(b, "http://www.intranet.example.com/") == DOMAIN


def test_seed_host_texts() -> None:
    b = Boundary(["http://127.0.0.1:8080/"], ScopeRules())
    assert [d.rule for d in b.explain("http://127.0.0.1:8080/a")] == [
        'scheme "http"',
        "seed host 127.0.0.1",
        "seed host 127.0.0.1:8080",
        "no path rule for 127.0.0.1: every path allowed",
        "no pattern rules",
        "depth 0 <= max_depth 10",
        "no query string",
    ]
    assert b.check("http://localhost:8080/").rule == (
        "host localhost is not a seed host (no domain include rule; seed hosts: 127.0.0.1)"
    )


def test_seed_ports_give_way_to_port_rules() -> None:
    # A port rule for a seed host replaces the seed-port default; the other hosts keep it.
    b = boundary(["http://a.example.com/", "http://b.example.com/"], ports={"a.example.com": {"exclude": [8443]}})
    assert verdict(b, "http://a.example.com:8080/") == ALLOWED
    assert verdict(b, "http://a.example.com:8443/") == PORT
    assert verdict(b, "http://b.example.com:8080/") == PORT
    # A "*" rule applies to every host.
    b = boundary(["http://a.example.com/"], ports={"*": {"include": [80, 8080]}})
    assert verdict(b, "http://a.example.com:8080/") == ALLOWED
    assert verdict(b, "http://a.example.com:9090/") == PORT


def test_domain_exclusion_overrides_seed_hosts() -> None:
    b = boundary(["http://www.example.com/", "http://test.example.com/"], domains={"exclude_prefix": ["test."]})
    assert verdict(b, "http://www.example.com/") == ALLOWED
    decision = b.check("http://test.example.com/")
    assert decision == ScopeDecision(False, 'domain exclude_prefix "test."', Status.EXCLUDED_DOMAIN)


def test_depth_limit() -> None:
    b = Boundary(["http://h/"], ScopeRules(max_depth=2))
    assert b.max_depth == 2
    assert b.check("http://h/a", depth=2).allowed
    decision = b.check("http://h/a", depth=3)
    assert (decision.allowed, decision.status) == DEPTH
    assert decision.rule == "depth 3 > max_depth 2"
    assert Boundary(["http://h/"], ScopeRules()).max_depth == 10
    assert verdict(Boundary(["http://h/"], ScopeRules(max_depth=0)), "http://h/a", 1) == DEPTH


def test_file_seeds_stay_below_their_folder() -> None:
    b = Boundary(["file:///srv/docs/index.html"], ScopeRules(max_depth=5))
    assert b.check("file:///srv/docs/sub/page.html").allowed
    assert b.check("file:///srv/other/page.html").status == Status.EXCLUDED_PATH
    assert b.check("file:///srv/docs/../other/page.html").status == Status.EXCLUDED_PATH
    assert b.check("file:///srv/docsx/page.html").status == Status.EXCLUDED_PATH
    assert b.check("http://h/").status == Status.EXCLUDED_DOMAIN
    assert b.check("file:///srv/docs/sub/page.html", depth=6).status == Status.EXCLUDED_DEPTH
    assert [d.rule for d in b.explain("file:///srv/docs/a.txt")][:2] == [
        'scheme "file"',
        'file path below seed folder "/srv/docs/"',
    ]
    assert b.check("file:///etc/passwd").rule == "file URL outside the seeds' folders (seed folders: /srv/docs/)"
    # A web source never reads local files.
    web = Boundary(["http://h/"], ScopeRules())
    assert web.check("file:///etc/passwd").rule == 'scheme "file" is crawled only by sources with file seeds'
    assert web.check("file:///etc/passwd").status == Status.EXCLUDED_SCHEME


def test_file_patterns_apply() -> None:
    b = Boundary(["file:///srv/docs/"], rules(patterns={"exclude_glob": ["*.tmp"]}))
    assert verdict(b, "file:///srv/docs/a.txt") == ALLOWED
    assert verdict(b, "file:///srv/docs/a.tmp") == PATTERN


def test_schemes() -> None:
    b = Boundary(["http://h/"], ScopeRules())
    for url in ("ftp://h/x", "javascript:alert(1)", "mailto:a@h", "data:text/plain,x", "/relative"):
        assert verdict(b, url) == (False, Status.EXCLUDED_SCHEME), url
    assert b.check("ftp://h/x").rule.startswith('scheme "ftp" is not crawled')
    assert verdict(b, "HTTP://H/x") == ALLOWED
    assert b.check("http://[::1/x") == ScopeDecision(False, "not a valid URL: Invalid IPv6 URL", Status.EXCLUDED_DOMAIN)
    assert b.explain("http://[::1/x") == [b.check("http://[::1/x")]


def test_host_port_helper() -> None:
    assert host_port("HTTP://Example.COM/x") == ("http", "example.com", 80)
    assert host_port("https://example.com/") == ("https", "example.com", 443)
    assert host_port("https://example.com:8443/") == ("https", "example.com", 8443)
    assert host_port("http://example.com:99999/") == ("http", "example.com", 80)


def test_boundary_rejects_the_old_constructor() -> None:
    with pytest.raises(TypeError, match="ScopeRules"):
        Boundary(["http://h/"], 10)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sequence"):
        Boundary("http://h/", ScopeRules())


# -- domains -----------------------------------------------------------------------------------


def test_domain_suffix_on_a_label_boundary() -> None:
    # The seed's example: include domain oracle.com.
    b = boundary(["http://www.oracle.com/"], domains={"include": ["oracle.com"]})
    assert verdict(b, "http://www.oracle.com/") == ALLOWED
    assert verdict(b, "http://oracle.com/") == ALLOWED
    assert verdict(b, "http://otn.oracle.com/") == ALLOWED
    assert verdict(b, "http://WWW.ORACLE.COM./x") == ALLOWED
    assert verdict(b, "http://www.oracle.com.tw/") == DOMAIN
    assert verdict(b, "http://myoracle.com/") == DOMAIN
    assert verdict(b, "http://oracle.com.evil.example/") == DOMAIN
    assert b.check("http://www.oracle.com.tw/").rule == ("no domain include rule matches www.oracle.com.tw (include: oracle.com)")
    assert b.check("http://www.oracle.com/").rule == "no query string"
    assert b.explain("http://www.oracle.com/")[1] == ScopeDecision(True, 'domain include "oracle.com"')


def test_domain_include_replaces_the_seed_hosts() -> None:
    # Changing the include domain to someurl.com drops every oracle.com URL, seeds included.
    b = boundary(["http://www.someurl.com/", "http://www.oracle.com/"], domains={"include": ["someurl.com"]})
    assert verdict(b, "http://www.someurl.com/") == ALLOWED
    assert verdict(b, "http://www.oracle.com/") == DOMAIN


def test_domain_exclusion_overrides_inclusion() -> None:
    b = boundary(["http://www.oracle.com/"], domains={"include": ["oracle.com"], "exclude": ["uk.oracle.com"]})
    assert verdict(b, "http://www.oracle.com/") == ALLOWED
    assert verdict(b, "http://uk.oracle.com/") == DOMAIN
    assert verdict(b, "http://www.uk.oracle.com/") == DOMAIN
    assert verdict(b, "http://ukx.oracle.com/") == ALLOWED
    assert b.check("http://www.uk.oracle.com/").rule == 'domain exclude "uk.oracle.com"'
    # The most specific matching suffix is named.
    b = boundary(["http://a.b.c/"], domains={"include": ["c"], "exclude": ["c", "b.c"]})
    assert b.check("http://a.b.c/").rule == 'domain exclude "b.c"'


def test_domain_prefixes() -> None:
    b = boundary(
        ["http://intranet.example.com/"],
        domains={"include_prefix": ["intranet."], "exclude_prefix": ["intranet.test"]},
    )
    assert verdict(b, "http://intranet.example.com/") == ALLOWED
    assert verdict(b, "http://Intranet.Other.Org/") == ALLOWED
    assert verdict(b, "http://www.intranet.example.com/") == DOMAIN
    assert b.check("http://intranet.test-1.example.com/").rule == 'domain exclude_prefix "intranet.test"'
    assert b.check("http://www.example.com/").rule == (
        "no domain include rule matches www.example.com (include_prefix: intranet.)"
    )
    assert b.explain("http://intranet.x/")[1].rule == 'domain include_prefix "intranet."'


def test_domain_include_allows_every_port() -> None:
    b = boundary(["http://www.example.com/"], domains={"include": ["example.com"]})
    assert verdict(b, "http://www.example.com:8080/") == ALLOWED
    assert verdict(b, "https://docs.example.com:8443/") == ALLOWED
    assert b.explain("http://www.example.com:8080/")[2].rule == "no port rule for www.example.com: every port allowed"


def test_domain_ip_addresses_match_exactly() -> None:
    b = boundary(["http://10.0.0.1/"], domains={"include": ["10.0.0.1", "0.1", "::1"]})
    assert verdict(b, "http://10.0.0.1:8080/") == ALLOWED
    assert verdict(b, "http://10.0.1.1/") == DOMAIN
    assert verdict(b, "http://[::1]:8080/") == ALLOWED


def test_domain_entries_are_normalised() -> None:
    r = rules(domains={"include": [" .Oracle.COM", "oracle.com.", "[::1]"], "include_prefix": ["Intranet."]})
    assert r.domains.include == ["oracle.com", "::1"]
    assert r.domains.include_prefix == ["intranet."]
    assert rules(domains={"include": ["bücher.de"]}).domains.include == ["xn--bcher-kva.de"]
    b = boundary(["http://xn--bcher-kva.de/"], domains={"include": ["bücher.de"]})
    assert verdict(b, "http://www.xn--bcher-kva.de/") == ALLOWED
    assert verdict(b, "http://www.bücher.de/") == ALLOWED


def test_domain_entry_errors() -> None:
    assert errors({"domains": {"include": [""]}}) == [
        "domains.include: expected a domain or host name such as 'example.com', got ''"
    ]
    assert errors({"domains": {"include": ["*.example.com"]}}) == [
        "domains.include: expected a domain or host name such as 'example.com' without wildcards "
        "(it already admits every host below it), got '*.example.com'"
    ]
    assert errors({"domains": {"exclude": ["http://example.com/"]}}) == [
        "domains.exclude: expected a domain or host name such as 'example.com', not a URL or path, got 'http://example.com/'"
    ]
    assert errors({"domains": {"include": ["example.com:8080"]}}) == [
        "domains.include: expected a domain or host name such as 'example.com' without a port "
        "(ports go in [ports]), got 'example.com:8080'"
    ]
    assert errors({"domains": {"include_prefix": ["intra*"]}}) == [
        "domains.include_prefix: expected a host name prefix such as 'intranet.' without wildcards "
        "(it is a plain prefix), got 'intra*'"
    ]
    assert errors({"domains": {"include": "oracle.com"}}) == ["domains.include: Input should be a valid list"]
    assert errors({"domains": {"inclde": ["oracle.com"]}}) == [
        "domains: unknown key 'inclde' (known keys: include, exclude, include_prefix, exclude_prefix)"
    ]


def test_explicitly_includes() -> None:
    b = boundary(
        ["http://www.example.com/"],
        domains={"include": ["example.com", "10.0.0.5"], "include_prefix": ["intranet."], "exclude": ["x.example.com"]},
    )
    assert b.explicitly_includes("www.example.com")
    assert b.explicitly_includes("WWW.Example.com.")
    assert b.explicitly_includes("10.0.0.5")
    assert b.explicitly_includes("intranet.corp")
    assert not b.explicitly_includes("a.x.example.com")  # excluded
    assert not b.explicitly_includes("127.0.0.1")
    assert not b.explicitly_includes("example.org")
    # The seeds' hosts are the default inclusion, not an explicit one.
    seeds_only = Boundary(["http://127.0.0.1:8080/"], ScopeRules())
    assert seeds_only.check("http://127.0.0.1:8080/").allowed
    assert not seeds_only.explicitly_includes("127.0.0.1")


# -- ports -------------------------------------------------------------------------------------


PORTS_TOML = """
[domains]
include = ["example.com"]

[ports]
"www.example.com" = { include = [80, 8080] }
"*" = { exclude = [8443] }
"""


def test_port_rules_per_host_then_every_host() -> None:
    b = boundary(["http://www.example.com/"], PORTS_TOML)
    assert verdict(b, "http://www.example.com/") == ALLOWED
    assert verdict(b, "http://www.example.com:8080/") == ALLOWED
    assert verdict(b, "https://www.example.com/") == PORT  # 443
    assert verdict(b, "http://WWW.example.com:9000/") == PORT
    assert verdict(b, "https://docs.example.com/") == ALLOWED
    assert verdict(b, "https://docs.example.com:9000/") == ALLOWED
    assert verdict(b, "https://docs.example.com:8443/") == PORT
    assert b.check("http://www.example.com:9000/").rule == (
        "port 9000 is not in the port include list of www.example.com (include: 80, 8080)"
    )
    assert b.check("https://docs.example.com:8443/").rule == 'port exclude 8443 on every host ("*")'
    assert b.explain("http://www.example.com:8080/")[2].rule == "port include 8080 on www.example.com"
    assert b.explain("https://docs.example.com/")[2].rule == 'port 443 is not excluded on every host ("*")'


def test_host_port_rule_replaces_every_host_rule() -> None:
    b = boundary(
        ["http://a.example.com/"],
        domains={"include": ["example.com"]},
        ports={"*": {"exclude": [8443]}, "a.example.com": {"include": [8443]}},
    )
    assert verdict(b, "https://a.example.com:8443/") == ALLOWED
    assert verdict(b, "https://b.example.com:8443/") == PORT


def test_invalid_url_port() -> None:
    b = boundary(["http://example.com/"], domains={"include": ["example.com"]})
    assert verdict(b, "http://example.com:99999/") == PORT


def test_port_rule_errors() -> None:
    assert errors({"ports": {"www.example.com": {"include": [80], "exclude": [8080]}}}) == [
        "ports.www.example.com: expected an include list or an exclude list, not both"
    ]
    assert errors({"ports": {"www.example.com": {}}}) == [
        "ports.www.example.com: expected an include list or an exclude list, e.g. { include = [80, 8080] }"
    ]
    assert errors({"ports": {"h": {"include": []}}}) == [
        "ports.h: expected at least one port in the include list (an empty one allows no port)"
    ]
    assert errors({"ports": {"h": {"include": [0]}}}) == ["ports.h.include: expected port numbers from 1 to 65535, got 0"]
    assert errors({"ports": {"h": {"exclude": [65536]}}}) == ["ports.h.exclude: expected port numbers from 1 to 65535, got 65536"]
    assert errors({"ports": {"h": {"include": ["80"]}}}) == ["ports.h.include.0: Input should be a valid integer"]
    assert errors({"ports": {"h": {"include": [True]}}}) == ["ports.h.include.0: Input should be a valid integer"]
    assert errors({"ports": {"h": {"incude": [80]}}}) == ["ports.h: unknown key 'incude' (known keys: include, exclude)"]
    assert errors({"ports": {"h": [80]}}) == ["ports.h: Input should be a valid dictionary or instance of PortRule"]


@pytest.mark.parametrize("host", [".example.com", "*.example.com", "example.com:8080", "http://example.com", "a b", ""])
def test_per_host_table_keys_are_exact_hosts(host: str) -> None:
    for table, rule in (("ports", {"include": [80]}), ("paths", {"exclude": ["/x/"]})):
        [message] = errors({table: {host: rule}})
        what = table[:-1]
        assert message == (
            f"{table}: host {host!r}: expected an exact host name such as 'www.example.com', or '*' for every host "
            f"({what} rules are per host, not per domain; no scheme, port or path)"
        )


def test_per_host_table_keys_are_normalised() -> None:
    r = rules(ports={"WWW.Example.COM": {"include": [80]}, "[::1]": {"include": [80]}}, paths={"Otn.Oracle.com.": {}})
    assert list(r.ports) == ["www.example.com", "::1"]
    assert list(r.paths) == ["otn.oracle.com"]
    assert errors({"ports": {"A.example.com": {"include": [80]}, "a.example.com": {"include": [81]}}}) == [
        "ports: host 'a.example.com' is given twice (host names are compared in lower case)"
    ]


# -- paths -------------------------------------------------------------------------------------


def test_seed_example_path_rules() -> None:
    b = boundary(["http://www.oracle.com/", "http://otn.oracle.com/"], ORACLE_TOML)
    assert verdict(b, "http://otn.oracle.com/products/database/x") == ALLOWED
    assert verdict(b, "http://otn.oracle.com/products/ias/x") == ALLOWED
    assert verdict(b, "http://otn.oracle.com/products/ias/web_cache/x") == PATH
    assert verdict(b, "http://otn.oracle.com/other/") == PATH
    assert verdict(b, "http://otn.oracle.com/") == PATH
    assert verdict(b, "http://otn.oracle.com/products/ias") == PATH  # a prefix, not a folder name
    assert verdict(b, "http://otn.oracle.com/products/ias/x/../web_cache/y") == PATH
    assert verdict(b, "http://otn.oracle.com/products/ias/%2e%2e/../secret") == PATH
    # www.oracle.com has no path rules; other oracle.com hosts are outside the domains.
    assert verdict(b, "http://www.oracle.com/other/") == ALLOWED
    assert verdict(b, "http://www.oracle.com/products/ias/web_cache/x") == ALLOWED
    assert verdict(b, "http://docs.oracle.com/products/database/") == DOMAIN
    assert b.check("http://otn.oracle.com/products/ias/web_cache/x").rule == (
        'path exclude "/products/ias/web_cache/" on otn.oracle.com'
    )
    assert b.check("http://otn.oracle.com/other/").rule == (
        "path /other/ is not below a path include prefix on otn.oracle.com (include: /products/database/, /products/ias/)"
    )
    assert b.explain("http://otn.oracle.com/products/ias/x")[3] == ScopeDecision(
        True, 'path include "/products/ias/" on otn.oracle.com'
    )


def test_path_rules_for_every_host() -> None:
    b = boundary(
        ["http://a.example.com/"],
        domains={"include": ["example.com"]},
        paths={
            "*": {"include": ["/docs/"], "exclude": ["/docs/private/"]},
            "b.example.com": {"include": ["/wiki/"], "exclude": ["/wiki/drafts/"]},
            "c.example.com": {"exclude": ["/tmp/"]},
        },
    )
    # Hosts without rules of their own: the "*" rules.
    assert verdict(b, "http://a.example.com/docs/x") == ALLOWED
    assert verdict(b, "http://a.example.com/other") == PATH
    assert b.check("http://a.example.com/docs/private/x").rule == 'path exclude "/docs/private/" on every host ("*")'
    # A host's include list replaces the "*" one; the exclusions of both apply.
    assert verdict(b, "http://b.example.com/wiki/x") == ALLOWED
    assert verdict(b, "http://b.example.com/docs/x") == PATH
    assert b.check("http://b.example.com/wiki/drafts/x").rule == 'path exclude "/wiki/drafts/" on b.example.com'
    # A host with only exclusions keeps the "*" include list.
    assert verdict(b, "http://c.example.com/docs/x") == ALLOWED
    assert verdict(b, "http://c.example.com/tmp/x") == PATH
    assert verdict(b, "http://c.example.com/wiki/x") == PATH
    assert verdict(b, "http://c.example.com/docs/private/x") == PATH


def test_path_exclusion_only_allows_the_rest() -> None:
    b = boundary(["http://h.example/"], paths={"h.example": {"exclude": ["/private/"]}})
    assert verdict(b, "http://h.example/") == ALLOWED
    assert verdict(b, "http://h.example/x") == ALLOWED
    assert verdict(b, "http://h.example") == ALLOWED
    assert verdict(b, "http://h.example/private/x") == PATH
    assert b.explain("http://h.example/x")[3].rule == "path /x is not excluded on h.example (no path include rule)"


def test_path_prefixes_are_case_sensitive_and_percent_encoded() -> None:
    r = rules(paths={"h": {"include": ["/Docs/über uns/"]}})
    assert r.paths["h"].include == ["/Docs/%C3%BCber%20uns/"]
    b = Boundary(["http://h/"], r)
    assert verdict(b, "http://h/Docs/%C3%BCber%20uns/x") == ALLOWED
    assert verdict(b, "http://h/docs/%C3%BCber%20uns/x") == PATH


# The spellings of issue 53: each is the excluded folder /enc/secret/ (or, climbing out of the
# included /enc/, the folder /private/) to nginx, a servlet container or IIS.
WALK_ROUND = [
    "/enc//secret/k.html",  # repeated slashes: merged
    "/enc/secret%2Fl.html",  # an encoded slash: decoded into a "/"
    "/enc/secret%2fl.html",
    "/enc/..%2Fprivate/h.html",  # ".." after decoding: /private/h.html, outside the include
    "/enc/.%2e/private/h.html",
    "/enc/%2E%2E%2Fprivate/h.html",
    "/enc/secret;x/n.html",  # a path parameter (servlet containers): /enc/secret/n.html
    "/enc/secret;jsessionid=1/",
    "/enc/..;x/private/h.html",  # Tomcat's ".." with a parameter
    "/enc/%73ecret/a.html",  # an escaped letter
    "/enc/secret%5Cl.html",  # an encoded backslash (IIS)
    "/enc/..%5Cprivate/h.html",
    "/enc\\secret\\l.html",  # backslashes (browsers and IIS)
    "/enc/x/..//secret/a.html",
    "/enc/secret/",
    "/enc/SECRET/b.html",  # the same folder on IIS (case_insensitive)
]


@pytest.mark.parametrize("path", WALK_ROUND)
def test_a_spelling_a_server_maps_onto_an_excluded_folder_is_excluded(path: str) -> None:
    rule = {"include": ["/enc/"], "exclude": ["/enc/secret/"], "case_insensitive": "SECRET" in path}
    b = boundary(["http://127.0.0.1/enc/"], paths={"127.0.0.1": rule})
    assert verdict(b, "http://127.0.0.1" + path) == PATH, b.check("http://127.0.0.1" + path).rule
    assert verdict(b, "http://127.0.0.1/enc/secretary/a.html") == ALLOWED
    assert verdict(b, "http://127.0.0.1/enc/secret") == ALLOWED  # a server redirects it to the folder: checked then


def test_how_the_path_rules_read_a_path() -> None:
    assert server_paths("/enc//secret/k.html") == ("/enc/secret/k.html",)
    assert server_paths("/enc/..%2Fprivate/h.html") == ("/private/h.html",)
    # where servers differ, every reading: ";" starts parameters (Tomcat) or is a character (nginx)
    assert server_paths("/enc/secret;x/n.html") == ("/enc/secret;x/n.html", "/enc/secret/n.html")
    assert server_paths("/a%5Cb") == ("/a\\b", "/a/b")
    assert server_paths("/A/B") == ("/A/B",)
    assert server_paths("/A/%42", fold_case=True) == ("/a/b",)
    assert server_paths("/a/b/..") == ("/a/",)
    # bytes that are not UTF-8 kept, never replaced; and read in cp1252 as IIS (and Jetty) read them
    assert server_paths("/%FF/") == ("/\udcff/", "/\xff/")
    assert server_paths("/") == ("/",)
    # %uNNNN: a UTF-16 code unit to IIS and Jetty, decoded once (%u0025 is a "%", no new escape)
    assert server_paths("/a%u002Fb") == ("/a%u002Fb", "/a/b")
    assert server_paths("/%u0025%u0037%u0033/%uD83D%uDE00") == ("/%u0025%u0037%u0033/%uD83D%uDE00", "/%73/\U0001f600")
    # Windows (case_insensitive): names without their trailing dots and spaces, nor NTFS streams
    assert server_paths("/A./b%20/c", fold_case=True) == ("/a./b /c", "/a/b/c")
    assert server_paths("/a/secret::$INDEX_ALLOCATION/", fold_case=True) == ("/a/secret::$index_allocation/", "/a/secret/")
    assert server_paths("/a/.../b", fold_case=True) == ("/a/.../b", "/a/b")
    assert server_paths("/a./b", fold_case=False) == ("/a./b",)  # another folder on a Linux server


# Issue 53 (hostile input review): spellings IIS or Jetty map onto the excluded folder /enc/secret/
# (or out of the included /enc/, onto /private/) that the first reading missed. (path, case_insensitive)
WALK_ROUND_WINDOWS = [
    ("/enc/%u0073ecret/y", False),  # %uNNNN (IIS, Jetty 9): an "s"
    ("/enc/%U0073ecret/y", False),
    ("/enc%u002fsecret/y", False),  # an encoded "/"
    ("/enc/x/%u002e%u002e/secret/y", False),  # ".." in %u escapes
    ("/enc/%u002e%u002e/private/h.html", False),  # out of the include list
    ("/enc/%u002e%u002e%u005cprivate/h.html", False),  # "..\" in %u escapes
    ("/enc/%u0053ECRET/y", True),
    ("/enc/secret./y", True),  # Windows drops trailing dots and spaces
    ("/enc/secret%20/y", True),
    ("/enc/secret%2e%2e/y", True),
    ("/enc/secret.%20./y", True),
    ("/enc/secret::$INDEX_ALLOCATION/y", True),  # an NTFS stream of the folder
    ("/enc/.../secret/y", True),  # "..." is no name to Windows: the folder itself
    ("/enc/%C5%BFecret/y", True),  # "ſ" (long s) is an "S" in upper case
]


@pytest.mark.parametrize(("path", "case_insensitive"), WALK_ROUND_WINDOWS)
def test_a_spelling_iis_or_jetty_maps_onto_an_excluded_folder_is_excluded(path: str, case_insensitive: bool) -> None:
    rule = {"include": ["/enc/"], "exclude": ["/enc/secret/"], "case_insensitive": case_insensitive}
    rules = [rule] if "private" in path else [rule, {**rule, "include": []}]  # the exclusion alone too
    for rule in rules:
        b = boundary(["http://127.0.0.1/enc/"], paths={"127.0.0.1": rule})
        for url in ("http://127.0.0.1" + path, canonical("http://127.0.0.1" + path)):
            assert verdict(b, url) == PATH, b.check(url).rule
        assert verdict(b, "http://127.0.0.1/enc/secretary/a.html") == ALLOWED
        assert verdict(b, "http://127.0.0.1/enc/%u0073ecretary/a.html") == ALLOWED


def test_percent_u_escapes_in_include_rules() -> None:
    b = boundary(["http://h/docs/"], paths={"h": {"include": ["/docs/"]}})
    for path in ("/docs/%u002e%u002e/private/", "/docs/%u002e%u002e%u002fprivate/", "/docs/..%u002Fprivate/"):
        assert verdict(b, "http://h" + path) == PATH
        assert verdict(b, canonical("http://h" + path)) == PATH
    assert b.check("http://h/docs/%u002e%u002e/private/").rule == (
        "path /docs/%u002e%u002e/private/, read as /private/, is not below a path include prefix on h (include: /docs/)"
    )
    assert verdict(b, "http://h/docs/%u0061/") == ALLOWED  # /docs/a/ both ways
    assert verdict(b, "http://h/docs/%uzzzz/") == ALLOWED  # not a %u escape


def test_escapes_that_are_not_utf8_are_read_in_cp1252() -> None:
    # Http.sys reads a path that is not UTF-8 in the Windows code page; Jetty in ISO-8859-1
    r = rules(paths={"h": {"include": ["/docs/"], "exclude": ["/docs/prüfung/"], "case_insensitive": True}})
    b = Boundary(["http://h/docs/"], r)
    for path in ("/docs/pr%FCfung/x", "/docs/PR%DCFUNG/x", "/docs/pr%fcfung/x", "/docs/prüfung/x", "/docs/PRÜFUNG/x"):
        assert verdict(b, "http://h" + path) == PATH, path
        assert verdict(b, canonical("http://h" + path)) == PATH, path
    assert b.check("http://h/docs/pr%FCfung/x").rule == (
        'path exclude "/docs/pr%C3%BCfung/" on h (path /docs/pr%FCfung/x read as /docs/pr%C3%BCfung/x)'
    )
    assert verdict(b, "http://h/docs/pr%FCfen/x") == ALLOWED
    # on a case-sensitive server too (Jetty's ISO-8859-1)
    b = boundary(["http://h/"], paths={"h": {"exclude": ["/prüfung/"]}})
    assert verdict(b, "http://h/pr%FCfung/x") == PATH
    assert verdict(b, "http://h/PR%DCFUNG/x") == ALLOWED  # another folder there
    # the cp1252 characters of 0x80 to 0x9F (here "Œ"), and its undefined bytes kept
    b = boundary(["http://h/"], paths={"h": {"exclude": ["/%C5%92uvre/"]}})
    assert verdict(b, "http://h/%8Cuvre/x") == PATH
    assert server_paths("/%81/") == ("/\udc81/", "/\x81/")


def test_case_insensitive_paths_compare_in_upper_case_too() -> None:
    # Windows compares names in upper case: "ı" (dotless i) is an "I", "ſ" (long s) an "S"
    b = boundary(["http://h/"], paths={"h": {"exclude": ["/intern/", "/secret/"], "case_insensitive": True}})
    for path in ("/%C4%B1ntern/x", "/\u0131ntern/x", "/%C5%BFecret/x", "/\u017fECRET/x"):
        assert verdict(b, "http://h" + path) == PATH, path
        assert verdict(b, canonical("http://h" + path)) == PATH, path
    assert b.check("http://h/%C4%B1ntern/x").rule == 'path exclude "/intern/" on h (path /%C4%B1ntern/x read as /intern/x)'
    # an exclusion written with such a letter holds for the plain spelling too
    b = boundary(["http://h/"], paths={"h": {"exclude": ["/d%C4%B1s/"], "case_insensitive": True}})
    assert verdict(b, "http://h/DIS/x") == PATH
    # an include prefix must hold a path in both comparisons: "ß" is "SS" only in the second
    b = boundary(["http://h/"], paths={"h": {"include": ["/stra%C3%9Fe/"], "case_insensitive": True}})
    assert verdict(b, "http://h/STRA%C3%9FE/x") == ALLOWED
    assert verdict(b, "http://h/strasse/x") == PATH
    # without case_insensitive, other letters are other folders
    b = boundary(["http://h/"], paths={"h": {"exclude": ["/intern/"]}})
    assert verdict(b, "http://h/%C4%B1ntern/x") == ALLOWED


def test_a_hostile_path_has_a_bounded_number_of_readings() -> None:
    # each alternative (%u, ";", "%5C", cp1252, Windows names) is taken for the whole path at once
    unit = "/a;b%5Cc%u00e9%FF.%20:x"
    for length in (2_083, 8_192):
        path = (unit * (length // len(unit) + 1))[:length]
        start = time.process_time()
        for fold_case in (False, True):
            readings = server_paths(path, fold_case)
            assert 1 < len(readings) <= 32
        assert time.process_time() - start < 2  # some 40 ms; an explosion would never end


def test_the_readings_cache_keeps_short_paths_only() -> None:
    # hostile pages of long links with many readings must not fill the memory (issue 53)
    _remembered_readings.cache_clear()
    long_path = "/%F0%9F%98%80" + "a;b%5C" * 100
    assert len(long_path) > CACHED_LENGTH
    assert server_paths(long_path, True) == server_paths(long_path, True)
    assert _remembered_readings.cache_info().currsize == 0  # read afresh each time
    many = "/%F0%9F%98%80/" + "a;b%5C/" * 60  # short enough, but its readings are not
    assert len(many) <= CACHED_LENGTH and sum(map(len, server_paths(many, True))) > CACHED_LENGTH
    assert server_paths(many, True) == server_paths(many, True)
    assert _remembered_readings.cache_info()[:2] == (2, 1)  # hits, misses: remembered as too long (None)
    assert server_paths("/a;b/%73", True) == ("/a;b/s", "/a/s")
    assert server_paths("/a;b/%73", True) == ("/a;b/s", "/a/s")
    assert _remembered_readings.cache_info()[:2] == (3, 2)


def test_path_rules_judge_every_reading_and_fail_closed() -> None:
    b = boundary(["http://h/docs/"], paths={"h": {"include": ["/docs/"], "exclude": ["/docs/a;b/"]}})
    assert verdict(b, "http://h/docs/a;b/x") == PATH  # nginx: the folder "a;b"
    assert verdict(b, "http://h/docs/a;c/x") == ALLOWED  # read as /docs/a;c/x or /docs/a/x: inside
    assert verdict(b, "http://h/docs/..;x/z") == PATH  # Tomcat: /z; nginx: the folder "..;x" of /docs/
    assert b.check("http://h/docs/..%2Fz").rule == (
        "path /docs/..%2Fz, read as /z, is not below a path include prefix on h (include: /docs/)"
    )
    assert verdict(b, "http://h/docs%2F") == ALLOWED  # /docs/ as a server reads it
    # a prefix is read as a path is: written with an escape or a doubled slash, it means the folder
    b = boundary(["http://h/"], paths={"h": {"exclude": ["/a%2Fb/", "//c//"]}})
    assert verdict(b, "http://h/a/b/x") == PATH
    assert verdict(b, "http://h/c/x") == PATH


def test_case_insensitive_paths_per_host() -> None:
    b = boundary(
        ["http://iis/", "http://linux/"],
        paths={
            "iis": {"include": ["/Enc/"], "exclude": ["/enc/secret/"], "case_insensitive": True},
            "linux": {"include": ["/enc/"], "exclude": ["/enc/secret/"]},
        },
    )
    assert verdict(b, "http://iis/enc/SECRET/b.html") == PATH
    assert b.check("http://iis/ENC/Secret/b.html").rule == (
        'path exclude "/enc/secret/" on iis (path /ENC/Secret/b.html read as /enc/secret/b.html)'
    )
    assert verdict(b, "http://iis/ENC/public/b.html") == ALLOWED
    assert b.explain("http://iis/ENC/public/b.html")[3].rule == 'path include "/Enc/" on iis'
    assert verdict(b, "http://linux/enc/SECRET/b.html") == ALLOWED  # another folder on a case-sensitive server
    assert verdict(b, "http://linux/ENC/b.html") == PATH
    # "*" with case_insensitive: every host's rules ignore case (a host cannot turn it off)
    b = boundary(["http://h/"], paths={"*": {"exclude": ["/x/"], "case_insensitive": True}, "h": {"exclude": ["/y/"]}})
    assert verdict(b, "http://h/X/1") == PATH and verdict(b, "http://h/Y/1") == PATH
    assert errors({"paths": {"h": {"case_insensitive": "yes"}}}) == ["paths.h.case_insensitive: Input should be a valid boolean"]


def test_path_rule_errors() -> None:
    assert errors({"paths": {"h": {"include": ["products/"]}}}) == [
        "paths.h.include: expected path prefixes starting with '/', got 'products/'"
    ]
    assert errors({"paths": {"h": {"exclude": ["http://h/x/"]}}}) == [
        "paths.h.exclude: expected path prefixes starting with '/', got 'http://h/x/'"
    ]
    assert errors({"paths": {"h": {"include": "/x/"}}}) == ["paths.h.include: Input should be a valid list"]
    assert errors({"paths": {"h": {"inclue": ["/x/"]}}}) == [
        "paths.h: unknown key 'inclue' (known keys: include, exclude, case_insensitive)"
    ]


# -- patterns ----------------------------------------------------------------------------------


PATTERNS_TOML = r"""
[patterns]
include_regex = ['^https://docs\.example\.com/v\d+/']
exclude_regex = ['/print/']
include_glob = ["*/manual/*"]
exclude_glob = ["*.zip"]
"""


def test_patterns() -> None:
    b = boundary(["https://docs.example.com/"], PATTERNS_TOML, domains={"include": ["example.com"]})
    assert verdict(b, "https://docs.example.com/v2/intro.html") == ALLOWED
    assert verdict(b, "https://www.example.com/x/manual/y.html") == ALLOWED
    assert verdict(b, "https://docs.example.com/latest/") == PATTERN
    assert verdict(b, "https://docs.example.com/v2/print/intro.html") == PATTERN
    assert verdict(b, "https://docs.example.com/v2/all.zip") == PATTERN
    assert verdict(b, "https://www.example.com/x/MANUAL/y.html") == PATTERN  # globs are case-sensitive
    assert b.check("https://docs.example.com/v2/print/a").rule == 'pattern exclude_regex "/print/"'
    assert b.check("https://docs.example.com/v2/all.zip").rule == 'pattern exclude_glob "*.zip"'
    assert b.check("https://docs.example.com/latest/").rule == (
        "no include pattern matches the URL (include_regex: ^https://docs\\.example\\.com/v\\d+/; include_glob: */manual/*)"
    )
    assert b.explain("https://docs.example.com/v3/")[4].rule == ('pattern include_regex "^https://docs\\.example\\.com/v\\d+/"')
    assert b.explain("https://www.example.com/manual/")[4].rule == 'pattern include_glob "*/manual/*"'


def test_exclusion_patterns_alone() -> None:
    b = boundary(["http://h/"], patterns={"exclude_glob": ["*.zip", "*/tmp/*"]})
    assert verdict(b, "http://h/a.html") == ALLOWED
    assert verdict(b, "http://h/tmp/a.html") == PATTERN
    assert verdict(b, "http://h/a.zip") == PATTERN
    assert b.explain("http://h/a.html")[4].rule == "no pattern rule excludes the URL"


def test_glob_matches_the_whole_url() -> None:
    b = boundary(["http://h/"], patterns={"exclude_glob": ["*.zip"]}, index_dynamic_pages=True)
    assert verdict(b, "http://h/a.zip?download=1") == ALLOWED
    assert verdict(b, "http://h/a.zip") == PATTERN


def test_pattern_errors() -> None:
    [message] = errors({"patterns": {"exclude_regex": ["/print/", "(unclosed"]}})
    assert message.startswith("patterns.exclude_regex: '(unclosed' is not a valid regular expression: missing )")
    assert errors({"patterns": {"include_regex": [""]}}) == [
        "patterns.include_regex: expected a non-empty regular expression (an empty one matches every URL)"
    ]
    assert errors({"patterns": {"include_glob": [""]}}) == ["patterns.include_glob: expected a non-empty glob such as '*.zip'"]
    assert errors({"patterns": {"regex": ["x"]}}) == [
        "patterns: unknown key 'regex' (known keys: include_regex, exclude_regex, include_glob, exclude_glob)"
    ]


# -- dynamic pages, depth, order ---------------------------------------------------------------


def test_dynamic_pages() -> None:
    b = Boundary(["http://h/"], ScopeRules())
    decision = b.check("http://h/search?q=x")
    assert (decision.allowed, decision.status, decision.rule) == (
        False,
        Status.EXCLUDED_DYNAMIC,
        "query string and index_dynamic_pages is false",
    )
    assert verdict(b, "http://h/page?") == ALLOWED  # an empty query string
    dynamic = Boundary(["http://h/"], ScopeRules(index_dynamic_pages=True))
    assert dynamic.check("http://h/search?q=x") == ScopeDecision(True, "query string allowed (index_dynamic_pages is true)")


def test_order_of_checks() -> None:
    b = boundary(
        ["http://www.example.com/"],
        r"""
        max_depth = 1
        [domains]
        include = ["example.com"]
        exclude = ["bad.example.com"]
        [ports]
        "*" = { exclude = [8443] }
        [paths."*"]
        exclude = ["/private/"]
        [patterns]
        exclude_regex = ['\.zip\b']
        """,
    )
    # Each URL breaks every rule from some point on; the first check decides.
    assert verdict(b, "https://bad.example.com:8443/private/a.zip?x", 2) == DOMAIN
    assert verdict(b, "https://www.example.com:8443/private/a.zip?x", 2) == PORT
    assert verdict(b, "https://www.example.com/private/a.zip?x", 2) == PATH
    assert verdict(b, "https://www.example.com/a.zip?x", 2) == PATTERN
    assert verdict(b, "https://www.example.com/a?x", 2) == DEPTH
    assert verdict(b, "https://www.example.com/a?x", 1) == DYNAMIC
    assert verdict(b, "https://www.example.com/a", 1) == ALLOWED


def test_explain_lists_every_check_until_the_first_exclusion() -> None:
    b = boundary(["http://www.oracle.com/", "http://otn.oracle.com/"], ORACLE_TOML, max_depth=3)
    steps = b.explain("http://otn.oracle.com/products/ias/x.html", depth=2)
    assert steps == [
        ScopeDecision(True, 'scheme "http"'),
        ScopeDecision(True, 'domain include "otn.oracle.com"'),
        ScopeDecision(True, "no port rule for otn.oracle.com: every port allowed"),
        ScopeDecision(True, 'path include "/products/ias/" on otn.oracle.com'),
        ScopeDecision(True, "no pattern rules"),
        ScopeDecision(True, "depth 2 <= max_depth 3"),
        ScopeDecision(True, "no query string"),
    ]
    assert steps[-1] == b.check("http://otn.oracle.com/products/ias/x.html", depth=2)
    steps = b.explain("http://otn.oracle.com/products/ias/web_cache/x", depth=2)
    assert [d.allowed for d in steps] == [True, True, True, False]
    assert steps[-1] == ScopeDecision(False, 'path exclude "/products/ias/web_cache/" on otn.oracle.com', Status.EXCLUDED_PATH)
    assert steps[-1] == b.check("http://otn.oracle.com/products/ias/web_cache/x", depth=2)
    assert b.explain("gopher://x/") == [b.check("gopher://x/")]
    assert len(b.explain("http://uk.example.com/")) == 2
    for url in ("http://www.oracle.com/a?b", "http://otn.oracle.com/other", "https://www.oracle.com:8443/"):
        assert b.explain(url, 5)[-1] == b.check(url, 5)
        assert all(d.allowed and d.status is None for d in b.explain(url, 5)[:-1])


# -- the source file shape --------------------------------------------------------------------


def test_full_toml_example() -> None:
    r = ScopeRules.model_validate(
        tomllib.loads(
            r"""
            max_depth = 10
            index_dynamic_pages = false

            [domains]
            include = ["oracle.com"]
            exclude = ["uk.oracle.com"]
            include_prefix = ["intranet."]
            exclude_prefix = ["test-"]

            [ports]
            "www.example.com" = { include = [80, 8080] }
            "*" = { exclude = [8443] }

            [paths."otn.oracle.com"]
            include = ["/products/database/", "/products/ias/"]
            exclude = ["/products/ias/web_cache/"]

            [patterns]
            include_regex = ['^https://docs\.example\.com/v\d+/']
            exclude_regex = ['/print/']
            include_glob = ["*/manual/*"]
            exclude_glob = ["*.zip"]
            """
        )
    )
    assert r.ports["*"].exclude == [8443]
    assert r.paths["otn.oracle.com"].exclude == ["/products/ias/web_cache/"]
    assert ScopeRules() == ScopeRules.model_validate({})
    with pytest.raises(ValidationError, match="frozen"):
        r.max_depth = 3  # type: ignore[misc]


def test_top_level_errors() -> None:
    assert errors({"max_depth": -1}) == ["max_depth: Input should be greater than or equal to 0"]
    assert errors({"max_depth": "3"}) == ["max_depth: Input should be a valid integer"]
    assert errors({"index_dynamic_pages": "yes"}) == ["index_dynamic_pages: Input should be a valid boolean"]
    assert errors({"domain": {}}) == ["domain: Extra inputs are not permitted"]
    assert errors({"domains": ["oracle.com"]}) == ["domains: Input should be a valid dictionary or instance of DomainRules"]


def test_off_domains_is_the_domain_check_alone_as_check_applies_it() -> None:
    """What a page's anchors may name (crawl/requests.py ``Admission.target``): a URL the domain
    rules keep out (901) whatever its path and depth, and nothing another rule decides."""
    seeds_only = boundary(["http://h.test/docs/"], max_depth=1)
    ruled = boundary(
        ["http://h.test/"], domains={"include": ["h.test"], "include_prefix": ["intranet."], "exclude": ["x.h.test"]}
    )
    cases = [
        (seeds_only, "http://other.test/", True),
        (seeds_only, "http://h.test/elsewhere/deep.html", False),  # a path and a depth: other rules'
        (ruled, "http://a.h.test/", False),
        (ruled, "http://x.h.test/", True),  # excluded
        (ruled, "http://intranet.corp/", False),
        (ruled, "http://jdk.test/api/Object.html", True),
        (ruled, "file:///srv/docs/a.html", False),  # another scheme: the scheme check's
    ]
    for b, url, off in cases:
        assert b.off_domains(url) is off, url
        assert (b.check(url, 5).status == Status.EXCLUDED_DOMAIN) is off, url  # at any depth
