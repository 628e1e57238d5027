"""The converters compared on the shared textract corpus: the share of expected words found per
format, and documents per second, for the Python converters (worker processes, as a crawl runs
them) and for a Tika server (``/rmeta/text``, as a crawl sends it).

    .venv/bin/python -m tests.benchmarks.converters [--tika-url URL] [--rounds 5]

Without --tika-url it starts a development Tika server (scrapy tika start's) in a temp dir and
reports its start time and memory. A format's "expected words" are the words of its
``raw_text.txt``, compared as lower-cased multisets (as tests/content/test_convert.py does).
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from searchcrawl.content.convert import ConversionError, Converted, Converter, TikaConverter
from searchcrawl.dev.jvm_server import free_port
from searchcrawl.dev.tika_runner import DevTika
from tests.conftest import CORPORA, unpack

CORPUS = CORPORA / "textract-tests.tar.xz"
#: the formats a crawl converts (HTML and plain text are the crawl's own; audio is out of scope)
FORMATS = ["pdf", "docx", "doc", "xlsx", "xls", "pptx", "odt", "ods", "rtf", "epub", "eml", "msg", "csv", "tsv", "json"]
COMMON = ["pdf", "docx", "xlsx", "pptx", "doc", "odt"]


def words(text: str) -> Counter[str]:
    return Counter(re.findall(r"\w+", text.lower()))


def share_found(expected: str, got: str) -> float:
    """The share of the expected words found (a word expected 3 times counts 3 times)."""
    want, have = words(expected), words(got)
    total = sum(want.values())
    return sum(min(n, have[w]) for w, n in want.items()) / total if total else 1.0


def convert_or_empty(convert: Callable[..., Converted], body: bytes, name: str) -> str:
    try:
        return convert(body, None, name).text
    except ConversionError as exc:
        return f"<{exc.status}>"


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its children (Tika's watchdog and its parser JVM)."""
    import subprocess

    out = subprocess.run(["ps", "-o", "rss=", "--pid", str(pid), "--ppid", str(pid)], capture_output=True, text=True)
    return sum(int(line) for line in out.stdout.split()) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tika-url", help="a running Tika server (default: start a development one)")
    parser.add_argument("--rounds", type=int, default=5, help="conversions of each common document, for the rate")
    args = parser.parse_args()
    if not CORPUS.exists():
        raise SystemExit(f"{CORPUS} is absent")
    with tempfile.TemporaryDirectory() as temp:
        corpus = unpack(CORPUS.name, Path(temp)) / "textract-tests" / "tests"
        tika_server = None
        url = args.tika_url
        if not url:
            tika_server = DevTika(Path(temp) / "data", free_port())
            url = tika_server.start()
            print(f"Tika {tika_server.version} started in {tika_server.start_seconds:.1f} s")
        tika = TikaConverter(url)
        python = Converter(workers=2)
        try:
            print(f"\n{'format':8} {'words':>6} {'Python':>8} {'Tika':>8}")
            totals = {"Python": [0.0, 0], "Tika": [0.0, 0]}
            for fmt in FORMATS:
                source = corpus / fmt / f"raw_text.{fmt}"
                if not source.exists():
                    continue
                expected = (corpus / fmt / "raw_text.txt").read_text(encoding="utf-8")
                body = source.read_bytes()
                shares = {
                    "Python": share_found(expected, convert_or_empty(python.convert, body, source.name)),
                    "Tika": share_found(expected, convert_or_empty(tika.convert, body, source.name)),
                }
                count = sum(words(expected).values())
                for name, share in shares.items():
                    totals[name][0] += share * count
                    totals[name][1] += count
                print(f"{fmt:8} {count:6} {shares['Python']:8.1%} {shares['Tika']:8.1%}")
            print(f"{'all':8} {totals['Python'][1]:6} " + " ".join(f"{t[0] / t[1]:8.1%}" for t in totals.values()))
            print(f"\nDocuments per second on {', '.join(COMMON)} ({args.rounds} rounds, one at a time, warm):")
            bodies = [((corpus / f / f"raw_text.{f}").read_bytes(), f"raw_text.{f}") for f in COMMON]
            for name, convert in (("Python", python.convert), ("Tika", tika.convert)):
                for body, filename in bodies:  # warm up: worker start, the JIT
                    convert_or_empty(convert, body, filename)
                started = time.perf_counter()
                for _ in range(args.rounds):
                    for body, filename in bodies:
                        convert_or_empty(convert, body, filename)
                seconds = time.perf_counter() - started
                print(f"  {name:7} {args.rounds * len(bodies) / seconds:6.1f} documents/s")
            if tika_server is not None:
                pid = tika_server._running_pid()
                if pid:
                    print(f"\nTika's memory (watchdog and parser JVM, RSS): {rss_mb(pid):.0f} MB")
        finally:
            python.close()
            tika.close()
            if tika_server is not None:
                tika_server.stop()


if __name__ == "__main__":
    main()
