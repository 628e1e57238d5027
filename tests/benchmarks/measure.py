"""How the benchmarks measure: a process's wall time, CPU and peak RSS, and Solr's update count
(the documents a crawl pushed or removed apart from the anchor fields it set in place: ``apart_from_anchors``)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchcrawl.crawl.run import ANCHORS_STAT
from tests.conftest import children

if TYPE_CHECKING:
    from searchcrawl.store import Database


def write_results(out: Path, report: dict[str, Any], markdown: Callable[[dict[str, Any]], str]) -> dict[str, Any]:
    """A benchmark's report as results.json and results.md in ``out`` (written after each run:
    a run cut short keeps what it measured); the report itself."""
    (out / "results.json").write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    (out / "results.md").write_text(markdown(report), encoding="utf-8")
    return report


@dataclass
class Measured:
    seconds: float
    cpu_seconds: float
    peak_rss_bytes: int
    interrupted: bool = False  # stopped by ``stop_file`` (a partial run)


# The measured process runs as the only child of this small runner, so that RUSAGE_CHILDREN is
# exactly its CPU time and peak RSS (its own children, e.g. conversion workers, included).
RUNNER = (
    "import json, resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
    "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(json.dumps([u.ru_utime + u.ru_stime, u.ru_maxrss])); sys.exit(r.returncode)"
)


def markdown_table(title: str, header: list[str], rows: list[list[Any]], right: int = 1) -> str:
    """``title``, a blank line, then a Markdown table of ``rows`` under ``header`` (its columns from
    ``right`` on aligned right: figures)."""
    align = ["---"] * right + ["---:"] * (len(header) - right)
    lines = [title, "", f"| {' | '.join(header)} |", f"|{'|'.join(align)}|"]
    lines += [f"| {' | '.join(str(cell) for cell in row)} |" for row in rows]
    return "\n".join(lines) + "\n"


def as_installed(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a crawler process that runs from compiled modules, as an installed searchcrawl
    does (pip compiles it): a checkout run under PYTHONDONTWRITEBYTECODE compiles every module
    of searchcrawl in every process, 0.2 s of CPU and wall time that bare Scrapy, compiled in
    site-packages, never pays. Compiled modules are read from and kept in ``__pycache__`` beside
    each source (ignored by git), as Python's default is: a PYTHONPYCACHEPREFIX would make every
    process look there alone, so the first measured one would compile Scrapy and the stdlib."""
    env = dict(env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    return env


def python_path(root: Path) -> str:
    """PYTHONPATH for a benchmark's child process: the checkout first, then what this process was
    given (on a machine whose packages come as carried wheels in a folder of their own)."""
    inherited = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(part for part in (str(root), inherited) if part)


def compile_searchcrawl(env: dict[str, str], root: Path | None = None) -> None:
    """Compile searchcrawl's modules (``env``: ``as_installed``'s) before any process is measured;
    those of the checkout at ``root`` (default: this one)."""
    package = (root or Path(__file__).resolve().parents[2]) / "searchcrawl"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], env=env, check=True, capture_output=True)


def run_measured(args: list[str], cwd: Path, env: dict[str, str], stop_file: Path | None = None) -> Measured:
    """Run ``args`` to its end, measured. When ``stop_file`` appears meanwhile, the process gets
    SIGINT (a crawl's graceful stop: its run is suspended, and resumes in the next crawl): on a
    shared machine, a long benchmark gives the cores back and still reports what it measured."""
    started = time.monotonic()
    interrupted = False
    # files, not pipes: nothing reads a pipe while the stop file is watched, and a full one blocks
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen([sys.executable, "-c", RUNNER, *args], cwd=cwd, env=env, stdout=out, stderr=err, text=True)
        try:
            while True:
                try:
                    process.wait(timeout=None if stop_file is None else 0.5)  # returns as soon as it ends
                    break
                except subprocess.TimeoutExpired:
                    if stop_file is not None and not interrupted and stop_file.exists():
                        interrupted = True
                        for child in children(process.pid):  # the runner waits for its child and reports its rusage
                            os.kill(child, signal.SIGINT)
        except BaseException:  # the benchmark itself stopped (Ctrl-C, SIGTERM): so does what it measured
            for child in descendants_of(process.pid):  # a profiler's crawl too, below py-spy
                os.kill(child, signal.SIGKILL)
            process.kill()
            raise
        seconds = time.monotonic() - started
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode != 0 and not interrupted:
        raise SystemExit(f"{' '.join(args[:4])} failed:\n{stderr[-4000:]}")
    cpu, rss_kb = json.loads(stdout.strip().splitlines()[-1])
    return Measured(seconds, cpu, rss_kb * 1024, interrupted)


def descendants_of(pid: int) -> list[int]:
    """The children of ``pid``, theirs, and so on (outermost first)."""
    found: list[int] = []
    pending = children(pid)
    while pending:
        child = pending.pop(0)
        found.append(child)
        pending += children(child)
    return found


def solr_updates(core_url: str) -> int:
    """Documents added or deleted by id since the core started (Solr's update handler statistics)."""
    with urllib.request.urlopen(f"{core_url}/admin/mbeans?cat=UPDATE&stats=true&wt=json", timeout=30) as response:  # noqa: S310
        beans = json.load(response)["solr-mbeans"]
    stats = dict(zip(beans[::2], beans[1::2], strict=False))["UPDATE"]["updateHandler"]["stats"]
    return int(stats["UPDATE.updateHandler.cumulativeAdds.count"]) + int(
        stats["UPDATE.updateHandler.cumulativeDeletesById.count"]
    )


