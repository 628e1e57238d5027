"""The redirect policy: plain decisions, then a crawl against a real server answering redirects."""

from __future__ import annotations

import uuid

from searchcrawl.config.source import ScopeRules
from searchcrawl.rules.addresses import AddressPolicy, is_internal_address
from searchcrawl.rules.boundary import Boundary
from searchcrawl.rules.redirect_policy import decide_redirect
from searchcrawl.rules.status_codes import Status
from tests.conftest import solr_docs


def rules(**keys) -> ScopeRules:
    return ScopeRules.model_validate(keys)


def test_internal_addresses() -> None:
    for address in [
        "127.0.0.2",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "::1",
        "fe80::1",
        "0.0.0.0",
        "::ffff:127.0.0.1",
        "fd00::1",
    ]:
        assert is_internal_address(address), address
    assert not is_internal_address("93.184.216.34")
    assert not is_internal_address("2606:2800:220:1:248:1893:25c7:1946")


def test_policy_decisions() -> None:
    boundary = Boundary(["http://www.example.com/"], rules(max_depth=3))
    chain = ["http://www.example.com/a"]
    inside = decide_redirect(301, "http://www.example.com/b", 1, chain, boundary)
    assert inside.follow and not inside.leaves_boundary
    permanent_out = decide_redirect(301, "http://other.example.org/", 1, chain, boundary)
    assert not permanent_out.follow and permanent_out.target_status == Status.EXCLUDED_DOMAIN
    for status in (302, 303, 307):
        temporary_out = decide_redirect(status, "http://other.example.org/", 1, chain, boundary)
        assert temporary_out.follow and temporary_out.leaves_boundary
    assert not decide_redirect(308, "http://other.example.org/", 1, chain, boundary).follow
    loop = decide_redirect(302, "http://www.example.com/a", 1, chain, boundary)
    assert loop.status == Status.REDIRECT_LOOP
    # another port of the seed host is outside the boundary, whatever the status code
    for status in (301, 302, 303, 307, 308):
        other_port = decide_redirect(status, "http://www.example.com:8080/admin", 1, chain, boundary)
        assert not other_port.follow, status
    assert decide_redirect(302, "http://www.example.com:8080/", 1, chain, boundary).status == Status.EXCLUDED_PORT
    too_long = "http://other.example.org/" + "a" * 3000
    assert decide_redirect(302, too_long, 1, chain, boundary).status == Status.URL_TOO_LONG
    ported = Boundary(["http://www.example.com/"], rules(ports={"*": {"include": [80, 443]}}))
    assert not decide_redirect(307, "http://other.example.org:8080/", 1, chain, ported).follow
    assert decide_redirect(307, "https://other.example.org/", 1, chain, ported).follow


def test_internal_address_policy() -> None:
    """Internal addresses only for a host and port the domain and port rules admit, or a seed's."""
    policy = AddressPolicy(Boundary(["http://www.example.com/"], rules()), ["http://www.example.com/"])
    assert policy.refusal("www.example.com", 80, ["10.0.0.5"]) is None  # the seed's site
    assert policy.refusal("WWW.Example.com.", 80, ["10.0.0.5"]) is None  # spellings normalise
    assert policy.refusal("www.example.com", 8080, ["10.0.0.5"]) is not None  # another port of it
    assert policy.refusal("metadata.internal", 80, ["169.254.169.254"]) is not None
    assert policy.refusal("mixed.example.org", 80, ["93.184.216.34", "127.0.0.1"]) is not None
    assert policy.refusal("public.example.org", 80, ["93.184.216.34"]) is None
    included = Boundary(
        ["http://www.example.com/"],
        rules(domains={"include": ["www.example.com", "intranet.local"]}, ports={"intranet.local": {"include": [80]}}),
    )
    policy = AddressPolicy(included, ["http://www.example.com/"])
    assert policy.refusal("intranet.local", 80, ["10.0.0.5"]) is None
    assert policy.refusal("intranet.local", 8443, ["10.0.0.5"]) is not None
    for spelling in ("::ffff:127.0.0.1", "0.0.0.0", "::", "fd00::1", "100.64.0.1"):
        assert policy.refusal("x.example.org", 80, [spelling]) is not None, spelling


def page(text: str, links: list[str] = (), head: str = "") -> str:
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return f"<html><head><title>{text}</title>{head}</head><body><p>{text}</p>{anchors}</body></html>"


