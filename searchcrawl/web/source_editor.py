"""Source files edited in the browser (issue 79), without HTTP: the sources folder's files listed,
checked, compared, saved, copied, disabled and deleted for the administration's source editor
(views/source_editor_views.py).

The TOML files stay the truth: the editor edits a file's text as it is, so its comments and key
order stay as written, and nothing but the administrator's own text is ever written into it (no
value is spliced into TOML, so there is nothing to inject). A text is checked by the crawl's own
loader (config/source.py ``load_source``), from a scratch file beside the saved one, so the files
it names (seed files, certificates) are found as the crawl finds them, and its one-line error is
the crawl's. Before a save the page shows the change (a unified diff) and what it does to the
index: a change of a setting that documents depend on forces a full recrawl (the reasons
config/source_derived.py's fingerprint gives), and a narrower scope takes the documents it now keeps
out from the index at the next crawl (the source's indexed URLs run through the new rule chain,
config/source_derived.py ``rule_chain``, as the maintenance crawl will). A save writes the file
atomically (a file beside it, then renamed) after copying the version it replaces into the
folder's ``.history``; it is refused when the file changed since the editor read it. A disabled
source is its file renamed ``<name>.toml.disabled`` (listed, not loaded, not scheduled; its
documents stay; enabled or copied only if the editor takes its text as a new source's); a
deleted one is moved to ``.history`` (its documents stay in the index until removed). Secrets
never appear: a source file names them, and the loader refuses a password in a URL.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import os
import secrets as random_names
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from searchcrawl.config.source import (
    DISABLED,
    SOURCE_NAME,
    Source,
    SourceError,
    SourceFile,
    SourceTextError,
    load_source,
    source_data,
)
from searchcrawl.config.source_derived import fingerprint, rule_chain
from searchcrawl.ops.launchers import run_command
from searchcrawl.rules.addresses import ip_of, is_local_or_link_local, is_localhost_name
from searchcrawl.rules.boundary import normalize_host
from searchcrawl.rules.maintenance import recrawl_reasons
from searchcrawl.store import Database
from searchcrawl.store.plans import plan_batch
from searchcrawl.store.runs import Runs
from searchcrawl.system.atomic_files import write_atomically
from searchcrawl.system.host_addresses import addresses_of
from searchcrawl.system.translations import gettext as _
from searchcrawl.system.translations import ngettext, number

logger = logging.getLogger(__name__)

HISTORY = ".history"
MAX_SOURCE_BYTES = 1024 * 1024  # a source file's text as the editor takes it
MAX_CHECKED_URLS = 200_000  # indexed URLs run through a new scope before a save (then: "at least")
SAMPLES = 5  # URLs named of those a change would take out
MAX_URL_LENGTH = 2083  # SEARCHCRAWL_MAX_URL_LENGTH's default: the chain's own bound
SAVING = threading.Lock()  # saves, copies, moves of source files: one at a time in this process
TEST_PAGES = 5  # pages a test crawl fetches
TEST_TIMEOUT = 180  # seconds a test crawl and its report may take
TEST_CRAWLS_AT_ONCE = 2  # test crawls running at once in this server (each a crawl, then its report)
TEST_CRAWLS_WAITING = 8  # test crawls waiting for one of those (each a thread); past them, one is refused
TEST_RESULT_SECONDS = 900  # a finished test crawl's result waits this long to be shown
TEMPLATE = """# A web site: where the crawl starts, and what it follows (docs/sources.md has every key)
seeds = ["https://intranet.example.com/"]
max_depth = 10
"""


# Keys the browser does not change (issue 79's hostile review): they load code into the crawl or this
# server (spider_class, url_rewriter, agent), write files where they say (log_file, temp_dir), start
# processes (processes, shared), read this server's files or repositories (type and the agents'
# tables: [files] roots, [database] URLs, ...), or send secrets to the hosts they name ([[auth]],
# [proxy], [tls]). An administrator on the pages is not the server's administrator: these stay as the
# saved file has them, and are changed in the file on the server.
GUARDED_KEYS = (
    "spider_class",
    "url_rewriter",
    "agent",
    "log_file",
    "temp_dir",
    "processes",
    "shared",
    "type",
    "files",
    "smb",
    "database",
    "mail",
    "imap",
    "webdav",
    "cmis",
    "dokuwiki",
    "redmine",
    "git",
    "agent_options",
    "auth",
    "proxy",
    "tls",
    "fetch_origins",
    "seed_files",
)


class SourceFileError(Exception):
    """A source file that cannot be read, saved, copied or moved as asked: one line."""


def file_version(text: str) -> str:
    """The version of a file's text the editor read (a save is refused if the file has another)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def valid_name(name: str) -> bool:
    return len(name) <= 200 and bool(SOURCE_NAME.fullmatch(name)) and not name.endswith(".disabled")


