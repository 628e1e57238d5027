"""Backup and restore of an installation's configuration (issue 79): one JSON file, exported and
imported by `scrapy backup` and the administration's backup page alike.

What a backup holds:

* **sources**: every source file of the sources folder (SEARCHCRAWL_SOURCES_DIR), its text as it
  is (comments and key order kept; schedules and per-source notifications are keys of it), and
  the files it names beside it: its seed files and its ``[tls]`` CA bundle and client certificate.
  Never a private key (``[tls] client_key``, or a certificate file that holds one): a backup is no
  place for secrets, and a source names its secrets, never holds them. A file named by an absolute
  path is not copied either; both are listed as left out, for the restore to say so. The packaged
  sources come with the package.
* **relevance**: best bets, boosts and demotions, synonyms and stopwords, each as the relevance
  page's form holds it, so that a restore parses it with the page's own parsers.
* **api_tokens**: each token's SHA-256 (the only thing kept of a token), name, scope and dates:
  the restored installation accepts the same tokens.
* **settings**: the notification settings in effect (SEARCHCRAWL_NOTIFY_*, SEARCHCRAWL_SMTP_*),
  and the names of the notification secrets that were set, never their values. Settings live in
  the environment, not in a file searchcrawl writes: a restore lists those that differ from the
  target's, as lines for its environment file.

A restore goes into an empty installation only (no source file in the sources folder, no
relevance rule, no API token) and is planned first (``plan_restore``: every source checked as the
source editor checks a new one, then validated by the crawl's own loader in a scratch folder,
every rule by the page's parsers, every path checked to stay inside the sources folder, and no file
restored but a source's own and those it names: never a ``.toml.disabled`` nothing checked); nothing
is written unless the plan has no problem, and then the database rows in one transaction and each
file atomically, the source files last. A source the editor refuses (a key that loads code, reads
or writes this server's files or sends secrets; a ``file:`` seed) is a problem naming it and why,
unless the restore is the server administrator's (``scrapy backup import --trust-sources``): the
plan then names it as restored though the editor refuses it. The plan names the secrets each
restored source names (never their values), to be set in the crawl's environment.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from searchcrawl.config.source import DISABLED, SOURCE_NAME, SourceError, SourceFile, load_source
from searchcrawl.rules import ranking_rules
from searchcrawl.rules.ranking_rules import BestBet, Boost, RelevanceError
from searchcrawl.store import Database
from searchcrawl.store.api_tokens import EXPORTED_COLUMNS, ApiTokens
from searchcrawl.store.relevance_rules import LIMITS, RelevanceStore
from searchcrawl.system.paths import write_atomically
from searchcrawl.system.secrets import SECRET_NAME, VARIABLE_NAME
from searchcrawl.system.translations import gettext as _
from searchcrawl.system.translations import ngettext

logger = logging.getLogger(__name__)

FORMAT = "searchcrawl-backup"
VERSION = 1
MAX_BACKUP_BYTES = 16 * 1024 * 1024  # a backup read (an upload too); sources and rules are small
MAX_FILE_BYTES = 4 * 1024 * 1024  # one file a source names (a seed list)
MAX_PATH_CHARS = 255
NOTIFY_SETTING = re.compile(r"SEARCHCRAWL_(?:NOTIFY|SMTP)_[A-Z_]+")
MAX_PROBLEMS = 100  # named in a plan; past them, how many more
# the secrets of notifications: a backup says whether each was set, never its value
NOTIFY_SECRET_NAMES = ("SEARCHCRAWL_SMTP_PASSWORD", "SEARCHCRAWL_NOTIFY_WEBHOOK_URL", "SEARCHCRAWL_NOTIFY_WEBHOOK_SECRET")
TOKEN_HASH = re.compile(r"[0-9a-f]{64}")
# a source's keys that load code or write files: shown in a restore's plan, to be read before it is confirmed
NOTABLE_KEYS = ("spider_class", "url_rewriter", "agent", "log_file", "temp_dir")
PRIVATE_KEY = b"PRIVATE KEY-----"
# Why a source's text may not be restored ("" when it may): the source editor's own check of a new
# source (web/source_editor.py ``guarded_change``), handed in by the caller: this level cannot import it
SourceRefusal = Callable[[str], str]


def notification_setting(name: str) -> bool:
    """A notification setting a backup carries: never a secret (an SMTP password or a webhook URL
    given as a setting by mistake stays out, and none is taken from a backup)."""
    return bool(NOTIFY_SETTING.fullmatch(name)) and name not in NOTIFY_SECRET_NAMES and not SECRET_NAME.search(name)


class BackupError(Exception):
    """A backup that cannot be read, or written where asked; the message says what, in one line."""


# --- export ---------------------------------------------------------------------------------------


def named_files(text: str) -> tuple[list[str], list[str]]:
    """The files a source file's ``text`` names beside it, to copy (seed files, ``[tls]`` CA bundle
    and client certificate) and to leave out (``[tls]`` client key; absolute paths)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return [], []
    named = [name for name in data.get("seed_files", []) if isinstance(name, str)]
    tls: dict[str, Any] = data["tls"] if isinstance(data.get("tls"), dict) else {}
    named += [tls[key] for key in ("ca_bundle", "client_cert") if isinstance(tls.get(key), str)]
    left_out = [tls["client_key"]] if isinstance(tls.get("client_key"), str) else []
    left_out += [name for name in named if PurePosixPath(name).is_absolute() or name.startswith("~")]
    return [name for name in named if name not in left_out], left_out


