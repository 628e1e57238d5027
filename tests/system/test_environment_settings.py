"""Settings from the environment (issue 79, point 5: searchcrawl/system/environment_settings.py):
every searchcrawl setting works the same from the environment as from ``-s``; ``-s`` wins; a
misspelt variable is named at start-up instead of ignored silently; secrets never become settings."""

from __future__ import annotations

import ast
import logging
import runpy
from pathlib import Path
from typing import Any

import pytest

import searchcrawl.settings as project_settings
from searchcrawl.system import secrets
from searchcrawl.system.environment_settings import from_environment, ignored_variables, ignored_warning, setting_names
from tests.conftest import ROOT, run_scrapy
from tests.syntax_trees import package_modules, tree_of, walk

DEFAULTS = vars(project_settings)
# the settings the issue found ignored when set in the environment
ONCE_IGNORED = ("SEARCHCRAWL_WEB_USER_HEADER", "SEARCHCRAWL_WEB_METRICS", "SEARCHCRAWL_WEB_LOG_USERS", "SEARCHCRAWL_STALL_AFTER")


def fresh_settings(monkeypatch: pytest.MonkeyPatch, **environ: str) -> dict[str, Any]:
    """The settings module's names as a new process would import it with ``environ`` set (run
    apart from the imported module, which stays as it is)."""
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(project_settings.__file__), run_name="searchcrawl.settings")


def test_every_setting_is_taken_from_the_environment_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    names = setting_names(DEFAULTS)
    assert len(names) > 100 and set(ONCE_IGNORED) <= names and "SOLR_URL" in names
    given = {name: f"from-environment-{index}" for index, name in enumerate(sorted(names))}
    loaded = fresh_settings(monkeypatch, **given)
    assert {name: loaded[name] for name in names} == given
    assert loaded["CONCURRENT_REQUESTS"] == DEFAULTS["CONCURRENT_REQUESTS"]  # Scrapy's own: not from here


def test_without_the_environment_the_documented_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = fresh_settings(monkeypatch)
    assert {name: loaded[name] for name in setting_names(DEFAULTS)} == {name: DEFAULTS[name] for name in setting_names(DEFAULTS)}
    assert loaded["SEARCHCRAWL_SMTP_PORT"] == 587 and loaded["SEARCHCRAWL_WEB_USER_HEADER"] == ""


def test_secrets_and_other_names_never_become_settings() -> None:
    environ = {
        secrets.WEB_PASSWORD: "hunter2",
        f"{secrets.SOLR_PASSWORD}_FILE": "/run/secrets/solr",
        secrets.SOLR_USERNAME: "indexer",
        "SEARCHCRAWL_WEB_USER_HEADER": "X-Remote-User",
        "HOME": "/root",
    }
    assert from_environment(DEFAULTS, environ) == {"SEARCHCRAWL_WEB_USER_HEADER": "X-Remote-User"}
    assert not setting_names(DEFAULTS) & {*secrets.SECRET_NAMES, secrets.SOLR_USERNAME, secrets.WEB_USERNAME}


def test_a_variable_that_is_no_setting_nor_secret_is_named_with_the_likely_setting() -> None:
    environ = {
        "SEARCHCRAWL_WEB_USR_HEADER": "X-Remote-User",  # misspelt
        "SEARCHCRAWL_NOTHING_LIKE_IT": "1",
        "SEARCHCRAWL_WIKI_PASSWORD": "a source's secret",  # a source may name secrets of its own
        "SEARCHCRAWL_ANSWERS_API_KEY_FILE": "/run/key",
        "SEARCHCRAWL_SCRAPYD_USERNAME": "deployer",
        "SEARCHCRAWL_NOTIFY_WEBHOOK_URL": "https://hook.example/",  # secrets whose names do not say so
        "SEARCHCRAWL_NOTIFY_WEBHOOK_URL_FILE": "/run/hook",
        "SEARCHCRAWL_TEST_WORKERS": "3",
        "SEARCHCRAWL_STALL_AFTER": "60",
        "OTHER_TOOL_SETTING": "x",
    }
    assert ignored_variables(DEFAULTS, environ) == ["SEARCHCRAWL_NOTHING_LIKE_IT", "SEARCHCRAWL_WEB_USR_HEADER"]
    assert ignored_warning("SEARCHCRAWL_WEB_USR_HEADER", DEFAULTS) == (
        "SEARCHCRAWL_WEB_USR_HEADER is set in the environment but is not a searchcrawl setting nor a secret: "
        "it is ignored (did you mean SEARCHCRAWL_WEB_USER_HEADER?)"
    )
    assert ignored_warning("SEARCHCRAWL_NOTHING_LIKE_IT", DEFAULTS).endswith("it is ignored")


