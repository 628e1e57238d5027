"""SQLAlchemy table definitions. Changes here need an Alembic migration in migrations/versions.

Plain Core tables, no ORM: the stores run Core statements and never a Session, and importing
``sqlalchemy.orm`` with declarative classes cost about a fifth of a second of every crawl's start
(a one-page crawl must stay within 1 s of CPU, tests/benchmarks/README.md).
"""

from __future__ import annotations

from enum import StrEnum

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from searchcrawl.system.translations import N_
from searchcrawl.system.translations import gettext as _

metadata = MetaData()


class RunState(StrEnum):
    """Where a crawl run is: ``runs.state``."""

    RUNNING = "running"  # a process works on it (while that process lives: Runs.conflict)
    SUSPENDED = "suspended"  # closed with work left (a limit, Ctrl-C, `scrapy control suspend`): resumed next
    FINISHED = "finished"  # its frontier is done
    STOPPED = "stopped"  # ended with work left, not to be resumed (by hand, or for a fresh run)
    FAILED = "failed"  # the crawl failed; the next crawl starts a new run


# a run's state as the pages word it (worded where shown: ``run_state_label``)
RUN_STATE_LABELS: dict[str, str] = {
    RunState.RUNNING: N_("running"),
    RunState.SUSPENDED: N_("suspended"),
    RunState.FINISHED: N_("finished"),
    RunState.STOPPED: N_("stopped"),
    RunState.FAILED: N_("failed"),
}


def run_state_label(state: str) -> str:
    """A run's state (``runs.state``) as a page shows it, in the current language; a value of no
    RunState as it is. The runs table, the command line and the logs keep the value itself."""
    return _(RUN_STATE_LABELS[state]) if state in RUN_STATE_LABELS else state


# a run's mode (``runs.mode``, crawl/run_start.py's) as the pages name it (worded where shown: ``run_mode_label``)
RUN_MODE_LABELS: dict[str, str] = {"initial": N_("initial"), "maintenance": N_("maintenance")}


def run_mode_label(mode: str | None) -> str:
    """A run's mode as a page shows it, in the current language; "" for none, an unknown one as it is."""
    if not mode:
        return ""
    return _(RUN_MODE_LABELS[mode]) if mode in RUN_MODE_LABELS else mode


class FrontierState(StrEnum):
    """Where a URL is in its run's frontier: ``frontier.state`` (for the run in ``frontier.run_id``)."""

    QUEUED = "queued"  # waiting to be leased
    LEASED = "leased"  # handed to a process (lease_owner) until lease_expires
    DONE = "done"  # has its outcome in this run


# One URL of one source: what the index holds of it and why (its state in the ledger's terms). What
# to fetch in a run is in ``frontier``, and where a URL redirects in ``redirects``, beside it.
documents = Table(
    "documents",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("source", String(200), nullable=False),
    Column("url", Text, nullable=False),
    # SHA-256 of the URL (hex): the row's key with the source. A URL can be longer than a btree
    # index entry holds (about 2,700 bytes on PostgreSQL); its hash never is. See store.url_hash.
    Column("url_hash", String(64), nullable=False),
    Column("display_url", Text),
    Column("state", String(20), nullable=False),
    Column("status", Integer),
    Column("reason", Text),
    Column("content_type", String(200)),
    Column("content_length", BigInteger),
    Column("checksum", String(128)),  # the content's SHA-256, and a restricted document's access digest
    Column("last_modified", String(64)),
    Column("etag", String(300)),
    Column("depth", Integer),  # as last queued or recorded: the source's rules judge the URL by it
    Column("first_seen", DateTime(timezone=True), nullable=False),
    Column("last_fetched", DateTime(timezone=True)),
    Column("last_changed", DateTime(timezone=True)),
    Column("indexed_at", DateTime(timezone=True)),
    # Maintenance crawls: consecutive transient failures, duplicates, canonical link, and what
    # the last run found (delta: new, changed, unchanged, not_modified, deleted, failed, ...).
    Column("failures", Integer),
    Column("duplicate_of", Text),
    Column("canonical_url", Text),
    Column("delta", String(20)),
    Column("delta_run", Integer),
    # the run whose report says this URL entered the index (delta new): a searcher did not have
    # it when that run started, so its leaving again in the run is no deletion
    Column("entered_run", Integer),
    Column("linked_run", Integer),
    Column("fetched_with", String(10)),  # static or browser (rendered)
    Column("cached_by", String(40)),  # the document cache holding it (DocumentCache.id)
    # who may read it, as indexed: Access.to_data() JSON, origins included (searchcrawl/access/)
    Column("access", Text),
    UniqueConstraint("source", "url_hash", name="uq_documents_source_url_hash"),
    Index("ix_documents_source_state", "source", "state"),
    Index("ix_documents_source_display_url", "source", "display_url"),
    Index("ix_documents_source_checksum", "source", "checksum"),
    Index("ix_documents_delta", "source", "delta_run", "delta"),
    Index("ix_documents_duplicate_of", "duplicate_of"),  # long URLs: a hash on PostgreSQL (POSTGRESQL_OPTIONS)
    Index("ix_documents_source_id", "source", "id"),  # a source's rows by id: the maintenance plan's batches
)

