"""Apache httpd's access rules (``Require`` in ``<Location>`` and ``<Directory>`` sections, with
``Alias`` and ``DocumentRoot``) read from its configuration files, as the access tokens of each
URL path: what a WebDAV source served by mod_dav is indexed with (agents/webdav.py), decided as
httpd 2.4 decides (core.c, request.c, mod_authz_core.c), and refused wherever it cannot be.

How Apache decides, and how it is read here:

- The server that answers is the ``<VirtualHost>`` for the root's port whose ``ServerName`` or
  ``ServerAlias`` is the root's host, else the first for that port (httpd's default), else the
  main server; the other virtual hosts' lines are not read. Its sections apply after the main
  server's of the same kind, its Aliases before.
- Sections merge in this order, each later one replacing the authorization of the earlier
  (``AuthMerging Off``, the default): ``<Directory>`` sections from the fewest path components
  to the most (a URL path reaches a directory through ``Alias``, else ``DocumentRoot``), then
  ``<Location>`` sections in the order of the files. The last one with ``Require`` lines decides.
- ``<Location /dav/hr>`` matches the decoded, normalised URL path in whole segments
  (``/dav/hr``, ``/dav/hr/x``, not ``/dav/hrx``: ap_location_walk), its argument taken verbatim
  (``%20`` in it never matches); ``<Directory /srv/dav/hr>`` that directory and below.
- ``Require`` lines of a section (or of a ``<RequireAny>``) grant to any of them: ``all granted``
  (``public``), ``all denied`` (nobody), ``user``/``ldap-user`` names (``user_token``),
  ``group`` names of a group file (``group_token``: none by default, a group file's names are
  not the directory's), ``ldap-group <DN>`` (``member:<DN>``: mod_authnz_ldap compares the
  group's member and uniqueMember with the user's DN, and follows only groupOfNames and
  groupOfUniqueNames in it, access/directory.py), ``ldap-dn <DN>`` (``user:<DN>``),
  ``valid-user`` (``authenticated_token``, or no one).
- ``<Files>``, ``<FilesMatch>``, ``<LocationMatch>`` and ``<DirectoryMatch>`` whose only rule is
  ``Require all denied`` (Debian's ``<FilesMatch "^\\.ht">``) refuse the paths they match.

Fail closed: whatever else could change the answer makes the paths it may govern unreadable (the
documents are not indexed, status 927), whichever section decides: ``<RequireAll>``,
``<RequireNone>``, ``Require not``, ``Require`` of other kinds, ``AuthMerging``, the 2.2
directives (``Order``, ``Allow``, ``Deny``, ``Satisfy``), ``AllowOverride`` or
``AllowOverrideList`` other than ``None`` (an .htaccess the crawler cannot see), ``<Limit>`` or
``<LimitExcept>`` that govern GET, and a section whose only rules are in a ``<Limit>`` of writes
(httpd then lets everyone read). Anywhere in the files: sections matched by patterns or
wildcards with other rules, conditional or unknown containers (``<IfModule>``, ``<IfDefine>``,
``<Macro>``, ``<Proxy>`` ...) holding rules, ``Alias`` or ``DocumentRoot``, ``Require`` outside
any section, ``AliasMatch``, ``ScriptAlias``, ``RewriteRule``, ``SSLRequire``,
``SSLVerifyClient``, ``Include``, ``Use``, an ``AuthLDAPURL`` with a filter, ``AuthLDAPMaxSubGroupDepth`` below
10 (the directory's principals hold nested groups), and a line that cannot be read. A path no
rule governs is unreadable too (httpd would grant it: name the file that holds the rules). An
``ldap-group`` rule, wherever it is, when any section or server sets mod_authnz_ldap's group
reading otherwise than its defaults (``LDAP_GROUP_DEFAULTS``: ``AuthLDAPGroupAttribute``,
``AuthLDAPSubGroupAttribute`` other than exactly member and uniqueMember,
``AuthLDAPSubGroupClass`` other than exactly groupOfNames and groupOfUniqueNames,
``AuthLDAPGroupAttributeIsDN off``, ``AuthLDAPCompareAsUser on``): ``member:`` would then mean
another membership than Apache's.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import unquote

from searchcrawl.access.tokens import Access, AccessError, Grant

MAX_FILE_BYTES = 4 * 1024 * 1024  # of one configuration file
MATCH_SECTIONS = ("files", "filesmatch", "locationmatch", "directorymatch")
KNOWN_SECTIONS = ("location", "directory", "virtualhost", "requireany", "requireall", "requirenone", "limit", "limitexcept")
AUTHZ = ("require", "authmerging", "order", "allow", "deny", "satisfy", "allowoverride", "allowoverridelist")
# anywhere: what the crawler does not model, and which could refuse, remap or hide a rule
UNMODELLED = (
    "aliasmatch", "scriptalias", "scriptaliasmatch", "rewriterule", "sslrequire", "sslverifyclient",
    "include", "includeoptional", "use",
)  # fmt: skip
# containers of rules, or of where paths lead: what is inside a conditional or unknown one is uncertain
CARRIES_RULES = (*AUTHZ, "alias", "documentroot")
_WILDCARD = re.compile(r"[*?\[]")
# mod_authnz_ldap's group reading: each directive's values in one section or server, as its
# defaults are (a multi-valued one is the set of its lines' values); anything else: ldap-group unread
LDAP_GROUP_DEFAULTS = {
    "authldapgroupattribute": frozenset({"member", "uniquemember"}),
    "authldapsubgroupattribute": frozenset({"member", "uniquemember"}),
    "authldapsubgroupclass": frozenset({"groupofnames", "groupofuniquenames"}),
    "authldapgroupattributeisdn": frozenset({"on"}),
    "authldapcompareasuser": frozenset({"off"}),
}


@dataclass(frozen=True)
class TokenNames:
    """How Apache's names become tokens: a user, a group file's group (None: uncertain), and
    who ``valid-user`` stands for (None: no one); ``skip``: the crawl's own account."""

    user_token: str = "user:{id}"
    group_token: str | None = None
    authenticated_token: str | None = None
    skip: frozenset[str] = frozenset()


