"""searchcrawl.content.nesting: pages nested deeper than libxml2 parses (plain functions, real lxml)."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from lxml import html

from searchcrawl.content.extract import visible_text
from searchcrawl.content.nesting import MAX_DEPTH, flatten, too_deep

ROOT = str(Path(__file__).resolve().parents[2])  # this checkout, whatever PYTHONPATH says


def depth_of(root) -> int:  # type: ignore[no-untyped-def]
    return max(len(list(element.iterancestors())) for element in root.iter())


def parsed(page: str):  # type: ignore[no-untyped-def]
    return html.document_fromstring(page, parser=html.HTMLParser(huge_tree=True))


def test_a_page_deeper_than_libxml2_parses_keeps_its_text_and_links_when_flattened() -> None:
    deep = 5000
    page = (
        "<!DOCTYPE html><html><head><title>T</title><style>p {}</style></head><body><!-- c --><p>one &amp; <b>two</b></p>"
        + "<div class='x>y'>" * deep
        + "<p>deep <a href='/d'>link</a> <img src='i.png'><br/><span/>text</p><script>if (a < b) {}</script>"
        + "</div>" * deep
        + "<p>after <a href='/a'>after</a></p></body></html>"
    )
    assert too_deep(parsed(page))  # libxml2 stopped at 2,048: the text after them is lost
    assert "after" not in visible_text(parsed(page))
    root = parsed(flatten(page))
    assert not too_deep(root) and depth_of(root) <= MAX_DEPTH + 1
    assert visible_text(root.find("body")) == "one & two deep link text after after"
    assert [a.get("href") for a in root.iter("a")] == ["/d", "/a"]
    assert root.findtext(".//title") == "T" and root.find(".//img").get("src") == "i.png"


def test_a_page_of_ordinary_depth_is_left_alone() -> None:
    page = "<html><body>" + "<div>" * 150 + "<p>x</p>" + "</div>" * 150 + "</body></html>"
    assert not too_deep(parsed(page))
    assert flatten(page) == page  # nothing under MAX_DEPTH is changed


def test_links_nested_below_the_depth_kept_and_end_tags_that_close_nothing() -> None:
    page = "<html><body>" + "<span>" * 300 + "<a href='/x'>x</a></em></div>" + "</span>" * 300 + "<p>end</p></body></html>"
    root = parsed(flatten(page))
    assert [a.get("href") for a in root.iter("a")] == ["/x"] and visible_text(root) == "x end"


def test_self_closed_elements_and_scripts_below_the_depth() -> None:
    """libxml2 closes ``<div/>`` and ``<script/>`` where they open: what follows is the page's."""
    page = (
        "<html><body>"
        + "<div>" * 3000
        + "<script src='a.js'/><p>after the script</p><div/>" * 3
        + "</div>" * 3000
        + "</body></html>"
    )
    root = parsed(flatten(page))
    assert visible_text(root) == "after the script after the script after the script"
    assert depth_of(root) <= MAX_DEPTH + 2  # the page and its body, then MAX_DEPTH levels at most


def test_a_page_of_tags_never_closed_is_read_once_not_retried_at_every_split() -> None:
    """Issue 53 review: ``<`` with no ``>`` after it was retried at every split point of its tag
    (cubic: 2,000 bytes of ``<a`` took 48 s of CPU, 64 KB never ended), on the reactor's thread.
    Run apart, with a timeout the old expression overran by hours: no timing of this machine."""
    code = (
        "from searchcrawl.content.nesting import flatten\n"
        "page = '<html><body>' + '<div>' * 300 + '<a' * 32768\n"
        "flatten(page)\n"
        "page = '<html><body>' + '<div>' * 300 + '<a \"' * 16384\n"
        "flatten(page)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, env={**os.environ, "PYTHONPATH": ROOT})


def test_tags_written_in_raw_text_elements_below_the_depth_stay_text() -> None:
    """Issue 53 review: only script and style were copied through, so a link written in a
    <textarea>, <xmp>, <noembed>, <noframes>, <iframe> or <title> (text to libxml2, as to HTML5)
    became a link of the flattened page, and an element of its depth."""
    holders = ("textarea", "xmp", "noembed", "noframes", "iframe", "title")
    page = (
        "<html><body>"
        + "<div>" * 260
        + "".join(f"<{tag}><a href='/from-{tag}'>in <b>{tag}</b></a></{tag}>" for tag in holders)
        + "<p><a href='/after'>after</a></p><plaintext><a href='/from-plaintext'>x</a></plaintext><a href='/z'>"
    )
    root = parsed(flatten(page))
    assert [a.get("href") for a in root.iter("a")] == ["/after"]
    assert [root.find(f".//{tag}").text for tag in holders] == [f"<a href='/from-{tag}'>in <b>{tag}</b></a>" for tag in holders]
    assert root.find(".//plaintext").text == "<a href='/from-plaintext'>x</a></plaintext><a href='/z'>"


def test_void_elements_kept_at_any_depth_and_a_new_link_closes_the_open_one() -> None:
    """Issue 53 review: under 40 open kept elements (applets) every void element became a space
    (a robots noindex and a canonical link lost: the page indexed against its meta), and 100
    unclosed <a>s, which libxml2 closes each at the next, were counted 100 deep: 40 kept."""
    from searchcrawl.content.extract import meta_tags

    top = "<html><head><title>t</title></head><body>" + "<div>" * 300
    page = top + "<applet>" * 40 + '<meta name="robots" content="noindex"><link rel="canonical" href="/c">' + "<div>" * 10
    root = parsed(flatten(page))
    assert meta_tags(root).get("robots") == "noindex" and [e.get("href") for e in root.iter("link")] == ["/c"]
    page = top + "".join(f"<a href='/l{i}'>x" for i in range(100))
    assert [a.get("href") for a in parsed(flatten(page)).iter("a")] == [f"/l{i}" for i in range(100)]


@pytest.mark.parametrize("unit", ["<div>", "a<b>", "<i></x>"])
def test_a_page_of_a_million_tags_below_the_depth_is_flattened_in_a_few_times_its_size(unit: str) -> None:
    """Issue 53 review: each tag taken out was copied, each tag name was a string of its own in
    the open elements, each (tag, written) a tuple: 4 MB pages took 90-150 MB more. Measured by
    tracemalloc (what Python allocates, not how fast this machine is)."""
    page = "<html><body>" + "<div>" * 300 + unit * ((1 << 20) // len(unit))
    tracemalloc.start()
    try:
        flat = flatten(page)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert flat.count(" ") == page.count("<") - MAX_DEPTH  # each tag below the depth: a space
    assert peak < 8 * len(page)  # the open elements, the page written: 22-35 times before
