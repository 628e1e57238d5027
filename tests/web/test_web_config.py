"""`scrapy web`'s configuration (commands/web.py ``web_config``): built from the settings and the
environment without changing them, and holding no secret in its repr (review R, finding 5)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from scrapy.settings import Settings

import searchcrawl.settings
from searchcrawl.commands.web import METRICS_TOKEN, _become, web_config
from searchcrawl.crawl.spiderloader import SourceSpiderLoader
from searchcrawl.search.query import COORDINATION
from searchcrawl.system import secrets

SECRETS = {
    secrets.WEB_USERNAME: "admin",
    secrets.WEB_PASSWORD: "pw-xyz",
    secrets.SOLR_USERNAME: "solr",
    secrets.SOLR_PASSWORD: "solr-xyz",
    METRICS_TOKEN: "metrics-xyz",
}
CLICK_KEY = b"click-key-xyz-" * 4


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The project's settings, its folders under ``tmp_path``, a click key file, and the
    secrets above in the environment."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "click.key").write_bytes(CLICK_KEY)
    (tmp_path / "sources").mkdir()
    settings = Settings()
    settings.setmodule(searchcrawl.settings)
    settings.setdict(
        {
            "SEARCHCRAWL_DATA_DIR": str(tmp_path / "data"),
            "SEARCHCRAWL_SOURCES_DIR": str(tmp_path / "sources"),
            "SEARCHCRAWL_WEB_CLICK_KEY_FILE": str(tmp_path / "click.key"),
            "SOLR_URL": "http://127.0.0.1:8983/solr/docs",
        }
    )
    return settings


def test_web_configs_repr_holds_no_secret(configured: Settings) -> None:
    config = web_config(configured, SourceSpiderLoader(configured), "127.0.0.1", 6800, "")
    assert config.credentials == ("admin", "pw-xyz") and config.click_key == CLICK_KEY  # read...
    assert config.solr_auth == ("solr", "solr-xyz") and config.metrics_token == "metrics-xyz"
    shown = repr(config)
    for secret in ("pw-xyz", "solr-xyz", "metrics-xyz", "click-key-xyz", CLICK_KEY.hex()[:16]):  # ...never shown
        assert secret not in shown


def test_the_crawls_environment_holds_neither_the_web_password_nor_the_metrics_token(
    configured: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """And building the configuration changes nothing of the process's environment (it popped
    the two secrets and added the own services' addresses): `scrapy web` does that itself."""
    before = dict(os.environ)
    config = web_config(configured, SourceSpiderLoader(configured), "127.0.0.1", 6800, "")
    assert dict(os.environ) == before
    environ = config.explain_environ or {}
    assert secrets.WEB_PASSWORD not in environ and METRICS_TOKEN not in environ
    assert environ["SEARCHCRAWL_WEB_PORT"] == "6800" and environ[secrets.SOLR_PASSWORD] == "solr-xyz"  # its own: Solr's kept
    # _become changes this process's environment: a copy of it here, so that nothing reaches the tests after this one
    monkeypatch.setattr(os, "environ", dict(os.environ))
    _become(environ)  # what `scrapy web` then does, for the crawls it starts as its own processes
    assert os.environ.get(secrets.WEB_PASSWORD) is None and os.environ.get(METRICS_TOKEN) is None
    assert os.environ["SEARCHCRAWL_WEB_PORT"] == "6800"


def test_the_nonsense_rules_requirement_is_the_settings_and_empty_turns_it_off(configured: Settings) -> None:
    """SEARCHCRAWL_SEARCH_COORDINATION and _HYBRID reach the search of the page, the JSON API and MCP
    (``WebContext.search``); its default is the one measured (search/query.py ``COORDINATION``)."""
    assert web_config(configured, SourceSpiderLoader(configured), "127.0.0.1", 6800, "").coordination == COORDINATION
    configured.set("SEARCHCRAWL_SEARCH_COORDINATION", "")
    configured.set("SEARCHCRAWL_SEARCH_COORDINATION_HYBRID", "75%")
    chosen = web_config(configured, SourceSpiderLoader(configured), "127.0.0.1", 6800, "").coordination
    assert (chosen.words, chosen.hybrid) == ("", "75%")
