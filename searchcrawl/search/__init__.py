"""The searcher's side of the index: how a searcher's query is asked of Solr, always trimmed to what
they may read (trimmed_index.py), and the query pages built on it (spelling, suggestions, why)."""
