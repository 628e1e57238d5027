"""Agents of the tests' own, as a user writes one (searchcrawl/agents/base.py): a repository
that is a JSON file the test rewrites between crawls, so each crawl's oracle is the file. A source
names each by the name the tests' distribution registers it under (tests/installed/*.dist-info/entry_points.txt)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from searchcrawl.access.tokens import Access, AccessUnreadable, Grant
from searchcrawl.agents.base import Agent, AgentError, Content, DocumentTooLarge, Reference
from searchcrawl.agents.files import FilesAgent


class JsonRepositoryOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    inline: bool = True  # hand content over with the listing, else only through fetch
    fail_after: int | None = None  # raise AgentError after listing this many (a repository that goes down)
    crash_after: int | None = None  # raise an OSError instead (an agent's own bug, a stale share)
    fetch_delay: float = 0.0  # seconds each fetch takes (a slow repository: a crawl to kill midway)
    failing_keys: str | None = None  # a file: while it exists, fetching a key it lists raises AgentError


class JsonRepositoryAgent(Agent):
    """``{"key": {"title": ..., "body": ..., "type": "text/html", "version": 3, "modified": iso}}``
    in one JSON file: a document per key, its version the change token. Each fetch is logged to
    ``<path>.fetched`` (one key a line), so a test sees what was read."""

    scheme = "repo"
    Options = JsonRepositoryOptions

    def __init__(self, source: str, options: BaseModel) -> None:
        super().__init__(source, options)
        assert isinstance(options, JsonRepositoryOptions)
        self.settings = options
        self.lock = threading.Lock()

    def documents(self) -> dict[str, dict]:
        try:
            return json.loads(Path(self.settings.path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise AgentError(f"cannot read the repository: {exc.strerror}") from None

    def references(self, since: datetime | None) -> Iterator[Reference]:
        for number, (key, document) in enumerate(sorted(self.documents().items())):
            if self.settings.fail_after is not None and number >= self.settings.fail_after:
                raise AgentError("the repository went away")
            if self.settings.crash_after is not None and number >= self.settings.crash_after:
                raise OSError(116, "Stale file handle")
            modified = datetime.fromisoformat(document["modified"]) if document.get("modified") else None
            if since is not None and self.incremental and modified is not None and modified <= since:
                continue
            yield Reference(
                key,
                token=str(document.get("version", 1)),
                modified=modified,
                fields={"title": document["title"], "version_i": int(document.get("version", 1))},
                metadata={"owner": document.get("owner", "nobody")},
                content=self._content(document) if self.settings.inline and "location" not in document else None,
                location=document.get("location"),  # downloaded from there instead
            )

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        time.sleep(self.settings.fetch_delay)
        with self.lock, open(f"{self.settings.path}.fetched", "a", encoding="utf-8") as log:
            log.write(key + "\n")
        failing = Path(self.settings.failing_keys) if self.settings.failing_keys else None
        if failing is not None and failing.exists() and key in failing.read_text(encoding="utf-8").split():
            raise AgentError(f"{key} cannot be read now")
        document = self.documents().get(key)
        if document is None:
            return None
        content = self._content(document)
        if max_bytes and len(content.body) > max_bytes:
            raise DocumentTooLarge(f"{len(content.body)} bytes")
        return content

    @staticmethod
    def _content(document: dict) -> Content:
        """Its body; ``readers`` (tokens) or ``readers_unreadable`` (why not): the access read
        with it, as the files agent reads a file's (``Content.access``); ``token_read``: the
        change token read with it (``Content.token``)."""
        readers = document.get("readers")
        return Content(
            document["body"].encode("utf-8"),
            document.get("type", "text/html; charset=utf-8"),
            access=None if readers is None else Access.of([Grant.of(token, "the repository, when read") for token in readers]),
            access_unreadable=document.get("readers_unreadable"),
            token=document.get("token_read"),
        )


class IncrementalJsonRepositoryAgent(JsonRepositoryAgent):
    """The same repository, listed incrementally: only documents modified since the last run."""

    incremental = True

    def gone(self, keys: Sequence[str]) -> Iterable[str]:
        documents = self.documents()
        return [key for key in keys if key not in documents]


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


class BrokenAclFilesAgent(FilesAgent):
    """The files agent, whose ACL reading fails (an I/O error) for every file with a sibling
    ``<name>.broken-acl``: root reads every real ACL, so the test breaks it here, at the one call
    the listing and the fetch make for a file's own ACL (``FilesAgent._own_access``), the rest of
    the agent as it is."""

    def _own_access(self, file: str | int, info: os.stat_result, shown: str) -> Access:
        if os.path.exists(f"{shown}.broken-acl"):
            raise AccessUnreadable(f"the ACL of {shown} cannot be read: [Errno 5] Input/output error")
        return super()._own_access(file, info, shown)


class RacingFilesAgent(FilesAgent):
    """The files agent, for which a file with a sibling ``<name>.race`` changes between its
    listing and its fetch, every time (issue 72's race, made certain): just before the fetch
    reads it, it is made 0600 and the sibling's text written into it (the sibling removed)."""

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        race = Path(f"{key}.race")
        if race.exists():
            os.chmod(key, 0o600)
            Path(key).write_text(race.read_text(encoding="utf-8"), encoding="utf-8")
            race.unlink()
        return super().fetch(key, max_bytes)


class SwappingFilesAgent(FilesAgent):
    """The files agent, for which a link with a sibling ``<name>.swap`` points elsewhere while it
    is fetched, every time, and back after (a local user repointing their own link between the
    listing and the fetch, and back before the next crawl): the sibling names the target the
    fetch finds (the sibling removed: once)."""

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        swap = Path(f"{key}.swap")
        if not swap.exists():
            return super().fetch(key, max_bytes)
        listed = os.readlink(key)
        target = swap.read_text(encoding="utf-8")
        swap.unlink()
        _repoint(key, target)
        try:
            return super().fetch(key, max_bytes)
        finally:
            _repoint(key, listed)


def _repoint(link: str, target: str) -> None:
    os.symlink(target, f"{link}.tmp")
    os.rename(f"{link}.tmp", link)
