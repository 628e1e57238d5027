"""The search page's plain logic: URLs, filters, highlighting, facets and suggestions."""

from __future__ import annotations

from urllib.parse import parse_qs

from searchcrawl.access.decision import Principals, solr_trimming
from searchcrawl.index.query import TIME_ALLOWED_MS, search_params, snippet_of, term_filter, unique_hits
from searchcrawl.web.search_page import (
    MARK_CLOSE,
    MARK_OPEN,
    MAX_PAGE,
    SearchRequest,
    display_url,
    facets,
    highlighted,
    suggestions,
)


def test_request_from_hostile_parameters_is_bounded_and_never_fails() -> None:
    request = SearchRequest.from_params({"q": "  x" * 2000, "page": "-4", "modified": "forever", "source": "a}{!lucene}*:*"})
    assert len(request.q) == 1000 and request.page == 1
    assert dict(request.filters) == {"source": "a}{!lucene}*:*"}  # a term filter takes it literally
    assert request.solr_filters() == ["{!term f=source}a}{!lucene}*:*"]
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
    assert request.solr_filters() == ["{!term f=source}docs", "last_modified:[NOW-7DAYS TO *]"]


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
            "facet_queries": {"last_modified:[NOW-1DAY TO *]": 0, "last_modified:[* TO NOW-1YEAR]": 3},
        },
    )
    assert [(value.value, value.count, value.selected) for value in shown["type"]] == [
        ("text/html", 5, True),
        ("application/pdf", 2, False),
    ]
    assert "type" not in parse_qs(shown["type"][0].url[1:])
    assert [value.value for value in shown["modified"]] == ["older"]  # empty ranges are not offered
    assert "source" not in shown


def test_suggestions_are_collations_never_a_words_own() -> None:
    request = SearchRequest("lighthuose keepers")
    assert suggestions(request, {"collations": ["collation", "lighthouse keepers"]})[0][0] == "lighthouse keepers"
    # a word's suggestions come from every document, those the searcher may not read too: unchecked,
    # never shown (a collation is checked by Solr against the searcher's filters)
    words = {"suggestions": ["lighthuose", {"numFound": 1, "suggestion": [{"word": "lighthouse", "freq": 3}]}]}
    assert suggestions(request, words) == []
    assert suggestions(request, {}) == []


def test_the_query_module_collapses_and_drops_a_url_shown() -> None:
    params = search_params(Principals.anonymous(), 10, 20, source="docs", filters=["x:y"])
    trimming, trimming_params = solr_trimming(Principals.anonymous())
    assert params["fq"] == [*trimming, "{!collapse field=url nullPolicy=expand}", term_filter("source", "docs"), "x:y"]
    assert params["access_tokens"] == "public" and trimming_params.items() <= params.items()
    assert params["start"] == 20
    assert params["timeAllowed"] == TIME_ALLOWED_MS  # a visitor's costly query gets what Solr found by then
    docs = [{"id": "a!u", "url": "u"}, {"id": "b!u", "url": "u"}, {"id": "c!v", "url": "v"}]
    assert [doc["id"] for doc in unique_hits(docs)] == ["a!u", "c!v"]
    assert snippet_of({"id": "a!u", "description": "d"}, {"a!u": {"content": ["one\n  two"]}}) == "one two"
    assert snippet_of({"id": "a!u", "description": "d"}, {}) == "d"
