"""Debian's builds of the Python packages that PyPI has no Linux wheel for (python3-gssapi: MIT
Kerberos for Python), importable in .venv without a compiler and without the rest of Debian's
dist-packages.

deploy/bootstrap.sh's ``kerberos`` profile installs the Debian package, then ``install`` links each
module named (a package folder or a ``.py`` file) into ``.venv/debian-packages/`` and names that
folder in a ``.pth`` file of the venv's site-packages: Python appends it to ``sys.path`` after the
venv's own packages, so a package pip installed is found first. No metadata is linked, so pip
neither sees these modules nor builds, upgrades or removes them. Debian builds them for its own
Python (3.11 on Debian 12): a venv on another version fails here, at install, not at sign-in.
"""

from __future__ import annotations

import importlib
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path

DIST_PACKAGES = Path("/usr/lib/python3/dist-packages")
FOLDER = "debian-packages"
PTH = "searchcrawl-debian-packages.pth"
# python3-gssapi, and python3-decorator: the one module it imports that is not its own
GSSAPI = ("gssapi", "decorator")


def link(modules: Iterable[str], prefix: Path, site_packages: Path, dist_packages: Path = DIST_PACKAGES) -> Path:
    """Links each of ``modules`` from ``dist_packages`` into ``prefix``/debian-packages and names
    that folder, alone, in ``site_packages``' .pth file; returns the folder. RuntimeError naming
    a module Debian's packages do not hold (nothing linked then)."""
    sources = []
    for name in modules:
        found = [path for path in (dist_packages / name, dist_packages / f"{name}.py") if path.exists()]
        if not found:
            raise RuntimeError(
                f"Debian's Python module {name!r} is not in {dist_packages}: run `bash deploy/bootstrap.sh kerberos`"
            )
        sources.append(found[0])
    folder = prefix / FOLDER
    folder.mkdir(exist_ok=True)
    for source in sources:
        target = folder / source.name
        target.unlink(missing_ok=True)  # a link of an earlier run; a folder of anyone else's fails here
        target.symlink_to(source)
    (site_packages / PTH).write_text(f"{folder.resolve()}\n", encoding="utf-8")
    return folder


def install(modules: Iterable[str] = GSSAPI) -> None:
    """Links ``modules`` into the running venv and imports each: RuntimeError when one does not
    import in this Python (Debian's extension modules are built for Debian's Python)."""
    names = list(modules)
    folder = link(names, Path(sys.prefix), Path(sysconfig.get_paths()["purelib"]))
    sys.path.append(str(folder))
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            version = f"{sys.version_info.major}.{sys.version_info.minor}"
            raise RuntimeError(f"Debian's {name} does not import in this venv's Python {version}: {exc}") from exc
