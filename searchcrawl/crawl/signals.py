"""searchcrawl's own Scrapy signals.

``url_outcome(url, outcome)``: something happened to a URL of the source being crawled (see
searchcrawl/rules/lifecycle.py); the ledger writer records it. Sent with
``crawler.signals.send_catch_log(url_outcome, url=..., outcome=...)`` by the spider and the
components that learn what happened to a URL without raising (a redirect followed, a document
cached, a duplicate found).
"""

url_outcome = object()

robots_txt_read = object()
"""``robots_txt_read(site, robots)``: a site's robots.txt was fetched and parsed (a
``searchcrawl.rules.robots_txt.RobotsTxt``; a 4xx's has no rules), sent by middlewares/robots.py
on each fetch that gets an answer (a site's again if its record was forgotten to bound memory);
middlewares/sitemaps.py takes its ``Sitemap:`` lines the first time."""

urls_excluded = object()
"""``urls_excluded(rows)``: URLs the source's rules keep out (``(url, status, depth, rule)``
rows), sent by the admission (crawl/requests.py) once per page or batch; the ledger writer
records them."""

run_started = object()
"""``run_started(run, frontier)``: this process works on a run now (a ``searchcrawl.crawl.run.Run``,
and the run's ``Frontier``), sent by the frontier scheduler when it opens, before the item pipelines
open. Not sent when the process takes no run (it then crawls nothing)."""

solr_pushed = object()
"""``solr_pushed(seconds, result)``: a push of the document cache to Solr ended (a
``searchcrawl.index.push.PushResult``), after ``seconds``; sent by the Solr pipeline
(pipelines/solr_push.py) for each push it made itself (not one skipped while another process
pushed). The crawl's metrics (extensions/crawl_metrics.py) observe its latency."""

run_ended = object()
"""``run_ended(run, state, reason, counters, stores)``: the run's end is recorded (issue 60), sent
by the run's end (extensions/run_end.py ``RunEnd.report``) in its worker thread, once per run and
session by the one process that records it, with the crawl's ``Stores``; the notifications
(extensions/run_notify.py) take it."""