def test_redirects_against_a_real_server(project, serve, tmp_path, solr) -> None:
    root = tmp_path / "site"
    (root / "docs").mkdir(parents=True)
    (root / "other").mkdir()
    second = tmp_path / "second"
    second.mkdir()
    site = serve(root)
    unsafe_site = serve(second, host="127.0.0.2")  # another loopback address: outside the boundary
    (second / "secret.html").write_text(page("secret"))
    links = [
        "/p301",
        "/p302",
        "/p303",
        "/p307",
        "/p308",
        "/out301",
        "/other302",
        "/other301",
        "/unsafe302",
        "/loop1",
        "/chain0",
        "/refresh-in.html",
        "/refresh-out.html",
    ]
    (root / "index.html").write_text(page("home", links))
    for name in ["t301", "t302", "t303", "t307", "t308", "refreshed"]:
        (root / "docs" / f"{name}.html").write_text(page(f"target {name}"))
    (root / "other" / "landing.html").write_text(page("landing outside the path rules", ["/other/deeper.html"]))
    (root / "other" / "deeper.html").write_text(page("deeper"))
    for status in (301, 302, 303, 307, 308):
        site.redirect(f"/p{status}", status, f"/docs/t{status}.html")
    site.redirect("/out301", 301, f"http://localhost:{site.port}/docs/t301.html")
    site.redirect("/other302", 302, "/other/landing.html")
    site.redirect("/other301", 301, "/other/landing.html")
    site.redirect("/unsafe302", 302, f"{unsafe_site.url}secret.html")
    site.redirect("/loop1", 302, "/loop2")
    site.redirect("/loop2", 302, "/loop1")
    for i in range(15):
        site.redirect(f"/chain{i}", 302, f"/chain{i + 1}")
    (root / "refresh-in.html").write_text(
        page("refresh in", head='<meta http-equiv="refresh" content="0; url=/docs/refreshed.html">')
    )
    (root / "refresh-out.html").write_text(
        page("refresh out", head=f'<meta http-equiv="refresh" content="0; url={unsafe_site.url}secret.html">')
    )

    name = f"redirects-{uuid.uuid4().hex[:8]}"
    project.source(
        name,
        f"""seeds = ["{site.url}index.html"]
max_depth = 3
paths = {{ "127.0.0.1" = {{ exclude = ["/other/"] }} }}
""",
    )
    result = project.scrapy("crawl", name, "-s", "REDIRECT_MAX_TIMES=10")
    assert result.returncode == 0, result.stderr[-3000:]
    table = project.table()
    status = lambda path: table.get(name, site.url + path.lstrip("/"))["status"]  # noqa: E731
    assert [status(f"/p{s}") for s in (301, 302, 303, 307, 308)] == [301, 302, 303, 307, 308]
    assert table.get(name, site.url + "p301")["reason"] == f"moved to {site.url}docs/t301.html"
    out301 = table.get(name, site.url + "out301")
    assert out301["status"] == 301 and "outside the boundary" in out301["reason"], out301["reason"]
    assert table.get(name, f"http://localhost:{site.port}/docs/t301.html")["status"] == Status.EXCLUDED_DOMAIN
    assert status("/other301") == 301  # permanent: not followed out of the path rules
    assert status("/other302") == 302  # temporary: followed although /other/ is excluded
    assert status("/other/landing.html") == 200, {
        k: v
        for k, v in table.get(name, site.url + "other/landing.html").items()
        if k in ("reason", "state", "frontier", "request")
    }
    assert table.get(name, site.url + "other/deeper.html")["status"] == Status.EXCLUDED_PATH  # its links: boundary as usual
    assert status("/unsafe302") == 302  # followed by the policy; its target refused by the guard:
    assert table.get(name, f"{unsafe_site.url}secret.html")["status"] == Status.INTERNAL_ADDRESS
    assert status("/loop1") == Status.REDIRECT_LOOP or status("/loop2") == Status.REDIRECT_LOOP
    chain = [table.get(name, site.url + f"chain{i}") for i in range(15)]
    assert [row["status"] for row in chain if row] == [302] * 10 + [Status.REDIRECT_LOOP]  # bounded at 10
    assert status("/docs/refreshed.html") == 200
    assert unsafe_site.requests == []  # the guard held: nothing reached 127.0.0.2
    assert not [host for _m, host, _p in site.requests if host.startswith("localhost")]
    indexed = {doc["url"] for doc in solr_docs(solr, name)}
    expected = {site.url + p for p in ["index.html", "other/landing.html", "refresh-in.html", "refresh-out.html"]}
    expected |= {f"{site.url}docs/{n}.html" for n in ["t301", "t302", "t303", "t307", "t308", "refreshed"]}
    assert indexed == expected


def test_redirect_to_127_0_0_2_from_an_out_of_boundary_host(project, serve, tmp_path, solr) -> None:
    """in-boundary page -302-> 127.0.0.3 (outside by a path rule, host admitted: followed)
    -302-> 127.0.0.2 (outside, not admitted, loopback): a second step out of the boundary, not
    followed (before this rule, the internal-address guard refused it: status 941)."""
    roots = {name: tmp_path / name for name in ("seed", "hop", "target")}
    for root in roots.values():
        root.mkdir()
    seed = serve(roots["seed"])
    hop = serve(roots["hop"], host="127.0.0.3")
    target = serve(roots["target"], host="127.0.0.2")
    (roots["target"] / "secret.html").write_text(page("secret"))
    (roots["seed"] / "index.html").write_text(page("home", ["/go"]))
    seed.redirect("/go", 302, f"{hop.url}elsewhere")
    hop.redirect("/elsewhere", 302, f"{target.url}secret.html")
    name = f"ssrf-{uuid.uuid4().hex[:8]}"
    project.source(
        name,
        f"""seeds = ["{seed.url}index.html"]
domains = {{ include = ["127.0.0.1", "127.0.0.3"] }}
paths = {{ "127.0.0.3" = {{ include = ["/docs/"] }} }}
""",
    )
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    table = project.table()
    assert table.get(name, f"{seed.url}go")["status"] == 302
    assert hop.paths() == ["/robots.txt", "/elsewhere"]  # followed out of the boundary (robots.txt checked first)
    hop_row = table.get(name, f"{hop.url}elsewhere")
    assert hop_row["status"] == Status.EXCLUDED_DOMAIN and "a second step outside the boundary" in hop_row["reason"]
    assert table.get(name, f"{target.url}secret.html") is None
    assert target.requests == []
    assert {doc["url"] for doc in solr_docs(solr, name)} == {f"{seed.url}index.html"}