@contextlib.contextmanager
def crawl_database(env: Mapping[str, str]) -> Iterator[Database]:
    """The document table a crawl with ``env`` used, read, never migrated, closed at the end (a
    connection left open would count as a client of a PostgreSQL benchmark's database):
    SEARCHCRAWL_DB_URL's, else the SQLite file of its SEARCHCRAWL_DATA_DIR."""
    from searchcrawl.store import Database

    url = env.get("SEARCHCRAWL_DB_URL") or f"sqlite:///{Path(env['SEARCHCRAWL_DATA_DIR']) / 'documents.sqlite3'}"
    database = Database(url, migrate=False, writer_lock=False)
    try:
        yield database
    finally:
        database.close()


def last_run_counters(env: Mapping[str, str], source: str) -> dict[str, Any]:
    """The counters of ``source``'s last run (store/runs.py), read from the document table a crawl
    with ``env`` used; {} from a table of another schema revision (an older commit's crawl in the
    ledger, page_costs.py): this code may not migrate it, nor read its counters (the ledger
    failed so on its first older crawl once each crawl's anchor count was read)."""
    from searchcrawl.store.database import SchemaOutdated
    from searchcrawl.store.runs import Runs, counters_of

    try:
        with crawl_database(env) as database:
            last = Runs(database).recent(source, limit=1)
    except SchemaOutdated:
        return {}
    return counters_of(last[0]) if last else {}


def last_run_report(env: Mapping[str, str], source: str) -> dict[str, Any]:
    """The delta report of ``source``'s last run (store/deltas.py ``run_report``: what `scrapy report
    <source> --json` prints), read from the document table a crawl with ``env`` used; {} when
    there is no run. Read in this process: a `scrapy report` of its own after each phase was a
    fresh interpreter (1.7 s of CPU, three runs at a load of 13-15) for a few queries."""
    from searchcrawl.store.deltas import run_report

    with crawl_database(env) as database:
        return run_report(database, source) or {}


def anchors_logged(log: Path) -> int:
    """The anchor fields set in place by every crawl process whose INFO log is ``log`` (each one's
    stats dump at its end: a crawl of ``processes = N`` writes N), where a run's counters are
    its ending process's alone (store/runs.py ``Runs.end``)."""
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    return sum(int(count) for count in re.findall(rf"'{re.escape(ANCHORS_STAT)}': (\d+)", text))


def apart_from_anchors(phase: dict[str, Any], anchors: int) -> dict[str, Any]:
    """A crawl phase's ``solr_updates`` (Solr's adds and deletes by id meanwhile) less the
    ``anchors`` fields its run set in place (index/push.py ``set_anchors``), which Solr counts as
    adds too, as ``anchor_updates``: how many there are depends on the order the pages were
    pushed in (a page pushed before a page linking to it is set again once that one is), the
    documents pushed do not. The crawl's own count (``last_run_counters``' ``anchors``, or
    ``anchors_logged``), not an estimate."""
    return {**phase, "solr_updates": phase["solr_updates"] - anchors, "anchor_updates": anchors}


def forget_source(core_url: str, source: str) -> None:
    """Delete ``source``'s documents from Solr (committed), before a crawl measured as a first
    one from an empty data folder: a document table that knows nothing of a source takes over
    what Solr holds of it (crawl/run_start.py take_over_index), which would make it a maintenance crawl."""
    body = json.dumps({"delete": {"query": f'source:"{source}"'}}).encode("utf-8")
    request = urllib.request.Request(
        f"{core_url}/update?commit=true", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=60):  # noqa: S310
        pass


@dataclass
class JvmCpu:
    seconds: float  # all threads of the JVM
    compiler_seconds: float  # its JIT compiler threads ("C1 CompilerThre", "C2 CompilerThre")


def jvm_cpu(pid: int) -> JvmCpu:
    """CPU seconds of a JVM so far, and how much of it its JIT compilers took (Linux /proc).

    Why: a fresh Solr JVM spends a third of its CPU compiling its indexing code for its first tens
    of thousands of documents; this shows, pass by pass, when the push meets a warm Solr. The total
    comes from the process's own line, which keeps the time of threads that have ended (Lucene's
    merge threads end after each merge); the compilers' from their threads' lines."""
    total = _cpu_seconds(Path(f"/proc/{pid}/stat").read_text())
    compiler = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        if "CompilerThre" in stat[stat.index("(") + 1 : stat.rindex(")")]:
            compiler += _cpu_seconds(stat)
    return JvmCpu(total, compiler)


def process_tree_cpu(pid: int, reaped: bool = False) -> float:
    """CPU seconds so far of a process and its live children (nginx's master and its workers;
    Linux /proc): read before and after a phase, the server's share of the machine meanwhile.
    ``reaped``: with the children that ended and were waited for (PostgreSQL's backends, one per
    connection, end with their crawl; their postmaster reaps them)."""
    total = 0.0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            total += _cpu_seconds(Path(f"/proc/{current}/stat").read_text(), reaped)
        except OSError:  # ended meanwhile
            continue
        pending += children(current)
    return total


def _cpu_seconds(stat: str, reaped: bool = False) -> float:
    fields = stat.rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime + stime
    if reaped:
        ticks += int(fields[13]) + int(fields[14])  # cutime + cstime: the children waited for
    return ticks / os.sysconf("SC_CLK_TCK")
