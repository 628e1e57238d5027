"""Package data as real directories, also when searchcrawl runs from a zipped scrapyd egg.

scrapyd puts the egg file itself on ``sys.path``; ``importlib.resources`` reads files from it,
but tools that need a directory (Alembic's migration scripts, an HTTP server's document root)
do not, and Python 3.11's ``as_file`` cannot extract a directory. This one mechanism copies the
tree to a temporary directory when, and only when, it is not on disk already.
"""

from __future__ import annotations

import importlib.resources
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.resources.abc import Traversable
from pathlib import Path


def _copy_tree(resource: Traversable, target: Path) -> None:
    for child in resource.iterdir():
        if child.name == "__pycache__":
            continue
        if child.is_dir():
            (target / child.name).mkdir()
            _copy_tree(child, target / child.name)
        else:
            (target / child.name).write_bytes(child.read_bytes())


# The Solr configset (its conf/), package data of searchcrawl.index: for the dev Solr and SolrCloud alike
CONFIGSET_PACKAGE = "searchcrawl.index.configset"


@contextmanager
def package_dir(package: str, *parts: str) -> Iterator[Path]:
    """The directory ``parts`` of ``package`` on disk, for the duration of the ``with`` block."""
    resource = importlib.resources.files(package).joinpath(*parts)
    if isinstance(resource, Path):
        yield resource
        return
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-resources-"))
    try:
        _copy_tree(resource, work)
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)
