"""Properties of the plain parsers that take untrusted input (Hypothesis): robots.txt, URL
canonicalisation, the crawl boundary, character sets and document kinds, source files.

Deterministic on CI: the "ci" profile has no example database and derandomised generation, so
every run tries the same examples. Hostile inputs found once stay as ``@example``s.
"""

from __future__ import annotations

import codecs
import datetime
import io
import json
import math
import re
import tomllib
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from searchcrawl.config.source import ScopeRules, SourceError, SourceFile, SourceSettings, load_source
from searchcrawl.content.charsets import choose_encoding, declared_encoding, looks_binary
from searchcrawl.content.convert import detect_kind, sniff_kind
from searchcrawl.content.convert.core import KINDS, OLE_MAGIC
from searchcrawl.rules.boundary import Boundary, server_paths
from searchcrawl.rules.robots_txt import RobotsTxt, product_token, robots_for_response
from searchcrawl.rules.status_codes import Status
from searchcrawl.rules.urls import canonical

# Derandomized: the same examples every run, so a failure here is never a fluke of one run. Their
# numbers are chosen so that the file costs about 12 s of CPU in the unit layer's minute: the costly
# strategies (source files, robots.txt groups) get 200-250 examples, the cheap ones more.
settings.register_profile("ci", database=None, derandomize=True, deadline=None, print_blob=False)
settings.load_profile("ci")

# -- robots.txt -----------------------------------------------------------------------------------

AGENT = "searchcrawl/1.0 (+https://example.com/bot)"
TOKEN = product_token(AGENT)
HOSTILE_PATTERNS = [
    "*" * 64,
    "/" + "*a" * 300 + "$",
    "/" + "*" * 2000 + "b",
    "/a*b*c*d*e*f*g*h*i*j*k*l*m*n*o*p$",
    "/*$",
    "$",
    "*",
]
HOSTILE_PATHS = ["/" + "a" * 5000, "/" + "ab" * 2000 + "c", "/" + "*" * 100, "/%" * 50]

# URL paths in the percent-encoded form a crawler sends (robots rules are matched against that)
path_chars = st.sampled_from([*"abcXYZ019-._~!&'()+,;=:@/", "%2F", "%2f", "%41", "%E9", "%", "*"])
url_paths = st.lists(path_chars, max_size=20).map(lambda chars: "/" + "".join(chars))
robots_keys = st.sampled_from(
    [
        "User-agent",
        "user-agent",
        "USER-AGENT ",
        "Allow",
        "allow",
        "Disallow",
        "DISALLOW",
        "Crawl-delay",
        "crawl-delay",
        "Sitemap",
        "Host",
        "Noindex",
        "",
    ]
)
robots_values = st.one_of(
    st.text(max_size=30),
    url_paths,
    st.sampled_from(
        [
            *HOSTILE_PATTERNS,
            "searchcrawl",
            "SearchCrawl/2.1",
            "*bot",
            "1e309",
            "nan",
            "-1",
            "inf",
            "0.5",
            "\ufeff/x",
            "/%zz",
            "/é",
            "http://example.com/sitemap.xml",
        ]
    ),
)
robots_lines = st.tuples(
    robots_keys, st.sampled_from([":", " :", ": ", "::"]), robots_values, st.sampled_from(["", " # note", "#"])
).map("".join)
robots_texts = st.tuples(st.lists(robots_lines, max_size=25), st.sampled_from(["\n", "\r\n", "\r"])).map(
    lambda lines_and_break: lines_and_break[1].join(lines_and_break[0])
)
robots_urls = st.one_of(
    st.text(max_size=60),
    st.builds(
        lambda path, query: "http://example.com" + path + query, url_paths, st.sampled_from(["", "?", "?a=1", "#frag", "?q=é"])
    ),
    st.sampled_from(["http://example.com" + path for path in HOSTILE_PATHS]),
)
user_agents = st.one_of(st.just(AGENT), st.text(max_size=20), st.sampled_from(["*", "", "Googlebot/2.1", "SEARCHCRAWL"]))


def other_groups(text: str) -> str:
    """Robots text that must not name our token: anything else is fair game."""
    assume(TOKEN not in text.lower())
    return text + "\n"


