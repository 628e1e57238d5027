"""A development Tika server: Apache Tika's own ``tika-server-standard``, started locally.

The jar comes from Maven Central (``mvn dependency:copy``, once per version, into the cache
directory) and runs in a JVM of its own, started, awaited and stopped as the development Solr is
(:class:`~searchcrawl.dev.jvm_server.JvmServer`). Tika's server forks a child JVM that does the
parsing and restarts it when a document makes it time out or run out of memory; both are in the
JVM's process group, so stopping the server stops both. Its files::

    ~/.cache/searchcrawl/tika/tika-server-standard-<version>.jar   the download ($XDG_CACHE_HOME)
    <data_dir>/tika/<port>/tika-config.xml     the server's limits, written on every start
    <data_dir>/tika/<port>/tika.log            JVM output, appended
    <data_dir>/tika/<port>/tika.pid            pid of the running JVM

In production, run Tika as a service of its own (see docs/indexing.md: the same jar under systemd, or
the official ``apache/tika`` image) and give the crawler its URL (``SEARCHCRAWL_TIKA_URL``).
It only ever listens on 127.0.0.1 here.

Standard library only: it runs before (and without) any crawl machinery.
"""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from searchcrawl.dev.jvm_server import HOST, JvmServer, JvmServerError, maven_artifact
from searchcrawl.system.paths import user_cache_dir

__all__ = ["DEFAULT_PORT", "TIKA_VERSION", "DevTika", "DevTikaError"]

#: The Tika server release fetched from Maven Central (3.2.2: the PDF parser's XXE fix, CVE-2025-54988).
TIKA_VERSION = "3.2.2"
DEFAULT_PORT = 9998
ARTIFACT = "org.apache.tika:tika-server-standard"

CONFIG_XML = """\
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by searchcrawl/dev/tika_runner.py on every start; edits here are overwritten. -->
<properties>
  <autoDetectParserConfig>
    <!-- metadata is bounded too: a small file can carry hundreds of MB of properties -->
    <metadataWriteFilterFactory class="org.apache.tika.metadata.writefilter.StandardWriteFilterFactory">
      <params>
        <maxKeySize>1024</maxKeySize>
        <maxFieldSize>65536</maxFieldSize>
        <maxTotalEstimatedBytes>4194304</maxTotalEstimatedBytes>
        <maxValuesPerField>100</maxValuesPerField>
      </params>
    </metadataWriteFilterFactory>
  </autoDetectParserConfig>
  <server>
    <params>
      <!-- the forked parser JVM is restarted when one document takes longer than this -->
      <taskTimeoutMillis>{task_timeout_ms}</taskTimeoutMillis>
      <forkedJvmArgs>
        <arg>-Xmx{heap}</arg>
        <arg>-XX:+ExitOnOutOfMemoryError</arg>
        <arg>-Djava.awt.headless=true</arg>
        <arg>-Dfile.encoding=UTF-8</arg>
      </forkedJvmArgs>
    </params>
  </server>
</properties>
"""


class DevTikaError(JvmServerError):
    """The development Tika server could not be fetched, started or stopped; the message says why."""


def jar_path(version: str = TIKA_VERSION) -> Path:
    return user_cache_dir() / "tika" / f"tika-server-standard-{version}.jar"


def fetch_jar(version: str = TIKA_VERSION) -> Path:
    """The server jar, downloaded from Maven Central the first time (under a lock: concurrent
    starts wait for one download)."""
    return maven_artifact(f"{ARTIFACT}:{version}", jar_path(version), DevTikaError)


class DevTika(JvmServer):
    """One development Tika server: a data dir plus a port. ``start()`` returns its base URL
    (``http://127.0.0.1:<port>/``), the value of ``SEARCHCRAWL_TIKA_URL``."""

    kind = "tika"
    label = "Tika"
    error = DevTikaError

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        port: int = DEFAULT_PORT,
        *,
        version: str = TIKA_VERSION,
        java: str | None = None,
        heap: str = "1g",
        task_timeout: float = 300,  # SEARCHCRAWL_TIKA_TIMEOUT's and the default ocr_timeout's longest
    ) -> None:
        super().__init__(data_dir, port, java=java)
        self.version = version
        self.heap = heap
        self.task_timeout = task_timeout
        self.config_path = self.run_dir / "tika-config.xml"

    def prepare(self) -> list[str]:
        jar = fetch_jar(self.version)
        config = CONFIG_XML.format(task_timeout_ms=int(self.task_timeout * 1000), heap=escape(self.heap))
        self.config_path.write_text(config, encoding="utf-8")
        return [
            self.java,
            "-Xmx128m",  # the watchdog; the parser JVM gets forkedJvmArgs
            "-Djava.awt.headless=true",
            "-jar",
            str(jar),
            "--host",
            HOST,
            "--port",
            str(self.port),
            "--config",
            str(self.config_path),
        ]

    def status(self) -> dict[str, Any]:
        """Running state, pid, URL, version and log path (for CLI status output)."""
        pid = self._running_pid()
        return {
            "running": pid is not None,
            "ready": pid is not None and self._ping(),
            "pid": pid,
            "url": self.url,
            "port": self.port,
            "version": self.version,
            "log": str(self.log_path),
            "data_dir": str(self.data_dir),
            "start_seconds": self.start_seconds,
        }

    def _owns(self, cmdline: str) -> bool:
        return "tika-server-standard" in cmdline and str(self.config_path) in cmdline

    def _readiness_check(self) -> str:
        return f"{self.url}version"

    def _ping(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}version", timeout=2) as response:  # noqa: S310 - 127.0.0.1 only
                return response.read(64).startswith(b"Apache Tika")
        except OSError:  # refused while the JVM starts; 503 while the forked parser starts
            return False
