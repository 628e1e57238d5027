"""robots.txt decisions: the RFC 9309 conformance cases, then the behaviour the crawler relies on."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest

from searchcrawl.rules.robots_txt import (
    MAX_ROBOTS_BYTES,
    RobotsDecision,
    RobotsTxt,
    is_allowed,
    product_token,
    robots_for_response,
)

ROBOTS_CASES = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "robots-cases.json"


def _conformance_cases() -> list:
    if not ROBOTS_CASES.exists():
        return [pytest.param(None, id="corpus-absent")]
    cases = json.loads(ROBOTS_CASES.read_text(encoding="utf-8"))["cases"]
    return [pytest.param(case, id=case["id"]) for case in cases]


@pytest.mark.parametrize("case", _conformance_cases())
def test_conformance(case: dict | None) -> None:
    """google/robotstxt-spec-test cases, as decided by Google's reference parser."""
    if case is None:
        pytest.skip(f"{ROBOTS_CASES} is absent (third-party corpus, see ../shared/corpora/README.md)")
    if "robotstxt_b64" in case:
        body: str | bytes = base64.b64decode(case["robotstxt_b64"])
    else:
        body = case["robotstxt"]
    assert is_allowed(body, case["useragent"], case["url"]) is case["allowed"], case.get("note")


def test_conformance_corpus_has_200_cases() -> None:
    if not ROBOTS_CASES.exists():
        pytest.skip(f"{ROBOTS_CASES} is absent")
    assert len(json.loads(ROBOTS_CASES.read_text(encoding="utf-8"))["cases"]) == 200


# Group selection -----------------------------------------------------------------------------

GROUPS = """\
User-agent: *
Disallow: /

User-agent: SearchCrawl
Disallow: /private/

User-agent: otherbot
Allow: /

user-agent: searchcrawl
Disallow: /drafts/
"""


def test_own_group_wins_over_star() -> None:
    robots = RobotsTxt.parse(GROUPS)
    assert robots.decide("searchcrawl", "https://example.com/page").allowed
    assert not robots.decide("searchcrawl", "https://example.com/private/x").allowed
    assert not robots.decide("unknownbot", "https://example.com/page").allowed


def test_group_match_is_case_insensitive_on_the_product_token() -> None:
    robots = RobotsTxt.parse(GROUPS)
    for agent in ("SEARCHCRAWL", "searchcrawl/1.0", "SearchCrawl/2.3 (+https://example.com/bot)"):
        assert not robots.decide(agent, "https://example.com/private/x").allowed, agent
        assert robots.decide(agent, "https://example.com/page").allowed, agent


def test_groups_for_the_same_agent_are_merged() -> None:
    robots = RobotsTxt.parse(GROUPS)
    assert not robots.decide("searchcrawl", "https://example.com/private/a").allowed
    assert not robots.decide("searchcrawl", "https://example.com/drafts/b").allowed
    decision = robots.decide("searchcrawl", "https://example.com/drafts/b")
    assert decision.group == "User-agent: SearchCrawl; user-agent: searchcrawl"
    assert decision.line == "line 11: Disallow: /drafts/"


def test_consecutive_user_agent_lines_share_one_group() -> None:
    robots = RobotsTxt.parse("User-agent: a\nUser-agent: searchcrawl\n\nDisallow: /x\n")
    decision = robots.decide("searchcrawl", "http://h/x")
    assert decision == RobotsDecision(False, "User-agent: a; User-agent: searchcrawl", "line 4: Disallow: /x")


def test_no_matching_group_and_no_star_allows_everything() -> None:
    robots = RobotsTxt.parse("User-agent: otherbot\nDisallow: /\n")
    assert robots.decide("searchcrawl", "http://h/x") == RobotsDecision(True, None, None)
    assert RobotsTxt.parse("").decide("searchcrawl", "http://h/") == RobotsDecision(True, None, None)


