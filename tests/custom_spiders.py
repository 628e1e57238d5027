"""A source's own spider class, as a user would write one (used by test_crawl), named by a source by
the name the tests' distribution registers it under (tests/installed/*.dist-info/entry_points.txt)."""

from searchcrawl.crawl.spider import SourceSpider


class TopicsOnlySpider(SourceSpider):
    """Follows every link but indexes only topic pages."""

    def parse_document(self, response, depth, headers):
        for output in super().parse_document(response, depth, headers):
            if hasattr(output, "url") and not hasattr(output, "callback") and "topic" not in output.url:
                continue
            yield output


class RaisingSpider(SourceSpider):
    """Raises on one page as a bad XPath on a huge page would (lxml's XPathEvalError)."""

    def parse_document(self, response, depth, headers):
        if response.url.endswith("/boom.html"):
            response.xpath("//p[")  # raises
        yield from super().parse_document(response, depth, headers)


class LosingSpider(SourceSpider):
    """Loses one page's outcome, as a middleware that swallows a response (or a failed write of
    its row) would: the page is fetched and nothing is reported for it."""

    def parse(self, response):
        if response.url.endswith("/lost.html"):
            return
        yield from super().parse(response)
