"""The unit layer starts no server (tests/layers.py): a unit test asking for a server's fixture
fails saying where it belongs; an end-to-end test may ask."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.layers import SERVER_FIXTURES, listen_refusal, server_refusal

pytest_plugins = ["pytester"]

TESTS = Path(__file__).parent


def test_an_end_to_end_test_may_ask_for_any_server() -> None:
    assert server_refusal("tests/e2e/test_crawl.py::test_a", ["solr", "postgres_url", "tmp_path"]) is None


def test_a_unit_test_without_a_server_passes() -> None:
    assert server_refusal("tests/crawl/test_spider.py::test_a", ["tmp_path", "crawler_of", "request"]) is None


def test_a_unit_test_asking_for_servers_is_told_where_it_belongs() -> None:
    refusal = server_refusal("tests/index/test_x.py::test_a[1]", ["tmp_path", "solr", "solr_url", "dev_solr"])
    assert refusal is not None
    assert "tests/index/test_x.py::test_a[1] is a unit test" in refusal
    assert "asks for dev_solr, solr, solr_url:" in refusal
    assert "belongs in tests/e2e/" in refusal and "helpers and fixtures of tests/index/test_x.py" in refusal


def test_every_server_fixture_is_defined() -> None:
    """A renamed fixture would slip past the guard unnoticed."""
    defined = {
        match
        for path in TESTS.rglob("*.py")
        for match in re.findall(r"^def (\w+)\(", path.read_text(encoding="utf-8"), flags=re.MULTILINE)
    }
    assert SERVER_FIXTURES <= defined, SERVER_FIXTURES - defined


GUARDED = """
import pytest

@pytest.fixture(scope="session")
def postgres_url():
    raise AssertionError("the server started")

def test_by_name(postgres_url):
    pass

@pytest.fixture
def through_another(postgres_url):
    return postgres_url

def test_through_another_fixture(through_another):
    pass

def test_dynamically(request):
    request.getfixturevalue("postgres_url")

def test_without():
    pass
"""


def run_guarded(pytester: pytest.Pytester, folder: str, name: str, text: str) -> pytest.RunResult:
    """A throwaway pytest session, with the guard, over one test file ``text`` written in ``folder``."""
    (pytester.path / folder).mkdir(parents=True)
    (pytester.path / folder / name).write_text(text, encoding="utf-8")
    return pytester.runpytest_inprocess("-p", "tests.layers", "-p", "no:cacheprovider", "--import-mode=importlib", folder)


@pytest.mark.parametrize(("folder", "refused"), [("tests/store", True), ("tests/e2e", False)])
def test_the_guard_refuses_a_unit_test_before_its_server_starts(pytester: pytest.Pytester, folder: str, refused: bool) -> None:
    result = run_guarded(pytester, folder, "test_guarded.py", GUARDED)
    result.assert_outcomes(passed=1, errors=2, failed=1)  # by name and through a fixture at setup; dynamically in the test
    if refused:
        result.stdout.fnmatch_lines(
            ["*test_dynamically*is a unit test, and the unit layer*starts no server, but it asks for postgres_url*"]
        )
    assert ("the server started" in result.stdout.str()) is not refused


def test_a_unit_test_listening_on_a_socket_is_told_where_it_belongs() -> None:
    refusal = listen_refusal("tests/web/test_x.py::test_a", False, ("127.0.0.1", 8080))
    assert refusal is not None and "tests/web/test_x.py::test_a is a unit test" in refusal
    assert "listens on ('127.0.0.1', 8080)" in refusal and "@pytest.mark.listens(reason)" in refusal
    assert listen_refusal("tests/e2e/test_x.py::test_a", False, ("127.0.0.1", 8080)) is None
    assert listen_refusal("tests/web/test_x.py::test_a", True, ("127.0.0.1", 8080)) is None
    assert listen_refusal("", False, ("127.0.0.1", 8080)) is None  # no test running: pytest's own


LISTENING = """
import socket
import threading
from http.server import HTTPServer, BaseHTTPRequestHandler

import pytest

def test_an_http_server():
    server = HTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    server.server_close()

@pytest.mark.listens("a port to connect to")
def test_a_port_of_its_own():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()

def test_no_socket():
    pass
"""


@pytest.mark.parametrize(("folder", "refused"), [("tests/web", True), ("tests/e2e", False)])
def test_the_guard_refuses_a_unit_test_listening_on_a_socket(pytester: pytest.Pytester, folder: str, refused: bool) -> None:
    result = run_guarded(pytester, folder, "test_listening.py", LISTENING)
    if refused:
        result.assert_outcomes(passed=2, failed=1)
        result.stdout.fnmatch_lines(["*test_an_http_server is a unit test*starts no server, but it listens on ('127.0.0.1', *"])
    else:
        result.assert_outcomes(passed=3)
