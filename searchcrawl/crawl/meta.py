"""Every ``Request.meta`` key searchcrawl reads or writes, declared once.

A request carries what the components that meet it need to know about it; the keys are named
here so that a reader finds each one's meaning, writer and readers in one place, and so that a
typo is a NameError instead of a silently missing value. Keys of Scrapy and scrapy-playwright
that searchcrawl sets or reads are listed too (their meaning is theirs).

Which keys survive in the durable frontier (a request queued in one process, fetched by another
or after a restart) is ``PERSISTED`` at the end; everything else lives for one request only.
"""

from __future__ import annotations

from typing import Any

# --- searchcrawl's own ------------------------------------------------------------------------

RENDER = "searchcrawl_render"
"""'browser' (render through Chromium now) or 'auto' (static first, render if the page is an
empty shell). Set by the request factory (crawl/requests.py) from the source's render rules
(rules/rendering.py); read by middlewares/render.py and middlewares/conditional.py. Persisted in
the frontier."""

ADMITTED = "searchcrawl_admitted"
"""The URL the source's rules admitted this request for: set by crawl/requests.py on a request
of a URL this process admitted (``Admission``, ``Admission.was_admitted``). A request whose URL
is another (a redirect's target: Scrapy copies the meta) or that has none (a custom spider's own
request, a URL another process queued) is admitted by middlewares/scope.py or
middlewares/boundary_check.py, which read it; a URL is admitted once."""

PREVIOUS = "searchcrawl_previous"
"""What the index holds for the URL (checksum, Last-Modified, ETag, state): set by
middlewares/conditional.py with the conditional GET's validators; read by the spider (a 304, a
changed document) and by pipelines/changes.py."""

AUTH_SENT = "searchcrawl_auth_sent"
"""True: the request carried a source's credentials (set and read by middlewares/site_auth.py: a
401 or 403 to it means the site refused them, status 936; for NTLM set by handlers/ntlm.py when
its handshake sent the answer to a challenge)."""

AUTH_ANSWERED = "searchcrawl_auth_answered"
"""The URL of the request sent again answering a digest challenge (a redirect of it copies the
meta but has another URL, and answers its own challenge) (set and read by
middlewares/site_auth.py: a second 401 is a refusal, not a new challenge, so a site that always
challenges cannot loop). Persisted in the frontier, through which the request goes again."""

LOGIN_REQUEST = "searchcrawl_login"
"""The origin a form login's own request logs in to (its login page, the form sent, a redirect
of its answer): set by middlewares/form_login.py, which fetches them itself. No page of the
crawl: the boundary check, robots.txt and the conditional GET let it pass, nothing records it."""

LOGIN_SESSION = "searchcrawl_login_session"
"""The number of the form-login session a request was sent in (middlewares/form_login.py): a
request that finds its session expired logs in again only if no newer session exists."""

LOGIN_RETRIED = "searchcrawl_login_retried"
"""How many times the request was sent again after finding its form-login session expired
(middlewares/form_login.py; True in frontiers of older versions: once): sent again, it gets
status 936 if it finds a session fresh from a login expired, or after MAX_RESENDS
(rules/login_forms.py). Persisted in the frontier, through which the request goes again."""

LOGIN_EXPIRY = "searchcrawl_login_expiry"
"""What the answer to a page request meant for its form-login session and the login it waits
for: decided by middlewares/form_login.py's gate before the site's turn is given back, read (and
removed) by FormLoginMiddleware.process_response."""

KNOWN = "searchcrawl_known"
"""What the document table knew of the URL as the frontier leased it (store/frontier.py
``Known``: its state, validators, last fetch, the URL it duplicates), so a conditional GET and a
sitemap's lastmod need no lookup of their own: set by crawl/requests.py; read by
middlewares/sitemaps.py and (consumed) by middlewares/conditional.py."""

ROBOTS_REQUEST = "searchcrawl_robots"
"""Set (true: the robots middleware's token of the fetch) when this request fetches a robots.txt
(middlewares/robots.py); the boundary check and the conditional GET let it pass, the robots
middleware does not check it against itself, and counts its bytes (a copy of it sent again,
answering a digest challenge, keeps the token)."""