def source_secrets(text: str) -> list[str]:
    """The secrets a source file's ``text`` names: the value of every key ``secret`` or
    ``..._secret``, at any depth (``[[auth]]``, a login form's ``user_secret``, ``[proxy]``,
    ``[tls] client_key_secret``, an agent's ``password_secret``): each the name of an environment
    variable, never a secret itself (the loader refuses anything else)."""
    try:
        data: Any = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return []
    found: list[str] = []
    tables = [data]
    while tables:
        table = tables.pop()
        items = table.items() if isinstance(table, dict) else enumerate(table)
        for key, value in items:
            if isinstance(value, (dict, list)):
                tables.append(value)
            elif (key == "secret" or str(key).endswith("_secret")) and isinstance(value, str):
                if len(value) <= 200 and VARIABLE_NAME.fullmatch(value) and value not in found:
                    found.append(value)
    return sorted(found)


def export_sources(sources_dir: Path | None) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Each source file of ``sources_dir`` with the files it names (path -> text), and what was
    left out (``source: file: why``)."""
    sources: dict[str, dict[str, str]] = {}
    left_out: list[str] = []
    if sources_dir is None:
        return sources, left_out
    for path in sorted(sources_dir.glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        files = {path.name: text}
        copied, skipped = named_files(text)
        left_out += [f"{path.stem}: {name}: a private key or a file outside the sources folder" for name in skipped]
        for name in copied:
            target = (sources_dir / name).resolve()
            try:
                if not target.is_relative_to(sources_dir.resolve()):
                    left_out.append(f"{path.stem}: {name}: outside the sources folder")
                    continue
                data = target.read_bytes()
            except OSError as exc:
                left_out.append(f"{path.stem}: {name}: cannot be read ({exc.strerror or exc})")
                continue
            if PRIVATE_KEY in data:
                left_out.append(f"{path.stem}: {name}: holds a private key")
                continue
            try:
                files[name] = data.decode("utf-8")
            except UnicodeDecodeError:
                left_out.append(f"{path.stem}: {name}: not UTF-8 text")
        sources[path.stem] = files
    return sources, left_out


def form_of(rule: BestBet | Boost) -> dict[str, str]:
    """A rule as the relevance page's edit form holds it, without the form's action and key."""
    return {key: value for key, value in ranking_rules.edit_form(rule).items() if key not in ("action", "key")}


def iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat() if moment is not None else None


def export_backup(
    database: Database, sources_dir: Path | None, settings: Mapping[str, Any], environ: Mapping[str, str], installation: str
) -> dict[str, Any]:
    """The installation's backup (see the module's docstring) as a JSON-ready dict."""
    sources, left_out = export_sources(sources_dir)
    relevance = RelevanceStore(database)
    tokens = [
        {key: iso(value) if isinstance(value, datetime) else value for key, value in row.items()}
        for row in ApiTokens(database).exported()
    ]
    return {
        "format": FORMAT,
        "version": VERSION,
        "created_at": iso(datetime.now(UTC)),
        "installation": installation,
        "sources": sources,
        "left_out": left_out,
        "relevance": {
            "bets": [form_of(bet) for bet in relevance.bets()],
            "boosts": [form_of(boost) for boost in relevance.boosts()],
            "synonyms": [", ".join(terms) for _id, terms in relevance.synonyms()],
            "stopwords": relevance.stopwords(),
        },
        "api_tokens": tokens,
        "settings": {name: str(settings[name]) for name in sorted(settings) if notification_setting(name)},
        "secrets_set": [name for name in NOTIFY_SECRET_NAMES if environ.get(name) or environ.get(f"{name}_FILE")],
    }


def dumps(backup: Mapping[str, Any]) -> str:
    return json.dumps(backup, indent=1, ensure_ascii=False, sort_keys=False) + "\n"


# --- restore ----------------------------------------------------------------------------------------


@dataclass
class Parsed:
    """What a backup restores, parsed: the sources' files, the rules as objects, the token rows."""

    files: dict[str, dict[str, str]] = field(default_factory=dict)
    bets: list[BestBet] = field(default_factory=list)
    boosts: list[Boost] = field(default_factory=list)
    synonyms: list[tuple[str, ...]] = field(default_factory=list)
    stopwords: list[str] = field(default_factory=list)
    tokens: list[dict[str, Any]] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)
    secrets_set: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


