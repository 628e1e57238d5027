"""The benchmark's real sites (issue 27): built sites from the shared corpora, unpacked into the
benchmark's work folder and served from disk by the same nginx as the synthetic site.

    sphinx  the Scipy Lecture Notes (Sphinx): 255 HTML pages, images, .py/.ipynb/.zip downloads.
            Seed: index.html, the site's root page (233 pages reachable by links; no page of it
            reaches more than 234: the others are orphans, e.g. the search and 404 pages).
    nutch   the Apache Nutch site: 1,291 HTML pages of Javadoc, Markdown sources, robots.txt.
            Seed: the Javadoc's index.html (1,290 pages reachable; the site's root is Markdown for
            Hugo, without an HTML index). robots.txt stays: both spiders obey it.
    nutch-releases
            the same Javadoc as a project's documentation site keeps it, one folder per release:
            RELEASES copies under 1.<k>/api/, each page saying which release it documents (so no
            page is a duplicate of another release's), and an index.html linking the releases:
            9,038 HTML pages (9,031 reachable), the size of the site the issue was measured on.
            Why: on a site crawled in ten seconds, each process's start and end weigh as much as
            the crawl.

The site is what it is: a run counts what was fetched (nginx's access log), not a chosen N.
"""

from __future__ import annotations

import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.benchmarks.synthetic import SyntheticSite, page_path
from tests.conftest import ROOT, unpack

CORPORA = ROOT.parent / "shared" / "corpora"
# name: (archive, its top folder, the seed's path under it)
SITES = {
    "sphinx": ("scipy-lectures-site.tar.xz", "scipy-lectures.github.com", "index.html"),
    "nutch": ("nutch-site.tar.xz", "nutch-site", "documentation/javadoc/api/index.html"),
    "nutch-releases": ("nutch-site.tar.xz", "nutch-site", "index.html"),
}
RELEASES = 7
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
        unpack(archive, work)  # Python's lzma and tarfile: a minimal Debian 12 has no xz for tar
        root = work / folder
        for path in [root, *root.rglob("*")]:  # the archive's files are read-only; phase d rewrites pages
            path.chmod(0o755 if path.is_dir() else 0o644)
        if name == "nutch-releases":
            root = releases(root / "documentation" / "javadoc" / "api", work / "releases", RELEASES)
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


def build_site(name: str, work: Path, pages: int) -> SyntheticSite | RealSite:
    """The benchmark's site ``name`` under ``work``: the synthetic site of ``pages`` pages, or a
    real site of SITES unpacked (``pages`` ignored: the site is what it is)."""
    return SyntheticSite(work, pages).build() if name == "synthetic" else RealSite.unpack(name, work)


def site_seed(site: SyntheticSite | RealSite) -> str:
    """The path of the page a crawl of ``site`` starts from."""
    return page_path(0) if isinstance(site, SyntheticSite) else site.seed


def releases(api: Path, root: Path, count: int) -> Path:
    """``count`` copies of the Javadoc folder ``api`` under root/1.<k>/api/, each page marked
    with its release before </body>, an index.html linking them, and the site's robots.txt."""
    links = []
    for release in range(1, count + 1):
        target = root / f"1.{release}" / "api"
        shutil.copytree(api, target)
        mark = f"<p>Apache Nutch 1.{release}</p>".encode()
        for page in target.rglob("*.html"):
            body = page.read_bytes()
            found = list(BODY_END.finditer(body))
            at = found[-1].start() if found else len(body)
            page.write_bytes(body[:at] + mark + body[at:])
        links.append(f'<li><a href="1.{release}/api/index.html">Apache Nutch 1.{release} API</a></li>')
    (root / "index.html").write_text(
        f"<html><head><title>Apache Nutch API documentation</title></head><body><ul>{''.join(links)}</ul></body></html>",
        encoding="utf-8",
    )
    shutil.copy(api.parents[2] / "robots.txt", root / "robots.txt")
    return root
