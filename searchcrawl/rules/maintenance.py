"""Maintenance-crawl decisions, as plain logic: has a document changed, and must a source be
recrawled in full because its settings changed?"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def has_changed(
    previous: dict[str, Any], last_modified: str | None, etag: str | None, checksum: str, signals: Iterable[str]
) -> tuple[bool, str]:
    """Compare a fetched document with what is indexed, on the configured signals (any differs:
    changed). A signal the server does not send (no Last-Modified, no ETag) never differs."""
    reasons = []
    signals = set(signals)
    if "date" in signals and (previous.get("last_modified") or last_modified) and previous.get("last_modified") != last_modified:
        reasons.append("Last-Modified")
    if "etag" in signals and (previous.get("etag") or etag) and previous.get("etag") != etag:
        reasons.append("ETag")
    if "checksum" in signals and previous.get("checksum") != checksum:
        reasons.append("checksum")
    return bool(reasons), ", ".join(reasons) or "same " + " and ".join(sorted(signals))


def holder_of(copies: Iterable[Mapping[str, Any]]) -> Mapping[str, Any]:
    """Of documents with the same content (``url``, ``canonical_url``, row ``id``), the one the
    index keeps: one that another of them names canonical, else one naming itself canonical, else
    the one discovered first (lower row id, then the URL). A rank of each copy within the whole
    group, so a total order: the same holder whatever order the copies are fetched in, and on
    every node. Compared two at a time, a copy naming a third one canonical made a cycle (C names
    A: A before C; C discovered before B: C before B; B before A), and each arrival replaced the
    holder in turn (issue 53, item 26)."""
    group = list(copies)
    named = named_canonical(group)
    never = float("inf")
    return min(
        group,
        key=lambda copy: (
            copy["url"] not in named,
            copy.get("canonical_url") != copy["url"],
            copy.get("id") or never,
            copy["url"],
        ),
    )


def named_canonical(copies: Iterable[Mapping[str, Any]]) -> set[str]:
    """The URLs of a group of copies that another copy of the group names canonical."""
    group = list(copies)
    urls = {copy["url"] for copy in group}
    return {str(copy["canonical_url"]) for copy in group if copy.get("canonical_url") not in (None, copy["url"])} & urls


def original_of(a: Mapping[str, Any], b: Mapping[str, Any]) -> Mapping[str, Any]:
    """Of two documents with the same content, the one the index keeps (``holder_of`` of the
    two). Symmetric, so every node of a fleet that meets the pair decides the same."""
    return holder_of((a, b))


# The documents' access fields (searchcrawl/access/): a source crawled before they existed is
# recrawled in full once, or its documents (without them) would be shown to no one
ACCESS_FIELDS_VERSION = 1

# The source settings that make what is indexed of a page that has not changed (a 304, or the
# same checksum): a change of one forces a recrawl, or the pages unchanged since would keep
# what the old rule made of them, crawl after crawl. Each with the name its reason gives it.
INDEXING_RULES: dict[str, str] = {
    "regions": "the [regions] rules",
    "fields": "the [[fields]] rules",
    "display_urls": "the [[display_urls]] rules",
    "search_attributes": "the [search_attributes] types",
    "main_text": "main_text",
    "description_fallback": "description_fallback",
    "detect_language": "detect_language",
    "default_charset": "default_charset",
    "checksum_of": "checksum_of",
    "soft_errors": "the [soft_errors] rules",
    "obey_robots_meta": "obey_robots_meta",
    "navigation_pages": "navigation_pages",
    "index_without_text": "index_without_text",
    "ocr": "ocr",
    "ocr_languages": "ocr_languages",
    "render_js": "render_js",
    "render_rules": "the [[render_rules]]",
}


def settings_fingerprint(
    index_dynamic_pages: bool,
    attributes: dict[str, str],
    agent: dict[str, Any] | None = None,
    indexing: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The settings whose change can make indexed documents wrong: with an agent, its options
    too (a new title column, another list name: every document is read again); ``indexing``,
    the values of INDEXING_RULES (as JSON)."""
    fingerprint: dict[str, Any] = {
        "index_dynamic_pages": index_dynamic_pages,
        "attributes": dict(sorted(attributes.items())),
        "access_fields": ACCESS_FIELDS_VERSION,
    }
    if agent is not None:
        fingerprint["agent"] = agent
    if indexing is not None:
        fingerprint["indexing"] = indexing
    return fingerprint


def recrawl_reasons(old: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    """Why the source must be recrawled in full (empty: it need not). A rule the old fingerprint
    does not hold (kept by a version that did not record it) is no reason: it is recorded at
    the end of this run, and its next change forces the recrawl."""
    if old is None:
        return []
    reasons = []
    old_attributes, new_attributes = old.get("attributes", {}), new.get("attributes", {})
    for name, target in old_attributes.items():
        if name not in new_attributes:
            reasons.append(f"attribute {name!r} was removed from the attribute mapping")
        elif new_attributes[name] != target:
            reasons.append(f"attribute {name!r} was remapped from {target!r} to {new_attributes[name]!r}")
    for name in new_attributes.keys() - old_attributes.keys():
        reasons.append(f"attribute {name!r} was added to the attribute mapping")
    if not old.get("index_dynamic_pages") and new.get("index_dynamic_pages"):
        reasons.append("index_dynamic_pages went from false to true")
    if old.get("access_fields") != new.get("access_fields"):
        reasons.append("its documents were indexed without the access fields (who may read them)")
    if "agent" in new and old.get("agent") != new["agent"]:
        reasons.append("the agent or its options changed")
    old_rules, new_rules = old.get("indexing", {}), new.get("indexing", {})
    for name, label in INDEXING_RULES.items():
        if name in old_rules and name in new_rules and old_rules[name] != new_rules[name]:
            reasons.append(f"{label} changed (pages not changed since would keep what the old rule made of them)")
    return reasons


def deletion_guard(source: str, to_remove: int, in_index: int, max_share: float, confirmed: bool) -> str | None:
    """Why this run must not delete ``to_remove`` of ``source``'s ``in_index`` documents (None: it
    may); the answer ends with the command that confirms them, for this source, ready to paste.

    A site that is down, renamed or misconfigured for one night must not empty the index.
    """
    if confirmed or to_remove == 0 or in_index == 0:
        return None
    share = to_remove / in_index
    if share <= max_share:
        return None
    return (
        f"refusing to delete {to_remove} of {in_index} documents ({share:.0%} > max_delete_share "
        f"{max_share:.0%}); they stay in the index, marked for removal. If this is right, confirm with "
        f"`scrapy crawl {source} -a delete=force`"
    )