SITEMAP_REQUEST = "searchcrawl_sitemap"
"""True: this request fetches a sitemap (middlewares/sitemaps.py, through engine.download, so no
callback sees it); like a robots.txt fetch, the boundary check and the conditional GET let it
pass, and it waits for no sitemap."""

LEAVES_BOUNDARY = "searchcrawl_leaves_boundary"
"""The one URL this request may fetch outside the boundary: the target of a temporary redirect
the redirect policy let out (middlewares/redirect.py); read by middlewares/boundary_check.py and
by the spider (the target is recorded with the URL it was reached through)."""

SITE_SLOT = "searchcrawl_site_slot"
"""The download slot whose per-site semaphore this request holds: middlewares/site_concurrency.py."""

SITE_LEASE = "searchcrawl_site_lease"
"""The fleet-wide site slot this request holds in a shared crawl: middlewares/fleet.py."""

LEASED = "searchcrawl_leased"
"""True on a request the scheduler made from a URL it leased from the frontier: when a suspend or
stop closes the crawl, such a request not yet sent is given back (extensions/give_back.py), its
URL queued again; other requests (robots.txt, sitemaps, logins) go on. Set by the request
factory (crawl/requests.py) for frontier_scheduler.py."""

WAKE = "searchcrawl_wake"
"""True on the placeholder request a shared crawl's scheduler hands to ``engine.crawl()`` only
to make the engine ask the scheduler again; the scheduler never queues it (frontier_scheduler.py)."""

# --- Scrapy's and scrapy-playwright's, as searchcrawl uses them ------------------------------

DEPTH = "depth"
"""Links from a seed (Scrapy's DepthMiddleware key; that middleware is off: settings.py): given
once, as the URL enters the crawl (crawl/requests.py), and kept by the frontier; read by every
boundary decision."""

REDIRECT_URLS = "redirect_urls"
"""The URLs a redirected request came through (Scrapy's RedirectMiddleware)."""

REDIRECT_REASONS = "redirect_reasons"
REDIRECT_TIMES = "redirect_times"
RETRY_TIMES = "retry_times"
"""Scrapy's counters of a request's redirects and retries: kept through the frontier, so that a
resumed crawl does not start a redirect chain's or a retry's count again."""

COOKIEJAR = "cookiejar"
"""Which of Scrapy's cookie jars (CookiesMiddleware) a request uses: in a source with
``[[auth]]`` tables, the request's origin (a form login's, for its origins:
middlewares/form_login.py), so that no cookie crosses to another port of a host."""

DONT_REDIRECT = "dont_redirect"
DONT_RETRY = "dont_retry"
HANDLE_HTTPSTATUS_ALL = "handle_httpstatus_all"
"""Scrapy's switches: robots.txt fetches set all three (they follow redirects themselves, are
fetched once, and read any status)."""

DOWNLOAD_MAXSIZE = "download_maxsize"
"""Scrapy's per-request bound on a response's bytes: a sitemap's is SEARCHCRAWL_SITEMAP_MAX_BYTES,
not the source's (possibly much larger) ``max_download_bytes``."""

PROXY = "proxy"
PROXY_KEYS = (PROXY, "_auth_proxy", "_scheme_proxy")
"""Scrapy's proxy of a request (its HTTP/1.1 handler connects there) and HttpProxyMiddleware's
bookkeeping of it: set by middlewares/proxy.py alone, from the source's ``[proxy]``, for every
request (whatever a copied meta carried); read by the spider and middlewares/robots.py to tell a
proxy's failure from a site's. Never persisted: decided afresh for each request."""

PLAYWRIGHT = "playwright"
"""True: scrapy-playwright downloads the request through Chromium (set by middlewares/render.py
with ``playwright_page_methods`` and ``playwright_page_goto_kwargs``)."""

