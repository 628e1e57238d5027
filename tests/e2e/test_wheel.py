"""The package as a user installs it: the wheel built from this checkout holds every module and
every file the commands need (the demo site, the Solr configset, the dev Solr launcher's Maven
sources), and once installed into a fresh venv, `scrapy solr start`, `scrapy solr collection` and
`scrapy demo` work from a folder that is not the checkout, building the launcher outside the
installed package; and the console command `searchcrawl` runs them from an empty folder with no
scrapy.cfg, where the installed `scrapy` knows none of them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from searchcrawl.dev.solr_runner import DevSolr, DevSolrCloud, free_port, free_port_range
from tests.conftest import ROOT, wait_for
from tests.test_packages import setuptools_config

# One worker runs the module: its wheel and venv (module-scoped: a wheel build, a venv and pip's
# install of every dependency, 1.5 min of a loaded machine) are made once, not once per worker
# that runs one of its tests (two did, when only the demo's test was in the group). The group is
# the demo's: `scrapy demo` serves the example intranet on its one port, 8765.
pytestmark = pytest.mark.xdist_group("demo-site")

# What a wheel is built from: a copy of these, so the build writes nothing into the checkout and no
# stale build/ of the checkout leaks into the wheel.
BUILD_INPUTS = ("pyproject.toml", "README.md", "searchcrawl", "solr")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "target", "*.egg-info", "build", "dist")


def expected_files() -> dict[str, Path]:
    """Every file the wheel must hold (path in the wheel -> file in the checkout)."""
    files = {
        path.relative_to(ROOT).as_posix(): path
        for path in (ROOT / "searchcrawl").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    for package, folder in setuptools_config()["package-dir"].items():
        base = ROOT / folder
        for path in base.rglob("*"):
            relative = path.relative_to(base)
            if path.is_file() and relative.parts[0] not in ("__pycache__", "target") and path.suffix != ".pyc":
                files["/".join([*package.split("."), relative.as_posix()])] = path
    return files


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("wheel-source")
    for name in BUILD_INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=IGNORED)
        elif path.is_file():
            shutil.copy2(path, source / name)
    dist = tmp_path_factory.mktemp("dist")
    started = time.monotonic()
    # An absolute path: pip takes a bare name for a package on PyPI.
    build = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(source.resolve()), "-w", str(dist)])
    assert build.returncode == 0, build.stdout + build.stderr
    print(f"\nwheel built in {time.monotonic() - started:.1f}s")
    (built,) = dist.glob("searchcrawl-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel and its dependencies from PyPI, nothing of the checkout.

    Our own pip installs into it (``--python``): a newer pip than the venv's bundled one, and
    about twice as fast; no byte-compiling, as the commands import only part of it."""
    venv = tmp_path_factory.mktemp("venv")
    started = time.monotonic()
    created = run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    assert created.returncode == 0, created.stdout + created.stderr
    python = str(venv / "bin" / "python")
    installed = run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-compile", str(wheel)], timeout=900)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    print(f"\nwheel installed with its dependencies in {time.monotonic() - started:.1f}s")
    return venv


def run(
    command: list[str], timeout: float = 600, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd, env=env)


def package_files(root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in root.rglob("*") if "__pycache__" not in path.parts}


@pytest.mark.slow
def test_the_wheel_holds_the_package_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = expected_files()
    missing = sorted(set(expected) - names)
    assert not missing, f"missing from the wheel: {missing}"
    for name in (
        "searchcrawl/index/configset/conf/schema.xml",
        "searchcrawl/dev/solr_launcher/pom.xml",
        "searchcrawl/dev/demo_site/index.html",
        # dev/servers/ ships in the wheel, not as an extra (docs/architecture.md, dev/ in the wheel)
        "searchcrawl/dev/servers/dovecot.py",
        "searchcrawl/dev/servers/oidc_provider/provider.mjs",
        "searchcrawl/system/locales/de/LC_MESSAGES/messages.po",  # the interface's languages (issue 79)
        "searchcrawl/system/locales/ja/LC_MESSAGES/messages.po",
    ):
        assert name in names
    with zipfile.ZipFile(wheel) as archive:
        assert (
            archive.read("searchcrawl/index/configset/conf/solrconfig.xml")
            == expected["searchcrawl/index/configset/conf/solrconfig.xml"].read_bytes()
        )
    assert not [name for name in names if "/target/" in name or name.endswith("classpath.txt")]


