"""The search page's template: what it shows of a page of results (search/results.py's)."""

from __future__ import annotations

from searchcrawl.search.query import matching
from searchcrawl.search.request import FACET_TITLES, SearchRequest, date_range_label, language_name
from searchcrawl.search.results import Hit, SearchPage, facets, highlighted
from searchcrawl.system.translations import speaking
from searchcrawl.web.context import page_templates


def test_the_page_escapes_every_value_and_shows_the_types_by_name() -> None:
    templates = page_templates()
    templates.globals.update(base="", facet_titles=FACET_TITLES, matching=matching)
    hostile = '"><script>alert(1)</script>'
    request = SearchRequest.from_params([("q", hostile), ("type", hostile), ("lang", hostile), ("sort", "date")])
    page = SearchPage(request, total=1, rows=10)
    page.hits.append(
        Hit(hostile, "https://a.example/x", highlighted(hostile), hostile, "application/pdf", "PDF", "2024-01-01", "")
    )
    page.facets = facets(request, {"facet_fields": {"mimetype": [hostile, 1, "application/pdf", 1]}, "facet_queries": {}})
    html = templates.get_template("search.html").render(
        page=page, query=request, searcher=None, error="", default_rows=10, admin_enabled=False, signin_enabled=False
    )
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert '<span class="type" title="application/pdf">PDF</span>' in html
    assert '<strong aria-current="true">Date (newest first)</strong>' in html
    assert 'name="from" value=""' in html and '<input type="hidden" name="sort" value="date">' in html


def test_the_page_writes_its_days_numbers_and_language_names_in_its_language() -> None:
    """Issue 79: a hit's day and the counts by the page's locale, its datetime ISO (the JSON API's
    date stays ISO: Hit.date); languages named by CLDR in another language than English."""
    templates = page_templates()
    templates.globals.update(base="", facet_titles=FACET_TITLES, matching=matching)
    request = SearchRequest.from_params([("q", "a"), ("from", "2024-01-01")])
    page = SearchPage(request, total=12_345, rows=10)
    page.hits.append(Hit("t", "https://a.example/x", highlighted("s"), "src", "application/pdf", "PDF", "2024-05-06", ""))
    shown = {}
    for tag in ("en", "de", "ja"):
        with speaking(tag):
            shown[tag] = templates.get_template("search.html").render(
                page=page, query=request, searcher=None, error="", default_rows=10, here="/"
            )
    assert '<time datetime="2024-05-06">May 6, 2024</time>' in shown["en"] and "12,345 documents match" in shown["en"]
    assert '<time datetime="2024-05-06">06.05.2024</time>' in shown["de"] and "12.345" in shown["de"]
    assert '<time datetime="2024-05-06">2024/05/06</time>' in shown["ja"]
    assert page.hits[0].date == "2024-05-06"  # as the JSON API gives it
    assert language_name("de") == "German" and language_name("zz") == "zz"
    with speaking("de"):
        assert language_name("de") == "Deutsch" and language_name("en-us") == "Englisch (Vereinigte Staaten)"
        assert language_name("<b>") == "<b>" and language_name("zxx") == "No linguistic content"  # unknown to CLDR
        assert date_range_label("2024-01-01", "") == "ab 01.01.2024"
    assert matching(1234) == "1234 documents match" and matching(1, "1") == "1 document matches"  # the command line's