@settings(max_examples=250)
@given(robots=st.one_of(robots_texts, st.text(), st.binary()), url=robots_urls, agent=user_agents)
@example(robots="User-agent: *\nDisallow: /" + "*" * 10_000 + "x$\n", url="http://example.com/" + "a" * 10_000, agent=AGENT)
@example(robots=b"\xff\xfe\x00U\x00s\x00e\x00r", url="http://[::1", agent="")
@example(robots="User-agent: *\nAllow: /\ud800\n", url="http://example.com/\udfff", agent="\udc80")
def test_robots_parse_and_decide_never_raise_and_are_deterministic(robots: str | bytes, url: str, agent: str) -> None:
    parsed = RobotsTxt.parse(robots)
    decision = parsed.decide(agent, url)
    assert isinstance(decision.allowed, bool)
    assert parsed.decide(agent, url) == decision  # cached group selection changes nothing
    assert RobotsTxt.parse(robots).decide(agent, url) == decision
    delay = parsed.crawl_delay(agent)
    assert delay is None or (math.isfinite(delay) and delay >= 0)
    assert all(isinstance(sitemap, str) for sitemap in parsed.sitemaps())


@settings(max_examples=200)
@given(status=st.none() | st.integers(-1000, 1000), body=st.none() | st.binary() | robots_texts.map(str.encode), url=robots_urls)
def test_robots_for_response_never_raises(status: int | None, body: bytes | None, url: str) -> None:
    decision = robots_for_response(status, body).decide(AGENT, url)
    assert decision == robots_for_response(status, body).decide(AGENT, url)


@settings(max_examples=200)
@given(before=robots_texts.map(other_groups), after=robots_texts, url=robots_urls, extra=st.lists(url_paths, max_size=3))
@example(before="", after="", url="http://example.com", extra=[])
@example(before="", after="", url="http://[::1", extra=[])
def test_disallow_all_in_own_group_disallows_every_url(before: str, after: str, url: str, extra: list[str]) -> None:
    """A ``Disallow: /`` in our own group; rules that only disallow more, and other groups."""
    assume(TOKEN not in after.lower())
    own = "User-agent: SearchCrawl\n" + "".join(f"Disallow: {path}\n" for path in [*extra, "/"])
    decision = RobotsTxt.parse(before + own + "User-agent: otherbot\n" + after).decide(AGENT, url)
    assert not decision.allowed, decision


@settings(max_examples=200)
@given(
    others=robots_texts.map(other_groups),
    path=url_paths,
    query=st.sampled_from(["", "?a=1", "?"]),
    allow_first=st.booleans(),
    disallow_root=st.booleans(),
)
@example(others="", path="/", query="", allow_first=False, disallow_root=True)
@example(others="", path="/a*", query="", allow_first=False, disallow_root=False)
@example(others="", path="/%e9/%2f", query="?x", allow_first=False, disallow_root=True)
def test_allow_of_the_same_length_wins_the_tie(
    others: str, path: str, query: str, allow_first: bool, disallow_root: bool
) -> None:
    rules = [f"Disallow: {path}{query}", f"Allow: {path}{query}"]
    if allow_first:
        rules.reverse()
    if disallow_root:
        rules.append("Disallow: /")  # shorter, so less specific
    robots = others + "User-agent: searchcrawl\n" + "\n".join(rules) + "\n"
    decision = RobotsTxt.parse(robots).decide(AGENT, "http://example.com" + path + query)
    assert decision.allowed, decision


def plain_decision(rules: list[tuple[bool, str]], path: str) -> tuple[bool, int] | None:
    """The rule RFC 9309 states, over every rule in file order with a regular expression each (a
    brute force fit for short patterns): the longest matching pattern, allow on a tie, then the
    earlier line. (allowed, line number), or None when no rule matches."""
    best: tuple[int, bool, int] | None = None
    for number, (allow, pattern) in enumerate(rules, start=2):
        body, anchored = (pattern[:-1], True) if pattern.endswith("$") else (pattern, False)
        regex = ".*".join(re.escape(part) for part in body.split("*")) + (r"\Z" if anchored else "")
        if re.match(regex, path) and (best is None or (len(pattern), allow, -number) > best):
            best = (len(pattern), allow, -number)
    return None if best is None else (best[1], -best[2])


