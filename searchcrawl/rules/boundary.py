"""Crawl boundary: which URLs belong to a source. Plain logic, no Scrapy.

The boundary of a source is a chain of small checks, built once per source from its seeds and its
scope keys (validated and normalised by ``searchcrawl.config.source.ScopeRules``), and run in
order on every link: the first check that refuses a URL decides. Every decision says which rule
made it, so that the document table and ``scrapy explain`` can tell a user why. The checks
(``Boundary.checks``, each named by the setting it applies) follow Oracle Ultra Search's URL
boundary rules:

1. ``max_url_length``: a URL longer than the maximum URL length (``SEARCHCRAWL_MAX_URL_LENGTH``)
   is excluded, before any parsing.
2. ``url``: a URL that cannot be parsed (an unclosed IPv6 bracket) is excluded.
3. ``scheme``: http and https; file only for a source with file seeds.
4. ``seed_folders``: file URLs stay below the seeds' folders.
5. ``domains``: host suffix rules (``include``/``exclude``; ``oracle.com`` admits
   ``www.oracle.com`` and ``oracle.com``, not ``www.oracle.com.tw`` nor ``myoracle.com``) and host
   prefix rules (``include_prefix``/``exclude_prefix``). Exclusion always overrides inclusion.
   With no include rule at all, a source stays on its seeds' hosts *and ports*.
6. ``ports``: per exact host (``"*"``: every host without a rule of its own), an include list
   or an exclude list, never both. A host's own rule replaces the ``"*"`` rule.
7. ``paths``: per exact host (``"*"``: every host), path prefix include/exclude lists. The
   exclusions of the host and of ``"*"`` both apply; the include list is the host's if it has
   one, else the ``"*"`` one; with no include list every path not excluded is allowed. A path is
   judged as web servers read it (``server_paths``: escapes decoded, ``%uNNNN`` too, and bytes
   that are not UTF-8 in cp1252, slashes merged, ``..`` resolved, ``;`` parameters; for a
   ``case_insensitive`` host in lower and upper case, names as Windows opens them), failing
   closed where servers differ.
8. ``patterns``: regular expressions (searched anywhere in the URL; anchor with ``^``) and
   globs (fnmatch-style, case-sensitive, matching the whole URL). Exclusion overrides inclusion;
   if any include pattern is given, a URL must match one.
9. ``max_depth``: links followed at most this many hops from a seed.
10. ``index_dynamic_pages``: URLs with a query string are excluded unless true. The last check:
    its decision is the verdict on an allowed URL.

Checks 4 to 7 apply to the URLs of their scheme only (file, or http and https).
"""

from __future__ import annotations

import fnmatch
import functools
import posixpath
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable
from urllib.parse import SplitResult, quote, unquote, urlsplit

from searchcrawl.rules.status_codes import Status

DEFAULT_PORTS = {"http": 80, "https": 443}
EVERY_HOST = "*"
# SEARCHCRAWL_MAX_URL_LENGTH's default: Scrapy's URLLENGTH_LIMIT (the old Internet Explorer limit),
# so no URL Scrapy would have requested is refused. Longer URLs are kept out as a scope rule.
MAX_URL_LENGTH = 2083


@dataclass(frozen=True)
class ScopeDecision:
    """A scope decision on one URL: allowed or not, the rule that made it (the text the document
    table keeps and ``scrapy explain`` shows), and the crawler status when excluded."""

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


# -- what the boundary reads of a source's settings ---------------------------------------------
# searchcrawl.config.source.ScopeRules (the scope keys of a source file) is one: it validates and
# normalises the entries (host names in lower case and punycode, path prefixes percent-encoded,
# ports in range, regular expressions compiling), which the checks rely on.


class DomainScope(Protocol):
    """``[domains]``: host suffixes and host prefixes, in lower case, suffixes in punycode."""

    @property
    def include(self) -> Sequence[str]: ...
    @property
    def exclude(self) -> Sequence[str]: ...
    @property
    def include_prefix(self) -> Sequence[str]: ...
    @property
    def exclude_prefix(self) -> Sequence[str]: ...


class PortScope(Protocol):
    """One host's ``[ports]`` rule: exactly one of the two lists is given."""

    @property
    def include(self) -> Sequence[int] | None: ...
    @property
    def exclude(self) -> Sequence[int] | None: ...


class PathScope(Protocol):
    """One host's ``[paths]`` rule: percent-encoded path prefixes; ``case_insensitive`` for a
    server that ignores case (IIS)."""

    @property
    def include(self) -> Sequence[str]: ...
    @property
    def exclude(self) -> Sequence[str]: ...
    @property
    def case_insensitive(self) -> bool: ...


class PatternScope(Protocol):
    """``[patterns]``: regular expressions and globs on the whole URL."""

    @property
    def include_regex(self) -> Sequence[str]: ...
    @property
    def exclude_regex(self) -> Sequence[str]: ...
    @property
    def include_glob(self) -> Sequence[str]: ...
    @property
    def exclude_glob(self) -> Sequence[str]: ...


