"""`scrapy dev`'s output (searchcrawl/commands/dev.py) and the source files of its examples
(searchcrawl/dev/examples.py), without a server: tests/e2e/test_dev_examples.py runs each one."""

from __future__ import annotations

import tomllib

from searchcrawl.commands.dev import BEGIN, END, READY, describe
from searchcrawl.dev.examples import EXAMPLES, SERVICES, Example, source_file


def test_a_source_file_is_toml_whatever_its_values_hold() -> None:
    options = {
        "url": 'http://127.0.0.1:1/"quoted"\\path',
        "port": 993,
        "public_folders": True,
        "users": ["alice", "bob"],
        "group_token": "group:{id}",
        "repositories": {"hr/pay": "http://127.0.0.1:2/git/hr/pay.git", "handbook": "/srv/handbook.git"},
    }
    assert tomllib.loads(source_file("git", options)) == {"type": "git", "git": options}


def test_a_sources_example_prints_its_file_its_secret_and_who_reads_what() -> None:
    example = Example(
        kind="imap",
        server="Dovecot on 127.0.0.1:1",
        source=source_file("imap", {"server": "127.0.0.1"}),
        secrets={"DEV_IMAP_PASSWORD": "secret"},
        users={"alice": ("user:alice", "group:sales")},
        readers={"albatross": frozenset({"alice", "bob"})},
    )
    text = describe(example, "scrapy")
    printed = text.split(BEGIN.format(name="dev-imap") + "\n")[1].split(END.format(name="dev-imap"))[0]
    assert printed == example.source
    assert "export DEV_IMAP_PASSWORD='secret'" in text and "then: scrapy crawl dev-imap" in text
    assert "  albatross: alice, bob" in text and "  alice: user:alice, group:sales" in text
    assert text.endswith(READY)


def test_a_service_prints_the_settings_that_use_it_and_no_source_file() -> None:
    example = Example(
        kind="model", server="llama.cpp", source="", secrets={}, users={}, readers={}, settings={"SEARCHCRAWL_ANSWERS_URL": "u"}
    )
    text = describe(example, "searchcrawl")
    assert "begin" not in text and "export SEARCHCRAWL_ANSWERS_URL='u'" in text and "`searchcrawl web`" in text
    assert SERVICES < set(EXAMPLES) and "model" in SERVICES
