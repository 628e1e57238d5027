"""Source files: one TOML file per source, validated before anything is fetched.

A source file is the whole configuration of one crawl (seeds, scope, politeness, mapping). It is
validated strictly, because a typo in a key (``max_dept``) that silently does nothing would cost a
user a night's crawl: every error names the file, the key and what was expected.

Packaged sources live in ``searchcrawl/sources/`` (read with ``importlib.resources`` so they also
work from a scrapyd egg); more come from the folder named by ``SEARCHCRAWL_SOURCES_DIR``. A
source in that folder overrides a packaged source of the same name.
"""

from __future__ import annotations

import codecs
import importlib.resources
import ipaddress
import re
import tomllib
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import quote, urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from searchcrawl.access.source_rules import AccessRule, SourceAccess, tokens_of
from searchcrawl.agents.base import Agent
from searchcrawl.config.implementations import AGENT_TYPES, AGENTS, SPIDERS, URL_REWRITERS, ImplementationError
from searchcrawl.content.field_rules import FieldRule
from searchcrawl.content.regions import RegionsTable
from searchcrawl.content.soft_errors import SoftErrorsTable
from searchcrawl.rules.boundary import EVERY_HOST, normalize_host
from searchcrawl.rules.credentials import SiteAuth, origin_of
from searchcrawl.rules.display_urls import DisplayUrlRule
from searchcrawl.rules.filters import Filters
from searchcrawl.rules.navigation_pages import check_pattern
from searchcrawl.rules.notify_events import NotifyTable
from searchcrawl.rules.politeness import DelayRule
from searchcrawl.rules.proxies import ProxyRule
from searchcrawl.rules.rendering import RenderMode, RenderRule
from searchcrawl.rules.schedules import Schedule, check_cron, parse_interval
from searchcrawl.rules.tables import RuleTable
from searchcrawl.rules.tls_settings import TlsFileError, TlsFiles, TlsRules, check_client_files, split_certificates

SourceType = Literal["web", "files", "smb", "database", "mail", "imap", "webdav", "cmis", "dokuwiki", "redmine", "git", "agent"]
# keys about web sites only: refused in a source of another type, where they would do nothing
WEB_ONLY_KEYS = (
    *("seeds", "seed_files", "spider_class", "obey_robots_meta", "navigation_pages", "url_rewriter"),
    *("auth", "proxy", "tls", "render_js", "render_rules", "render_wait", "render_selector", "render_delay_ms"),
    *("render_timeout", "render_min_text", "render_pages", "orphans", "recheck_gone_days", "sitemaps"),
    *("sitemaps_from_robots", "trust_sitemap_lastmod", "sitemap_trust_days", "delay", "delay_rules"),
    *("concurrent_per_site",),
    *("concurrent_sites", "autothrottle", "autothrottle_target", "shared", "processes", "domains", "ports", "paths"),
    *("patterns", "max_depth", "index_dynamic_pages"),
)
SOURCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# a disabled source's file in the sources folder (``<name>.toml.disabled``): never loaded, enabled by renaming
DISABLED = ".toml.disabled"
SEED_SCHEMES = ("http", "https", "file")
# what tells that a document was modified (``modified_when``; default: all of them)
ModifiedSignal = Literal["date", "etag", "checksum"]
MODIFIED_SIGNALS: tuple[ModifiedSignal, ...] = ("date", "etag", "checksum")


class SourceError(Exception):
    """A source file that cannot be used; the message names the file, the key and the fix."""


CREDENTIALS_IN_SEED = (
    "expected a URL without user name and password: credentials do not belong in a source "
    "file, which may be committed to a repository"
)


