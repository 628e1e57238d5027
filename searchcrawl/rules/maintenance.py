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


def original_of(a: Mapping[str, Any], b: Mapping[str, Any]) -> Mapping[str, Any]:
    """Of two documents with the same content (``url``, ``canonical_url``, row ``id``), the one
    the index keeps: the one the other names canonical, else the one naming itself canonical,
    else the one discovered first (lower row id). Symmetric, so every node of a fleet that meets
    the pair decides the same."""
    if b.get("canonical_url") == a["url"] and a.get("canonical_url") != b["url"]:
        return a
    if a.get("canonical_url") == b["url"] and b.get("canonical_url") != a["url"]:
        return b
    a_names_itself, b_names_itself = a.get("canonical_url") == a["url"], b.get("canonical_url") == b["url"]
    if a_names_itself != b_names_itself:
        return a if a_names_itself else b
    never = float("inf")
    return a if (a.get("id") or never, a["url"]) <= (b.get("id") or never, b["url"]) else b


def settings_fingerprint(
    index_dynamic_pages: bool, attributes: dict[str, str], agent: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The settings whose change can make indexed documents wrong: with an agent, its options
    too (a new title column, another list name: every document is read again)."""
    fingerprint: dict[str, Any] = {"index_dynamic_pages": index_dynamic_pages, "attributes": dict(sorted(attributes.items()))}
    if agent is not None:
        fingerprint["agent"] = agent
    return fingerprint


def recrawl_reasons(old: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    """Why the source must be recrawled in full (empty: it need not)."""
    if old is None:
        return []
    reasons = []
    old_attributes, new_attributes = old.get("attributes", {}), new.get("attributes", {})
    for name, target in old_attributes.items():
        if name not in new_attributes:
            reasons.append(f"attribute {name!r} was removed from the attribute mapping")
        elif new_attributes[name] != target:
            reasons.append(f"attribute {name!r} was remapped from {target!r} to {new_attributes[name]!r}")
    if not old.get("index_dynamic_pages") and new.get("index_dynamic_pages"):
        reasons.append("index_dynamic_pages went from false to true")
    if "agent" in new and old.get("agent") != new["agent"]:
        reasons.append("the agent or its options changed")
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