def test_own_group_without_rules_ignores_star() -> None:
    robots = RobotsTxt.parse("User-agent: searchcrawl\nDisallow:\n\nUser-agent: *\nDisallow: /\n")
    assert robots.decide("searchcrawl", "http://h/x") == RobotsDecision(True, "User-agent: searchcrawl", None)
    assert not robots.decide("other", "http://h/x").allowed


def test_rules_before_any_user_agent_are_ignored() -> None:
    assert is_allowed("Disallow: /\nUser-agent: *\nDisallow: /x\n", "searchcrawl", "http://h/y")


def test_product_token() -> None:
    assert product_token("searchcrawl/1.0") == "searchcrawl"
    assert product_token("  SearchCrawl/1.0 (+https://example.com)") == "searchcrawl"
    assert product_token("search-crawl_x") == "search-crawl_x"


def test_robots_txt_agent_value_counts_up_to_first_other_character() -> None:
    robots = RobotsTxt.parse("User-agent: searchcrawl/2.1\nDisallow: /a\nUser-agent: searchcrawl-news\nDisallow: /b\n")
    assert not robots.decide("searchcrawl", "http://h/a").allowed
    assert robots.decide("searchcrawl", "http://h/b").allowed
    assert not robots.decide("searchcrawl-news", "http://h/b").allowed


# Rule matching -------------------------------------------------------------------------------


def test_longest_match_wins() -> None:
    robots = RobotsTxt.parse("User-agent: *\nDisallow: /docs/\nAllow: /docs/public/\nDisallow: /docs/public/secret\n")
    assert not robots.decide("b", "http://h/docs/x").allowed
    assert robots.decide("b", "http://h/docs/public/x").allowed
    assert not robots.decide("b", "http://h/docs/public/secret.html").allowed


def test_allow_wins_a_tie() -> None:
    robots = RobotsTxt.parse("User-agent: *\nDisallow: /page\nAllow: /page\nDisallow: /p*ge\nAllow: /pa*e\n")
    decision = robots.decide("b", "http://h/page.html")
    assert decision == RobotsDecision(True, "User-agent: *", "line 3: Allow: /page")


def test_wildcard_and_end_anchor() -> None:
    robots = RobotsTxt.parse("User-agent: *\nDisallow: /*.pdf$\nDisallow: /tmp*/cache\nDisallow: /price$5\n")
    assert not robots.decide("b", "http://h/a/b.pdf").allowed
    assert robots.decide("b", "http://h/a/b.pdf?download=1").allowed
    assert robots.decide("b", "http://h/a/b.pdfx").allowed
    assert not robots.decide("b", "http://h/tmp-1/x/cache/y").allowed
    assert robots.decide("b", "http://h/tmp-1/x/cach").allowed
    # A "$" that is not last is an ordinary character.
    assert not robots.decide("b", "http://h/price$5/x").allowed
    assert robots.decide("b", "http://h/price").allowed


def test_query_is_matched_fragment_is_not() -> None:
    robots = RobotsTxt.parse("User-agent: *\nDisallow: /*?sort=\nDisallow: /search?\n")
    assert not robots.decide("b", "http://h/list?page=2&x=1?sort=asc").allowed
    assert not robots.decide("b", "http://h/search?").allowed
    assert robots.decide("b", "http://h/search#?").allowed
    assert not robots.decide("b", "http://h?sort=").allowed  # empty path counts as "/"


def test_empty_disallow_and_paths_are_case_sensitive() -> None:
    assert is_allowed("User-agent: *\nDisallow:\n", "b", "http://h/anything")
    assert is_allowed("User-agent: *\nDisallow: /Private\n", "b", "http://h/private")
    assert not is_allowed("User-agent: *\nDisallow: /Private\n", "b", "http://h/Private")


def test_robots_txt_itself_is_not_implicitly_allowed() -> None:
    """The reference parser (and conformance case 327748#0:5) disallows it like any other path."""
    assert not is_allowed("User-agent: *\nDisallow: /\n", "b", "http://h/robots.txt")