def guarded_change(saved: str, edited: str, local_seeds: bool = False) -> str:
    """Why ``edited`` may not be saved from the browser ("" when it may): a GUARDED_KEYS value
    added, removed or changed from the ``saved`` text (""), or a seed that the saved text does
    not have of this server's files (``file:``), or, unless ``local_seeds``
    (SEARCHCRAWL_WEB_LOCAL_SEEDS), a host that a key admitting hosts newly names
    (``admitted_hosts``) on a loopback or link-local address (``local_host``). Both texts are read
    as the loader reads a source (``source_data``): an edited text it cannot read is refused here,
    never passed on (a lone-CR text once read as no TOML here and as a source by the loader), and a
    saved text it cannot read counts as empty, so that every guarded key the edit has is a change."""
    try:
        new = source_data(edited)
    except SourceTextError as exc:
        return str(exc)
    try:
        old = source_data(saved) if saved else {}
    except SourceTextError:
        old = {}
    changed = [key for key in GUARDED_KEYS if old.get(key) != new.get(key)]
    if changed:
        return _(
            "%(keys)s: changed in the browser; these keys load code, write or read this server's files,"
            " or send secrets, and are changed in the source file on the server",
            keys=", ".join(changed),
        )
    old_seeds = {str(seed) for seed in _listed(old, "seeds")}
    local = [
        str(seed)
        for seed in _listed(new, "seeds")
        if str(seed) not in old_seeds and str(seed).strip().lower().startswith("file:")
    ]
    if local:
        return _(
            "seeds: %(seed)s reads this server's files: add file: seeds in the source file on the server",
            seed=repr(local[0][:100]),
        )
    before = set(admitted_hosts(old))
    for key, host, value in admitted_hosts(new) if not local_seeds else []:
        address = local_host(host) if (key, host, value) not in before else None
        if address is not None:
            return _(
                "%(key)s: %(value)s is on a loopback or link-local address (%(address)s), where this server's own services"
                " and a cloud's metadata answer: add it in the source file on the server, or allow such hosts with"
                " SEARCHCRAWL_WEB_LOCAL_SEEDS",
                key=key,
                value=repr(value[:100]),
                address=address,
            )
    return ""


