"""The document table: the durable record of every URL each source has met."""

from .store import DocumentTable, State

__all__ = ["DocumentTable", "State"]
