"""Every word a page shows goes through the catalogues (issue 79): no template holds English text
outside ``_()`` or ``{% trans %}``, in its text or in an attribute a person reads (title,
placeholder, aria-label, alt). Read from the templates' source, not from rendered pages, so a
branch no test renders is held too."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

TEMPLATES = Path(__file__).resolve().parents[2] / "searchcrawl" / "web" / "templates"
# Jinja's own syntax, removed before the HTML is read: a trans block (translated whole), an
# expression (its words are values or _() calls), a statement, a comment
JINJA = re.compile(r"{%-?\s*trans\b.*?{%-?\s*endtrans\s*-?%}|{{.*?}}|{%.*?%}|{#.*?#}", re.S)
READ_ATTRIBUTES = {"title", "placeholder", "aria-label", "alt"}
# what is never translated: these words, and text inside these elements (code, examples)
UNTRANSLATED_WORDS = {"searchcrawl", "ndcg"}  # the brand; a metric's name (nDCG@10)
UNTRANSLATED_ELEMENTS = {"code", "pre", "style", "script", "kbd", "samp"}
WORD = re.compile(r"[^\W\d_]{2,}")


class English(HTMLParser):
    """The words a person reads in a template with its Jinja syntax removed."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.inside: list[str] = []
        self.words: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in {"br", "hr", "img", "input", "meta", "link", "wbr", "source"}:
            self.inside.append(tag)
        for name, value in attrs:
            if name in READ_ATTRIBUTES and value:
                self.found(value)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.inside:
            while self.inside and self.inside.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if not UNTRANSLATED_ELEMENTS.intersection(self.inside):
            self.found(data)

    def found(self, text: str) -> None:
        self.words.extend(word for word in WORD.findall(text) if word.lower() not in UNTRANSLATED_WORDS)


def english_words(source: str) -> list[str]:
    parser = English()
    parser.feed(JINJA.sub(" ", source))
    parser.close()
    return parser.words


@pytest.mark.parametrize("template", sorted(path.name for path in TEMPLATES.glob("*.html")))
def test_no_template_shows_untranslated_text(template: str) -> None:
    words = english_words((TEMPLATES / template).read_text(encoding="utf-8"))
    assert not words, f"{template} shows text outside _() or {{% trans %}}: {' '.join(words)}"


def test_the_check_finds_text_and_attributes_and_passes_translated_ones() -> None:
    assert english_words('<h1>Runs</h1><input placeholder="a phrase">') == ["Runs", "phrase"]
    assert english_words('<p title="{{ _("Hits") }}">{{ _("Hits") }} {{ page.total|number }}</p>') == []
    assert english_words("<p>{% trans n=1 %}Shown {{ n }}{% endtrans %} <code>title:word</code> searchcrawl</p>") == []
    assert english_words('<a href="/x" class="hit-list">{% if a %}{{ a }}{% endif %} &middot; </a>') == []
