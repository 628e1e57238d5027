"""Crawl boundary: which URLs belong to a source. Plain logic, no Scrapy.

With no scope rules, a source stays on its seeds' hosts and ports (for file seeds: below the
seed's folder), and within ``max_depth`` links of a seed. Every decision says which rule made
it, so that the document table and ``scrapy explain`` can tell a user why.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from urllib.parse import urlsplit

from .status import Status

DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Decision:
    allowed: bool
    rule: str
    status: Status | None = None  # the crawler code when excluded


def host_port(url: str) -> tuple[str, str, int | None]:
    """(scheme, lower-case host, port with the scheme's default filled in)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or DEFAULT_PORTS.get(scheme)


class Boundary:
    """The seeds' hosts (and ports) and depth limit of one source."""

    def __init__(self, seeds: list[str] | tuple[str, ...], max_depth: int) -> None:
        self.max_depth = max_depth
        self.sites: set[tuple[str, int | None]] = set()
        self.hosts: set[str] = set()
        self.folders: list[str] = []
        for seed in seeds:
            scheme, host, port = host_port(seed)
            if scheme == "file":
                path = urlsplit(seed).path
                folder = path if path.endswith("/") else posixpath.dirname(path) + "/"
                self.folders.append(folder)
            else:
                self.sites.add((host, port))
                self.hosts.add(host)

    def check(self, url: str, depth: int = 0) -> Decision:
        """Is ``url``, found ``depth`` links from a seed, inside the boundary?"""
        scheme, host, port = host_port(url)
        if scheme == "file":
            path = urlsplit(url).path
            if not any(path.startswith(folder) for folder in self.folders):
                return Decision(False, "file URL outside the seeds' folders", Status.EXCLUDED_PATH)
        elif scheme not in DEFAULT_PORTS:
            return Decision(False, f"scheme {scheme!r} is not crawled", Status.EXCLUDED_DOMAIN)
        elif host not in self.hosts:
            return Decision(False, f"host {host} is not a seed host", Status.EXCLUDED_DOMAIN)
        elif (host, port) not in self.sites:
            return Decision(False, f"port {port} is not a seed port of {host}", Status.EXCLUDED_PORT)
        if depth > self.max_depth:
            return Decision(False, f"depth {depth} > max_depth {self.max_depth}", Status.EXCLUDED_DEPTH)
        return Decision(True, "seed site" if scheme != "file" else "seed folder")
