"""How the example servers (searchcrawl/dev/servers/) clean up after a start that fails, and how
the OpenID Connect provider is handed its client's secret, without a server:
tests/e2e/test_dev_examples.py starts them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import searchcrawl.dev.servers
from searchcrawl.dev.servers.oidc_node import OidcProvider
from searchcrawl.dev.servers.server_processes import stopped_on_failure


class HalfStarted:
    """A server whose readiness wait fails once it has started its process and written its files."""

    def __init__(self, failure: BaseException | None) -> None:
        self.failure = failure
        self.running = False

    @stopped_on_failure
    def start(self) -> HalfStarted:
        self.running = True
        if self.failure is not None:
            raise self.failure
        return self

    def stop(self) -> None:
        self.running = False


@pytest.mark.parametrize("failure", [RuntimeError("did not start"), KeyboardInterrupt()])
def test_a_start_whose_wait_fails_stops_what_it_started_and_raises(failure: BaseException) -> None:
    server = HalfStarted(failure)
    with pytest.raises(type(failure)):
        server.start()
    assert not server.running


def test_a_start_that_succeeds_leaves_its_server_running() -> None:
    assert HalfStarted(None).start().running


def test_every_example_server_stops_what_it_started_when_its_start_fails() -> None:
    wrapper = stopped_on_failure(HalfStarted.stop).__code__
    servers = []
    for module in pkgutil.iter_modules(searchcrawl.dev.servers.__path__):
        loaded = importlib.import_module(f"searchcrawl.dev.servers.{module.name}")
        for _name, cls in inspect.getmembers(loaded, inspect.isclass):
            if cls.__module__ == loaded.__name__ and hasattr(cls, "start") and hasattr(cls, "stop"):
                servers.append(cls)
                assert cls.start.__code__ is wrapper, f"{cls.__qualname__}.start is not @stopped_on_failure"
    assert len(servers) >= 9


def test_the_oidc_client_secret_is_random_and_in_the_environment_not_the_command_line() -> None:
    provider, other = OidcProvider(["http://127.0.0.1/cb"]), OidcProvider(["http://127.0.0.1/cb"])
    argv, env = provider.command(Path("/nonexistent"))
    assert env["OIDC_CLIENT_SECRET"] == provider.client_secret
    assert not any(provider.client_secret in argument for argument in argv)
    assert len(provider.client_secret) >= 32 and provider.client_secret != other.client_secret
    assert provider.folder is None  # no file until it starts (stop() removes its folder)
