"""A development CMIS repository: Apache Chemistry's OpenCMIS InMemory server (the stand-in for
Alfresco and Nuxeo of the cmis source's tests), on Jetty, both from Maven Central.

The WAR (``org.apache.chemistry.opencmis:chemistry-opencmis-server-inmemory``), Jetty's runner
(``org.eclipse.jetty:jetty-runner``) and the JAX-WS reference implementation the WAR needs on
Java 11 and later (``com.sun.xml.ws:jaxws-rt``, with its dependencies) are fetched with Maven
once, into the cache directory, and run in a JVM of its own (:class:`JvmServer`)::

    ~/.cache/searchcrawl/cmis/            the downloads ($XDG_CACHE_HOME)
    <data_dir>/cmis/<port>/cmis.log      JVM output, appended

Its repository is ``A1``, its browser binding ``http://127.0.0.1:<port>/inmemory/browser``. It
takes any password, and checks each object's ACL for reading (``anyone`` has ``cmis:all`` on
what nobody restricted). It only ever listens on 127.0.0.1. Standard library only.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path

from searchcrawl.dev.jvm_server import HOST, JvmServer, JvmServerError, locked, maven_artifact, run_maven
from searchcrawl.system.paths import user_cache_dir

WAR = ("org.apache.chemistry.opencmis", "chemistry-opencmis-server-inmemory", "1.1.0")
RUNNER = ("org.eclipse.jetty", "jetty-runner", "9.4.57.v20241219")
JAXWS = ("com.sun.xml.ws", "jaxws-rt", "2.3.7")
POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>searchcrawl.dev</groupId><artifactId>cmis-libraries</artifactId><version>1</version>
<dependencies><dependency><groupId>{JAXWS[0]}</groupId><artifactId>{JAXWS[1]}</artifactId><version>{JAXWS[2]}</version></dependency></dependencies>
</project>
"""


class DevCmisError(JvmServerError):
    """The development CMIS repository could not be fetched, started or stopped."""


def fetch() -> tuple[Path, Path, Path]:
    """The WAR, the runner's jar and the folder of JAX-WS libraries, downloaded the first time."""
    folder = user_cache_dir() / "cmis"
    war = folder / f"{WAR[1]}-{WAR[2]}.war"
    runner = folder / f"{RUNNER[1]}-{RUNNER[2]}.jar"
    libraries = folder / "lib"
    maven_artifact(":".join(WAR) + ":war", war, DevCmisError)
    maven_artifact(":".join(RUNNER), runner, DevCmisError)
    with locked(folder / ".fetch.lock"):
        if not (libraries / f"{JAXWS[1]}-{JAXWS[2]}.jar").is_file():
            (folder / "pom.xml").write_text(POM, encoding="utf-8")
            run_maven(
                ["dependency:copy-dependencies", f"-DoutputDirectory={libraries}"],
                folder,
                f"downloading {JAXWS[0]}:{JAXWS[1]}:{JAXWS[2]} and its dependencies",
                DevCmisError,
            )
    if not (libraries / f"{JAXWS[1]}-{JAXWS[2]}.jar").is_file():
        raise DevCmisError(f"Maven reported success but {libraries} lacks {JAXWS[1]}")
    return war, runner, libraries


class DevCmis(JvmServer):
    """One development CMIS repository: a data dir plus a port; ``start()`` returns the browser
    binding's URL."""

    kind = "cmis"
    label = "CMIS"
    error = DevCmisError

    def __init__(self, data_dir: str | os.PathLike[str], port: int, *, java: str | None = None) -> None:
        super().__init__(data_dir, port, java=java)
        self.url = f"http://{HOST}:{self.port}/inmemory/browser"

    def prepare(self) -> list[str]:
        war, runner, libraries = fetch()
        return [
            self.java,
            "-Xmx512m",
            # JAXB of the JAX-WS RI on Java 17: no bytecode injection into java.lang
            "--add-opens",
            "java.base/java.lang=ALL-UNNAMED",
            "-Dcom.sun.xml.bind.v2.bytecode.ClassTailor.noOptimize=true",
            "-jar",
            str(runner),
            "--lib",
            str(libraries),
            "--host",
            HOST,
            "--port",
            str(self.port),
            "--path",
            "/inmemory",
            str(war),
        ]

    def _ping(self) -> bool:
        request = urllib.request.Request(self.url)
        request.add_header("Authorization", "Basic YWRtaW46YWRtaW4=")  # admin:admin
        try:
            with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - 127.0.0.1
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def _readiness_check(self) -> str:
        return f"GET {self.url}"

    def _owns(self, cmdline: str) -> bool:
        return RUNNER[1] in cmdline and f"--port {self.port}" in cmdline
