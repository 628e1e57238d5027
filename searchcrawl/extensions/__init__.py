"""Scrapy extensions of searchcrawl."""
