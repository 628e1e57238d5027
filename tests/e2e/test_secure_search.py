"""Secure search against a real Solr and a real directory (slapd): each searcher finds exactly
what they may read (hits, facet counts, suggestions), `scrapy search --as`, `scrapy
explain-access`, and Solr's filters agree with ``decide`` on random accesses."""

from __future__ import annotations

import json
import random
import string
import uuid

import pysolr
import pytest

from searchcrawl.access.decision import Principal, Principals, decide
from searchcrawl.access.explanation import ACCESS_COLUMN, FROM_INDEX, FROM_TABLE, explain_access, held_documents
from searchcrawl.access.ldap_directory import LdapDirectory
from searchcrawl.access.tokens import Access, Grant, Level
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.rules.urls import agent_url
from searchcrawl.search.query import matching, search_params
from searchcrawl.search.request import SearchRequest
from searchcrawl.search.results import run_search
from searchcrawl.search.trimmed_index import TrimmedIndex
from tests.directory_server import DirectoryServer
from tests.e2e.test_web_access import misspelt

GROUPS = "ou=groups,dc=example,dc=org"


def access(*allow: str, deny: tuple[str, ...] = (), above: tuple[str, ...] = ()) -> Access:
    made = Access.of([Grant.of(token, "test") for token in allow], [Grant.of(token, "test") for token in deny])
    return made.within(Level("folder", tuple(Grant.of(token, "test") for token in above))) if above else made


# title -> (access or None (indexed without access fields), mimetype); alice: accounting <
# finance < all-staff, staff (gid 2000), loop-a/b; bob: all-staff, developers (gid 2001)
DOCUMENTS: dict[str, tuple[Access | None, str]] = {
    "public notice": (Access.public("test"), "text/html"),
    "finance plan": (access("group:finance"), "application/pdf"),
    "finance by dn": (access(f"group:cn=finance,{GROUPS}"), "application/pdf"),
    "staff sheet": (access("gid:2000"), "text/plain"),
    "bob's notes": (access("user:bob"), "text/plain"),
    "all staff but alice": (access("group:all-staff", deny=("user:alice",)), "text/html"),
    "accounting in hr": (access("group:accounting", above=("group:hr",)), "text/html"),
    "developers' code": (access("gid:2001", "uid:1003"), "text/x-python"),
    "never indexed with access": (None, "text/html"),
}
SEES = {
    None: {"public notice"},
    "alice": {"public notice", "finance plan", "finance by dn", "staff sheet"},
    "bob": {"public notice", "bob's notes", "all staff but alice", "developers' code"},
    "carol": {"public notice", "developers' code"},
}


def letters(count: int, seed: str) -> str:
    chooser = random.Random(seed)
    return "".join(chooser.choice(string.ascii_lowercase) for _ in range(count))


def index_documents(solr: pysolr.Solr, source: str, word: str) -> None:
    docs = []
    for number, (title, (held, mimetype)) in enumerate(DOCUMENTS.items()):
        url = f"http://secure.test/{source}/{number}"
        doc: dict[str, object] = {"id": f"{source}!{url}", "url": url, "display_url": url, "source": source, "title": title}
        doc.update(mimetype=mimetype, content=f"The {word} of {title}.", **(held.fields() if held else {}))
        docs.append(doc)
    solr.add(docs)


def directory_of_server(server: DirectoryServer) -> LdapDirectory:
    return server.searchers()


def test_each_searcher_finds_exactly_their_documents_with_their_counts(
    solr_url: str, solr: pysolr.Solr, directory_server: DirectoryServer
) -> None:
    source, word = f"secure-{uuid.uuid4().hex[:8]}", "quokka" + letters(6, "counts")
    index_documents(solr, source, word)
    directory = directory_of_server(directory_server)
    client = SolrIndex(solr_url, timeout=30)
    for user, expected in SEES.items():
        principals = directory.principals(user) if user else Principals.anonymous()
        page = run_search(TrimmedIndex(client, principals), SearchRequest(word, 1, (("source", source),)), rows=20)
        assert {hit.title for hit in page.hits} == expected, user
        assert page.total == len(expected)
        counts = {value.value: value.count for value in page.facets["type"]}
        wanted: dict[str, int] = {}
        for title in expected:
            wanted[DOCUMENTS[title][1]] = wanted.get(DOCUMENTS[title][1], 0) + 1
        assert counts == wanted, user
        assert {value.value: value.count for value in page.facets["source"]} == {source: len(expected)}
        # paging follows: one a page, each page full, as many pages as documents
        second = run_search(TrimmedIndex(client, principals), SearchRequest(word, 2, (("source", source),)), rows=1)
        assert second.pages == len(expected) and len(second.hits) == (1 if len(expected) > 1 else 0)


