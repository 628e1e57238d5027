"""The source file reference as the source editor shows it (issue 79): each top-level key's type,
default and meaning, read from the key table of docs/sources.md, the one place they are written.

The package cannot ship the docs, so it ships their table as ``source_keys.json`` (package data),
made from the docs by ``python -m searchcrawl.config.source_reference docs/sources.md``; a test
(tests/config/test_source_reference.py) holds it equal to the docs, and to the keys the model
takes. Markdown is reduced to text (links to their words, code marks dropped): the editor's page
escapes it as any text.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

HEADER = "| key | type | default | meaning |"
LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")


@dataclass(frozen=True)
class KeyHelp:
    key: str
    type: str
    default: str
    meaning: str


def plain(markdown: str) -> str:
    """A cell's text without markdown: links by their words, no code marks."""
    return LINK.sub(r"\1", markdown).replace("`", "").replace("\\|", "|").strip()


def parse_reference(markdown: str) -> list[KeyHelp]:
    """The rows of the first key table (``HEADER``) of docs/sources.md, in its order."""
    lines = markdown.splitlines()
    start = lines.index(HEADER) + 2
    found = []
    for line in lines[start:]:
        if not line.startswith("| `"):
            break
        cells = [cell for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        key = plain(cells[0])
        found.append(KeyHelp(key, plain(cells[1]), plain(cells[2]), plain(" | ".join(cells[3:]))))
    return found


def reference() -> list[KeyHelp]:
    """The packaged reference (``source_keys.json``)."""
    data = json.loads(resources.files("searchcrawl.config").joinpath("source_keys.json").read_text(encoding="utf-8"))
    return [KeyHelp(**item) for item in data]


def main(argv: list[str]) -> None:
    """Write source_keys.json beside this module from the docs file named in ``argv``."""
    rows = parse_reference(Path(argv[0]).read_text(encoding="utf-8"))
    target = Path(__file__).with_name("source_keys.json")
    target.write_text(json.dumps([asdict(row) for row in rows], indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(rows)} keys written to {target}")


if __name__ == "__main__":
    main(sys.argv[1:])
