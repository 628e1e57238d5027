"""Spelling suggestions ("Did you mean") for a search that found nothing, shown only when they
show nothing of a document the searcher may not read.

Solr's spellcheck component offers collations (whole corrected queries), tried by Solr with the
search's filters and the searcher's trimming (trimmed_index.py adds it, as to every request). That is
not enough: a collation's corrected word comes from any document's words, and Solr's own try
counts a document whatever the query's operators say of that word (``-w``) or however many of
its words it needs. So each collation is kept only if every word of it, under a negation or in a
group too, is a word as written of one document the searcher may read with those filters
(query.py ``every_word_query`` on the dictionary's own field), counted as facet queries of one
more trimmed request."""

from __future__ import annotations

import logging
from typing import Any

from searchcrawl.index.solr_client import IndexingError
from searchcrawl.search.query import SPELL_FIELD, TIME_ALLOWED_MS, UF, counted, every_word_counts
from searchcrawl.search.trimmed_index import TrimmedIndex, log_failed_search

logger = logging.getLogger(__name__)


SPELLCHECK_PARAMS = {
    "spellcheck": "true",
    "spellcheck.collate": "true",
    "spellcheck.count": 10,
    "spellcheck.maxCollationTries": 10,
    # a collation is tried with every word required: with /select's own mm a collation of two
    # words passed on one of them, and the other could be anything the index holds
    "spellcheck.collateParam.mm": "100%",
    # every word typed is corrected, those the index holds too (the word itself its first
    # correction): by default Solr corrects only a word no document holds, counting the
    # documents the searcher may not read, so whether "Did you mean" came told them whether a
    # hidden document holds the word they typed
    "spellcheck.alternativeTermCount": 10,
}


def spelling(index: TrimmedIndex, query: str, fq: list[str], filter_params: dict[str, str]) -> list[str]:
    """The corrected queries offered for ``query``, which found nothing with the filters ``fq``
    (and the request parameters ``filter_params`` they read): Solr's collations, each kept only
    if every word of it is one of a document the searcher of ``index`` may read with those
    filters (the module's docstring). None when Solr fails (the page goes on without them)."""
    # the search's own fields, no nested query, and its bound: the query (and each collation Solr
    # tries) is asked again, and one that found nothing may have been cut short by the bound
    asked = {**filter_params, "rows": 0, "fq": fq, "uf": UF, "timeAllowed": TIME_ALLOWED_MS}
    try:
        corrected = collations(index.search(query, {**asked, **SPELLCHECK_PARAMS}).spellcheck or {})
        if not corrected:
            return []
        checks = {
            **every_word_counts(corrected, "spelling_", SPELL_FIELD),
            "defType": "lucene",
            "hl": "false",
            "spellcheck": "false",
        }
        found = index.search("*:*", {**asked, **checks}).facets
    except IndexingError as exc:
        log_failed_search("Spelling suggestions (not shown)", None, exc)
        return []
    readable = [text for number, text in enumerate(corrected) if counted(found, f"spelling_{number}")]
    logger.debug("Spelling: %d of %d collations spell only words the searcher may read", len(readable), len(corrected))
    return readable


def collations(spellcheck: dict[str, Any]) -> list[str]:
    """The collations (whole corrected queries) of Solr's spellcheck answer, each once. Never a
    word's own suggestions: they come from every document's words, those the searcher may not
    read too."""
    found: list[str] = []
    collated = spellcheck.get("collations", [])
    for i in range(0, len(collated) - 1, 2):  # ["collation", value, ...]; value a string or a dict
        value = collated[i + 1]
        text = value.get("collationQuery") if isinstance(value, dict) else value
        if isinstance(text, str) and text and text not in found:
            found.append(text)
    return found
