"""The document table: the durable record of every URL each source has met."""

from searchcrawl.store.documents import DocumentTable, State

__all__ = ["DocumentTable", "State"]
