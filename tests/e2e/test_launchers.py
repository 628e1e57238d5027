"""The processes the web pages, `scrapy demo` and the scheduler start (``scrapy_command``,
``LocalLauncher``) import the installed scrapy and searchcrawl, never what lies in the folder they
were started in (the `searchcrawl` command works in any folder)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from searchcrawl.ops.launchers import LocalLauncher, scrapy_command

HOSTILE = "from pathlib import Path\nPath({marker!r}).write_text('imported')\nraise SystemExit(3)\n"


def hostile_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A folder holding a `scrapy.py` that marks its import, and the marker's path."""
    folder, marker = tmp_path / "downloads", tmp_path / "imported"
    folder.mkdir()
    (folder / "scrapy.py").write_text(HOSTILE.format(marker=str(marker)), encoding="utf-8")
    return folder, marker


def test_a_scrapy_command_never_imports_the_working_directorys_modules(tmp_path: Path) -> None:
    folder, marker = hostile_folder(tmp_path)
    answer = subprocess.run(scrapy_command("version"), cwd=folder, capture_output=True, text=True, timeout=120)
    assert not marker.exists(), answer.stderr
    assert answer.returncode == 0 and answer.stdout.startswith("Scrapy "), answer.stderr


def test_a_crawl_launched_in_a_folder_of_someone_elses_imports_nothing_of_it(tmp_path: Path) -> None:
    folder, marker = hostile_folder(tmp_path)
    launcher = LocalLauncher(folder, tmp_path / "logs")
    environment = {key: value for key, value in os.environ.items() if key != "SCRAPY_SETTINGS_MODULE"}
    os.environ["SCRAPY_SETTINGS_MODULE"] = "searchcrawl.settings"
    try:
        launcher.start("nosuch")
    finally:
        os.environ.clear()
        os.environ.update(environment)
    assert launcher.children["nosuch"].wait(timeout=120) != 3
    assert not marker.exists()