def test_a_suggestion_only_from_what_the_searcher_may_read(
    solr_url: str, solr: pysolr.Solr, directory_server: DirectoryServer
) -> None:
    source, word = f"secure-{uuid.uuid4().hex[:8]}", "wombat" + letters(8, uuid.uuid4().hex)
    url = f"http://secure.test/{source}/secret"
    solr.add(
        [
            {
                "id": f"{source}!{url}",
                "url": url,
                "source": source,
                "title": "Secret",
                "content": f"The {word} project.",
                **access("group:finance").fields(),
            }
        ]
    )
    typo = misspelt(word)
    client = SolrIndex(solr_url, timeout=30)
    visitor = run_search(TrimmedIndex(client, Principals.anonymous()), SearchRequest(typo))
    assert visitor.total == 0 and visitor.suggestions == []  # the word exists, in what they may not read
    alice = run_search(TrimmedIndex(client, directory_of_server(directory_server).principals("alice")), SearchRequest(typo))
    assert alice.total == 0 and [text for text, _url in alice.suggestions] == [word]


def test_scrapy_search_as_a_directory_user(project, solr: pysolr.Solr, directory_server: DirectoryServer) -> None:
    source, word = f"secure-{uuid.uuid4().hex[:8]}", "quokka" + letters(6, "command")
    index_documents(solr, source, word)
    for user, expected in SEES.items():
        who = ["--as", user] if user else []
        result = project.scrapy("search", word, "--source", source, "--rows", "20", *who, **directory_server.settings())
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0] == f"{matching(len(expected))} {word!r}"
        assert {line.split(". ", 1)[1] for line in lines[1:] if line[:1].isdigit()} == expected, user
    no_directory = project.scrapy("search", word, "--as", "alice")
    assert no_directory.returncode != 0 and "SEARCHCRAWL_LDAP_URL" in no_directory.stderr + no_directory.stdout
    down = project.scrapy("search", word, "--source", source, "--as", "alice", SEARCHCRAWL_LDAP_URL="ldap://127.0.0.1:9")
    assert down.returncode == 0 and "did not answer" in down.stderr and "public documents only" in down.stderr
    assert down.stdout.splitlines()[0] == f"1 document matches {word!r}"


def test_scrapy_explain_access(project, solr: pysolr.Solr, directory_server: DirectoryServer) -> None:
    source, word = f"secure-{uuid.uuid4().hex[:8]}", "quokka" + letters(6, "explain")
    index_documents(solr, source, word)
    url = f"http://secure.test/{source}/5"  # "all staff but alice"
    alice = project.scrapy("explain-access", "alice", url, **directory_server.settings())
    assert alice.returncode == 0, alice.stderr
    lines = alice.stdout.splitlines()
    assert (
        lines[0].startswith("Searcher alice: ") and "  uid:1001  <- uidNumber of uid=alice,ou=people,dc=example,dc=org" in lines
    )
    assert f"Source {source}: {url}" in lines
    assert "      allow group:all-staff  <- index: access_allow" in lines
    assert "    deny user:alice  <- index: access_deny" in lines
    assert lines[-1] == (
        "  decision: REFUSED: denied: user:alice (index: access_deny), the searcher's own (uid of uid=alice,ou=people,dc=example,dc=org)"
    )
    bob = project.scrapy("explain-access", "bob", url, **directory_server.settings()).stdout.splitlines()
    assert bob[-1] == "  decision: GRANTED: granted: group:all-staff (index: access_allow)"
    assert f"  group:all-staff  <- cn of cn=all-staff,{GROUPS}; memberOf path: cn=all-staff <- uid=bob (uniqueMember)" in bob
    nowhere = project.scrapy("explain-access", "-", "http://secure.test/none", **directory_server.settings())
    assert nowhere.stdout.splitlines()[-1] == "No source holds http://secure.test/none in the index: nothing to decide."


