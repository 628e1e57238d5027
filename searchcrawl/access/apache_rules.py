"""Apache httpd's access rules (``Require`` in ``<Location>`` and ``<Directory>`` sections, with
``Alias``) read from its configuration files, as the access tokens of each URL path: what a
WebDAV source served by mod_dav is indexed with (agents/webdav.py), decided as Apache decides.

How Apache 2.4 decides, and how it is read here (docs: "How the sections are merged", mod_authz_core):

- Sections merge in this order, each later one replacing the authorization of the earlier
  (``AuthMerging Off``, the default): the server's own ``Require`` lines (outside any section),
  then ``<Directory>`` sections from the shortest path to the longest (a URL path reaches a
  directory through ``Alias url-path directory``, component by component), then ``<Location>``
  sections in the order of the files. The last one with ``Require`` lines decides.
- ``<Location /dav/hr>`` is a prefix of the URL path in whole segments: it matches ``/dav/hr``
  and ``/dav/hr/x``, not ``/dav/hrx`` (httpd 2.4's location walk; the tests ask a real Apache);
  ``<Directory /srv/dav/hr>`` matches that directory and below.
- Several ``Require`` lines (or a ``<RequireAny>``) grant to any of them: ``all granted``
  (``public``), ``all denied`` (nobody), ``user``/``ldap-user`` names (``user_token``),
  ``group`` names (``group_token``, mod_authz_groupfile), ``ldap-group <DN>`` (``group:<DN>``),
  ``ldap-dn <DN>`` (``user:<DN>``), ``valid-user`` (``authenticated_token``, or no one).

Fail closed: what cannot be read for certain makes the access of the paths it may govern
``unreadable`` (the documents are not indexed, status 927): ``<RequireAll>``, ``<RequireNone>``,
``Require not``, ``Require`` of other kinds (ip, host, env, expr, method), ``AuthMerging``,
the 2.2 directives (``Order``, ``Allow``, ``Deny``, ``Satisfy``), ``AllowOverride`` other than
``None`` (an .htaccess the crawler cannot see), ``<Limit>``/``<LimitExcept>`` that govern GET,
and sections matched by patterns (``<LocationMatch>``, ``<DirectoryMatch>``, ``<Files>``,
``<FilesMatch>``, ``<If>``, ``AliasMatch``) with any of these inside; a path no rule governs
is unreadable too (Apache would grant it: name the file that holds the server's rules).
``<Limit>``/``<LimitExcept>`` that do not govern GET (write rules) are left out: reading is
what the index shows. ``Include`` is not followed: name each file.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import unquote

from searchcrawl.access.tokens import Access, AccessError, Grant

PATTERN_SECTIONS = ("locationmatch", "directorymatch", "files", "filesmatch", "if", "elseif", "else")
AUTHZ = ("require", "authmerging", "order", "allow", "deny", "satisfy", "allowoverride")
_SECTION = re.compile(r"<\s*(/?)\s*([A-Za-z]+)\s*([^>]*)>\s*$")


@dataclass(frozen=True)
class TokenNames:
    """How Apache's names become tokens: a user, a group file's group, and who ``valid-user``
    stands for (None: no one); ``skip``: the crawl's own account, nobody's reader."""

    user_token: str = "user:{id}"
    group_token: str = "group:{id}"
    authenticated_token: str | None = None
    skip: frozenset[str] = frozenset()


@dataclass
class Section:
    """One ``<Location>`` or ``<Directory>`` (or the server's own lines, kind "server") with its
    ``Require`` lines as written, and why it cannot be read for certain, if it cannot."""

    kind: str
    path: str
    where: str  # file:line, for explain-access
    requires: list[str] = field(default_factory=list)
    uncertain: str | None = None

    def matches(self, url_path: str, aliases: list[tuple[str, str]], document_root: str | None = None) -> bool:
        if self.kind == "server":
            return True
        if self.kind == "location":  # whole segments (httpd's ap_location_walk): /board is not /boardroom
            return url_path.startswith(self.path) and (
                self.path.endswith("/") or len(url_path) == len(self.path) or url_path[len(self.path)] == "/"
            )
        directory = filesystem_path(url_path, aliases, document_root)
        return directory is not None and _inside(directory, self.path)


@dataclass
class ApacheRules:
    """The sections of the files read, in Apache's merge order's terms; ``uncertain``: rules
    matched by patterns, which could govern any path."""

    sections: list[Section] = field(default_factory=list)
    aliases: list[tuple[str, str]] = field(default_factory=list)  # (url-path, directory)
    document_root: str | None = None
    uncertain: list[str] = field(default_factory=list)

    def deciding(self, url_path: str) -> Section | None:
        """The section whose ``Require`` lines decide for ``url_path`` (None: no rule)."""
        path = normal_path(url_path)
        server = [s for s in self.sections if s.kind == "server" and (s.requires or s.uncertain)]
        directories = sorted(
            (
                s
                for s in self.sections
                if s.kind == "directory" and (s.requires or s.uncertain) and s.matches(path, self.aliases, self.document_root)
            ),
            key=lambda s: len(s.path.rstrip("/")),
        )
        locations = [
            s
            for s in self.sections
            if s.kind == "location" and (s.requires or s.uncertain) and s.matches(path, self.aliases, self.document_root)
        ]
        merged = [*server, *directories, *locations]
        return merged[-1] if merged else None

    def access_of(self, url_path: str, names: TokenNames) -> tuple[Access | None, str | None]:
        """``url_path``'s access as Apache decides it; (None, why) when it cannot be read for certain."""
        if self.uncertain:
            return None, f"Apache's rules hold what the crawler cannot read for certain ({self.uncertain[0]})"
        section = self.deciding(url_path)
        if section is None:
            return None, f"no Require in the Apache files named governs {url_path[:200]}"
        if section.uncertain:
            return None, f"the Apache rule that governs it cannot be read for certain ({section.uncertain})"
        allow: list[Grant] = []
        origin = (
            f"Apache {section.where}: <{section.kind.title()} {section.path}>"
            if section.kind != "server"
            else f"Apache {section.where}"
        )
        try:
            for line in section.requires:
                allow.extend(Grant.of(token, f"{origin} Require {line}") for token in _tokens(line, names))
        except (AccessError, ValueError) as error:
            return None, f"an Apache rule cannot be read for certain ({error})"
        return Access.of(allow, name=f"Apache rules of {url_path[:200]}"), None


def _tokens(line: str, names: TokenNames) -> list[str]:
    kind, _, rest = line.partition(" ")
    kind, rest = kind.lower(), rest.strip()
    if kind == "all":
        if rest.lower() == "granted":
            return ["public"]
        if rest.lower() == "denied":
            return []
    elif kind == "valid-user":
        return [names.authenticated_token] if names.authenticated_token else []
    elif kind in ("user", "ldap-user"):
        return [names.user_token.replace("{id}", name) for name in _words(rest) if name not in names.skip]
    elif kind == "group":
        return [names.group_token.replace("{id}", name) for name in _words(rest)]
    elif kind == "ldap-group":
        return [f"group:{_unquoted(rest)}"]
    elif kind == "ldap-dn":
        return [f"user:{_unquoted(rest)}"]
    raise ValueError(f"Require {line[:100]} is not read")


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        raise ValueError(f"{text[:100]!r} is not a list of names") from None


def _unquoted(text: str) -> str:
    return text[1:-1] if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'" else text


def normal_path(url_path: str) -> str:
    """A URL path as Apache matches it: percent-decoded, ``.`` and ``..`` resolved, slashes merged."""
    path = unquote(url_path.split("?", 1)[0])
    normal = posixpath.normpath("/" + path.lstrip("/"))
    return normal + "/" if path.endswith("/") and normal != "/" else normal


def filesystem_path(url_path: str, aliases: list[tuple[str, str]], document_root: str | None = None) -> str | None:
    """The path ``url_path`` reaches through the first Alias whose URL path is a whole prefix of
    it (component by component), else under the DocumentRoot; None when neither is known."""
    for url_prefix, directory in aliases:
        prefix = url_prefix.rstrip("/")
        if url_path == prefix or url_path.startswith(prefix + "/"):
            return posixpath.normpath(directory.rstrip("/") + "/" + url_path[len(prefix) :].lstrip("/"))
    if document_root is not None:
        return posixpath.normpath(document_root.rstrip("/") + "/" + url_path.lstrip("/"))
    return None


def _inside(path: str, directory: str) -> bool:
    directory = directory.rstrip("/") or "/"
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def read_rules(files: Iterable[tuple[str, str]]) -> ApacheRules:
    """The rules of Apache configuration files, each (name, text), in the order Apache reads them."""
    rules = ApacheRules()
    server = Section("server", "", "server configuration")
    rules.sections.append(server)
    for name, text in files:
        _read(name, text, rules, server)
    return rules


def _lines(text: str) -> Iterable[tuple[int, str]]:
    """Logical lines (a trailing backslash continues one), without comments and blanks."""
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = (pending + line).strip(), ""
        if line and not line.startswith("#"):
            yield start, line


def _read(name: str, text: str, rules: ApacheRules, server: Section) -> None:
    reader = _ConfigReader(rules, server)
    for number, line in _lines(text):
        where = f"{name}:{number}"
        opened = _SECTION.match(line)
        if opened:
            reader.section(opened.group(1) == "/", opened.group(2), _unquoted(opened.group(3).strip()), where)
        else:
            directive, _, rest = line.partition(" ")
            reader.directive(directive.lower(), rest.strip(), where)


class _ConfigReader:
    """One file's sections as they open and close, and the directives read into them."""

    def __init__(self, rules: ApacheRules, server: Section) -> None:
        self.rules, self.server = rules, server
        self.stack: list[tuple[str, Section | None]] = []  # (section name, the section its lines fill)

    @property
    def current(self) -> Section | None:
        return self.stack[-1][1] if self.stack else self.server

    @property
    def in_section(self) -> bool:
        return any(kind in ("location", "directory") for kind, _ in self.stack)

    def section(self, closing: bool, written: str, argument: str, where: str) -> None:
        kind = written.lower()
        if closing:
            if self.stack and self.stack[-1][0] == kind:
                self.stack.pop()
            return
        current = self.current
        if kind in ("location", "directory") and not self.in_section:
            path = normal_path(argument) if kind == "location" else posixpath.normpath(argument)
            section = Section(kind, path, where)
            self.rules.sections.append(section)
            self.stack.append((kind, section))
        elif kind == "requireany":
            self.stack.append((kind, current))
        elif kind in ("requireall", "requirenone"):
            _uncertain(current, self.rules, f"<{written}> at {where}")
            self.stack.append((kind, current))
        elif kind in ("limit", "limitexcept"):
            governs_get = ("GET" in {method.upper() for method in argument.split()}) == (kind == "limit")
            if governs_get:
                _uncertain(current, self.rules, f"<{written} {argument}> governs reading, at {where}")
            self.stack.append((kind, current if governs_get else None))
        elif kind in PATTERN_SECTIONS or kind in ("location", "directory"):
            self.stack.append((kind, _PatternSection(f"<{written} {argument[:80]}> at {where}")))
        else:  # <VirtualHost>, <IfModule> ...: their lines count where they stand
            self.stack.append((kind, current))

    def directive(self, directive: str, rest: str, where: str) -> None:
        if directive in ("alias", "documentroot") and not self.in_section:
            parts = _words(rest)
            if directive == "alias" and len(parts) == 2:
                self.rules.aliases.append((normal_path(parts[0]), posixpath.normpath(parts[1])))
            elif directive == "documentroot" and len(parts) == 1:
                self.rules.document_root = posixpath.normpath(parts[0])
            return
        if directive in ("aliasmatch", "scriptaliasmatch"):
            self.rules.uncertain.append(f"{directive} at {where}")
            return
        target = self.current
        if directive not in AUTHZ or target is None:
            return  # a directive that is not about reading, or one in a <Limit> of writes
        if isinstance(target, _PatternSection):
            self.rules.uncertain.append(target.where)
        elif directive == "require" and not rest.lower().startswith("not "):
            target.requires.append(rest)
        elif directive == "allowoverride" and rest.lower() == "none":
            return
        else:
            _uncertain(target, self.rules, f"{directive} {rest[:40]} at {where}".replace("  ", " "))


class _PatternSection(Section):
    """A section matched by a pattern: any authorization inside it makes every path uncertain."""

    def __init__(self, where: str) -> None:
        super().__init__("pattern", "", where)


def _uncertain(section: Section | None, rules: ApacheRules, why: str) -> None:
    if section is None:
        return
    if isinstance(section, _PatternSection):
        rules.uncertain.append(section.where)
    elif section.uncertain is None:
        section.uncertain = why
