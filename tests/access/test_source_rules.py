"""searchcrawl.access.source_rules and the [access] table of a source file: who may read a
document when the repository does not say, and the sources that refuse to start without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchcrawl.access.source_rules import AccessRule, DocumentAccess, SourceAccess
from searchcrawl.access.tokens import Access, AccessUnreadable, Grant
from searchcrawl.config.source import SourceError, SourceFile, load_source

RULES = SourceAccess(
    "source intranet",
    allow=("group:staff",),
    deny=("user:contractor1",),
    rules=(
        AccessRule(paths=("/hr/",), allow=("group:hr",)),
        AccessRule(patterns=(r"/board/.*\.pdf$",), allow=("group:board", "user:ceo"), deny=("group:interns",)),
        AccessRule(paths=("/hr/public/", "/news/"), allow=("public",)),  # after /hr/: never reached for /hr/public/
    ),
)


def tokens(access: Access) -> tuple[list[str], list[str]]:
    fields = access.fields()
    return fields["access_allow"], fields["access_deny"]


def test_the_first_rule_that_matches_wins_and_the_source_deny_applies_to_every_document() -> None:
    assert tokens(RULES.access_of("https://i.test/hr/pay.html")) == (["group:hr"], ["user:contractor1"])
    assert tokens(RULES.access_of("https://i.test/hr/public/a.html")) == (["group:hr"], ["user:contractor1"])
    assert tokens(RULES.access_of("https://i.test/board/2026/q1.pdf")) == (
        ["group:board", "user:ceo"],
        ["group:interns", "user:contractor1"],
    )
    assert tokens(RULES.access_of("https://i.test/news/today.html")) == (["public"], ["user:contractor1"])
    # no rule: the source-wide allow
    assert tokens(RULES.access_of("https://i.test/board/minutes.html")) == (["group:staff"], ["user:contractor1"])


def test_every_token_says_where_it_came_from() -> None:
    access = RULES.access_of("https://i.test/board/q1.pdf")
    assert access.levels[0].allow[0] == Grant(
        "group:board", "source intranet: [[access.rules]] #2 (pattern '/board/.*\\\\.pdf$') allow"
    )
    assert {grant.origin for grant in access.deny} == {
        "source intranet: [access] deny",
        "source intranet: [[access.rules]] #2 (pattern '/board/.*\\\\.pdf$') deny",
    }


def test_paths_match_the_decoded_path_not_the_query_or_another_host_part() -> None:
    assert tokens(RULES.access_of("https://i.test/h%72/pay.html"))[0] == ["group:hr"]  # /hr/ percent-encoded
    assert tokens(RULES.access_of("https://i.test/x?next=/hr/"))[0] == ["group:staff"]


def test_a_document_no_rule_covers_without_a_source_wide_allow_is_unreadable_never_public() -> None:
    rules = SourceAccess("source s", rules=(AccessRule(paths=("/hr/",), allow=("group:hr",)),))
    with pytest.raises(AccessUnreadable, match="no rule of the source's \\[access\\] table covers it"):
        rules.access_of("https://i.test/other.html")
    public = SourceAccess("source s", public=True, rules=rules.rules)
    assert public.access_of("https://i.test/other.html").is_public
    assert not public.access_of("https://i.test/hr/a").is_public


def test_a_web_source_without_access_is_public_and_an_agents_document_needs_one() -> None:
    assert DocumentAccess("source w").of("https://w.test/a").is_public
    with pytest.raises(AccessUnreadable, match="agent gave no access list"):
        DocumentAccess("source a", agent=True).of("repo://a/k", {}, "k")
    given = Access.of([Grant("uid:7", "ACL")], [Grant("uid:8", "ACL")]).to_data()
    access = DocumentAccess("source a", SourceAccess("source a", public=True, deny=("group:x",)), agent=True).of(
        "repo://a/k", {"access": given}, "k"
    )
    assert tokens(access) == (["uid:7"], ["group:x", "uid:8"])  # the reference's own, and the source's deny
    with pytest.raises(AccessUnreadable, match="broken ACL"):
        DocumentAccess("source a", agent=True).of("repo://a/k", {"access": given, "access_unreadable": "broken ACL"}, "k")
    # an agent's document without an access of its own: the source's rules, on /<key>
    rules = SourceAccess("source a", rules=(AccessRule(paths=("/hr/",), allow=("group:hr",)),))
    assert tokens(DocumentAccess("source a", rules, agent=True).of("repo://a/hr%2F1", {}, "hr/1"))[0] == ["group:hr"]


def load(tmp_path: Path, text: str):
    path = tmp_path / "s.toml"
    path.write_text(text)
    return load_source(SourceFile("s", str(path), path))


WEB = 'seeds = ["https://i.test/"]\n'
AUTH = '[[auth]]\norigins = ["https://i.test"]\ntype = "basic"\nuser = "u"\nsecret = "S"\n'


def test_the_access_table_is_read_and_its_tokens_normalised(tmp_path: Path) -> None:
    source = load(
        tmp_path,
        WEB + AUTH + '[access]\nallow = ["Group:Staff", "user:EXAMPLE\\\\Alice"]\ndeny = ["uid:007"]\n'
        '[[access.rules]]\npaths = ["/hr/"]\nallow = ["group:HR"]\n',
    )
    rules = source.source_access()
    assert rules is not None and rules.allow == ("group:staff", "user:alice") and rules.deny == ("uid:7",)
    assert rules.rules[0].allow == ("group:hr",)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (WEB + AUTH, "[[auth]] fetches its documents with credentials, so they are not public: add an [access] table"),
        (WEB + '[access]\nallow = ["staff"]\n', "key 'access.allow': 'staff' is not an access token"),
        (WEB + '[access]\ndeny = ["uid:x"]\npublic = true\n', "key 'access.deny': 'uid:x': uid takes a number"),
        (WEB + "[access]\n", "[access] needs 'public = true', 'allow' or [[access.rules]]"),
        (WEB + '[access]\npublic = true\nallow = ["group:a"]\n', "not both"),
        (WEB + '[access]\npublic = true\n[[access.rules]]\nallow = ["group:a"]\n', "needs 'paths' or 'patterns'"),
        (WEB + '[access]\npublic = true\n[[access.rules]]\npaths = ["/a/"]\n', "an access rule needs 'allow'"),
        (WEB + '[access]\npublic = true\n[[access.rules]]\npaths = ["a/"]\nallow = ["public"]\n', "starting with '/'"),
        (WEB + '[access]\npublic = true\n[[access.rules]]\npatterns = ["("]\nallow = ["public"]\n', "not a valid regular"),
        (WEB + "[access]\npublic = true\nopen = true\n", "unknown key 'open'"),
        (
            'type = "files"\n[files]\nroots = ["/srv"]\n[access]\npublic = true\n',
            "[access] does not apply to a files source: each file's POSIX permissions and ACL say who may read it",
        ),
        (
            'type = "agent"\nagent = "json_repository"\n[agent_options]\npath = "/x"\n',
            "does not say who may read its documents: add an [access] table (public = true, or allow = [...])",
        ),
    ],
)
def test_a_source_that_does_not_say_who_may_read_it_refuses_to_start_in_one_line(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(SourceError) as raised:
        load(tmp_path, text)
    assert error in str(raised.value) and "\n" not in str(raised.value)


def test_sources_that_need_no_access_table(tmp_path: Path) -> None:
    assert load(tmp_path, WEB).source_access() is None  # public, as before
    assert load(tmp_path, WEB + AUTH + "[access]\npublic = true\n").source_access() is not None
    files = load(tmp_path, 'type = "files"\n[files]\nroots = ["/srv"]\n')
    assert files.agent_class is not None and files.agent_class.gives_access


# Hostile URLs: a page the rules restrict, linked under a path that matches a looser rule as
# written, while a server resolves it to the restricted one (nginx decodes %2F and resolves the
# dot segments, merges slashes; IIS ignores case and trailing dots; a servlet container drops
# ;params; a static file ignores the query). The rules see every reading; the stricter wins.
TRICKS = SourceAccess(
    "source intranet",
    allow=("group:staff",),
    rules=(
        AccessRule(paths=("/public/",), allow=("public",)),
        AccessRule(paths=("/hr/",), allow=("group:hr",)),
        AccessRule(patterns=(r"/board/.*\.pdf$",), allow=("group:board",)),
    ),
)


@pytest.mark.parametrize(
    ("link", "restricted_to"),
    [
        ("https://i.test/public/../hr/pay.html", "group:hr"),
        ("https://i.test/public/%2e%2e/hr/pay.html", "group:hr"),
        ("https://i.test/public/..%2Fhr/pay.html", "group:hr"),
        ("https://i.test/public/..%5Chr/pay.html", "group:hr"),
        ("https://i.test/public/%252e%252e%252fhr/pay.html", "group:hr"),
        ("https://i.test/%68r/pay.html", "group:hr"),
        ("https://i.test//hr/pay.html", "group:hr"),
        ("https://i.test/HR/pay.html", "group:hr"),
        ("https://i.test/hr./pay.html", "group:hr"),
        ("https://i.test/hr;jsessionid=1/pay.html", "group:hr"),
        ("https://i.test/public;x=1/..;/hr/pay.html", "group:hr"),
        ("https://i.test/board/q1.pdf?download=1", "group:board"),
        ("https://i.test/board/q1.pdf;x", "group:board"),
        ("https://i.test/BOARD/Q1.PDF", "group:board"),
    ],
)
def test_a_restricted_page_under_a_url_trick_keeps_its_restriction(link: str, restricted_to: str) -> None:
    from searchcrawl.access.decision import Principal, Principals, decide
    from searchcrawl.rules.urls import canonical

    access = TRICKS.access_of(canonical(link))  # the crawl's URL: the canonicaliser's form
    outsider = Principals.of("eve", [Principal("group:staff", "test")])
    insider = Principals.of("ann", [Principal("group:staff", "test"), Principal(restricted_to, "test")])
    assert not decide(access, Principals.anonymous()).granted
    assert not decide(access, outsider).granted
    assert decide(access, insider).granted
    assert not access.is_public


def test_a_trick_that_no_rule_covers_is_unreadable_and_a_plain_url_keeps_its_one_rule() -> None:
    rules = SourceAccess("source s", rules=(AccessRule(paths=("/public/",), allow=("public",)),))
    with pytest.raises(AccessUnreadable, match="read as https://i.test/hr/pay.html"):
        rules.access_of("https://i.test/public/..%2Fhr/pay.html")
    plain = TRICKS.access_of("https://i.test/hr/pay.html?x=1")
    assert len(plain.levels) == 1 and plain.levels[0].tokens == {"group:hr"}
    assert TRICKS.access_of("https://i.test/public/a.html?page=2").is_public
    combined = TRICKS.access_of("https://i.test/HR/pay.html")
    assert [sorted(level.tokens) for level in combined.levels] == [["group:staff"], ["group:hr"]]
    assert "(the URL read as https://i.test/hr/pay.html)" in combined.levels[1].allow[0].origin


def test_a_path_prefix_with_characters_a_url_encodes_matches(tmp_path: Path) -> None:
    source = load(
        tmp_path,
        WEB
        + AUTH
        + '[access]\nallow = ["group:staff"]\n[[access.rules]]\npaths = ["/hr files/", "/lön/"]\nallow = ["group:hr"]\n',
    )
    rules = source.source_access()
    assert rules is not None
    for url in ("https://i.test/hr%20files/pay.html", "https://i.test/l%C3%B6n/pay.html"):
        assert rules.access_of(url).levels[0].tokens == {"group:hr"}, url
