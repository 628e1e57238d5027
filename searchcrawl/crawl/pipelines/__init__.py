"""Item pipelines: attributes -> checksum -> cache -> Solr."""