def _listed(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    return value if isinstance(value, list) else []


def _host_of(url: str) -> str:
    try:
        return urlsplit(url.strip()).hostname or ""
    except ValueError:
        return ""  # not a URL: the loader's to refuse


def admitted_hosts(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(key, host, what the key says) for every host a source file's keys admit: its seeds' and
    sitemaps' hosts, its ``[domains] include`` entries, and each ``[ports]`` rule's host (``*``:
    every host the others name), the rule's text included, so that a rule changed is a new one."""
    found = [(key, _host_of(str(url)), str(url)) for key in ("seeds", "sitemaps") for url in _listed(data, key)]
    domains = data.get("domains")
    found += [("domains", str(entry), str(entry)) for entry in _listed(domains if isinstance(domains, dict) else {}, "include")]
    ports = data.get("ports")
    named = sorted({host for _key, host, _value in found if host})
    for host, rule in (ports if isinstance(ports, dict) else {}).items():
        for each in named if str(host).strip() == "*" else [str(host)]:
            found.append(("ports", each, f"{each} {rule}"))
    return found


def local_host(host: str) -> str | None:
    """The loopback or link-local address ``host`` is, or resolves to now (``localhost`` and its
    subdomains without asking), or None: a name that does not resolve is the crawl's address
    guard's to refuse. The host is taken as the crawl takes it (``normalize_host``: one trailing dot
    dropped, so ``169.254.169.254.`` is the literal it spells, issue 99)."""
    host = normalize_host(host)
    if is_localhost_name(host):
        return host
    addresses = [host] if ip_of(host) is not None else addresses_of([host]).get(host, [])
    return next((address for address in addresses if is_local_or_link_local(address)), None)


@dataclass(frozen=True)
class Checked:
    """A text checked by the crawl's loader: the source it makes, or the loader's one-line error."""

    source: Source | None
    error: str = ""


@dataclass
class Changes:
    """What saving a text would do: the diff, and what it does to the index."""

    diff: list[str]
    recrawl: list[str] = field(default_factory=list)  # why every document would be fetched again
    leaving: int = 0  # indexed documents the new scope keeps out (taken out at the next crawl)
    leaving_samples: list[str] = field(default_factory=list)
    checked_all: bool = True  # False: more indexed URLs than MAX_CHECKED_URLS (``leaving`` at least)
    agent: bool = False  # a source with an agent: its listing decides what leaves

    @property
    def warnings(self) -> list[str]:
        """What the change does to the index, in the current language (the recrawl's reasons are the
        crawl's own words, rules/maintenance.py)."""
        said = [_("Every document will be fetched and indexed again: %(reason)s.", reason=reason) for reason in self.recrawl]
        if self.leaving and self.checked_all:
            said.append(
                ngettext(
                    "%(count)s indexed document is outside the new rules: the next crawl takes it out of the index.",
                    "%(count)s indexed documents are outside the new rules: the next crawl takes them out of the index.",
                    self.leaving,
                    count=number(self.leaving),
                )
            )
        elif self.leaving:
            said.append(
                ngettext(
                    "At least %(count)s indexed document is outside the new rules: the next crawl takes it out of the index.",
                    "At least %(count)s indexed documents are outside the new rules: the next crawl takes them out of the index.",
                    self.leaving,
                    count=number(self.leaving),
                )
            )
        return said


class SourceFolder:
    """The sources folder (SEARCHCRAWL_SOURCES_DIR) as the editor changes it; ``local_seeds``
    (SEARCHCRAWL_WEB_LOCAL_SEEDS) as the editor's check of a text takes it."""

    def __init__(self, path: Path, local_seeds: bool = False) -> None:
        self.path = path
        self.local_seeds = local_seeds

    def file(self, name: str) -> Path:
        if not valid_name(name):
            raise SourceFileError(_("%(name)s is not a source name (letters, digits, '_', '-', '.')", name=repr(name[:80])))
        return self.path / f"{name}.toml"

    def disabled_file(self, name: str) -> Path:
        return self.file(name).with_name(f"{name}{DISABLED}")

    def listing(self) -> list[tuple[str, bool]]:
        """Each source file's name and whether it is enabled, by name."""
        if not self.path.is_dir():
            return []
        found = {path.name.removesuffix(".toml"): True for path in self.path.glob("*.toml") if valid_name(path.stem)}
        for path in self.path.glob(f"*{DISABLED}"):
            name = path.name.removesuffix(DISABLED)
            if valid_name(name) and name not in found:
                found[name] = False
        return sorted(found.items())

    def read(self, name: str) -> str:
        """The text of source ``name``'s file, enabled or disabled."""
        for path in (self.file(name), self.disabled_file(name)):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                if len(data) > MAX_SOURCE_BYTES:
                    raise SourceFileError(
                        _(
                            "%(file)s is larger than the editor takes (%(bytes)s bytes)",
                            file=path.name,
                            bytes=number(MAX_SOURCE_BYTES),
                        )
                    )
                return data.decode("utf-8", "replace")
        raise SourceFileError(_("no source file %(file)s in %(folder)s", file=name + ".toml", folder=self.path))

    def exists(self, name: str) -> bool:
        return self.file(name).exists() or self.disabled_file(name).exists()

    def check(self, name: str, text: str) -> Checked:
        """``text`` loaded as source ``name``'s file by the crawl's own loader, from a scratch
        file beside the saved one (its seed files and certificates found where the crawl finds
        them); the loader's one-line error names the key."""
        if len(text.encode("utf-8")) > MAX_SOURCE_BYTES:
            return Checked(None, _("%(file)s: larger than %(bytes)s bytes", file=name + ".toml", bytes=number(MAX_SOURCE_BYTES)))
        self.path.mkdir(parents=True, exist_ok=True)
        scratch = self.path / f".{name}.{random_names.token_hex(8)}.checking"  # never a *.toml: no source
        try:
            scratch.write_bytes(text.encode("utf-8"))  # the bytes saved are the bytes checked
            return Checked(load_source(SourceFile(name, f"{name}.toml", scratch)))
        except SourceError as exc:
            return Checked(None, str(exc))
        finally:
            scratch.unlink(missing_ok=True)

    def save(self, name: str, text: str, read_digest: str | None, moment: datetime | None = None) -> Path | None:
        """Write ``text`` as source ``name``'s file (a new one when ``read_digest`` is None),
        atomically, after copying the version it replaces into ``.history`` (returned); refused
        when the file is not the version the editor read."""
        with SAVING:  # the version compared is the version replaced: one save at a time
            return self._save(name, text, read_digest, moment)

    def _save(self, name: str, text: str, read_digest: str | None, moment: datetime | None) -> Path | None:
        path = self.file(name)
        if not path.exists() and self.disabled_file(name).exists():
            path = self.disabled_file(name)  # a disabled source stays disabled
        kept = None
        if read_digest is None:
            if self.exists(name):
                raise SourceFileError(_("a source named %(name)s exists already", name=name))
        else:
            current = self.read(name)
            if file_version(current) != read_digest:
                raise SourceFileError(
                    _("%(file)s was changed by someone else since you opened it: open it again", file=path.name)
                )
            kept = self.keep(path, "edited", moment)
        write_atomically(path, text)
        return kept

    def keep(self, path: Path, why: str, moment: datetime | None = None) -> Path:
        """A copy of ``path`` in ``.history`` (``<file>.<UTC time>.<why>``)."""
        history = self.path / HISTORY
        history.mkdir(exist_ok=True)
        stamp = (moment or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S%fZ")
        target = history / f"{path.name}.{stamp}.{why}"
        shutil.copy2(path, target)
        return target

    def copy(self, name: str, new_name: str) -> None:
        """Source ``name``'s text as a new, enabled source ``new_name``; a disabled one only if the
        editor takes its text as a new source's (``refuse_disabled``)."""
        with SAVING:
            if self.exists(new_name):
                raise SourceFileError(_("a source named %(name)s exists already", name=new_name))
            text = self.read(name)
            if not self.file(name).is_file():
                self.refuse_disabled(name, text)
            write_atomically(self.file(new_name), text)

    def enable(self, name: str, enabled: bool) -> None:
        """Disable (the file renamed ``<name>.toml.disabled``) or enable source ``name``; enabled
        only if the editor takes its text as a new source's (``refuse_disabled``)."""
        source, target = (self.disabled_file(name), self.file(name)) if enabled else (self.file(name), self.disabled_file(name))
        with SAVING:  # the text checked is the text enabled
            if not source.is_file():
                raise SourceFileError(
                    _("%(name)s is enabled already, or has no file", name=name)
                    if enabled
                    else _("%(name)s is disabled already, or has no file", name=name)
                )
            if target.exists():
                raise SourceFileError(_("%(file)s exists already", file=target.name))
            if enabled:
                self.refuse_disabled(name, self.read(name))
            os.replace(source, target)

    def refuse_disabled(self, name: str, text: str) -> None:
        """Refuses to make disabled source ``name`` (its ``text``) live in the browser when the editor
        refuses that text as a new source's (``guarded_change``): a disabled file is never loaded nor
        checked, and one could be put there by hand or by a restore; the server's administrator
        enables it on the server (renamed ``<name>.toml``)."""
        refused = refused_new_source(text, self.local_seeds)
        if refused:
            logger.debug("Source %s stays disabled: the source editor refuses its text (%s)", name, refused)
            raise SourceFileError(
                _(
                    "%(file)s is not made a live source in the browser, as the source editor refuses its text:"
                    " %(problem)s (enable it on the server: rename it %(name)s.toml)",
                    file=name + DISABLED,
                    problem=refused,
                    name=name,
                )
            )

    def delete(self, name: str, moment: datetime | None = None) -> Path:
        """Source ``name``'s file moved into ``.history``; returns where it went."""
        path = self.file(name) if self.file(name).is_file() else self.disabled_file(name)
        if not path.is_file():
            raise SourceFileError(_("no source file %(file)s", file=name + ".toml"))
        kept = self.keep(path, "deleted", moment)
        path.unlink()
        return kept


def unified_diff(name: str, old: str, new: str) -> list[str]:
    return list(
        difflib.unified_diff(
            old.splitlines(),
            new.splitlines(),
            _("%(file)s (saved)", file=name + ".toml"),
            _("%(file)s (edited)", file=name + ".toml"),
            lineterm="",
        )
    )


def changes(database: Database | None, name: str, old_text: str, new_text: str, new: Source) -> Changes:
    """What saving ``new_text`` (loaded as ``new``) as source ``name`` (whose saved text is
    ``old_text``: "" for a new source) does: the diff,
    the recrawl it forces (against the fingerprint of its last finished run), and the indexed
    documents its rules keep out now (at most MAX_CHECKED_URLS checked)."""
    found = Changes(unified_diff(name, old_text, new_text))
    if database is None:
        return found
    found.recrawl = recrawl_reasons(Runs(database).fingerprint(name), fingerprint(new))
    if new.agent_class is not None:
        found.agent = True
        return found
    # without the source's url_rewriter: no code a source names runs in this server (the maintenance
    # crawl applies it; a rewriter that moves URLs in or out of scope is not counted here)
    unrewritten = replace(new, settings=new.settings.model_copy(update={"url_rewriter": None}))
    chain = rule_chain(unrewritten, MAX_URL_LENGTH)
    for checked, (url, depth) in enumerate(indexed_urls(database, name)):
        if checked >= MAX_CHECKED_URLS:
            found.checked_all = False
            break
        if chain.refusal(url, depth) is not None:
            found.leaving += 1
            if len(found.leaving_samples) < SAMPLES:
                found.leaving_samples.append(url)
    return found


def indexed_urls(database: Database, name: str, batch: int = 5000) -> Iterator[tuple[str, int]]:
    """The source's indexed URLs and their depths, in id order, a batch at a time."""
    after = 0
    while True:
        rows = plan_batch(database, name, after, batch)
        if not rows:
            return
        after = rows[-1].id
        for row in rows:
            if row.state == "indexed":
                yield row.url, int(row.depth or 0)


def refused_new_source(text: str, local_seeds: bool = False) -> str:
    """Why the editor refuses ``text`` as a new source's ("" when it takes it): a restore's check of
    each source of a backup (ops/configuration_backup.py), the editor's own, with the same
    SEARCHCRAWL_WEB_LOCAL_SEEDS (``local_seeds``)."""
    return guarded_change("", text, local_seeds)


@contextmanager
def scratch_sources(folder: Path, name: str, text: str) -> Iterator[Path]:
    """A sources folder of its own holding ``text`` as source ``name``'s file, and the files the
    real folder holds beside its sources (seed files, certificates: linked, not copied), for
    `scrapy explain` and a test crawl of the edited, unsaved source; removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="searchcrawl-editing-") as scratch:
        scratch_path = Path(scratch)
        if folder.is_dir():
            for entry in folder.iterdir():
                if entry.name.endswith((".toml", DISABLED)) or entry.name.startswith("."):
                    continue  # other sources are not this one's
                (scratch_path / entry.name).symlink_to(entry.resolve())
        (scratch_path / f"{name}.toml").write_bytes(text.encode("utf-8"))
        yield scratch_path


def test_crawl(
    project_dir: Path,
    environ: dict[str, str],
    sources: Path,
    name: str,
    pages: int = TEST_PAGES,
    phase: Callable[[str], None] = lambda _phase: None,
) -> tuple[bool, str]:
    """A crawl of ``pages`` pages of source ``name`` (from ``sources``) in test mode, in a data
    folder and database of its own (the installation's table, cache and index are never
    touched; nothing is sent to Solr), then its report: (whether it ran, what it says). ``phase``
    is told when the report begins ("reporting")."""
    with tempfile.TemporaryDirectory(prefix="searchcrawl-test-crawl-") as data:
        env = {
            **environ,
            "SEARCHCRAWL_SOURCES_DIR": str(sources),
            "SEARCHCRAWL_DATA_DIR": data,
            "SEARCHCRAWL_DB_URL": f"sqlite:///{Path(data) / 'test-crawl.sqlite3'}",
        }
        crawl = [
            "crawl",
            name,
            "-a",
            "test_mode=1",
            "-s",
            f"SEARCHCRAWL_MAX_REQUESTS={pages}",  # requests, not answers: none in flight goes out after it
            "-s",
            "LOG_FILE=",  # not a source's log_file: the output comes back to the page
            "-s",
            "LOG_LEVEL=WARNING",
        ]
        try:
            ran = run_command(project_dir, env, TEST_TIMEOUT, *crawl)
            phase(REPORTING)
            report = run_command(project_dir, env, TEST_TIMEOUT, "report", name)
        except subprocess.TimeoutExpired:
            return False, _("the test crawl took longer than %(seconds)s s", seconds=number(TEST_TIMEOUT))
    said = (report.stdout + report.stderr).strip()
    if ran.returncode not in (0,) and not report.stdout.strip():
        said = (ran.stdout + ran.stderr).strip()
    return report.returncode == 0, said[-20000:]


WAITING, CRAWLING, REPORTING = "waiting", "crawling", "reporting"  # a test crawl's phases, as its page says them


@dataclass
class TestCrawl:
    """A test crawl started from the editor, running on a thread of its own while the editor's page
    shows how long it has run and what it is doing (it took about 20 s, and the page stayed blank):
    the editor's fields it was started from, its phase, and its result once done."""

    __test__ = False  # not a test of pytest's, whatever its name
    page: dict[str, Any]
    started: float = field(default_factory=time.monotonic)
    phase: str = WAITING
    result: tuple[bool, str] | None = None  # (whether it ran, what it says)
    finished: float = 0.0

    def seconds(self) -> int:
        return int((self.finished or time.monotonic()) - self.started)


class TestCrawlRefused(Exception):
    """A test crawl not started, and why, in one line; ``status``: the page's HTTP status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class TestCrawls:
    """The test crawls started from the editor: one per administrator's session (its page shows it
    until a new one replaces it, or TEST_RESULT_SECONDS after its end), at most
    TEST_CRAWLS_AT_ONCE running at once and TEST_CRAWLS_WAITING waiting (their page says so; past
    them a new one is refused: each waits on a thread of its own)."""

    __test__ = False

    def __init__(
        self, at_once: int = TEST_CRAWLS_AT_ONCE, kept: float = TEST_RESULT_SECONDS, waiting: int = TEST_CRAWLS_WAITING
    ) -> None:
        self.slots = threading.BoundedSemaphore(at_once)
        self.unfinished = at_once + waiting  # running and waiting: threads alive
        self.kept = kept
        self.lock = threading.Lock()
        self.crawls: dict[str, TestCrawl] = {}

    def start(self, session: str, page: dict[str, Any], work: Callable[[Callable[[str], None]], tuple[bool, str]]) -> TestCrawl:
        """``work`` (told its phase) on a thread of its own for ``session``; refused (TestCrawlRefused)
        when the session's last test crawl is still running (one at a time: its page shows it), or
        when as many as this server runs and lets wait are unfinished."""
        with self.lock:
            self._forget_expired()
            running = self.crawls.get(session)
            if running is not None and running.result is None:
                raise TestCrawlRefused(_("Your last test crawl is still running: wait for its report."), 409)
            unfinished = sum(1 for crawl in self.crawls.values() if crawl.result is None)
            if unfinished >= self.unfinished:
                logger.debug("Test crawl refused: %s test crawls running or waiting", unfinished)
                raise TestCrawlRefused(
                    _(
                        "%(count)s test crawls are running or waiting already: start yours when one has finished.",
                        count=number(unfinished),
                    ),
                    503,
                )
            crawl = self.crawls[session] = TestCrawl(dict(page))
        threading.Thread(target=self._run, args=(crawl, work), name="searchcrawl-test-crawl", daemon=True).start()
        return crawl

    def _forget_expired(self) -> None:
        """The finished test crawls whose result has been kept TEST_RESULT_SECONDS forgotten (under
        ``lock``)."""
        now = time.monotonic()
        for key in [key for key, crawl in self.crawls.items() if crawl.result is not None and now - crawl.finished > self.kept]:
            del self.crawls[key]

    def _run(self, crawl: TestCrawl, work: Callable[[Callable[[str], None]], tuple[bool, str]]) -> None:
        with self.slots:
            crawl.phase = CRAWLING

            def told(phase: str) -> None:
                crawl.phase = phase

            try:
                result = work(told)
            except Exception as exc:  # noqa: BLE001 - said on its page, not lost on a thread
                logger.exception("The test crawl of %s failed", crawl.page.get("name"))
                result = (False, _("the test crawl failed: %(reason)s", reason=type(exc).__name__))
            crawl.finished = time.monotonic()
            crawl.result = result

    def of(self, session: str) -> TestCrawl | None:
        """The session's test crawl, running or done (None: none, or its result expired)."""
        with self.lock:
            self._forget_expired()
            return self.crawls.get(session)