def test_pathological_wildcards_stay_fast() -> None:
    robots = RobotsTxt.parse("User-agent: *\nDisallow: /" + "*a" * 200 + "*b$\n")
    started = time.monotonic()
    assert robots.decide("b", "http://h/" + "a" * 20000).allowed
    assert time.monotonic() - started < 1


def test_thousands_of_plain_rules_are_matched_by_their_start_alone() -> None:
    """A robots.txt of 25,000 plain rules still decides by the longest one (no bound on plain rules)."""
    rules = "".join(f"Disallow: /i/{n}/\n" for n in range(25_000))
    robots = RobotsTxt.parse("User-agent: *\n" + rules + "Allow: /i/24999/public\n")
    assert not robots.decide("b", "http://h/i/123/x").allowed
    assert robots.decide("b", "http://h/i/123").allowed
    assert robots.decide("b", "http://h/i/24999/public/a").line == "line 25002: Allow: /i/24999/public"


def test_wildcard_rules_too_costly_for_a_url_leave_it_undecided() -> None:
    """25,000 distinct rules with a '*' after '/' were each matched against every URL (125 ms per
    2,000-character URL on the crawl's thread), and 2,000 rules of 200 characters, each a
    quadratic search, 165 ms: the work is bounded (MAX_WILDCARD_WORK), and a URL beyond it is not
    allowed, but not disallowed by a rule either (the crawl fails it for now: nothing leaves the
    index for it). Wildcard rules under another start do not count for URLs outside it."""
    hostile = "".join(f"Disallow: /*x{n}y\n" for n in range(25_000))
    assert len(hostile) < MAX_ROBOTS_BYTES
    decision = RobotsTxt.parse("User-agent: *\n" + hostile).decide("b", "http://h/" + "a" * 2000)
    assert (decision.allowed, decision.undecided) == (False, True)
    assert decision.line is not None and "too costly to match" in decision.line
    long_rules = "".join(f"Disallow: /*{'a' * 198}ba*{n}\n" for n in range(2_000))
    decision = RobotsTxt.parse("User-agent: *\n" + long_rules).decide("b", "http://h/" + "a" * 2070)
    assert (decision.allowed, decision.undecided) == (False, True)

    shop = "".join(f"Disallow: /shop/*?sort={n}\n" for n in range(10_000))
    assert len(shop) < MAX_ROBOTS_BYTES
    robots = RobotsTxt.parse("User-agent: *\n" + shop + "Disallow: /*.pdf$\n")
    assert robots.decide("b", "http://h/docs/a.html") == RobotsDecision(True, "User-agent: *", None)
    assert not robots.decide("b", "http://h/docs/a.pdf").allowed
    assert not robots.decide("b", "http://h/docs/a.pdf").undecided
    assert robots.decide("b", "http://h/shop/" + "a" * 100 + "?sort=1").undecided
    assert not robots.decide("b", "http://h/shop/a?sort=1").allowed  # a short path: decided
    assert robots.decide("b", "http://h/shop/a?sort=1").line == "line 3: Disallow: /shop/*?sort=1"


def test_a_thousand_ordinary_wildcard_rules_are_decided() -> None:
    """What the bound leaves to real files: 1,000 rules of 25 characters, a 400-character path."""
    rules = "".join(f"Disallow: /*?session_param_{n:04}=\n" for n in range(1_000))
    robots = RobotsTxt.parse("User-agent: *\n" + rules)
    assert robots.decide("b", "http://h/" + "a" * 390 + "?x=1") == RobotsDecision(True, "User-agent: *", None)
    refused = robots.decide("b", "http://h/" + "a" * 370 + "?session_param_0999=1")
    assert (refused.allowed, refused.undecided, refused.line) == (False, False, "line 1001: Disallow: /*?session_param_0999=")


