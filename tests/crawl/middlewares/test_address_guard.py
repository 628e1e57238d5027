"""AddressGuardMiddleware built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a
source), request level only: ``process_request``, a coroutine awaiting only asyncio's own
``getaddrinfo``, run with ``asyncio.run``. Nothing connects anywhere: the guard decides before
the network.

What it checks: a loopback, private or link-local address (literal, or a name resolving to one:
``localhost``, a decimal IPv4 spelling, an IPv4-mapped IPv6 address) is refused with 941 unless
the source's seeds or domain and port rules admit that host *and port*; a host:port the rules
admit passes without a DNS look-up (a name that does not even resolve passes); a name that does
not resolve is refused with 931; public addresses pass; schemes other than http(s) get 900, and
a file source reads only below its seeds' folders (903), links resolved. Robots.txt fetches pass
the same guard. The resolver that checks the address connected to: tests/e2e/test_resolver.py."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest
from scrapy import Request
from scrapy.core.downloader.middleware import DownloaderMiddlewareManager
from scrapy.exceptions import CannotResolveHostError, DownloadTimeoutError
from scrapy.http import Response
from scrapy.settings import default_settings
from scrapy.utils.misc import build_from_crawler
from twisted.internet.defer import succeed
from twisted.internet.error import DNSLookupError

from searchcrawl import settings as project_settings
from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.meta import ROBOTS_REQUEST
from searchcrawl.crawl.middlewares import address_guard
from searchcrawl.crawl.middlewares.address_guard import AddressGuardMiddleware, connection_refusal
from searchcrawl.crawl.resolver import GuardedHostnameResolver
from searchcrawl.rules.lifecycle import Event
from searchcrawl.rules.status_codes import Status
from tests.components import source_crawler

SEED = "http://127.0.0.1:8765/"  # a site on a loopback address: the source's own, admitted
INTERNAL = [
    "http://127.0.0.2:8765/",
    "http://[::1]:8765/",
    "http://10.0.0.5/",
    "http://192.168.1.1/admin",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::ffff:127.0.0.1]:8765/",
    "http://localhost:8765/",  # names are resolved: these resolve to 127.0.0.1
    "http://localhost.:8765/",
    "http://2130706433:8765/",
]


def guard(tmp_path: Path, source: str) -> AddressGuardMiddleware:
    return build_from_crawler(AddressGuardMiddleware, source_crawler(tmp_path, source))


def check(middleware: AddressGuardMiddleware, url: str, **meta: object) -> Status | None:
    """None when the request may go on to the network, else the status it is refused with."""
    try:
        assert asyncio.run(middleware.process_request(Request(url, meta=meta))) is None
    except RequestRefused as refused:
        assert refused.outcome.event == Event.EXCLUDED
        return Status(refused.status)
    return None


@pytest.fixture
def seeded(tmp_path: Path) -> AddressGuardMiddleware:
    """A source of one site on 127.0.0.1:8765, no domain include rule: only the seed's site is admitted."""
    return guard(tmp_path, f'seeds = ["{SEED}"]\n')


def test_the_seeds_site_may_be_internal(seeded: AddressGuardMiddleware) -> None:
    assert check(seeded, SEED + "docs/a.html") is None


def test_internal_addresses_the_source_does_not_admit_are_refused(seeded: AddressGuardMiddleware) -> None:
    refused = {url: check(seeded, url) for url in [*INTERNAL, "http://127.0.0.1:8766/", "http://127.0.0.1/"]}
    assert refused == dict.fromkeys(refused, Status.INTERNAL_ADDRESS)  # another port of the seed's host too


def test_the_reason_names_the_address(seeded: AddressGuardMiddleware) -> None:
    with pytest.raises(RequestRefused) as refused:
        asyncio.run(seeded.process_request(Request("http://localhost:8765/")))
    assert refused.value.reason == (
        "localhost:8765 is an internal address (127.0.0.1) and the source's domain and port rules do not admit it"
    )


def test_a_robots_txt_fetch_passes_the_same_guard(seeded: AddressGuardMiddleware) -> None:
    assert check(seeded, "http://127.0.0.2:8765/robots.txt", **{ROBOTS_REQUEST: True}) == Status.INTERNAL_ADDRESS
    assert check(seeded, SEED + "robots.txt", **{ROBOTS_REQUEST: True}) is None