@dataclass
class RestorePlan:
    """What a restore would do, and why it cannot (``problems``: nothing is written then)."""

    parsed: Parsed
    sources: list[str] = field(default_factory=list)  # "name (type; schedule)", in English (the audit log's)
    shown_sources: list[str] = field(default_factory=list)  # the same in the current language (``lines``)
    settings: list[str] = field(default_factory=list)  # NAME=value lines that differ from the target's
    problems: list[str] = field(default_factory=list)
    # the sources the source editor refuses, "name: why": problems, or restored (``trusted``)
    refused: list[str] = field(default_factory=list)
    secrets: dict[str, list[str]] = field(default_factory=dict)  # a secret the sources name: those sources

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        """The plan in words, a line each (the command prints them, the page lists them), in the
        current language (English outside a request: the command's)."""
        parsed = self.parsed
        lines = [_("source %(source)s", source=source) for source in self.shown_sources or self.sources]
        lines += [
            _("file %(file)s", file=source + "/" + name)
            for source, files in sorted(parsed.files.items())
            for name in sorted(files)
        ]
        lines.append(
            _(
                "relevance: %(bets)s best bets, %(boosts)s boosts, %(synonyms)s synonym sets, %(stopwords)s stopwords",
                bets=len(parsed.bets),
                boosts=len(parsed.boosts),
                synonyms=len(parsed.synonyms),
                stopwords=len(parsed.stopwords),
            )
        )
        lines.append(_("API tokens: %(count)s (their hashes)", count=len(parsed.tokens)))
        lines += [_("left out of the backup: %(item)s", item=item) for item in parsed.left_out]
        lines += [_("setting for the environment: %(line)s", line=line) for line in self.settings]
        lines += [_("secret to set in the environment: %(name)s", name=name) for name in parsed.secrets_set]
        lines += [
            _("secret to set in the environment for %(sources)s: %(name)s", sources=", ".join(sources), name=name)
            for name, sources in sorted(self.secrets.items())
        ]
        lines += [_("restored though the source editor refuses it: %(source)s", source=source) for source in self.refused]
        return lines


