"""Scrapy middlewares of searchcrawl, one component per module."""