@runtime_checkable
class Scope(Protocol):
    """The scope keys of a source; ``ports`` and ``paths`` are keyed by normalised host or ``"*"``."""

    @property
    def max_depth(self) -> int: ...
    @property
    def index_dynamic_pages(self) -> bool: ...
    @property
    def domains(self) -> DomainScope: ...
    @property
    def ports(self) -> Mapping[str, PortScope]: ...
    @property
    def paths(self) -> Mapping[str, PathScope]: ...
    @property
    def patterns(self) -> PatternScope: ...


# -- the checks ---------------------------------------------------------------------------------


def _listing(items: Iterable[object], limit: int = 5) -> str:
    texts = [str(item) for item in items]
    shown = ", ".join(texts[:limit])
    return shown + (f" and {len(texts) - limit} more" if len(texts) > limit else "")


def _where(host: str) -> str:
    return 'every host ("*")' if host == EVERY_HOST else host


class ScopeUrl:
    """One URL as the checks read it: its text, then (once the ``url`` check has parsed it) its
    parts, lower-case scheme and, for http(s), normalised host. The ``max_url_length`` check
    comes first and reads the text only, so that a megabyte-long link is never parsed."""

    __slots__ = ("text", "parts", "scheme", "host")
    parts: SplitResult
    scheme: str
    host: str  # "" but for http(s) URLs

    def __init__(self, text: str) -> None:
        self.text = text

    def parse(self) -> None:
        """Parse the text as browsers and Scrapy (w3lib) read it; ValueError if it cannot be."""
        url = self.text
        parts = urlsplit(url)
        if "\\" in url and parts.scheme.lower() in DEFAULT_PORTS:
            # "\" is "/" before the query, so that http://evil.com\@www.example.com/ is judged
            # as the evil.com it is fetched from.
            end = len(url.split("?", 1)[0].split("#", 1)[0])
            parts = urlsplit(url[:end].replace("\\", "/") + url[end:])
        self.parts = parts
        self.scheme = parts.scheme.lower()
        host = ""
        if self.scheme in DEFAULT_PORTS:
            host = parts.hostname or ""
            if host.endswith(".") or not host.isascii():
                host = normalize_host(host)
        self.host = host