def test_repeated_rules_count_once() -> None:
    rules = "Disallow: /*.pdf$\n" * 20_000
    robots = RobotsTxt.parse("User-agent: a\n" + rules + "User-agent: *\n" + rules)
    decision = robots.decide("b", "http://h/" + "a" * 2000 + ".pdf")
    assert (decision.allowed, decision.undecided, decision.line) == (False, False, "line 20003: Disallow: /*.pdf$")
    assert robots.decide("b", "http://h/x.html").allowed


def test_a_group_named_by_thousands_of_agent_lines_is_named_by_three() -> None:
    robots = RobotsTxt.parse("User-agent: *\n" * 30_000 + "Disallow: /\n")
    decision = robots.decide("b", "http://h/x")
    assert decision.group == "User-agent: *; User-agent: *; User-agent: * (+29997 more)"


def test_thousands_of_sitemap_lines_are_read_in_linear_time() -> None:
    """A list's ``in`` made 40,000 distinct Sitemap lines cost 15 s of the crawl's thread."""
    lines = [f"Sitemap: http://h/{n:x}.xml" for n in range(12_000)]
    robots = RobotsTxt.parse("\n".join(lines + lines[:5]))
    assert robots.sitemaps() == [line.removeprefix("Sitemap: ") for line in lines]
    assert robots.size == len("\n".join(lines + lines[:5]))


# Percent-encoding ----------------------------------------------------------------------------


def test_non_ascii_rules_match_encoded_urls() -> None:
    for rule in ("/café/ツ", "/caf%C3%A9/%E3%83%84", "/caf%c3%a9/%e3%83%84"):
        robots = RobotsTxt.parse(f"User-agent: *\nDisallow: {rule}\n")
        assert not robots.decide("b", "http://h/caf%C3%A9/%E3%83%84/x").allowed, rule
        assert not robots.decide("b", "http://h/caf%c3%a9/%e3%83%84/x").allowed, rule
        assert robots.decide("b", "http://h/cafe/x").allowed, rule


def test_urls_must_come_percent_encoded() -> None:
    """As in the reference parser: a raw non-ASCII URL character is compared as is (never matched)."""
    assert is_allowed("User-agent: *\nDisallow: /ツ\n", "b", "http://h/ツ")
    assert not is_allowed("User-agent: *\nDisallow: /ツ\n", "b", "http://h/%E3%83%84")


def test_unsafe_ascii_compares_equal_raw_or_encoded() -> None:
    assert not is_allowed("User-agent: *\nDisallow: /a b|c\n", "b", "http://h/a%20b%7Cc")
    assert not is_allowed("User-agent: *\nDisallow: /a%20b%7cc\n", "b", "http://h/a b|c")


@pytest.mark.parametrize(
    "character",
    [chr(code) for code in range(0x21, 0x7F) if chr(code) not in "#$%*"] + ["\x7f", "é", "ツ", "\U0001f600", "\U0010fffd"],
)
def test_a_rule_encodes_exactly_the_unsafe_and_non_ascii_characters(character: str) -> None:
    """A rule's unsafe ASCII and non-ASCII characters match their percent-encoded form in a URL;
    every other character stays as written, so its encoded form does not match (the rule's
    character class is written as the complement of the safe ones: checked against the set)."""
    unsafe = character in '"<>\\^`{|}' or ord(character) >= 0x7F
    encoded = "".join(f"%{byte:02X}" for byte in character.encode("utf-8"))
    robots = RobotsTxt.parse(f"User-agent: *\nDisallow: /p{character}q\n")
    assert robots.decide("b", f"http://h/p{encoded}q").allowed is not unsafe


def test_escaped_unreserved_characters_are_not_decoded() -> None:
    """Conformance case non-ascii-paths#3: %62%61%7A does not match "baz"."""
    robots = RobotsTxt.parse("User-agent: *\nDisallow: /%62%61%7A\n")
    assert robots.decide("b", "http://h/baz").allowed
    assert not robots.decide("b", "http://h/%62%61%7a").allowed


