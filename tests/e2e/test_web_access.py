"""Secure search on the web pages, against a real Solr core holding documents with access tokens
(added with pysolr) and a real LDAP directory (slapd, tests/directory_server.py): each searcher
signs in and sees exactly the documents they may read, with the counts, facets and suggestions
of those only; a visitor who is not signed in sees public documents; the sign-in's wrong password,
slowing down and a directory that does not answer; the single sign-on header believed from a
trusted proxy only, through a real uvicorn; the administration's explain-access page."""

from __future__ import annotations

import html
import random
import re
import string
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pysolr
import pytest
import requests
from scrapy.settings import Settings
from starlette.applications import Starlette
from starlette.testclient import TestClient

from searchcrawl.access.directory_setting import directory_of
from searchcrawl.access.tokens import LEVEL_FIELDS, PUBLIC
from searchcrawl.search.labels import type_label
from searchcrawl.system.secrets import LDAP_BIND_PASSWORD
from searchcrawl.web.app import create_app
from searchcrawl.web.sign_on.sessions import FREE_FAILURES
from tests.conftest import Project, wait_for
from tests.directory_server import DirectoryServer, SlowProxy
from tests.e2e.test_web import login, web_config
from tests.e2e.test_web_proxies import served
from tests.web.test_searcher import csrf_of, sign_in, signed_in

HEADER = "x-remote-user"


def letters(count: int) -> str:
    return "".join(random.choices(string.ascii_lowercase, k=count))


def misspelt(word: str) -> str:
    """``word`` with its last letter changed: a near miss the spellcheck corrects."""
    return word[:-1] + ("a" if word[-1] != "a" else "b")


def unique_word(solr: pysolr.Solr) -> str:
    """ "quay" and ten letters, whose first five letters (else six, seven) begin no word of a title
    in the Solr core yet. The suggestion tests type those prefixes, and every corpus of a
    worker's tests stays in its core: two corpora whose words began alike ("quayrn...") offered
    each other's titles, and a test failed one run in a few hundred."""
    for length in (5, 6, 7):
        for _ in range(100):
            word = "quay" + letters(10)
            if solr.search(f"title_words:{word[:length]}", rows=0).hits == 0:
                return word
    raise AssertionError("every prefix of seven letters is taken in this Solr core")


class Corpus:
    """Documents of a source of their own, all holding ``word`` (a word no other test's
    documents hold), each readable by whom its name says; ``secret`` is a word only alice's own
    document holds, ``typo`` that word misspelt."""

    def __init__(self, solr: pysolr.Solr, server: DirectoryServer) -> None:
        self.source = f"access-{uuid.uuid4().hex[:8]}"
        self.word = unique_word(solr)
        self.secret = "brigantine" + letters(6)
        self.typo = misspelt(self.secret)
        finance, accounting = server.group_dn("finance"), server.group_dn("accounting")
        # name -> (mimetype, allow levels (the document's first), deny)
        self.access: dict[str, tuple[str, list[list[str]], list[str]]] = {
            "public": ("text/html", [[PUBLIC]], []),
            "alice-own": ("application/pdf", [["user:alice"]], []),
            "bob-own": ("text/plain", [["user:bob"]], []),
            # hers, were it not for her group accounting: a searcher whose groups were not read
            # would be shown it
            "alice-not-accounting": ("text/plain", [["user:alice"]], [f"group:{accounting}"]),
            "finance": ("application/pdf", [[f"group:{finance}"]], []),  # alice: accounting is in finance
            "all-staff": ("text/html", [["group:all-staff"]], []),  # alice (through finance) and bob
            "uid-1002": ("text/plain", [["uid:1002"]], []),  # bob's uidNumber
            "gid-2000": ("text/plain", [["gid:2000"]], []),  # alice's primary group
            "staff-not-bob": ("text/html", [["group:all-staff"]], ["user:bob"]),  # deny wins
            "folder-of-accounting": ("text/html", [[PUBLIC], [f"group:{accounting}"]], []),  # an open file in a closed folder
            "carol-own": ("text/html", [["user:carol"]], []),
            "nobody": ("text/html", [], []),  # indexed without access fields: shown to no one
        }
        self.readers = {
            None: {"public"},
            "alice": {"public", "alice-own", "finance", "all-staff", "gid-2000", "staff-not-bob", "folder-of-accounting"},
            "bob": {"public", "all-staff", "uid-1002", "bob-own"},
            "carol": {"public", "carol-own"},
        }
        documents = []
        for name, (mimetype, levels, deny) in self.access.items():
            url = f"https://intranet.example/{self.source}/{name}"
            text = f"The {self.word} document {name} of the harbour office."
            if name == "alice-own":
                text += f" Only here: {self.secret}."
            doc: dict[str, object] = {
                "id": f"{self.source}!{url}",
                "url": url,
                "source": self.source,
                "title": f"{name} ({self.word})",
                "content": text,
                "mimetype": mimetype,
                "host": "intranet.example",
            }
            if levels:
                for i, field in enumerate(LEVEL_FIELDS):
                    doc[field] = levels[i] if i < len(levels) else [PUBLIC]
                doc["access_deny"] = deny
            documents.append(doc)
        solr.add(documents)

    def name_of(self, url: str) -> str:
        return url.rsplit("/", 1)[1]


