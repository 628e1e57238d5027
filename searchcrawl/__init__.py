"""searchcrawl: an enterprise-search crawler built on Scrapy, keeping a Solr index up to date."""

__version__ = "0.1.0"