def test_public_addresses_pass_and_names_that_do_not_resolve_are_refused(seeded: AddressGuardMiddleware) -> None:
    assert check(seeded, "http://93.184.216.34/") is None  # a literal public address: no look-up
    assert check(seeded, "http://no-such-host.invalid/") == Status.DNS_FAILURE


def test_only_http_and_https_reach_the_network(seeded: AddressGuardMiddleware) -> None:
    for url in ("ftp://127.0.0.1:8765/", "file:///etc/passwd", "s3://bucket/key", "data:text/plain,x"):
        assert check(seeded, url) == Status.EXCLUDED_SCHEME, url


def test_hosts_and_ports_the_rules_admit_may_be_internal_and_are_not_looked_up(tmp_path: Path) -> None:
    middleware = guard(
        tmp_path,
        f"""seeds = ["{SEED}"]
domains = {{ include = ["127.0.0.1", "intranet.test"] }}
ports = {{ "intranet.test" = {{ include = [8080] }} }}
""",
    )
    assert check(middleware, "http://127.0.0.1:8766/") is None  # every port of an included host
    assert check(middleware, "http://127.0.0.1/") is None
    # admitted: passes without a look-up (this name resolves nowhere) ...
    assert check(middleware, "http://intranet.test:8080/") is None
    # ... but on a port the rules do not admit it is looked up like any other name
    assert check(middleware, "http://intranet.test:9090/") == Status.DNS_FAILURE
    assert check(middleware, "http://127.0.0.2:8765/") == Status.INTERNAL_ADDRESS


def test_a_file_source_reads_only_below_its_seeds_folders(tmp_path: Path) -> None:
    docs, secret = tmp_path / "docs", tmp_path / "secret"
    docs.mkdir()
    secret.mkdir()
    (docs / "index.html").write_text("<html>docs</html>")
    (docs / "sub").mkdir()
    (docs / "sub" / "page.html").write_text("<html>page</html>")
    (secret / "passwd.html").write_text("<html>secret</html>")
    (docs / "escape.html").symlink_to(secret / "passwd.html")  # inside the folder, pointing out
    middleware = guard(tmp_path, f'seeds = ["file://{docs}/index.html"]\n')
    assert check(middleware, f"file://{docs}/index.html") is None
    assert check(middleware, f"file://{docs}/sub/page.html") is None
    assert check(middleware, f"file://{secret}/passwd.html") == Status.EXCLUDED_PATH
    assert check(middleware, f"file://{docs}/escape.html") == Status.EXCLUDED_PATH
    assert check(middleware, f"file://{docs}/../secret/passwd.html") == Status.EXCLUDED_PATH
    assert check(middleware, "http://127.0.0.2/") == Status.INTERNAL_ADDRESS  # http requests: the guard as usual


def test_a_prefix_rule_admits_pages_but_never_an_internal_address(tmp_path: Path) -> None:
    """``include_prefix = ["intranet."]`` matches intranet.attacker.test too, a name anyone can
    point at an internal address (a hostile review): such a host is looked up, and refused."""
    from searchcrawl.rules.addresses import AddressPolicy

    middleware = guard(
        tmp_path,
        'seeds = ["http://intranet.corp.test/"]\ndomains = { include = ["corp.test"], include_prefix = ["intranet."] }\n',
    )
    policy: AddressPolicy = middleware.policy
    assert policy.admits("wiki.corp.test", 80)  # a suffix rule names the owner's domain
    assert not policy.admits("intranet.attacker.test", 80)
    assert policy.refusal("intranet.attacker.test", 80, ["10.0.0.5"]) is not None
    assert policy.refusal("intranet.attacker.test", 80, ["93.184.216.34"]) is None  # a public site: the boundary's call


