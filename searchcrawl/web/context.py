"""The web application's context: the services every view is handed, built once when the
application starts (create_app in app.py) and passed explicitly to each view (the views:
views/search_views.py, views/api_views.py, views/agent_views.py, views/sign_on_views.py,
views/admin_views.py, views/source_editor_views.py, views/backup_views.py, views/relevance_views.py,
views/analytics_views.py, views/token_views.py). It holds the configuration, the administrators' and the
searchers' sessions and login throttles, the templates, the Solr client, the database (opened at
its first use), the JSON API's token gate and rate limit, the relevance rules' cache, the query
analytics' writer, Solr's and Tika's health and the metrics' registry; and the search side the
search page, the JSON API and the agent endpoint share: their one search (``search``: the rules,
the request's semantic search, search/results.py's ``run_search``, the query log), their answer
(``answer``: search/answer_run.py's ``run_answer``, the model's slots, its log's throttle),
completions, the hits' links. The views are HTTP only.

Solr is reached two ways, and only these (tests/test_architecture.py, "The Searcher trims"): a
searcher's index (``searcher``: a TrimmedIndex bound to the principals of the one who searches,
built once a request where they are known, web/shared.py ``who_searches`` and the JSON API's
token check), the only thing a searcher's view is given; and the raw client, which no view
reads as an attribute, handed by ``operator_solr`` to the operators' untrimmed paths alone (the
administration's Solr health, explain-access, explain-answer's untrimmed view)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from anyio import CapacityLimiter
from jinja2 import Environment, PackageLoader, select_autoescape
from prometheus_client import CollectorRegistry
from starlette.requests import Request
from starlette.responses import HTMLResponse

from searchcrawl.access.decision import Principals
from searchcrawl.access.directory import Directory
from searchcrawl.index import managed
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.ops.health import HealthCheck
from searchcrawl.ops.launchers import Launcher
from searchcrawl.ops.metrics import ProjectCollector
from searchcrawl.ops.run_control import ACTIONS
from searchcrawl.ops.stalls import stalls
from searchcrawl.rules import ranking_rules
from searchcrawl.rules.lifecycle import delta_label, state_label
from searchcrawl.rules.notify_events import event_label
from searchcrawl.rules.schedules import Schedule
from searchcrawl.rules.status_codes import describe
from searchcrawl.search import suggestions
from searchcrawl.search.answer_parts import Answer
from searchcrawl.search.answer_run import ModelSlots, run_answer
from searchcrawl.search.answers import AnswerConfig
from searchcrawl.search.hybrid import SemanticSearch, semantic_search
from searchcrawl.search.query import COORDINATION, Coordination, matching
from searchcrawl.search.request import FACET_TITLES, SearchRequest
from searchcrawl.search.results import SearchPage, run_search
from searchcrawl.search.trimmed_index import OncePer, TrimmedIndex
from searchcrawl.store import Database
from searchcrawl.store.api_tokens import ApiTokens
from searchcrawl.store.audit_log import AuditLog
from searchcrawl.store.deltas import reason_text
from searchcrawl.store.models import run_mode_label, run_state_label
from searchcrawl.store.notifications import notification_state_label
from searchcrawl.store.relevance_rules import RelevanceStore
from searchcrawl.store.searches import Searches
from searchcrawl.system import translations
from searchcrawl.web import analytics, api
from searchcrawl.web.roles import AdminUser, RoleMap
from searchcrawl.web.sign_on.kerberos import KerberosAcceptor, KerberosConfig
from searchcrawl.web.sign_on.oidc import OidcClient, OidcConfig
from searchcrawl.web.sign_on.saml import SamlClient, SamlConfig
from searchcrawl.web.sign_on.searcher import Proxies, Searcher
from searchcrawl.web.sign_on.sessions import SESSION_COOKIE, LoginThrottle, SearcherSessions, Sessions
from searchcrawl.web.source_editor import TestCrawls

logger = logging.getLogger(__name__)

# why an answer is missing (run_answer's ``AnswerRun.failed``): logged at most once a minute
ANSWER_FAILED_LOG = OncePer(60)
# answers asked of the model at once (each holds one of the pages' threads until it answers): more
# get the hits alone, never a page that waits for a thread
ANSWERS_AT_ONCE = 4
# questions to the directory at once (searchers' lookups and sign-ins), in threads apart from
# the ones pages share: more wait for one of these, never for a visitor's search
DIRECTORY_THREADS = 64
CACHED_COPIES_AT_ONCE = 4  # cached copies read at once (search_views.cached)


def page_templates() -> Environment:
    """The pages' templates: autoescaped, their words in the request's language (system/translations.py:
    Jinja's "newstyle" gettext, which escapes the variables it formats in), numbers and dates by the
    language's locale (filters ``number``, ``percent``, ``moment``, ``day``)."""
    templates = Environment(
        loader=PackageLoader("searchcrawl.web", "templates"),
        autoescape=select_autoescape(default=True),
        extensions=["jinja2.ext.i18n"],
    )
    templates.install_gettext_callables(  # type: ignore[attr-defined]
        translations.translated, translations.translated_plural, newstyle=True, pgettext=translations.translated_in_context
    )
    templates.filters.update(
        number=translations.number, percent=translations.percent, moment=translations.moment, day=translations.day
    )
    templates.globals.update(current_language=translations.current, languages=translations.LANGUAGES)
    # the fixed vocabularies' values in the page's language (each one's labels beside its values)
    templates.globals.update(
        run_state_label=run_state_label,
        document_state_label=state_label,
        delta_label=delta_label,
        notification_state_label=notification_state_label,
        run_mode_label=run_mode_label,
        event_label=event_label,
    )
    return templates


def here(request: Request, code: int) -> str:
    """The page the language selector leads back to: a page shown (GET, 200) with its query; a
    refusal or a form's answer by its path alone (a refused link's target is never echoed)."""
    if request.method == "GET" and code == 200 and request.url.query:
        return f"{request.url.path}?{request.url.query}"
    return request.url.path


def log_search(writer: analytics.Analytics, page: SearchPage, seconds: float, client: str, user: str | None) -> str:
    """Logs a search (analytics.py: queued, never waited for) and returns its id, for its hits'
    click links (``analytics.click_url``), with the hits it showed (what a click on one skipped:
    search/click_judgments.py). ``client``: "web", "api" or "mcp" (``WebContext.search``)."""
    query = page.request
    filters = [*query.filters, ("from", query.date_from), ("to", query.date_to)]
    return writer.record(
        query.q,
        [(name, value) for name, value in filters if value],
        query.sort,
        query.page,
        page.total,
        seconds * 1000,
        client,
        user,
        # the first page's hits only: its clicks are what click judgments read
        shown=(page.first, [hit.url for hit in page.hits]) if query.page == 1 else (1, ()),
    )


@dataclass
class WebConfig:
    """What the application needs, resolved by `scrapy web` from the project's settings."""

    solr_url: str
    db_url: str
    cache_root: Path
    project_dir: Path
    source_names: Callable[[], list[str]]
    schedule_of: Callable[[str], Schedule | None]
    launcher: Launcher
    # secrets (Solr's and the administration's user and password, the click key, the crawls' whole
    # environment) are left out of the repr: a logged or asserted config never prints them
    solr_auth: tuple[str, str] | None = field(default=None, repr=False)
    credentials: tuple[str, str] | None = field(default=None, repr=False)
    prefix: str = ""
    rows: int = 10
    suggestions: bool = True  # SEARCHCRAWL_WEB_SUGGESTIONS: the search box's, while typing
    stale_after: float = 600
    session_lifetime: float = 8 * 3600
    explain_environ: dict[str, str] | None = field(default=None, repr=False)
    solr_timeout: float = 30
    # who searches: the directory that checks searchers' passwords and gives their principals
    # (None: no sign-in, everyone sees public documents only), a trusted proxy's user header
    # (SEARCHCRAWL_WEB_USER_HEADER, "" for none) and the proxies believed (SEARCHCRAWL_WEB_PROXIES)
    directory: Directory | None = None
    user_header: str = ""
    proxies: tuple[str, ...] = ()
    # the relevance rules a search applies are read again after this many seconds (changes made
    # by another process); synonyms and stopwords are pushed to Solr when the application starts
    relevance_ttl: float = 30
    judged_dir: Path | None = None  # the judged query sets measured on the relevance page (paths.judged_dir)
    relevance_sync_at_start: bool = True
    # query analytics (analytics.py): days kept (0: nothing logged), the searcher's name logged
    # too, and the key signing click links (None: a random one for this process)
    analytics_days: int = 0
    log_users: bool = False
    click_key: bytes | None = field(default=None, repr=False)
    # browser origins whose pages may call the JSON API (SEARCHCRAWL_WEB_API_ORIGINS; none: CORS off)
    api_origins: tuple[str, ...] = ()
    # each API token's rate (api.py's RateLimit): requests a minute (0: no limit) and burst
    # (SEARCHCRAWL_WEB_API_RATE, SEARCHCRAWL_WEB_API_BURST)
    api_rate: float = 600
    api_burst: int = 60
    # issue 60: /metrics (off unless ``metrics``; web/metrics_endpoint.py says who may read it), stall
    # detection's threshold, the metrics' and the Solr/Tika pings' caches, Tika's URL (pinged)
    # issue 79: the administration's roles (web/roles.py: SEARCHCRAWL_WEB_ADMINISTRATORS, _OPERATORS,
    # _RELEVANCE_EDITORS), for directory users; the sources folder (SEARCHCRAWL_SOURCES_DIR) and the settings in effect, for the
    # backup page (ops/configuration_backup.py: sources and notification settings)
    roles: RoleMap = field(default_factory=lambda: RoleMap({}))
    oidc: OidcConfig | None = None  # single sign-on with OpenID Connect (SEARCHCRAWL_OIDC_*: sign_on/oidc.py)
    saml: SamlConfig | None = None  # single sign-on with SAML 2.0 (SEARCHCRAWL_SAML_*: sign_on/saml.py)
    kerberos: KerberosConfig | None = None  # single sign-on with Kerberos (SEARCHCRAWL_KERBEROS_*: sign_on/kerberos.py)
    sources_dir: Path | None = None
    # issue 91: the source editor (and a restore) takes new seeds on loopback or link-local
    # addresses (SEARCHCRAWL_WEB_LOCAL_SEEDS; web/source_editor.py guarded_change)
    local_seeds: bool = False
    settings: dict[str, Any] = field(default_factory=dict, repr=False)
    metrics: bool = False
    metrics_token: str | None = field(default=None, repr=False)
    stall_after: float = 900
    metrics_cache: float = 60
    health_cache: float = 30
    tika_url: str = ""
    # issue 72: the public URL's origin (SEARCHCRAWL_WEB_PUBLIC_URL): forms may be posted from its
    # pages as from the origin a request came to; from no other (origins.py)
    public_origins: tuple[str, ...] = ()
    # issue 76: semantic search's models (SEARCHCRAWL_EMBEDDINGS, _PREVIOUS; "": off) and the
    # bound of one request to a remote model (SEARCHCRAWL_EMBED_TIMEOUT)
    embeddings: str = ""
    embeddings_previous: str = ""
    embed_timeout: float = 30
    # issue 100: the nonsense rule's requirements (SEARCHCRAWL_SEARCH_COORDINATION, _HYBRID; "": none)
    coordination: Coordination = COORDINATION
    # issue 77: answers with citations (SEARCHCRAWL_ANSWERS_*; None: off)
    answers: AnswerConfig | None = None
    # issue 93: extractive answers (SEARCHCRAWL_ANSWERS_EXTRACTIVE; the answers' budgets and
    # threshold, with or without a model server; None: off)
    extractive: AnswerConfig | None = None

    def principals_from_provider(self, kind: str) -> bool:
        """Whether a single sign-on of ``kind`` (oidc, saml) takes its principals from its
        provider's groups (``principals`` "token", or "auto" without a directory) rather than the directory."""
        config = {"oidc": self.oidc, "saml": self.saml}.get(kind)
        return config is not None and (config.principals == "token" or (config.principals == "auto" and self.directory is None))

    def sign_ins(self) -> bool:
        """Whether anyone can sign in but the configured account: a directory, or a single sign-on."""
        return any(way is not None for way in (self.directory, self.oidc, self.saml, self.kerberos))


@dataclass(frozen=True)
class WebSearch:
    """A search the web application ran (``WebContext.search``): its page of results, the id the
    search log gave it ("" without a query: not logged), for its hits' click links, and the
    request's semantic search (None when off), whose embedded query its answer reuses."""

    page: SearchPage
    search_id: str
    semantic: SemanticSearch | None


@dataclass
class WebContext:
    """The services of one web application (see the module's docstring)."""

    config: WebConfig
    sessions: Sessions = field(init=False)
    throttle: LoginThrottle = field(default_factory=LoginThrottle, init=False)
    templates: Environment = field(init=False)
    _database: Database | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _migrate_failed: bool = field(default=False, init=False)  # migrating is tried once a process
    # an API token just made, by administrator session, until the page it is redirected to shows it
    made: dict[str, dict[str, Any]] = field(default_factory=dict, init=False)
    # a backup uploaded and planned on the backup page, by administrator session, until restored
    restores: dict[str, dict[str, Any]] = field(default_factory=dict, init=False)
    # the source editor's test crawls, running in the background, by administrator session
    test_crawls: TestCrawls = field(default_factory=TestCrawls, init=False)
    _health: HealthCheck | None = field(default=None, init=False)
    _registry: CollectorRegistry | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.sessions = Sessions(
            self.config.credentials,
            self.config.session_lifetime,
            role_logins=self.config.roles.any and self.config.sign_ins(),
        )
        # single sign-on (sign_on/oidc.py): the provider's client and its pending sign-ins
        self.oidc = (
            OidcClient(self.config.oidc, groups_needed=self.config.principals_from_provider("oidc"))
            if self.config.oidc is not None
            else None
        )
        self.saml = SamlClient(self.config.saml) if self.config.saml is not None else None
        self.kerberos = KerberosAcceptor(self.config.kerberos) if self.config.kerberos is not None else None
        # searchers: sessions and a throttle of their own (a searcher's typos never slow an
        # administrator's login down, and no searcher session opens the administration)
        self.searchers = SearcherSessions(self.config.sign_ins(), self.config.session_lifetime)
        self.signin_throttle = LoginThrottle()
        self.directory_threads = CapacityLimiter(DIRECTORY_THREADS)  # shared.in_limited_thread
        # cached copies read a document's whole stored text (megabytes at most): a few at once, the
        # others wait for one of these, never for the threads every search shares
        self.cached_copies = CapacityLimiter(CACHED_COPIES_AT_ONCE)
        # the source editor's explains (processes of minutes): two at once (its test crawls: test_crawls)
        self.source_trials = CapacityLimiter(2)
        # single sign-on's requests to its provider (bounded by their timeouts): threads of their own
        self.sign_on_threads = CapacityLimiter(16)
        self.proxies = Proxies(self.config.proxies)
        self.templates = page_templates()
        self.templates.globals.update(
            base=self.config.prefix,
            facet_titles=FACET_TITLES,
            describe=describe,
            actions=ACTIONS,
            matching=matching,
            reason_text=reason_text,
            cached_link=self.cached_link,
        )
        # as a crawl reaches Solr: SOLR_URL may list a SolrCloud collection on several nodes
        # (private: a view gets a searcher's index, ``searcher``; an operator's path, ``operator_solr``)
        self._solr = SolrIndex(self.config.solr_url, timeout=self.config.solr_timeout, auth=self.config.solr_auth)
        # semantic search (search/hybrid.py): a model of the wrong dimension is refused here, at start
        self.semantic = semantic_search(
            self.config.embeddings, self.config.embeddings_previous, self._solr, self.config.embed_timeout
        )
        # the JSON API's token checks (api.py): bounded, each verdict kept a while; the database
        # is opened in the check's own thread, never on the event loop
        self.token_gate = api.TokenGate(lambda token: ApiTokens(self.database).check(token))
        # and each valid token's rate: checked on the event loop (a lock held for a few
        # arithmetic operations, nothing that waits)
        self.rate_limit = api.RateLimit(self.config.api_rate, self.config.api_burst)
        # the relevance rules every search applies (ranking_rules.py): cached, failing open
        self.relevance = ranking_rules.RuleCache(self._read_rules, self.config.relevance_ttl)
        self._sync_lock = threading.Lock()  # one push of synonyms and stopwords to Solr at a time
        self.answer_slots = ModelSlots(ANSWERS_AT_ONCE)  # answers waiting on the model (run_answer)
        self._reader: Database | None = None
        # query analytics: a background writer, so a search never waits for the database
        self.analytics = analytics.Analytics(
            lambda: Searches(self.database), self.config.analytics_days, self.config.log_users, self.config.click_key
        )  # its writer started by the application's lifespan (create_app): building one touches no database

    @property
    def database(self) -> Database:
        """The document table, opened at the first administration page or by the analytics
        writer's thread (at the start, when analytics is on): created or brought up to date as a
        crawl does (the buttons and the writer write to it), so `scrapy web` needs the database
        rights a crawl has. Migrating is tried once a process: when it fails (a database user
        without the right to change the schema), the next openings only check the schema
        (a schema a crawl brought up to date is used; another is refused) and say why."""
        with self._lock:
            if self._database is None:
                if not self._migrate_failed:
                    try:
                        self._database = Database(self.config.db_url, migrate=True)
                    except Exception as exc:
                        self._migrate_failed = True
                        logger.warning(
                            "Web application: the database could not be created or brought up to date (%s);"
                            " not tried again by this process: run a crawl, or give `scrapy web` the rights a crawl has",
                            analytics.short_error(exc),
                        )
                        raise
                else:
                    self._database = Database(self.config.db_url, migrate=False)
            return self._database

    def _rules_database(self) -> Database:
        """The administration's database when it is open, else one opened read-only for the
        search page (which never migrates nor creates it: a database not made yet holds no rules)."""
        with self._lock:
            database = self._database or self._reader
            if database is None:
                database = Database(self.config.db_url, migrate=False)
                if database.engine.url.database not in (None, "", ":memory:"):
                    self._reader = database
            return database

    def _read_rules(self) -> ranking_rules.Rules:
        return RelevanceStore(self._rules_database()).rules()

    def sync_relevance(self) -> bool:
        """Push the database's synonyms and stopwords to Solr (managed.py); True if Solr changed.
        One at a time (the start-up's and the relevance page's may come together), each reading
        the database once the one before has finished: a later push never puts back what an
        earlier one, having read the database after it, deleted."""
        with self._sync_lock:
            store = RelevanceStore(self._rules_database())
            synonyms = ranking_rules.synonym_map(terms for _id, terms in store.synonyms())
            return managed.sync(self._solr, synonyms, store.stopwords())

    def searcher(self, principals: Principals, known_by: str = "anonymous", csrf: str = "") -> Searcher:
        """The searcher of one request and the index as they may read it: the one place the web
        application binds principals to Solr (a TrimmedIndex), called where the searcher is known
        (web/shared.py ``who_searches``, the JSON API's and the agent endpoint's token check), once
        a request; a view searches through the Searcher's ``index`` alone."""
        return Searcher(TrimmedIndex(self._solr, principals), known_by, csrf)

    def operator_solr(self) -> SolrIndex:
        """The raw Solr client, untrimmed: for the operators' paths alone (the administration's
        Solr health, explain-access, explain-answer's untrimmed view), each named, with its reason,
        by tests/test_architecture.py's OPERATOR_SOLR_CALLERS; a searcher's query never gets it."""
        return self._solr

    @property
    def health(self) -> HealthCheck:
        """Solr's and Tika's pings, cached (ops/health.py): the overview's stalls and /metrics."""
        with self._lock:
            if self._health is None:
                # pings of their own, bounded at 5 s: a Solr that hangs never holds a scrape for
                # the search's SOLR timeout
                self._health = HealthCheck.of(
                    self.config.solr_url, self.config.tika_url, self.config.health_cache, 5, self.config.solr_auth
                )
            return self._health

    @property
    def registry(self) -> CollectorRegistry | None:
        """/metrics' registry of its own (ops/metrics.py), None while metrics are off."""
        if not self.config.metrics:
            return None
        health, database = self.health, self.database  # (each takes the lock)
        with self._lock:
            if self._registry is None:
                self._registry = CollectorRegistry(auto_describe=False)
                self._registry.register(
                    ProjectCollector(
                        database,
                        self.config.source_names,
                        health,
                        self.config.stall_after,
                        self.config.stale_after,
                        self.config.metrics_cache,
                    )
                )
                self._registry.register(api.ApiRefusals(self.token_gate, self.rate_limit))
            return self._registry

    def stalls(self, names: list[str] | None = None) -> list[Any]:
        """The stalled runs (ops/stalls.py), for the overview and the run page."""
        return stalls(
            self.database, datetime.now(UTC), self.config.stall_after, self.config.stale_after, self.health.now(), names
        )

    def close(self) -> None:
        self.analytics.close()
        if self._database is not None:
            self._database.close()
        if self._reader is not None:
            self._reader.close()

    def render(self, request: Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
        session = self.sessions.get(request.cookies.get(SESSION_COOKIE))
        html = self.templates.get_template(template).render(
            session=session,
            admin=getattr(request.state, "admin", None),  # who, and their roles (shared.admin_gate's)
            admin_enabled=self.sessions.enabled,
            signin_enabled=self.searchers.enabled,
            # a provider's name as the admin set it, or its default name (N_ in sign_on/oidc.py...) translated
            oidc_name=translations.translated(self.config.oidc.name) if self.config.oidc is not None else "",
            saml_name=translations.translated(self.config.saml.name) if self.config.saml is not None else "",
            kerberos_name=translations.translated(self.config.kerberos.name) if self.config.kerberos is not None else "",
            password_signin=self.config.directory is not None,
            here=here(request, code),
            **context,
        )
        return HTMLResponse(html, status_code=code)

    def url(self, path: str) -> str:
        return self.config.prefix + path

    def audit(self, admin: AdminUser, action: str, target: str = "", detail: str = "") -> None:
        """Record a change an administrator made (store/audit_log.py); blocking (call it in a
        thread). A log that cannot be written is said in the log, never the change's failure."""
        try:
            AuditLog(self.database).record(admin.name, f"{admin.role_names} ({admin.kind})", action, target, detail)
        except Exception as exc:  # noqa: BLE001 - the change is made; the log's failure is said
            logger.error("Audit log: %s %s %s not recorded: %s", admin.name, action, target, type(exc).__name__)

    def cached_link(self, doc_id: str, query: str = "") -> str:
        """The link of a hit's cached copy (search_views.cached), the search's words to mark."""
        return self.url("/cached?" + urlencode({"id": doc_id, **({"q": query} if query else {})}))

    def answer(
        self,
        question: str,
        index: TrimmedIndex,
        filters: list[str],
        params: dict[str, Any],
        ask_model: bool = True,
        semantic: SemanticSearch | None = None,
    ) -> Answer | None:
        """The answer to ``question`` from what the searcher of ``index`` may read, or None (the
        hits alone): search/answer_run.py's ``run_answer``, the model's answer where ``ask_model``
        and a model server, else the extractive one; the model asked by ``ANSWERS_AT_ONCE``
        answers at most (``answer_slots``), and why there is none logged at most once a minute.
        ``semantic``: the request's (``SemanticSearch.for_request``: its query embedded once),
        else the installation's."""
        generative = self.config.answers if ask_model else None
        run = run_answer(
            index, semantic or self.semantic, question, filters, params, generative, self.config.extractive, self.answer_slots
        )
        if run.failed and ANSWER_FAILED_LOG():
            logger.warning("%s", run.failed)
        return run.answer

    def completions(self, text: str, index: TrimmedIndex) -> list[suggestions.Suggestion]:
        """The completions of ``text`` that the searcher of ``index`` may see (suggestions.py): readable
        titles, and past queries (the query log's) that find a readable document; the search
        box's (/suggest) and the JSON API's alike. Raises IndexingError when Solr fails."""
        prefix = suggestions.clean(text, suggestions.MAX_PREFIX_CHARS)
        if not prefix.strip():
            return []
        try:
            candidates = self.query_candidates(prefix)
        except Exception as exc:  # noqa: BLE001 (the query log failing costs the titles nothing)
            logger.warning("Suggestions: no past queries: %s", type(exc).__name__)
            candidates = []
        return suggestions.suggest(index, prefix, candidates)

    def query_candidates(self, prefix: str) -> list[str]:
        """Past queries that found documents and begin with ``prefix``, most frequent first (the
        query log's, analytics.py, from memory); suggestions.suggest shows only those the
        searcher's own documents answer."""
        return self.analytics.completions(prefix, suggestions.MAX_CANDIDATES)

    def search(
        self,
        index: TrimmedIndex,
        query: SearchRequest,
        client: str,
        user: str | None,
        rows: int | None = None,
        spellcheck: bool = True,
        started: float | None = None,
    ) -> WebSearch:
        """The search of the search page (client "web"), the JSON API ("api") and the agents'
        endpoint ("mcp") alike, as the searcher of ``index`` may read: the relevance rules in
        effect, the request's semantic search (its query embedded once, for its answer too),
        search/results.py's ``run_search``, and the search logged (``log_search``) when it
        has a query. ``rows``: the page's size (the application's by default); ``started``: when
        the request began (``time.perf_counter``; now by default), the time logged. Blocking (call
        it in a thread); raises IndexingError when Solr fails, and nothing is logged."""
        started = time.perf_counter() if started is None else started
        rules = self.relevance.get()
        semantic = self.semantic.for_request() if self.semantic is not None else None
        page = run_search(index, query, rows or self.config.rows, spellcheck, rules, None, semantic, self.config.coordination)
        search_id = log_search(self.analytics, page, time.perf_counter() - started, client, user) if query.q else ""
        return WebSearch(page, search_id, semantic)

    def hit_link(self, search_id: str) -> Callable[[int, str], str]:
        """A hit's link on a result page: through ``/click`` (its rank recorded, then redirected)
        while analytics is on, else the document's URL itself."""

        def link(position: int, url: str) -> str:
            if not search_id or not self.analytics.enabled or not url:
                return url
            return self.url("/click?" + self.analytics.click_url(search_id, position, url))

        return link
