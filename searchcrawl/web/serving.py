"""The web application served (`scrapy web`, commands/web.py): uvicorn on a socket bound first, so
that the address it is bound to (its real port too, when asked for port 0) is recorded in the data
directory before a request is served (system/listening.py), for every crawl to read and refuse
(crawl/own_services.py); the record is removed as the server shuts down."""

from __future__ import annotations

import logging
import socket
import sys
from pathlib import Path

import uvicorn
from starlette.types import ASGIApp

from searchcrawl.system.listening import WEB_SERVICE, recorded, remove_record

logger = logging.getLogger(__name__)

STARTUP_FAILURE = 3  # uvicorn.run's exit status when the application did not start


class RecordedServer(uvicorn.Server):
    """uvicorn's server, which removes its listening records once it has shut down: a server
    stopped by SIGTERM raises the signal again after its shutdown (uvicorn's ``capture_signals``),
    and the process ends there, before any ``finally`` of its caller."""

    records: list[Path]

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().shutdown(sockets)
        finally:
            for record in getattr(self, "records", []):
                remove_record(record)


def serve(app: ASGIApp, host: str, port: int, data_dir: Path) -> None:
    """Serve ``app`` on ``host:port`` as `scrapy web` does (its forwarded headers the
    application's to read: uvicorn's off), recorded where it listens while it does."""
    config = uvicorn.Config(app, host=host, port=port, log_level="info", access_log=False, proxy_headers=False)
    server = RecordedServer(config)
    bound = config.bind_socket()  # uvicorn's own binding: SO_REUSEADDR, IPv6 for an IPv6 host
    address = bound.getsockname()
    with recorded(data_dir, WEB_SERVICE, [(str(address[0]), int(address[1]))]) as records:
        server.records = records
        logger.info("Where it listens is recorded for the crawls: %s", ", ".join(map(str, server.records)))
        try:
            server.run(sockets=[bound])
        except KeyboardInterrupt:
            pass  # as uvicorn.run: a second Ctrl-C
    if not server.started:
        sys.exit(STARTUP_FAILURE)