class BoundaryCheck(ABC):
    """One concern of the boundary, named by the setting it applies (``scrapy explain`` shows it).

    ``check`` returns a refusal (the first one decides), or the reason the URL passes; or None:
    the check does not apply to the URL (another scheme's), or it passes the URL and ``explain``
    is false (reasons are only needed to explain; the last check always gives one, its verdict).
    """

    name: ClassVar[str]

    @abstractmethod
    def check(self, url: ScopeUrl, depth: int, explain: bool) -> ScopeDecision | None:
        """The decision on ``url``, found ``depth`` links from a seed."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class UrlLengthCheck(BoundaryCheck):
    """A URL longer than ``max_length`` is excluded; it still gets a row (the document table keys
    URLs by hash, whatever their length)."""

    name = "max_url_length"

    def __init__(self, max_length: int) -> None:
        self.max_length = max_length

    def check(self, url: ScopeUrl, depth: int, explain: bool) -> ScopeDecision | None:
        if len(url.text) > self.max_length:
            return ScopeDecision(
                False,
                f"URL is {len(url.text)} characters long (more than SEARCHCRAWL_MAX_URL_LENGTH {self.max_length})",
                Status.URL_TOO_LONG,
            )
        return None


class UrlSyntaxCheck(BoundaryCheck):
    """A URL that cannot be parsed is excluded; the checks after this one read its parts."""

    name = "url"

    def check(self, url: ScopeUrl, depth: int, explain: bool) -> ScopeDecision | None:
        try:
            url.parse()
        except ValueError as exc:  # e.g. an unclosed IPv6 bracket
            return ScopeDecision(False, f"not a valid URL: {exc}", Status.EXCLUDED_DOMAIN)
        return None


_WEB_SCHEMES = {scheme: ScopeDecision(True, f'scheme "{scheme}"') for scheme in DEFAULT_PORTS}
_FILE_SCHEME = ScopeDecision(True, 'scheme "file"')
_NO_FILE_SEEDS = ScopeDecision(False, 'scheme "file" is crawled only by sources with file seeds', Status.EXCLUDED_SCHEME)


class SchemeCheck(BoundaryCheck):
    """http and https; file URLs only for a source with file seeds."""

    name = "scheme"

    def __init__(self, file_seeds: bool) -> None:
        self.file_seeds = file_seeds

    def check(self, url: ScopeUrl, depth: int, explain: bool) -> ScopeDecision | None:
        scheme = url.scheme
        web = _WEB_SCHEMES.get(scheme)
        if web is not None:
            return web if explain else None
        if scheme == "file":
            if not self.file_seeds:
                return _NO_FILE_SEEDS
            return _FILE_SCHEME if explain else None
        return ScopeDecision(
            False,
            f'scheme "{scheme}" is not crawled (http, https, and file below the seeds\' folders)',
            Status.EXCLUDED_SCHEME,
        )


class SeedFolderCheck(BoundaryCheck):
    """File URLs stay below the folders of the file seeds."""

    name = "seed_folders"

    def __init__(self, folders: Sequence[str]) -> None:
        self.folders = tuple(folders)

    def check(self, url: ScopeUrl, depth: int, explain: bool) -> ScopeDecision | None:
        if url.scheme != "file":
            return None
        path = url.parts.path
        if "/." in path or "%2" in path:
            path = remove_dot_segments(path)
        folder = next((folder for folder in self.folders if path.startswith(folder)), None)
        if folder is None:
            folders = f"seed folders: {_listing(self.folders)}" if self.folders else "no file seeds"
            return ScopeDecision(False, f"file URL outside the seeds' folders ({folders})", Status.EXCLUDED_PATH)
        return ScopeDecision(True, f'file path below seed folder "{folder}"') if explain else None


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


class DomainCheck(BoundaryCheck):
    """The host of an http(s) URL: exclusion first; then the include rules, or with none, the
    seeds' hosts (``seed_ports``: the ports of each seed host)."""

    name = "domains"

    def __init__(self, domains: DomainScope, seed_ports: Mapping[str, set[int | None]]) -> None:
        self._include = frozenset(domains.include)
        self._exclude = frozenset(domains.exclude)
        self._include_prefix = tuple(domains.include_prefix)
        self._exclude_prefix = tuple(domains.exclude_prefix)
        self.seed_default = not (self._include or self._include_prefix)
        self.seed_ports = seed_ports
        include_listing = [f"include: {_listing(domains.include)}"] if domains.include else []
        if domains.include_prefix:
            include_listing.append(f"include_prefix: {_listing(domains.include_prefix)}")
        self._include_listing = "; ".join(include_listing)

    def exclusion(self, host: str) -> str | None:
        """The domain exclusion rule that ``host`` (normalised) meets, or None."""
        if self._exclude:
            suffix = _match_suffix(host, self._exclude)
            if suffix is not None:
                return f'domain exclude "{suffix}"'
        if self._exclude_prefix and host.startswith(self._exclude_prefix):
            prefix = next(prefix for prefix in self._exclude_prefix if host.startswith(prefix))
            return f'domain exclude_prefix "{prefix}"'
        return None

    def inclusion(self, host: str) -> str | None:
        """The domain include rule that admits ``host`` (normalised), or None."""
        if self._include:
            suffix = _match_suffix(host, self._include)
            if suffix is not None:
                return f'domain include "{suffix}"'
        if self._include_prefix and host.startswith(self._include_prefix):
            prefix = next(prefix for prefix in self._include_prefix if host.startswith(prefix))
            return f'domain include_prefix "{prefix}"'
        return None

    def names_host(self, host: str) -> bool:
        """Do the domain rules name ``host`` (normalised): a suffix include rule, or with no
        include rule, a seed host? Not an ``include_prefix`` rule: ``intranet.`` matches a label
        under any domain, ``intranet.attacker.test`` too, so it admits pages, never a machine
        that is reached at an internal address (searchcrawl/rules/addresses.py)."""
        if self.exclusion(host) is not None:
            return False
        if self.seed_default:
            return host in self.seed_ports
        return bool(self._include) and _match_suffix(host, self._include) is not None

    def check(self, url: ScopeUrl, depth: int, explain: bool) -> ScopeDecision | None:
        if url.scheme not in DEFAULT_PORTS:
            return None
        host = url.host
        if self._exclude or self._exclude_prefix:
            excluded = self.exclusion(host)
            if excluded is not None:
                return ScopeDecision(False, excluded, Status.EXCLUDED_DOMAIN)
        if self.seed_default:
            if host not in self.seed_ports:
                seeds = _listing(self.seed_ports) if self.seed_ports else "none"
                return ScopeDecision(
                    False,
                    f"host {host or '(none)'} is not a seed host (no domain include rule; seed hosts: {seeds})",
                    Status.EXCLUDED_DOMAIN,
                )
            return ScopeDecision(True, f"seed host {host}") if explain else None
        included = self.inclusion(host)
        if included is None:
            return ScopeDecision(
                False,
                f"no domain include rule matches {host or '(no host)'} ({self._include_listing})",
                Status.EXCLUDED_DOMAIN,
            )
        return ScopeDecision(True, included) if explain else None


