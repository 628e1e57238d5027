"""Status codes: the HTTP code of a fetched URL, or a crawler code for what HTTP cannot say.

Crawler codes are in the 900s so that one integer column holds both and a user can sort and
count them together. The status table of docs/status-codes.md must match ``CRAWLER_CODES``
(tests/test_readme.py checks it); keep the descriptions user-facing.
"""

from __future__ import annotations

from enum import IntEnum

from searchcrawl.system.translations import N_
from searchcrawl.system.translations import gettext as _


class Status(IntEnum):
    OK = 200

    EXCLUDED_SCHEME = 900
    EXCLUDED_DOMAIN = 901
    EXCLUDED_PORT = 902
    EXCLUDED_PATH = 903
    EXCLUDED_PATTERN = 904
    EXCLUDED_DEPTH = 905
    EXCLUDED_DYNAMIC = 906
    EXCLUDED_ROBOTS = 907
    EXCLUDED_FILTER = 908
    EXCLUDED_REWRITER = 909

    NOINDEX = 910
    DUPLICATE = 911
    UNCHANGED = 912
    DISPLAY_URL_CONFLICT = 913
    ORPHAN = 914
    SITEMAP_UNCHANGED = 915
    LEFT_REPOSITORY = 916
    NAVIGATION_PAGE = 917

    UNSUPPORTED_TYPE = 920
    CONVERSION_FAILED = 921
    TOO_LARGE = 922
    EMPTY = 923
    SOLR_REFUSED = 924
    PROCESSING_ERROR = 925
    CONVERTER_UNAVAILABLE = 926
    ACCESS_UNREADABLE = 927
    SOFT_ERROR = 928
    SOFT_NOT_FOUND = 929

    TIMEOUT = 930
    DNS_FAILURE = 931
    CONNECTION_REFUSED = 932
    CONNECTION_FAILED = 933
    DROPPED = 934
    ROBOTS_UNAVAILABLE = 935
    AUTH_REFUSED = 936
    TLS_FAILED = 937
    PROXY_FAILED = 938

    REDIRECT_LOOP = 940
    INTERNAL_ADDRESS = 941
    URL_TOO_LONG = 942
    REDIRECT_UNREADABLE = 943
    OWN_SERVICE = 944