@settings(max_examples=200)
@given(
    rules=st.lists(st.tuples(st.booleans(), st.text("/ab*$", min_size=1, max_size=5)), max_size=12),
    path=st.text("/ab", max_size=8).map(lambda text: "/" + text),
)
@example(rules=[(False, "/a"), (True, "/a"), (False, "/a")], path="/ab")
@example(rules=[(False, "/a*"), (False, "/a$"), (True, "/*a")], path="/a")
def test_indexed_rules_decide_as_every_rule_in_file_order(rules: list[tuple[bool, str]], path: str) -> None:
    """The rules are indexed by their literal start and repeats dropped: the decision and the line
    it names are the ones a scan of every rule in file order gives."""
    text = "User-agent: *\n" + "".join(f"{'Allow' if allow else 'Disallow'}: {pattern}\n" for allow, pattern in rules)
    decision = RobotsTxt.parse(text).decide(AGENT, "http://example.com" + path)
    expected = plain_decision(rules, path)
    if expected is None:
        assert decision.allowed and decision.line is None
    else:
        allowed, number = expected
        assert (decision.allowed, decision.line) == (
            allowed,
            f"line {number}: {'Allow' if allowed else 'Disallow'}: {rules[number - 2][1]}",
        )


# -- URL canonicalisation ---------------------------------------------------------------------------

SCHEMES = ["http", "https", "HTTP", "file", "ftp", "javascript", "mailto", ""]
HOSTS = [
    "www.example.com",
    "WWW.Example.COM",
    "www.example.com.",
    "docs.example.com",
    "example.com",
    "www.example.com.evil",
    "evil.com",
    "wwwexample.com",
    "private.example.com",
    "intranet.example.com",
    "straße.example.com",
    "xn--strae-oqa.example.com",
    "bücher.example.com",
    "127.0.0.1",
    "[::1]",
    "[::1",
    "user:pw@www.example.com",
    "www.example.com@evil.com",
    "evil.com@www.example.com",
    "a%40b@www.example.com",
    "www.example.com\\@evil.com",
    "www.ex%61mple.com",
    "",
    " www.example.com",
]
PORTS = ["", ":", ":80", ":443", ":8080", ":8443", ":0", ":65536", ":abc", ":080"]
SEGMENTS = [
    "docs",
    "private",
    "Private",
    "cgi-bin",
    "guide",
    "..",
    ".",
    "%2e%2e",
    "%2E.",
    ".%2e",
    "%2e",
    "a b",
    "%70rivate",
    "%2F",
    "%2f..%2f",
    "x.zip",
    "calendar",
    "é",
    "%",
    "%zz",
    "~user",
    "%7Euser",
    ";p=1",
    "",
    "index.html",
    "a\\..",
    "..\\private",
]
QUERIES = ["", "?", "?a=1", "?b=2&a=1", "?%41=%42", "?q=é", "?a=1#x"]
FRAGMENTS = ["", "#", "#top", "#/private/"]

grammar_urls = st.builds(
    lambda scheme, host, port, segments, query, fragment: f"{scheme}://{host}{port}/{'/'.join(segments)}{query}{fragment}",
    st.sampled_from(SCHEMES),
    st.sampled_from(HOSTS),
    st.sampled_from(PORTS),
    st.lists(st.sampled_from(SEGMENTS), max_size=6),
    st.sampled_from(QUERIES),
    st.sampled_from(FRAGMENTS),
)
any_urls = st.one_of(grammar_urls, st.text(max_size=60), st.text(max_size=20).map(lambda tail: "http://" + tail))


def canonical_or_none(url: str) -> str | None:
    """canonical(url), or None for the ValueError w3lib raises on a URL it cannot parse (an
    unclosed IPv6 bracket, a port out of range): such a URL is dropped, never fetched."""
    try:
        return canonical(url)
    except ValueError:
        return None


@settings(max_examples=600)
@given(url=any_urls)
@example(url="http://www.example.com/a/%2e")
@example(url="http://www.example.com:65536/")
@example(url="http://[::1/")
def test_canonical_is_idempotent(url: str) -> None:
    once = canonical_or_none(url)
    if once is not None:
        assert canonical(once) == once


