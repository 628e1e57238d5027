"""The code a source file may name, by a registered name: never a dotted path.

A source key that named any callable by its dotted path ran whatever it named:
``url_rewriter = "os.system"`` ran a shell command taken from a link of a crawled page (issue 99).
The keys that load code name an implementation registered under that name for their kind:

- the project's own (``built_in`` below: the built-in types' agents, the example source's spider);
- those an installed package declares as entry points, in the group of their kind::

    # the package's pyproject.toml
    [project.entry-points."searchcrawl.url_rewriters"]
    strip_session_ids = "mycompany.crawl:strip_session_ids"

  ``searchcrawl.url_rewriters`` (``url_rewriter``), ``searchcrawl.spiders`` (``spider_class``),
  ``searchcrawl.agents`` (``agent``, with ``type = "agent"``).

A name is looked up, never imported: a dotted path is only a name no one registered (the target of
a registered entry point too). A built-in name wins over an installed package's; between
installed packages, the first on ``sys.path`` wins, as for imports. What a name loads is checked
for its kind (a class of the expected base, or a callable) before it is used.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from searchcrawl.rules.url_rewriter import UrlRewriter, identity


class ImplementationError(ValueError):
    """A name no implementation of its kind is registered under, or one whose code cannot be used;
    the message names the registered ones, ``key`` the source key that named it."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(key, message)
        self.key, self.message = key, message

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Registry:
    """The registry of one kind of code a source names: its key, its entry point group, the project's own."""

    key: str  # the source key that names one
    what: str  # what one is, as messages say it
    group: str  # the entry point group an installed package declares its own in ("": none)
    built_in: Mapping[str, str] = field(default_factory=dict)  # name -> "module:attribute"

    def names(self) -> list[str]:
        """Every registered name of this kind, sorted."""
        return sorted({**_installed(self.group, tuple(sys.path)), **self.built_in})

    def entry_point(self, name: str) -> EntryPoint:
        """The implementation registered as ``name`` (its code not loaded); ImplementationError
        naming the registered ones if there is none."""
        if name in self.built_in:
            return EntryPoint(name, self.built_in[name], self.group)
        installed = _installed(self.group, tuple(sys.path))
        if name not in installed:
            known = ", ".join(self.names()) or "none"
            where = f"; a package declares one as an entry point in the group {self.group!r}" if self.group else ""
            raise ImplementationError(self.key, f"no {self.what} is registered as {name!r} (registered: {known}{where})")
        return EntryPoint(name, installed[name], self.group)

    def load(self, name: str, base: type | None = None) -> Any:
        """The code registered as ``name``, checked: a subclass of ``base``, or (no base) a callable."""
        target = self.entry_point(name)
        try:
            code = target.load()
        except (ImportError, AttributeError) as exc:
            raise ImplementationError(self.key, f"the {self.what} {name!r} ({target.value}) cannot be loaded: {exc}") from None
        if base is not None and not (isinstance(code, type) and issubclass(code, base)):
            raise ImplementationError(
                self.key, f"the {self.what} {name!r} ({target.value}) is not a subclass of {base.__module__}.{base.__qualname__}"
            )
        if base is None and not callable(code):
            raise ImplementationError(self.key, f"the {self.what} {name!r} ({target.value}) is not callable")
        return code


@lru_cache(maxsize=16)
def _installed(group: str, path: tuple[str, ...]) -> dict[str, str]:
    """The names an installed package declares in ``group`` -> their "module:attribute", the
    first on ``path`` (``sys.path``, the cache's key: a folder put on it is read) winning."""
    if not group:
        return {}
    found: dict[str, str] = {}
    for point in entry_points(group=group):
        found.setdefault(point.name, point.value)
    return found


# the agents of the built-in types (``type = "files"``: its name is its type); ``type = "agent"``
# names an installed one (key ``agent``)
AGENT_TYPES = Registry(
    "type",
    "built-in agent",
    "",
    {
        "files": "searchcrawl.agents.files:FilesAgent",
        "smb": "searchcrawl.agents.smb:SmbAgent",
        "database": "searchcrawl.agents.sql:DatabaseAgent",
        "mail": "searchcrawl.agents.mail:MailAgent",
        "imap": "searchcrawl.agents.imap:ImapAgent",
        "webdav": "searchcrawl.agents.webdav:WebdavAgent",
        "cmis": "searchcrawl.agents.cmis:CmisAgent",
        "dokuwiki": "searchcrawl.agents.dokuwiki:DokuwikiAgent",
        "redmine": "searchcrawl.agents.redmine:RedmineAgent",
        "git": "searchcrawl.agents.git:GitAgent",
    },
)
AGENTS = Registry("agent", "agent", "searchcrawl.agents")
SPIDERS = Registry(
    "spider_class", "spider", "searchcrawl.spiders", {"example_site": "searchcrawl.dev.example_spider:ExampleSiteSpider"}
)
URL_REWRITERS = Registry("url_rewriter", "URL rewriter", "searchcrawl.url_rewriters")


def url_rewriter(name: str | None) -> UrlRewriter:
    """The URL rewriter registered as ``name`` (none: links unchanged); ImplementationError if unusable."""
    return identity if not name else URL_REWRITERS.load(name)