CRAWLER_CODES: dict[Status, str] = {
    Status.EXCLUDED_SCHEME: N_("excluded: not an http(s) URL (file URLs only in a source with file seeds)"),
    Status.EXCLUDED_DOMAIN: N_("excluded: the host is outside the source's domains (default: the seeds' hosts)"),
    Status.EXCLUDED_PORT: N_("excluded: the port is not allowed for this host"),
    Status.EXCLUDED_PATH: N_("excluded: the path is outside the host's path rules (file URLs: outside the seeds' folders)"),
    Status.EXCLUDED_PATTERN: N_("excluded by a URL pattern rule"),
    Status.EXCLUDED_DEPTH: N_("excluded: more than max_depth links from a seed"),
    Status.EXCLUDED_DYNAMIC: N_("excluded: a query-string URL and index_dynamic_pages is false"),
    Status.EXCLUDED_ROBOTS: N_("excluded by robots.txt"),
    Status.EXCLUDED_FILTER: N_("excluded by a scope filter"),
    Status.EXCLUDED_REWRITER: N_("dropped by the source's URL rewriter"),
    Status.NOINDEX: N_("fetched, kept out of the index by robots noindex"),
    Status.NAVIGATION_PAGE: N_(
        "fetched, kept out of the index as a navigation page or a copy (navigation_pages; its links are followed)"
    ),
    Status.DUPLICATE: N_("same content as another URL of the source, indexed there"),
    Status.UNCHANGED: N_("unchanged since the last crawl (304 or same checksum)"),
    Status.DISPLAY_URL_CONFLICT: N_("its display URL belongs to another URL of the source, indexed there"),
    Status.ORPHAN: N_("no page links to it any more (and the source deletes orphans)"),
    Status.SITEMAP_UNCHANGED: N_(
        "unchanged by its sitemap's word: its lastmod is not newer than its last fetch, so it was "
        "not requested (trust_sitemap_lastmod)"
    ),
    Status.LEFT_REPOSITORY: N_(
        "no longer in its repository (a source of files, a database, mail or an agent): its "
        "listing did not name it, or its incremental agent says it is gone"
    ),
    Status.UNSUPPORTED_TYPE: N_("fetched, but its content type is not indexed"),
    Status.CONVERSION_FAILED: N_("the document could not be converted to text"),
    Status.TOO_LARGE: N_("larger than the source's maximum download size"),
    Status.EMPTY: N_("fetched, but there is no text to index (a converted document: only with index_without_text = false)"),
    Status.SOLR_REFUSED: N_("Solr refused the document (the reason quotes Solr); the source's other documents are indexed"),
    Status.PROCESSING_ERROR: N_(
        "processing the response raised an error (the reason names it); counted like a transient "
        "failure, tried again in the next crawl"
    ),
    Status.CONVERTER_UNAVAILABLE: N_(
        "the document converter (the Tika server) could not be reached or failed: "
        "tried again in the next crawl; the indexed version stays, and it does not count toward max_failures"
    ),
    Status.ACCESS_UNREADABLE: N_(
        "its access list cannot be read (a file's ACL, an agent that gave none), or no rule of "
        "the source's [access] table covers it: never indexed as public; an indexed version leaves the index"
    ),
    Status.SOFT_ERROR: N_(
        "answered, but not with the page: a login page, a bot challenge or a maintenance page "
        "(the reason names the marker, [soft_errors]): not indexed, its links not followed, the indexed version kept; "
        "a transient failure, not counted toward max_failures, but for a login page on an origin the source does not "
        "sign in to (the page went private: it leaves after max_failures)"
    ),
    Status.SOFT_NOT_FOUND: N_(
        "answered, but with a not-found page (a soft 404: a marker, or as like the site's answer "
        "to a URL that cannot exist as [soft_errors] similarity): not indexed, its links not followed, the indexed "
        "version kept; a transient failure, counted toward max_failures"
    ),
    Status.TIMEOUT: N_("the server did not answer in time"),
    Status.DNS_FAILURE: N_("the host name does not resolve"),
    Status.CONNECTION_REFUSED: N_("the server refused the connection"),
    Status.CONNECTION_FAILED: N_("the connection failed (reset, aborted)"),
    Status.DROPPED: N_(
        "the response was dropped by one of Scrapy's safety middlewares, or by a pipeline of a "
        "custom spider (the reason says which)"
    ),
    Status.ROBOTS_UNAVAILABLE: N_(
        "the site's robots.txt could not be fetched (5xx, 429, no answer), or its rules are "
        "too costly to match against this URL: a transient failure, counted toward max_failures; nothing is removed "
        "for it alone"
    ),
    Status.AUTH_REFUSED: N_(
        "the site refused the source's credentials (401 or 403 to an authenticated request, a "
        "failed form login, a session that expired again right after a login, a page that expires alone in a working "
        "session, the login page reached through another name of its server): a "
        "transient failure of the source, not counted toward max_failures; nothing is removed for it"
    ),
    Status.TLS_FAILED: N_(
        "the TLS handshake failed: the site's certificate could not be verified (an unknown CA: "
        "[tls] ca_bundle; a wrong host name; expired), or the site wants a client certificate ([tls] client_cert): a "
        "failure of the source's configuration, not counted toward max_failures; nothing is removed for it"
    ),
    Status.PROXY_FAILED: N_(
        "the source's proxy could not be reached, refused its credentials (407) or could not open a "
        "tunnel to the site: a failure of the source's configuration, not counted toward max_failures; nothing is "
        "removed for it"
    ),
    Status.REDIRECT_LOOP: N_("redirect loop, or chain longer than allowed"),
    Status.INTERNAL_ADDRESS: N_(
        "refused: the host is (or resolves to) a loopback, private or link-local address "
        "that the source's domain and port rules do not admit"
    ),
    Status.URL_TOO_LONG: N_("the URL is longer than SEARCHCRAWL_MAX_URL_LENGTH; never requested"),
    Status.REDIRECT_UNREADABLE: N_(
        "a redirect to a URL that cannot be read (a port that is no number, a broken address); not followed"
    ),
    Status.OWN_SERVICE: N_(
        "refused: one of the installation's own services (a node of its Solr, Tika, the web application, a model or "
        "embedding server, a metrics endpoint), by its name, an address it resolves to, or a redirect; never "
        "requested, whatever the source says"
    ),
}


OWN_CLASS = "searchcrawl"  # the status class of searchcrawl's own codes (CRAWLER_CODES)

_CRAWLER_VALUES = frozenset(int(code) for code in CRAWLER_CODES)