# Parsing -------------------------------------------------------------------------------------


def test_500_kib_limit() -> None:
    head = b"User-agent: *\nDisallow: /early\n"
    filler = b"# " + b"x" * 100 + b"\n"
    body = head + filler * ((MAX_ROBOTS_BYTES - len(head)) // len(filler))
    body += b"#" * (MAX_ROBOTS_BYTES - len(body) - 1) + b"\n"
    assert len(body) == MAX_ROBOTS_BYTES
    robots = RobotsTxt.parse(body + b"Disallow: /late\n")
    assert not robots.decide("b", "http://h/early").allowed
    assert robots.decide("b", "http://h/late").allowed
    # A rule cut in two by the limit is dropped rather than read shortened ("Allow: /" allows all).
    head = b"User-agent: *\nDisallow: /\n"
    padding = b"#" * (MAX_ROBOTS_BYTES - len(head) - len(b"Allow: /") - 1) + b"\n"
    robots = RobotsTxt.parse(head + padding + b"Allow: /late\n")
    assert not robots.decide("b", "http://h/late").allowed
    assert not robots.decide("b", "http://h/x").allowed
    # The same limit applies to text given as str.
    assert RobotsTxt.parse((body + b"Disallow: /late\n").decode()).decide("b", "http://h/late").allowed


def test_bytes_with_bom_and_invalid_utf8() -> None:
    body = b"\xef\xbb\xbfUser-agent: *\r\nDisallow: /a\xff\xfe\r\n\xc3(junk line\rDisallow: /b\r\n"
    robots = RobotsTxt.parse(body)
    assert not robots.decide("b", "http://h/b").allowed
    assert robots.decide("b", "http://h/a").allowed
    assert not robots.decide("b", "http://h/a%EF%BF%BD%EF%BF%BD").allowed  # U+FFFD replacements
    assert robots.decide("b", "http://h/b").line == "line 4: Disallow: /b"
    # A BOM anywhere else is part of the line (conformance case BOM-characters#4).
    assert is_allowed("User-agent: *\n\ufeffDisallow: /\n", "b", "http://h/x")
    assert not is_allowed("\ufeffUser-agent: *\nDisallow: /\n", "b", "http://h/x")


@pytest.mark.parametrize("start", [b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"], ids=["whole", "two-bytes", "one-byte"])
def test_a_byte_order_mark_or_its_start_is_skipped_at_the_start(start: bytes) -> None:
    """As Google's parser: each byte of the mark is skipped while it matches (its robots_test.cc,
    ID_UTF8ByteOrderMarkIsSkipped), so a partial mark does not spoil the first line."""
    robots = RobotsTxt.parse(start + b"User-agent: foo\nDisallow: /private\n")
    assert not robots.decide("foo", "http://h/private").allowed
    assert robots.decide("foo", "http://h/private").line == "line 2: Disallow: /private"


def test_a_broken_byte_order_mark_spoils_the_first_line() -> None:
    # the skipped start stops at the first byte that differs: "\x11" stays, and the line's key with it
    robots = RobotsTxt.parse(b"\xef\x11\xbfUser-agent: foo\nDisallow: /private\n")
    assert robots.decide("foo", "http://h/private").allowed


@pytest.mark.parametrize(
    ("body", "allowed"),
    [
        ("user-agent FooBot\ndisallow /\n", False),
        ("User-agent\tFooBot\nDisallow \t /private\n", False),
        ("user-agent FooBot\nallow /private\ndisallow /\n", True),
        # three words: no key and value, as in Google's parser (the user-agent line is ignored)
        ("user agent FooBot\ndisallow /\n", True),
        ("user-agent FooBot\ndisallow / now\n", True),
    ],
)
def test_a_line_without_a_colon_is_two_words_separated_by_whitespace(body: str, allowed: bool) -> None:
    """Google's parser accepts whitespace for a forgotten colon when the line has exactly two
    words (its robots_test.cc, ID_LineSyntax_Line)."""
    assert is_allowed(body, "FooBot", "http://h/private") is allowed


def test_a_line_without_a_colon_names_itself_in_the_decision() -> None:
    decision = RobotsTxt.parse("user-agent FooBot\ndisallow /x # no colon\n").decide("foobot", "http://h/x")
    assert decision == RobotsDecision(False, "user-agent FooBot", "line 2: disallow /x")


def test_comments_whitespace_and_directive_case() -> None:
    body = "  USER-AGENT :  searchcrawl  # us\n\tdisALLOW\t:\t/x # not /x#y\n# Allow: /x\n"
    decision = RobotsTxt.parse(body).decide("searchcrawl", "http://h/x/1")
    assert decision == RobotsDecision(False, "USER-AGENT :  searchcrawl", "line 2: disALLOW\t:\t/x")


def test_crawl_delay_and_sitemaps() -> None:
    robots = RobotsTxt.parse(
        "Sitemap: https://h/a.xml\nUser-agent: *\nCrawl-delay: 2\n"
        "User-agent: searchcrawl\nCrawl-delay: nonsense\nDisallow: /x\nCrawl-delay: 1.5\n"
        "Sitemap: https://h/b.xml\nSitemap: https://h/a.xml\n"
    )
    assert robots.crawl_delay("searchcrawl") == 2.0  # the * lines run into ours, as in the reference
    assert RobotsTxt.parse("User-agent: *\nDisallow: /\nCrawl-delay: 3\n").crawl_delay("b") == 3.0
    assert RobotsTxt.parse("User-agent: *\nDisallow: /\n").crawl_delay("b") is None
    assert robots.sitemaps() == ["https://h/a.xml", "https://h/b.xml"]


# Fetch policy --------------------------------------------------------------------------------


def test_robots_for_response_2xx_parses_the_body() -> None:
    robots = robots_for_response(200, b"User-agent: *\nDisallow: /private/\n")
    assert robots.decide("searchcrawl", "http://h/private/x") == RobotsDecision(
        False, "User-agent: *", "line 2: Disallow: /private/"
    )
    assert robots.decide("searchcrawl", "http://h/public").allowed
    assert robots_for_response(204, None).decide("searchcrawl", "http://h/x").allowed


@pytest.mark.parametrize("status", [404, 403, 401, 410])
def test_robots_for_response_4xx_allows_everything(status: int) -> None:
    decision = robots_for_response(status, b"User-agent: *\nDisallow: /\n").decide("searchcrawl", "http://h/x")
    assert decision == RobotsDecision(True, None, f"robots.txt answered {status}: no restrictions")


@pytest.mark.parametrize("status", [500, 503, 429])
def test_robots_for_response_5xx_disallows_everything_for_now(status: int) -> None:
    decision = robots_for_response(status, b"").decide("searchcrawl", "http://h/x")
    assert decision == RobotsDecision(False, None, f"robots.txt answered {status}: the whole site is disallowed for now")
    assert robots_for_response(status, b"").crawl_delay("searchcrawl") is None


def test_robots_for_response_unreachable_or_unfollowed_redirect() -> None:
    decision = robots_for_response(None, None).decide("searchcrawl", "http://h/x")
    assert decision == RobotsDecision(False, None, "robots.txt unreachable: the whole site is disallowed for now")
    redirect = robots_for_response(301, b"").decide("searchcrawl", "http://h/x")
    assert not redirect.allowed and "301" in redirect.line


def test_allow_all_and_disallow_all() -> None:
    assert RobotsTxt.allow_all().decide("b", "http://h/x").allowed
    denied = RobotsTxt.disallow_all("because").decide("b", "http://h/x")
    assert denied == RobotsDecision(False, None, "because")
    assert RobotsTxt.disallow_all("because").sitemaps() == []
