"""Crawl boundary: which URLs belong to a source. Plain logic, no Scrapy.

The scope keys of a source file (``ScopeRules``) follow Oracle Ultra Search's URL boundary rules:

- ``[domains]``: host suffix rules (``include``/``exclude``; ``oracle.com`` admits
  ``www.oracle.com`` and ``oracle.com``, not ``www.oracle.com.tw`` nor ``myoracle.com``) and host
  prefix rules (``include_prefix``/``exclude_prefix``). Exclusion always overrides inclusion.
  With no include rule at all, a source stays on its seeds' hosts *and ports*.
- ``[ports]``: per exact host (``"*"``: every host without a rule of its own), an include list
  or an exclude list, never both. A host's own rule replaces the ``"*"`` rule.
- ``[paths]``: per exact host (``"*"``: every host), path prefix include/exclude lists. The
  exclusions of the host and of ``"*"`` both apply; the include list is the host's if it has
  one, else the ``"*"`` one; with no include list every path not excluded is allowed.
- ``[patterns]``: regular expressions (searched anywhere in the URL; anchor with ``^``) and
  globs (fnmatch-style, case-sensitive, matching the whole URL). Exclusion overrides inclusion;
  if any include pattern is given, a URL must match one.
- ``max_depth``: links followed at most this many hops from a seed.
- ``index_dynamic_pages``: URLs with a query string are excluded unless true.

File URLs stay below the seeds' folders. Before all of these, a URL longer than the maximum URL
length (``SEARCHCRAWL_MAX_URL_LENGTH``) is excluded. Every decision says which rule made it, so
that the document table and ``scrapy explain`` can tell a user why.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from searchcrawl.rules.status_codes import Status

DEFAULT_PORTS = {"http": 80, "https": 443}
EVERY_HOST = "*"
# SEARCHCRAWL_MAX_URL_LENGTH's default: Scrapy's URLLENGTH_LIMIT (the old Internet Explorer limit),
# so no URL Scrapy would have requested is refused. Longer URLs are kept out as a scope rule.
MAX_URL_LENGTH = 2083

_CONFIG = ConfigDict(extra="forbid", frozen=True, strict=True)
# Characters left as they are in a path prefix; anything else (non-ASCII, spaces) is
# percent-encoded as UTF-8, the way w3lib canonicalises the URLs the prefix is compared with.
_PATH_SAFE = "/:@!$&'()*+,;=-._~%"


@dataclass(frozen=True)
class Decision:
    allowed: bool
    rule: str
    status: Status | None = None  # the crawler code when excluded


def host_port(url: str) -> tuple[str, str, int | None]:
    """(scheme, lower-case host, port with the scheme's default filled in)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or DEFAULT_PORTS.get(scheme)


def normalize_host(host: str) -> str:
    """A host as the boundary compares it: lower case, no IPv6 brackets, no trailing dot,
    internationalised names in their ASCII (punycode) form."""
    host = host.strip().lower().strip("[]")
    if host.endswith("."):
        host = host[:-1]
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            pass
    return host


_DOT_SEGMENTS = {".": ".", "%2e": ".", "..": "..", ".%2e": "..", "%2e.": "..", "%2e%2e": ".."}


def remove_dot_segments(path: str) -> str:
    """``path`` with its ``.`` and ``..`` segments resolved (RFC 3986, also percent-encoded), so
    that ``/docs/../private/`` meets the path rules of ``/private/``, as the server will."""
    segments = path.split("/")
    output: list[str] = []
    for segment in segments:
        dots = _DOT_SEGMENTS.get(segment.lower())
        if dots == "..":
            if len(output) > 1:
                output.pop()
        elif dots is None:
            output.append(segment)
    resolved = "/".join(output)
    if segments[-1].lower() in _DOT_SEGMENTS:
        resolved += "/"
    return resolved or "/"


# -- the scope keys of a source file ------------------------------------------------------------


def _known_keys(model: type[BaseModel], data: Any) -> Any:
    """Reject an unknown key with a message listing the known ones (nested tables)."""
    if isinstance(data, dict):
        unknown = [key for key in data if key not in model.model_fields]
        if unknown:
            known = ", ".join(model.model_fields)
            raise ValueError(f"unknown key {unknown[0]!r} (known keys: {known})")
    return data


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


class _RuleTable(BaseModel):
    """A table of rules in a source file; an unknown key is named with the table's known keys."""

    model_config = _CONFIG

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: Any) -> Any:
        return _known_keys(cls, data)