class PortCheck(BoundaryCheck):
    """The port of an http(s) URL (the scheme's default if none): the host's own rule, else the
    ``"*"`` rule, else the seeds' ports (``seed_ports``: only when the domain rules have no
    include rule, so that a source stays on its seeds' sites), else every port."""

    name = "ports"

    def __init__(self, ports: Mapping[str, PortScope], seed_ports: Mapping[str, set[int | None]] | None) -> None:
        self._ports = dict(ports)
        self._port_default = self._ports.pop(EVERY_HOST, None)
        self._seed_ports = seed_ports

    def decide(self, host: str, port: int) -> ScopeDecision:
        """The port rules' decision on ``host:port`` (``host`` normalised)."""
        port_rule = self._ports.get(host, self._port_default)
        if port_rule is not None:
            where = _where(host if host in self._ports else EVERY_HOST)
            if port_rule.include is not None:
                if port not in port_rule.include:
                    return ScopeDecision(
                        False,
                        f"port {port} is not in the port include list of {where} (include: {_listing(port_rule.include)})",
                        Status.EXCLUDED_PORT,
                    )
                return ScopeDecision(True, f"port include {port} on {where}")
            assert port_rule.exclude is not None  # validated: one of the two lists
            if port in port_rule.exclude:
                return ScopeDecision(False, f"port exclude {port} on {where}", Status.EXCLUDED_PORT)
            return ScopeDecision(True, f"port {port} is not excluded on {where}")
        seed_ports = self._seed_ports.get(host) if self._seed_ports is not None else None
        if seed_ports is not None:
            if port not in seed_ports:
                ports = _listing(sorted(p for p in seed_ports if p is not None))
                return ScopeDecision(
                    False, f"port {port} is not a seed port of {host} (seed ports: {ports})", Status.EXCLUDED_PORT
                )
            return ScopeDecision(True, f"seed host {host}:{port}")
        return ScopeDecision(True, f"no port rule for {host}: every port allowed")

    def check(self, url: ScopeUrl, depth: int, explain: bool) -> ScopeDecision | None:
        if url.scheme not in DEFAULT_PORTS:
            return None
        try:
            port = url.parts.port or DEFAULT_PORTS[url.scheme]
        except ValueError:
            return ScopeDecision(False, f"invalid port in {url.text}", Status.EXCLUDED_PORT)
        return self.decide(url.host, port)


# -- how the path rules read a path ---------------------------------------------------------------
# A server does not look up the path it is sent as written: nginx, servlet containers (Tomcat,
# Jetty) and IIS decode its escapes, merge repeated slashes, resolve "." and ".." again after
# decoding (so "..%2F" climbs), servlet containers drop ";" path parameters from each segment
# ("/secret;x/" is "/secret/"), IIS reads "\" ("%5C") as "/" and ignores case. IIS (Http.sys) and
# Jetty 9 also decode "%uNNNN" escapes (UTF-16 code units), and read escapes that are not UTF-8
# in the Windows code page (IIS) or ISO-8859-1 (Jetty); Windows opens "secret." and "secret " as
# "secret". The path rules judge the folders a server may map a path onto, so that no spelling
# walks round them.

_DISPLAY_SAFE = "/:@!$&'()*+,;=-._~"
_PARAMETERS = re.compile(r";[^/]*")
_BACKSLASHES = re.compile(r"%5[cC]|\\")
_UTF16_ESCAPES = re.compile(r"(?:%[uU][0-9A-Fa-f]{4})+")
_CODE_UNIT = re.compile(r"[0-9A-Fa-f]{4}")
_NOT_UTF8 = re.compile("[\udc80-\udcff]")  # a byte that is not UTF-8, as errors="surrogateescape" keeps it
# the five bytes cp1252 leaves undefined: Windows reads them as the code points of the same value
_CP1252_UNDEFINED = {0xDC00 + byte: byte for byte in (0x81, 0x8D, 0x8F, 0x90, 0x9D)}
# The readings of a path are remembered (the same links recur on page after page of a site) when
# the path and its readings have at most CACHED_LENGTH characters each in all (ordinary paths: one
# reading, under 200 characters). An entry then holds at most some 4.5 KB (4 bytes a character
# once one is outside the BMP), the cache at most some 40 MB.
CACHED_LENGTH = 512
CACHE_SIZE = 8_192


