"""The wheel's package list (pyproject.toml lists its packages, it does not find them: two are
folders of the top-level solr/). A package missing from the list is missing from an installed
wheel, and `scrapy web` fails there at start with an ImportError that an editable checkout never
shows (web/views/ and web/sign_on/ were, once): checked here, in the unit layer, on every run.
tests/e2e/test_wheel.py builds the wheel and checks its files."""

from __future__ import annotations

import tomllib
from typing import Any

from tests.conftest import ROOT


def setuptools_config() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def test_pyproject_lists_every_package() -> None:
    config = setuptools_config()
    found = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "searchcrawl").rglob("__init__.py")}
    mapped = config["package-dir"]
    assert set(config["packages"]) == found | set(mapped)
    for folder in mapped.values():
        assert (ROOT / folder / "__init__.py").is_file(), folder
