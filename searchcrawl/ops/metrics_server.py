"""The HTTP(S) server of a crawl process's own metrics (crawl/extensions/crawl_metrics.py).

prometheus_client's ``start_http_server`` is not used, for two reasons found in review:

* it turns TLS on only when both a certificate file and a key file are named: a certificate file
  that holds its key (a common PEM bundle) was served as plain HTTP, client CA ignored;
* it wraps the listening socket, so each TLS handshake runs inside ``accept`` on the server's one
  thread, without a timeout: one connection that never speaks (anyone who reaches the port, no
  certificate needed) blocked every scrape, and the server's ``shutdown`` as the crawl closed.

Here each accepted connection is wrapped without a handshake, and the handshake runs in that
connection's own thread, under CONNECTION_TIMEOUT, as the request's reading does; a handshake
refused (no client certificate, another CA's) is logged at DEBUG and the connection closed.
The WSGI application is prometheus_client's own (``make_wsgi_app``).
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

logger = logging.getLogger(__name__)

CONNECTION_TIMEOUT = 10.0  # seconds a connection may take for its handshake, then for each read


@dataclass(frozen=True)
class MetricsTLS:
    """The metrics served over TLS (1.2 at least): the server's certificate file (which may hold
    its key), its key file, and the CA whose client certificates are required (none: any client
    that reaches the port)."""

    certfile: str
    keyfile: str | None = None
    client_cafile: str | None = None

    def context(self) -> ssl.SSLContext:
        """The server's context; OSError or ssl.SSLError when a file cannot be read or used."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.certfile, self.keyfile)  # keyfile None: the key is in certfile
        if self.client_cafile is not None:
            context.load_verify_locations(cafile=self.client_cafile)
            context.verify_mode = ssl.CERT_REQUIRED
        return context


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Scrapes are not logged (one a few seconds, on stderr by default)."""


class MetricsServer(ThreadingWSGIServer):
    """A thread per connection (daemon threads: a slow client never holds the crawl's end); with
    ``context``, each connection's TLS handshake in its own thread, under CONNECTION_TIMEOUT."""

    def __init__(self, address: tuple[str, int], family: socket.AddressFamily, context: ssl.SSLContext | None) -> None:
        self.address_family = family
        self.context = context
        super().__init__(address, _QuietHandler)

    def get_request(self) -> tuple[Any, Any]:
        connection, client = self.socket.accept()
        connection.settimeout(CONNECTION_TIMEOUT)
        if self.context is not None:  # no handshake here: this is the server's only thread
            connection = self.context.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
        return connection, client

    def finish_request(self, request: Any, client_address: Any) -> None:
        if isinstance(request, ssl.SSLSocket):
            try:
                request.do_handshake()
            except (OSError, ValueError) as exc:  # no certificate, another CA's, plain HTTP, silence
                logger.debug("Crawl metrics: a connection from %s refused in TLS: %s", client_address[0], exc)
                return
        super().finish_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that goes away mid-answer: DEBUG, not a traceback on stderr."""
        logger.debug("Crawl metrics: a connection from %s ended in error", client_address[0], exc_info=True)


def serve_metrics(registry: CollectorRegistry, address: str, port: int, tls: MetricsTLS | None = None) -> WSGIServer:
    """Serves ``registry`` on ``address``:``port`` (over TLS with ``tls``) from a daemon thread;
    stop it with ``shutdown()`` then ``server_close()``. OSError (a port taken, a file unreadable)
    and ssl.SSLError (a certificate and key that do not match) before anything is served."""
    context = tls.context() if tls is not None else None
    family = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)[0][0]
    server = MetricsServer((address, port), family, context)
    server.set_app(make_wsgi_app(registry))
    threading.Thread(target=server.serve_forever, name="crawl-metrics", daemon=True).start()
    return server
