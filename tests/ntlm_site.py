"""An NTLM site of the tests' own, honest as IIS is: the handshake authenticates the TCP
connection (the server's NTLM context lives on the per-connection handler object of an HTTP/1.1
keep-alive server), pyspnego is the acceptor, its credential store a file (NTLM_USER_FILE,
``DOMAIN:USER:PASSWORD`` lines)."""

from __future__ import annotations

import base64
import itertools
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import spnego

PASSWORD = "pw-Ntlm-7f3e-secret"  # noqa: S105 - the test's own secret


class NtlmSite:
    """A site on 127.0.0.1 whose every path (robots.txt too) needs an NTLM-authenticated
    connection. ``seen``: (connection number, path, what the request carried: "" or the
    message type, 1 negotiate or 3 authenticate). After ``pages_per_connection`` pages (0: no
    limit) the server closes the connection, saying so (``Connection: close``) or not."""

    def __init__(
        self, pages: dict[str, str], scheme: str = "NTLM", pages_per_connection: int = 0, say_close: bool = True
    ) -> None:
        self.pages, self.scheme = pages, scheme
        self.pages_per_connection, self.say_close = pages_per_connection, say_close
        self.seen: list[tuple[int, str, str]] = []
        self.away = ""
        numbers = itertools.count(1)
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: the authentication belongs to the connection

            def setup(self) -> None:
                super().setup()
                self.number = next(numbers)
                self.context: spnego.ContextProxy | None = None
                self.authenticated = False
                self.served = 0

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                name, _, token = self.headers.get("Authorization", "").partition(" ")
                if name.lower() == site.scheme.lower() and token:
                    if self.context is None or self.context.complete:  # a new handshake on this connection
                        self.context, self.authenticated = spnego.server(protocol=site.scheme.lower()), False
                        site.seen.append((self.number, self.path, "1"))
                    else:
                        site.seen.append((self.number, self.path, "3"))
                    try:
                        out = self.context.step(base64.b64decode(token))
                    except Exception:  # refused, or not the message expected on this connection (as IIS)
                        self.context = None
                        return self.answer(401, "refused", {"WWW-Authenticate": site.scheme})
                    if not self.context.complete:
                        assert out is not None
                        return self.answer(401, "", {"WWW-Authenticate": f"{site.scheme} {base64.b64encode(out).decode()}"})
                    self.authenticated = True
                else:
                    site.seen.append((self.number, self.path, name))
                    if not self.authenticated:
                        return self.answer(401, "<html><body>log in</body></html>", {"WWW-Authenticate": site.scheme})
                self.served += 1
                if self.path.startswith("/away"):
                    return self.answer(302, "", {"Location": site.away})
                body = site.pages.get(self.path)
                return self.answer(200 if body is not None else 404, body or "")

            def answer(self, status: int, body: str, headers: dict[str, str] | None = None) -> None:
                data = body.encode()
                closing = bool(site.pages_per_connection and self.served >= site.pages_per_connection)
                self.send_response(status)
                for name, value in {"Content-Type": "text/html", **(headers or {})}.items():
                    self.send_header(name, value)
                if closing and site.say_close:
                    self.send_header("Connection", "close")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = self.close_connection or closing

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def handshakes_on_their_connection(self) -> bool:
        """Every authenticate message went on the connection its negotiate message went on, next."""
        last: dict[int, str] = {}
        for number, _path, carried in self.seen:
            if carried == "3" and last.get(number) != "1":
                return False
            last[number] = carried
        return True


@pytest.fixture
def ntlm_sites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., NtlmSite]]:
    users = tmp_path / "ntlm-users"
    users.write_text(f"CORP:crawler:{PASSWORD}\n")
    monkeypatch.setenv("NTLM_USER_FILE", str(users))  # the acceptor's credential store (this process's)
    started: list[NtlmSite] = []

    def start(pages: dict[str, str], **options: object) -> NtlmSite:
        site = NtlmSite(pages, **options)  # type: ignore[arg-type]
        started.append(site)
        return site

    yield start
    for site in started:
        site.stop()
