"""The code a source names is a registered name, never a dotted path (issue 99: ``url_rewriter =
"os.system"`` ran a shell command taken from a link of a crawled page). Names come from the
project's own implementations and from the entry points an installed distribution declares: the
tests' distributions are real ones, a ``*.dist-info`` folder on sys.path as pip leaves it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from searchcrawl.agents.base import Agent
from searchcrawl.config.implementations import (
    AGENT_TYPES,
    AGENTS,
    SPIDERS,
    URL_REWRITERS,
    ImplementationError,
    Registry,
    url_rewriter,
)
from searchcrawl.config.source import Source, SourceError, SourceFile, find_source_files, load_source
from searchcrawl.crawl.spider import SourceSpider
from searchcrawl.crawl.spiderloader import spider_class_for
from searchcrawl.dev.example_spider import ExampleSiteSpider
from searchcrawl.rules.url_rewriter import identity
from tests.custom_agents import JsonRepositoryAgent

WEB = 'seeds = ["https://a.test/"]\n'
AGENT = 'type = "agent"\nagent = "{}"\n[agent_options]\npath = "/x"\n[access]\npublic = true\n'


def shout(url: str) -> str:
    """An installed package's rewriter."""
    return url.upper()


class PlainSpider(SourceSpider):
    """An installed package's spider."""


def install(folder: Path, monkeypatch: pytest.MonkeyPatch, entry_points: str) -> None:
    """A distribution declaring ``entry_points`` (its entry_points.txt) installed in ``folder``,
    put on sys.path: what pip leaves in site-packages."""
    info = folder / "acme_crawl_plugins-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-crawl-plugins\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))


def load(tmp_path: Path, text: str) -> Source:
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    return load_source(SourceFile("s", str(path), path))


def refusal(tmp_path: Path, text: str) -> str:
    """Why the source ``text`` cannot be crawled: its loading, then its spider's making, refuses it."""
    with pytest.raises(SourceError) as refused:
        spider_class_for(load(tmp_path, text))
    return str(refused.value)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (WEB + 'url_rewriter = "os.system"\n', "key 'url_rewriter': no URL rewriter is registered as 'os.system' (registered: "),
        (WEB + 'spider_class = "os.system"\n', "key 'spider_class': no spider is registered as 'os.system' (registered: "),
        (AGENT.format("subprocess.Popen"), "key 'agent': no agent is registered as 'subprocess.Popen' (registered: "),
    ],
)
def test_a_dotted_path_is_a_configuration_error_naming_the_registered_ones(tmp_path: Path, text: str, words: str) -> None:
    """Issue 99: each named any callable, and ``url_rewriter = "os.system"`` ran the links of a page."""
    message = refusal(tmp_path, text)
    assert words in message, message
    key = message.split("key '")[1].split("'")[0]
    kind = {"url_rewriter": URL_REWRITERS, "spider_class": SPIDERS, "agent": AGENTS}[key]
    assert (
        f"(registered: {', '.join(kind.names())}; a package declares one as an entry point in the group '{kind.group}')"
        in message
    )
    assert {"strip_session", "example_site", "json_repository"} & set(kind.names())  # the tests' and the project's own


@pytest.mark.parametrize("named", ["tests.rewriters.strip_session", "tests.rewriters:strip_session", "this.s"])
def test_only_a_name_is_taken_never_the_code_it_stands_for(tmp_path: Path, named: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The target of a registered name is not a name; and what a source names is never imported to find out."""
    monkeypatch.delitem(sys.modules, "this", raising=False)
    assert f"no URL rewriter is registered as {named!r}" in refusal(tmp_path, WEB + f'url_rewriter = "{named}"\n')
    assert "this" not in sys.modules  # `import this` prints; nothing printed, nothing imported
    assert url_rewriter("strip_session")("http://a.test/?sessionid=1&b=2") == "http://a.test/?b=2"


def test_an_installed_distributions_entry_points_are_registered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(
        tmp_path / "site-packages",
        monkeypatch,
        "[searchcrawl.url_rewriters]\nshout = tests.config.test_implementations:shout\n"
        "[searchcrawl.spiders]\nplain = tests.config.test_implementations:PlainSpider\n"
        "[searchcrawl.agents]\ninventory = tests.custom_agents:JsonRepositoryAgent\n",
    )
    spider = spider_class_for(load(tmp_path, WEB + 'spider_class = "plain"\nurl_rewriter = "shout"\n'))
    assert issubclass(spider, PlainSpider) and url_rewriter("shout") is shout
    source = load(tmp_path, AGENT.format("inventory"))
    assert source.agent_class is JsonRepositoryAgent
    assert {"shout", "strip_session"} <= set(URL_REWRITERS.names())  # the tests' own distribution's too


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (WEB + 'url_rewriter = "separator"\n', "key 'url_rewriter': the URL rewriter 'separator' (os:sep) is not callable"),
        (
            WEB + 'spider_class = "join"\n',
            "key 'spider_class': the spider 'join' (os.path:join) is not a subclass of searchcrawl.crawl.spider.SourceSpider",
        ),
        (
            AGENT.format("popen"),
            "key 'agent': the agent 'popen' (subprocess:Popen) is not a subclass of searchcrawl.agents.base.Agent",
        ),
        (WEB + 'url_rewriter = "gone"\n', "key 'url_rewriter': the URL rewriter 'gone' (acme_absent:rewrite) cannot be loaded"),
    ],
)
def test_a_registered_name_of_the_wrong_type_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, words: str
) -> None:
    install(
        tmp_path / "site-packages",
        monkeypatch,
        "[searchcrawl.url_rewriters]\nseparator = os:sep\ngone = acme_absent:rewrite\n"
        "[searchcrawl.spiders]\njoin = os.path:join\n[searchcrawl.agents]\npopen = subprocess:Popen\n",
    )
    assert words in refusal(tmp_path, text)


def test_a_built_in_name_wins_over_an_installed_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(tmp_path / "site-packages", monkeypatch, "[searchcrawl.spiders]\nexample_site = os.path:join\n")
    assert SPIDERS.load("example_site", SourceSpider) is ExampleSiteSpider
    assert AGENT_TYPES.load("files", Agent).__name__ == "FilesAgent"


def test_the_packaged_example_source_names_its_spider() -> None:
    example = find_source_files(None)["example"]
    assert issubclass(spider_class_for(load_source(example)), ExampleSiteSpider)


def test_a_kind_no_package_declares_says_how_one_is_declared() -> None:
    kind = Registry("url_rewriter", "URL rewriter", "searchcrawl.tests.nothing")
    with pytest.raises(ImplementationError) as refused:
        kind.entry_point("x")
    assert str(refused.value) == (
        "no URL rewriter is registered as 'x' (registered: none; a package declares one as an entry point in the group "
        "'searchcrawl.tests.nothing')"
    )
    assert refused.value.key == "url_rewriter"
    assert url_rewriter(None) is identity
