"""The benchmark's real sites (issue 27): built sites from the shared corpora, unpacked into the
benchmark's work folder and served from disk by the same nginx as the synthetic site.

    sphinx  the Scipy Lecture Notes (Sphinx): 255 HTML pages, images, .py/.ipynb/.zip downloads.
            Seed: index.html, the site's root page (233 pages reachable by links; no page of it
            reaches more than 234: the others are orphans, e.g. the search and 404 pages).
    nutch   the Apache Nutch site: 1,291 HTML pages of Javadoc, Markdown sources, robots.txt.
            Seed: the Javadoc's index.html (1,290 pages reachable; the site's root is Markdown for
            Hugo, without an HTML index). robots.txt stays: both spiders obey it.

The site is what it is: a run counts what was fetched (nginx's access log), not a chosen N.
"""

from __future__ import annotations

import random
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

CORPORA = ROOT.parent / "shared" / "corpora"
# name: (archive, its top folder, the seed's path under it)
SITES = {
    "sphinx": ("scipy-lectures-site.tar.xz", "scipy-lectures.github.com", "index.html"),
    "nutch": ("nutch-site.tar.xz", "nutch-site", "documentation/javadoc/api/index.html"),
}
CHANGED_SHARE = 0.05
BODY_END = re.compile(rb"</body>", re.IGNORECASE)


def corpus_missing(name: str) -> str | None:
    """Why the real site ``name`` cannot be built here, or None."""
    archive = CORPORA / SITES[name][0]
    return None if archive.exists() else f"{archive} is absent (the shared corpora are not on this machine)"


@dataclass
class RealSite:
    name: str
    root: Path
    seed: str

    @classmethod
    def unpack(cls, name: str, work: Path) -> RealSite:
        archive, folder, seed = SITES[name]
        missing = corpus_missing(name)
        if missing:
            raise SystemExit(missing)
        work.mkdir(parents=True, exist_ok=True)
        subprocess.run(["tar", "-xJf", str(CORPORA / archive), "-C", str(work)], check=True)
        root = work / folder
        for path in [root, *root.rglob("*")]:  # the archive's files are read-only; phase d rewrites pages
            path.chmod(0o755 if path.is_dir() else 0o644)
        return cls(name, root, seed)

    def html_pages(self) -> list[str]:
        """Paths of the site's HTML pages, relative to its root, sorted."""
        return sorted(str(path.relative_to(self.root)) for path in self.root.rglob("*.html"))

    @property
    def pages(self) -> int:
        return len(self.html_pages())

    @property
    def documents(self) -> int:
        """The HTML pages in the archive (not all are linked; a crawl counts what it fetched)."""
        return self.pages

    def change(self, share: float = CHANGED_SHARE) -> int:
        """Add a paragraph before </body> of a seeded random ``share`` of the HTML pages (new text,
        size, Last-Modified and ETag); returns how many."""
        pages = self.html_pages()
        rng = random.Random(self.name)
        chosen = rng.sample(pages, max(1, round(share * len(pages))))
        for number, page in enumerate(chosen):
            path = self.root / page
            body = path.read_bytes()
            found = list(BODY_END.finditer(body))
            at = found[-1].start() if found else len(body)
            paragraph = f"<p>Changed for the maintenance benchmark: revision 1 of page {number}.</p>".encode()
            path.write_bytes(body[:at] + paragraph + body[at:])
        return len(chosen)