def seed_url_problem(url: str) -> str | None:
    """What a seed URL lacks, or None if it is a good seed. The answer never quotes the URL: a
    seed file may be any file (``seed_files = ["/etc/shadow"]``), and errors are printed."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # its message may quote the URL
        return "expected a URL such as 'https://intranet.example/'"
    if parts.scheme not in SEED_SCHEMES:
        return "expected an http(s) or file URL"
    if parts.scheme in ("http", "https") and not parts.hostname:
        return "expected an http(s) URL with a host"
    if parts.username or parts.password:
        return CREDENTIALS_IN_SEED
    try:
        port = parts.port  # ValueError when out of range or not a number
    except ValueError:
        port = 0
    if port == 0:  # else the crawl would fail on it, after it started
        return "expected a port from 1 to 65535"
    return None


def check_seed_url(url: str) -> str:
    """Return the seed URL, or raise ValueError saying what a seed must be (quoting it, for the
    ``seeds`` the source file's author wrote, unless it holds a password)."""
    problem = seed_url_problem(url)
    if problem is None:
        return url.strip()
    if problem == CREDENTIALS_IN_SEED:
        raise ValueError(problem)  # never echo the URL: it holds a password
    raise ValueError(f"{problem}, got {url!r}")


# Characters left as they are in a path prefix; anything else (non-ASCII, spaces) is
# percent-encoded as UTF-8, the way w3lib canonicalises the URLs the prefix is compared with.
_PATH_SAFE = "/:@!$&'()*+,;=-._~%"


# -- the scope keys of a source file ------------------------------------------------------------
# Validated and normalised here; searchcrawl.rules.boundary.Boundary applies them (it reads a
# ScopeRules as its Scope protocol: the rules take plain values, never the configuration).


def _is_ipv6(value: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(value), ipaddress.IPv6Address)
    except ValueError:
        return False


def _domain_entry(entry: str, prefix: bool) -> str:
    """One ``[domains]`` entry: lower case, no leading dot, punycode; or ValueError."""
    value = entry.strip().lower().lstrip(".")
    what = "a host name prefix such as 'intranet.'" if prefix else "a domain or host name such as 'example.com'"
    if not value:
        raise ValueError(f"expected {what}, got {entry!r}")
    if "*" in value or "?" in value:
        hint = "it is a plain prefix" if prefix else "it already admits every host below it"
        raise ValueError(f"expected {what} without wildcards ({hint}), got {entry!r}")
    if "/" in value or any(char.isspace() for char in value):
        raise ValueError(f"expected {what}, not a URL or path, got {entry!r}")
    if not prefix:
        bare = value.strip("[]")
        if ":" in value and not _is_ipv6(bare):
            raise ValueError(f"expected {what} without a port (ports go in [ports]), got {entry!r}")
        value = bare.removesuffix(".")
        if not value.isascii():
            try:
                value = value.encode("idna").decode("ascii")
            except UnicodeError as exc:
                raise ValueError(f"not a valid host name: {entry!r} ({exc})") from None
    return value


def _domain_entries(entries: list[str], prefix: bool) -> list[str]:
    return list(dict.fromkeys(_domain_entry(entry, prefix) for entry in entries))


def _host_keys(table: dict[str, Any], what: str) -> dict[str, Any]:
    """The hosts of a per-host table (``[ports]``, ``[paths]``), normalised; or ValueError."""
    hosts: dict[str, Any] = {}
    for key, rule in table.items():
        if key.strip() == EVERY_HOST:
            host = EVERY_HOST
        else:
            host = normalize_host(key)
            bare = host.replace(".", "").replace("-", "").replace("_", "")
            if not host or not (bare.isalnum() or _is_ipv6(host)) or key.strip().startswith("."):
                raise ValueError(
                    f"host {key!r}: expected an exact host name such as 'www.example.com', or '*' for every host "
                    f"({what} rules are per host, not per domain; no scheme, port or path)"
                )
        if host in hosts:
            raise ValueError(f"host {key!r} is given twice (host names are compared in lower case)")
        hosts[host] = rule
    return hosts


class DomainRules(RuleTable):
    """``[domains]``: host suffix and host prefix rules; exclusion overrides inclusion."""

    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    include_prefix: list[str] = Field(default_factory=list)
    exclude_prefix: list[str] = Field(default_factory=list)

    @field_validator("include", "exclude")
    @classmethod
    def _suffixes(cls, entries: list[str]) -> list[str]:
        return _domain_entries(entries, prefix=False)

    @field_validator("include_prefix", "exclude_prefix")
    @classmethod
    def _prefixes(cls, entries: list[str]) -> list[str]:
        return _domain_entries(entries, prefix=True)


class PortRule(RuleTable):
    """One host's ``[ports]`` rule: an include list or an exclude list, never both."""

    include: list[int] | None = None
    exclude: list[int] | None = None

    @field_validator("include", "exclude")
    @classmethod
    def _port_numbers(cls, ports: list[int] | None) -> list[int] | None:
        if ports is None:
            return None
        for port in ports:
            if not 1 <= port <= 65535:
                raise ValueError(f"expected port numbers from 1 to 65535, got {port}")
        return list(dict.fromkeys(ports))

    @model_validator(mode="after")
    def _one_list(self) -> PortRule:
        if self.include is not None and self.exclude is not None:
            raise ValueError("expected an include list or an exclude list, not both")
        if self.include is None and self.exclude is None:
            raise ValueError("expected an include list or an exclude list, e.g. { include = [80, 8080] }")
        if self.include == []:
            raise ValueError("expected at least one port in the include list (an empty one allows no port)")
        return self


class PathRule(RuleTable):
    """One host's ``[paths]`` rule: path prefix include and exclude lists; ``case_insensitive``
    for a server that ignores the case of paths (IIS, Windows shares)."""

    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    case_insensitive: bool = False

    @field_validator("include", "exclude")
    @classmethod
    def _path_prefixes(cls, prefixes: list[str]) -> list[str]:
        return _path_prefixes(prefixes)


def _path_prefixes(prefixes: list[str]) -> list[str]:
    """URL path prefixes as URLs' paths are compared with them: percent-encoded, each once."""
    for prefix in prefixes:
        if not prefix.startswith("/"):
            raise ValueError(f"expected path prefixes starting with '/', got {prefix!r}")
    return list(dict.fromkeys(quote(prefix, safe=_PATH_SAFE) for prefix in prefixes))


def _regexes(patterns: list[str]) -> list[str]:
    for pattern in patterns:
        if not pattern:
            raise ValueError("expected a non-empty regular expression (an empty one matches every URL)")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{pattern!r} is not a valid regular expression: {exc}") from None
    return patterns


def _globs(patterns: list[str]) -> list[str]:
    for pattern in patterns:
        if not pattern:
            raise ValueError("expected a non-empty glob such as '*.zip'")
    return patterns


class PatternRules(RuleTable):
    """``[patterns]``: regular expressions and globs on the whole URL."""

    include_regex: list[str] = Field(default_factory=list)
    exclude_regex: list[str] = Field(default_factory=list)
    include_glob: list[str] = Field(default_factory=list)
    exclude_glob: list[str] = Field(default_factory=list)

    @field_validator("include_regex", "exclude_regex")
    @classmethod
    def _valid_regexes(cls, patterns: list[str]) -> list[str]:
        return _regexes(patterns)

    @field_validator("include_glob", "exclude_glob")
    @classmethod
    def _valid_globs(cls, patterns: list[str]) -> list[str]:
        return _globs(patterns)


def _tokens(values: list[str]) -> list[str]:
    try:
        return list(tokens_of(values))
    except ValueError as exc:
        raise ValueError(str(exc)) from None


class AccessRuleTable(RuleTable):
    """One ``[[access.rules]]`` entry: ``paths`` (URL path prefixes) or ``patterns`` (regular
    expressions searched in the URL), and the tokens of the documents it covers."""

    paths: list[str] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=list)
    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)

    @field_validator("paths")
    @classmethod
    def _path_prefixes(cls, prefixes: list[str]) -> list[str]:
        return _path_prefixes(prefixes)

    @field_validator("patterns")
    @classmethod
    def _valid_regexes(cls, patterns: list[str]) -> list[str]:
        return _regexes(patterns)

    @field_validator("allow", "deny")
    @classmethod
    def _valid_tokens(cls, values: list[str]) -> list[str]:
        return _tokens(values)

    @model_validator(mode="after")
    def _complete(self) -> AccessRuleTable:
        if not self.paths and not self.patterns:
            raise ValueError("an access rule needs 'paths' or 'patterns': the documents it covers")
        if not self.allow:
            raise ValueError("an access rule needs 'allow': who may read the documents it covers ('public' for everyone)")
        return self


