"""The judged sets whose corpus is a Debian documentation package, not an archive of the shared
corpora (tests/search/judged/README.md): which package, where its site lies in it, and its pages,
read from the package's .deb (`apt-get download PACKAGE`) or from the package installed. One
owner for the test of the sets' files and for the benchmarks that crawl them."""

from __future__ import annotations

import subprocess
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DocPackage:
    """A Debian package of documentation: ``html`` its site's folder in the package (the root the
    set's docnos are paths from), ``source`` the source name the benchmarks crawl it as."""

    package: str
    html: str
    source: str

    def installed(self) -> Path | None:
        """The site's folder of the package installed on this machine (`apt-get install`), if any."""
        folder = Path("/") / self.html
        return folder if folder.is_dir() else None


# judged set: its corpus's package (each set's NOTES.md says which version it was judged on)
DOC_PACKAGES = {
    "scrapy-docs": DocPackage("python-scrapy-doc", "usr/share/doc/python-scrapy-doc/html", "scrapydocs"),
    "python-docs": DocPackage("python3.11-doc", "usr/share/doc/python3.11/html", "pythondocs"),
}


def package_of(deb: Path) -> str:
    """The name of the package a .deb holds (its control file's ``Package``)."""
    found = subprocess.run(["dpkg-deb", "--field", str(deb), "Package"], check=True, capture_output=True, text=True)
    return found.stdout.strip()


def deb_of(name: str, debs: Iterable[Path]) -> Path | None:
    """The first of ``debs`` that holds the package of the judged set ``name``, None when none does."""
    wanted = DOC_PACKAGES[name].package
    return next((deb for deb in debs if package_of(deb) == wanted), None)


def deb_in(name: str, folder: Path) -> Path | None:
    """The .deb of the judged set ``name``'s package that ``folder`` holds under apt-get download's
    name (``PACKAGE_VERSION_ARCH.deb``; the last by name when several), None when none."""
    found = sorted(folder.glob(f"{DOC_PACKAGES[name].package}_*.deb"))
    return found[-1] if found else None


def deb_pages(name: str, deb: Path) -> set[str]:
    """The paths from the site's root (``/library/csv.html``) of the HTML pages of the judged set
    ``name``'s site in ``deb``, read from the package's file tree without unpacking it."""
    prefix = f"./{DOC_PACKAGES[name].html}/"
    with subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE) as dpkg:
        assert dpkg.stdout is not None
        with tarfile.open(fileobj=dpkg.stdout, mode="r|") as tar:
            names = [member.name for member in tar if member.isfile()]
    if dpkg.returncode:
        raise subprocess.CalledProcessError(dpkg.returncode, ["dpkg-deb", "--fsys-tarfile", str(deb)])
    return {"/" + path.removeprefix(prefix) for path in names if path.startswith(prefix) and path.endswith(".html")}


def folder_pages(root: Path) -> set[str]:
    """The paths from ``root`` (``/library/csv.html``) of the HTML pages of a site's folder."""
    return {"/" + path.relative_to(root).as_posix() for path in root.rglob("*.html")}


def unpacked(name: str, deb: Path, work: Path) -> Path:
    """The site's folder of the judged set ``name``, ``deb`` unpacked into ``work`` (``dpkg-deb -x``)."""
    work.mkdir(parents=True, exist_ok=True)  # dpkg-deb makes the last folder alone
    subprocess.run(["dpkg-deb", "-x", str(deb), str(work)], check=True)
    return work / DOC_PACKAGES[name].html