def _utf16_escapes(match: re.Match[str]) -> str:
    """A run of ``%uNNNN`` escapes as the text they spell, to be decoded once with the other
    escapes: ASCII as ``%XX`` escapes (``%u002F`` is ``%2F``, a "/"; ``%u0025`` a "%", not the
    start of another escape), other characters as they are (a surrogate pair joined), whatever
    the other escapes are decoded as; a lone surrogate as the bytes of no UTF-8 character."""
    units = "".join(chr(int(unit, 16)) for unit in _CODE_UNIT.findall(match[0]))
    text = units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    spelled = []
    for char in text:
        if char < "\x80" or "\ud800" <= char <= "\udfff":
            spelled += [f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass")]
        else:
            spelled.append(char)
    return "".join(spelled)


def _windows_name(segment: str) -> str:
    """A segment as Windows opens it: without its trailing dots and spaces (``secret.`` and
    ``secret%20`` are ``secret``), nor an NTFS stream (``secret::$INDEX_ALLOCATION`` is the folder).
    ``.`` and ``..`` stay; a name of dots and spaces alone (``...``) is nothing, the folder itself."""
    if segment in (".", ".."):
        return segment
    return segment.split(":", 1)[0].rstrip(". ")


def _resolved(segments: Iterable[str]) -> str:
    """The path of ``segments`` (decoded): empty ones dropped (repeated slashes merged), ``.``
    and ``..`` resolved."""
    kept: list[str] = []
    trailing = False
    for segment in segments:
        trailing = segment in ("", ".", "..")
        if segment == "..":
            if kept:
                kept.pop()
        elif segment not in ("", "."):
            kept.append(segment)
    return "/" + "/".join(kept) + ("/" if trailing and kept else "")


def _server_path(path: str, fold_case: bool) -> str:
    """The first reading of ``path`` (its ``;``, ``%5C`` and ``%u`` already taken one way):
    escapes decoded once as UTF-8 (``%2F`` is a "/"), repeated slashes merged, ``.`` and ``..``
    resolved; in lower case with ``fold_case``. Bytes that are not UTF-8 are kept as surrogates."""
    decoded = unquote(path, errors="surrogateescape")
    return _resolved((decoded.lower() if fold_case else decoded).split("/"))


def _decoded_readings(path: str, fold_case: bool) -> list[str]:
    """The readings of ``path`` (its ``;``, ``%5C`` and ``%u`` already taken one way): the first
    (``_server_path``); with bytes that are not UTF-8, escapes decoded as cp1252 too (IIS reads
    the Windows code page, Jetty ISO-8859-1, which cp1252 holds but for C1 controls); with
    ``fold_case`` (Windows), each again with its names as Windows opens them (``_windows_name``)."""
    decoded = unquote(path, errors="surrogateescape")
    texts = [decoded]
    if _NOT_UTF8.search(decoded):
        texts.append(unquote(path, encoding="cp1252", errors="surrogateescape").translate(_CP1252_UNDEFINED))
    readings: list[str] = []
    for text in texts:
        segments = (text.lower() if fold_case else text).split("/")
        readings.append(_resolved(segments))
        if fold_case and (":" in text or "./" in text or " /" in text or text.endswith((".", " "))):
            readings.append(_resolved(map(_windows_name, segments)))
    return readings


def _readings(path: str, fold_case: bool) -> tuple[str, ...]:
    """``server_paths`` computed. Each alternative is taken for the whole path at once, never per
    occurrence, so that a path has at most 2 x 2 x 2 spellings (``%u`` decoded or not, ``;``
    parameters dropped or not, ``%5C`` a "/" or not) x 2 decodings x 2 Windows readings: 32,
    whatever its length (an 8 KB path of them is read in milliseconds)."""
    spellings = [remove_dot_segments(path) if "/." in path or "%2" in path else path]
    if "%u" in path or "%U" in path:
        spellings += [_UTF16_ESCAPES.sub(_utf16_escapes, spelling) for spelling in spellings]
    if ";" in path:
        spellings += [_PARAMETERS.sub("", spelling) for spelling in spellings]
    if any("%5" in spelling or "\\" in spelling for spelling in spellings):
        spellings += [_BACKSLASHES.sub("/", spelling) for spelling in spellings]
    readings = (reading for spelling in dict.fromkeys(spellings) for reading in _decoded_readings(spelling, fold_case))
    return tuple(dict.fromkeys(readings))


@functools.lru_cache(maxsize=CACHE_SIZE)
def _remembered_readings(path: str, fold_case: bool) -> tuple[str, ...] | None:
    """``_readings``, remembered; None (remembered too) when they are too long to keep."""
    readings = _readings(path, fold_case)
    return readings if sum(map(len, readings)) <= CACHED_LENGTH else None


def server_paths(path: str, fold_case: bool = False) -> tuple[str, ...]:
    """The paths a common web server may map ``path`` (as sent: dot segments resolved as RFC
    3986 says, as w3lib and browsers do) onto, for the path rules. Where servers differ, every
    reading is given: a ``;`` starts path parameters (servlet containers) or is a character of
    the name (nginx, Apache); ``%5C`` is a "/" (IIS) or a character of the name; ``%uNNNN`` is a
    UTF-16 code unit (IIS, Jetty) or not an escape; escapes that are not UTF-8 are bytes kept as
    surrogates or cp1252 (IIS, Jetty); with ``fold_case`` (IIS), names are also read without
    trailing dots and spaces. A path without escapes, parameters, dots or repeated slashes is
    read as it is, without splitting it (every link of every page comes here)."""
    if "%" not in path and ";" not in path and "//" not in path and "/." not in path and "\\" not in path:
        if not fold_case:
            return (path,)
        if not (":" in path or "./" in path or " /" in path or path.endswith((".", " "))):
            return (path.lower(),)
    readings = _remembered_readings(path, fold_case) if len(path) <= CACHED_LENGTH else None
    return readings if readings is not None else _readings(path, fold_case)


def _unicode_fold(path: str) -> str:
    """``path`` (in lower case) in upper case, then lower case again: a case-insensitive server
    compares names in upper case, so ``ı`` (dotless i) is an ``i`` and ``ſ`` (long s) an ``s``
    to it, where ``str.lower`` keeps them apart."""
    return path if path.isascii() else path.upper().lower()


def _shown(path: str) -> str:
    """A path as the path rules read it, printable (its characters escaped again)."""
    return quote(path, safe=_DISPLAY_SAFE, errors="surrogateescape")


@dataclass(frozen=True)
class _HostPaths:
    """The path rules that apply to one host: its own and the ``"*"`` ones, merged; each prefix as
    the rules read it (``_server_path``) with the prefix as written. With ``fold_case``, a path
    is also compared in ``_unicode_fold``: an exclusion in either fold excludes it (the
    exclusions hold the folded prefixes too); an include prefix must hold it in both."""

    exclude: tuple[tuple[str, str, str], ...]  # (prefix as read, prefix as written, host of the rule)
    exclude_prefixes: tuple[str, ...]
    include: tuple[tuple[str, str], ...]  # (prefix as read, prefix as written)
    include_prefixes: tuple[str, ...]
    folded_include_prefixes: tuple[str, ...]  # with fold_case, where a fold differs: include prefixes folded
    include_host: str
    fold_case: bool

    def exclusion(self, path: str) -> tuple[str, str, str] | None:
        """(prefix as written, host of the rule, path as compared) of an exclusion ``path`` (as
        read), or with ``fold_case`` its fold, is below."""
        if not self.exclude_prefixes:
            return None
        for read in (path, _unicode_fold(path)) if self.fold_case else (path,):
            if read.startswith(self.exclude_prefixes):
                return next((written, host, read) for prefix, written, host in self.exclude if read.startswith(prefix))
        return None

    def inclusion(self, path: str) -> tuple[str | None, str]:
        """(the include prefix as written ``path`` (as read) is below, or None when it is not;
        the path as compared): with ``fold_case`` its fold must be below a folded prefix too."""
        if not path.startswith(self.include_prefixes):
            return None, path
        if self.folded_include_prefixes or (self.fold_case and not path.isascii()):
            folded = _unicode_fold(path)
            if not folded.startswith(self.folded_include_prefixes or self.include_prefixes):
                return None, folded
        return next(written for read, written in self.include if path.startswith(read)), path


def _written_rules(
    own: PathScope | None, every: PathScope | None, host: str
) -> tuple[list[tuple[str, str]], tuple[str, ...], str]:
    """The exclusions of the host and of every host, as (prefix, the host they are written for),
    and the include prefixes that apply (the host's own, else every host's) with their host."""
    exclude = [(prefix, host) for prefix in own.exclude] if own else []
    exclude += [(prefix, EVERY_HOST) for prefix in every.exclude] if every else []
    if own and own.include:
        return exclude, tuple(own.include), host
    if every and every.include:
        return exclude, tuple(every.include), EVERY_HOST
    return exclude, (), ""


def _host_paths(own: PathScope | None, every: PathScope | None, host: str) -> _HostPaths:
    fold_case = bool(own and own.case_insensitive) or bool(every and every.case_insensitive)
    exclude, include, include_host = _written_rules(own, every, host)
    read_exclude = [(_server_path(prefix, fold_case), prefix, rule_host) for prefix, rule_host in exclude]
    read_include = tuple((_server_path(prefix, fold_case), prefix) for prefix in include)
    folded_include: tuple[str, ...] = ()
    if fold_case:
        read_exclude += [(_unicode_fold(read), written, rule_host) for read, written, rule_host in read_exclude]
        if any(_unicode_fold(read) != read for read, _written in read_include):
            folded_include = tuple(_unicode_fold(read) for read, _written in read_include)
    return _HostPaths(
        tuple(dict.fromkeys(read_exclude)),
        tuple(dict.fromkeys(read for read, _written, _host in read_exclude)),
        read_include,
        tuple(read for read, _written in read_include),
        folded_include,
        include_host,
        fold_case,
    )


class PathCheck(BoundaryCheck):
    """The path of an http(s) URL as servers read it (``server_paths``): the host's rules and the
    ``"*"`` rules. Excluded when any reading is below an exclusion, or any is not below an include
    prefix: where servers differ, the rules fail closed."""

    name = "paths"

    def __init__(self, paths: Mapping[str, PathScope]) -> None:
        rules = dict(paths)
        every = rules.pop(EVERY_HOST, None)
        self._hosts = {host: _host_paths(rule, every, host) for host, rule in rules.items()}
        self._default = _host_paths(None, every, EVERY_HOST) if every else None

    def check(self, url: ScopeUrl, depth: int, explain: bool) -> ScopeDecision | None:
        if url.scheme not in DEFAULT_PORTS:
            return None
        host = url.host
        rules = self._hosts.get(host, self._default)
        if rules is None:
            return ScopeDecision(True, f"no path rule for {host}: every path allowed") if explain else None
        path = url.parts.path or "/"
        readings = server_paths(path, rules.fold_case)
        for reading in readings:
            excluded = rules.exclusion(reading)
            if excluded is not None:
                prefix, rule_host, read = excluded
                read = f" (path {path} read as {_shown(read)})" if read != path else ""
                return ScopeDecision(False, f'path exclude "{prefix}" on {_where(rule_host)}{read}', Status.EXCLUDED_PATH)
        if not rules.include:
            if not explain:
                return None
            return ScopeDecision(True, f"path {path} is not excluded on {host} (no path include rule)")
        included = ""
        for reading in readings:
            inside, read = rules.inclusion(reading)
            if inside is None:
                read = f", read as {_shown(read)}," if read != path else ""
                return ScopeDecision(
                    False,
                    f"path {path}{read} is not below a path include prefix on {_where(rules.include_host)} "
                    f"(include: {_listing(written for _read, written in rules.include)})",
                    Status.EXCLUDED_PATH,
                )
            included = included or inside
        return ScopeDecision(True, f'path include "{included}" on {_where(rules.include_host)}') if explain else None


def _compile_globs(globs: Sequence[str]) -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(fnmatch.translate(glob)), glob) for glob in globs)