class AccessTable(RuleTable):
    """``[access]``: who may read the source's documents (searchcrawl/access/source_rules.py)."""

    public: bool = False
    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    rules: list[AccessRuleTable] = Field(default_factory=list)

    @field_validator("allow", "deny")
    @classmethod
    def _valid_tokens(cls, values: list[str]) -> list[str]:
        return _tokens(values)

    @model_validator(mode="after")
    def _says_something(self) -> AccessTable:
        if self.public and self.allow:
            raise ValueError("give 'public = true' (everyone may read) or 'allow' (these readers only), not both")
        if not self.public and not self.allow and not self.rules:
            raise ValueError("[access] needs 'public = true', 'allow' or [[access.rules]]: who may read the documents")
        return self

    def source_access(self, origin: str) -> SourceAccess:
        rules = tuple(
            AccessRule(tuple(rule.paths), tuple(rule.patterns), tuple(rule.allow), tuple(rule.deny)) for rule in self.rules
        )
        return SourceAccess(origin, self.public, tuple(self.allow), tuple(self.deny), rules)


class ScopeRules(BaseModel):
    """The scope keys of a source file, with their defaults (top-level keys of the TOML file);
    what each means: the checks of searchcrawl/rules/boundary.py, which apply them."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    max_depth: int = Field(default=10, ge=0)
    index_dynamic_pages: bool = False
    domains: DomainRules = Field(default_factory=DomainRules)
    ports: dict[str, PortRule] = Field(default_factory=dict)
    paths: dict[str, PathRule] = Field(default_factory=dict)
    patterns: PatternRules = Field(default_factory=PatternRules)

    @field_validator("ports")
    @classmethod
    def _port_hosts(cls, ports: dict[str, PortRule]) -> dict[str, PortRule]:
        return _host_keys(ports, "port")

    @field_validator("paths")
    @classmethod
    def _path_hosts(cls, paths: dict[str, PathRule]) -> dict[str, PathRule]:
        return _host_keys(paths, "path")


# -- the whole source file ----------------------------------------------------------------------


class SourceSettings(ScopeRules):
    """The keys a source file may hold, with their defaults (documented in docs/sources.md, the source file reference).

    The scope keys (domains, ports, paths, patterns, max_depth, index_dynamic_pages) come from
    ScopeRules, above.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    description: str = ""
    # what is crawled: web sites, or a repository an agent lists (searchcrawl/agents/): the
    # built-in types' options are the table named after the type, an agent's own [agent_options]
    type: SourceType = "web"
    agent: str | None = None
    files: dict[str, Any] | None = None
    smb: dict[str, Any] | None = None
    database: dict[str, Any] | None = None
    mail: dict[str, Any] | None = None
    imap: dict[str, Any] | None = None
    webdav: dict[str, Any] | None = None
    cmis: dict[str, Any] | None = None
    dokuwiki: dict[str, Any] | None = None
    redmine: dict[str, Any] | None = None
    git: dict[str, Any] | None = None
    agent_options: dict[str, Any] | None = None
    # a source with an agent: the origins (scheme://host:port) its references' locations may be
    # downloaded from (searchcrawl/crawl/handlers/agent.py); none: an agent hands over content
    fetch_origins: list[str] = Field(default_factory=list)
    seeds: list[str] = Field(default_factory=list)
    seed_files: list[str] = Field(default_factory=list)
    spider_class: str | None = None
    preserve_cache: bool = False
    obey_robots: bool = True
    robots_agent: str = "searchcrawl"
    obey_robots_meta: bool = True
    # URL path patterns of pages kept out of the index, their links followed (None: the
    # generators' recognisable ones, rules/navigation_pages.py DEFAULT; []: none)
    navigation_pages: (
        Annotated[
            list[Annotated[str, StringConstraints(min_length=1, max_length=500), AfterValidator(check_pattern)]],
            Field(max_length=200),
        ]
        | None
    ) = None
    url_rewriter: str | None = None
    display_urls: list[DisplayUrlRule] = Field(default_factory=list)
    auth: list[SiteAuth] = Field(default_factory=list)
    access: AccessTable | None = None  # who may read its documents (searchcrawl/access/source_rules.py)
    proxy: ProxyRule | None = None
    tls: TlsRules = Field(default_factory=TlsRules)
    attributes: dict[str, str] = Field(default_factory=dict)
    search_attributes: dict[str, Literal["string", "strings", "text", "int", "long", "double", "date", "boolean"]] = Field(
        default_factory=dict
    )
    description_fallback: bool = False
    main_text: bool = False
    # which parts of an HTML page are its text (searchcrawl/content/regions.py)
    regions: RegionsTable = Field(default_factory=RegionsTable)
    # pages that answer but are not the page: login walls, challenges, soft 404s (searchcrawl/content/soft_errors.py)
    soft_errors: SoftErrorsTable = Field(default_factory=SoftErrorsTable)
    # values of a page's markup into typed fields (searchcrawl/content/field_rules.py)
    fields: list[FieldRule] = Field(default_factory=list)
    checksum_of: Literal["main_text", "text", "raw"] = "text"
    detect_language: bool = True
    # documents (through Tika): OCR of images and scanned PDFs; documents without text
    ocr: bool = False
    ocr_languages: list[Annotated[str, StringConstraints(pattern=r"^[a-z]{3}(_[a-z]{2,8})?$")]] = Field(
        default_factory=lambda: ["eng"], min_length=1
    )
    ocr_timeout: float = Field(default=300.0, gt=0)
    index_without_text: bool = True
    default_charset: str | None = None
    max_download_bytes: int | None = Field(default=None, ge=1)
    filters: Filters = Field(default_factory=Filters)
    render_js: RenderMode = False
    render_rules: list[RenderRule] = Field(default_factory=list)
    render_wait: Literal["load", "domcontentloaded", "networkidle"] = "load"
    render_selector: str | None = None
    render_delay_ms: int = Field(default=0, ge=0)
    render_timeout: float = Field(default=30.0, gt=0)
    render_min_text: int = Field(default=200, ge=0)
    render_pages: int = Field(default=4, ge=1)
    modified_when: list[ModifiedSignal] = Field(default_factory=lambda: list(MODIFIED_SIGNALS))
    max_failures: int = Field(default=3, ge=1)
    max_delete_share: float = Field(default=0.3, ge=0, le=1)
    orphans: Literal["keep", "delete"] = "keep"
    # URLs without a document (404, 410, moved, redirected ...) are requested again by a
    # maintenance crawl once this many days passed since they were last fetched (0: every crawl)
    recheck_gone_days: float = Field(default=0.0, ge=0)
    # sitemaps (sitemaps.org): their URLs join the seeds; lastmod spares unchanged pages a request
    sitemaps: list[str] = Field(default_factory=list)
    sitemaps_from_robots: bool = True
    trust_sitemap_lastmod: bool = True
    # ... but only for pages fetched less than this many days ago: a stale sitemap that still
    # lists a deleted page would otherwise spare it its request, and keep it indexed, forever
    sitemap_trust_days: float = Field(default=30.0, gt=0)
    # schedule (`scrapy scheduler`): one of the two, or neither (crawled by hand only)
    refresh_interval: str | None = None
    schedule: str | None = None
    # politeness
    delay: float = Field(default=0.0, ge=0)
    delay_rules: list[DelayRule] = Field(default_factory=list)
    concurrent_per_site: int | None = Field(default=None, ge=1)
    concurrent_sites: int | None = Field(default=None, ge=1)
    autothrottle: bool = False
    autothrottle_target: float | None = Field(default=None, gt=0)
    # crawler settings
    concurrent_requests: int | None = Field(default=None, ge=1)
    download_timeout: float | None = Field(default=None, gt=0)
    log_file: str | None = None
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] | None = None
    temp_dir: str | None = None
    # scale-out: several processes or machines crawl this source together (PostgreSQL)
    shared: bool = False
    # several processes on this machine crawl it together, as a shared crawl (searchcrawl/ops/local_fleet.py)
    processes: int | Literal["auto"] = 1
    # issue 60: which of its run's events are sent, on which channels, to whom (searchcrawl/rules/notify_events.py)
    notify: NotifyTable | None = None

    @field_validator("processes", mode="before")
    @classmethod
    def _processes(cls, value: Any) -> Any:
        if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            return value
        raise ValueError(f"expected a number of processes, 1 or more, or 'auto' (got {value!r})")

    @field_validator("refresh_interval")
    @classmethod
    def _interval(cls, value: str | None) -> str | None:
        if value is not None:
            parse_interval(value)
        return value

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        return None if value is None else check_cron(value)

    @model_validator(mode="after")
    def _no_credentials_in_a_browser(self) -> SourceSettings:
        # Chromium sends a request's headers on with every frame, iframe and redirect it loads,
        # to any origin: credentials and rendering together are refused until the browser's
        # requests get credentials per origin too
        if self.auth and (self.render_js or self.render_rules):
            raise ValueError("[[auth]] cannot be combined with render_js or render_rules yet")
        forms = [origin for rule in self.auth if rule.type == "form" for origin in rule.origins]
        if len(forms) != len(set(forms)):
            raise ValueError("an origin belongs to one form login ([[auth]] with type = 'form') at most")
        # Chromium connects by itself, with its own trust store and no per-source proxy
        if (self.proxy is not None or self.tls.customised) and (self.render_js or self.render_rules):
            raise ValueError("[proxy] and [tls] cannot be combined with render_js or render_rules yet")
        return self

    @model_validator(mode="after")
    def _one_schedule(self) -> SourceSettings:
        if self.refresh_interval is not None and self.schedule is not None:
            raise ValueError("give either 'refresh_interval' or 'schedule', not both")
        for key, several in (("shared", self.shared), ("processes", self.processes != 1)):
            if several and self.autothrottle:
                raise ValueError(
                    "'autothrottle' adjusts each process's own delay; a shared crawl spaces requests for "
                    f"the whole fleet with 'delay' (and 'delay_rules'): drop one of {key!r} and 'autothrottle'"
                )
        return self

    @model_validator(mode="before")
    @classmethod
    def _files_change_by_content(cls, data: Any) -> Any:
        # a file's modification time moves without its content (a copy, a touch, a restore):
        # a files source reads a file again when its size or time changes, and re-indexes it
        # only when its content did (modified_when = ["checksum"], unless the file says otherwise)
        if isinstance(data, dict) and data.get("type") in ("files", "smb", "webdav") and "modified_when" not in data:
            return {**data, "modified_when": ["checksum"]}
        return data

    @model_validator(mode="after")
    def _keys_of_its_type(self) -> SourceSettings:
        tables = {
            "files": self.files,
            "smb": self.smb,
            "database": self.database,
            "mail": self.mail,
            "imap": self.imap,
            "webdav": self.webdav,
            "cmis": self.cmis,
            "dokuwiki": self.dokuwiki,
            "redmine": self.redmine,
            "git": self.git,
            "agent": self.agent_options,
        }
        for kind, table in tables.items():
            if table is not None and kind != self.type:
                name = agent_table(kind)
                raise ValueError(f"[{name}] belongs to a source with type = {kind!r}, this one has type = {self.type!r}")
        if self.type == "agent" and not self.agent:
            registered = ", ".join(AGENTS.names()) or "none"
            raise ValueError(
                f"type = 'agent' needs 'agent', the registered name of an installed agent (registered: {registered})"
            )
        if self.agent and self.type != "agent":
            raise ValueError("'agent' belongs to a source with type = 'agent'")
        if self.type in AGENT_TYPES.built_in and tables[self.type] is None:
            raise ValueError(f"type = {self.type!r} needs its [{self.type}] table")
        if self.type == "web" and self.fetch_origins:
            raise ValueError("'fetch_origins' belongs to a source with an agent (type other than 'web')")
        if self.type != "web":
            web_keys = [key for key in WEB_ONLY_KEYS if key in self.model_fields_set]
            if web_keys:
                raise ValueError(f"{', '.join(web_keys)}: keys of web sources, not of type = {self.type!r}")
        return self

    @property
    def signed_in_origins(self) -> frozenset[str]:
        """The origins the source signs in to (its ``[[auth]]`` tables'): a login page there is
        its session lost (content/soft_errors.py)."""
        return frozenset(origin for auth in self.auth for origin in auth.origins)

    @property
    def crawl_schedule(self) -> Schedule | None:
        if self.refresh_interval is not None:
            return Schedule(interval=parse_interval(self.refresh_interval))
        if self.schedule is not None:
            return Schedule(cron=self.schedule)
        return None

    @field_validator("attributes")
    @classmethod
    def _search_attribute_names(cls, mapping: dict[str, str]) -> dict[str, str]:
        for name, target in mapping.items():
            if not re.fullmatch(r"[a-z][a-z0-9_]*", target):
                raise ValueError(
                    f"{name!r}: expected a search attribute name of lower-case letters, digits and '_', got {target!r}"
                )
        return {name.lower(): target for name, target in mapping.items()}

    @field_validator("default_charset")
    @classmethod
    def _known_charset(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                codecs.lookup(value)
            except LookupError:
                raise ValueError(f"expected a character set Python knows, such as 'windows-1252', got {value!r}") from None
        return value

    @field_validator("modified_when")
    @classmethod
    def _some_signal(cls, signals: list[ModifiedSignal]) -> list[ModifiedSignal]:
        if not signals:
            raise ValueError("expected at least one of 'date', 'etag', 'checksum'")
        return signals

    @field_validator("robots_agent")
    @classmethod
    def _product_token(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z_-]+", value):
            raise ValueError(f"expected a product token of letters, '_' and '-' (RFC 9309), got {value!r}")
        return value

    @field_validator("seeds")
    @classmethod
    def _seeds_are_urls(cls, seeds: list[str]) -> list[str]:
        return [check_seed_url(seed) for seed in seeds]

    @field_validator("sitemaps")
    @classmethod
    def _sitemaps_are_web_urls(cls, sitemaps: list[str]) -> list[str]:
        checked = [check_seed_url(url) for url in sitemaps]
        if any(urlsplit(url).scheme not in ("http", "https") for url in checked):
            raise ValueError("expected http(s) URLs of sitemaps")
        return checked

    @field_validator("fetch_origins")
    @classmethod
    def _origins(cls, origins: list[str]) -> list[str]:
        normalised = []
        for entry in origins:
            origin = origin_of(entry)
            if origin is None or urlsplit(entry).path not in ("", "/") or "@" in entry:
                raise ValueError(f"expected an origin such as 'https://dms.example.com' (scheme, host, port), got {entry!r}")
            normalised.append(origin)
        return list(dict.fromkeys(normalised))

    @field_validator("spider_class", "url_rewriter", "agent")
    @classmethod
    def _registered_name(cls, value: str | None, info: ValidationInfo) -> str | None:
        """A registered name (config/implementations.py), never a dotted path: a source file named
        any callable, and ``url_rewriter = "os.system"`` ran a shell command (issue 99)."""
        if value is not None:
            kind = {"spider_class": SPIDERS, "url_rewriter": URL_REWRITERS, "agent": AGENTS}[str(info.field_name)]
            if kind is AGENTS and value in AGENT_TYPES.built_in:
                raise ValueError(f"{value!r} is a built-in type: write type = {value!r} and its [{value}] table")
            kind.entry_point(value)
        return value


@dataclass(frozen=True)
class Source:
    """A validated source: its name, where it came from, its settings and all its seed URLs."""

    name: str
    origin: str
    settings: SourceSettings
    seed_urls: tuple[str, ...]
    tls_files: TlsFiles = field(default_factory=TlsFiles, repr=False)  # read from [tls]'s PEM files
    # a source of another type than web: its agent's class and validated options
    agent_class: type[Agent] | None = None
    agent_options: BaseModel | None = None

    def make_agent(self) -> Agent:
        """The source's agent, ready to list (``type`` other than web only)."""
        assert self.agent_class is not None and self.agent_options is not None
        return self.agent_class(self.name, self.agent_options)

    def source_access(self) -> SourceAccess | None:
        """The ``[access]`` table, ready to ask (None: the source has none)."""
        table = self.settings.access
        return None if table is None else table.source_access(f"source {self.name}")


@dataclass(frozen=True)
class SourceFile:
    """A source file found on disk or in the package, not yet validated."""

    name: str
    origin: str
    resource: Traversable


def _describe_error(error: ErrorDetails, prefix: str | None = None, model: type[BaseModel] | None = None) -> str:
    """One validation error as the user reads it: the key (``prefix.key`` for a table validated
    by an agent's own model), and what was expected."""
    key = ".".join(str(part) for part in ((prefix,) if prefix else ()) + tuple(error["loc"]))
    if error["type"] == "extra_forbidden" and (model is not None or prefix is None):
        known = ", ".join((model or SourceSettings).model_fields)
        return f"key '{key}': unknown key (known keys: {known})"
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] != "value_error":
        message = f"expected {message[0].lower()}{message[1:]}".replace("expected input should be", "expected")
        message += f" (got {error['input']!r})"
    return f"key '{key}': {message}" if key else message