# The words of the links of each page of a source in the index (content/anchors.py): a row per
# (page, target, text), keyed by the URLs' hashes (the documents' ``url_hash``; the target may have
# no row yet). Replaced whole when the page is parsed, gone when it leaves the index: written by the
# Ledger (store/anchor_table.py) alone, with the page's outcome.
anchors = Table(
    "anchors",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("source", String(200), nullable=False),
    Column("page_hash", String(64), nullable=False),  # the linking page's url_hash
    Column("target_hash", String(64), nullable=False),  # the linked page's url_hash
    Column("text", Text, nullable=False),
    Index("ix_anchors_page", "source", "page_hash"),
    Index("ix_anchors_target", "source", "target_hash"),
)

# The documents whose anchor field is due to be set in Solr: a row each time the anchors that
# count for one may have changed, appended with the linking page's outcome (never updated: two
# nodes' outcomes never wait on each other's marks), deleted by the push once the field is set,
# up to the mark it read. Written by the Ledger (store/anchor_table.py) alone.
anchor_marks = Table(
    "anchor_marks",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("source", String(200), nullable=False),
    Column("target_hash", String(64), nullable=False),  # the document's url_hash
    Index("ix_anchor_marks_source_id", "source", "id"),
    Index("ix_anchor_marks_target", "source", "target_hash"),
)

# The frontier: one row per URL of a source queued in a run (the run that last queued it), keyed by
# its document's id: every queued URL has a document row, and the id (discovery order) is the
# lease order's tie-break, as before the split. Where the URL is in that run (queued, leased,
# done); a lease expires so that a dead node's URLs go back to the queue. Written by the frontier
# (frontier.py) and, as an outcome finishes a URL, by the ledger (documents.py) alone.
frontier = Table(
    "frontier",
    metadata,
    Column("document_id", Integer, primary_key=True, autoincrement=False),  # documents.id
    Column("source", String(200), nullable=False),
    Column("run_id", Integer, nullable=False),
    Column("state", String(10), nullable=False),
    Column("depth", Integer),  # as queued in the run: the lease order (breadth first)
    Column("lease_owner", String(100)),
    Column("lease_expires", DateTime(timezone=True)),
    Column("request", Text),  # JSON: the request data that must survive a restart
    # the lease: a run's queued URLs, shallowest first, then in discovery order
    Index("ix_frontier_lease", "source", "run_id", "state", "depth", "document_id"),
)

# Temporary redirects, keyed by the redirecting (or redirected to) URL's document id: where it
# redirects to (target), and, on a target outside the boundary, the URL of the source that
# redirects to it (via): it is indexed while that stands. Written by the ledger alone.
redirects = Table(
    "redirects",
    metadata,
    Column("document_id", Integer, primary_key=True, autoincrement=False),  # documents.id
    Column("source", String(200), nullable=False),
    Column("target", Text),
    Column("via", Text),
    Index("ix_redirects_source", "source"),
)

# One `scrapy crawl <source>`: resumed until it finishes or is stopped.
runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("source", String(200), nullable=False),
    Column("state", String(20), nullable=False),
    Column("control", String(20)),  # suspend / stop, asked from outside
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("ended_at", DateTime(timezone=True)),
    Column("host", String(200)),
    Column("pid", Integer),
    Column("sessions", Integer, nullable=False),  # how many processes have worked on it
    Column("counters", Text),  # JSON
    Column("reason", Text),
    Column("mode", String(20)),  # initial, maintenance, forced, test
    Column("job", String(200)),  # the scrapyd job of the latest session
    # the node making its maintenance plan ("": nobody, its maker failed; NULL: made): crawl/run_start.py
    Column("plan_owner", String(200)),
    Index("ix_runs_source", "source", "id"),
)

# What one run found for each URL it met: the delta report, kept per run.
run_deltas = Table(
    "run_deltas",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, nullable=False),
    Column("url", Text, nullable=False),
    Column("kind", String(20), nullable=False),
    Column("status", Integer),  # the URL's status and reason in that run (migration 0023)
    Column("reason", Text),
    Index("ix_run_deltas_run", "run_id", "kind"),
)

