"""Scrapy download handlers of searchcrawl (DOWNLOAD_HANDLERS: subclasses of Scrapy's own)."""
