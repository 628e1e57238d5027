"""The Solr configset (conf/: schema.xml, solrconfig.xml, stopwords) as package data.

pyproject.toml maps this folder to the package ``searchcrawl.index.configset``, so the wheel
ships it; read it with ``searchcrawl.system.resources.package_dir("searchcrawl.index.configset",
"conf")``. Solr itself never reads this file.
"""