@pytest.fixture(scope="module")
def user_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's cache folder (XDG_CACHE_HOME) of the module's tests: fresh for the module, so the
    dev Solr launcher is built from the installed sources (`mvn package`: a Maven JVM and a
    compile) by the first test that starts a Solr, and found built by the next, as a user's second
    command finds it, instead of built again in a cache of each test's own."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def installed(venv: Path, user_cache: Path, tmp_path: Path) -> Iterator[dict]:
    """A user's folder with a minimal Scrapy project of the installed searchcrawl, its data dir,
    the module's user cache (the launcher's Maven build), and whatever dev Solr instances the
    test starts, stopped afterwards."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "scrapy.cfg").write_text("[settings]\ndefault = searchcrawl.settings\n", encoding="utf-8")
    data = tmp_path / "data"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("SEARCHCRAWL_", "SCRAPY_"))}
    env.pop("PYTHONPATH", None)
    env.pop("SOLR_URL", None)
    env.update(
        SEARCHCRAWL_DATA_DIR=str(data),
        XDG_CACHE_HOME=str(user_cache),  # a build of the launcher from the installed sources
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
    )
    ports: list[tuple[type[DevSolr], int]] = []
    processes: list[subprocess.Popen[str]] = []
    yield {"work": work, "data": data, "env": env, "ports": ports, "processes": processes, "cache": user_cache}
    for process in processes:  # a command still running when the test failed
        if process.poll() is None:
            process.kill()
            process.communicate()
    for kind, port in ports:
        kind(data, port).stop()  # whatever `scrapy solr stop` left running


def venv_command(installed: dict, folder: Path, command: str, *args: str) -> subprocess.Popen[str]:
    """The venv's ``command`` (a console script) with ``args``, started in ``folder``."""
    process = subprocess.Popen(
        [str(Path(installed["env"]["VIRTUAL_ENV"]) / "bin" / command), *args],
        cwd=folder,
        env=installed["env"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    installed["processes"].append(process)
    return process


def scrapy(installed: dict, *args: str) -> subprocess.Popen[str]:
    """`scrapy ARGS` of the venv, started in the user's folder."""
    return venv_command(installed, installed["work"], "scrapy", *args)


def finish(process: subprocess.Popen[str], timeout: float = 600) -> tuple[str, str]:
    stdout, stderr = process.communicate(timeout=timeout)
    assert process.returncode == 0, f"{process.args!r} exited {process.returncode}:\n{stdout}\n{stderr}"
    return stdout, stderr


@pytest.mark.slow
def test_the_installed_wheel_runs_solr_the_collection_command_and_the_demo(venv: Path, installed: dict) -> None:
    env, work = installed["env"], installed["work"]
    python = str(venv / "bin" / "python")
    where = run([python, "-c", "import searchcrawl; print(searchcrawl.__file__)"], cwd=work, env=env)
    package = Path(where.stdout.strip()).parent
    assert where.returncode == 0 and package.is_relative_to(venv), where.stdout + where.stderr
    before = package_files(package)

    port, cloud_port = free_port(), free_port_range(1)
    installed["ports"] += [(DevSolr, port), (DevSolrCloud, cloud_port)]
    started = time.monotonic()
    # One core and a one-node SolrCloud start side by side (the first builds the launcher); the
    # demo and the collection command each go as soon as their Solr is up.
    solr = scrapy(installed, "solr", "start", "--port", str(port))
    cloud = scrapy(installed, "solr", "start", "--cloud", "--nodes", "1", "--port", str(cloud_port))
    solr_out, _ = finish(solr)
    assert f"Solr is up at http://127.0.0.1:{port}/solr/searchcrawl" in solr_out
    demo = scrapy(installed, "demo", "--port", str(port))
    cloud_out, _ = finish(cloud)
    assert "SolrCloud is up: 1 nodes" in cloud_out
    collection = scrapy(installed, "solr", "collection", "wheel", "--port", str(cloud_port), "--shards", "1", "--replicas", "1")
    # built from the installed sources, into the module's (fresh) cache directory: by this test,
    # or by the console's test before it
    (build,) = [path for path in (installed["cache"] / "searchcrawl" / "solr-build").iterdir() if path.is_dir()]
    assert (build / "classpath.txt").is_file() and (build / "classes" / "searchcrawl" / "solr" / "DevSolr.class").is_file()
    collection_out, collection_err = finish(collection)
    demo_out, _ = finish(demo)
    print(f"\nscrapy solr start (and --cloud), then scrapy demo and scrapy solr collection: {time.monotonic() - started:.1f}s")
    node = f"http://127.0.0.1:{cloud_port}/solr"
    assert collection_out.strip() == f"{node}/wheel" and "Created collection wheel" in collection_err
    # the uploaded configset is the project's: its schema's fields are there
    with urllib.request.urlopen(f"{node}/wheel/schema/fields/display_url?wt=json", timeout=30) as response:
        assert b'"display_url"' in response.read()
    assert "1. Travel policy" in demo_out and "Oracle on demand" in demo_out

    for solr_port, said in ((port, "Solr stopped"), (cloud_port, "SolrCloud stopped")):
        stopped, _ = finish(scrapy(installed, "solr", "stop", "--port", str(solr_port)))
        assert said in stopped
    # nothing was built or written into the installed package (it may be read-only)
    assert package_files(package) == before


def console(installed: dict, folder: Path, *args: str) -> subprocess.Popen[str]:
    """The venv's console command `searchcrawl ARGS`, started in ``folder``."""
    return venv_command(installed, folder, "searchcrawl", *args)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.mark.slow
def test_the_console_command_works_in_a_folder_without_a_project(installed: dict, tmp_path: Path) -> None:
    """`searchcrawl solr start`, `searchcrawl web`, ... from an empty folder with no scrapy.cfg
    in it or above it: the installed `scrapy` knows no searchcrawl command there, the console
    command knows them all (the same command code, with the package's settings)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not [folder for folder in (empty, *empty.parents) if (folder / "scrapy.cfg").exists()]
    unknown = subprocess.run(
        [str(Path(installed["env"]["VIRTUAL_ENV"]) / "bin" / "scrapy"), "solr", "status"],
        cwd=empty,
        env=installed["env"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Unknown command: solr" in unknown.stdout + unknown.stderr  # why the console command exists

    listed, _ = finish(console(installed, empty))
    for command in ("crawl", "demo", "list", "search", "solr", "status", "web"):
        assert command in listed.split("Commands: ", 1)[1].split("\n", 1)[0].split(", ")
    assert "example" in finish(console(installed, empty, "list"))[0].split()

    port, web_port = free_port(), free_port()
    installed["ports"].append((DevSolr, port))
    started, _ = finish(console(installed, empty, "solr", "start", "--port", str(port)))
    assert f"Solr is up at http://127.0.0.1:{port}/solr/searchcrawl" in started
    status = console(installed, empty, "solr", "status", "--port", str(port))
    assert "Solr is running" in status.communicate(timeout=120)[0] and status.returncode == 0
    web = console(installed, empty, "web", "--port", str(web_port))
    wait_for(lambda: answers(f"http://127.0.0.1:{web_port}/") or web.poll() is not None, what="searchcrawl web")
    assert web.poll() is None, web.communicate()[1][-3000:]
    web.terminate()
    _out, web_log = web.communicate(timeout=60)
    assert "Serving searchcrawl's pages on http://127.0.0.1:" in web_log
    stopped, _ = finish(console(installed, empty, "solr", "stop", "--port", str(port)))
    assert "Solr stopped" in stopped
    assert sorted(path.name for path in empty.iterdir()) == []  # nothing written into the user's folder
