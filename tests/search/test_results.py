"""The search's plain logic (request.py, results.py): URLs, filters, highlighting, facets
and suggestions, and what run_search asks of Solr."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, parse_qsl

import pytest
from starlette.datastructures import QueryParams

from searchcrawl.access.decision import Principals, solr_trimming
from searchcrawl.index.solr_client import DOCUMENTS
from searchcrawl.search.labels import LANGUAGE_NAMES, TYPE_LABELS, facet_label, language_label, type_label
from searchcrawl.search.query import (
    SPELL_FIELD,
    TIME_ALLOWED_MS,
    counted,
    every_word,
    every_word_counts,
    every_word_query,
    search_params,
    snippet_of,
    term_filter,
    unique_hits,
)
from searchcrawl.search.request import (
    MAX_CHOSEN_CHARS,
    MAX_FACET_VALUES,
    MAX_PAGE,
    SORTS,
    SearchRequest,
    date_range_label,
    search_back,
)
from searchcrawl.search.results import (
    FACET_PARAMS,
    MARK_CLOSE,
    MARK_OPEN,
    SearchPage,
    display_url,
    facets,
    highlighted,
    run_search,
)
from searchcrawl.search.spelling import collations
from searchcrawl.search.trimmed_index import TrimmedIndex


def test_request_from_hostile_parameters_is_bounded_and_never_fails() -> None:
    request = SearchRequest.from_params({"q": "  x" * 2000, "page": "-4", "modified": "forever", "source": "a}{!lucene}*:*"})
    assert len(request.q) == 1000 and request.page == 1
    assert dict(request.filters) == {"source": "a}{!lucene}*:*"}  # a term filter takes it literally
    assert request.solr_filters() == (
        ["{!bool tag=f_source should=$filter_source_0}"],
        {"filter_source_0": "{!term f=source}a}{!lucene}*:*"},
    )
    assert SearchRequest.from_params({"q": "a", "page": "999999"}).page == MAX_PAGE
    assert SearchRequest.from_params({"q": "a", "page": "two"}).page == 1


def test_urls_keep_the_state_and_a_new_filter_goes_back_to_page_one() -> None:
    request = SearchRequest("harbour master", 3, (("source", "docs"), ("modified", "week")))
    assert parse_qs(request.url(page=4)[1:]) == {"q": ["harbour master"], "source": ["docs"], "modified": ["week"], "page": ["4"]}
    assert parse_qs(request.url(host="a.example")[1:]) == {
        "q": ["harbour master"],
        "source": ["docs"],
        "modified": ["week"],
        "host": ["a.example"],
    }
    assert "source" not in parse_qs(request.url(source=None)[1:])
    assert request.solr_filters() == (
        ["{!bool tag=f_source should=$filter_source_0}", "{!tag=f_modified}last_modified:[NOW-7DAYS TO *]"],
        {"filter_source_0": "{!term f=source}docs"},
    )


def test_highlighting_escapes_everything_but_the_markers() -> None:
    snippet = f"<script>x</script> the {MARK_OPEN}harbour{MARK_CLOSE} & <b>{MARK_OPEN}quay"
    assert str(highlighted(snippet)) == "&lt;script&gt;x&lt;/script&gt; the <mark>harbour</mark> &amp; &lt;b&gt;<mark>quay</mark>"
    assert str(highlighted(f"a{MARK_CLOSE}b")) == "ab"  # a stray closing marker is dropped


def test_only_web_and_file_urls_become_links() -> None:
    assert display_url({"url": "https://a.example/x", "display_url": "javascript:alert(1)"}) == ""
    assert display_url({"url": "https://a.example/x"}) == "https://a.example/x"
    assert display_url({"display_url": "file:///share/a.pdf"}) == "file:///share/a.pdf"


def test_facets_from_solr_with_the_chosen_value_as_its_removal() -> None:
    request = SearchRequest("q", 1, (("type", "text/html"),))
    shown = facets(
        request,
        {
            "facet_fields": {"mimetype": ["text/html", 5, "application/pdf", 2], "source": [], "host": [], "language": []},
            "facet_queries": {"modified_day": 0, "modified_older": 3},
        },
    )
    assert [(value.value, value.label, value.count, value.selected) for value in shown["type"]] == [
        ("text/html", "Web page", 5, True),
        ("application/pdf", "PDF", 2, False),
    ]
    assert "type" not in parse_qs(shown["type"][0].url[1:])
    assert parse_qs(shown["type"][1].url[1:])["type"] == ["text/html", "application/pdf"]  # chosen too, not instead
    assert [value.value for value in shown["modified"]] == ["older"]  # empty ranges are not offered
    assert "source" not in shown


def test_suggestions_are_collations_never_a_words_own() -> None:
    assert collations({"collations": ["collation", "lighthouse keepers", "collation", {"collationQuery": "x y"}]}) == [
        "lighthouse keepers",
        "x y",
    ]
    # a word's suggestions come from every document, those the searcher may not read too: unchecked,
    # never shown (a collation is checked against the searcher's filters, every word of it)
    words = {"suggestions": ["lighthuose", {"numFound": 1, "suggestion": [{"word": "lighthouse", "freq": 3}]}]}
    assert collations(words) == []
    assert collations({}) == []


def test_every_word_of_a_text_is_a_quoted_phrase_whatever_its_operators() -> None:
    """Nothing of the text is query syntax: each piece between white space is one phrase, its
    quote and backslash escaped, so a negated word, a group's, a field's, a wildcard's or a
    fuzzy word are required like any other."""
    assert every_word('harbour -secret (a OR w) title:x "p q" w* w~2 +w && !w') == (
        '"harbour" "-secret" "(a" "OR" "w)" "title:x" "\\"p" "q\\"" "w*" "w~2" "+w" "&&" "!w"'
    )
    assert every_word('a\\" OR "*:*') == '"a\\\\\\"" "OR" "\\"*:*"'
    assert every_word("  a\tb\u00a0c\n") == '"a" "b\u00a0c"'  # only ASCII white space splits
    assert every_word("") == ""
    query = every_word_query("p", "spell", "key=k")
    assert query == "{!edismax key=k qf='spell' mm=100% uf=-* v=$p}"
    assert every_word_query("p") == "{!edismax mm=100% uf=-* v=$p}"  # /select's own fields
    params = every_word_counts(["a b", "c"], "t")
    assert params == {
        "facet": "true",
        "facet.query": ["{!edismax key=t0 mm=100% uf=-* v=$t0}", "{!edismax key=t1 mm=100% uf=-* v=$t1}"],
        "t0": '"a" "b"',
        "t1": '"c"',
    }
    assert counted({"facet_queries": {"t0": 2, "t1": 0}}, "t0") and not counted({"facet_queries": {"t1": 0}}, "t1")
    assert (
        not counted({"facet_queries": {}}, "t0") and not counted(None, "t0") and not counted({"facet_queries": {"t0": "x"}}, "t0")
    )


def test_the_query_module_collapses_and_drops_a_url_shown() -> None:
    params = search_params(10, 20, source="docs", filters=["x:y"])
    wanted = ["{!collapse tag=one_url field=url nullPolicy=expand}", term_filter("source", "docs"), "x:y"]
    assert params["fq"] == wanted
    # the trimming is the TrimmedIndex's to add, to every request: its filters first
    solr = AskedSolr(answer())
    TrimmedIndex(solr, Principals.anonymous()).search("harbour", params)  # type: ignore[arg-type]
    trimming, trimming_params = solr_trimming(Principals.anonymous())
    sent = solr.asked[0]
    assert (
        sent["fq"] == [*trimming, DOCUMENTS, *wanted] and params["fq"] == wanted
    )  # the caller's parameters are left as they were
    assert sent["access_tokens"] == "public" and trimming_params.items() <= sent.items()
    assert params["start"] == 20
    assert params["timeAllowed"] == TIME_ALLOWED_MS  # a visitor's costly query gets what Solr found by then
    # no score is returned: it is computed with the whole index's statistics, hidden documents
    # included (docs/secure-search.md, "What the ranking can tell")
    assert "score" not in params["fl"].split(",")
    docs = [{"id": "a!u", "url": "u"}, {"id": "b!u", "url": "u"}, {"id": "c!v", "url": "v"}]
    assert [doc["id"] for doc in unique_hits(docs)] == ["a!u", "c!v"]
    assert snippet_of({"id": "a!u", "description": "d"}, {"a!u": {"content": ["one\n  two"]}}) == "one two"
    assert snippet_of({"id": "a!u", "description": "d"}, {}) == "d"


# --- issue 59: sort, several values of a facet, labels, a date range, hits per page ---------------


def test_several_values_of_one_facet_are_kept_bounded_and_deduplicated() -> None:
    pairs = [("q", "harbour"), ("type", "text/html"), ("type", "application/pdf"), ("type", "text/html"), ("type", "")]
    pairs += [("host", f"h{number}.example") for number in range(30)] + [("lang", "x" * 600)]
    request = SearchRequest.from_params(pairs)
    assert request.values("type") == ["text/html", "application/pdf"]  # once each, empty dropped
    assert request.values("host") == [f"h{number}.example" for number in range(MAX_FACET_VALUES)]
    assert request.values("lang") == ["x" * 500]
    # all facets' values together are bounded too: every facet link of the page repeats them
    many = SearchRequest.from_params(
        [("q", "a"), *((name, f"{name}{number}-" + "v" * 150) for name in ("host", "type", "lang") for number in range(20))]
    )
    assert sum(len(value) for _name, value in many.filters) <= MAX_CHOSEN_CHARS
    assert len(many.filters) == MAX_CHOSEN_CHARS // 157 and many.values("host")[0] == "host0-" + "v" * 150
    # a plain mapping (one value a name) and Starlette's QueryParams (every value) alike
    assert SearchRequest.from_params({"q": "a", "type": "text/plain"}).values("type") == ["text/plain"]
    params = QueryParams("q=a&type=text%2Fhtml&type=application%2Fpdf&q=b&sort=date&sort=title")
    both = SearchRequest.from_params(params)
    assert (both.q, both.values("type"), both.sort) == ("a", ["text/html", "application/pdf"], "date")  # the first q, sort


def test_urls_round_trip_with_repeated_values_and_every_parameter() -> None:
    request = SearchRequest.from_params(
        [
            ("q", "harbour & quay"),
            ("type", "text/html"),
            ("type", "application/pdf"),
            ("host", "127.0.0.1:8080"),
            ("modified", "year"),
            ("from", "2024-01-01"),
            ("to", "2024-01-31"),
            ("sort", "title"),
            ("rows", "50"),
            ("page", "3"),
        ]
    )
    url = request.url()
    assert parse_qs(url[1:]) == {
        "q": ["harbour & quay"],
        "host": ["127.0.0.1:8080"],
        "type": ["text/html", "application/pdf"],
        "modified": ["year"],
        "from": ["2024-01-01"],
        "to": ["2024-01-31"],
        "sort": ["title"],
        "rows": ["50"],
        "page": ["3"],
    }
    assert SearchRequest.from_params(parse_qsl(url[1:])) == request  # a bookmark is the same search
    assert search_back(url) == url  # and a sign-in leads back to it whole
    longest = SearchRequest.from_params([("q", "😀" * 1000), *(("type", f"{number}" + "😀" * 490) for number in range(4))])
    assert len(longest.filters) == 4 and search_back(longest.url()) == longest.url()  # the longest search kept, percent-encoded
    # defaults stay out of the URL; a change of anything but the page goes back to page 1
    assert SearchRequest("a").url() == "?q=a"
    assert parse_qs(request.url(sort="relevance")[1:]).keys() == parse_qs(url[1:]).keys() - {"sort", "page"}
    assert "page" not in parse_qs(request.url(rows=20)[1:]) and parse_qs(request.url(page=4)[1:])["page"] == ["4"]
    # toggling a value keeps the facet's others
    assert parse_qs(request.toggle_url("type", "text/plain")[1:])["type"] == ["text/html", "application/pdf", "text/plain"]
    assert parse_qs(request.toggle_url("type", "text/html")[1:])["type"] == ["application/pdf"]
    assert "host" not in parse_qs(request.toggle_url("host", "127.0.0.1:8080")[1:])
    assert parse_qs(request.toggle_url("modified", "day")[1:])["modified"] == ["day"]  # a range replaces the range
    assert "modified" not in parse_qs(request.toggle_url("modified", "year")[1:])


def test_hostile_values_of_several_facets_stay_literal_terms() -> None:
    hostile = ["a}{!lucene}*:*", "$filter_type_0", "x should=$y}", "{!join from=id to=url}*:*", "a,b", "${q}", "\x1f'\""]
    request = SearchRequest.from_params([("q", "x"), *(("type", value) for value in hostile), ("lang", "de")])
    filters, params = request.solr_filters()
    references = " ".join(f"should=$filter_type_{number}" for number in range(len(hostile)))
    assert filters == ["{!bool tag=f_type " + references + "}", "{!bool tag=f_lang should=$filter_lang_0}"]
    # each value in a parameter of its own, after the term parser's local parameters: taken literally
    assert params == {
        **{f"filter_type_{number}": "{!term f=mimetype}" + value for number, value in enumerate(hostile)},
        "filter_lang_0": "{!term f=language}de",
    }
    assert all("$" not in name for name in params)  # nothing a visitor types names a parameter
    # the parameters reach Solr with the filters, and macros stay off (the trimming's expandMacros)
    solr = AskedSolr(answer())
    TrimmedIndex(solr, Principals.anonymous()).search("x", search_params(filters=filters))  # type: ignore[arg-type]
    assert solr.asked[0]["expandMacros"] == "false" and solr.asked[0]["fq"][-2:] == filters


def test_facets_count_without_their_own_filter_and_the_trimming_is_never_left_out() -> None:
    trimming, _params = solr_trimming(Principals.anonymous())
    assert FACET_PARAMS["facet.field"] == [
        "{!ex=f_source,one_url key=source}source",  # a URL of two sources counts in each
        "{!ex=f_host key=host}host",
        "{!ex=f_type key=mimetype}mimetype",
        "{!ex=f_lang key=language}language",
    ]
    assert FACET_PARAMS["facet.query"][0] == "{!ex=f_modified key=modified_day}last_modified:[NOW-1DAY TO *]"
    assert not any("tag=" in query for query in trimming)  # every count is of what the searcher may read
    # a chosen value beyond Solr's top values is still there to be dropped, without a count
    request = SearchRequest.from_params([("q", "x"), ("host", "rare.example:8443")])
    shown = facets(request, {"facet_fields": {"host": ["a.example", 9]}, "facet_queries": {}})
    assert [(value.value, value.count, value.selected) for value in shown["host"]] == [
        ("a.example", 9, False),
        ("rare.example:8443", None, True),
    ]
    assert "host" not in parse_qs(shown["host"][1].url[1:])


def test_sorts_are_a_fixed_list_and_anything_else_is_relevance() -> None:
    for junk in ("", "score desc", "title_sort asc", "DATE", "date;drop", "x" * 10_000):
        assert SearchRequest.from_params({"q": "a", "sort": junk}).sort == "relevance"
    assert SORTS["date"][1] == "last_modified desc,score desc"
    assert SORTS["title"][1] == "title_sort asc,score desc"
    assert search_params(Principals.anonymous(), sort=SORTS["title"][1])["sort"] == "title_sort asc,score desc"
    assert "sort" not in search_params(Principals.anonymous())  # relevance: Solr's own order
    links = SearchRequest("a", 2, sort="date").sort_links()
    assert [(label, chosen) for label, _url, chosen in links] == [
        ("Relevance", False),
        ("Date (newest first)", True),
        ("Title (A-Z)", False),
    ]
    assert links[0][1] == "?q=a" and links[2][1] == "?q=a&sort=title"  # back to page 1


def test_hits_per_page_are_a_fixed_list_with_the_applications_default() -> None:
    for junk in ("", "0", "-10", "11", "1000", "20.0", " 20", "twenty"):
        assert SearchRequest.from_params({"q": "a", "rows": junk}).rows is None
    assert SearchRequest.from_params({"q": "a", "rows": "50"}).rows == 50
    links = SearchRequest("a", rows=20).rows_links(10)
    assert [(rows, url, chosen) for rows, url, chosen in links] == [
        (10, "?q=a", False),
        (20, "?q=a&rows=20", True),
        (50, "?q=a&rows=50", False),
    ]
    assert [rows for rows, _url, chosen in SearchRequest("a").rows_links(25) if chosen] == [25]  # SEARCHCRAWL_WEB_ROWS
    # the pages follow the size, and stop at MAX_PAGE whatever it is
    page = SearchPage(SearchRequest("a", 3, rows=50), total=10_000, rows=50)
    assert page.pages == MAX_PAGE and page.first == 101
    assert SearchPage(SearchRequest("a"), total=45, rows=20).pages == 3


def test_a_date_range_includes_both_days_and_junk_days_are_ignored() -> None:
    request = SearchRequest.from_params({"q": "a", "from": "2024-02-28", "to": "2024-02-29"})
    assert request.solr_filters()[0] == ["last_modified:[2024-02-28T00:00:00Z TO 2024-03-01T00:00:00Z}"]
    one = SearchRequest.from_params({"q": "a", "from": "2023-12-31", "to": "2023-12-31"})
    assert one.solr_filters()[0] == ["last_modified:[2023-12-31T00:00:00Z TO 2024-01-01T00:00:00Z}"]
    assert SearchRequest.from_params({"q": "a", "from": "2024-05-01"}).solr_filters()[0] == [
        "last_modified:[2024-05-01T00:00:00Z TO *]"
    ]
    assert SearchRequest.from_params({"q": "a", "to": "2024-05-01"}).solr_filters()[0] == [
        "last_modified:[* TO 2024-05-02T00:00:00Z}"
    ]
    swapped = SearchRequest.from_params({"q": "a", "from": "2024-05-09", "to": "2024-05-01"})  # the wrong way round
    assert (swapped.date_from, swapped.date_to) == ("2024-05-01", "2024-05-09")
    for junk in ("2024-02-30", "2024-2-1", "24-01-01", "2024-01-01T00:00:00Z", "2024-01-01 TO *] OR *:*", "9999-12-31", "", "x"):
        request = SearchRequest.from_params({"q": "a", "from": junk, "to": junk})
        assert (request.date_from, request.date_to) == ("", "") and request.solr_filters() == ([], {}), junk
    # with a last-modified range both apply; the chosen range is offered for removal
    both = SearchRequest.from_params({"q": "a", "modified": "year", "from": "2024-01-01"})
    assert both.solr_filters()[0] == [
        "{!tag=f_modified}last_modified:[NOW-1YEAR TO *]",
        "last_modified:[2024-01-01T00:00:00Z TO *]",
    ]
    assert [(title, label) for title, label, _url in both.chosen()] == [
        ("Last modified", "past year"),
        ("Date range", "from Jan 1, 2024"),  # its days written by the language (English: CLDR's)
    ]
    assert parse_qs(both.chosen()[1][2][1:]) == {"q": ["a"], "modified": ["year"]}
    assert SearchRequest("a", date_from="* TO *] OR (*:*", date_to="2024-01-01").solr_filters()[0] == [
        "last_modified:[* TO 2024-01-02T00:00:00Z}"  # a request made in code is checked too
    ]
    assert date_range_label("2024-01-01", "2024-01-01") == "Jan 1, 2024"
    assert date_range_label("", "2024-01-01") == "until Jan 1, 2024"
    assert date_range_label("2024-01-01", "2024-02-29") == "Jan 1, 2024 to Feb 29, 2024"


def test_forms_carry_the_state_they_do_not_set() -> None:
    request = SearchRequest.from_params(
        [("q", "a"), ("type", "text/html"), ("type", "application/pdf"), ("from", "2024-01-01"), ("sort", "date"), ("page", "2")]
    )
    assert request.hidden("q", "page") == [
        ("type", "text/html"),
        ("type", "application/pdf"),
        ("from", "2024-01-01"),
        ("sort", "date"),
    ]
    assert request.hidden("page", "from", "to") == [
        ("q", "a"),
        ("type", "text/html"),
        ("type", "application/pdf"),
        ("sort", "date"),
    ]


def test_labels_name_types_and_languages_and_show_the_unknown_as_indexed() -> None:
    assert type_label("text/html") == "Web page" and type_label("application/pdf") == "PDF"
    assert type_label("application/vnd.openxmlformats-officedocument.wordprocessingml.document") == "Word"
    assert type_label("application/vnd.ms-excel") == "Excel 97-2003"
    assert type_label("application/vnd.oasis.opendocument.presentation") == "OpenDocument presentation"
    assert (
        type_label("text/plain") == "Text" and type_label("message/rfc822") == "Mail" and type_label("image/png") == "PNG image"
    )
    assert type_label("application/x-unheard-of") == "application/x-unheard-of"
    assert len(set(TYPE_LABELS.values())) == len(TYPE_LABELS)  # two values of the facet never read alike
    assert language_label("de") == "German" and language_label("en-us") == "English (US)" and language_label("zz") == "zz"
    assert language_label("<b>") == "<b>"  # as indexed: the template escapes it
    assert facet_label("lang", "fr") == "French" and facet_label("host", "h.example:8080") == "h.example:8080"


def test_language_names_cover_every_language_py3langid_detects() -> None:
    langid = pytest.importorskip("py3langid.langid")
    model = langid.IDENTIFIER or langid.LanguageIdentifier.from_model_file(langid.MODEL_FILE)
    assert set(model.nb_classes) <= set(LANGUAGE_NAMES)


class AskedSolr:
    """A SolrIndex that records what it is asked and answers ``answers`` in turn (an exception
    among them is raised)."""

    def __init__(self, *answers: SimpleNamespace | Exception) -> None:
        self.asked: list[dict[str, Any]] = []
        self.answers = list(answers)

    def search(self, query: str, **params: Any) -> SimpleNamespace:
        self.asked.append({"q": query, **params})
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def answer(hits: int = 0, docs: list[dict[str, Any]] | None = None, spellcheck: dict[str, Any] | None = None) -> SimpleNamespace:
    return SimpleNamespace(hits=hits, docs=docs or [], highlighting={}, facets={}, spellcheck=spellcheck)


def test_run_search_sends_the_sort_the_page_size_and_the_facets_values_with_their_parameters() -> None:
    request = SearchRequest.from_params(
        [("q", "harbour"), ("type", "text/html"), ("type", "application/pdf"), ("sort", "date"), ("rows", "20"), ("page", "3")]
    )
    doc = {"id": "s!u", "url": "https://a.example/u", "title": "T", "mimetype": "application/pdf"}
    solr = AskedSolr(answer(45, [doc]))
    page = run_search(TrimmedIndex(solr, Principals.anonymous()), request, rows=10)  # type: ignore[arg-type]
    asked = solr.asked[0]
    assert (asked["rows"], asked["start"], asked["sort"]) == (20, 40, "last_modified desc,score desc")
    assert (
        asked["filter_type_0"] == "{!term f=mimetype}text/html" and asked["filter_type_1"] == "{!term f=mimetype}application/pdf"
    )
    assert "{!bool tag=f_type should=$filter_type_0 should=$filter_type_1}" in asked["fq"]
    assert asked["facet.field"] == FACET_PARAMS["facet.field"]
    assert (page.rows, page.pages, page.hits[0].type_label) == (20, 3, "PDF")
    # nothing found: the spelling suggestions are tried with the same filters, which need their parameters
    spelt = {"collations": ["collation", "harbor", "collation", "harbor -secret"]}
    counts = SimpleNamespace(facets={"facet_queries": {"spelling_0": 2, "spelling_1": 0}})
    solr = AskedSolr(answer(0), answer(0, spellcheck=spelt), counts)
    page = run_search(TrimmedIndex(solr, Principals.anonymous()), request)  # type: ignore[arg-type]
    checked, words = solr.asked[1], solr.asked[2]
    assert checked["fq"] == solr.asked[0]["fq"] and checked["filter_type_1"] == "{!term f=mimetype}application/pdf"
    assert checked["spellcheck.collateParam.mm"] == "100%" and checked["uf"] == solr.asked[0]["uf"]
    # a word the index holds is corrected as one it does not (a hidden document may hold it)
    assert checked["spellcheck.alternativeTermCount"] == checked["spellcheck.count"]
    # then every word of each collation, on the dictionary's own field, with the same filters
    assert words["q"] == "*:*" and words["fq"] == solr.asked[0]["fq"] and words["filter_type_1"] == checked["filter_type_1"]
    assert words["expandMacros"] == "false" and words["rows"] == 0
    assert (words["spelling_0"], words["spelling_1"]) == ('"harbor"', '"harbor" "-secret"')
    assert words["facet.query"][1] == every_word_query("spelling_1", SPELL_FIELD, "key=spelling_1")
    assert [text for text, _url in page.suggestions] == ["harbor"]  # "secret" is no word they may read
    assert parse_qs(page.suggestions[0][1][1:]) == {
        "q": ["harbor"],
        "type": ["text/html", "application/pdf"],
        "sort": ["date"],
        "rows": ["20"],
    }


def test_every_request_of_a_search_that_found_nothing_is_bounded_in_time_as_the_search_is() -> None:
    """Review of issue 72 (1): the search is bounded (``timeAllowed``: a visitor's
    ``content:/.*a.*b.*/`` or ``*e*`` gets what was found by then), but when it found nothing
    (as such a query cut short may), the spelling suggestions asked the same query again without
    the bound, Solr's collation tries asking it up to 10 times more: any visitor could keep Solr
    busy for as long as the query takes, with one request of the search page."""
    request = SearchRequest.from_params([("q", "content:/.*a.*b.*c.*/ harbor")])
    spelt = {"collations": ["collation", "harbour"]}
    counts = SimpleNamespace(facets={"facet_queries": {"spelling_0": 1}})
    solr = AskedSolr(answer(0), answer(0, spellcheck=spelt), counts)
    run_search(TrimmedIndex(solr, Principals.anonymous()), request)  # type: ignore[arg-type]
    assert len(solr.asked) == 3
    bound = solr.asked[0]["timeAllowed"]
    assert [asked.get("timeAllowed") for asked in solr.asked] == [bound] * 3
