"""SQLAlchemy table definitions. Changes here need an Alembic migration in migrations/versions."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from sqlalchemy import BigInteger, DateTime, Index, Integer, String, Table, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    # DeclarativeBase types it FromClause (a class may be mapped to a join or a select); every
    # class here is mapped to a Table, and the stores use it as one (insert, update, delete).
    __table__: ClassVar[Table]


class Document(Base):
    """One URL of one source: what the crawler knows of it and whether it is in the index."""

    __tablename__ = "documents"
    __table_args__ = (
        UniqueConstraint("source", "url_hash", name="uq_documents_source_url_hash"),
        Index("ix_documents_source_state", "source", "state"),
        Index("ix_documents_source_display_url", "source", "display_url"),
        Index("ix_documents_frontier", "source", "run_id", "frontier", "depth", "id"),
        Index("ix_documents_source_checksum", "source", "checksum"),
        Index("ix_documents_delta", "source", "delta_run", "delta"),
        Index("ix_documents_duplicate_of", "duplicate_of", postgresql_using="hash"),  # long URLs: a hash
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    source: Mapped[str] = mapped_column(String(200))
    url: Mapped[str] = mapped_column(Text)
    # SHA-256 of the URL (hex): the row's key with the source. A URL can be longer than a btree
    # index entry holds (about 2,700 bytes on PostgreSQL); its hash never is. See store.url_hash.
    url_hash: Mapped[str] = mapped_column(String(64))
    display_url: Mapped[str | None] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(20))
    status: Mapped[int | None] = mapped_column(Integer)
    reason: Mapped[str | None] = mapped_column(Text)
    content_type: Mapped[str | None] = mapped_column(String(200))
    content_length: Mapped[int | None] = mapped_column(BigInteger)
    checksum: Mapped[str | None] = mapped_column(String(64))
    last_modified: Mapped[str | None] = mapped_column(String(64))
    etag: Mapped[str | None] = mapped_column(String(300))
    depth: Mapped[int | None] = mapped_column(Integer)
    first_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_fetched: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_changed: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    indexed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # The frontier: the run that last queued the URL, and where it is in that run
    # (queued, leased, done); a lease expires so that a dead node's URLs go back to the queue.
    run_id: Mapped[int | None] = mapped_column(Integer)
    frontier: Mapped[str | None] = mapped_column(String(10))
    lease_owner: Mapped[str | None] = mapped_column(String(100))
    lease_expires: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    request: Mapped[str | None] = mapped_column(Text)  # JSON: the request data that must survive a restart
    # Maintenance crawls: consecutive transient failures, duplicates, canonical link, and what
    # the last run found (delta: new, changed, unchanged, not_modified, deleted, failed, ...).
    failures: Mapped[int | None] = mapped_column(Integer)
    duplicate_of: Mapped[str | None] = mapped_column(Text)
    canonical_url: Mapped[str | None] = mapped_column(Text)
    delta: Mapped[str | None] = mapped_column(String(20))
    delta_run: Mapped[int | None] = mapped_column(Integer)
    linked_run: Mapped[int | None] = mapped_column(Integer)
    fetched_with: Mapped[str | None] = mapped_column(String(10))  # static or browser (rendered)
    cached_by: Mapped[str | None] = mapped_column(String(40))  # the document cache holding it (DocumentCache.id)
    # Temporary redirects: where this URL redirects to (target), and, on a target outside the
    # boundary, the URL of the source that redirects to it (via): it is indexed while that stands.
    target: Mapped[str | None] = mapped_column(Text)
    via: Mapped[str | None] = mapped_column(Text)


class Run(Base):
    """One `scrapy crawl <source>`: resumed until it finishes or is stopped."""

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_source", "source", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    source: Mapped[str] = mapped_column(String(200))
    state: Mapped[str] = mapped_column(String(20))
    control: Mapped[str | None] = mapped_column(String(20))  # suspend / stop, asked from outside
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    host: Mapped[str | None] = mapped_column(String(200))
    pid: Mapped[int | None] = mapped_column(Integer)
    sessions: Mapped[int] = mapped_column(Integer)  # how many processes have worked on it
    counters: Mapped[str | None] = mapped_column(Text)  # JSON
    reason: Mapped[str | None] = mapped_column(Text)
    mode: Mapped[str | None] = mapped_column(String(20))  # initial, maintenance, forced, test
    job: Mapped[str | None] = mapped_column(String(200))  # the scrapyd job of the latest session


class RunDelta(Base):
    """What one run found for each URL it met: the delta report, kept per run."""

    __tablename__ = "run_deltas"
    __table_args__ = (Index("ix_run_deltas_run", "run_id", "kind"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(Integer)
    url: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(20))


class SourceState(Base):
    """Per source: the fingerprint of the settings whose change forces a recrawl."""

    __tablename__ = "source_states"

    source: Mapped[str] = mapped_column(String(200), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ScheduleMark(Base):
    """Per scheduled source: the slot `scrapy scheduler` last started (or skipped), and how."""

    __tablename__ = "schedule_marks"

    source: Mapped[str] = mapped_column(String(200), primary_key=True)
    mark: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # None: due at once
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    job: Mapped[str | None] = mapped_column(String(200))  # scrapyd job id or local pid
    outcome: Mapped[str | None] = mapped_column(Text)  # started / skipped: why


class CrawlNode(Base):
    """A process working on a run: several when a source is crawled by a fleet (shared crawl)."""

    __tablename__ = "crawl_nodes"

    run_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner: Mapped[str] = mapped_column(String(100), primary_key=True)  # host:pid, as in lease_owner
    host: Mapped[str | None] = mapped_column(String(200))
    pid: Mapped[int | None] = mapped_column(Integer)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    heartbeat: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class SiteSlot(Base):
    """Per site (host): the earliest moment the fleet may start its next request there."""

    __tablename__ = "site_slots"

    site: Mapped[str] = mapped_column(String(300), primary_key=True)
    next_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class SiteLease(Base):
    """A request in flight to a site, anywhere in the fleet: counted against its concurrency."""

    __tablename__ = "site_leases"
    __table_args__ = (Index("ix_site_leases_site", "site", "expires"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    site: Mapped[str | None] = mapped_column(String(300))
    owner: Mapped[str | None] = mapped_column(String(100))
    expires: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
