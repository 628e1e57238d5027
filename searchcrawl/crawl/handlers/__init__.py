"""Scrapy download handlers of searchcrawl (subclasses of Scrapy's own)."""