# a comment after the URL of a seed file's line: a "#" after white space (a "#" right after the URL
# starts its fragment; a URL holds no white space)
_TRAILING_COMMENT = re.compile(r"\s#.*")


def seed_line(line: str) -> str:
    """The URL a line of a seed file holds, or "" for a blank line or a comment: a line starting
    with ``#``, and a ``#`` after white space, start a comment (``http://h/#top`` keeps its ``#``)."""
    line = line.strip()
    if line.startswith("#"):
        return ""
    return _TRAILING_COMMENT.sub("", line).rstrip()


def _read_seed_file(source_file: SourceFile, name: str) -> list[str]:
    target = Path(name).expanduser()
    seed_file = target if target.is_absolute() else _sibling(source_file.resource, name)
    where = f"{source_file.origin}: key 'seed_files': {name}"
    try:
        lines = seed_file.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise SourceError(f"{where}: expected UTF-8 text, one URL a line") from None  # the message quotes bytes
    seeds = []
    for number, text in enumerate(lines, start=1):
        line = seed_line(text)
        if not line:
            continue
        problem = seed_url_problem(line)
        if problem is not None:  # named by its line, never quoted: the file may be anything
            raise SourceError(f"{where}, line {number}: {problem}")
        seeds.append(line)
    return seeds