POOL = [
    "public",
    *(f"user:u{i}" for i in range(6)),
    *(f"group:g{i}" for i in range(8)),
    *(f"uid:{1000 + i}" for i in range(4)),
    *(f"gid:{2000 + i}" for i in range(4)),
    *(f"sid:S-1-5-21-1-2-3-{1100 + i}" for i in range(4)),
]


def random_access(chooser: random.Random) -> Access:
    levels = []
    for number in range(chooser.choice([1, 1, 2, 3, 5])):  # 5: folded into the index's 4
        tokens = chooser.sample(POOL, chooser.randint(1, 4))
        levels.append(Level(f"level {number}", tuple(Grant.of(token, "random") for token in tokens)))
    deny = tuple(Grant.of(token, "random") for token in chooser.sample(POOL[1:], chooser.choice([0, 0, 0, 1, 2])))
    # an ordered ACL's denies after its first allow entries, overridden by those (ntfs.py)
    late = tuple(Grant.of(token, "random") for token in chooser.sample(POOL[1:], chooser.choice([0, 0, 1, 2])))
    early = tuple(Grant.of(token, "random") for token in chooser.sample(POOL[1:], chooser.randint(1, 3))) if late else ()
    return Access(tuple(levels), deny, late_deny=late, overriding=early)


def index_random_accesses(solr: pysolr.Solr, chooser: random.Random, name: str, count: int) -> tuple[str, dict[str, Access]]:
    """``count`` documents of a new source, each with a random access: (source, id -> access)."""
    source = f"{name}-{uuid.uuid4().hex[:8]}"
    accesses = {f"{source}!{number}": random_access(chooser) for number in range(count)}
    solr.add([{"id": key, "url": key, "source": source, "title": "t", **held.fields()} for key, held in accesses.items()])
    return source, accesses


def found_by(client: SolrIndex, principals: Principals, source: str) -> set[str]:
    """The ids of ``source``'s documents a trimmed search finds for ``principals``."""
    params = search_params(rows=1000, source=source)
    params["fl"] = "id"
    return {doc["id"] for doc in TrimmedIndex(client, principals).search("*:*", params).docs}


def test_solrs_filters_agree_with_decide_on_random_accesses(solr_url: str, solr: pysolr.Solr) -> None:
    chooser = random.Random(55)
    source, accesses = index_random_accesses(solr, chooser, "agree", 300)
    client = SolrIndex(solr_url, timeout=30)
    for round_number in range(25):
        tokens = chooser.sample(POOL[1:], chooser.randint(0, 8))
        principals = Principals.of(f"searcher{round_number}", [Principal(token, "random") for token in tokens])
        found = found_by(client, principals, source)
        expected = {key for key, held in accesses.items() if decide(held, principals).granted}
        assert found == expected, (tokens, sorted(found ^ expected)[:5])
    assert 0 < len(expected) < len(accesses)  # the last searcher reads some, not all


def test_incomplete_principals_agree_with_decide_no_document_with_a_deny_token(solr_url: str, solr: pysolr.Solr) -> None:
    chooser = random.Random(5555)
    source, accesses = index_random_accesses(solr, chooser, "partial", 200)
    client = SolrIndex(solr_url, timeout=30)
    for round_number in range(10):
        tokens = chooser.sample(POOL[1:], chooser.randint(0, 8))
        entries = [Principal(token, "random") for token in tokens]
        principals = Principals.of(f"searcher{round_number}", entries, partial="more than 1000 groups")
        found = found_by(client, principals, source)
        expected = {key for key, held in accesses.items() if decide(held, principals).granted}
        assert found == expected, (tokens, sorted(found ^ expected)[:5])
        assert not any(accesses[key].deny for key in found)
    assert expected  # some documents without a deny token are read


# tokens a hostile directory (a group's cn) or a hostile row may hold: query syntax, local
# parameters, parameter references, the terms parser's default separator, the longest token
HOSTILE = [
    "group:${fl}",  # a macro of Solr's: would read "group:id" from the search's fl
    "group:{!lucene}*:*",
    "group:$access_tokens",
    "group:${access_tokens}",
    "group:*",
    "group:a,b",
    "group:x y",
    'group:"quoted" \\ back',
    "group:} {!terms f=id v=$q}",
    "group:" + "l" * 1018,
]