_NO_PATTERN_RULES = ScopeDecision(True, "no pattern rules")
_NO_PATTERN_EXCLUDES = ScopeDecision(True, "no pattern rule excludes the URL")


class PatternCheck(BoundaryCheck):
    """Regular expressions and globs on the whole URL, as found; exclusion overrides inclusion."""

    name = "patterns"

    def __init__(self, patterns: PatternScope) -> None:
        self._exclude_regex = tuple((re.compile(rx), rx) for rx in patterns.exclude_regex)
        self._exclude_glob = _compile_globs(patterns.exclude_glob)
        self._include_regex = tuple((re.compile(rx), rx) for rx in patterns.include_regex)
        self._include_glob = _compile_globs(patterns.include_glob)
        self._has_patterns = bool(self._exclude_regex or self._exclude_glob or self._include_regex or self._include_glob)
        include_patterns = [f"include_regex: {_listing(patterns.include_regex)}"] if patterns.include_regex else []
        if patterns.include_glob:
            include_patterns.append(f"include_glob: {_listing(patterns.include_glob)}")
        self._include_patterns = "; ".join(include_patterns)

    def _inclusion(self, url: str) -> str | None:
        for regex, source in self._include_regex:
            if regex.search(url):
                return f'pattern include_regex "{source}"'
        for glob, source in self._include_glob:
            if glob.match(url):
                return f'pattern include_glob "{source}"'
        return None

    def check(self, url: ScopeUrl, depth: int, explain: bool) -> ScopeDecision | None:
        if not self._has_patterns:
            return _NO_PATTERN_RULES if explain else None
        text = url.text
        for regex, source in self._exclude_regex:
            if regex.search(text):
                return ScopeDecision(False, f'pattern exclude_regex "{source}"', Status.EXCLUDED_PATTERN)
        for glob, source in self._exclude_glob:
            if glob.match(text):
                return ScopeDecision(False, f'pattern exclude_glob "{source}"', Status.EXCLUDED_PATTERN)
        if not (self._include_regex or self._include_glob):
            return _NO_PATTERN_EXCLUDES if explain else None
        matched = self._inclusion(text)
        if matched is None:
            return ScopeDecision(False, f"no include pattern matches the URL ({self._include_patterns})", Status.EXCLUDED_PATTERN)
        return ScopeDecision(True, matched) if explain else None


