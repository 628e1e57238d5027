"""Scrapy download handlers of searchcrawl (DOWNLOAD_HANDLERS)."""