@pytest.fixture
def server(directory_server: DirectoryServer) -> DirectoryServer:
    return directory_server  # this worker's slapd (tests/directory_server.py)


def settings_of(server: DirectoryServer, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The settings of a searchcrawl using ``server`` (its service account's password in the
    environment, as the secrets mechanism reads it)."""
    values = server.settings()
    monkeypatch.setenv(LDAP_BIND_PASSWORD, values.pop(LDAP_BIND_PASSWORD))
    return Settings(values)


@pytest.fixture
def settings(server: DirectoryServer, monkeypatch: pytest.MonkeyPatch) -> Settings:
    return settings_of(server, monkeypatch)


@pytest.fixture
def corpus(solr: pysolr.Solr, server: DirectoryServer) -> Corpus:
    return Corpus(solr, server)


def app_of(project: Project, settings: Settings, **changes: object) -> Starlette:
    """The application on the project's Solr, with the directory of ``settings``."""
    config = web_config(project)
    config.directory = directory_of(settings)
    assert config.directory is not None
    for key, value in changes.items():
        setattr(config, key, value)
    return create_app(config)


def web_of(project: Project, settings: Settings, **changes: object) -> TestClient:
    return TestClient(app_of(project, settings, **changes), base_url="http://127.0.0.1")


def shown(page: str) -> set[str]:
    return {url.rsplit("/", 1)[1] for url in re.findall(r'<li class="hit">\s*<h2><a href="([^"]*)"', page)}


def facet(page: str, name: str) -> dict[str, int]:
    section = re.search(rf'<section class="facet" id="facet-{name}">(.*?)</section>', page, re.DOTALL)
    if section is None:
        return {}
    return {label: int(count) for label, count in re.findall(r'>([^<]+)</a> <span class="count">(\d+)</span>', section[1])}


def test_each_searcher_sees_exactly_their_documents(
    project: Project, settings: Settings, corpus: Corpus, server: DirectoryServer
) -> None:
    for user, readable in corpus.readers.items():
        web = web_of(project, settings)
        if user is not None:
            assert sign_in(web, user, server.passwords[user]) == 303
        page = web.get("/", params={"q": corpus.word, "source": corpus.source})
        assert page.status_code == 200
        assert signed_in(page.text) == user
        assert shown(page.text) == readable, user
        count = len(readable)
        assert f"{count} document{'s match' if count != 1 else ' matches'}" in page.text
        assert facet(page.text, "source") == {corpus.source: count}
        types: dict[str, int] = {}
        for name in readable:  # shown by name ("Web page", "Text")
            types[type_label(corpus.access[name][0])] = types.get(type_label(corpus.access[name][0]), 0) + 1
        assert facet(page.text, "type") == types, user
        # a type chosen: its hits are what they may read of it, and the type facet, counted
        # without its own filter but with the trimming, still counts only what they may read
        for mimetype in {corpus.access[name][0] for name in readable}:
            chosen = web.get("/", params={"q": corpus.word, "source": corpus.source, "type": mimetype})
            assert shown(chosen.text) == {name for name in readable if corpus.access[name][0] == mimetype}, (user, mimetype)
            assert facet(chosen.text, "type") == types, (user, mimetype)
            assert facet(chosen.text, "source") == {corpus.source: types[type_label(mimetype)]}, (user, mimetype)
        # paging: a page of two hits, as many pages as the readable documents fill
        paged = web_of(project, settings, rows=2)
        if user is not None:
            assert sign_in(paged, user, server.passwords[user]) == 303
        first = paged.get("/", params={"q": corpus.word, "source": corpus.source})
        assert len(shown(first.text)) == min(2, count)
        assert ('rel="next"' in first.text) == (count > 2)


def test_a_suggestion_from_a_document_the_searcher_cannot_read_is_not_offered(
    project, settings: Settings, corpus: Corpus, server: DirectoryServer
) -> None:
    alice, bob = web_of(project, settings), web_of(project, settings)
    assert sign_in(alice, "alice", server.passwords["alice"]) == 303
    assert sign_in(bob, "bob", server.passwords["bob"]) == 303
    offered = alice.get("/", params={"q": corpus.typo})
    assert f">{corpus.secret}</a>" in offered.text  # the word is there to suggest, to alice
    # two words, one of them a near miss of a word they may read (issue 72 (1)): Solr's own try
    # of "<word> <secret>" found the word's documents, and bob was asked "Did you mean" it
    two = f"{misspelt(corpus.word)} {corpus.typo}"
    assert f">{corpus.word} {corpus.secret}</a>" in alice.get("/", params={"q": two}).text
    for web in (bob, web_of(project, settings)):
        for query in (corpus.typo, two, f"{misspelt(corpus.word)} -{corpus.typo}"):
            page = web.get("/", params={"q": query})
            assert "No document matches" in page.text and corpus.secret not in page.text, query
        assert shown(web.get("/", params={"q": corpus.secret}).text) == set()


def test_sign_in_against_the_directory(project: Project, settings: Settings, server: DirectoryServer) -> None:
    web = web_of(project, settings)
    assert sign_in(web, "alice", "bob-password") == 403
    assert sign_in(web, "nobody-here", "x") == 403
    assert sign_in(web, "alice", server.passwords["alice"]) == 303
    page = web.get("/")
    assert signed_in(page.text) == "alice"
    assert web.post("/logout", data={"csrf": csrf_of(page.text)}, follow_redirects=False).status_code == 303
    assert signed_in(web.get("/").text) is None
    guesser = web_of(project, settings)
    assert [sign_in(guesser, "bob", f"guess{n}") for n in range(FREE_FAILURES)] == [403] * FREE_FAILURES
    assert sign_in(guesser, "bob", server.passwords["bob"]) == 429


def test_the_single_sign_on_header_through_a_real_server(project: Project, settings: Settings, corpus: Corpus) -> None:
    """Served by uvicorn as `scrapy web` serves it: the header from a trusted proxy on 127.0.0.1
    names the searcher; with 127.0.0.1 not among the proxies, the same request (naming a proxy in
    X-Forwarded-For) is a visitor's."""
    params = {"q": corpus.word, "source": corpus.source}
    relayed = {HEADER: "bob", "x-forwarded-for": "198.51.100.7"}
    trusted = app_of(project, settings, user_header=HEADER, proxies=("127.0.0.1",))
    with served(trusted) as site:
        page = requests.get(site + "/", params=params, headers=relayed, timeout=30)
        assert signed_in(page.text) == "bob" and shown(page.text) == corpus.readers["bob"]
    untrusted = app_of(project, settings, user_header=HEADER, proxies=("10.0.0.2",))
    with served(untrusted) as site:
        spoofed = {HEADER: "bob", "x-forwarded-for": "10.0.0.2"}
        page = requests.get(site + "/", params=params, headers=spoofed, timeout=30)
        assert signed_in(page.text) is None and shown(page.text) == {"public"}


PARTNER = "bob@partner.example"


def test_another_entry_and_a_name_the_directory_folds_are_not_bob(
    project: Project, settings: Settings, corpus: Corpus, server: DirectoryServer
) -> None:
    """uid=bob@partner.example (its own password, no group) signed in as user:bob, and a fullwidth
    'ｂob' as bob himself, both with bob's documents: now each is the entry of exactly its name."""
    params = {"q": corpus.word, "source": corpus.source}
    with server.added_person(PARTNER, "partner-password"):
        web = web_of(project, settings)
        assert sign_in(web, PARTNER, "partner-password") == 303
        page = web.get("/", params=params)
        assert signed_in(page.text) == PARTNER and shown(page.text) == {"public"}
        assert sign_in(web_of(project, settings), "\uff42ob", server.passwords["bob"]) == 403
        trusted = app_of(project, settings, user_header=HEADER, proxies=("127.0.0.1",))
        with served(trusted) as site:
            partner = requests.get(site + "/", params=params, headers={HEADER: PARTNER}, timeout=30)
            assert shown(partner.text) == {"public"}
            bob = requests.get(site + "/", params=params, headers={HEADER: "bob"}, timeout=30)
            assert shown(bob.text) == corpus.readers["bob"]


@pytest.fixture
def hardened(tmp_path: Path) -> Iterator[DirectoryServer]:
    """A slapd where a user reads only their own entry, and groups only the service account."""
    server = DirectoryServer(tmp_path / "slapd", private_groups=True).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("service_account", [True, False])
def test_a_sign_in_where_users_read_only_their_own_entry_keeps_the_denies_of_their_groups(
    project: Project, corpus: Corpus, hardened: DirectoryServer, monkeypatch: pytest.MonkeyPatch, service_account: bool
) -> None:
    """The sign-in read alice's principals through her own bind: no group, and a document denying
    her group accounting was shown for the cache's lifetime. With a service account her groups
    are read as it reads them; without one, none to see makes her principals partial: no
    document with a deny token is shown."""
    settings = settings_of(hardened, monkeypatch)
    if not service_account:
        settings.set("SEARCHCRAWL_LDAP_BIND_DN", "")
    web = web_of(project, settings)
    assert sign_in(web, "alice", hardened.passwords["alice"]) == 303
    seen = shown(web.get("/", params={"q": corpus.word, "source": corpus.source}).text)
    assert "alice-not-accounting" not in seen
    if service_account:
        assert seen == corpus.readers["alice"]
    else:  # her own document, not her groups' (unknown), nothing that denies anyone
        assert seen == {"public", "alice-own", "gid-2000"}  # her entry's own gidNumber


def test_a_slow_directory_holds_neither_a_visitors_search_nor_a_searcher_past_the_deadline(
    project: Project, settings: Settings, corpus: Corpus, server: DirectoryServer
) -> None:
    """Each lookup through a directory answering just within the timeout took 36-40 s and held
    one of the threads every page shares: a visitor's search waited 22 s. Now each lookup has
    one deadline (three timeouts) and runs in threads of the directory's own."""
    params = {"q": corpus.word, "source": corpus.source}
    with SlowProxy(server.url, delay=1.6) as slow:
        settings.set("SEARCHCRAWL_LDAP_URL", slow.url)
        settings.set("SEARCHCRAWL_LDAP_TIMEOUT", 2)  # the deadline: 6 s
        trusted = app_of(project, settings, user_header=HEADER, proxies=("127.0.0.1",))
        with served(trusted) as site, ThreadPoolExecutor(50) as pool:

            def signed_in_search(_n: int) -> tuple[float, str]:
                began = time.monotonic()
                page = requests.get(site + "/", params=params, headers={HEADER: "alice"}, timeout=120)
                return time.monotonic() - began, page.text

            searches = [pool.submit(signed_in_search, n) for n in range(50)]
            wait_for(lambda: slow.connections >= 30, timeout=30, what="the searchers' lookups to be under way")
            began = time.monotonic()
            visitor = requests.get(site + "/", params=params, timeout=120)
            assert time.monotonic() - began < 4, "a visitor's search waited for searchers' lookups"
            assert shown(visitor.text) == {"public"}
            for search in searches:
                took, page = search.result()
                assert took < 6 + 6, took  # the deadline, and slack for fifty at once on a busy machine
                assert "Only public documents are shown" in page and shown(page) == {"public"}


def test_a_directory_that_does_not_answer_fails_closed(
    project: Project, corpus: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory of its own, stopped while alice is signed in: she sees public documents only
    and is told why; a sign-in fails with the reason shown."""
    server = DirectoryServer(tmp_path / "slapd").start()
    try:
        settings = settings_of(server, monkeypatch)
        settings.set("SEARCHCRAWL_PRINCIPALS_CACHE_SECONDS", 0)  # asked again at each search
        web = web_of(project, settings)
        assert sign_in(web, "alice", server.passwords["alice"]) == 303
        assert shown(web.get("/", params={"q": corpus.word, "source": corpus.source}).text) == corpus.readers["alice"]
    finally:
        server.stop()
    page = web.get("/", params={"q": corpus.word, "source": corpus.source})
    assert signed_in(page.text) == "alice" and "Only public documents are shown" in page.text
    assert shown(page.text) == {"public"}
    other = web_of(project, settings)
    token = re.search(r'name="signin_token" value="([^"]+)"', other.get("/login").text)
    assert token is not None
    down = other.post("/login", data={"signin_token": token[1], "username": "bob", "password": server.passwords["bob"]})
    assert down.status_code == 503 and "The directory does not answer" in down.text


def test_the_explain_access_page_shows_the_commands_report(project: Project, settings: Settings, corpus: Corpus) -> None:
    project.data_dir.mkdir(parents=True, exist_ok=True)
    web = web_of(project, settings)
    csrf = login(web)
    url = f"https://intranet.example/{corpus.source}/finance"
    for user, decision in (("alice", "GRANTED"), ("bob", "REFUSED"), ("-", "REFUSED")):
        page = web.post("/admin/explain-access", data={"csrf": csrf, "user": user, "url": url})
        assert page.status_code == 200
        report = html.unescape(re.search(r'<pre class="explanation">(.*?)</pre>', page.text, re.DOTALL)[1])  # type: ignore[index]
        assert f"Source {corpus.source}: {url}" in report and f"decision: {decision}" in report, report
        if user == "alice":
            assert "memberOf path: cn=finance <- cn=accounting <- uid=alice (member)" in report
    nowhere = web.post("/admin/explain-access", data={"csrf": csrf, "user": "alice", "url": url + "-nowhere"})
    assert "No source holds" in nowhere.text


def test_the_explain_access_page_answers_the_urls_of_every_source_as_the_command_does(
    project: Project, settings: Settings, solr: pysolr.Solr, server: DirectoryServer
) -> None:
    """Issue 72: the page refused sql://, mail:// and smb:// URLs the command answered; both now
    take the same URLs (access/explanation.py's explainable_url) and print the same report."""
    project.data_dir.mkdir(parents=True, exist_ok=True)
    source = f"agents-{uuid.uuid4().hex[:8]}"
    urls = {
        "sql": f"sql://{source}/notes/42",
        "mail": f"mail://{source}/INBOX/%3Cmessage-1%40mail.example%3E",
        "smb": "smb://files.example/share/finance/plan.txt",
    }
    solr.add(
        [
            {
                "id": f"{source}!{url}",
                "url": url,
                "source": source,
                "title": kind,
                LEVEL_FIELDS[0]: ["user:alice"],
                "access_deny": [],
            }
            for kind, url in urls.items()
        ]
    )
    web = web_of(project, settings)
    csrf = login(web)
    for url in urls.values():
        page = web.post("/admin/explain-access", data={"csrf": csrf, "user": "alice", "url": url})
        assert page.status_code == 200
        found = re.search(r'<pre class="explanation">(.*?)</pre>', page.text, re.DOTALL)
        assert found is not None, page.text
        command = project.scrapy("explain-access", "alice", url, **server.settings())
        assert command.returncode == 0, command.stderr[-2000:]
        assert html.unescape(found[1]).strip() == command.stdout.strip()
        assert f"Source {source}: {url}" in command.stdout and "decision: GRANTED" in command.stdout
    junk = web.post("/admin/explain-access", data={"csrf": csrf, "user": "alice", "url": "javascript:alert(1)"})
    refused = project.scrapy("explain-access", "alice", "javascript:alert(1)", **server.settings())
    assert "Give a user name and an absolute URL as its document is indexed" in junk.text
    assert refused.returncode == 2 and "expected an absolute URL as its document is indexed" in refused.stderr


def test_the_why_page_runs_under_the_viewers_trimming(
    project: Project, settings: Settings, corpus: Corpus, server: DirectoryServer
) -> None:
    """A document the viewer may not read gets the answer a missing one gets; signed in as a
    searcher who may read it, the administrator sees why it is a hit."""
    project.data_dir.mkdir(parents=True, exist_ok=True)
    web = web_of(project, settings)
    login(web)

    def answer(name: str) -> str:
        url = f"https://intranet.example/{corpus.source}/{name}"
        page = web.get("/admin/why", params={"q": corpus.secret, "id": url})
        assert page.status_code == 200
        return html.unescape(" ".join(re.findall(r'class="why-answer">(.*?)</(?:p|dl)>', page.text, re.DOTALL)))

    hidden, missing = answer("alice-own"), answer("nowhere-at-all")
    assert "not among the hits this search can show" in hidden and hidden == missing
    assert "does not match the query" in answer("public")  # readable, but without the secret word
    assert sign_in(web, "alice", server.passwords["alice"]) == 303
    mine = web.get(
        "/admin/why", params={"q": corpus.secret, "id": f"{corpus.source}!https://intranet.example/{corpus.source}/alice-own"}
    )
    shown_text = html.unescape(re.sub(r"<[^>]+>", " ", mine.text))
    assert "hit 1 of this search" in shown_text, re.search(r"Rank.{0,200}", shown_text, re.DOTALL)
    # the word as indexed: stemmed (a random ending such as "y" may become "i")
    assert re.search(r"‘brigantine\w*’ in content: ", shown_text), shown_text
    assert "signed in as <code>alice</code>" in mine.text