# Per source: the fingerprint of the settings whose change forces a recrawl.
source_states = Table(
    "source_states",
    metadata,
    Column("source", String(200), primary_key=True),
    Column("fingerprint", Text, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

# Per scheduled source: the slot `scrapy scheduler` last started (or skipped), and how.
schedule_marks = Table(
    "schedule_marks",
    metadata,
    Column("source", String(200), primary_key=True),
    Column("mark", DateTime(timezone=True)),  # None: due at once
    Column("started_at", DateTime(timezone=True)),
    Column("job", String(200)),  # scrapyd job id or local pid
    Column("outcome", Text),  # started / skipped: why
)

# A process working on a run: several when a source is crawled by a fleet (shared crawl).
crawl_nodes = Table(
    "crawl_nodes",
    metadata,
    Column("run_id", Integer, primary_key=True),
    Column("owner", String(100), primary_key=True),  # host:pid, as in lease_owner
    Column("host", String(200)),
    Column("pid", Integer),
    Column("started_at", DateTime(timezone=True)),
    Column("heartbeat", DateTime(timezone=True)),
)

# Per site (host): the earliest moment the fleet may start its next request there.
site_slots = Table(
    "site_slots",
    metadata,
    Column("site", String(300), primary_key=True),
    Column("next_at", DateTime(timezone=True)),
)

# A request in flight to a site, anywhere in the fleet: counted against its concurrency.
site_leases = Table(
    "site_leases",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("site", String(300)),
    Column("owner", String(100)),
    Column("expires", DateTime(timezone=True)),
    Index("ix_site_leases_site", "site", "expires"),
)


# --- Query analytics (issue 59): every search of the web application, and which hit was opened ---
# Written by one background thread (searchcrawl/web/analytics.py), read by the analytics pages
# (searchcrawl/store/searches.py); rows older than SEARCHCRAWL_WEB_ANALYTICS_DAYS are purged.
# A search's id is made by the application before the row is written (a random 128-bit token
# in hex): the page's click links carry it while the row is still in the writer's queue.
searches = Table(
    "searches",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("query", Text, nullable=False),  # as typed (bounded by the search page)
    Column("normalized", String(200), nullable=False),  # grouped by: case-folded, spaces collapsed
    Column("filters", Text),  # JSON [[parameter, value], ...]: facets, modified, from, to
    Column("sort", String(20)),
    Column("page", Integer, nullable=False),
    Column("hits", Integer, nullable=False),
    Column("took_ms", Integer, nullable=False),
    Column("client", String(10), nullable=False),  # web or api
    Column("user_name", String(256)),  # only with SEARCHCRAWL_WEB_LOG_USERS
    # hits opened from it (search_clicks' rows of it, counted as they are written): the reports
    # of a period read the searches alone, never joining every click
    Column("clicks", Integer, nullable=False, server_default="0"),
    # the hits its page showed, for its clicks read as judgments: JSON {"first": rank, "urls": [...]}
    Column("shown", Text),
    # the reports read a period's rows by it (and group them in memory: no index by query, which
    # would lead the planner to walk every row in query order)
    Index("ix_searches_at", "at"),
)

# A hit opened from a search page: its search, its rank in the search (1 the first hit of
# page 1) and its URL. No foreign key: a search's row can be lost (a database error) while its
# page's links still work.
search_clicks = Table(
    "search_clicks",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("search_id", String(32), nullable=False),
    Column("position", Integer, nullable=False),
    Column("url", Text, nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    Index("ix_search_clicks_search", "search_id"),
    Index("ix_search_clicks_at", "at"),
)


# PostgreSQL's own options of the indexes (as Index(..., postgresql_using="hash") would give them).
# Given to Index, a dialect's keyword argument makes SQLAlchemy load that dialect to check it: all
# of PostgreSQL's (some 20 modules, 0.03 s of CPU) in every SQLite crawl. create_db_engine adds
# them when it makes a PostgreSQL engine, before any schema work (migrations, comparisons) on it.
POSTGRESQL_OPTIONS = {"ix_documents_duplicate_of": {"using": "hash"}}


def add_postgresql_options() -> None:
    """Give the indexes their PostgreSQL options (idempotent); loads SQLAlchemy's PostgreSQL dialect."""
    for table in metadata.tables.values():
        for index in table.indexes:
            for name, value in POSTGRESQL_OPTIONS.get(str(index.name), {}).items():
                index.dialect_options["postgresql"][name] = value


# --- issue 59: the API's access tokens (searchcrawl/store/api_tokens.py) ---------------------------
# One token of the JSON API, made on the administration pages. Only its SHA-256 is kept (the token
# is shown once); ``on_behalf``: it may name a user whose documents it searches.
api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("on_behalf", Boolean, nullable=False, default=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True)),  # None: never
    Column("last_used", DateTime(timezone=True)),
    Column("revoked_at", DateTime(timezone=True)),  # None: valid
)


# --- Relevance administration (issue 59; searchcrawl/store/relevance_rules.py) ----------------------------
# Set on the web application's relevance page, read by every search (searchcrawl/rules/ranking_rules.py).

# A best bet: queries (one a line, normalised: case- and whitespace-folded) -> URLs pinned above the
# hits, in order (one a line); shown from starts_at (None: at once) until ends_at (None: for ever,
# excluded: the first moment it is no longer shown), both UTC (migration 0022).
relevance_bets = Table(
    "relevance_bets",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("queries", Text, nullable=False),
    Column("urls", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("starts_at", DateTime(timezone=True)),
    Column("ends_at", DateTime(timezone=True)),
)

# A boost (factor > 1) or demotion (factor < 1) of the documents a rule matches: kind is url (a
# prefix of the url field), source, type (a mimetype) or age (value: the half-life in days).
relevance_boosts = Table(
    "relevance_boosts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(16), nullable=False),
    Column("value", String(2000), nullable=False),
    Column("factor", Float, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

# Synonyms (a set of equivalent words or phrases, comma-separated) and stopwords: the source of
# truth of Solr's managed resources "searchcrawl", pushed to Solr on every change.
relevance_synonyms = Table(
    "relevance_synonyms",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("terms", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)
relevance_stopwords = Table(
    "relevance_stopwords",
    metadata,
    Column("word", String(100), primary_key=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
)


# --- issue 60: a run's progress over time (searchcrawl/store/samples.py) ----------------------------
# What RunMonitor saw at each tick (SEARCHCRAWL_PROGRESS_INTERVAL): the run page's chart. At most
# samples.MAX_SAMPLES rows per run: past that, every second one is dropped (thinned, not cut).
run_samples = Table(
    "run_samples",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("pages", Integer),  # pages fetched by the sampling node in this session
    Column("done", Integer),  # the run's frontier: done, queued, in flight (leased), as last counted
    Column("queued", Integer),
    Column("leased", Integer),
    Column("pending", Integer),  # the source's documents waiting for Solr
    Column("indexed", Integer),  # documents this session sent to Solr
    Index("run_samples_run", "run_id", "id"),
)


# --- issue 60: a crawl process's progress report (searchcrawl/store/progress.py) --------------------
# One row per process working on a run, written every SEARCHCRAWL_PROGRESS_INTERVAL by the
# ProgressReport extension: when it last reported (its heartbeat), when it last had an answer
# from a site (or began, if none yet), and what it was waiting on then (JSON, at most a few
# entries: a site's Retry-After pause, requests in flight without an answer). Stall detection
# (searchcrawl/ops/stalls.py) reads it.
run_progress = Table(
    "run_progress",
    metadata,
    Column("run_id", Integer, primary_key=True),
    Column("owner", String(100), primary_key=True),  # host:pid, as in crawl_nodes
    Column("source", String(200), nullable=False),
    Column("reported_at", DateTime(timezone=True), nullable=False),
    Column("fetched_at", DateTime(timezone=True), nullable=False),
    Column("pages", Integer, nullable=False),
    Column("waits", Text),  # JSON list of {"kind", "site", "since"/"until", "count"}
)


# --- issue 60: notifications sent (searchcrawl/store/notifications.py) -----------------------------
# One notification of one event on one channel: ``key`` names what it is about (``run:<id>`` for a
# run's events, ``summary:<day>`` for the daily summary), so that a retry, a second node or a
# second `scrapy summary --send` never sends it twice. ``state``: sending (claimed), sent, failed.
notifications = Table(
    "notifications",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("key", String(100), nullable=False),
    Column("event", String(40), nullable=False),
    Column("channel", String(60), nullable=False),
    Column("source", String(200)),
    Column("run_id", Integer),
    Column("state", String(10), nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("sent_at", DateTime(timezone=True)),
    Column("error", Text),  # the last failure, redacted
    UniqueConstraint("key", "event", "channel", name="uq_notifications_key_event_channel"),
    Index("ix_notifications_created_at", "created_at"),
)


# --- issue 79: the administration's audit log (searchcrawl/store/audit_log.py) ----------------------
# One change made on the administration pages (or a login, a logout, a backup downloaded): who
# (``user``: the directory user's name, or the configured account's) with which roles, what
# (``action``, e.g. "control:suspend", "relevance:add-bet"), on what (``target``: a source, a rule,
# a token) and how (``detail``), and when.
audit_log = Table(
    "audit_log",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("user", String(256), nullable=False),
    Column("roles", String(200), nullable=False),
    Column("action", String(60), nullable=False),
    Column("target", String(2000), nullable=False),
    Column("detail", Text, nullable=False),
    Index("ix_audit_log_at", "at"),
)