@dataclass
class Section:
    """One ``<Location>`` or ``<Directory>`` with its ``Require`` lines as written, and why it
    cannot be read for certain, if it cannot; ``host``: its virtual host (None: the main server)."""

    kind: str
    path: str
    where: str  # file:line, for explain-access
    host: int | None = None
    requires: list[str] = field(default_factory=list)
    uncertain: str | None = None
    write_rules: bool = False  # Require lines in a <Limit> of writes

    @property
    def rules(self) -> bool:
        return bool(self.requires or self.uncertain or self.write_rules)


@dataclass
class Denial:
    """A pattern section whose only rule is ``Require all denied``."""

    kind: str
    pattern: re.Pattern[str]
    where: str
    host: int | None = None

    def matches(self, url_path: str, directory: str | None) -> bool:
        if self.kind in ("files", "filesmatch"):
            return self.pattern.search(posixpath.basename(url_path.rstrip("/"))) is not None
        if self.kind == "locationmatch":
            return self.pattern.search(url_path) is not None
        return directory is not None and self.pattern.search(directory) is not None


@dataclass
class VirtualHost:
    ports: tuple[str, ...]  # "*" for any
    names: list[str] = field(default_factory=list)
    aliases: list[tuple[str, str]] = field(default_factory=list)
    document_root: str | None = None


