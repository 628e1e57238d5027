"""A binary-heavy source against Tika alone (issue 74, point 4): the shared corpora's office
documents repeated to a few thousand files, crawled through a Tika server as a files source and as
a web site behind nginx, against the same files sent straight to the same Tika server.

    .venv/bin/python -m tests.benchmarks.binaries --documents 3000 --concurrency 2,4 --rounds 2
    .venv/bin/python -m tests.benchmarks.binaries --documents 300 --concurrency 2 --ocr   # OCR's share too

The corpus: the textract corpus's PDF, Word (docx, doc), Excel (xlsx, xls), PowerPoint, OpenDocument
(odt, ods), RTF and EPUB files, copied round-robin into 100 folders. Each copy is made distinct
in its bytes without changing its text (a ZIP comment, a PDF comment after %%EOF, an unused OLE2
sector, an RTF ignorable group; checked with Tika at the start: a format whose copy converts to
other text than its original is left out and said so), and the sources take their checksum over
the bytes (``checksum_of = "raw"``), so every file is a document of its own, pushed to Solr.

Each concurrency C is measured three ways, in turn (``--rounds 2``: then in reverse order):
- **Tika alone**: C threads of this process send the files to ``/rmeta/text`` with the crawl's
  own headers (``TikaConverter.request_headers``: OCR skipped) and read the whole answer;
- **files**: ``scrapy crawl`` of a files source with ``SEARCHCRAWL_TIKA_CONCURRENCY=C``;
- **web**: ``scrapy crawl`` of the same files behind nginx (list pages of 100 links each).
Every crawl starts from an empty data folder and pushes to the Solr stand-in (``--solr dev``: a
development Solr, whose indexing then shares the cores). Reported: documents per second, its
ratio to Tika alone's (the target: at least 0.95), CPU per document (the crawler's processes,
Tika's JVMs, the client or nginx) and the cores busy. Tika starts once and is warmed up (every
original converted three times, then the whole corpus ``--warm-passes`` times, 2 by default:
its JIT compiles for thousands of documents, and a cold Tika runs at half its speed) before the
first measurement. A crawl's wall time includes its start (1 to 2 s): ``--documents`` of 8,000
or more keep that under 3% of it.

``--ocr``: each original and the corpus's scans and images once with OCR asked for (as a source
with ``ocr = true`` sends them) and once without: the seconds each takes, and OCR's share of the
whole (Tika's OCR of the images inside PDFs and office files is why it is off by default).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from searchcrawl.content.convert import ConversionError, TikaConverter
from searchcrawl.dev.jvm_server import free_port
from searchcrawl.dev.tika_runner import DevTika
from tests.benchmarks.cores import solr_for
from tests.benchmarks.measure import (
    as_installed,
    compile_searchcrawl,
    process_tree_cpu,
    python_path,
    run_measured,
    solr_updates,
    write_results,
)
from tests.benchmarks.synthetic import Nginx, nginx
from tests.conftest import CORPORA, ROOT, children, unpack

CORPUS = CORPORA / "textract-tests.tar.xz"
FORMATS = ("pdf", "docx", "doc", "xlsx", "xls", "pptx", "odt", "ods", "rtf", "epub")
ZIP_FORMATS = {"docx", "xlsx", "pptx", "odt", "ods", "epub"}
OLE2_FORMATS = {"doc", "xls"}
SCANS = ("pdf/ocr_text.pdf", "png/raw_text.png", "jpg/raw_text.jpg", "tiff/raw_text.tiff", "gif/raw_text.gif")
TARGET = 0.95  # of Tika alone's documents per second (issue 74)
PER_LIST = 100  # links on each of the web site's list pages


def pin(pid: int, cores: set[int]) -> None:
    """Every thread of ``pid`` and of its descendants on ``cores`` (Linux: affinity is a thread's;
    threads and processes started later inherit their parent thread's)."""
    pending = [pid]
    while pending:
        current = pending.pop()
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{current}/task").iterdir():
                with contextlib.suppress(OSError):  # the thread ended meanwhile
                    os.sched_setaffinity(int(task.name), cores)
        pending += children(current)


def distinct_copy(data: bytes, kind: str, number: int) -> bytes:
    """``data`` with bytes of its own that no parser reads as text (see the module's docstring)."""
    tag = f"searchcrawl benchmark copy {number}".encode()
    if kind in ZIP_FORMATS:
        buffer = io.BytesIO(data)
        with zipfile.ZipFile(buffer, "a") as archive:
            archive.comment = tag
        return buffer.getvalue()
    if kind == "pdf":
        return data + b"\n%" + tag + b"\n"
    if kind in OLE2_FORMATS:
        return data + tag.ljust(512, b"\0")  # a whole sector that no allocation table names
    if kind == "rtf":
        end = data.rindex(b"}")
        return data[:end] + b"{\\*\\searchcrawlcopy " + tag + b"}" + data[end:]
    raise ValueError(f"no distinct copy of a {kind} file")


def originals(corpus: Path) -> list[Path]:
    """The office documents of the textract corpus (not its scans: those are --ocr's)."""
    scans = {corpus / scan for scan in SCANS}
    return [path for kind in FORMATS for path in sorted((corpus / kind).glob(f"*.{kind}")) if path not in scans]


def checked(tika: TikaConverter, documents: list[Path]) -> list[Path]:
    """The documents whose distinct copy converts to the text of the original."""
    kept = []
    for path in documents:
        data, kind = path.read_bytes(), path.suffix[1:]
        try:
            same = tika.convert(data, None, path.name).text == tika.convert(distinct_copy(data, kind, 1), None, path.name).text
        except ConversionError as exc:
            print(f"left out {path.name}: Tika cannot convert it ({exc})", file=sys.stderr)
            continue
        if same:
            kept.append(path)
        else:
            print(f"left out {path.name}: its distinct copy converts to other text", file=sys.stderr)
    return kept


@dataclass
class Corpus:
    root: Path  # the web site's root: index.html, lists/, files/
    files: list[Path]

    @property
    def bytes(self) -> int:
        return sum(path.stat().st_size for path in self.files)


def build_corpus(documents: list[Path], root: Path, count: int) -> Corpus:
    """``count`` distinct copies of ``documents`` under ``root``/files, and the list pages."""
    files = []
    for number in range(count):
        original = documents[number % len(documents)]
        target = root / "files" / f"folder-{number % 100:02d}" / f"{number:05d}-{original.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(distinct_copy(original.read_bytes(), original.suffix[1:], number))
        files.append(target)
    (root / "lists").mkdir(parents=True, exist_ok=True)
    lists = []
    for start in range(0, count, PER_LIST):
        name = f"lists/list-{start // PER_LIST:03d}.html"
        links = "".join(
            f'<li><a href="/{path.relative_to(root).as_posix()}">{path.name}</a></li>' for path in files[start : start + PER_LIST]
        )
        (root / name).write_text(f"<html><body><ul>{links}</ul></body></html>", encoding="utf-8")
        lists.append(name)
    links = "".join(f'<li><a href="/{name}">{name}</a></li>' for name in lists)
    (root / "index.html").write_text(f"<html><body><ul>{links}</ul></body></html>", encoding="utf-8")
    return Corpus(root, files)


def tika_alone(tika: TikaConverter, files: list[Path], concurrency: int, tika_pid: int) -> dict[str, Any]:
    """The files sent straight to Tika, ``concurrency`` at a time, each answer read whole."""
    local = threading.local()

    def send(path: Path) -> int:
        if not hasattr(local, "session"):
            local.session = requests.Session()
        response = local.session.put(tika.endpoint, data=path.read_bytes(), headers=tika.request_headers(path.name), timeout=600)
        response.raise_for_status()
        return len(response.content)

    tika_before, own_before = process_tree_cpu(tika_pid), _own_cpu()
    started = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        answered = sum(1 for _size in pool.map(send, files))
    seconds = time.monotonic() - started
    return _figures(
        "Tika alone", concurrency, answered, seconds, _own_cpu() - own_before, process_tree_cpu(tika_pid) - tika_before
    )


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _figures(
    way: str, concurrency: int, documents: int, seconds: float, client_cpu: float, tika_cpu: float, **more: Any
) -> dict[str, Any]:
    return {
        "way": way,
        "concurrency": concurrency,
        "documents": documents,
        "seconds": round(seconds, 2),
        "documents_per_s": round(documents / seconds, 2),
        "client_cpu_ms_per_document": round(client_cpu * 1000 / max(documents, 1), 2),
        "tika_cpu_ms_per_document": round(tika_cpu * 1000 / max(documents, 1), 2),
        "cpu_ms_per_document": round(
            (client_cpu + tika_cpu + sum(more.get("server_cpu_s", {}).values())) * 1000 / max(documents, 1), 2
        ),
        "cores_busy": round((client_cpu + tika_cpu + sum(more.get("server_cpu_s", {}).values())) / seconds, 2),
        **more,
    }


class Crawls:
    """The measured crawls of the corpus as a files source and as a web site."""

    def __init__(self, work: Path, corpus: Corpus, site: Nginx, solr_url: str, tika_url: str, tika_pid: int) -> None:
        self.work, self.corpus, self.site, self.solr_url, self.tika_pid = work, corpus, site, solr_url, tika_pid
        self.sources = work / "sources"
        self.sources.mkdir(parents=True, exist_ok=True)
        common = 'checksum_of = "raw"\nmax_delete_share = 1.0\n'
        (self.sources / "binfiles.toml").write_text(
            f'type = "files"\n{common}[files]\nroots = ["{corpus.root / "files"}"]\n', encoding="utf-8"
        )
        (self.sources / "binweb.toml").write_text(f'seeds = ["{site.url}index.html"]\nmax_depth = 3\n{common}', encoding="utf-8")
        env = dict(
            os.environ,
            SEARCHCRAWL_SOURCES_DIR=str(self.sources),
            SOLR_URL=solr_url,
            SEARCHCRAWL_TIKA_URL=tika_url,
            SEARCHCRAWL_DB_URL="",
            PYTHONPATH=python_path(ROOT),
        )
        self.env = as_installed(env)
        compile_searchcrawl(self.env)
        self.runs = 0

    def crawl(self, way: str, concurrency: int) -> dict[str, Any]:
        source = {"files": "binfiles", "web": "binweb"}[way]
        self.runs += 1
        env = dict(self.env, SEARCHCRAWL_DATA_DIR=str(self.work / f"data-{self.runs}"))
        args = [sys.executable, "-m", "scrapy", "crawl", source, "-s", "LOG_LEVEL=WARNING"]
        args += ["-s", f"SEARCHCRAWL_TIKA_CONCURRENCY={concurrency}"]
        since, updates = time.time(), solr_updates(self.solr_url)
        tika_before, nginx_before = process_tree_cpu(self.tika_pid), process_tree_cpu(self.site.process.pid)
        measured = run_measured(args, ROOT, env)
        pushed = solr_updates(self.solr_url) - updates
        servers = {"nginx": round(process_tree_cpu(self.site.process.pid) - nginx_before, 2)} if way == "web" else {}
        documents = len(self.corpus.files)
        if pushed < documents:
            print(f"{way}: {pushed} documents pushed of {documents}", file=sys.stderr)
        return _figures(
            way,
            concurrency,
            documents,
            measured.seconds,
            measured.cpu_seconds,
            process_tree_cpu(self.tika_pid) - tika_before,
            pushed=pushed,
            requests=len(self.site.arrivals(since)) if way == "web" else None,
            server_cpu_s=servers,
            peak_rss_mb=round(measured.peak_rss_bytes / 2**20, 1),
        )


def summary(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each (way, concurrency)'s means over its runs, with the ratio to Tika alone's rate."""
    groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((run["concurrency"], run["way"]), []).append(run)
    rows = []
    for (concurrency, way), group in sorted(groups.items()):
        alone = groups.get((concurrency, "Tika alone"))
        rate = statistics.mean(run["documents_per_s"] for run in group)
        row = {
            "concurrency": concurrency,
            "way": way,
            "runs": len(group),
            "documents_per_s": round(rate, 2),
            "spread": [run["documents_per_s"] for run in group],
            **{
                key: round(statistics.mean(run[key] for run in group), 2)
                for key in ("cpu_ms_per_document", "client_cpu_ms_per_document", "tika_cpu_ms_per_document", "cores_busy")
            },
        }
        if alone and way != "Tika alone":
            row["vs_tika_alone"] = round(rate / statistics.mean(run["documents_per_s"] for run in alone), 3)
            row["met"] = row["vs_tika_alone"] >= TARGET
        rows.append(row)
    return rows


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"{report['documents']:,} files ({report['megabytes']} MB) from {report['originals']} originals, "
        f"{report['machine']['cpus']} CPUs, Tika {report['tika_version']}, Solr: {report['solr']}, cores: "
        + (", ".join(f"{who} {cores}" for who, cores in report["cores"].items()) if report.get("cores") else "all shared"),
        "",
        "| C | way | runs | documents/s | vs Tika alone | CPU ms / document | of it the crawler's (or client's) "
        "| Tika's | cores busy | spread |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["summary"]:
        lines.append(
            f"| {row['concurrency']} | {row['way']} | {row['runs']} | {row['documents_per_s']} | {row.get('vs_tika_alone', '')} "
            f"| {row['cpu_ms_per_document']} | {row['client_cpu_ms_per_document']} | {row['tika_cpu_ms_per_document']} "
            f"| {row['cores_busy']} | {row['spread']} |"
        )
    if report.get("ocr"):
        lines += ["", "| document | seconds without OCR | seconds with OCR | words with OCR |", "|---|---|---|---|"]
        for row in report["ocr"]["documents"]:
            lines.append(f"| {row['name']} | {row['without']} | {row['with']} | {row['words_with']} |")
        lines.append(
            f"\nThe office documents: {report['ocr']['office_without']} s without OCR, {report['ocr']['office_with']} s "
            f"with (OCR's share {report['ocr']['office_share']:.0%}); the scans and images: {report['ocr']['scans_with']} s."
        )
    return "\n".join(lines) + "\n"


def ocr_share(url: str, corpus_dir: Path, documents: list[Path]) -> dict[str, Any]:
    """Each original and scan converted one at a time without OCR and with it."""
    plain = TikaConverter(url, concurrency=1)
    ocr = TikaConverter(url, concurrency=1, ocr=True, ocr_timeout=600)
    rows: list[dict[str, Any]] = []
    scans = [corpus_dir / scan for scan in SCANS if (corpus_dir / scan).exists()]
    for path in [*documents, *scans]:
        data = path.read_bytes()
        times, words = {}, 0
        for name, converter in (("without", plain), ("with", ocr)):
            started = time.monotonic()
            try:
                text = converter.convert(data, None, path.name).text
            except ConversionError as exc:
                text = f"<{exc.status}>"
            times[name] = round(time.monotonic() - started, 2)
            if name == "with":
                words = len(text.split())
        rows.append(
            {"name": path.name, "without": times["without"], "with": times["with"], "words_with": words, "scan": path in scans}
        )
        print(f"OCR: {path.name}: {times['without']} s without, {times['with']} s with", file=sys.stderr, flush=True)
    plain.close()
    ocr.close()
    office = [row for row in rows if not row["scan"]]
    without = round(sum(row["without"] for row in office), 2)
    with_ = round(sum(row["with"] for row in office), 2)
    return {
        "documents": rows,
        "office_without": without,
        "office_with": with_,
        "office_share": (with_ - without) / with_ if with_ else 0.0,
        "scans_with": round(sum(row["with"] for row in rows if row["scan"]), 2),
    }


@contextlib.contextmanager
def tika_for(url: str, pid: int | None, work: Path) -> Iterator[tuple[str, int, str]]:
    """(URL, pid, version) of the Tika server measured: one given (its pid too, for its CPU), or a
    development one started here."""
    if url:
        if pid is None:
            raise SystemExit("--tika-url needs --tika-pid: Tika's CPU is part of each figure")
        yield url, pid, requests.get(url.rstrip("/") + "/version", timeout=10).text.strip()
        return
    server = DevTika(work / "tika", free_port(), heap="2g")
    started = server.start()
    print(f"Tika {server.version} started in {server.start_seconds:.1f} s", file=sys.stderr, flush=True)
    try:
        found = server.status()["pid"]
        yield started, found, server.version
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=3000)
    parser.add_argument("--concurrency", default="2,4", help="documents in Tika at once, e.g. 1,2,4")
    parser.add_argument("--ways", default="Tika alone,files,web")
    parser.add_argument("--warm-passes", type=int, default=2, help="the corpus through Tika before measuring")
    parser.add_argument("--rounds", type=int, default=1, help="2: each concurrency's ways again, in reverse order")
    parser.add_argument("--solr", default="stand-in", choices=["dev", "stand-in"])
    parser.add_argument("--solr-url", default="")
    parser.add_argument("--tika-url", default="")
    parser.add_argument("--tika-pid", type=int)
    parser.add_argument(
        "--tika-cores",
        type=int,
        default=0,
        help="Tika on this many cores of its own (the last ones), everything else on the others; 0: all share all",
    )
    parser.add_argument("--ocr", action="store_true", help="OCR's share too (one conversion of each original with it)")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if not CORPUS.exists():
        raise SystemExit(f"{CORPUS} is absent")
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-binaries-"))
    out = Path(args.out or work / "results")
    out.mkdir(parents=True, exist_ok=True)
    corpus_dir = unpack(CORPUS.name, work / "corpus") / "textract-tests" / "tests"
    ways = args.ways.split(",")
    try:
        with (
            tika_for(args.tika_url, args.tika_pid, work) as (tika_url, tika_pid, version),
            solr_for(args.solr, args.solr_url, work) as (solr_url, solr_pid),
        ):
            tika = TikaConverter(tika_url, concurrency=8)
            for _ in range(3):  # the JIT warmed on every format, for every way alike
                documents = checked(tika, originals(corpus_dir))
            corpus = build_corpus(documents, work / "site", args.documents)
            report: dict[str, Any] = {
                "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
                "tika_version": version,
                "solr": "given" if args.solr_url else args.solr,
                "originals": len(documents),
                "documents": len(corpus.files),
                "megabytes": round(corpus.bytes / 2**20, 1),
            }
            runs: list[dict[str, Any]] = []
            for _ in range(args.warm_passes):  # Tika's JIT takes thousands of documents
                warm = tika_alone(tika, corpus.files, 4, tika_pid)
                print(f"warm-up, the corpus through Tika: {warm['documents_per_s']} documents/s", file=sys.stderr)
            with nginx(corpus.root, work / "nginx") as site:
                if args.tika_cores:  # Tika as a service on cores of its own, as deploy/ runs it
                    everything = sorted(os.sched_getaffinity(0))
                    tika_cores, others = set(everything[-args.tika_cores :]), set(everything[: -args.tika_cores])
                    pin(tika_pid, tika_cores)
                    for pid in (os.getpid(), site.process.pid, *([solr_pid] if solr_pid else [])):
                        pin(pid, others)
                    report["cores"] = {"tika": sorted(tika_cores), "crawler, client, nginx, Solr": sorted(others)}
                crawls = Crawls(work, corpus, site, solr_url, tika_url, tika_pid)
                for concurrency in (int(count) for count in args.concurrency.split(",")):
                    for round_ in range(args.rounds):
                        for way in ways if round_ % 2 == 0 else ways[::-1]:
                            if args.tika_cores:  # again: a parser JVM Tika restarted is its watchdog's child
                                pin(tika_pid, tika_cores)
                            if way == "Tika alone":
                                run = tika_alone(tika, corpus.files, concurrency, tika_pid)
                            else:
                                run = crawls.crawl(way, concurrency)
                            print(
                                f"C={concurrency} {way}: {run['documents_per_s']} documents/s, "
                                f"{run['cpu_ms_per_document']} CPU ms/document, {run['cores_busy']} cores busy",
                                file=sys.stderr,
                                flush=True,
                            )
                            runs.append(run)
                            report = write_results(out, {**report, "summary": summary(runs), "runs": runs}, markdown)
            if args.ocr:
                report["ocr"] = ocr_share(tika_url, corpus_dir, documents)
                report = write_results(out, report, markdown)
            tika.close()
    finally:
        shutil.rmtree(work / "site", ignore_errors=True)
    print(markdown(report))
    print(f"results in {out}")


if __name__ == "__main__":
    main()
