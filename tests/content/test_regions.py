"""Content regions (searchcrawl/content/regions.py): what of a page is its text."""

from __future__ import annotations

import pytest
from lxml import html
from pydantic import ValidationError

from searchcrawl.config.source import SourceSettings
from searchcrawl.content.extract import html_attributes, visible_text
from searchcrawl.content.regions import ContentRegions, RegionsTable

PAGE = """<html><head><title>Travel policy</title></head><body>
<header><a href="/">Home</a> <a href="/news">News</a></header>
<nav role="navigation"><ul><li><a href="/hr">Human resources</a></li></ul></nav>
<div role="search"><input name="q"> Search the intranet</div>
<main>
  <article>
    <header><h1>Travel policy</h1><p>Updated (2026).</p></header>
    <p>Book trains <b>before</b> flights.</p>
    <div class="share">Share on Teams</div>
    <footer>Owner: the travel desk</footer>
  </article>
  <aside>Related: expenses</aside>
</main>
<div data-searchcrawl-exclude>Cookie notice</div>
<footer>Copyright the company</footer>
</body></html>"""


def body(text: str = PAGE):
    return html.fromstring(text).find("body")


def regions(**table: object) -> ContentRegions:
    return ContentRegions(RegionsTable.model_validate(table))


def test_landmarks_and_marked_regions_are_dropped_by_default() -> None:
    found = regions().text(body(), "https://intranet.example/policies/travel")
    assert found.text == "Travel policy Updated (2026). Book trains before flights. Share on Teams Owner: the travel desk"
    assert "landmarks" in found.dropped and "[data-searchcrawl-exclude]" in found.dropped and not found.whole


def test_keep_and_drop_selectors_css_and_xpath() -> None:
    found = regions(keep=["article"], drop=["div.share", "xpath://article/footer"]).text(body(), "https://x/")
    assert found.text == "Travel policy Updated (2026). Book trains before flights."
    assert found.kept == ("article",) and "div.share" in found.dropped


def test_a_rule_per_url_pattern_adds_its_selectors() -> None:
    table = regions(rules=[{"patterns": ["/policies/"], "drop": [".share"]}])
    assert "Share on Teams" not in table.text(body(), "https://x/policies/travel").text
    assert "Share on Teams" in table.text(body(), "https://x/news/1").text


def test_site_owners_mark_what_to_keep() -> None:
    page = PAGE.replace("<p>Book trains", "<p data-searchcrawl-include>Book trains")
    assert regions().text(body(page), "https://x/").text == "Book trains before flights."


def test_a_page_all_banner_keeps_its_whole_text_and_landmarks_can_be_kept() -> None:
    page = "<html><body><header>Only a banner here</header></body></html>"
    found = regions().text(body(page), "https://x/")
    assert found.text == "Only a banner here" and found.whole
    unmarked = visible_text(body()).replace(" Cookie notice", "")  # the site's own mark still holds
    assert regions(landmarks=False).text(body(), "https://x/").text == unmarked


def test_the_page_text_uses_the_regions_and_the_tree_is_left_as_it_was() -> None:
    root = html.fromstring(PAGE)
    before = html.tostring(root)
    attributes = html_attributes(root, {}, lambda element: regions().text(element, "https://x/").text)
    assert "Human resources" not in attributes["content"] and attributes["title"] == "Travel policy"
    assert html.tostring(root) == before  # links are still extracted from the whole page


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"keep": ["div[[["]}, "is not a CSS selector"),
        ({"drop": ["xpath://div[@"]}, "is not a XPath selector"),
        ({"rules": [{"patterns": ["(unclosed"], "keep": ["main"]}]}, "is not a regular expression"),
        ({"rules": [{"keep": ["main"]}]}, "patterns"),
        ({"keeps": ["main"]}, "unknown key 'keeps'"),
    ],
)
def test_a_bad_selector_refuses_the_source_file(table: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        SourceSettings.model_validate({"seeds": ["https://x/"], "regions": table})