@settings(max_examples=300)
@given(url=any_urls)
@example(url="http://user:secret@www.example.com/")
@example(url="http://a%40b:c%3Ad@www.example.com:8080/x?y#z")
@example(url="http://www.example.com\\@evil.com/")
def test_canonical_never_holds_userinfo(url: str) -> None:
    once = canonical_or_none(url)
    if once is not None:
        try:
            parts = urlsplit(once)
        except ValueError:
            return
        assert parts.username is None and parts.password is None, once


# -- the crawl boundary ------------------------------------------------------------------------------

SEEDS = ["http://www.example.com/", "https://docs.example.com:8443/guide/", "file:///srv/share/docs/index.html"]
BOUNDARIES = [
    Boundary(SEEDS, ScopeRules.model_validate({})),
    Boundary(
        SEEDS,
        ScopeRules.model_validate(
            {
                "max_depth": 3,
                "index_dynamic_pages": True,
                "domains": {
                    "include": ["example.com"],
                    "exclude": ["private.example.com", "straße.example.com"],
                    "exclude_prefix": ["intranet."],
                },
                "ports": {"*": {"exclude": [8080]}, "docs.example.com": {"include": [8443]}},
                "paths": {
                    "*": {"exclude": ["/private/", "/cgi-bin/", "/~user/", "/é/"]},
                    "www.example.com": {"include": ["/docs/", "/guide/", "/index.html"]},
                },
                "patterns": {"exclude_glob": ["*.zip"], "exclude_regex": ["/calendar/"]},
            }
        ),
    ),
    Boundary(
        SEEDS,
        ScopeRules.model_validate(
            {
                "max_depth": 1,
                "domains": {"include_prefix": ["www."], "exclude": ["evil"]},
                "paths": {"www.example.com": {"exclude": ["/Private/"]}},
                "patterns": {"include_regex": ["(?i)^https?://"], "exclude_glob": ["*/cgi-bin/*"]},
            }
        ),
    ),
]


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(url=any_urls, depth=st.integers(0, 5))
@example(url="http://www.example.com/docs/../private/", depth=0)
@example(url="http://www.example.com/docs/%2e%2e/private/", depth=0)
@example(url="http://www.example.com.:80/docs/", depth=0)
@example(url="file:///srv/share/docs/../../etc/passwd", depth=0)
def test_boundary_never_raises_and_is_deterministic(url: str, depth: int) -> None:
    for boundary in BOUNDARIES:
        decision = boundary.check(url, depth)
        assert boundary.check(url, depth) == decision
        assert boundary.explain(url, depth)[-1] == decision
        assert decision.allowed == (decision.status is None)


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(url=grammar_urls, depth=st.integers(0, 5))
@example(url="http://www.example.com/docs/%2e%2e/private/", depth=0)
@example(url="http://straße.example.com/docs/", depth=0)
@example(url="http://www.example.com/%7Euser/", depth=0)
@example(url="http://www.example.com\\@evil.com/", depth=0)
def test_excluded_stays_excluded_after_canonicalisation(url: str, depth: int) -> None:
    """Canonicalising a URL never lets it through a boundary that excluded it by its scheme,
    host, port, path, depth or query. Pattern rules are left out: they match the URL's text, which
    canonicalisation rightly changes (``/calendar/..`` is ``/``, ``HTTP:`` is ``http:``), and the
    crawler only ever matches them against canonical URLs."""
    once = canonical_or_none(url)
    assume(once is not None)
    for index, boundary in enumerate(BOUNDARIES):
        decision = boundary.check(url, depth)
        if not decision.allowed and decision.status != Status.EXCLUDED_PATTERN:
            after = boundary.check(once, depth)
            assert not after.allowed, (index, url, decision.rule, once, after.rule)


@pytest.mark.parametrize(
    "url",
    [
        "http://evil.com\\@www.example.com/",
        "http:\\\\evil.com\\www.example.com/",
        "https://evil.com\\.www.example.com@www.example.com/",
    ],
)
def test_boundary_judges_the_host_that_is_fetched(url: str) -> None:
    """Browsers and Scrapy read "\\" as "/" in an http(s) URL: these go to evil.com (found by
    test_excluded_stays_excluded_after_canonicalisation, whose failing example is kept there)."""
    assert urlsplit(canonical(url)).hostname == "evil.com"
    for boundary in BOUNDARIES:
        assert not boundary.check(url).allowed


