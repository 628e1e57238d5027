"""The crawler agent interface: what a repository of one's own implements to be crawled.

The seeds' "user-defined data source" (Oracle SES): an agent lists document references with
their metadata, and the crawler enqueues and processes each like any other document (the
document table and its statuses, conversion, attributes, display URLs, the cache and batched
push, duplicates, maintenance crawls, deletions with the guard, the delta report, ``explain``,
resume after kill -9). The built-in ``files``, ``database`` and ``mail`` source types are agents
too. A source file names an agent of one's own with ``type = "agent"`` and ``agent = "name"``, the
name its package registers it under (entry point group ``searchcrawl.agents``:
config/implementations.py); its ``[agent_options]`` table is validated by the agent's ``Options``
model and handed to its constructor.

Threads: the crawl resumes the listing's generator in worker threads (``asyncio.to_thread``, not
always the same one from batch to batch) and calls ``fetch`` in worker threads of the same pool
at the same time, so an agent protects what its listing and its fetches share, and keeps the
listing's connection to itself (thread-local state is not the listing's own).

Changes and deletions:

- A reference's ``token`` (a version, a modification time, a size and time, a hash) is stored
  with its document; a maintenance crawl processes a reference whose token is unchanged as
  unchanged (status 912) without fetching it.
- A complete listing (``incremental = False``, or a forced recrawl) says what exists: a document
  of the source that the listing did not name has left the repository. An incremental agent
  (``incremental = True``) lists only what changed since the last complete run's start when
  given ``since``, and answers ``gone`` for the documents it did not name.
- Nothing is removed when the listing fails part-way: the run ends failed, and the next crawl
  lists again.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict

from searchcrawl.access.tokens import Access
from searchcrawl.rules.urls import agent_url


class AgentError(Exception):
    """The repository cannot be listed or read (unreachable, refused, misconfigured): the crawl
    ends failed and removes nothing. The message is shown to the admin: never a secret in it."""


class DocumentTooLarge(Exception):
    """``fetch`` found the document larger than ``max_bytes``: it is not read (status 923)."""


@dataclass(frozen=True)
class Content:
    """A document's bytes and what they are: HTML and text are parsed as the web's pages are,
    PDF, office files and others converted (``content_type`` names the type; ``name`` is the
    file name converters and the title fall back to)."""

    body: bytes
    content_type: str  # "text/html; charset=utf-8", "application/pdf", ...
    name: str | None = None
    # who may read it, read with it (``gives_access``): when given, it wins over the reference's,
    # which was read when listed (a file made private and rewritten since is indexed with the
    # access it has when read); ``access_unreadable``: why it could not be read then (927)
    access: Access | None = None
    access_unreadable: str | None = None
    # the change token of what was read: when it is not the reference's (the file changed since
    # it was listed, or is another one), no token is indexed, so the next crawl reads it again
    # (a 304 on the listing's token would put the listed file's access on this text)
    token: str | None = None


@dataclass(frozen=True)
class Reference:
    """One document of the repository, as the agent lists it.

    ``key`` identifies it within the agent, stable from crawl to crawl (a path, a primary key, a
    message's key); its URL in the document table and in Solr is ``Agent.url_for(key)``.
    ``fields`` are Solr fields the agent knows better than extraction does (``title``,
    ``author``, ``last_modified``, ``display_url``, typed attributes such as ``size_l``) and win
    over what extraction finds; ``metadata`` are named
    values the source's ``attributes`` mapping may map, as a page's meta tags are. ``content``
    is the document itself when the listing has it at hand (a row, a small message);
    ``location`` an http(s) URL the crawl downloads it from instead (a document management
    system's download link: its origin must be in the source's ``fetch_origins``); with neither,
    the crawl calls ``fetch(key)``. ``parent``: the key of the document this one belongs to (a
    message's attachment).

    ``access``: who may read it (an agent with ``gives_access``): ``Access.of`` its readers, each
    ``Grant.of(token, origin)`` (``user:alice``, ``group:<DN or name>``, ``uid:1001``,
    ``gid:2001``, ``public``; the origin says where the agent found it, for `scrapy
    explain-access`), and the tokens it denies. None: the source's ``[access]`` table says
    (without one, the document is not indexed). A reader that is not a token raises
    ``AccessError``: never drop it and index the rest (a dropped deny would show what it hides).
    ``access_unreadable``: why its readers could not be read (status 927, never indexed as public).
    """

    key: str
    token: str | None = None
    modified: datetime | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    metadata: Mapping[str, str] = field(default_factory=dict)
    content: Content | None = None
    parent: str | None = None
    location: str | None = None
    access: Access | None = None
    # why its access list could not be read (a file's ACL, a query that failed): the document is
    # not indexed (status 927), and leaves the index if it was in; never indexed as public
    access_unreadable: str | None = None


class NoOptions(BaseModel):
    """An agent without options: an ``[agent_options]`` table must be empty."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Agent(ABC):
    """A repository the crawler lists and reads. Subclass it, set ``Options`` (a pydantic model
    of the ``[agent_options]`` table) and implement ``references`` and ``fetch``."""

    scheme: ClassVar[str] = "agent"  # the scheme of its documents' URLs (agent://source/key)
    incremental: bool = False  # honours ``since`` and answers ``gone`` (a class's, or an instance's own)
    # its references carry who may read each document (``Reference.access``): the files agent's
    # POSIX ACLs; an agent whose options decide (a database's access_column, a mailbox's readers)
    # says so with a ``gives_access`` property of its Options. One that gives none needs [access]
    gives_access: ClassVar[bool] = False
    Options: ClassVar[type[BaseModel]] = NoOptions

    def __init__(self, source: str, options: BaseModel) -> None:
        self.source = source
        self.options = options

    @abstractmethod
    def references(self, since: datetime | None) -> Iterator[Reference]:
        """Every document's reference (``since`` is None), or, for an incremental agent, those
        changed since ``since``. A generator: large repositories are listed as they are read,
        never held whole. Raise AgentError when the repository cannot be listed."""

    @abstractmethod
    def fetch(self, key: str, max_bytes: int) -> Content | None:
        """The document's content, or None when it is gone. Called only for references listed
        without content (and again after a resume). Raise DocumentTooLarge rather than read more
        than ``max_bytes`` (0: no limit), and AgentError when the repository cannot be read now
        (the document keeps its state; the next crawl tries again)."""

    def gone(self, keys: Sequence[str]) -> Iterable[str]:
        """Of these keys (documents indexed before, not named by an incremental listing), those
        no longer in the repository. Only incremental agents are asked."""
        raise NotImplementedError(f"{type(self).__name__} is incremental and must answer gone()")

    def skipped(self) -> int:
        """How many entries of the repository the last listing passed over because they cannot
        be documents (a database row without a key, a second row with a key an earlier one had).
        The agent says so at WARNING once per listing; the run's report counts them (``skipped``)."""
        return 0

    def refusal(self, key: str) -> str | None:
        """Why the agent's own rules would not list ``key`` (an include pattern it misses, a
        hidden file ...), or None: what `scrapy explain` shows. The listing applies the same
        rules itself; the default agent has none."""
        return None

    def close(self) -> None:  # noqa: B027 - optional, as Scrapy's own hooks are
        """Release connections and files at the crawl's end."""

    # -- URLs -------------------------------------------------------------------------------

    def url_for(self, key: str) -> str:
        """The document's URL: ``scheme://source/key`` (the key percent-encoded: rules/urls.py)."""
        return agent_url(self.scheme, self.source, key)

    def key_of(self, url: str) -> str | None:
        """The key of one of this agent's URLs, or None when the URL is not the agent's."""
        parts = urlsplit(url)
        if parts.scheme != self.scheme or unquote(parts.netloc) != self.source or not parts.path.startswith("/"):
            return None
        return unquote(parts.path[1:])
