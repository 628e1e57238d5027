"""The administrator's synonyms and stopwords in Solr: the managed resources of schema.xml.

The text_en field type reads them at query time (since schema searchcrawl-4): Solr's
ManagedSynonymGraphFilterFactory and ManagedStopFilterFactory, both named ``searchcrawl``
(``RESOURCE``). They work with this project's ClassicIndexSchemaFactory (the REST manager is
apart from the schema API). The project's database is their source of truth
(searchcrawl/store/relevance_rules.py); ``sync`` makes Solr's hold the same (deleting what the
database no longer has, adding what it has) and reloads the core, or the collection on
SolrCloud, so the change applies without a restart and without reindexing.

Where Solr keeps them: a standalone core in its conf/ directory (``_schema_analysis_*.json``),
SolrCloud in ZooKeeper beside the collection's configset (every replica reads them at the
collection's RELOAD). The dev Solr (searchcrawl/dev/solr_runner.py) copies its conf/ afresh at
each start, and `scrapy solr collection --overwrite` replaces a configset: both lose them, and
`scrapy web` pushes them again when it starts (and the relevance page when anything changes).
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import quote, urlsplit

from searchcrawl.index.solr_client import IndexingError, SolrIndex

logger = logging.getLogger(__name__)

RESOURCE = "searchcrawl"
SYNONYMS = f"schema/analysis/synonyms/{RESOURCE}"
STOPWORDS = f"schema/analysis/stopwords/{RESOURCE}"


def _call(index: SolrIndex, method: str, path: str, what: str, body: Any = None, node: bool = False) -> dict[str, Any]:
    """One request to ``path`` (under the core's URL, or the node's when ``node``) through
    ``SolrIndex.request``: failover across a collection's nodes, their sessions and credentials,
    as every Solr request of the project. The answer's JSON; IndexingError with Solr's reason."""
    data = json.dumps(body).encode("utf-8") if body is not None else None
    try:
        result = json.loads(index.request(method, path, what, data, node=node))
    except ValueError:
        result = {}
    return result if isinstance(result, dict) else {}


def current(index: SolrIndex) -> tuple[dict[str, list[str]], list[str]]:
    """Solr's synonym map and stopwords now. IndexingError when the schema has no managed
    resources (one older than searchcrawl-4: upload the project's configset)."""
    try:
        synonyms = _call(index, "get", f"{SYNONYMS}?wt=json", "did not give its managed synonyms")
        stopwords = _call(index, "get", f"{STOPWORDS}?wt=json", "did not give its managed stopwords")
    except IndexingError as exc:
        if "No REST managed resource" in exc.reason:
            raise IndexingError(
                "Solr's schema has no managed synonyms or stopwords: it is older than searchcrawl-4"
                " (upload the project's configset and reload)",
                reason="schema older than searchcrawl-4",
            ) from None
        raise
    mapping = (synonyms.get("synonymMappings") or {}).get("managedMap") or {}
    words = (stopwords.get("wordSet") or {}).get("managedList") or []
    return {str(key): sorted(map(str, value)) for key, value in mapping.items()}, sorted(map(str, words))


def sync(index: SolrIndex, synonyms: dict[str, list[str]], stopwords: list[str]) -> bool:
    """Make Solr's managed synonyms and stopwords ``synonyms`` and ``stopwords``, and reload the
    core (collection) if anything changed; True when it did."""
    have_synonyms, have_stopwords = current(index)
    changed = False
    for key, value in have_synonyms.items():
        if synonyms.get(key) != value:
            _call(index, "delete", f"{SYNONYMS}/{quote(key, safe='')}", "did not delete a synonym")
            changed = True
    added = {key: value for key, value in synonyms.items() if have_synonyms.get(key) != value}
    if added:
        _call(index, "put", SYNONYMS, "did not take the synonyms", added)
        changed = True
    wanted = set(stopwords)
    for word in have_stopwords:
        if word not in wanted:
            _call(index, "delete", f"{STOPWORDS}/{quote(word, safe='')}", "did not delete a stopword")
            changed = True
    missing = sorted(wanted - set(have_stopwords))
    if missing:
        _call(index, "put", STOPWORDS, "did not take the stopwords", missing)
        changed = True
    if changed:
        reload(index)
    return changed


def reload(index: SolrIndex) -> None:
    """Reload the core (standalone) or the collection (SolrCloud) ``index`` reaches, so its
    analysers read the managed resources again."""
    info = _call(index, "get", "admin/info/system?wt=json", "did not say its mode", node=True)
    name = quote(index.name, safe="")
    if info.get("mode") == "solrcloud":
        path = f"admin/collections?action=RELOAD&name={name}&wt=json"
    else:
        path = f"admin/cores?action=RELOAD&core={name}&wt=json"
    _call(index, "get", path, "did not reload", node=True)
    logger.info("Solr %s reloaded: synonyms and stopwords applied", urlsplit(index.urls[index.current]).hostname)
