"""`scrapy doctor`: what this installation has, what works, and the one command that adds the rest.

Each check is a plain function of what it was told (an answer, a path, a version lookup), so the
decisions are tested without a server; the command (commands/doctor.py) asks the machine and
prints the findings. The main job (a crawl into Solr, its document table) decides the exit code;
an optional capability that is missing or failing is reported with its command and exits 0.
The commands named are deploy/bootstrap.sh's profiles: one mechanism installs, one names it.
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from searchcrawl.index.solr_client import IndexingError, SolrIndex
from searchcrawl.system.resources import package_dir

OK, OFF, MISSING, FAILING = "ok", "off", "missing", "failing"
BOOTSTRAP = "bash deploy/bootstrap.sh"


@dataclass(frozen=True)
class Finding:
    """One thing checked: its state (ok, off: installed but not configured, missing, failing),
    what was found, and the one command that adds or repairs it."""

    name: str
    state: str
    detail: str
    fix: str = ""
    essential: bool = False  # the main job needs it: the exit code follows it


def exit_code(findings: Iterable[Finding]) -> int:
    """0 when everything the main job needs works; 1 otherwise."""
    return 1 if any(finding.essential and finding.state != OK for finding in findings) else 0


def report_lines(findings: Iterable[Finding]) -> list[str]:
    """One line a finding, and under it the command that adds or repairs it."""
    lines = []
    for finding in findings:
        mark = {OK: "ok", OFF: "off"}.get(finding.state, "MISSING" if finding.state == MISSING else "FAILING")
        lines.append(f"[{mark:>7}] {finding.name}: {finding.detail}")
        if finding.fix and finding.state != OK:
            lines.append(f"          -> {finding.fix}")
    return lines


# --- Python packages -------------------------------------------------------------------------------


def unmet_requirements(
    requires: Iterable[str], extra: str | None, version_of: Callable[[str], str] = metadata.version
) -> list[str]:
    """The requirements of searchcrawl (``extra`` None) or of one of its extras that are not
    installed at a version they allow, as written in its metadata."""
    unmet = []
    for text in requires:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        marker = requirement.marker
        if marker is None:
            wanted = extra is None
        else:  # an extra's requirement holds for that extra alone (``extra == "kerberos"``)
            in_base = marker.evaluate({"extra": ""})
            wanted = in_base if extra is None else marker.evaluate({"extra": extra}) and not in_base
        if not wanted:
            continue
        try:
            installed = version_of(requirement.name)
        except metadata.PackageNotFoundError:
            unmet.append(requirement.name)
            continue
        if requirement.specifier and not requirement.specifier.contains(installed, prereleases=True):
            unmet.append(f"{requirement.name} {installed} (needs {requirement.specifier})")
    return unmet


def unimportable(modules: Iterable[str], importer: Callable[[str], object] = importlib.import_module) -> list[str]:
    """The ``modules`` that do not import here. For a package Debian provides (python3-gssapi,
    linked into .venv by searchcrawl/ops/debian_modules.py), which has no metadata for
    ``unmet_requirements`` to read; and an extension module built for another Python is there,
    yet fails: tried, not looked up."""
    failed = []
    for name in modules:
        try:
            importer(name)
        except ImportError as exc:
            missing = isinstance(exc, ModuleNotFoundError) and exc.name == name
            failed.append(name if missing else f"{name} ({type(exc).__name__}: {exc})")
    return failed


def packages_finding(name: str, unmet: list[str], profile: str, essential: bool = False) -> Finding:
    if unmet:
        return Finding(name, MISSING, "not installed: " + ", ".join(unmet), f"{BOOTSTRAP} {profile}", essential)
    return Finding(name, OK, "installed", essential=essential)


def programs_finding(name: str, found: dict[str, str | None], profile: str, essential: bool = False) -> Finding:
    """Debian's programs a capability runs (``found``: program -> its path, None when missing)."""
    missing = [program for program, path in found.items() if path is None]
    if missing:
        return Finding(name, MISSING, "not installed: " + ", ".join(missing), f"{BOOTSTRAP} {profile}", essential)
    return Finding(name, OK, ", ".join(str(path) for path in found.values()), essential=essential)


def which(*programs: str) -> dict[str, str | None]:
    return {program: shutil.which(program) for program in programs}


# --- Solr ------------------------------------------------------------------------------------------

SCHEMA_NAME = re.compile(r'<schema\s+name="searchcrawl-(\d+)"')


def schema_number(name: str) -> int | None:
    """``searchcrawl-6`` -> 6; None for a schema that is not searchcrawl's."""
    match = re.fullmatch(r"searchcrawl-(\d+)", name.strip())
    return int(match.group(1)) if match else None