# -- path rules: the spellings a server maps onto a folder -------------------------------------
# A path of plain segments, spelled as nginx, a servlet container or IIS still maps it onto the
# same folder: separators doubled, escaped (%2F, %u002F, and %5C for IIS), or with a detour (x/..,
# with its dots escaped); letters escaped (%XX, or %uNNNN for IIS and Jetty; "ü" in UTF-8, or in
# the byte IIS and Jetty read in cp1252 or ISO-8859-1); ";" parameters on a segment followed by
# a real "/"; where the host's rules ignore case (Windows), letters in another case ("s" as
# "ſ" and "i" as "ı" too), names with trailing dots and spaces. The path rules must read each
# spelling as the plain path: below an exclusion, it is excluded; outside the include list, too.

PLAIN_SEGMENTS = st.lists(st.sampled_from(["enc", "secret", "private", "a", "k.html", "prüfung"]), max_size=5)
SEPARATORS = ["/", "//", "%2F", "%2f", "%u002F", "%U002f", "%5C", "%5c", "%u005C", "/./", "/%2e/", "/%u002E/"]
SEPARATORS += ["/zz/../", "/zz/%2E%2e/", "/zz%2F..%2F", "/zz/..;p/", "/zz/%u002e%u002E/", "/zz%u002f..%u002f"]
# detours through the included folder: a path outside it that a prefix test would take for inside
SEPARATORS += ["/enc/../", "/enc%2F..%2F", "/enc/..;p/", "/enc/.%2E/", "/enc%5C..%5C", "/enc/%u002e%u002e/"]
PARAMETER = st.sampled_from(["", "", ";x", ";jsessionid=1", ";"])
WINDOWS_TAIL = st.sampled_from(["", "", "", ".", "%2e", "%20", ". .", "%2E%2e", "::$DATA"])
WINDOWS_LETTERS = {"s": ["S", "\u017f"], "i": ["I", "\u0131"]}  # "ſ" and "ı" are "S" and "I" in upper case


def spelled_char(draw: st.DrawFn, char: str, fold_case: bool, latin1: bool) -> str:
    """One character of a plain segment, spelled as a server still reads it."""
    how = draw(st.integers(0, 5))
    if how == 0:
        escaped = "".join(f"%{byte:02X}" for byte in char.encode("latin-1" if latin1 else "utf-8"))
        return escaped.lower() if draw(st.booleans()) else escaped
    if how == 1:
        return f"%{draw(st.sampled_from('uU'))}{ord(char):04X}"
    if fold_case and how in (2, 3):
        return draw(st.sampled_from(WINDOWS_LETTERS.get(char, [char.upper()])))
    return char


@st.composite
def spelled_paths(draw: st.DrawFn, fold_case: bool) -> tuple[str, str]:
    """(a plain path, one of its spellings)."""
    segments = draw(PLAIN_SEGMENTS)
    trailing = draw(st.booleans()) and bool(segments)
    plain = "/" + "/".join(segments) + ("/" if trailing else "")
    latin1 = draw(st.booleans())  # "ü" as the byte IIS and Jetty read when a path is not UTF-8
    spelled, parameter = "", ""
    separators = len(segments) + (1 if trailing else 0)
    for index in range(separators):
        real = parameter or index == 0  # a path starts with a "/", and a parameter ends at the next
        spelled += draw(st.sampled_from([sep for sep in SEPARATORS if sep.startswith("/")] if real else SEPARATORS))
        if index == len(segments):
            break
        spelled += "".join(spelled_char(draw, char, fold_case, latin1) for char in segments[index])
        if fold_case:
            spelled += draw(WINDOWS_TAIL)
        parameter = draw(PARAMETER)
        spelled += parameter
    return plain, spelled or "/"


