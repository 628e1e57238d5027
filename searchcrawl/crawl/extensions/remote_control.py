"""RemoteControl: Scrapy's remote-control extension, imported only when it is switched on.

Scrapy lists its RemoteControl among the default extensions and finds REMOTE_CONTROL_ENABLED off
only in its ``from_crawler``, after importing its module, which imports aiohttp's web server: a
tenth of a second of CPU in every crawl process, for a server searchcrawl never starts by default.
This stand-in reads the setting first and hands over to Scrapy's extension when it is on.
"""

from __future__ import annotations

from typing import Any

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured


class RemoteControl:
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        """Scrapy's RemoteControl when REMOTE_CONTROL_ENABLED is on; else NotConfigured, nothing imported."""
        if not crawler.settings.getbool("REMOTE_CONTROL_ENABLED"):
            raise NotConfigured  # without a message: Scrapy would log a WARNING for it in every crawl
        from scrapy.extensions.remote_control import RemoteControl as ScrapyRemoteControl

        return ScrapyRemoteControl.from_crawler(crawler)