def test_hostile_tokens_and_a_searcher_of_thousands_of_groups_are_matched_literally(solr_url: str, solr: pysolr.Solr) -> None:
    source = f"hostile-{uuid.uuid4().hex[:8]}"
    held = {f"{source}!{number}": access(token) for number, token in enumerate(HOSTILE)}
    held[f"{source}!deep"] = access("group:g4999")
    held[f"{source}!id-token"] = access("group:id")  # what the macro group:${fl} would expand to
    held[f"{source}!denied"] = access("public", deny=("group:$access_tokens",))
    held[f"{source}!public"] = Access.public("test")
    solr.add([{"id": key, "url": key, "source": source, "title": "t", **a.fields()} for key, a in held.items()])
    client = SolrIndex(solr_url, timeout=30)

    def found(principals: Principals) -> set[str]:
        params = search_params(rows=1000, source=source)
        params["fl"] = "id"
        return {doc["id"] for doc in TrimmedIndex(client, principals).search("*:*", params).docs}

    for number, token in enumerate(HOSTILE):  # each hostile principal finds its own document only
        principals = Principals.of("eve", [Principal(token, "a hostile cn")])
        expected = {f"{source}!{number}", f"{source}!denied", f"{source}!public"}
        if token == "group:$access_tokens":
            expected.discard(f"{source}!denied")
        assert found(principals) == expected, token
    assert found(Principals.anonymous()) == {f"{source}!denied", f"{source}!public"}
    # thousands of groups: past Solr's maxBooleanClauses (1024), the terms filter holds them all
    many = Principals.of("big", [Principal(f"group:g{i}", "test") for i in range(5000)])
    assert found(many) == {f"{source}!deep", f"{source}!denied", f"{source}!public"}
    assert f"{source}!id-token" in found(Principals.of("id", [Principal("group:id", "test")]))


def test_a_spelling_suggestion_spells_no_word_of_a_document_the_searcher_may_not_read(
    solr_url: str, solr: pysolr.Solr, directory_server: DirectoryServer
) -> None:
    """Issue 72 (1): a two-word query that finds nothing, one word a near miss of a word of a
    public page, the other of a word only finance's document holds, was answered "Did you mean
    <word> <secret>?": Solr tried the collation with /select's own mm, and it found the public page
    by its one word. Every word of a suggestion, under an operator, in a group or a phrase too,
    must be in a document the searcher may read."""
    source = f"spelt-{uuid.uuid4().hex[:8]}"
    word, secret = "harbour" + letters(8, uuid.uuid4().hex), "wombat" + letters(8, uuid.uuid4().hex)
    docs = []
    for name, held, text in (
        ("public", Access.public("test"), f"The {word} office."),
        ("finance", access("group:finance"), f"The {word} {secret} plan."),
    ):
        url = f"http://secure.test/{source}/{name}"
        docs.append({"id": f"{source}!{url}", "url": url, "source": source, "title": name, "content": text, **held.fields()})
    solr.add(docs)
    near, hidden = misspelt(word), misspelt(secret)
    client = SolrIndex(solr_url, timeout=30)
    directory = directory_of_server(directory_server)
    searchers = {None: Principals.anonymous(), **{user: directory.principals(user) for user in ("alice", "bob")}}
    queries = [
        f"{near} {hidden}",
        f"{near} -{hidden}",
        f"{near} NOT {hidden}",
        f"{near} !{hidden}",
        f"{near} ({hidden} OR {near})",
        f"{near} {hidden}~",
        f'"{near} {hidden}"',
        f"{near} content:{hidden}",
    ]
    offered: dict[str | None, list[str]] = {user: [] for user in searchers}
    for query in queries:
        for user, principals in searchers.items():
            page = run_search(TrimmedIndex(client, principals), SearchRequest(query))
            assert page.total == 0 or user == "alice", (user, query)  # her fuzzy query finds her word
            spelt = [text for text, _url in page.suggestions]
            assert user == "alice" or not any(secret in text for text in spelt), (user, query, spelt)
            offered[user] += spelt
    assert offered[None] == offered["bob"] == []  # a suggestion without the hidden word finds nothing
    # alice (through accounting, in finance) may read both words: her suggestions spell them
    assert f"{word} {secret}" in offered["alice"] and f"{word} -{secret}" in offered["alice"]
    # the readable word alone is still corrected, for everyone
    for principals in searchers.values():
        assert [text for text, _url in run_search(TrimmedIndex(client, principals), SearchRequest(near)).suggestions] == [word]