PATH_BOUNDARIES = {
    fold_case: Boundary(
        ["http://127.0.0.1/enc/"],
        ScopeRules.model_validate(
            {"paths": {"127.0.0.1": {"include": ["/enc/"], "exclude": ["/enc/secret/"], "case_insensitive": fold_case}}}
        ),
    )
    for fold_case in (False, True)
}


@settings(max_examples=200)
@given(data=st.data(), fold_case=st.booleans())
@example(data=None, fold_case=False)
def test_a_spelling_of_an_excluded_folder_is_excluded(data: st.DataObject | None, fold_case: bool) -> None:
    """Any spelling that normalises into an excluded prefix (or out of the include list) is
    excluded, as written and as the crawl canonicalises it; the plain path is one of its readings."""
    spellings = [("/enc/secret/k.html", "/enc//secret/k.html"), ("/private/h.html", "/enc/..%2Fprivate/h.html")]
    if data is not None:
        spellings = [data.draw(spelled_paths(fold_case))]
    boundary = PATH_BOUNDARIES[fold_case]
    for plain, spelled in spellings:
        readings = server_paths(spelled, fold_case)
        # with fold_case the rules compare a reading in upper case too ("ſ" and "ı": "s" and "i")
        compared = {reading.upper().lower() for reading in readings} if fold_case else set()
        assert plain in readings or plain in compared, (plain, spelled, readings)
        if plain.startswith("/enc/secret/") or not plain.startswith("/enc/"):
            for url in ("http://127.0.0.1" + spelled, canonical("http://127.0.0.1" + spelled)):
                decision = boundary.check(url)
                assert decision.status == Status.EXCLUDED_PATH, (plain, url, decision.rule)
        else:
            assert boundary.check("http://127.0.0.1" + plain).allowed


# -- character sets and document kinds ---------------------------------------------------------------

CHARSETS = [
    "utf-8",
    "UTF8",
    "iso-8859-1",
    "latin1",
    "windows-1252",
    "us-ascii",
    "koi8-r",
    "shift_jis",
    "utf-16",
    "gb18030",
    "x-user-defined",
    "nonsense",
    "",
    "utf-8\x00",
    "../../etc",
    "base64",
    "rot13",
    "hex",
]
content_types = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.builds(
        lambda mime, charset, quote: f"{mime}; charset={quote}{charset}{quote}",
        st.sampled_from(["text/html", "text/plain", "application/xhtml+xml", ""]),
        st.sampled_from(CHARSETS),
        st.sampled_from(["", '"', "'"]),
    ),
)
defaults = st.sampled_from(
    [None, "windows-1252", "utf-8", "latin-1", "shift_jis", "koi8-r", "utf-16", "cp1252", "a\x00b", "\ud800", "base64", "rot13"]
)


