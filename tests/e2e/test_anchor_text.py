"""Anchor text through real crawls into the real Solr (issue 100): a page is found by the words
other pages of the source use in their links to it, only from pages every one of its readers may
read, and they follow those pages through change (a new anchor, new readers, the page gone),
each set in place on the page linked, which is not fetched again (it answers 304).

The site is behind basic credentials (tests/e2e/test_access_crawls.py's ``ConditionalSite``), its
pages public but for ``/hr/``, which the source's ``[access]`` gives to ``group:hr``; searches are
the search page's (``run_search``), trimmed as a visitor's and as an hr member's."""

from __future__ import annotations

import random
import string
import uuid

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.search.request import SearchRequest
from searchcrawl.search.results import run_search
from searchcrawl.search.trimmed_index import TrimmedIndex
from tests.conftest import Project
from tests.e2e.test_access_crawls import PASSWORD, ConditionalSite, by_url, crawl, page, web_source

VISITOR = Principals.anonymous()
HR_MEMBER = Principals.of("ann", [Principal("group:hr", "test")])


def word() -> str:
    """A word no other test's document holds (letters only: the analysis splits digits off)."""
    return "".join(random.choices(string.ascii_lowercase, k=10))  # noqa: S311 - a test's word, not a secret


def found(project: Project, site: ConditionalSite, text: str, principals: Principals) -> set[str]:
    """The paths of the site's pages the search page finds for ``text``, as ``principals``."""
    hits = run_search(TrimmedIndex(SolrIndex(project.solr_url, timeout=30), principals), SearchRequest(text), rows=50).hits
    return {hit.url[len(site.url) - 1 :] for hit in hits if hit.url and hit.url.startswith(site.url)}


def access(public_hr: bool) -> str:
    hr = "public" if public_hr else "group:hr"
    return f'[access]\nallow = ["public"]\n[[access.rules]]\npaths = ["/hr/"]\nallow = ["{hr}"]\n'


def test_a_page_is_found_by_the_words_of_links_to_it_that_its_readers_may_read(project: Project, solr) -> None:
    fish, secret, ledger, guide = word(), word(), word(), word()
    site = ConditionalSite(
        {
            "/index.html": page("Home", f'<a href="/policy.html">{fish} handbook</a> <a href="/hr/pay.html">pay</a>'),
            "/policy.html": page("Policy"),
            # hostile: a restricted page anchors a public one with words its readers alone may read
            "/hr/pay.html": page("Pay", f'<a href="/policy.html">{secret} merger</a> <a href="/hr/bands.html">{ledger}</a>'),
            "/hr/bands.html": page("Bands"),
        }
    )
    try:
        name = f"anchors-{uuid.uuid4().hex[:6]}"
        project.source(name, web_source(site, access(public_hr=False)))
        report = crawl(project, name, ACCESS_SECRET=PASSWORD)
        assert len(report["new"]) == 4, report
        # the policy page never says it: the home page's link does
        assert found(project, site, fish, VISITOR) == found(project, site, fish, HR_MEMBER) == {"/index.html", "/policy.html"}
        assert found(project, site, secret, VISITOR) == set()
        assert found(project, site, secret, HR_MEMBER) == {"/hr/pay.html"}  # its own text: never through the public page
        assert found(project, site, ledger, HR_MEMBER) == {"/hr/pay.html", "/hr/bands.html"}  # the same readers: counts
        assert found(project, site, ledger, VISITOR) == set()
        docs = by_url(solr, name)
        assert docs[f"{site.url}policy.html"]["anchor"] == [f"{fish} handbook"]
        assert docs[f"{site.url}hr/bands.html"]["anchor"] == [ledger]

        # nothing changed: nothing is sent to Solr, no document pushed and no anchor field set in place
        site.served.clear()
        report = crawl(project, name, ACCESS_SECRET=PASSWORD)
        assert not report["changed"] and not report["new"] and len(report["not_modified"]) == 4, report
        assert {url: doc["_version_"] for url, doc in by_url(solr, name).items()} == {
            url: doc["_version_"] for url, doc in docs.items()
        }

        # the linking page changes its link's words: the page linked is set in place, not fetched again
        site.pages["/index.html"] = page("Home", f'<a href="/policy.html">{guide} guide</a> <a href="/hr/pay.html">pay</a>')
        site.served.clear()
        report = crawl(project, name, ACCESS_SECRET=PASSWORD)
        assert report["changed"] == [f"{site.url}index.html"], report
        assert ("/policy.html", 304) in site.served and ("/policy.html", 200) not in site.served, site.served
        assert found(project, site, fish, VISITOR) == set()
        assert found(project, site, guide, VISITOR) == {"/index.html", "/policy.html"}

        # the hr pages become public (a rule, on their 304s): their words now count for every reader
        project.source(name, web_source(site, access(public_hr=True)))
        report = crawl(project, name, ACCESS_SECRET=PASSWORD)
        assert sorted(report["changed"]) == [f"{site.url}hr/bands.html", f"{site.url}hr/pay.html"], report
        assert found(project, site, secret, VISITOR) == {"/hr/pay.html", "/policy.html"}
        assert found(project, site, ledger, VISITOR) == {"/hr/pay.html", "/hr/bands.html"}

        # and private again: the public page loses them at once (its own readers never changed)
        project.source(name, web_source(site, access(public_hr=False)))
        crawl(project, name, ACCESS_SECRET=PASSWORD)
        assert found(project, site, secret, VISITOR) == set()
        assert found(project, site, secret, HR_MEMBER) == {"/hr/pay.html"}
        assert found(project, site, ledger, HR_MEMBER) == {"/hr/pay.html", "/hr/bands.html"}  # set anew for hr

        # the linking page is gone: its words with it
        del site.pages["/index.html"]
        report = crawl(project, name, ACCESS_SECRET=PASSWORD)
        assert f"{site.url}index.html" in report["deleted"], report
        assert found(project, site, guide, VISITOR) == set()
        assert "anchor" not in by_url(solr, name)[f"{site.url}policy.html"]
    finally:
        site.stop()