def test_whether_a_word_is_in_a_document_the_searcher_may_not_read_changes_no_spelling_suggestion(
    solr_url: str, solr: pysolr.Solr
) -> None:
    """Review of issue 72 (1): Solr corrects only words the index does not hold (its default
    suggest mode), and it counts every document's words, those the searcher may not read too. A
    word held only by finance's document was therefore never corrected, while a word held by no
    document was: a visitor typing a guessed word next to a public one ("layoff" next to
    "layout") learnt from "Did you mean" whether a hidden document holds it. Whether a hidden
    document holds the word typed must change nothing the searcher sees."""
    source = f"oracle-{uuid.uuid4().hex[:8]}"
    word = "harbour" + letters(8, uuid.uuid4().hex)  # public
    hidden = word[:-1] + ("q" if word[-1] != "q" else "x")  # one letter off, held by finance's document alone
    absent = word[:-1] + ("z" if word[-1] != "z" else "y")  # one letter off, held by no document
    docs = []
    for name, held, text in (
        ("public", Access.public("test"), f"The {word} office."),
        ("finance", access("group:finance"), f"The {hidden} plan."),
    ):
        url = f"http://secure.test/{source}/{name}"
        docs.append({"id": f"{source}!{url}", "url": url, "source": source, "title": name, "content": text, **held.fields()})
    solr.add(docs)
    client = SolrIndex(solr_url, timeout=30)
    visitor = Principals.anonymous()
    spelt = {
        typed: [text for text, _url in run_search(TrimmedIndex(client, visitor), SearchRequest(typed)).suggestions]
        for typed in (hidden, absent)
    }
    assert spelt[absent] == [word]  # a word no document holds is corrected to the public one
    assert spelt[hidden] == spelt[absent], "a word only a hidden document holds is told apart"


def test_a_macro_principal_reads_no_suggestion_either(solr_url: str, solr: pysolr.Solr) -> None:
    """The spelling suggestions' query is trimmed as the search is, Solr's macros off too: a
    principal group:${spellcheck.count} would read the suggestions of group:10's documents."""
    source, word = f"macro-{uuid.uuid4().hex[:8]}", "wombat" + letters(8, uuid.uuid4().hex)
    url = f"http://secure.test/{source}/secret"
    held = access("group:10").fields()
    solr.add([{"id": f"{source}!{url}", "url": url, "source": source, "title": "S", "content": f"The {word} plan.", **held}])
    typo = misspelt(word)
    client = SolrIndex(solr_url, timeout=30)
    eve = Principals.of("eve", [Principal("group:${spellcheck.count}", "a hostile cn")])
    found = run_search(TrimmedIndex(client, eve), SearchRequest(typo))
    assert found.total == 0 and found.suggestions == []
    ten = run_search(TrimmedIndex(client, Principals.of("ten", [Principal("group:10", "test")])), SearchRequest(typo))
    assert [text for text, _url in ten.suggestions] == [word]  # the suggestion is there for its readers


class Rows:
    """The document table as explain-access reads it (DocumentTable.get), a source's rows with the
    access column the crawl writes."""

    def __init__(self, rows: dict[tuple[str, str], dict[str, object]]) -> None:
        self.rows = rows

    def get(self, source: str, url: str) -> dict[str, object] | None:
        return self.rows.get((source, url))


def test_the_tables_access_with_its_origins_wins_over_the_index(solr_url: str, solr: pysolr.Solr) -> None:
    url = f"http://secure.test/{uuid.uuid4().hex[:8]}/pay.txt"
    recorded = Access(
        (Level("document", (Grant.of("group:finance", "POSIX ACL of /srv/hr/pay.txt: group:finance r--"),)),),
        (Grant.of("user:mallory", "POSIX ACL of /srv/hr/pay.txt: user:mallory ---"),),
    )
    solr.add([{"id": f"{source}!{url}", "url": url, "source": source, **recorded.fields()} for source in ("hr", "old-hr")])
    table = Rows({("hr", url): {"url": url, ACCESS_COLUMN: json.dumps(recorded.to_data())}})
    held = held_documents(SolrIndex(solr_url, timeout=30), table, url)
    assert [(each.source, each.where) for each in held] == [("hr", FROM_TABLE), ("old-hr", FROM_INDEX)]
    assert held[0].access == recorded
    lines = explain_access(Principals.of("alice", [Principal("group:finance", "a test")]), held, url)
    assert "      allow group:finance  <- POSIX ACL of /srv/hr/pay.txt: group:finance r--" in lines
    assert "      allow group:finance  <- index: access_allow" in lines
    assert lines.count("  decision: GRANTED: granted: group:finance (POSIX ACL of /srv/hr/pay.txt: group:finance r--)") == 1