def read_backup(data: bytes) -> dict[str, Any]:
    """A backup's JSON, checked to be one of ours (format and version) and bounded."""
    if len(data) > MAX_BACKUP_BYTES:
        raise BackupError(_("the file is larger than a backup may be (%(mib)s MiB)", mib=MAX_BACKUP_BYTES // (1024 * 1024)))
    try:
        backup = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise BackupError(_("not a searchcrawl backup: not JSON")) from None
    if not isinstance(backup, dict) or backup.get("format") != FORMAT:
        raise BackupError(_("not a searchcrawl backup: its format is not %(format)s", format=FORMAT))
    if backup.get("version") != VERSION:
        raise BackupError(
            _(
                "a searchcrawl backup of version %(version)s: this searchcrawl reads version %(read)s",
                version=repr(backup.get("version")),
                read=VERSION,
            )
        )
    return backup


def _strings(value: Any, what: str, problems: list[str]) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        problems.append(_("%(what)s: expected a list of texts", what=what))
        return []
    return value


def _forms(value: Any, what: str, problems: list[str]) -> list[dict[str, str]]:
    if not isinstance(value, list) or not all(
        isinstance(item, dict) and all(isinstance(text, str) for text in item.values()) for item in value
    ):
        problems.append(_("%(what)s: expected a list of forms", what=what))
        return []
    return value


def safe_file_name(name: str) -> bool:
    """A relative path that stays inside the folder it is written to: no absolute path, no ``..``,
    no empty or hidden part, no backslash or control character, bounded."""
    if not name or len(name) > MAX_PATH_CHARS or "\\" in name or any(ord(char) < 32 or ord(char) == 127 for char in name):
        return False
    path = PurePosixPath(name)
    if path.is_absolute() or "/".join(path.parts) != name:  # "./a", "a/", "a//b": not their normal form
        return False
    # no hidden part, and none the loader would expand ("~": a home folder)
    return all(part not in ("", ".", "..") and not part.startswith((".", "~")) for part in path.parts)


def parse_backup(backup: Mapping[str, Any], problems: list[str]) -> Parsed:
    """The backup's parts parsed and checked, each problem added to ``problems`` in one line."""
    parsed = Parsed()
    _parse_sources(backup.get("sources", {}), parsed, problems)
    relevance = backup.get("relevance", {})
    _parse_relevance(relevance if isinstance(relevance, dict) else {}, parsed, problems)
    parsed.tokens = _tokens(backup.get("api_tokens", []), problems)
    settings = backup.get("settings", {})
    if not isinstance(settings, dict) or not all(isinstance(value, str) for value in settings.values()):
        problems.append(_("settings: expected a table of texts"))
        settings = {}
    parsed.settings = {
        name: value
        for name, value in settings.items()
        if notification_setting(str(name)) and not any(ord(char) < 32 or ord(char) == 127 for char in value)
    }
    if len(parsed.settings) != len(settings):
        problems.append(
            _(
                "settings: only notification settings (SEARCHCRAWL_NOTIFY_*, SEARCHCRAWL_SMTP_*), no secret, each one line,"
                " are restored"
            )
        )
    secrets_set = _strings(backup.get("secrets_set", []), "secrets_set", problems)
    parsed.secrets_set = [name for name in secrets_set if name in NOTIFY_SECRET_NAMES]
    parsed.left_out = [item[:300] for item in _strings(backup.get("left_out", []), "left_out", problems)]
    return parsed


def _parse_sources(sources: Any, parsed: Parsed, problems: list[str]) -> None:
    if not isinstance(sources, dict):
        problems.append(_("sources: expected a table of sources"))
        return
    written: dict[str, str] = {}  # every file the sources name, by path: one content each
    for name, files in sources.items():
        if not isinstance(name, str) or not SOURCE_NAME.match(name) or len(name) > 200:
            problems.append(_("source %(name)s: not a source name", name=repr(str(name)[:80])))
            continue
        if not isinstance(files, dict) or not all(isinstance(key, str) and isinstance(text, str) for key, text in files.items()):
            problems.append(_("source %(name)s: expected its files as texts", name=name))
            continue
        if f"{name}.toml" not in files:
            problems.append(_("source %(name)s: its file %(file)s is missing", name=name, file=name + ".toml"))
        copied, left_out = named_files(files.get(f"{name}.toml", ""))
        problems.extend(_file_problems(name, files, {f"{name}.toml", *copied}, written))
        for named in [*copied, *left_out]:
            if not safe_file_name(named):  # read by the loader in the dry run, and by every crawl
                problems.append(
                    _(
                        "source %(name)s: it names %(file)s, not a file inside the sources folder",
                        name=name,
                        file=repr(named[:80]),
                    )
                )
        parsed.files[name] = files
    for file_name in written:
        parents = PurePosixPath(file_name).parents
        for parent in list(parents)[:-1]:  # "a" of "a/b": a file and a folder of one name
            if str(parent) in written:
                problems.append(_("%(path)s is a file and a folder of files in the backup", path=parent))


def _file_problems(name: str, files: Mapping[str, str], known: set[str], written: dict[str, str]) -> Iterator[str]:
    """The problems of source ``name``'s ``files`` (path -> text): each must be one ``known`` (its
    own file and those it names, as an export takes them: a file nothing names, a disabled
    source's ``.toml.disabled`` above all, was planted unchecked); ``written`` collects every
    source's, one content a path."""
    for file_name, text in files.items():
        if not safe_file_name(file_name):
            yield _(
                "source %(name)s: %(file)s is not a file name inside the sources folder", name=name, file=repr(file_name[:80])
            )
        elif file_name != f"{name}.toml" and "/" not in file_name and file_name.endswith((".toml", DISABLED)):
            # a .toml file in the sources folder is a source (a .toml.disabled one too, enabled in the
            # editor): only the source's own may be one
            yield _("source %(name)s: %(file)s would be a source file of its own", name=name, file=file_name)
        elif file_name not in known:
            yield _(
                "source %(name)s: %(file)s is not a file the source names (a source's own file and the files it"
                " names are restored, nothing else)",
                name=name,
                file=file_name,
            )
        elif len(text.encode("utf-8")) > MAX_FILE_BYTES:
            yield _("source %(name)s: %(file)s is larger than %(bytes)s bytes", name=name, file=file_name, bytes=MAX_FILE_BYTES)
        elif written.setdefault(file_name, text) != text:
            yield _(
                "source %(name)s: %(file)s differs from the file of that name another source names", name=name, file=file_name
            )


def _parse_relevance(relevance: Mapping[str, Any], parsed: Parsed, problems: list[str]) -> None:
    """The rules, each parsed by the relevance page's own parser of its form."""
    for number, form in enumerate(_forms(relevance.get("bets", []), "relevance bets", problems), start=1):
        try:
            parsed.bets.append(
                ranking_rules.parse_bet(form.get("queries", ""), form.get("urls", ""), form.get("start", ""), form.get("end", ""))
            )
        except RelevanceError as exc:
            problems.append(_("best bet %(number)s: %(problem)s", number=number, problem=exc))
    for number, form in enumerate(_forms(relevance.get("boosts", []), "relevance boosts", problems), start=1):
        try:
            parsed.boosts.append(ranking_rules.parse_boost(form.get("kind", ""), form.get("value", ""), form.get("factor", "")))
        except RelevanceError as exc:
            problems.append(_("boost %(number)s: %(problem)s", number=number, problem=exc))
    for number, text in enumerate(_strings(relevance.get("synonyms", []), "relevance synonyms", problems), start=1):
        try:
            parsed.synonyms.append(ranking_rules.parse_synonyms(text))
        except RelevanceError as exc:
            problems.append(_("synonym set %(number)s: %(problem)s", number=number, problem=exc))
    for word in _strings(relevance.get("stopwords", []), "relevance stopwords", problems):
        try:
            parsed.stopwords.append(ranking_rules.parse_stopword(word))
        except RelevanceError as exc:
            problems.append(_("stopword: %(problem)s", problem=exc))
    counts = {
        "bets": len(parsed.bets),
        "boosts": len(parsed.boosts),
        "synonyms": len(parsed.synonyms),
        "stopwords": len(parsed.stopwords),
    }
    for kind, count in counts.items():
        if count > LIMITS[kind]:
            problems.append(
                _("relevance: %(count)s %(kind)s, at most %(most)s are kept", count=count, kind=kind, most=LIMITS[kind])
            )


def _tokens(value: Any, problems: list[str]) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        problems.append(_("api_tokens: expected a list"))
        return []
    rows: list[dict[str, Any]] = []
    for number, item in enumerate(value, start=1):
        if not isinstance(item, dict) or not TOKEN_HASH.fullmatch(str(item.get("token_hash", ""))):
            problems.append(_("API token %(number)s: no SHA-256 hash", number=number))
            continue
        name = item.get("name")
        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            problems.append(_("API token %(number)s: no name", number=number))
            continue
        row: dict[str, Any] = {"name": name, "token_hash": item["token_hash"], "on_behalf": item.get("on_behalf") is True}
        try:
            for key in ("created_at", "expires_at", "last_used", "revoked_at"):
                moment = item.get(key)
                row[key] = datetime.fromisoformat(moment).astimezone(UTC) if isinstance(moment, str) else None
        except ValueError:
            problems.append(_("API token %(number)s: a date is not an ISO date", number=number))
            continue
        if row["created_at"] is None:
            row["created_at"] = datetime.now(UTC)
        if row["token_hash"] in {seen["token_hash"] for seen in rows}:
            problems.append(_("API token %(number)s: the same hash as another", number=number))
            continue
        rows.append({key: row[key] for key in EXPORTED_COLUMNS})
    return rows


def _occupied(parsed: Parsed, database: Database, sources_dir: Path | None) -> list[str]:
    """Why this installation cannot take the backup: no sources folder for its files, or not
    empty (source files, relevance rules, API tokens; a file of the backup there already)."""
    found: list[str] = []
    if sources_dir is None:
        if parsed.files:
            found.append(_("no sources folder to restore the sources into: set SEARCHCRAWL_SOURCES_DIR"))
    elif sources_dir.is_dir() and any(sources_dir.glob("*.toml")):
        found.append(
            _(
                "the installation is not empty: %(folder)s holds source files (a backup is restored into an empty one)",
                folder=sources_dir,
            )
        )
    if RelevanceStore(database).count():
        found.append(_("the installation is not empty: it has relevance rules"))
    if ApiTokens(database).count():
        found.append(_("the installation is not empty: it has API tokens"))
    if sources_dir is not None:
        for files in parsed.files.values():
            for file_name in files:
                if not safe_file_name(file_name):
                    continue
                target = sources_dir / file_name
                blocked = [parent for parent in target.parents if parent != sources_dir and sources_dir in parent.parents]
                if target.exists() or target.is_symlink() or any(p.exists() and not p.is_dir() for p in blocked):
                    found.append(_("%(file)s is in the sources folder already (a restore replaces no file)", file=file_name))
    return found


def plan_restore(
    backup: Mapping[str, Any],
    database: Database,
    sources_dir: Path | None,
    settings: Mapping[str, Any],
    refusal: SourceRefusal,
    trusted: bool = False,
) -> RestorePlan:
    """What restoring ``backup`` into this installation would do, with every problem that stops it.
    Each source is checked by ``refusal`` (the source editor's check) before its loader runs (it
    imports what a source names); one refused is a problem, or, ``trusted`` (the server's
    administrator), a line of the plan."""
    problems: list[str] = []
    parsed = parse_backup(backup, problems)
    plan = RestorePlan(parsed, problems=problems)
    loaded = _checked_sources(plan, refusal, trusted)
    problems += _occupied(parsed, database, sources_dir)
    try:
        described = _validated_sources(loaded, sources_dir, problems)
        plan.sources, plan.shown_sources = [english for english, _shown in described], [shown for _english, shown in described]
    except OSError as exc:
        problems.append(_("the sources could not be checked: %(reason)s", reason=exc.strerror or exc))
    if len(problems) > MAX_PROBLEMS:
        more = len(problems) - MAX_PROBLEMS
        problems[MAX_PROBLEMS:] = [ngettext("and %(num)s more problem", "and %(num)s more problems", more)]
    plan.settings = [f"{name}={value}" for name, value in sorted(parsed.settings.items()) if str(settings.get(name, "")) != value]
    return plan


def _checked_sources(plan: RestorePlan, refusal: SourceRefusal, trusted: bool) -> dict[str, dict[str, str]]:
    """The sources of ``plan`` to load: each checked by ``refusal`` first (the loader imports what a
    source names); one refused is a problem of the plan, or, ``trusted``, named in it. The secrets
    each names go into the plan."""
    loaded = dict(plan.parsed.files)
    for name, texts in sorted(plan.parsed.files.items()):
        refused = refusal(texts.get(f"{name}.toml", ""))
        if refused:
            logger.debug("Restore: source %s is one the source editor refuses (%s); trusted: %s", name, refused, trusted)
            plan.refused.append(f"{name}: {refused}")
        if refused and not trusted:
            del loaded[name]
            plan.problems.append(
                _("source %(name)s: refused, as the source editor refuses it: %(reason)s", name=name, reason=refused)
            )
        for secret_name in source_secrets(texts.get(f"{name}.toml", "")):
            plan.secrets.setdefault(secret_name, []).append(name)
    return loaded


def _validated_sources(
    files: Mapping[str, Mapping[str, str]], sources_dir: Path | None, problems: list[str]
) -> list[tuple[str, str]]:
    """Each source loaded by the crawl's own loader from a scratch folder holding the backup's
    files (so a seed file or certificate it names is checked too), and the files left out of the
    backup (a private key) where the target's sources folder has them already (put there by hand
    before the restore); its problem in one line. Each is described in English (the audit log's)
    and in the current language (the plan's)."""
    described = []
    with tempfile.TemporaryDirectory(prefix="searchcrawl-restore-") as scratch:
        folder = Path(scratch)
        for name, texts in files.items():
            copied, left_out = named_files(texts.get(f"{name}.toml", ""))
            if not all(safe_file_name(file_name) for file_name in [*texts, *copied, *left_out]):
                continue  # a problem already; never loaded: its loader would read outside the folder
            for file_name, text in texts.items():
                target = folder / file_name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            for file_name in [*copied, *left_out]:
                placed = sources_dir / file_name if sources_dir is not None and safe_file_name(file_name) else None
                if file_name not in texts and placed is not None and placed.is_file():
                    (folder / file_name).parent.mkdir(parents=True, exist_ok=True)
                    (folder / file_name).write_bytes(placed.read_bytes()[:MAX_FILE_BYTES])
        for name in sorted(files):
            path = folder / f"{name}.toml"
            if not path.is_file():  # absent, or a source with a problem already (not written above)
                continue
            try:
                source = load_source(SourceFile(name, f"{name}.toml", path))
            except (SourceError, OSError, ValueError) as exc:
                problems.append(str(exc).replace(str(folder) + os.sep, ""))  # the loader's line, "<name>.toml: ..."
                continue
            interval = source.settings.refresh_interval
            schedule = source.settings.schedule or (f"every {interval}" if interval else "by hand")
            shown = source.settings.schedule or (_("every %(interval)s", interval=interval) if interval else _("by hand"))
            notable = "".join(
                f"; {key} = {getattr(source.settings, key)}" for key in NOTABLE_KEYS if getattr(source.settings, key, None)
            )
            described.append(
                (
                    f"{name} ({source.settings.type}; {schedule})" + notable,
                    _("%(name)s (%(type)s; %(schedule)s)", name=name, type=source.settings.type, schedule=shown) + notable,
                )
            )
    return described


def apply_restore(plan: RestorePlan, database: Database, sources_dir: Path | None) -> None:
    """Carry ``plan`` out: the rules and tokens in one transaction (refused if the installation
    is no longer empty), then each file atomically (written beside, then renamed), the source
    files last, so that no source appears before the files it names."""
    if not plan.ok:
        raise BackupError(_("the restore has problems: %(problems)s", problems="; ".join(plan.problems)))
    parsed = plan.parsed
    named = [(file_name, text) for files in parsed.files.values() for file_name, text in files.items()]
    assert sources_dir is not None or not named  # a problem of the plan otherwise
    written: list[Path] = []
    try:
        with database.engine.begin() as connection:
            if RelevanceStore(database).count(connection) or ApiTokens(database).count(connection):
                raise BackupError(_("the installation is no longer empty"))
            RelevanceStore.restore(connection, parsed.bets, parsed.boosts, parsed.synonyms, parsed.stopwords)
            ApiTokens.restore(connection, parsed.tokens)
            # the files before the rows are committed: a file that cannot be written undoes both
            for file_name, text in sorted(named, key=lambda item: item[0].endswith(".toml") and "/" not in item[0]):
                assert sources_dir is not None
                target = sources_dir / file_name
                if target.exists() or target.is_symlink():
                    raise BackupError(_("%(file)s is in the sources folder already", file=file_name))
                write_atomically(target, text)
                written.append(target)
    except BaseException:
        for path in reversed(written):  # the source files first (written last): no source without its files
            path.unlink(missing_ok=True)
        raise


def plan_text(plan: RestorePlan, applied: bool) -> Iterable[str]:
    """The plan's report: what was (or would be) restored, and the problems that stop it."""
    if plan.problems:
        yield "Nothing was restored: the backup cannot be restored here:"
        yield from (f"  problem: {problem}" for problem in plan.problems)
        if plan.refused:
            yield "A source the source editor refuses is restored by the server's administrator: import with --trust-sources."
        return
    yield "Restored:" if applied else "Dry run: this would be restored (run again with --apply to restore it):"
    yield from (f"  {line}" for line in plan.lines())
