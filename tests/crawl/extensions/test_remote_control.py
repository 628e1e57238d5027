"""The RemoteControl stand-in alone: Scrapy's remote-control extension (and the aiohttp server its
module imports) is imported only when REMOTE_CONTROL_ENABLED is on; the project's base extensions
name the stand-in where Scrapy's stood."""

from __future__ import annotations

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.settings import default_settings
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from searchcrawl import settings as project_settings
from searchcrawl.crawl.extensions.remote_control import RemoteControl
from tests.conftest import fresh_python

SCRAPYS = "scrapy.extensions.remote_control.RemoteControl"
STAND_IN = "searchcrawl.crawl.extensions.remote_control.RemoteControl"


def test_the_base_extensions_name_the_stand_in_in_place_of_scrapys() -> None:
    base = project_settings.EXTENSIONS_BASE
    assert SCRAPYS not in base
    assert base[STAND_IN] == default_settings.EXTENSIONS_BASE[SCRAPYS]
    assert {key: order for key, order in base.items() if key != STAND_IN} == {
        key: order for key, order in default_settings.EXTENSIONS_BASE.items() if key != SCRAPYS
    }


def test_off_it_is_not_configured_and_imports_nothing() -> None:
    """A crawler with the project's base extensions, in a fresh interpreter (this one may have
    imported aiohttp for other tests): neither Scrapy's extension nor aiohttp is imported."""
    code = (
        "import sys\n"
        "from scrapy.exceptions import NotConfigured\n"
        "from scrapy.utils.misc import build_from_crawler\n"
        "from scrapy.utils.test import get_crawler\n"
        "from searchcrawl import settings\n"
        "from searchcrawl.crawl.extensions.remote_control import RemoteControl\n"
        "crawler = get_crawler(settings_dict={'EXTENSIONS_BASE': settings.EXTENSIONS_BASE})\n"
        "assert crawler.extensions is not None\n"
        "try:\n"
        "    build_from_crawler(RemoteControl, crawler)\n"
        "except NotConfigured:\n"
        "    print('not configured')\n"
        "print(sorted(m for m in sys.modules if m.startswith(('aiohttp', 'scrapy.extensions.remote_control'))))\n"
    )
    assert fresh_python(code) == ["not configured", "[]"]


def test_on_it_is_scrapys_extension() -> None:
    from scrapy.extensions.remote_control import RemoteControl as ScrapyRemoteControl

    crawler = get_crawler(settings_dict={"REMOTE_CONTROL_ENABLED": True})
    assert isinstance(build_from_crawler(RemoteControl, crawler), ScrapyRemoteControl)
    with pytest.raises(NotConfigured):
        build_from_crawler(RemoteControl, get_crawler(settings_dict={"REMOTE_CONTROL_ENABLED": False}))