def test_a_link_local_address_is_reached_only_as_a_seeds_own_site(tmp_path: Path) -> None:
    """169.254.169.254 is a cloud's metadata service: a domain rule that admits a host does not
    admit it at that address, nor the address itself; a seed naming it does."""
    from searchcrawl.rules.addresses import is_internal_address

    ruled = guard(tmp_path, 'seeds = ["http://intranet.corp.test/"]\ndomains = { include = ["corp.test", "169.254.169.254"] }\n')
    assert ruled.policy.refusal("meta.corp.test", 80, ["169.254.169.254"]) is not None
    assert ruled.policy.refusal("meta.corp.test", 80, ["10.0.0.5"]) is None  # private: the suffix rule admits it
    assert check(ruled, "http://169.254.169.254/latest/meta-data/") == Status.INTERNAL_ADDRESS
    assert check(ruled, "http://[fe80::1]/") == Status.INTERNAL_ADDRESS
    seeded = guard(tmp_path, 'seeds = ["http://169.254.169.254/latest/"]\n')
    assert check(seeded, "http://169.254.169.254/latest/meta-data/") is None
    # 6to4 forms of 127.0.0.1 and 169.254.169.254 (routed there by a 6to4 relay) are internal too
    assert is_internal_address("2002:7f00:1::") and is_internal_address("2002:a9fe:a9fe::1")
    assert check(ruled, "http://[2002:a9fe:a9fe::1]/") == Status.INTERNAL_ADDRESS


def test_a_metadata_address_is_reached_only_at_a_seeds_literal_address(tmp_path: Path) -> None:
    """Review of issue 91 point 1: a seed's name that resolved to a public address when the
    source was saved and to 169.254.169.254 when crawled counted as a seed's own site, so the
    metadata service was fetched; and metadata addresses that are not link-local (AWS's IPv6
    fd00:ec2::254, Alibaba's 100.100.100.200) or spelt in an IPv6 form that carries the IPv4
    address ([::169.254.169.254], NAT64's [64:ff9b::a9fe:a9fe]) passed as any site."""
    named = guard(tmp_path, 'seeds = ["http://meta.corp.test/latest/"]\n')
    refused = named.policy.refusal("meta.corp.test", 80, ["169.254.169.254"])
    assert refused is not None and refused[0] == Status.INTERNAL_ADDRESS and "metadata" in refused[1]
    assert named.policy.refusal("meta.corp.test", 80, ["10.0.0.5"]) is None  # a seed's site on a private address
    ruled = guard(tmp_path, 'seeds = ["http://intranet.corp.test/"]\ndomains = { include = ["corp.test"] }\n')
    for seed, address in [
        ("http://[fd00:ec2::254]/latest/", "fd00:ec2::254"),
        ("http://100.100.100.200/latest/", "100.100.100.200"),
        ("http://168.63.129.16/machine/", "168.63.129.16"),
    ]:
        assert ruled.policy.refusal("meta.corp.test", 80, [address]) is not None, address
        assert check(ruled, seed) == Status.INTERNAL_ADDRESS, seed
        assert check(guard(tmp_path, f'seeds = ["{seed}"]\n'), seed) is None, seed  # the source file names it
    ruled = guard(tmp_path, 'seeds = ["http://intranet.corp.test/"]\ndomains = { include = ["corp.test", "169.254.169.254"] }\n')
    for spelling in ["[::169.254.169.254]", "[64:ff9b::a9fe:a9fe]", "[::ffff:0:169.254.169.254]"]:
        assert check(ruled, f"http://{spelling}/latest/") == Status.INTERNAL_ADDRESS, spelling


