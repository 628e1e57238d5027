"""An agent of one's own: the articles of a JSON-lines export, one article a line
({"id": "a1", "title": "...", "body": "...", "updated": "2026-11-03T10:20:30+00:00",
"readers": ["group:editors", "user:alice"]}).

    type = "agent"
    agent = "articles"

    [agent_options]
    path = "/srv/export/articles.jsonl"
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from searchcrawl.access.tokens import Access, Grant
from searchcrawl.agents.base import Agent, AgentError, Content, DocumentTooLarge, Reference


class ArticlesOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str  # the JSON-lines file


class ArticlesAgent(Agent):
    """Each line is a document; its token is a hash of the line, so an edited article is
    processed again, and an article no longer in the file is deleted (a complete listing).
    Its ``readers`` are who may read it; an article without them is left to the source's
    ``[access]`` table."""

    scheme: ClassVar[str] = "articles"
    gives_access: ClassVar[bool] = True  # its references carry their readers
    Options: ClassVar[type[BaseModel]] = ArticlesOptions

    def __init__(self, source: str, options: BaseModel) -> None:
        super().__init__(source, options)
        self.path = ArticlesOptions.model_validate(options).path

    def references(self, since: datetime | None) -> Iterator[Reference]:
        for line, key, article, access in self._articles():
            token = hashlib.sha256(line).hexdigest()[:32]  # changes when the article does (its readers too)
            modified = datetime.fromisoformat(article["updated"]) if article.get("updated") else None
            fields = {"title": str(article.get("title", "")), "author": str(article.get("author", ""))}
            yield Reference(key, token, modified, fields, content=self._content(article), access=access)

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        for _, found, article, _access in self._articles():
            if found == key:
                content = self._content(article)
                if max_bytes and len(content.body) > max_bytes:
                    raise DocumentTooLarge(key)
                return content
        return None  # gone from the file

    def _articles(self) -> Iterator[tuple[bytes, str, dict[str, Any], Access | None]]:
        """The file's articles one line at a time (never the whole file in memory). A bad line
        fails the listing: nothing is deleted because of a half-written export."""
        try:
            with open(self.path, "rb") as lines:
                for number, line in enumerate(lines, 1):
                    if not line.strip():
                        continue
                    try:
                        article = json.loads(line)
                        key = str(article["id"])
                        if article.get("updated"):
                            datetime.fromisoformat(article["updated"])
                        access = self._access(key, article)
                    except (ValueError, TypeError, KeyError, AttributeError):  # AccessError is a ValueError
                        raise AgentError(f"{self.path}:{number} is not an article with an id (and readers)") from None
                    yield line, key, article, access
        except OSError as error:
            raise AgentError(f"{self.path} cannot be read: {error.strerror}") from None

    @staticmethod
    def _access(key: str, article: dict[str, Any]) -> Access | None:
        """Who may read the article: its readers (``user:``, ``group:``, ``uid:``, ``gid:`` tokens,
        or ``public``), each with where it came from; None without readers (the source's
        ``[access]`` table says). A reader that is not a token fails the listing."""
        readers = article.get("readers")
        if readers is None:
            return None
        if not isinstance(readers, list):
            raise TypeError("readers is a list of tokens")
        return Access.of(Grant.of(reader, f"readers of article {key}") for reader in readers)

    @staticmethod
    def _content(article: dict[str, Any]) -> Content:
        return Content(str(article.get("body", "")).encode(), "text/plain; charset=utf-8")