class DomainRules(_RuleTable):
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


class PortRule(_RuleTable):
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


class PathRule(_RuleTable):
    """One host's ``[paths]`` rule: path prefix include and exclude lists."""

    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)

    @field_validator("include", "exclude")
    @classmethod
    def _path_prefixes(cls, prefixes: list[str]) -> list[str]:
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


class PatternRules(_RuleTable):
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


class ScopeRules(BaseModel):
    """The scope keys of a source file, with their defaults (top-level keys of the TOML file)."""

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


# -- the boundary -------------------------------------------------------------------------------


def _listing(items: Iterable[object], limit: int = 5) -> str:
    items = [str(item) for item in items]
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _where(host: str) -> str:
    return 'every host ("*")' if host == EVERY_HOST else host


def _match_suffix(host: str, suffixes: frozenset[str]) -> str | None:
    """The longest entry of ``suffixes`` that ``host`` is or ends with on a label boundary."""
    if host in suffixes:
        return host
    if not host or host[-1].isdigit() or ":" in host:  # an IP address: exact matches only
        return None
    dot = host.find(".")
    while dot != -1:
        rest = host[dot + 1 :]
        if rest in suffixes:
            return rest
        dot = host.find(".", dot + 1)
    return None


@dataclass(frozen=True)
class _PathCheck:
    """The path rules that apply to one host: its own and the ``"*"`` ones, merged."""

    exclude: tuple[tuple[str, str], ...]  # (prefix, host the rule was given for)
    exclude_prefixes: tuple[str, ...]
    include: tuple[str, ...]
    include_host: str


def _path_check(own: PathRule | None, every: PathRule | None, host: str) -> _PathCheck:
    exclude = [(prefix, host) for prefix in own.exclude] if own else []
    exclude += [(prefix, EVERY_HOST) for prefix in every.exclude] if every else []
    if own and own.include:
        include, include_host = tuple(own.include), host
    elif every and every.include:
        include, include_host = tuple(every.include), EVERY_HOST
    else:
        include, include_host = (), ""
    return _PathCheck(tuple(exclude), tuple(prefix for prefix, _ in exclude), include, include_host)


def _compile_globs(globs: list[str]) -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(fnmatch.translate(glob)), glob) for glob in globs)