def test_a_solrclouds_live_nodes_are_read_again_and_unknown_ones_fail_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 91 review: the live nodes were read once, so a node joining later was crawled; and
    when the cluster state could not be read (403, timed out) the crawl went on unguarded. They
    are read again every SEARCHCRAWL_SOLR_NODES_REFRESH seconds; while they cannot be learnt,
    every internal address on a port of SOLR_URL's nodes is refused (944), with a WARNING."""
    from searchcrawl.crawl.middlewares import address_guard
    from searchcrawl.rules.addresses import OwnService

    joined = OwnService("a node of Solr", "10.0.0.8", 8983)
    answers: list[object] = [None, ([joined], {}), None]
    monkeypatch.setattr(address_guard, "live_solr_nodes", lambda url, auth: answers.pop(0))
    monkeypatch.setattr(address_guard, "deferToThread", lambda call, *args: succeed(call(*args)))
    middleware = build_from_crawler(
        AddressGuardMiddleware,
        source_crawler(
            tmp_path,
            'seeds = ["http://10.0.0.7:8983/"]\n',
            SOLR_URL="http://solr1.corp.test:8983/solr/docs",
            SEARCHCRAWL_CRAWL_SOLR_PORTS=True,  # else Solr's port is refused at every internal address
        ),
    )
    policy = middleware.policy
    assert policy.refusal("10.0.0.7", 8983, ["10.0.0.7"]) is None  # a seed's site, before asking
    with caplog.at_level(logging.INFO, logger=address_guard.__name__):
        middleware.engine_started()  # asks at once, then every minute
        assert middleware.refresh is not None and middleware.refresh.running and middleware.refresh.interval == 60
        refused = policy.refusal("10.0.0.7", 8983, ["10.0.0.7"])
        assert refused is not None and refused[0] == Status.OWN_SERVICE and "live nodes are unknown" in refused[1]
        assert policy.refusal("solr-alias.corp.test", 8983, ["10.0.0.9"]) is not None
        assert policy.refusal("10.0.0.7", 8984, ["10.0.0.7"]) is not None  # no seed's site: internal (941)
        assert policy.refusal("www.example.org", 8983, ["93.184.216.34"]) is None  # public: not guessed
        middleware.learn_solr_nodes()  # a minute later: the node that joined is known
        assert policy.refusal("10.0.0.7", 8983, ["10.0.0.7"]) is None
        assert policy.refusal("10.0.0.8", 8983, ["10.0.0.8"]) is not None
        middleware.learn_solr_nodes()
    assert policy.refusal("10.0.0.8", 8983, ["10.0.0.8"]) is not None  # known nodes stay refused
    said = [record.levelname for record in caplog.records if "live nodes" in record.getMessage()]
    assert said == ["WARNING", "INFO", "WARNING"]  # when failing closed begins, and ends
    middleware.engine_stopped()
    assert not middleware.refresh.running


def test_the_services_names_are_resolved_again_with_the_live_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile review of issue 91 point 1: SOLR_URL's and the other services' names were resolved
    once, when the crawl started; Tika moved to another address was crawled there. They are
    resolved again each time the live nodes are read."""
    from searchcrawl.crawl.middlewares import address_guard
    from searchcrawl.rules.addresses import OwnService

    tika = OwnService("Tika", "tika.corp.test", 9998)
    moves = iter(["10.0.0.21", "10.0.0.22"])
    monkeypatch.setattr(address_guard, "own_services_now", lambda get: ([tika], {"tika.corp.test": [next(moves)]}))
    monkeypatch.setattr(address_guard, "live_solr_nodes", lambda url, auth: ([], {}))
    monkeypatch.setattr(address_guard, "deferToThread", lambda call, *args: succeed(call(*args)))
    middleware = guard(tmp_path, 'seeds = ["http://10.0.0.21:9998/", "http://10.0.0.22:9998/"]\n')
    middleware.learn_solr_nodes()
    assert middleware.policy.refusal("10.0.0.21", 9998, ["10.0.0.21"]) is not None
    assert middleware.policy.refusal("10.0.0.22", 9998, ["10.0.0.22"]) is None  # not there yet
    middleware.learn_solr_nodes()  # a minute later: Tika answers at another address
    refused = middleware.policy.refusal("10.0.0.22", 9998, ["10.0.0.22"])
    assert refused is not None and refused[0] == Status.OWN_SERVICE


def test_through_a_proxy_an_admitted_name_is_resolved_for_the_own_services(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hostile review of issue 91 point 1: through a [proxy] the crawl's resolver sees only the
    proxy's name, so a name the domain rules admit, resolving to Solr's address, was never
    checked by address. It is resolved here: one of ours is refused (944); a name that does not
    resolve here is the proxy's to resolve; a no_proxy host goes direct, through the resolver."""
    answers = {"solr-alias.corp.test": "10.0.0.30", "wiki.corp.test": "10.0.0.31"}
    asked: list[str] = []

    async def getaddrinfo(self: object, host: str, port: int, **kwargs: object) -> list[tuple[object, ...]]:
        asked.append(host)
        if host not in answers:
            raise OSError("no such name")
        return [(2, 1, 6, "", (answers[host], port))]

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", getaddrinfo)
    source = (
        'seeds = ["http://wiki.corp.test/"]\ndomains = { include = ["corp.test"] }\n'
        '[proxy]\nurl = "http://proxy.corp.test:3128"\nno_proxy = ["direct.corp.test"]\n'
    )
    crawler = source_crawler(
        tmp_path, source, SOLR_URL="http://10.0.0.30:8983/solr/docs", HTTPPROXY_ENABLED=True, SEARCHCRAWL_CRAWL_SOLR_PORTS=True
    )
    middleware = build_from_crawler(AddressGuardMiddleware, crawler)
    assert check(middleware, "http://solr-alias.corp.test:8983/solr/docs/select?q=*:*") == Status.OWN_SERVICE
    assert check(middleware, "http://wiki.corp.test:8983/page") is None  # another machine's 8983
    assert check(middleware, "http://outside.corp.test:8983/") is None  # the proxy resolves it
    asked.clear()
    assert check(middleware, "http://direct.corp.test:8983/") is None  # direct: the resolver checks it
    assert asked == []


