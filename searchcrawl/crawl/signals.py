"""searchcrawl's own Scrapy signal.

``url_outcome(url, outcome)``: something happened to a URL of the source being crawled (see
searchcrawl/rules/lifecycle.py); the ledger writer records it. Sent with
``crawler.signals.send_catch_log(url_outcome, url=..., outcome=...)`` by the spider and the
components that learn what happened to a URL without raising (a redirect followed, a document
cached, a duplicate found).
"""

url_outcome = object()
