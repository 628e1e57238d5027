"""`scrapy doctor`'s decisions (searchcrawl/ops/installation.py), from what it was told: no server."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest

from searchcrawl.ops import installation
from searchcrawl.ops.installation import FAILING, MISSING, OFF, OK, Finding

REQUIRES = [
    "scrapy==2.19.0",
    "ldap3<3,>=2.9",
    "xllamacpp<2026.11,>=2026.10.11549; extra == 'model'",
    "numpy<3,>=1.26; extra == 'semantic'",
    'wordllama<0.5,>=0.4; extra == "semantic"',
    "tomli>=2; python_version < '3.0'",  # a marker of the environment: not this Python's
]


def versions(**installed: str):  # noqa: ANN201
    def version_of(name: str) -> str:
        if name not in installed:
            raise metadata.PackageNotFoundError(name)
        return installed[name]

    return version_of


def test_the_runtime_requirements_leave_out_the_extras_and_other_environments() -> None:
    unmet = installation.unmet_requirements(REQUIRES, None, versions(scrapy="2.19.0"))
    assert unmet == ["ldap3"]


def test_an_extra_is_met_by_its_own_requirements_alone() -> None:
    assert installation.unmet_requirements(REQUIRES, "semantic", versions()) == ["numpy", "wordllama"]
    assert installation.unmet_requirements(REQUIRES, "semantic", versions(numpy="2.1.0", wordllama="0.4.2")) == []
    assert installation.unmet_requirements(REQUIRES, "model", versions(numpy="2.1.0")) == ["xllamacpp"]


def test_a_version_outside_the_pin_is_unmet() -> None:
    unmet = installation.unmet_requirements(REQUIRES, None, versions(scrapy="2.18.1", ldap3="2.9.1"))
    assert unmet == ["scrapy 2.18.1 (needs ==2.19.0)"]


def test_this_installations_own_requirements_read_from_its_metadata() -> None:
    requires = metadata.requires("searchcrawl") or []
    assert any(text.startswith("scrapy") for text in requires)
    assert installation.unmet_requirements(requires, None) == []  # the tests run where the runtime is installed


def test_a_module_that_does_not_import_is_named_with_why_unless_it_is_absent() -> None:
    """Debian's python3-gssapi has no metadata in .venv: the doctor imports it. An extension module
    built for another Python is there and fails: its error is named."""

    def importer(name: str) -> object:
        if name == "absent":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        if name == "gssapi":
            raise ImportError("gssapi/raw/creds.cpython-311-x86_64-linux-gnu.so: undefined symbol")
        if name == "needs_absent":
            raise ModuleNotFoundError("No module named 'decorator'", name="decorator")
        return object()

    unmet = installation.unimportable(["present", "absent", "gssapi", "needs_absent"], importer)
    assert unmet == [
        "absent",
        "gssapi (ImportError: gssapi/raw/creds.cpython-311-x86_64-linux-gnu.so: undefined symbol)",
        "needs_absent (ModuleNotFoundError: No module named 'decorator')",
    ]
    assert installation.unimportable(["json"]) == [] and installation.unimportable(["no_such_module_here"]) == [
        "no_such_module_here"
    ]


def test_missing_packages_name_the_profile_that_adds_them() -> None:
    finding = installation.packages_finding("Kerberos", ["gssapi"], "kerberos")
    assert finding.state == MISSING and finding.fix == "bash deploy/bootstrap.sh kerberos"
    assert installation.packages_finding("Kerberos", [], "kerberos").state == OK


def test_a_missing_program_is_named() -> None:
    finding = installation.programs_finding("OCR", {"tesseract": None}, "ocr")
    assert finding.state == MISSING and "tesseract" in finding.detail and finding.fix == "bash deploy/bootstrap.sh ocr"
    assert installation.programs_finding("OCR", {"tesseract": "/usr/bin/tesseract"}, "ocr").state == OK


def test_the_schema_number() -> None:
    assert installation.schema_number("searchcrawl-6") == 6
    assert installation.schema_number("example-data-driven-schema") is None


def test_the_packaged_schema_is_the_configsets() -> None:
    schema = Path(__file__).resolve().parents[2] / "solr" / "configset" / "conf" / "schema.xml"
    assert re.search(r'<schema name="(searchcrawl-\d+)"', schema.read_text(encoding="utf-8"))[1] == installation.packaged_schema()  # type: ignore[index]


@pytest.mark.parametrize(
    ("failure", "live", "state", "fix"),
    [
        (None, "searchcrawl-6", OK, ""),
        (None, "searchcrawl-7", OK, ""),  # a newer configset than this release: it has every field we write
        (None, "searchcrawl-5", FAILING, "searchcrawl solr stop && searchcrawl solr start"),
        (None, "default-config", FAILING, "searchcrawl solr stop"),
        ("cannot connect (Connection refused)", None, FAILING, "searchcrawl solr start"),
    ],
)
def test_solr_answers_with_this_releases_schema_or_newer(failure: str | None, live: str | None, state: str, fix: str) -> None:
    finding = installation.solr_finding(
        "http://127.0.0.1:8983/solr/searchcrawl", failure, live, "searchcrawl-6", True, "searchcrawl"
    )
    assert finding.state == state and finding.essential
    assert finding.fix.startswith(fix)


def test_a_production_solr_is_told_to_take_the_configset() -> None:
    finding = installation.solr_finding("https://solr.example.org/solr/c", None, "searchcrawl-4", "searchcrawl-6", False)
    assert "scrapy solr collection NAME" in finding.fix
    assert (
        "correct SOLR_URL"
        in installation.solr_finding("https://solr.example.org/solr/c", "timeout", None, "searchcrawl-6", False).fix
    )


def test_a_service_is_off_unconfigured_and_failing_when_silent() -> None:
    off = installation.service_finding("Tika", "SEARCHCRAWL_TIKA_URL", "", None, "tika", "scrapy tika start")
    assert off.state == OFF and off.fix == "bash deploy/bootstrap.sh tika, scrapy tika start, then set SEARCHCRAWL_TIKA_URL"
    failing = installation.service_finding(
        "Tika", "SEARCHCRAWL_TIKA_URL", "http://127.0.0.1:9998/", "no answer", "tika", "scrapy tika start"
    )
    assert failing.state == FAILING and not failing.essential
    assert installation.service_finding("Tika", "SEARCHCRAWL_TIKA_URL", "http://127.0.0.1:9998/", None, "tika").state == OK


def test_semantic_search_installed_configured_and_embedding() -> None:
    assert installation.embeddings_finding("", ["wordllama"], None).fix == "bash deploy/bootstrap.sh semantic"
    assert installation.embeddings_finding("", [], None).state == OFF
    failing = installation.embeddings_finding(
        "openai:http://127.0.0.1:1/v1?model=m&dimension=384", [], "EmbeddingFailed: refused"
    )
    assert failing.state == FAILING and "refused" in failing.detail
    assert installation.embeddings_finding("wordllama", [], None).state == OK
    # issue 100: doctor names the model that serves, and says the default model is not installed
    serving = installation.embeddings_finding("bge-small", [], None, serving="onnx/bge-small-en-v1.5-q/42d39a448051")
    assert serving.state == OK and "hybrid" in serving.detail and "onnx/bge-small-en-v1.5-q/42d39a448051" in serving.detail
    missing = installation.embeddings_finding("bge-small", ["onnxruntime"], None, missing="bge-small ... not installed")
    assert missing.state == OFF and missing.detail == "bge-small ... not installed"
    assert missing.fix == "bash deploy/bootstrap.sh semantic"
    # issue 91 review: a model with no similarity floor embeds but finds nothing by meaning
    unfloored = installation.embeddings_finding("openai:http://127.0.0.1:1/v1?model=m", [], None, "has no similarity floor")
    assert unfloored.state == OFF and "no similarity floor" in unfloored.detail and "?floor=" in unfloored.fix


def test_the_exit_code_follows_the_main_job_alone() -> None:
    optional_missing = Finding("OCR", MISSING, "tesseract", "bash deploy/bootstrap.sh ocr")
    solr_ok = Finding("Solr", OK, "answers", essential=True)
    assert installation.exit_code([solr_ok, optional_missing]) == 0
    assert (
        installation.exit_code([Finding("Solr", FAILING, "silent", "scrapy solr start", essential=True), optional_missing]) == 1
    )
    assert installation.exit_code([installation.database_finding("sqlite:///x", "OperationalError: unable to open")]) == 1


def test_the_report_names_the_command_under_what_is_missing() -> None:
    lines = installation.report_lines(
        [Finding("OCR", MISSING, "not installed: tesseract", "bash deploy/bootstrap.sh ocr"), Finding("Solr", OK, "up")]
    )
    assert lines == ["[MISSING] OCR: not installed: tesseract", "          -> bash deploy/bootstrap.sh ocr", "[     ok] Solr: up"]