def test_the_browser_gets_an_admitted_names_addresses_checked_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The crawl's resolver checks what an admitted name connects to; the rendering browser
    resolves names itself, so for it an admitted name is looked up before it may load it (a
    reviewer found an included name pointing at 169.254.169.254 loaded by the browser)."""
    from searchcrawl.crawl.middlewares.address_guard import check_url

    async def getaddrinfo(self: object, host: str, port: int, **kwargs: object) -> list[tuple[object, ...]]:
        return [(2, 1, 6, "", ("169.254.169.254", port))]

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", getaddrinfo)
    policy = guard(tmp_path, 'seeds = ["http://intranet.corp.test/"]\ndomains = { include = ["corp.test"] }\n').policy
    assert asyncio.run(check_url(policy, "http://meta.corp.test/latest/")) is None  # the crawl: its resolver decides
    refused = asyncio.run(check_url(policy, "http://meta.corp.test/latest/", connects_itself=True))
    assert refused is not None and refused[0] == Status.INTERNAL_ADDRESS and "link-local" in refused[1]


def test_the_installations_own_services_are_refused_whatever_the_source_says(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 91: a source whose seed is SOLR_URL's own /select indexed Solr's CSV of every
    document as one public page. Every node of SOLR_URL, Tika, the web application, the model
    servers and the metrics endpoints are refused (944), as a seed, under any name or address of
    this machine; by host and port: a site on another port of the same host is crawled."""
    solr = "http://127.0.0.1:8765/solr/searchcrawl"
    dump = f"{solr}/select?q=*:*&wt=csv&fl=url,content"
    middleware = build_from_crawler(
        AddressGuardMiddleware,
        source_crawler(
            tmp_path,
            f'seeds = ["{dump}", "http://127.0.0.1:8766/"]\nindex_dynamic_pages = true\n'
            'domains = { include = ["127.0.0.1", "localhost"] }\n',
            SOLR_URL=f"http://127.0.0.1:8764/solr/searchcrawl,{solr}",
            SEARCHCRAWL_TIKA_URL="http://localhost:8767",
            SEARCHCRAWL_ANSWERS_URL="http://127.0.0.1:8768/v1",
            SEARCHCRAWL_METRICS_PORT=8769,
        ),
    )
    with caplog.at_level("DEBUG", logger="searchcrawl.crawl.middlewares.address_guard"):
        assert check(middleware, dump) == Status.OWN_SERVICE
    assert "Refused (127.0.0.1:8765 is a node of Solr of this installation" in caplog.text
    for url in [
        "http://127.0.0.1:8764/solr/admin/cores",  # every node of SOLR_URL
        "http://localhost:8765/solr/searchcrawl/select",  # a name of it
        "http://127.0.0.2:8765/",  # another address of this machine
        "http://[::1]:8765/",
        "http://0.0.0.0:8765/",
        "http://127.0.0.1:8767/tika",  # Tika, named localhost
        "http://127.0.0.1:8768/v1/chat/completions",  # the answers' model server
        "http://127.0.0.1:8769/metrics",  # a crawl's metrics
        "http://127.0.0.1:8080/admin/source-files",  # the web application (its default address)
    ]:
        assert check(middleware, url) == Status.OWN_SERVICE, url
    assert check(middleware, "http://127.0.0.1:8766/docs/") is None  # a site beside them
    assert check(middleware, "http://localhost:8770/") is None