@dataclass
class ApacheRules:
    """The sections of the files read; ``uncertain``: what could govern any path."""

    sections: list[Section] = field(default_factory=list)
    denials: list[Denial] = field(default_factory=list)
    hosts: list[VirtualHost] = field(default_factory=list)
    main: VirtualHost = field(default_factory=lambda: VirtualHost(("*",)))
    uncertain: list[str] = field(default_factory=list)
    ldap_groups_uncertain: list[str] = field(default_factory=list)  # why ldap-group is not read

    def serving(self, host: str, port: int) -> int | None:
        """The virtual host that answers ``host:port`` (its index), or None: the main server."""
        candidates = [i for i, vhost in enumerate(self.hosts) if "*" in vhost.ports or str(port) in vhost.ports]
        named = [i for i in candidates if host.lower() in (name.lower() for name in self.hosts[i].names)]
        return named[0] if named else candidates[0] if candidates else None

    def access_of(self, url_path: str, names: TokenNames, host: str = "", port: int = 0) -> tuple[Access | None, str | None]:
        """``url_path``'s access as Apache decides it; (None, why) when it cannot be read for certain."""
        if self.uncertain:
            return None, f"Apache's rules hold what the crawler cannot read for certain ({self.uncertain[0]})"
        served = self.serving(host, port)
        path = normal_path(url_path)
        directory = self.filesystem_path(path, served)
        for denial in self.denials:
            if denial.host in (None, served) and denial.matches(path, directory):
                return Access.of([], name=f"Apache rules of {url_path[:200]}"), None
        merged = self.merged(path, directory, served)
        if not merged:
            return None, f"no Require in the Apache files named governs {url_path[:200]}"
        for section in merged:
            if section.uncertain:
                return None, f"an Apache rule that governs it cannot be read for certain ({section.uncertain})"
        section = next(s for s in reversed(merged) if s.requires or s.write_rules)
        if not section.requires:
            return None, f"the Apache rules of {section.where} govern writes only, which lets everyone read: not read for certain"
        origin = f"Apache {section.where}: <{section.kind.title()} {section.path}>"
        allow: list[Grant] = []
        try:
            for line in section.requires:
                if self.ldap_groups_uncertain and line.lower().startswith("ldap-group"):
                    raise AccessError(f"Require ldap-group, with {self.ldap_groups_uncertain[0]}")
                allow.extend(Grant.of(token, f"{origin} Require {line}") for token in _tokens(line, names))
        except (AccessError, ValueError) as error:
            return None, f"an Apache rule cannot be read for certain ({error})"
        return Access.of(allow, name=f"Apache rules of {url_path[:200]}"), None

    def merged(self, path: str, directory: str | None, served: int | None) -> list[Section]:
        """The sections that govern ``path``, in the order httpd merges them."""
        ours = [s for s in self.sections if s.host in (None, served) and s.rules]
        directories = sorted(
            (s for s in ours if s.kind == "directory" and directory is not None and _inside(directory, s.path)),
            key=lambda s: (s.path.rstrip("/").count("/"), s.host is not None),
        )
        locations = sorted(
            (s for s in ours if s.kind == "location" and _in_location(path, s.path)),
            key=lambda s: s.host is not None,
        )
        return [*directories, *locations]

    def filesystem_path(self, url_path: str, served: int | None) -> str | None:
        """The path ``url_path`` reaches through the first Alias whose URL path is a whole prefix of
        it (the virtual host's first), else under the DocumentRoot; None when neither is known."""
        hosts = [self.hosts[served], self.main] if served is not None else [self.main]
        for vhost in hosts:
            for url_prefix, directory in vhost.aliases:
                prefix = url_prefix.rstrip("/")
                if url_path == prefix or url_path.startswith(prefix + "/"):
                    return posixpath.normpath(directory.rstrip("/") + "/" + url_path[len(prefix) :].lstrip("/"))
        root = next((vhost.document_root for vhost in hosts if vhost.document_root), None)
        return posixpath.normpath(root.rstrip("/") + "/" + url_path.lstrip("/")) if root else None


def _in_location(path: str, location: str) -> bool:
    """httpd's ap_location_walk: a prefix in whole segments (the argument taken verbatim)."""
    return path.startswith(location) and (location.endswith("/") or len(path) == len(location) or path[len(location)] == "/")


def _inside(path: str, directory: str) -> bool:
    directory = directory.rstrip("/") or "/"
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _tokens(line: str, names: TokenNames) -> list[str]:
    parts = line.split(None, 1)
    kind, rest = (parts[0].lower(), parts[1].strip() if len(parts) > 1 else "") if parts else ("", "")
    if kind == "all" and rest.lower() in ("granted", "denied"):
        return ["public"] if rest.lower() == "granted" else []
    if kind == "valid-user" and not rest:
        return [names.authenticated_token] if names.authenticated_token else []
    if kind in ("user", "ldap-user"):
        return [names.user_token.replace("{id}", name) for name in _words(rest) if name not in names.skip]
    if kind == "group" and names.group_token is not None:
        return [names.group_token.replace("{id}", name) for name in _words(rest)]
    if kind == "ldap-group" and rest:
        return [f"member:{_unquoted(rest)}"]
    if kind == "ldap-dn" and rest:
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
    normal = "/" + normal.lstrip("/")
    return normal + "/" if path.endswith("/") and normal != "/" else normal


def read_rules(files: Iterable[tuple[str, str]]) -> ApacheRules:
    """The rules of Apache configuration files, each (name, text), in the order Apache reads them."""
    rules = ApacheRules()
    for name, text in files:
        reader = _ConfigReader(rules)
        for number, line in _lines(text):
            reader.line(line, f"{name}:{number}")
        if reader.stack:
            rules.uncertain.append(f"<{reader.stack[-1].name}> not closed in {name}")
        reader.ldap_group_settings()
    return rules


def _lines(text: str) -> Iterable[tuple[int, str]]:
    """Logical lines as httpd reads them (util.c): a backslash right before the line's end
    continues it, joined without a space; no comments, no blank lines."""
    pending, start = "", 0
    for number, raw in enumerate(text.lstrip("\ufeff").split("\n"), 1):
        raw = raw[:-1] if raw.endswith("\r") else raw
        if not pending:
            start = number
        if raw.endswith("\\"):
            pending += raw[:-1]
            continue
        line, pending = (pending + raw).strip(), ""
        if line and not line.startswith("#"):
            yield start, line


