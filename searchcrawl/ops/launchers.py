"""Starting crawls from outside a crawl: as scrapyd jobs, or as local processes.

`scrapy scheduler` and `scrapy control <source> resume` start crawls through one of these: a
scrapyd server when ``SEARCHCRAWL_SCRAPYD_URL`` is set, else a `scrapy crawl` process on this
machine. Either way the crawl itself finds its run in the document table and resumes it if it
was suspended.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Protocol

import requests
from scrapy.settings import BaseSettings
from scrapy.utils.conf import closest_scrapy_cfg

from searchcrawl.system import paths, secrets

logger = logging.getLogger(__name__)


def scrapy_command(*args: str) -> list[str]:
    """`python -P -m scrapy ARGS` of this interpreter. ``-P`` keeps the working directory off
    ``sys.path``: the `searchcrawl` command works in any folder, and a `scrapy.py` or a
    `searchcrawl/` lying in the folder it was started in must not be imported in place of the
    installed ones. A project's own modules are still found: Scrapy adds the folder of its
    scrapy.cfg to ``sys.path`` itself."""
    return [sys.executable, "-P", "-m", "scrapy", *args]


def run_command(project_dir: Path, environ: dict[str, str], timeout: float, *args: str) -> subprocess.CompletedProcess[str]:
    """`scrapy ARGS` in ``project_dir`` with ``environ``, waited for (at most ``timeout`` seconds:
    subprocess.TimeoutExpired), its output captured as text, nothing on its standard input: the
    administration's explain and test crawl."""
    return subprocess.run(
        scrapy_command(*args),
        cwd=project_dir,
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


class LaunchError(Exception):
    """The crawl could not be started (scrapyd unreachable or refusing, a process not starting)."""


class Launcher(Protocol):
    def start(self, source: str) -> str:
        """Start a crawl of ``source``; returns the job id (scrapyd) or process id (local)."""

    def active(self, source: str) -> bool:
        """Is a crawl of ``source`` started by this launcher pending or running?"""


class ScrapydLauncher:
    """Crawls as jobs of a scrapyd server (its JSON API)."""

    def __init__(self, url: str, project: str, auth: tuple[str, str] | None = None, timeout: float = 30) -> None:
        self.url = url.rstrip("/")
        self.project = project
        self.session = requests.Session()
        self.session.auth = auth
        self.timeout = timeout

    def _call(self, method: str, endpoint: str, **params: str) -> dict:
        try:
            if method == "GET":
                response = self.session.get(f"{self.url}/{endpoint}", params=params, timeout=self.timeout)
            else:
                response = self.session.post(f"{self.url}/{endpoint}", data=params, timeout=self.timeout)
            response.raise_for_status()
            answer = response.json()
        except (requests.RequestException, ValueError) as exc:
            raise LaunchError(f"scrapyd at {self.url}: {endpoint}: {exc}") from None
        if answer.get("status") != "ok":
            raise LaunchError(f"scrapyd at {self.url}: {endpoint}: {answer.get('message', answer)}")
        return answer

    def start(self, source: str) -> str:
        return self._call("POST", "schedule.json", project=self.project, spider=source)["jobid"]

    def jobs(self, source: str) -> dict[str, list[dict]]:
        answer = self._call("GET", "listjobs.json", project=self.project)
        return {
            state: [job for job in answer.get(state, []) if job.get("spider") == source]
            for state in ("pending", "running", "finished")
        }

    def active(self, source: str) -> bool:
        jobs = self.jobs(source)
        return bool(jobs["pending"] or jobs["running"])

    def cancel(self, job: str) -> None:
        """Cancel a job: scrapyd sends SIGINT, which suspends the crawl's run (resumable)."""
        self._call("POST", "cancel.json", project=self.project, job=job)


class LocalLauncher:
    """Crawls as `python -P -m scrapy crawl <source>` processes in the project directory; each
    process's output goes to ``<data dir>/logs/<source>/<time>.log`` unless the source names a
    log_file."""

    def __init__(self, project_dir: Path, log_dir: Path) -> None:
        self.project_dir = project_dir
        self.log_dir = log_dir
        self.children: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, source: str) -> str:
        directory = self.log_dir / source
        directory.mkdir(parents=True, exist_ok=True)
        log_path = directory / time.strftime("%Y%m%dT%H%M%S.log")
        try:
            with open(log_path, "ab") as log:
                process = subprocess.Popen(
                    scrapy_command("crawl", source),
                    cwd=self.project_dir,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
        except OSError as exc:
            raise LaunchError(f"cannot start a crawl of {source}: {exc}") from None
        self.children[source] = process
        logger.debug("Started scrapy crawl %s as process %d (log: %s)", source, process.pid, log_path)
        return str(process.pid)

    def active(self, source: str) -> bool:
        process = self.children.get(source)
        if process is None:
            return False
        if process.poll() is None:
            return True
        del self.children[source]  # reaped
        return False


def launcher_for(settings: BaseSettings) -> ScrapydLauncher | LocalLauncher:
    """scrapyd when SEARCHCRAWL_SCRAPYD_URL is configured, else local processes."""
    url = settings.get("SEARCHCRAWL_SCRAPYD_URL")
    if url:
        url, auth = secrets.split_credentials(url)
        auth = secrets.credentials(secrets.SCRAPYD_USERNAME, secrets.SCRAPYD_PASSWORD) or auth
        return ScrapydLauncher(url, settings.get("SEARCHCRAWL_SCRAPYD_PROJECT"), auth)
    project_cfg = closest_scrapy_cfg()
    project_dir = Path(project_cfg).parent if project_cfg else Path.cwd()
    return LocalLauncher(project_dir, paths.data_dir(settings) / "logs")
