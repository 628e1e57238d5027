"""SecretSettings: the values of secret-ish settings (``-s HTTPAUTH_PASS=...``, ``MY_API_TOKEN``)
are masked in every log line of the crawl, not only next to their names.

Scrapy logs its overridden settings once, and a component may later log a value on its own (an
error naming a proxy password, a request's repr); reading the settings when the extensions are
built, before that first line, covers both. Scrapy's defaults (FTP_PASSWORD's "guest") are no
secrets. It keeps no state and is never listed as enabled.
"""

from __future__ import annotations

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.settings import SETTINGS_PRIORITIES

from searchcrawl.system.secrets import remember_settings


class SecretSettings:
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SecretSettings:
        settings = crawler.settings
        default = SETTINGS_PRIORITIES["default"]
        remember_settings({name: value for name, value in settings.items() if (settings.getpriority(name) or 0) > default})
        raise NotConfigured  # nothing more to do: the log-record factory masks from now on
