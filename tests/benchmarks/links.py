"""CPU per page of a page's links: Scrapy's LinkExtractor (what the crawler used before
content/links.py) against DocumentLinks, on every HTML page of the shared corpora's real sites.

    .venv/bin/python -m tests.benchmarks.links [--rounds 3]

Each page is parsed first (not timed); both then read the same tree. Rounds alternate the two,
with DocumentLinks' cache emptied each round, and the best round of each is printed (CPU time of
this process): the machine's speed moves within a run.
"""

from __future__ import annotations

import argparse
import tarfile
import time

from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.response import get_base_url

from searchcrawl.content.links import DocumentLinks
from searchcrawl.crawl.spider import DOCUMENT_EXTENSIONS, ignored_suffixes
from searchcrawl.rules.urls import has_extension
from tests.benchmarks.real_sites import CORPORA, SITES

IGNORED = ignored_suffixes(DOCUMENT_EXTENSIONS)


def pages(archive: str) -> list[HtmlResponse]:
    responses = []
    with tarfile.open(CORPORA / archive) as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".html") and (page := tar.extractfile(member)) is not None:
                response = HtmlResponse(f"http://intranet.example/{member.name}", body=page.read(), encoding="utf-8")
                response.selector.root  # parsed before timing  # noqa: B018
                responses.append(response)
    return responses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    scrapy = LinkExtractor(tags=("a", "area", "frame", "iframe"), attrs=("href", "src"), deny_extensions=[])
    for site in ("sphinx", "nutch"):
        responses = pages(SITES[site][0])
        links = DocumentLinks(IGNORED)

        def old(response: HtmlResponse) -> object:
            return [link.url for link in scrapy.extract_links(response) if not has_extension(link.url, IGNORED)]

        def new(response: HtmlResponse, links: DocumentLinks = links) -> object:
            return links.of(response.selector.root, response.url, get_base_url(response), response.encoding)

        best: dict[str, float] = {}
        for _round in range(rounds):
            for name, extract in (("LinkExtractor", old), ("DocumentLinks", new)):
                links.cache.clear()
                started = time.process_time()
                for response in responses:
                    extract(response)
                best[name] = min(best.get(name, float("inf")), (time.process_time() - started) * 1000 / len(responses))
        ratio = best["LinkExtractor"] / best["DocumentLinks"]
        print(
            f"{site}: {len(responses)} pages; LinkExtractor {best['LinkExtractor']:.2f} ms/page, "
            f"DocumentLinks {best['DocumentLinks']:.2f} ms/page ({ratio:.1f} times less)"
        )


if __name__ == "__main__":
    main()