def status_class(status: int | None, own: bool = True) -> str:
    """A status's class, as metrics label it and the charts count it: ``2xx`` .. ``5xx`` (HTTP),
    ``searchcrawl`` (one of its own codes, CRAWLER_CODES: a document's status; with ``own`` false,
    as for a site's response, a code in the 900s is a site's and ``other``), ``other`` (1xx,
    6xx-8xx, a site's 999, ...) or ``none`` (no status yet). The one rule of the metrics (web and
    crawl) and the runs' failure counts."""
    if status is None:
        return "none"
    if 200 <= status < 600:
        return f"{status // 100}xx"
    if own and status in _CRAWLER_VALUES:
        return OWN_CLASS
    return "other"


def describe(code: int | None) -> str:
    """A short human description of any status code, HTTP or crawler, in the current language (a
    page's; English on the command line). HTTP's reason phrases are HTTP's own words."""
    if code is None:
        return _("not fetched yet")
    try:
        return _(CRAWLER_CODES[Status(code)])
    except (ValueError, KeyError):
        from http import HTTPStatus

        try:
            return f"HTTP {HTTPStatus(code).phrase}"
        except ValueError:
            return f"HTTP {code}"


def status_for_ignored(error: BaseException) -> Status:
    """The crawler code for a response one of Scrapy's own middlewares dropped (IgnoreRequest):
    too large (a decompression bomb: larger than DOWNLOAD_MAXSIZE once decompressed), or
    dropped for another reason its message gives."""
    message = str(error)
    if "MAXSIZE" in message or "max size" in message:
        return Status.TOO_LARGE
    return Status.DROPPED


# Failures of the source's configuration rather than of a page: never counted toward max_failures
UNCOUNTED_FAILURES = frozenset({Status.AUTH_REFUSED, Status.TLS_FAILED, Status.PROXY_FAILED})


def status_for_exception(error: BaseException, proxied: bool = False) -> Status:
    """The crawler code for a download that failed with ``error`` (Scrapy's or Twisted's);
    ``proxied``: the request went through the source's proxy, so a connection that could not be
    made (or a tunnel the proxy did not open) is the proxy's failure."""
    from scrapy import exceptions as scrapy_errors
    from twisted.internet import error as net
    from twisted.internet.defer import CancelledError

    if isinstance(error, (scrapy_errors.DownloadCancelledError, CancelledError)):
        # Scrapy cancels a download whose Content-Length, or whose body so far when it sent none,
        # exceeds DOWNLOAD_MAXSIZE (with an empty message in the second case); a timeout raises
        # an error of its own
        return Status.TOO_LARGE
    kinds: list[tuple[tuple[type[BaseException], ...], Status]] = [
        ((scrapy_errors.DownloadTimeoutError, net.TimeoutError, net.TCPTimedOutError, TimeoutError), Status.TIMEOUT),
        ((scrapy_errors.CannotResolveHostError, net.DNSLookupError), Status.DNS_FAILURE),
        (
            (scrapy_errors.DownloadConnectionRefusedError, net.ConnectionRefusedError, ConnectionRefusedError),
            Status.CONNECTION_REFUSED,
        ),
    ]
    from searchcrawl.rules.tls_settings import tls_failure_reason

    if type(error).__name__ == "TunnelError":  # Scrapy's: the proxy did not open a CONNECT tunnel
        return Status.PROXY_FAILED
    for types, status in kinds:
        if isinstance(error, types):
            if proxied and status == Status.CONNECTION_REFUSED:
                return Status.PROXY_FAILED
            return status
    if tls_failure_reason(failure_text(error)) is not None:
        return Status.TLS_FAILED
    if type(error).__name__ == "TimeoutError" and type(error).__module__.startswith("playwright"):
        return Status.TIMEOUT  # a page that did not finish rendering in time
    return Status.CONNECTION_FAILED


def failure_text(error: BaseException) -> str:
    """An error's text with the errors it wraps (Twisted's ResponseNeverReceived holds a list of
    Failures; OpenSSL's errors are lists of tuples), for reasons and for telling TLS failures."""
    reasons = getattr(error, "reasons", None)
    parts = [f"{type(error).__name__}: {error}"]
    for reason in reasons or ():
        value = getattr(reason, "value", reason)
        parts.append(f"{type(value).__name__}: {value}")
    return "; ".join(parts)


def describe_failure(error: BaseException) -> str:
    """An error as a row's reason: a TLS failure in the user's words with OpenSSL's after them."""
    from searchcrawl.rules.tls_settings import tls_failure_reason

    reason = getattr(error, "reason", None)
    if isinstance(reason, str):  # a RequestRefused: its own words
        return reason
    text = failure_text(error)
    meaning = tls_failure_reason(text)
    return (f"{meaning}: {text}" if meaning else f"{type(error).__name__}: {error}")[:1000]