def test_an_agents_document_is_explained_by_its_documented_url_and_by_the_url_search_prints(
    solr_url: str, solr: pysolr.Solr
) -> None:
    """Issue 91: agents index ``imap://mail/bob%2FINBOX%2F17%2F4`` (their key percent-encoded
    whole), the docs write ``imap://mail/bob/INBOX/17/4``, `scrapy search` prints the display URL:
    each finds the document, with its row of the document table; a web URL is taken as it is."""
    tag = uuid.uuid4().hex[:8]
    key = f"bob/INBOX-{tag}/17/4"
    stored = agent_url("imap", "mail", key)
    assert stored == f"imap://mail/bob%2FINBOX-{tag}%2F17%2F4"
    shown = f"imap://bob@127.0.0.1/INBOX-{tag};UIDVALIDITY=17/;UID=4"
    wiki = agent_url("dokuwiki", "wiki", f"ops:{tag}:start")
    recorded = Access.of([Grant.of("user:bob", "IMAP: bob/INBOX is bob's own mailbox")])
    web = f"http://secure.test/{tag}/a%2Fb"
    solr.add(
        [
            {"id": f"mail!{stored}", "url": stored, "display_url": shown, "source": "mail", **recorded.fields()},
            {"id": f"wiki!{wiki}", "url": wiki, "source": "wiki", **recorded.fields()},
            {"id": f"web!{web}", "url": web, "source": "web", **recorded.fields()},
        ]
    )
    index, table = (
        SolrIndex(solr_url, timeout=30),
        Rows({("mail", stored): {"url": stored, ACCESS_COLUMN: json.dumps(recorded.to_data())}}),
    )
    for asked in (stored, f"imap://mail/{key}", shown):
        held = held_documents(index, table, asked)
        assert [(each.source, each.url, each.where) for each in held] == [("mail", stored, FROM_TABLE)], asked
    assert [each.url for each in held_documents(index, None, f"dokuwiki://wiki/ops:{tag}:start")] == [wiki]
    assert held_documents(index, None, f"http://secure.test/{tag}/a/b") == []  # a web URL's %2F is its own


def test_a_query_computes_nothing_over_documents_the_searcher_may_not_read(solr_url: str, solr: pysolr.Solr) -> None:
    """A function in the query (edismax's ``_val_`` field, or a nested query) is computed over the
    whole index, whatever the trimming filters: ``_val_:"docfreq(content,'merger')"`` would add to
    a readable hit's score how many documents hold the word, hidden ones too. Searches allow neither."""
    source, word, secret = f"val-{uuid.uuid4().hex[:8]}", "harbour" + letters(8, uuid.uuid4().hex), "merger" + letters(8, "s")
    docs = []
    folder = letters(8, uuid.uuid4().hex)  # a path without a word of the probes (its words are searched: url_words)
    for name, held, text in (("public", Access.public("test"), word), ("hidden", access("group:board"), f"{word} {secret}")):
        url = f"http://secure.test/{folder}/{name}"
        docs.append({"id": f"{source}!{url}", "url": url, "source": source, "title": name, "content": text, **held.fields()})
    solr.add(docs)
    params = search_params(source=source) | {"fl": "id,score", "hl": "false"}
    index = TrimmedIndex(SolrIndex(solr_url, timeout=30), Principals.anonymous())

    def score(query: str, **changes: str) -> float:
        found = index.search(query, params | changes)
        assert [doc["id"] for doc in found.docs] == [docs[0]["id"]]  # only the public document, always
        return float(found.docs[0]["score"])

    plain = score(word)
    # the probe works where a client lets it: the hidden document's word shows in the score
    assert score(f'{word} _query_:"{{!func}}1000"', uf="* _query_") == pytest.approx(plain + 1000)
    for probe in (f"_val_:\"docfreq(content,'{secret}')\"", f'_query_:"{{!lucene}}content:{secret}"', "_val_:1000"):
        assert score(f"{word} {probe}") == pytest.approx(plain), probe
