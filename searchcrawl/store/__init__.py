"""The stores over searchcrawl's database: documents, frontier, runs, delta reports, sites."""

from searchcrawl.rules.lifecycle import State
from searchcrawl.store.database import Database, SchemaOutdated
from searchcrawl.store.deltas import Deltas
from searchcrawl.store.documents import DocumentTable

__all__ = ["Database", "Deltas", "DocumentTable", "SchemaOutdated", "State"]