class DepthCheck(BoundaryCheck):
    """Links followed at most ``max_depth`` hops from a seed."""

    name = "max_depth"

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth

    def check(self, url: ScopeUrl, depth: int, explain: bool) -> ScopeDecision | None:
        if depth > self.max_depth:
            return ScopeDecision(False, f"depth {depth} > max_depth {self.max_depth}", Status.EXCLUDED_DEPTH)
        return ScopeDecision(True, f"depth {depth} <= max_depth {self.max_depth}") if explain else None


_DYNAMIC_EXCLUDED = ScopeDecision(False, "query string and index_dynamic_pages is false", Status.EXCLUDED_DYNAMIC)
_DYNAMIC_ALLOWED = ScopeDecision(True, "query string allowed (index_dynamic_pages is true)")
_NO_QUERY = ScopeDecision(True, "no query string")


class DynamicPageCheck(BoundaryCheck):
    """URLs with a query string only if ``index_dynamic_pages``. The last check: it always decides,
    and its decision is the verdict on an allowed URL."""

    name = "index_dynamic_pages"

    def __init__(self, index_dynamic_pages: bool) -> None:
        self.index_dynamic_pages = index_dynamic_pages

    def check(self, url: ScopeUrl, depth: int, explain: bool) -> ScopeDecision:
        if url.parts.query:
            return _DYNAMIC_ALLOWED if self.index_dynamic_pages else _DYNAMIC_EXCLUDED
        return _NO_QUERY


# -- the boundary -------------------------------------------------------------------------------