class Boundary:
    """The scope of one source: its seeds and its ``ScopeRules``.

    ``check`` runs for every link of every page, so everything is compiled here once.
    """

    def __init__(self, seeds: Sequence[str], rules: ScopeRules, max_url_length: int = MAX_URL_LENGTH) -> None:
        if isinstance(seeds, str):
            raise TypeError("seeds must be a sequence of URLs, not one string")
        if not isinstance(rules, ScopeRules):
            raise TypeError(f"Boundary(seeds, rules) takes ScopeRules (which holds max_depth), got {rules!r}")
        self.rules = rules
        self._max_url_length = max_url_length
        self._max_depth = rules.max_depth
        self._dynamic = rules.index_dynamic_pages

        # File seeds: their folders. Web seeds: their hosts and ports (the default inclusion).
        self._folders: list[str] = []
        self._seed_ports: dict[str, set[int | None]] = {}
        for seed in seeds:
            parts = urlsplit(seed)
            scheme = parts.scheme.lower()
            if scheme == "file":
                path = parts.path
                self._folders.append(path if path.endswith("/") else posixpath.dirname(path).rstrip("/") + "/")
            else:
                try:
                    port = parts.port or DEFAULT_PORTS.get(scheme)
                except ValueError:
                    port = None
                self._seed_ports.setdefault(normalize_host(parts.hostname or ""), set()).add(port)
        self._folders = list(dict.fromkeys(self._folders))

        domains = rules.domains
        self._include = frozenset(domains.include)
        self._exclude = frozenset(domains.exclude)
        self._include_prefix = tuple(domains.include_prefix)
        self._exclude_prefix = tuple(domains.exclude_prefix)
        self._seed_default = not (self._include or self._include_prefix)
        include_listing = [f"include: {_listing(domains.include)}"] if domains.include else []
        if domains.include_prefix:
            include_listing.append(f"include_prefix: {_listing(domains.include_prefix)}")
        self._include_listing = "; ".join(include_listing)

        self._ports = dict(rules.ports)
        self._port_default = self._ports.pop(EVERY_HOST, None)

        paths = dict(rules.paths)
        every = paths.pop(EVERY_HOST, None)
        self._paths = {host: _path_check(rule, every, host) for host, rule in paths.items()}
        self._path_default = _path_check(None, every, EVERY_HOST) if every else None

        patterns = rules.patterns
        self._exclude_regex = tuple((re.compile(rx), rx) for rx in patterns.exclude_regex)
        self._exclude_glob = _compile_globs(patterns.exclude_glob)
        self._include_regex = tuple((re.compile(rx), rx) for rx in patterns.include_regex)
        self._include_glob = _compile_globs(patterns.include_glob)
        self._has_patterns = bool(self._exclude_regex or self._exclude_glob or self._include_regex or self._include_glob)
        include_patterns = [f"include_regex: {_listing(patterns.include_regex)}"] if patterns.include_regex else []
        if patterns.include_glob:
            include_patterns.append(f"include_glob: {_listing(patterns.include_glob)}")
        self._include_patterns = "; ".join(include_patterns)

    @property
    def max_depth(self) -> int:
        return self._max_depth

    def check(self, url: str, depth: int = 0) -> Decision:
        """Is ``url``, found ``depth`` links from a seed, inside the boundary? The decision names
        the rule that excluded it (or, when allowed, the last check passed, as in ``explain``)."""
        return self._evaluate(url, depth, None)

    def explain(self, url: str, depth: int = 0) -> list[Decision]:
        """Every check in order (scheme, domain, port, path, pattern, depth, dynamic page; file
        URLs: scheme, folder, pattern, depth, dynamic page), up to the first exclusion; a URL
        over the maximum length is excluded before them all. The last element is
        ``check(url, depth)``."""
        trace: list[Decision] = []
        trace.append(self._evaluate(url, depth, trace.append))
        return trace

    def explicitly_includes(self, host: str) -> bool:
        """Does a ``domains.include``/``include_prefix`` rule (not the seeds' default) admit
        ``host``, with no domain exclusion overriding it?"""
        host = normalize_host(host)
        if self._domain_exclusion(host) is not None:
            return False
        return self._domain_inclusion(host) is not None

    def includes_host(self, host: str) -> bool:
        """Do the domain rules admit ``host``: an include rule, or with none, a seed host?

        The redirect guard lets a temporary redirect reach such a host even when it is internal
        (and outside the boundary by a port, path or pattern rule): the source's owner named it.
        """
        host = normalize_host(host)
        if self._domain_exclusion(host) is not None:
            return False
        if self._include or self._include_prefix:
            return self._domain_inclusion(host) is not None
        return host in self._seed_ports

    def port_decision(self, host: str, port: int) -> Decision:
        """The port rules' decision on ``host:port`` alone (no domain, path or pattern rule)."""
        host = normalize_host(host)
        seed_ports = self._seed_ports.get(host) if self._seed_default else None
        return self._port_decision(host, port, seed_ports)

    def admits_site(self, host: str, port: int) -> bool:
        """Do the domain rules admit ``host`` (as ``includes_host``) and the port rules ``port``
        on it? The internal-address guard (searchcrawl/rules/addresses.py) asks this: path and pattern
        rules say nothing about which machines a source may connect to."""
        return self.includes_host(host) and self.port_decision(host, port).allowed

    # -- the checks -----------------------------------------------------------------------------

    def _domain_exclusion(self, host: str) -> str | None:
        if self._exclude:
            suffix = _match_suffix(host, self._exclude)
            if suffix is not None:
                return f'domain exclude "{suffix}"'
        if self._exclude_prefix and host.startswith(self._exclude_prefix):
            prefix = next(prefix for prefix in self._exclude_prefix if host.startswith(prefix))
            return f'domain exclude_prefix "{prefix}"'
        return None

    def _domain_inclusion(self, host: str) -> str | None:
        if self._include:
            suffix = _match_suffix(host, self._include)
            if suffix is not None:
                return f'domain include "{suffix}"'
        if self._include_prefix and host.startswith(self._include_prefix):
            prefix = next(prefix for prefix in self._include_prefix if host.startswith(prefix))
            return f'domain include_prefix "{prefix}"'
        return None

    def _pattern_inclusion(self, url: str) -> str | None:
        for regex, source in self._include_regex:
            if regex.search(url):
                return f'pattern include_regex "{source}"'
        for glob, source in self._include_glob:
            if glob.match(url):
                return f'pattern include_glob "{source}"'
        return None

    def _port_decision(self, host: str, port: int, seed_ports: set[int | None] | None) -> Decision:
        """The port rules on ``host:port``: the host's own rule, else the ``"*"`` rule, else the
        seeds' ports (``seed_ports``, default inclusion only), else every port."""
        port_rule = self._ports.get(host, self._port_default)
        if port_rule is not None:
            where = _where(host if host in self._ports else EVERY_HOST)
            if port_rule.include is not None:
                if port not in port_rule.include:
                    return Decision(
                        False,
                        f"port {port} is not in the port include list of {where} (include: {_listing(port_rule.include)})",
                        Status.EXCLUDED_PORT,
                    )
                return Decision(True, f"port include {port} on {where}")
            assert port_rule.exclude is not None
            if port in port_rule.exclude:
                return Decision(False, f"port exclude {port} on {where}", Status.EXCLUDED_PORT)
            return Decision(True, f"port {port} is not excluded on {where}")
        if seed_ports is not None:
            if port not in seed_ports:
                ports = _listing(sorted(p for p in seed_ports if p is not None))
                return Decision(False, f"port {port} is not a seed port of {host} (seed ports: {ports})", Status.EXCLUDED_PORT)
            return Decision(True, f"seed host {host}:{port}")
        return Decision(True, f"no port rule for {host}: every port allowed")

    def _evaluate(self, url: str, depth: int, passed: Callable[[Decision], None] | None) -> Decision:
        """The decision on ``url``; each check passed before it is given to ``passed``."""
        # First, before any parsing: a hostile page's megabyte-long link costs one comparison.
        # It still gets a row (the document table keys URLs by hash, whatever their length).
        if len(url) > self._max_url_length:
            return Decision(
                False,
                f"URL is {len(url)} characters long (more than SEARCHCRAWL_MAX_URL_LENGTH {self._max_url_length})",
                Status.URL_TOO_LONG,
            )
        try:
            parts = urlsplit(url)
            if "\\" in url and parts.scheme.lower() in DEFAULT_PORTS:
                # As browsers and Scrapy (w3lib) read it: "\" is "/" before the query, so that
                # http://evil.com\@www.example.com/ is judged as the evil.com it is fetched from.
                end = len(url.split("?", 1)[0].split("#", 1)[0])
                parts = urlsplit(url[:end].replace("\\", "/") + url[end:])
        except ValueError as exc:  # e.g. an unclosed IPv6 bracket
            return Decision(False, f"not a valid URL: {exc}", Status.EXCLUDED_DOMAIN)
        scheme = parts.scheme.lower()

        if scheme == "file":
            if not self._folders:
                return Decision(False, 'scheme "file" is crawled only by sources with file seeds', Status.EXCLUDED_SCHEME)
            if passed:
                passed(Decision(True, 'scheme "file"'))
            path = parts.path
            if "/." in path or "%2" in path:
                path = remove_dot_segments(path)
            folder = next((folder for folder in self._folders if path.startswith(folder)), None)
            if folder is None:
                folders = f"seed folders: {_listing(self._folders)}" if self._folders else "no file seeds"
                return Decision(False, f"file URL outside the seeds' folders ({folders})", Status.EXCLUDED_PATH)
            if passed:
                passed(Decision(True, f'file path below seed folder "{folder}"'))

        elif scheme in DEFAULT_PORTS:
            if passed:
                passed(Decision(True, f'scheme "{scheme}"'))
            host = parts.hostname or ""
            if host.endswith(".") or not host.isascii():
                host = normalize_host(host)

            # Domain: exclusion first; then the include rules, or the seeds' hosts.
            if self._exclude or self._exclude_prefix:
                excluded = self._domain_exclusion(host)
                if excluded is not None:
                    return Decision(False, excluded, Status.EXCLUDED_DOMAIN)
            seed_ports = None
            if self._seed_default:
                seed_ports = self._seed_ports.get(host)
                if seed_ports is None:
                    seeds = _listing(self._seed_ports) if self._seed_ports else "none"
                    return Decision(
                        False,
                        f"host {host or '(none)'} is not a seed host (no domain include rule; seed hosts: {seeds})",
                        Status.EXCLUDED_DOMAIN,
                    )
                if passed:
                    passed(Decision(True, f"seed host {host}"))
            else:
                included = self._domain_inclusion(host)
                if included is None:
                    return Decision(
                        False,
                        f"no domain include rule matches {host or '(no host)'} ({self._include_listing})",
                        Status.EXCLUDED_DOMAIN,
                    )
                if passed:
                    passed(Decision(True, included))

            # Port: the host's own rule, else the "*" rule, else the seeds' ports (default
            # inclusion only), else every port.
            try:
                port = parts.port or DEFAULT_PORTS[scheme]
            except ValueError:
                return Decision(False, f"invalid port in {url}", Status.EXCLUDED_PORT)
            port_decision = self._port_decision(host, port, seed_ports)
            if not port_decision.allowed:
                return port_decision
            if passed:
                passed(port_decision)

            # Path: the host's rules and the "*" rules.
            path_check = self._paths.get(host, self._path_default)
            if path_check is not None:
                path = parts.path or "/"
                if "/." in path or "%2" in path:
                    path = remove_dot_segments(path)
                if path_check.exclude_prefixes and path.startswith(path_check.exclude_prefixes):
                    prefix, rule_host = next(rule for rule in path_check.exclude if path.startswith(rule[0]))
                    return Decision(False, f'path exclude "{prefix}" on {_where(rule_host)}', Status.EXCLUDED_PATH)
                if path_check.include:
                    if not path.startswith(path_check.include):
                        return Decision(
                            False,
                            f"path {path} is not below a path include prefix on {_where(path_check.include_host)} "
                            f"(include: {_listing(path_check.include)})",
                            Status.EXCLUDED_PATH,
                        )
                    if passed:
                        prefix = next(prefix for prefix in path_check.include if path.startswith(prefix))
                        passed(Decision(True, f'path include "{prefix}" on {_where(path_check.include_host)}'))
                elif passed:
                    passed(Decision(True, f"path {path} is not excluded on {host} (no path include rule)"))
            elif passed:
                passed(Decision(True, f"no path rule for {host}: every path allowed"))

        else:
            return Decision(
                False,
                f'scheme "{scheme}" is not crawled (http, https, and file below the seeds\' folders)',
                Status.EXCLUDED_SCHEME,
            )

        # Patterns, on the whole URL.
        if self._has_patterns:
            for regex, source in self._exclude_regex:
                if regex.search(url):
                    return Decision(False, f'pattern exclude_regex "{source}"', Status.EXCLUDED_PATTERN)
            for glob, source in self._exclude_glob:
                if glob.match(url):
                    return Decision(False, f'pattern exclude_glob "{source}"', Status.EXCLUDED_PATTERN)
            if self._include_regex or self._include_glob:
                matched = self._pattern_inclusion(url)
                if matched is None:
                    return Decision(
                        False, f"no include pattern matches the URL ({self._include_patterns})", Status.EXCLUDED_PATTERN
                    )
                if passed:
                    passed(Decision(True, matched))
            elif passed:
                passed(Decision(True, "no pattern rule excludes the URL"))
        elif passed:
            passed(Decision(True, "no pattern rules"))

        # Depth.
        if depth > self._max_depth:
            return Decision(False, f"depth {depth} > max_depth {self._max_depth}", Status.EXCLUDED_DEPTH)
        if passed:
            passed(Decision(True, f"depth {depth} <= max_depth {self._max_depth}"))

        # Dynamic pages: the last check, so its decision is the verdict on an allowed URL.
        if parts.query:
            if not self._dynamic:
                return Decision(False, "query string and index_dynamic_pages is false", Status.EXCLUDED_DYNAMIC)
            return Decision(True, "query string allowed (index_dynamic_pages is true)")
        return Decision(True, "no query string")
