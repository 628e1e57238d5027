"""URL rewriters named by test sources (``url_rewriter = "tests.rewriters.strip_session"``)."""

from w3lib.url import url_query_cleaner


def strip_session(url: str) -> str | None:
    """Drop print versions; strip session ids."""
    if "/print/" in url:
        return None
    return url_query_cleaner(url, ["sessionid"], remove=True)