def test_solr_in_a_container_is_refused_at_its_container_address(tmp_path: Path) -> None:
    """Hostile review of issue 91 point 1: Solr behind Docker's -p 8983:8983 (SOLR_URL on
    localhost) was crawled at its container address, which no name gives. By default every
    internal address on a port of SOLR_URL's nodes is refused (944); SEARCHCRAWL_CRAWL_SOLR_PORTS
    gives them back to the sources."""
    dump = "http://172.17.0.2:8983/solr/core/select?q=*:*&wt=csv&fl=url,content"
    source = f'seeds = ["{dump}", "http://172.17.0.2:8984/"]\nindex_dynamic_pages = true\n'
    default = build_from_crawler(
        AddressGuardMiddleware, source_crawler(tmp_path, source, SOLR_URL="http://localhost:8983/solr/core")
    )
    assert check(default, dump) == Status.OWN_SERVICE
    assert check(default, "http://172.17.0.2:8984/") is None  # a site beside it
    allowed = build_from_crawler(
        AddressGuardMiddleware,
        source_crawler(tmp_path, source, SOLR_URL="http://localhost:8983/solr/core", SEARCHCRAWL_CRAWL_SOLR_PORTS=True),
    )
    assert check(allowed, dump) is None


def test_the_first_requests_wait_for_the_cluster_state_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI run on a loaded machine fetched the cluster's other node (its select, 200): the
    first requests waited for the asking's chain to be "called", which it is once its first
    step (the services' names resolved) has a result, while the cluster state was still being
    read on its thread. They wait for the live nodes' answer itself."""
    from twisted.internet.defer import Deferred

    from searchcrawl.crawl.middlewares import address_guard
    from searchcrawl.rules.addresses import OwnService

    other = OwnService("a node of Solr", "127.0.0.1", 8984)
    state: Deferred[object] = Deferred()
    threads = {"own_services_now": lambda get: succeed(([], {})), "live_solr_nodes": lambda url, auth: state}
    monkeypatch.setattr(address_guard, "deferToThread", lambda call, *args: threads[call.__name__](*args))
    seed = "http://127.0.0.1:8984/solr/docs/select?q=*:*"
    crawler = source_crawler(
        tmp_path, f'seeds = ["{seed}"]\nindex_dynamic_pages = true\n', SOLR_URL="http://127.0.0.1:8983/solr/docs"
    )
    middleware = build_from_crawler(AddressGuardMiddleware, crawler)
    middleware.engine_started()
    assert middleware.asked and not middleware.answered
    middleware.learn_solr_nodes()  # a refresh while the question is open asks nothing more

    async def first_request() -> Status | None:
        crawled = asyncio.ensure_future(middleware.process_request(Request(seed)))
        for _ in range(20):  # the event loop turns; the request waits on the cluster state
            await asyncio.sleep(0)
        assert not crawled.done()
        state.callback(([other], {}))
        try:
            await crawled
        except RequestRefused as refused:
            return Status(refused.status)
        return None

    assert asyncio.run(first_request()) == Status.OWN_SERVICE
    assert middleware.answered and not middleware.in_question
    middleware.engine_stopped()


def test_a_failure_while_taking_the_answer_in_holds_no_request_for_ever(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The question closes whatever happens while its answer is taken in: the waiting requests go
    on (and are checked) and the next refresh asks again, instead of every request waiting."""
    from twisted.internet.defer import Deferred

    from searchcrawl.crawl.middlewares import address_guard
    from searchcrawl.rules.addresses import OwnService

    state: Deferred[object] = Deferred()
    threads = {"own_services_now": lambda get: succeed(([], {})), "live_solr_nodes": lambda url, auth: state}
    monkeypatch.setattr(address_guard, "deferToThread", lambda call, *args: threads[call.__name__](*args))
    middleware = build_from_crawler(AddressGuardMiddleware, source_crawler(tmp_path, f'seeds = ["{SEED}"]\n'))
    middleware.engine_started()

    def broken(*services: object) -> None:
        raise RuntimeError("taking the answer in failed")

    async def first_request() -> bool:
        waiting = asyncio.ensure_future(middleware.solr_nodes_learnt())
        for _ in range(20):  # the event loop turns; the request waits on the cluster state
            await asyncio.sleep(0)
        assert not waiting.done()
        monkeypatch.setattr(middleware.policy.own, "add", broken)
        state.addErrback(lambda failure: None)  # the chain's failure, said here, not at collection
        state.callback(([OwnService("a node of Solr", "127.0.0.1", 8984)], {}))
        await asyncio.wait_for(waiting, 30)
        return True

    assert asyncio.run(first_request())
    assert middleware.answered and not middleware.in_question
    middleware.engine_stopped()


# --- a refusal at the connection (issue 99, 4) -----------------------------------------------------

REFUSAL = "searchcrawl.crawl.middlewares.address_guard.ConnectionRefusalMiddleware"
RETRY = "searchcrawl.crawl.middlewares.retry.RetryAfterMiddleware"
OWN_SOLR = (Status.OWN_SERVICE, "127.1:8983 is a node of Solr of this installation (127.0.0.1:8983)")


def refusing_resolver() -> GuardedHostnameResolver:
    """The crawl's resolver as it is after it gave a connection to 127.1:8983 no address (its
    reactor never asked: only its memory is read)."""
    resolver = GuardedHostnameResolver(SimpleNamespace(nameResolver=None), default_settings.DNSCACHE_SIZE)
    resolver.remember_refusal("127.1", 8983, OWN_SOLR)
    return resolver


def test_a_dns_failure_of_a_connection_the_resolver_refused_is_the_guards_refusal() -> None:
    """Scrapy 2.13+ raises a DNS failure as its own CannotResolveHostError (Twisted's
    DNSLookupError inside): both are read; by host and port; a name that does not resolve, or
    another failure, is no refusal."""
    remembered = refusing_resolver().remembered
    lookup = "no results for hostname lookup: 127.1"
    assert connection_refusal("http://127.1:8983/solr/", CannotResolveHostError(lookup), remembered) == OWN_SOLR
    assert connection_refusal("http://127.1:8983/x", DNSLookupError(lookup), remembered) == OWN_SOLR
    assert connection_refusal("http://127.1:8984/", CannotResolveHostError(lookup), remembered) is None
    assert connection_refusal("http://127.1/", CannotResolveHostError(lookup), remembered) is None
    assert connection_refusal("http://nowhere.test:8983/", CannotResolveHostError("nowhere.test"), remembered) is None
    assert connection_refusal("http://127.1:8983/", DownloadTimeoutError("slow"), remembered) is None


def test_a_connection_refused_by_the_resolver_is_recorded_944_and_never_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through Scrapy's own middleware manager, with the project's retry middleware and the
    guard's at their places in DOWNLOADER_MIDDLEWARES: the own service refused at the connection
    (``http://127.1:<Solr's port>/``, a seed, so not looked up before) fails with the guard's
    status, downloaded once; a name that does not resolve is still retried. The middlewares whose
    process_exception gives back what a request held stand above the guard's: they still run."""
    orders = project_settings.DOWNLOADER_MIDDLEWARES
    chain = {name: orders[name] for name in (RETRY, REFUSAL)}
    crawler = source_crawler(tmp_path, DOWNLOADER_MIDDLEWARES_BASE={}, DOWNLOADER_MIDDLEWARES=chain, RETRY_TIMES=2)
    crawler.spider = crawler.spidercls.from_crawler(crawler)  # what Crawler.crawl() does first
    manager = DownloaderMiddlewareManager.from_crawler(crawler)
    monkeypatch.setattr(address_guard, "guarded_resolver", refusing_resolver)
    downloads: list[str] = []

    async def unresolved(request: Request) -> Response:
        downloads.append(request.url)
        raise CannotResolveHostError(f"no results for hostname lookup: {urlsplit(request.url).hostname}")

    with pytest.raises(RequestRefused) as refused:
        asyncio.run(manager.download_async(unresolved, Request("http://127.1:8983/solr/admin/cores")))
    assert (refused.value.status, refused.value.reason) == OWN_SOLR and refused.value.outcome.event == Event.EXCLUDED
    assert downloads == ["http://127.1:8983/solr/admin/cores"]
    retried = asyncio.run(manager.download_async(unresolved, Request("http://nowhere.test/")))
    assert isinstance(retried, Request) and retried.meta["retry_times"] == 1
    releasing = [
        "searchcrawl.crawl.middlewares.site_concurrency.SiteConcurrencyMiddleware",
        "searchcrawl.crawl.middlewares.fleet.FleetPolitenessMiddleware",
        "searchcrawl.crawl.middlewares.form_login.FormLoginGateMiddleware",
    ]
    assert all(orders[name] > orders[REFUSAL] > orders[RETRY] for name in releasing)
