"""The language benchmark: how much of a text language detection needs to read.

    .venv/bin/python -m tests.benchmarks.language [--per-language 40] [--lengths 5000,3000,2000,1500,1000]

Real text in many languages that nobody here wrote: the translated manual pages of the machine's
Debian packages (``/usr/share/man/<language>/man1/*.gz``; English from ``/usr/share/man/man1``),
their roff markup stripped, pages of at least 3,000 characters, up to --per-language of each
language picked with a fixed seed. Each page is classified from its first N characters (as
``searchcrawl.content.language_detection.language_sample`` cuts it) for each N of --lengths, and
the table says how many answers name the folder's language, how many agree with the longest
sample's answer, and the CPU milliseconds a document. SAMPLE_CHARS in language_detection.py was
chosen from it. Not part of the test suite: what it reads depends on the packages installed.
"""

from __future__ import annotations

import argparse
import gzip
import random
import re
import time
from pathlib import Path
from typing import Any

from searchcrawl.content import language_detection

MAN = Path("/usr/share/man")
ROFF_ESCAPE = re.compile(r"\\f[BIRP]|\\-|\\\(..|\\&|\\e|\\[a-z]")


def page_text(path: Path) -> str:
    """A manual page's text: its request lines (``.TH``, ``.SH``, comments) left out, font and
    character escapes blanked."""
    raw = gzip.open(path).read().decode("utf-8", "replace")
    lines = [line for line in raw.splitlines() if not line.startswith((".", "'"))]
    return " ".join(ROFF_ESCAPE.sub(" ", " ".join(lines)).split())


def corpus(per_language: int, seed: int = 1) -> list[tuple[str, str]]:
    """(ISO 639-1 code, text) of up to ``per_language`` pages of each translated language."""
    folders = [("en", MAN / "man1")] + [  # pt and pt_BR, zh_CN and zh_TW: each folder its own pages
        (folder.name.split("_")[0], folder / "man1") for folder in sorted(MAN.iterdir()) if not folder.name.startswith("man")
    ]
    rng = random.Random(seed)
    pages: list[tuple[str, str]] = []
    for language, folder in folders:
        if not folder.is_dir():
            continue
        files = sorted(folder.glob("*.gz"))
        rng.shuffle(files)
        taken = 0
        for path in files:
            if taken >= per_language:
                break
            try:
                text = page_text(path)
            except (OSError, EOFError):
                continue
            if len(text) >= 3000:
                pages.append((language, text))
                taken += 1
    return pages


def evaluate(pages: list[tuple[str, str]], lengths: list[int]) -> list[dict[str, Any]]:
    model = language_detection.load_model()
    longest = max(lengths)
    reference = [model.classify(language_detection.language_sample(text, longest))[0] for _language, text in pages]
    rows = []
    for length in lengths:
        samples = [language_detection.language_sample(text, length) for _language, text in pages]
        started = time.process_time()
        answers = [model.classify(sample)[0] for sample in samples]
        cpu = time.process_time() - started
        rows.append(
            {
                "characters": length,
                "right": sum(answer == language for answer, (language, _text) in zip(answers, pages, strict=True)),
                "agree": sum(answer == first for answer, first in zip(answers, reference, strict=True)),
                "ms_per_document": round(cpu * 1000 / len(pages), 3),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-language", type=int, default=40, help="pages of each language at most (default 40)")
    parser.add_argument("--lengths", default="5000,3000,2000,1500,1000", help="sample lengths in characters")
    args = parser.parse_args()
    pages = corpus(args.per_language)
    if not pages:
        raise SystemExit(f"no manual pages under {MAN}")
    languages = sorted({language for language, _text in pages})
    print(f"{len(pages)} pages in {len(languages)} languages ({', '.join(languages)})")
    print(
        f"| characters | right (of {len(pages)}) | agree with {max(int(n) for n in args.lengths.split(','))} | CPU ms/document |"
    )
    print("|---:|---:|---:|---:|")
    for row in evaluate(pages, [int(n) for n in args.lengths.split(",")]):
        print(f"| {row['characters']:,} | {row['right']} | {row['agree']} | {row['ms_per_document']} |")


if __name__ == "__main__":
    main()
