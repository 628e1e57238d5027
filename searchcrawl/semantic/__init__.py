"""Semantic search (issue 76): passages, their vectors, and the fusion of a kNN query's hits with
the words query's. docs/semantic-search.md is the manual."""
