"""Where the web application listens, as it records it in the data directory for every crawl
(system/listening.py): written atomically and read back, removed by its own process only, a file
that is no record read as none (with a WARNING). `scrapy web` writing and removing it, and a crawl
refusing the address it names: tests/e2e/test_own_services.py."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from searchcrawl.system.listening import (
    FOLDER,
    MAX_RECORD_BYTES,
    WEB_SERVICE,
    Listening,
    listening,
    record_path,
    recorded,
    remove_record,
    write_record,
)


def test_a_record_is_read_back_while_it_is_held_and_gone_after(tmp_path: Path) -> None:
    assert listening(tmp_path) == []  # no folder yet
    with recorded(tmp_path, WEB_SERVICE, [("127.0.0.1", 8080), ("::", 9000)]) as paths:
        assert paths == [record_path(tmp_path, WEB_SERVICE, "127.0.0.1", 8080), record_path(tmp_path, WEB_SERVICE, "::", 9000)]
        assert paths[1].name == "web-9000-__.json"  # a host's characters a file name should not hold
        assert listening(tmp_path) == [
            Listening(WEB_SERVICE, "127.0.0.1", 8080, paths[0]),
            Listening(WEB_SERVICE, "::", 9000, paths[1]),
        ]
        record = json.loads(paths[0].read_text())
        assert record["pid"] == os.getpid() and record["machine"] and record["since"]
    assert listening(tmp_path) == [] and not any((tmp_path / FOLDER).iterdir())


def test_a_server_bound_to_the_same_address_replaces_the_record_and_only_its_writer_removes_it(tmp_path: Path) -> None:
    path = write_record(tmp_path, WEB_SERVICE, "127.0.0.1", 8080)
    assert write_record(tmp_path, WEB_SERVICE, "127.0.0.1", 8080) == path  # replaced, not added
    assert [where.port for where in listening(tmp_path)] == [8080]
    another = json.loads(path.read_text()) | {"pid": os.getpid() + 1}  # a server started since, elsewhere
    path.write_text(json.dumps(another))
    remove_record(path)
    assert path.exists()  # its record: kept
    path.unlink()
    remove_record(path)  # gone already: nothing to do


def test_a_stale_record_is_still_read(tmp_path: Path) -> None:
    """A server killed before it could remove its record: its address is still named (fail closed)."""
    path = record_path(tmp_path, WEB_SERVICE, "0.0.0.0", 8081)
    path.parent.mkdir()
    record = {"service": "web", "host": "0.0.0.0", "port": 8081, "pid": 2**22 + 1, "machine": "gone", "since": "2020-01-01"}
    path.write_text(json.dumps(record))
    assert listening(tmp_path) == [Listening(WEB_SERVICE, "0.0.0.0", 8081, path)]


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[1, 2]",
        '{"service": "web", "host": "127.0.0.1"}',
        '{"service": "web", "host": "127.0.0.1", "port": 0}',
        '{"service": "web", "host": "127.0.0.1", "port": 70000}',
        '{"service": "web", "host": "127.0.0.1", "port": "8080"}',
        '{"service": "web", "host": "127.0.0.1", "port": true}',
        '{"service": "web", "host": "", "port": 8080}',
        '{"service": "web", "host": "127.0.0.1", "port": 8080, "pad": "' + "x" * MAX_RECORD_BYTES + '"}',
    ],
)
def test_a_file_that_is_no_record_names_nothing_and_is_warned_of(
    tmp_path: Path, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    good = write_record(tmp_path, WEB_SERVICE, "127.0.0.1", 8080)
    (tmp_path / FOLDER / "web-1-x.json").write_text(text)
    (tmp_path / FOLDER / ".web-2-x.json.abc.tmp").write_text("{}")  # a record being written: not read
    with caplog.at_level(logging.WARNING):
        assert listening(tmp_path) == [Listening(WEB_SERVICE, "127.0.0.1", 8080, good)]
    assert [record.getMessage() for record in caplog.records] == [
        f"The listening record {tmp_path / FOLDER / 'web-1-x.json'} cannot be read: the address it was to name is not refused"
    ]