def packaged_schema() -> str:
    """The schema name of the configset this release ships (solr/configset/conf/schema.xml)."""
    with package_dir("searchcrawl.index.configset", "conf") as conf:
        match = SCHEMA_NAME.search((Path(conf) / "schema.xml").read_text(encoding="utf-8"))
    assert match is not None, "the packaged schema.xml names no searchcrawl-<n> schema"
    return f"searchcrawl-{match.group(1)}"


def solr_schema(url: str, auth: tuple[str, str] | None, timeout: float) -> tuple[str | None, str | None]:
    """(why Solr at ``url`` did not answer, None; or None, the schema name it reported)."""
    try:
        answer = SolrIndex(url, timeout=timeout, auth=auth).request("get", "schema/name?wt=json", "did not name its schema")
        return None, str(json.loads(answer).get("name", ""))
    except (IndexingError, ValueError) as exc:
        return str(exc), None


def solr_finding(
    url: str, failure: str | None, live_schema: str | None, packaged: str, dev: bool, program: str = "scrapy"
) -> Finding:
    """Solr at ``url``: ``failure`` why it did not answer (None: it did), ``live_schema`` the schema
    name it reported. An older schema than the packaged one lacks fields this release writes."""
    start = f"{program} solr start" if dev else "start the Solr that SOLR_URL names, or correct SOLR_URL"
    if failure is not None:
        return Finding("Solr", FAILING, f"{url} does not answer: {failure}", start, essential=True)
    live, ours = schema_number(live_schema or ""), schema_number(packaged)
    upload = (
        f"{program} solr stop && {program} solr start (the dev Solr takes the packaged configset)"
        if dev
        else f"upload this release's configset: {program} solr collection NAME (docs/indexing.md)"
    )
    if live is None:
        return Finding("Solr", FAILING, f"{url} answers, but its schema {live_schema!r} is not searchcrawl's", upload, True)
    if ours is not None and live < ours:
        return Finding("Solr", FAILING, f"{url} answers, schema {live_schema}, older than {packaged}", upload, True)
    return Finding("Solr", OK, f"{url} answers, schema {live_schema} (this release: {packaged})", essential=True)


# --- services the installation is configured for ---------------------------------------------------


def service_finding(name: str, setting: str, url: str, failure: str | None, profile: str, start: str = "") -> Finding:
    """A server named by ``setting`` (Tika, a model server): off when not set, else whether it
    answers. Optional: a crawl goes on without it (and says so per document)."""
    if not url:
        how = f"{BOOTSTRAP} {profile}" + (f", {start}" if start else "") + f", then set {setting}"
        return Finding(name, OFF, f"not configured ({setting} is empty)", how)
    if failure is not None:
        return Finding(name, FAILING, f"{url} does not answer: {failure}", start or f"start the server {setting} names")
    return Finding(name, OK, f"{url} answers")


def embeddings_finding(
    setting: str,
    unmet: list[str],
    failure: str | None,
    no_floor: str | None = None,
    serving: str = "",
    missing: str | None = None,
) -> Finding:
    """Semantic search: the extra's packages, then the model SEARCHCRAWL_EMBEDDINGS names (``missing``:
    why a named model cannot run here, its runtime or jar not installed), asked for one vector
    (``failure``: why it gave none), then its similarity floor (``no_floor``: why a model that
    embeds still finds nothing by meaning, issue 91); ``serving``: the model that then serves
    (its id and floor), named."""
    if missing is not None:
        return Finding("Semantic search", OFF, missing, "bash deploy/bootstrap.sh semantic")
    if unmet:
        return packages_finding("Semantic search", unmet, "semantic")
    if not setting:
        return Finding(
            "Semantic search", OFF, "installed; SEARCHCRAWL_EMBEDDINGS is empty", "export SEARCHCRAWL_EMBEDDINGS=bge-small"
        )
    if failure is not None:
        return Finding(
            "Semantic search", FAILING, f"{setting}: {failure}", "docs/semantic-search.md#the-models-three-ways-one-setting"
        )
    if no_floor is not None:
        return Finding(
            "Semantic search",
            OFF,
            f"{setting} embeds, but {no_floor}",
            "give SEARCHCRAWL_EMBEDDINGS a ?floor= (docs/semantic-search.md#the-similarity-floor)",
        )
    return Finding("Semantic search", OK, f"{setting} serves, searches are hybrid" + (f": {serving}" if serving else ""))


def database_finding(url: str, failure: str | None) -> Finding:
    """The document table's database (its URL shown without a password)."""
    if failure is not None:
        return Finding("Document table", FAILING, f"{url}: {failure}", "check SEARCHCRAWL_DB_URL (docs/operations.md)", True)
    return Finding("Document table", OK, url, essential=True)
