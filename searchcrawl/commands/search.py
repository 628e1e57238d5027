"""`scrapy search "<query>"`: query the index from the shell (title, URL and a snippet a hit).

Two sources that crawl one URL hold two Solr documents (ids ``<source>!<url>``, one ``url``);
the search shows one hit per URL: it collapses on ``url`` (the best-scoring document of each
URL). On SolrCloud collapsing works within a shard, and documents are routed by source, so a URL
of two sources may sit on two shards: ``format_hits`` also drops a URL already shown."""

from __future__ import annotations

import argparse
import re

import pysolr
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.config import paths
from searchcrawl.ops.terminal import printable


def format_hits(results: pysolr.Results) -> list[str]:
    """One block of lines per hit: rank and title, URL, snippet."""
    lines = []
    shown: set[str] = set()
    rank = 0
    for doc in results.docs:
        url = doc.get("url") or doc["id"]
        if url in shown:
            continue
        shown.add(url)
        rank += 1
        # highlighting is keyed by the uniqueKey: the document's Solr id, solr_id(source, url)
        snippets = (results.highlighting or {}).get(doc["id"], {}).get("content") or []
        snippet = " ".join(re.sub(r"\s+", " ", snippets[0]).split()) if snippets else doc.get("description", "")
        lines.append(f"{rank}. {doc.get('title') or '(no title)'}")
        lines.append(f"   {doc.get('display_url') or url}")
        if snippet:
            lines.append(f"   {snippet}")
    return lines


def search(
    solr_url: str, query: str, rows: int = 10, source: str | None = None, auth: tuple[str, str] | None = None
) -> pysolr.Results:
    """One hit per URL: Solr's collapse query parser keeps the best-scoring document of each
    ``url`` (``nullPolicy=expand``: a document without one is kept as it is)."""
    client = pysolr.Solr(solr_url, timeout=30, auth=auth)
    filters = ["{!collapse field=url nullPolicy=expand}"]
    if source:
        filters.append(f'source:"{source}"')
    params = {
        "rows": rows,
        "fl": "id,url,source,title,display_url,description",
        "hl": "true",
        "hl.fl": "content",
        "hl.tag.pre": "*",
        "hl.tag.post": "*",
        "fq": filters,
    }
    return client.search(query, **params)


class Command(ScrapyCommand):
    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return '"<query>" [--rows N] [--source NAME]'

    def short_desc(self) -> str:
        return "Search the index (SOLR_URL) and print title, URL and a snippet per hit"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--rows", type=int, default=10)
        parser.add_argument("--source", default=None, help="only documents of this source")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args:
            raise UsageError("a query is needed")
        assert self.settings is not None
        url = paths.solr_url(self.settings)
        try:
            results = search(url, " ".join(args), opts.rows, opts.source, paths.solr_auth(self.settings))
        except (pysolr.SolrError, OSError) as exc:
            print(f"searchcrawl: Solr at {url} did not answer: {exc}")
            self.exitcode = 1
            return
        print(f"{results.hits} documents match {' '.join(args)!r}")
        for line in format_hits(results):
            print(printable(line))  # titles and snippets come from the sites
