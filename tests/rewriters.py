"""URL rewriters named by test sources (``url_rewriter = "strip_session"``), by the names the tests'
distribution registers them under (tests/installed/*.dist-info/entry_points.txt)."""

from w3lib.url import url_query_cleaner


def strip_session(url: str) -> str | None:
    """Drop print versions; strip session ids."""
    if "/print/" in url:
        return None
    return url_query_cleaner(url, ["sessionid"], remove=True)


def hostile(url: str) -> str | None:
    """A rewriter that fails on some links: raises on /boom, makes an invalid URL of /badport."""
    if "/boom" in url:
        raise RuntimeError("boom")
    if "/badport" in url:
        return "http://h.test:99999/x"
    return url