def test_the_settings_module_warns_of_an_ignored_variable_at_import(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="searchcrawl.settings"):
        fresh_settings(monkeypatch, SEARCHCRAWL_WEB_METRIC="1")
    assert [record.getMessage() for record in caplog.records] == [ignored_warning("SEARCHCRAWL_WEB_METRIC", DEFAULTS)]
    assert "(did you mean SEARCHCRAWL_WEB_METRICS?)" in caplog.records[0].getMessage()


def test_a_setting_that_is_not_text_is_read_with_a_typed_getter() -> None:
    """Syntax tree: a value from the environment (or ``-s``) is text, so a setting whose default is a
    number, a switch or a list is read with getint/getfloat/getbool/getlist, never plain get or
    [...], which would hand "0" or "False" on as they are (a true value)."""
    typed = {name for name in setting_names(DEFAULTS) if not isinstance(DEFAULTS[name], str)}
    # its reader takes "auto" as well as a number (ops/local_fleet.process_count)
    allowed = {("searchcrawl/ops/local_fleet.py", "SEARCHCRAWL_PROCESSES")}
    found = []
    for path in package_modules():
        tree = tree_of(path)
        for node in walk(tree):
            name = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
                name = node.args[0].value if isinstance(node.args[0], ast.Constant) else None
            elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                name = node.slice.value
            relative = str(path.relative_to(ROOT))
            if name in typed and (relative, name) not in allowed:
                found.append(f"{relative}:{node.lineno}: {name}")
    assert found == []


def scrapy_setting(name: str, *args: str, **environ: str) -> str:
    """``scrapy settings --get name`` as a user runs it, with ``environ`` in the environment."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "PYTHONPATH": str(ROOT), **environ}
    done = run_scrapy(["settings", "--get", name, *args], env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_environment_and_dash_s_give_the_same_setting_and_dash_s_wins() -> None:
    for name in ONCE_IGNORED:
        from_environment_only = scrapy_setting(name, **{name: "77"})
        assert from_environment_only == "77" == scrapy_setting(name, "-s", f"{name}=77")
        assert scrapy_setting(name, "-s", f"{name}=5", **{name: "77"}) == "5"
    assert scrapy_setting("SEARCHCRAWL_WEB_USER_HEADER") == ""


def test_chromiums_path_reaches_playwrights_launch_options_however_it_is_set() -> None:
    """The settings module built Playwright's launch options from the path it had when imported;
    a crawl takes the path the settings have (``-s``, the environment, a settings module)."""
    from scrapy.settings import Settings

    from searchcrawl.crawl.spider import SourceSpider

    settings = Settings()
    settings.setmodule(project_settings, priority="project")
    settings.set("SEARCHCRAWL_CHROMIUM_PATH", "/opt/chromium/chrome", priority="cmdline")
    SourceSpider.update_settings(settings)
    options = settings.getdict("PLAYWRIGHT_LAUNCH_OPTIONS")
    assert options["executable_path"] == "/opt/chromium/chrome" and options["headless"] is True
    unchanged = Settings()
    unchanged.setmodule(project_settings, priority="project")
    SourceSpider.update_settings(unchanged)
    assert unchanged.getdict("PLAYWRIGHT_LAUNCH_OPTIONS") == project_settings.PLAYWRIGHT_LAUNCH_OPTIONS
