"""`scrapy doctor`: for this installation, what is installed and working (Solr and its schema,
the document table, Tika, each optional capability, the model servers it is configured for) and
the one command that adds what is missing (searchcrawl/ops/installation.py decides; this asks).

Exit code 0 when the main job (a crawl into Solr, recorded in the document table) works, 1 when
it does not; a missing optional capability is reported, not failed.
"""

from __future__ import annotations

import argparse
import os
from importlib import metadata
from urllib.parse import urlsplit

from scrapy.commands import ScrapyCommand
from scrapy.settings import BaseSettings

from searchcrawl.commands import hint_program, open_database
from searchcrawl.ops import installation
from searchcrawl.ops.daily_summary import check_tika, why_silent
from searchcrawl.rules.notify_events import safe_url
from searchcrawl.system import paths

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


class Command(ScrapyCommand):
    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def short_desc(self) -> str:
        return "What this installation has and what works; the command that adds what is missing"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--timeout", type=float, default=5, help="seconds to wait for each server (default 5)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        findings = findings_of(self.settings, opts.timeout)
        print("\n".join(installation.report_lines(findings)))
        self.exitcode = installation.exit_code(findings)
        print("\nThe main job works." if self.exitcode == 0 else "\nThe main job does not work: see FAILING and MISSING above.")


def findings_of(settings: BaseSettings, timeout: float) -> list[installation.Finding]:
    requires = metadata.requires("searchcrawl") or []
    solr_url = paths.solr_url(settings)
    dev = urlsplit(solr_url.split(",")[0]).hostname in LOCAL_HOSTS
    chromium = settings.get("SEARCHCRAWL_CHROMIUM_PATH") or ""
    return [
        installation.packages_finding(
            "Python packages", installation.unmet_requirements(requires, None), "runtime", essential=True
        ),
        installation.programs_finding(
            "Java and Maven (the dev Solr, Tika)", installation.which("java", "mvn"), "runtime", essential=dev
        ),
        _solr(solr_url, paths.solr_auth(settings), dev, timeout),
        _database(settings),
        _tika(settings.get("SEARCHCRAWL_TIKA_URL") or "", timeout),
        installation.programs_finding("OCR (Tesseract, through Tika)", installation.which("tesseract"), "ocr"),
        installation.programs_finding("Legacy .doc and .ppt", installation.which("antiword", "catppt", "soffice"), "documents"),
        installation.programs_finding(
            "JavaScript rendering (Chromium)", {chromium: chromium if os.access(chromium, os.X_OK) else None}, "render"
        ),
        _embeddings(requires, settings.get("SEARCHCRAWL_EMBEDDINGS") or ""),
        _answers(settings.get("SEARCHCRAWL_ANSWERS_URL") or "", timeout),
        installation.packages_finding(
            "Kerberos (sign-in, SMB's auth = kerberos)",
            installation.unimportable(["gssapi"])  # Debian's python3-gssapi: no wheel, no metadata in .venv
            + [name for name, path in installation.which("kinit").items() if not path],
            "kerberos",
        ),
    ]


def _solr(url: str, auth: tuple[str, str] | None, dev: bool, timeout: float) -> installation.Finding:
    failure, schema = installation.solr_schema(url, auth, timeout)
    return installation.solr_finding(url, failure, schema, installation.packaged_schema(), dev, hint_program())


def _database(settings: BaseSettings) -> installation.Finding:
    shown = safe_url(paths.db_url(settings))  # no user name or password, no query string
    try:
        with open_database(settings):
            pass
    except Exception as exc:  # any failure to open it is the finding: its type and message
        return installation.database_finding(shown, f"{type(exc).__name__}: {exc}")
    return installation.database_finding(shown, None)


def _tika(url: str, timeout: float) -> installation.Finding:
    failure = check_tika(url, timeout) if url else None
    return installation.service_finding("Tika", "SEARCHCRAWL_TIKA_URL", url, failure, "tika", f"{hint_program()} tika start")


def _embeddings(requires: list[str], setting: str) -> installation.Finding:
    """Which model serves semantic search, or why none does (not installed, failing, no floor)."""
    from searchcrawl.semantic.embedders import NO_FLOOR, ModelSpec, checked, embedder_from, model_floor, not_installed

    failure, no_floor, serving, missing = None, None, "", None
    try:
        spec = ModelSpec.parse(setting)
        missing = not_installed(spec)
    except Exception as exc:  # a setting refused at start: the finding says why
        spec, failure = None, f"{type(exc).__name__}: {exc}"
    unmet = [] if missing is not None else installation.unmet_requirements(requires, "semantic")
    if spec is not None and missing is None and not unmet:
        try:
            embedder = embedder_from(setting)
            if embedder is not None:
                checked(embedder)
                floor = model_floor(spec.floor, embedder.model_id)
                if floor is None:
                    no_floor = f"{embedder.model_id} {NO_FLOOR}"
                serving = f"{embedder.model_id}, {embedder.dimension} dimensions, similarity floor {floor}"
        except Exception as exc:  # the model's own failure, whatever it is, is the finding
            failure = f"{type(exc).__name__}: {exc}"
    return installation.embeddings_finding(setting, unmet, failure, no_floor, serving, missing)


def _answers(url: str, timeout: float) -> installation.Finding:
    failure = why_silent(f"{url.rstrip('/')}/models", timeout) if url else None
    return installation.service_finding("Answers' model server", "SEARCHCRAWL_ANSWERS_URL", url, failure, "answers")