def _sibling(resource: Traversable, name: str) -> Traversable:
    """The file ``name`` next to a source file, whether on disk or inside the package."""
    if isinstance(resource, Path):
        return resource.parent / name
    parent = importlib.resources.files("searchcrawl.sources")
    return parent.joinpath(name)


# What a source text may not hold anywhere, in a string or a comment too: a line end other than LF
# and CRLF (a lone CR, NEL, VT, FF, the file separators, U+2028, U+2029), any other control
# character but tab, and a byte order mark. Each reader of a text splits its lines its own way
# (tomllib: LF and CRLF; Python's universal newlines: a lone CR too; str.splitlines: NEL, FF and
# U+2028 as well; a browser's form: CRLF), and one text must be one source to every one of them:
# the editor's guard once read a lone-CR text as no TOML while the loader, through universal
# newlines, read the same bytes as a files source over a server folder (issue 99).
_NOT_IN_A_SOURCE = re.compile("[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff]|\r(?!\n)")


class SourceTextError(ValueError):
    """A source text that is no source: not UTF-8, a character no source holds, or not TOML (one line)."""


def source_data(text: str | bytes) -> dict[str, Any]:
    """A source file's text (its exact bytes, or those decoded) as TOML data: the one reading of a
    source, by the crawl's loader, ``scrapy list``, the source editor's guard, a backup's export and
    a restore alike. No newline is translated, nothing is stripped: a text that ``tomllib`` alone
    would read otherwise than a line-based reader is refused (``_NOT_IN_A_SOURCE``)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:  # UTF-16 too; the message names the byte's offset, never the text
            raise SourceTextError(f"not UTF-8 text (byte {exc.start})") from None
    odd = _NOT_IN_A_SOURCE.search(text)
    if odd is not None:
        line = text.count("\n", 0, odd.start()) + 1
        what = "a lone carriage return" if odd.group() == "\r" else f"the character U+{ord(odd.group()):04X}"
        raise SourceTextError(
            f"line {line}: {what}: a source file holds text lines ended by LF or CRLF, and no control character but tab"
            " (write one in a string as an escape, e.g. \\u000c)"
        )
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SourceTextError(f"not valid TOML: {exc}") from None
    except RecursionError:  # tomllib has no nesting limit
        raise SourceTextError("not valid TOML: nested too deeply") from None


def load_source(source_file: SourceFile) -> Source:
    """Parse and validate one source file; raise SourceError with a precise message."""
    origin = source_file.origin
    if not SOURCE_NAME.match(source_file.name):
        raise SourceError(f"{origin}: the file name must be a source name (letters, digits, '_', '-', '.')")
    try:
        data = source_data(source_file.resource.read_bytes())
    except SourceTextError as exc:
        raise SourceError(f"{origin}: {exc}") from None
    except OSError as exc:
        raise SourceError(f"{origin}: cannot be read: {exc}") from None
    try:
        settings = SourceSettings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_describe_error(error) for error in exc.errors())
        raise SourceError(f"{origin}: {problems}") from None
    if settings.type != "web":
        agent_class, agent_options = _agent_of(origin, settings)
        _check_agent_access(origin, settings, agent_class, agent_options)
        return Source(source_file.name, origin, settings, (), agent_class=agent_class, agent_options=agent_options)
    seeds = list(settings.seeds)
    for name in settings.seed_files:
        try:
            seeds.extend(_read_seed_file(source_file, name))
        except OSError as exc:
            raise SourceError(f"{origin}: key 'seed_files': cannot read {name}: {exc.strerror or exc}") from None
        except ValueError:  # a file name with a NUL character
            raise SourceError(f"{origin}: key 'seed_files': {name!r} is not a valid file name") from None
    if not seeds:
        raise SourceError(f"{origin}: key 'seeds': expected at least one seed URL (in 'seeds' or 'seed_files')")
    if settings.auth and settings.access is None:
        raise SourceError(
            f"{origin}: [[auth]] fetches its documents with credentials, so they are not public: add an [access] table "
            "saying who may read them (allow = [...] or [[access.rules]]; public = true if everyone may)"
        )
    try:
        tls_files = _read_tls_files(source_file, settings.tls)
    except TlsFileError as exc:
        raise SourceError(f"{origin}: [tls]: {exc}") from None
    return Source(
        name=source_file.name,
        origin=origin,
        settings=settings,
        seed_urls=tuple(dict.fromkeys(seeds)),
        tls_files=tls_files,
    )


def _check_agent_access(origin: str, settings: SourceSettings, agent_class: type[Agent], options: BaseModel) -> None:
    """A files source takes who may read a file from the file (its ACL): ``[access]`` is refused
    there; an agent that gives no access with its references needs ``[access]``. An agent gives
    access when its class says so (``Agent.gives_access``) or its options do (a ``gives_access``
    property: a database source with ``access_column``, a mail source with ``readers``)."""
    if settings.type in ("files", "smb") and settings.access is not None:
        acl = "NTFS permissions" if settings.type == "smb" else "POSIX permissions and ACL"
        raise SourceError(f"{origin}: [access] does not apply to a {settings.type} source: each file's {acl} say who may read it")
    if not (agent_class.gives_access or getattr(options, "gives_access", False)) and settings.access is None:
        raise SourceError(
            f"{origin}: the agent of this source ({agent_class.__name__}) does not say who may read its documents: "
            "add an [access] table (public = true, or allow = [...])"
        )


def agent_table(kind: str) -> str:
    """The table of a source's agent options: the type's own (``[files]``), ``[agent_options]`` for
    ``type = "agent"``."""
    return "agent_options" if kind == "agent" else kind


def _agent_of(origin: str, settings: SourceSettings) -> tuple[type[Agent], BaseModel]:
    """The agent class of a source that is not web sites, and its options validated by the
    class's own ``Options`` model (errors named as keys of the type's table)."""
    kind, name = (AGENTS, settings.agent) if settings.type == "agent" else (AGENT_TYPES, settings.type)
    assert name is not None  # checked by SourceSettings
    try:
        agent_class: type[Agent] = kind.load(name, Agent)
    except ImplementationError as exc:
        raise SourceError(f"{origin}: key '{exc.key}': {exc}") from None
    table = agent_table(settings.type)
    try:
        options = agent_class.Options.model_validate(getattr(settings, table) or {})
    except ValidationError as exc:
        problems = "; ".join(_describe_error(error, table, agent_class.Options) for error in exc.errors())
        raise SourceError(f"{origin}: {problems}") from None
    return agent_class, options


def _read_tls_files(source_file: SourceFile, rules: TlsRules) -> TlsFiles:
    """The PEM files of a ``[tls]`` table, relative to the source file's folder, read and checked
    (certificates parsed; an unencrypted key parsed, an encrypted one when the crawl decrypts it)."""

    def read(key: str, name: str | None) -> bytes | None:
        if name is None:
            return None
        target = Path(name).expanduser()
        path = target if target.is_absolute() else _sibling(source_file.resource, name)
        try:
            return path.read_bytes()
        except OSError as exc:
            raise TlsFileError(f"key '{key}': cannot read {name}: {exc.strerror or exc}") from None
        except ValueError:
            raise TlsFileError(f"key '{key}': {name!r} is not a valid file name") from None

    ca_bundle = read("ca_bundle", rules.ca_bundle)
    client_cert = read("client_cert", rules.client_cert)
    client_key = read("client_key", rules.client_key) or client_cert
    encrypted = check_client_files(client_cert, client_key) if client_cert and client_key else False
    return TlsFiles(
        ca_certificates=split_certificates(ca_bundle, "ca_bundle") if ca_bundle is not None else (),
        client_cert=client_cert,
        client_key=client_key,
        key_encrypted=encrypted,
    )


def find_source_files(sources_dir: Path | None) -> dict[str, SourceFile]:
    """All source files by name: packaged ones, then the sources folder's (which override)."""
    found: dict[str, SourceFile] = {}
    packaged = importlib.resources.files("searchcrawl.sources")
    for resource in sorted(packaged.iterdir(), key=lambda r: r.name):
        if resource.name.endswith(".toml"):
            name = resource.name.removesuffix(".toml")
            found[name] = SourceFile(name, f"searchcrawl/sources/{resource.name}", resource)
    if sources_dir is not None:
        if not sources_dir.is_dir():
            raise SourceError(f"SEARCHCRAWL_SOURCES_DIR: {sources_dir} is not a directory")
        for path in sorted(sources_dir.glob("*.toml")):
            name = path.stem
            found[name] = SourceFile(name, str(path), path)
    return found