def zip_of(entries: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return buffer.getvalue()


zip_names = st.sampled_from(
    [
        "mimetype",
        "[Content_Types].xml",
        "_rels/.rels",
        "word/document.xml",
        "xl/workbook.xml",
        "ppt/slides/slide1.xml",
        "content.xml",
        "docProps/core.xml",
        "word",
        "x/y",
    ]
)
zip_data = st.sampled_from([b"", b"application/vnd.oasis.opendocument.text", b"application/epub+zip", b"<x/>"])
bodies = st.one_of(
    st.binary(max_size=600),
    st.tuples(
        st.sampled_from(
            [
                b"%PDF-",
                b"\n%PDF-1.7",
                OLE_MAGIC,
                b"PK\x03\x04",
                b"{\\rtf1",
                b"\xef\xbb\xbf",
                b"\xff\xfe",
                b"\xfe\xff",
                b"<html><head><meta charset=utf-8>",
            ]
        ),
        st.binary(max_size=2000),
    ).map(b"".join),
    st.lists(st.tuples(zip_names, zip_data), max_size=5, unique_by=lambda entry: entry[0]).map(zip_of),
    st.binary(min_size=1, max_size=2000).map(
        lambda tail: zip_of([("mimetype", b"application/vnd.oasis.opendocument.text")])[:40] + tail
    ),
    st.text(max_size=300).map(lambda text: text.encode("utf-8")),
)


@settings(max_examples=600)
@given(body=bodies, content_type=content_types, default=defaults)
@example(body=OLE_MAGIC + b"tiny", content_type=None, default=None)  # under olefile's 1536 bytes: not a file name
@example(body=b"PK\x03\x04" + b"\xff" * 26, content_type=None, default=None)
@example(body=b"\xef\xbb\xbf\x00\x00", content_type="text/html; charset=utf-8\x00", default=None)
@example(body=b"<p>caf\xe9</p>", content_type="text/html; charset=utf-8", default="base64")  # not a text encoding
@example(body=b"<p>caf\xe9</p>", content_type="text/html", default="a\x00b")
def test_charset_and_kind_detection_never_raise(body: bytes, content_type: str | None, default: str | None) -> None:
    encoding = choose_encoding(content_type, body, default)
    assert encoding is None or isinstance(body.decode(codecs.lookup(encoding).name, "replace"), str)
    assert looks_binary(body) in (True, False)
    kind = sniff_kind(body)
    assert kind is None or (kind in KINDS and kind != "txt")
    assert detect_kind(body, content_type, "a.bin") in (*KINDS, None)
    assert sniff_kind(body) == kind  # deterministic


def effective_encoding(content_type: str, body: bytes, default: str | None) -> str | None:
    """What the page is decoded with: the correction, else what it declares."""
    return choose_encoding(content_type, body, default) or declared_encoding(content_type, body)


html_texts = st.text(max_size=200).map(lambda text: f"<html><body><p>{text}</p></body></html>")
non_ascii_texts = html_texts.filter(lambda text: not text.isascii())


@settings(max_examples=300)
@given(text=html_texts, default=defaults)
def test_valid_utf8_labelled_utf8_stays_utf8(text: str, default: str | None) -> None:
    body = text.encode("utf-8")
    assert effective_encoding("text/html; charset=utf-8", body, default) == "utf-8"


@settings(max_examples=300)
@given(text=non_ascii_texts, data=st.data(), byte=st.integers(0x80, 0xFF), default=defaults)
@example(text="<p>caf\u00e9 \u2013 na\u00efve</p>", data=None, byte=0xFF, default="windows-1252")
def test_one_invalid_byte_keeps_utf8(text: str, data: Any, byte: int, default: str | None) -> None:
    """The regression: one invalid byte (between two characters) in a UTF-8 page with any other
    non-ASCII character leaves the page UTF-8, labelled or detected."""
    at = data.draw(st.integers(0, len(text)), label="at") if data is not None else len(text) // 2
    body = text[:at].encode("utf-8") + bytes([byte]) + text[at:].encode("utf-8")
    assert effective_encoding("text/html; charset=utf-8", body, default) == "utf-8"
    if declared_encoding("text/html", body) is None:  # undeclared: UTF-8 too, whatever default_charset says
        assert choose_encoding("text/html", body, default) == "utf-8"


@settings(max_examples=300)
@given(text=non_ascii_texts, default=defaults)
@example(text="<p>Fran\u00e7ais</p>", default="windows-1252")
def test_valid_utf8_undeclared_is_utf8_whatever_the_default(text: str, default: str | None) -> None:
    """Issue 53: default_charset decoded an undeclared page of valid UTF-8 ("FranÃ§ais")."""
    body = text.encode("utf-8")
    if declared_encoding("text/html", body) is None:
        assert choose_encoding("text/html", body, default) in ((None, "utf-8") if default is None else ("utf-8",))


# -- source files ---------------------------------------------------------------------------------------


def _field_names() -> list[str]:
    """Every key of a source file and of its nested tables (from the settings' JSON schema)."""
    schema = SourceSettings.model_json_schema()
    names = set(schema["properties"])
    for definition in schema.get("$defs", {}).values():
        names |= set(definition.get("properties", {}))
    return sorted(names)


FIELD_NAMES = _field_names()
keys = st.one_of(
    st.sampled_from(FIELD_NAMES), st.sampled_from(["*", "www.example.com", "max_dept", "", "Seeds"]), st.text(max_size=8)
)
scalars = st.one_of(
    st.booleans(),
    st.integers(),
    st.integers(-2, 70_000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(
        [
            "http://www.example.com/",
            "file:///srv/x/",
            "ftp://x/",
            "example.com",
            "/private/",
            "*",
            "[a-z",
            "1h",
            "*/5 * * * *",
            "utf-8",
            "nonsense",
            "static",
            "auto",
            "date",
            "text",
            "string",
            "os.path.join",
            "^https?://",
            "DEBUG",
        ]
    ),
    st.dates(),
    st.times(),
    st.datetimes(),
    st.datetimes(timezones=st.just(datetime.UTC)),
)
toml_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=12,
)
source_dicts = st.dictionaries(keys, toml_values, max_size=8)


def no_escaping_seed_files(data: Any) -> None:
    """Seed files named by absolute or home paths would read this machine's files: not here."""
    names = data.get("seed_files") if isinstance(data, dict) else None
    if isinstance(names, list):
        assume(not any(isinstance(name, str) and name.strip().startswith(("/", "~")) for name in names))


@settings(max_examples=250)
@given(data=source_dicts)
@example(data={"ports": {"*": {"include": [0]}}})
@example(data={"paths": {"": {"include": ["/"]}}})
@example(data={"domains": {"include": ["\u0000"]}})
@example(data={"seeds": ["http://[::1/"]})
def test_source_settings_validation_raises_only_validation_errors(data: dict[str, Any]) -> None:
    try:
        SourceSettings.model_validate(data)
    except ValidationError:
        pass


def toml_literal(value: Any) -> str:
    """A Python value as TOML (a small writer: the standard library has a reader only)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(map(toml_literal, value)) + "]"
    return "{" + ", ".join(f"{json.dumps(key, ensure_ascii=False)} = {toml_literal(item)}" for key, item in value.items()) + "}"


toml_documents = st.one_of(
    source_dicts.map(lambda data: "\n".join(f"{json.dumps(k, ensure_ascii=False)} = {toml_literal(v)}" for k, v in data.items())),
    st.text(max_size=200),
    st.lists(
        st.sampled_from(
            [
                'seeds = ["http://www.example.com/"]',
                "max_depth = 2",
                "[domains]",
                'include = ["example.com"]',
                "[ports.'*']",
                "include = [80]",
                "[[display_urls]]",
                'seed_files = ["seeds.txt"]',
                'seed_files = ["binary.txt"]',
                'seed_files = ["folder"]',
                "[paths.www.example.com]",
                "max_depth = 1979-05-27",
                "seeds = [",
                "= 1",
                "a.b.c = 1",
            ]
        ),
        max_size=8,
    ).map("\n".join),
)


@pytest.fixture(scope="module")
def source_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for source files, with seed files good and bad beside them."""
    folder = tmp_path_factory.mktemp("sources")
    (folder / "seeds.txt").write_text("# seeds\nhttp://www.example.com/a\n\ngopher://x/\n", encoding="utf-8")
    (folder / "binary.txt").write_bytes(b"http://www.example.com/\n\xff\xfe\x00garbage\n")
    (folder / "folder").mkdir()
    return folder


@settings(max_examples=250, suppress_health_check=[HealthCheck.too_slow])
@given(text=toml_documents)
@example(text='seeds = ["http://www.example.com/"]\nseed_files = ["binary.txt"]')
@example(text='seeds = ["http://www.example.com/"]\nseed_files = ["a\\u0000b"]')
def test_load_source_raises_only_source_errors(source_dir: Path, text: str) -> None:
    try:
        no_escaping_seed_files(tomllib.loads(text))
    except tomllib.TOMLDecodeError:
        pass
    path = source_dir / "s.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        load_source(SourceFile("s", str(path), path))
    except (SourceError, ValueError, ValidationError, tomllib.TOMLDecodeError):
        pass


# Regressions found by the property above: both escaped load_source (a traceback, not a message)
@pytest.mark.parametrize(
    "text",
    [
        "seeds = " + "[" * 5000 + "]" * 5000,  # RecursionError from tomllib (no nesting limit)
        'seeds = ["http://www.example.com/"]\nseed_files = ["a\\u0000b"]',  # ValueError: embedded null byte
    ],
    ids=["deep-nesting", "nul-in-seed-file-name"],
)
def test_load_source_raises_source_error_only(source_dir: Path, text: str) -> None:
    path = source_dir / "known-bug.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SourceError):
        load_source(SourceFile("known-bug", str(path), path))