def _seed_sites(seeds: Iterable[str]) -> tuple[list[str], dict[str, set[int | None]]]:
    """File seeds: their folders. Web seeds: their hosts and ports (the default inclusion)."""
    folders: list[str] = []
    seed_ports: dict[str, set[int | None]] = {}
    for seed in seeds:
        parts = urlsplit(seed)
        scheme = parts.scheme.lower()
        if scheme == "file":
            path = parts.path
            folders.append(path if path.endswith("/") else posixpath.dirname(path).rstrip("/") + "/")
        else:
            try:
                port = parts.port or DEFAULT_PORTS.get(scheme)
            except ValueError:
                port = None
            seed_ports.setdefault(normalize_host(parts.hostname or ""), set()).add(port)
    return list(dict.fromkeys(folders)), seed_ports


class Boundary:
    """The scope of one source: its seeds and its scope keys (``ScopeRules``), as a chain of checks.

    ``check`` runs for every link of every page, so the chain (``checks``) is built, and
    everything in it compiled, here once.
    """

    def __init__(self, seeds: Sequence[str], scope: Scope, max_url_length: int = MAX_URL_LENGTH) -> None:
        if isinstance(seeds, str):
            raise TypeError("seeds must be a sequence of URLs, not one string")
        if not isinstance(scope, Scope):
            raise TypeError(f"Boundary(seeds, scope) takes ScopeRules (which holds max_depth), got {scope!r}")
        self.scope = scope
        folders, seed_ports = _seed_sites(seeds)
        self._domains = DomainCheck(scope.domains, seed_ports)
        self._ports = PortCheck(scope.ports, seed_ports if self._domains.seed_default else None)
        self.checks: tuple[BoundaryCheck, ...] = (
            UrlLengthCheck(max_url_length),
            UrlSyntaxCheck(),
            SchemeCheck(file_seeds=bool(folders)),
            SeedFolderCheck(folders),
            self._domains,
            self._ports,
            PathCheck(scope.paths),
            PatternCheck(scope.patterns),
            DepthCheck(scope.max_depth),
            DynamicPageCheck(scope.index_dynamic_pages),
        )

    @property
    def max_depth(self) -> int:
        return self.scope.max_depth

    def check(self, url: str, depth: int = 0) -> ScopeDecision:
        """Is ``url``, found ``depth`` links from a seed, inside the boundary? The decision names
        the rule that excluded it (or, when allowed, the last check passed, as in ``explain``)."""
        target = ScopeUrl(url)
        verdict = None
        for check in self.checks:
            verdict = check.check(target, depth, False)
            if verdict is not None and not verdict.allowed:
                return verdict
        assert verdict is not None  # the last check always decides
        return verdict

    def trace(self, url: str, depth: int = 0) -> list[tuple[BoundaryCheck, ScopeDecision]]:
        """Each check that said something about ``url``, with what it said, in order, up to the
        first exclusion (a URL over the maximum length: that check alone). The last decision is
        ``check(url, depth)``."""
        target = ScopeUrl(url)
        steps: list[tuple[BoundaryCheck, ScopeDecision]] = []
        for check in self.checks:
            decision = check.check(target, depth, True)
            if decision is not None:
                steps.append((check, decision))
                if not decision.allowed:
                    break
        return steps

    def explain(self, url: str, depth: int = 0) -> list[ScopeDecision]:
        """Every check in order (scheme, domain, port, path, pattern, depth, dynamic page; file
        URLs: scheme, folder, pattern, depth, dynamic page), up to the first exclusion; a URL
        over the maximum length is excluded before them all. The last element is
        ``check(url, depth)``."""
        return [decision for _check, decision in self.trace(url, depth)]

    def explicitly_includes(self, host: str) -> bool:
        """Does a ``domains.include``/``include_prefix`` rule (not the seeds' default) admit
        ``host``, with no domain exclusion overriding it?"""
        host = normalize_host(host)
        if self._domains.exclusion(host) is not None:
            return False
        return self._domains.inclusion(host) is not None

    def off_domains(self, url: str) -> bool:
        """Is ``url`` kept out by the domain rules (``DomainCheck``, as ``check`` applies it: status
        901), whatever its path and depth? Such a URL is never a document of the source."""
        target = ScopeUrl(url)
        try:
            target.parse()
        except ValueError:  # the syntax check's to refuse, not the domains'
            return False
        verdict = self._domains.check(target, 0, False)
        return verdict is not None and not verdict.allowed

    def names_host(self, host: str) -> bool:
        """Do the domain rules name ``host``: a suffix include rule, or with none, a seed host
        (``DomainCheck.names_host``; never an ``include_prefix`` rule)? Such a host may be
        reached at an internal address (searchcrawl/rules/addresses.py): the owner named it."""
        return self._domains.names_host(normalize_host(host))

    def port_decision(self, host: str, port: int) -> ScopeDecision:
        """The port rules' decision on ``host:port`` alone (no domain, path or pattern rule)."""
        return self._ports.decide(normalize_host(host), port)

    def admits_site(self, host: str, port: int) -> bool:
        """Do the domain rules name ``host`` (``names_host``) and the port rules admit ``port`` on
        it? The internal-address guard (searchcrawl/rules/addresses.py) asks this: path and
        pattern rules say nothing about which machines a source may connect to."""
        return self.names_host(host) and self.port_decision(host, port).allowed
