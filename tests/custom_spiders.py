"""A source's own spider class, as a user would write one (used by test_crawl)."""

from searchcrawl.spiders.source import SourceSpider


class TopicsOnlySpider(SourceSpider):
    """Follows every link but indexes only topic pages."""

    def parse_document(self, response, depth, headers):
        for output in super().parse_document(response, depth, headers):
            if hasattr(output, "url") and not hasattr(output, "callback") and "topic" not in output.url:
                continue
            yield output