PLAYWRIGHT_INCLUDE_PAGE = "playwright_include_page"
PLAYWRIGHT_PAGE = "playwright_page"
PLAYWRIGHT_PAGE_INIT_CALLBACK = "playwright_page_init_callback"
"""scrapy-playwright leaves a page open when asked to include it, and puts it in the request's
meta; it calls the init callback with each page it opens for the request. crawl/handlers/chromium.py
uses both for every page the crawl renders (the render bounded from its page's opening, the page
closed, bounded, as the download ends) and takes them out of the meta again; a spider that asked
for a page keeps it, and its own init callback still runs."""

CONNECTION_REFUSALS = "searchcrawl/connection_refusals"
"""Not a meta key: the crawl's stat of URLs whose TLS handshake or proxy failed (statuses 937,
938), counted by the spider and middlewares/robots.py; run_end.settle_run keeps orphans then
(pages not seen: their links are unknown)."""

REFERENCE = "searchcrawl_reference"
"""What a source's agent listed of a document (searchcrawl/agents/base.py Reference, as JSON-able
data: token, modified, fields, metadata, and its content when small): set by
crawl/agent_spider.py, read by crawl/handlers/agent.py and the spider. Persisted in the frontier,
so a resumed run needs no second listing of what was queued."""

PROBE_REQUEST = "searchcrawl_not_found_probe"
"""True on the request for a URL that cannot exist, which crawl/middlewares/not_found_probe.py
makes once per site and crawl to learn the site's not-found page: an own request of the crawl."""

NOT_FOUND_PAGE = "searchcrawl_not_found_page"
"""The site's not-found page (content/soft_errors.py ``NotFoundPage``), set on a page's request by
crawl/middlewares/not_found_probe.py when the site answers a URL that cannot exist with a page;
the spider compares the page with it. Never persisted: learned afresh in each crawl."""

FETCH_RECORDS = (
    "download_latency",
    "cache_timestamp",
    "_dont_cache",
    "redirect_ttl",
    "_auth_proxy",
    "_scheme_proxy",
    NOT_FOUND_PAGE,
)
"""What Scrapy's downloader and middlewares note in a request's meta about its one fetch: never
carried to another request (the spider re-requests an empty shell for the browser from its
response's meta), which Scrapy's MetaCopyDetectionMiddleware warns of, and which the frontier does
not keep anyway. Scrapy's keys in ``PERSISTED`` go on with a request on purpose (settings.py:
META_COPY_WARN_SKIP_KEYS)."""

PERSISTED = (
    REDIRECT_URLS,
    REDIRECT_REASONS,
    REDIRECT_TIMES,
    RETRY_TIMES,
    LEAVES_BOUNDARY,
    RENDER,
    AUTH_ANSWERED,
    LOGIN_RETRIED,
    REFERENCE,
)
"""The keys a request keeps through the durable frontier, besides its URL and depth (JSON-able
values only: requests are stored as data, never pickled)."""


DUPLICATE_OF = "searchcrawl_duplicate_of"
"""For a document of an agent's source that was a duplicate: (the change token it had, the URL
it duplicates). Set by middlewares/conditional.py; crawl/handlers/agent.py keeps it a duplicate
without reading it when its token is the same (the original still indexed)."""

AGENT_DOWNLOAD = "searchcrawl_agent_download"
"""True on the request crawl/handlers/agent.py makes for a reference's ``location`` (its origin
in the source's ``fetch_origins``): an own request of the crawl, never redirected."""


def own_request(request: Any) -> bool:
    """Is ``request`` one the crawl makes for itself (a robots.txt, a sitemap, a form login, an
    agent's document downloaded from its location, a not-found probe),
    not a URL of the source: no boundary check, no conditional GET, no ledger row, and it never
    waits for a sitemap (a sitemap behind a form login waits for the login)."""
    meta = request.meta
    return bool(
        meta.get(ROBOTS_REQUEST)
        or meta.get(SITEMAP_REQUEST)
        or meta.get(LOGIN_REQUEST)
        or meta.get(AGENT_DOWNLOAD)
        or meta.get(PROBE_REQUEST)
    )