@dataclass
class _Open:
    """An open container: its name and where its lines go (None: a <Limit> of writes)."""

    name: str
    section: Section | None
    kind: str = "neutral"  # "section", "pattern", "conditional", "writes", "neutral"
    where: str = ""
    lines: list[str] = field(default_factory=list)  # of a pattern section: its rules


_SECTION = re.compile(r"<\s*(/?)\s*([A-Za-z]+)(?:\s+(.*?))?\s*>\s*$")


class _ConfigReader:
    """One file's containers as they open and close, and the directives read into them."""

    def __init__(self, rules: ApacheRules) -> None:
        self.rules = rules
        self.stack: list[_Open] = []
        self.host: int | None = None
        # (a section or server's place, directive) -> its values and where the first was set
        self.ldap_groups: dict[tuple[str, str], tuple[set[str], str]] = {}

    def line(self, line: str, where: str) -> None:
        opened = _SECTION.match(line)
        if opened:
            name, argument = opened.group(2), _unquoted((opened.group(3) or "").strip())
            if opened.group(1):
                self.close(name.lower(), where)
            else:
                self.open(name, argument, where)
            return
        parts = line.split(None, 1)
        self.directive(parts[0].lower(), parts[1].strip() if len(parts) > 1 else "", where)

    def uncertain(self, why: str) -> None:
        self.rules.uncertain.append(why)

    @property
    def section(self) -> Section | None:
        for entry in reversed(self.stack):
            if entry.kind in ("section", "writes"):
                return entry.section
        return None

    def _open_host(self, argument: str, where: str) -> None:
        """A ``<VirtualHost>`` at the top: the host the sections inside it belong to, by its ports."""
        ports = tuple(address.rsplit(":", 1)[1] if ":" in address else "*" for address in argument.split()) or ("*",)
        self.rules.hosts.append(VirtualHost(ports))
        self.host = len(self.rules.hosts) - 1
        self.stack.append(_Open("virtualhost", None, "neutral", where))

    def _open_section(self, kind: str, argument: str, where: str, inside: list[str]) -> None:
        """A ``<Location>`` or ``<Directory>`` of a plain path: a section of its own, or, inside
        another section, a pattern or a conditional, one that may or may not apply."""
        if "section" in inside or "pattern" in inside or "conditional" in inside:
            self.stack.append(_Open(kind, None, "conditional", where))
            return
        path = argument if kind == "location" else posixpath.normpath(argument)
        section = Section(kind, path, where, self.host)
        self.rules.sections.append(section)
        self.stack.append(_Open(kind, section, "section", where))

    def open(self, written: str, argument: str, where: str) -> None:
        kind = written.lower()
        inside = [entry.kind for entry in self.stack]
        if kind == "virtualhost" and not self.stack:
            self._open_host(argument, where)
        elif kind in ("location", "directory") and not argument.startswith("~") and not _WILDCARD.search(argument):
            self._open_section(kind, argument, where, inside)
        elif kind in MATCH_SECTIONS or kind in ("location", "directory"):
            self.stack.append(_Open(kind, None, "pattern", f"<{written} {argument[:80]}> at {where}", [argument]))
        elif kind == "requireany":
            self.stack.append(_Open(kind, self.section, "neutral", where))
        elif kind in ("requireall", "requirenone"):
            self._uncertain_here(f"<{written}> at {where}")
            self.stack.append(_Open(kind, self.section, "neutral", where))
        elif kind in ("limit", "limitexcept"):
            governs_get = ("GET" in {method.upper() for method in argument.split()}) == (kind == "limit")
            if governs_get:
                self._uncertain_here(f"<{written} {argument}> governs reading, at {where}")
                self.stack.append(_Open(kind, self.section, "neutral", where))
            else:
                self.stack.append(_Open(kind, self.section, "writes", where))
        else:  # <IfModule>, <IfDefine>, <Macro>, <Proxy> ...: what they hold may or may not apply
            self.stack.append(_Open(kind, None, "conditional", f"<{written} {argument[:80]}> at {where}"))

    def close(self, kind: str, where: str) -> None:
        if not self.stack or self.stack[-1].name != kind:
            self.uncertain(f"</{kind}> without its opening at {where}")
            return
        entry = self.stack.pop()
        if entry.kind == "pattern":
            self._pattern_closed(entry)
        if kind == "virtualhost":
            self.host = None

    def _pattern_closed(self, entry: _Open) -> None:
        argument, *lines = entry.lines
        if not lines:
            return
        if [line.lower().split() for line in lines] != [["require", "all", "denied"]]:
            self.uncertain(entry.where)
            return
        regex = _unquoted(argument[1:].strip()) if argument.startswith("~") else argument
        if entry.name in ("location", "directory") and not argument.startswith("~"):
            self.uncertain(entry.where)  # a wildcard path: httpd's own matching, not modelled
            return
        try:
            literal = entry.name == "files" and not argument.startswith("~")
            pattern = re.compile("^" + fnmatch.translate(argument) if literal else regex)
        except re.error:
            self.uncertain(entry.where)
            return
        kinds = {"files": "files", "filesmatch": "filesmatch", "location": "locationmatch", "locationmatch": "locationmatch"}
        self.rules.denials.append(Denial(kinds.get(entry.name, "directorymatch"), pattern, entry.where, self.host))

    def ldap_group_settings(self) -> None:
        """The group reading of each section or server that sets it, against Apache's defaults."""
        for (_place, directive), (values, where) in self.ldap_groups.items():
            if values != LDAP_GROUP_DEFAULTS[directive]:
                shown = " ".join(sorted(values))[:60]
                self.rules.ldap_groups_uncertain.append(f"{directive} {shown} at {where}, not mod_authnz_ldap's default")

    def _uncertain_here(self, why: str) -> None:
        section = self.section
        if section is None:
            self.uncertain(why)
        elif section.uncertain is None:
            section.uncertain = why

    def directive(self, directive: str, rest: str, where: str) -> None:
        if directive in UNMODELLED:
            self.uncertain(f"{directive} at {where}")
            return
        self._ldap_directive(directive, rest, where)
        if directive in ("servername", "serveralias") and self.host is not None:
            self.rules.hosts[self.host].names.extend(name.split(":")[0] for name in rest.split())
        if directive not in CARRIES_RULES:
            return
        top = self.stack[-1] if self.stack else None
        if top is not None and top.kind == "pattern":
            top.lines.append(f"{directive} {rest}")
        elif any(entry.kind in ("conditional", "pattern") for entry in self.stack):
            self.uncertain(f"{directive} inside a conditional section at {where}")
        elif directive in ("alias", "documentroot"):
            self._path_directive(directive, rest, where)
        else:
            self._section_directive(directive, rest, where, top)

    def _ldap_directive(self, directive: str, rest: str, where: str) -> None:
        """What mod_authnz_ldap's directives change of how a ``Require ldap-group`` reads: a URL
        with a filter and a shallow subgroup depth are uncertain; the group attributes and
        classes are kept by where they are set."""
        if directive == "authldapurl" and rest.count("?") >= 3 and rest.rsplit("?", 1)[1].strip(' "'):
            self.uncertain(f"AuthLDAPURL with a filter at {where}")
        elif directive in LDAP_GROUP_DEFAULTS:
            place = self.stack[-1].where if self.stack else f"server {self.host}"
            values, _first = self.ldap_groups.setdefault((place, directive), (set(), where))
            values.update(value.lower() for value in rest.replace('"', " ").split())
        elif directive == "authldapmaxsubgroupdepth" and (not rest.isdigit() or int(rest) < 10):
            self.uncertain(f"AuthLDAPMaxSubGroupDepth {rest[:10]} at {where}")

    def _section_directive(self, directive: str, rest: str, where: str, top: _Open | None) -> None:
        """A directive that carries rules, in the section it applies to."""
        section = self.section
        if section is None:
            self.uncertain(f"{directive} outside a <Location> or <Directory> at {where}")
        elif top is not None and top.kind == "writes":
            section.write_rules = section.write_rules or directive == "require"
        elif directive == "require" and not rest.lower().startswith("not "):
            section.requires.append(rest)
        elif directive in ("allowoverride", "allowoverridelist") and rest.lower() == "none":
            return
        elif section.uncertain is None:
            section.uncertain = f"{directive} {rest[:40]} at {where}"

    def _path_directive(self, directive: str, rest: str, where: str) -> None:
        if self.section is not None:
            self.uncertain(f"{directive} inside a section at {where}")
            return
        vhost = self.rules.hosts[self.host] if self.host is not None else self.rules.main
        try:
            parts = _words(rest)
        except ValueError:
            self.uncertain(f"{directive} that cannot be read at {where}")
            return
        if directive == "alias" and len(parts) == 2:
            vhost.aliases.append((parts[0], posixpath.normpath(parts[1])))
        elif directive == "documentroot" and len(parts) == 1:
            vhost.document_root = posixpath.normpath(parts[0])
        else:
            self.uncertain(f"{directive} that cannot be read at {where}")
