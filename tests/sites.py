"""Test sites written to disk, to be served by a real HTTP server on 127.0.0.1."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

WORDS = (
    "annual report budget review travel policy security guideline laptop password network printer "
    "holiday calendar onboarding payroll benefits pension contract supplier invoice warehouse "
    "logistics marketing campaign research laboratory patent compliance audit training course"
).split()


@dataclass(frozen=True)
class Page:
    path: str
    depth: int
    title: str
    description: str
    keywords: tuple[str, ...]
    author: str
    text: str


def page_html(page: Page, links: list[str], lang: str = "en") -> str:
    anchors = "\n".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return f"""<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<title>{page.title}</title>
<meta name="description" content="{page.description}">
<meta name="keywords" content="{", ".join(page.keywords)}">
<meta name="author" content="{page.author}">
</head>
<body>
<h1>{page.title}</h1>
<p>{page.text}</p>
<ul>
{anchors}
</ul>
</body>
</html>
"""


def build_intranet(root: Path, *, sections: int = 8, per_section: int = 6, offsite: tuple[str, ...] = ()) -> dict[str, Page]:
    """A tree of interlinked pages: index (depth 0) -> sections (1) -> topics (2) -> deep pages (3).

    Every topic links back to its section and to its neighbour, to one deep page, and to the
    ``offsite`` URLs. Returns every page by path, with the depth at which a crawl first meets it.
    """
    pages: dict[str, Page] = {}

    def add(path: str, depth: int, number: int, kind: str) -> Page:
        word = WORDS[number % len(WORDS)]
        other = WORDS[(number * 7 + 3) % len(WORDS)]
        page = Page(
            path=path,
            depth=depth,
            title=f"{kind.title()} {number}: {word} {other}",
            description=f"About {word} and {other} ({kind} {number})",
            keywords=(word, other, kind),
            author=f"Author {number % 5}",
            text=f"This {kind} page number {number} explains {word} and {other} for colleagues. " * 3,
        )
        pages[path] = page
        return page

    index = add("index.html", 0, 0, "home")
    section_links = []
    for s in range(sections):
        section_links.append(f"section{s}/index.html")
    (root / "index.html").write_text(page_html(index, section_links), encoding="utf-8")
    number = 1
    for s in range(sections):
        folder = root / f"section{s}"
        folder.mkdir(parents=True, exist_ok=True)
        section = add(f"section{s}/index.html", 1, number, "section")
        number += 1
        topics = [f"topic{t}.html" for t in range(per_section)]
        (folder / "index.html").write_text(page_html(section, [*topics, "../index.html"]), encoding="utf-8")
        for t in range(per_section):
            topic = add(f"section{s}/topic{t}.html", 2, number, "topic")
            number += 1
            deep = add(f"section{s}/deep/topic{t}.html", 3, number, "deep")
            number += 1
            neighbour = f"topic{(t + 1) % per_section}.html"
            links = ["index.html", neighbour, f"deep/topic{t}.html", *offsite]
            (folder / f"topic{t}.html").write_text(page_html(topic, links), encoding="utf-8")
            (folder / "deep").mkdir(exist_ok=True)
            (folder / "deep" / f"topic{t}.html").write_text(page_html(deep, ["../index.html"]), encoding="utf-8")
    return pages
