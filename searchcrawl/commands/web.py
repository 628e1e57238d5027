"""`scrapy web [--host H] [--port N] [--prefix /path]`: the search and administration pages.

Serves searchcrawl/web's application with uvicorn on SEARCHCRAWL_WEB_HOST:SEARCHCRAWL_WEB_PORT
(127.0.0.1:8080 by default: reaching it from elsewhere is a decision, made with ``--host``), and
records where it listens in the data directory while it does (web/serving.py), so that every
crawl refuses its pages, one started from a shell that does not name its port too.
The pages read Solr (SOLR_URL) and the document table of this project's settings; the buttons
start crawls as `scrapy control` does (scrapyd when SEARCHCRAWL_SCRAPYD_URL is set, else local
processes). Administration needs SEARCHCRAWL_WEB_USERNAME and SEARCHCRAWL_WEB_PASSWORD(_FILE).
Searchers sign in against the LDAP directory (SEARCHCRAWL_LDAP_URL ...), or are named by a
trusted reverse proxy's header (SEARCHCRAWL_WEB_USER_HEADER, believed from SEARCHCRAWL_WEB_PROXIES).
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.settings import BaseSettings
from scrapy.utils.conf import closest_scrapy_cfg

from searchcrawl.access.directory_setting import directory_of
from searchcrawl.config.source import SourceError, find_source_files
from searchcrawl.crawl.own_services import own_service_environ
from searchcrawl.crawl.spiderloader import SourceSpiderLoader
from searchcrawl.ops.launchers import launcher_for
from searchcrawl.rules.schedules import Schedule
from searchcrawl.search.answers import ANSWERS_API_KEY, AnswerConfig, answer_config, retrieval_config
from searchcrawl.search.query import Coordination
from searchcrawl.system import paths, secrets

if TYPE_CHECKING:  # the web application is imported when the command runs
    from searchcrawl.web.app import WebConfig
    from searchcrawl.web.roles import RoleMap

logger = logging.getLogger(__name__)
METRICS_TOKEN = "SEARCHCRAWL_WEB_METRICS_TOKEN"  # web/metrics_endpoint.py's TOKEN (not imported: loaded by every command)
PREFIX = re.compile(r"^(/[A-Za-z0-9._~-]+)*$")


def oidc_config(settings: BaseSettings) -> Any:
    """Single sign-on's configuration (web/sign_on/oidc.py) from SEARCHCRAWL_OIDC_*, or None when off."""
    from searchcrawl.web.sign_on.oidc import OidcConfig

    issuer = (settings.get("SEARCHCRAWL_OIDC_ISSUER") or "").strip()
    if not issuer:
        return None
    client_id = (settings.get("SEARCHCRAWL_OIDC_CLIENT_ID") or "").strip()
    secret = secrets.secret(secrets.OIDC_CLIENT_SECRET)
    if not client_id or not secret:
        raise UsageError(
            f"SEARCHCRAWL_OIDC_ISSUER is set: set SEARCHCRAWL_OIDC_CLIENT_ID and {secrets.OIDC_CLIENT_SECRET}(_FILE) too"
        )
    if not issuer.lower().startswith("https://") and urlsplit(issuer).hostname not in ("127.0.0.1", "localhost", "::1"):
        raise UsageError("SEARCHCRAWL_OIDC_ISSUER must be an https:// URL (http only for a provider on this machine)")
    principals = principals_mode(settings, "SEARCHCRAWL_OIDC_PRINCIPALS")
    return OidcConfig(
        issuer=issuer,
        client_id=client_id,
        client_secret=secret,
        scopes=settings.get("SEARCHCRAWL_OIDC_SCOPES") or "openid profile email",
        user_claim=settings.get("SEARCHCRAWL_OIDC_USER_CLAIM") or "preferred_username",
        groups_claim=settings.get("SEARCHCRAWL_OIDC_GROUPS_CLAIM") or "groups",
        principals=principals,
        name=settings.get("SEARCHCRAWL_OIDC_NAME") or "single sign-on",
    )


def principals_mode(settings: BaseSettings, name: str) -> str:
    """A single sign-on's SEARCHCRAWL_*_PRINCIPALS: auto, token or directory (which needs one)."""
    mode = (settings.get(name) or "auto").strip()
    if mode not in ("auto", "token", "directory"):
        raise UsageError(f"{name} must be auto, token or directory")
    if mode == "directory" and not settings.get("SEARCHCRAWL_LDAP_URL"):
        raise UsageError(f"{name} = directory needs a directory (SEARCHCRAWL_LDAP_URL)")
    return mode


def saml_config(settings: BaseSettings) -> Any:
    """SAML single sign-on's configuration (web/sign_on/saml.py) from SEARCHCRAWL_SAML_*, or None when off."""
    from searchcrawl.web.sign_on.saml import SamlConfig

    metadata = (settings.get("SEARCHCRAWL_SAML_IDP_METADATA") or "").strip()
    if not metadata:
        return None
    if metadata.lower().startswith("http://") and urlsplit(metadata).hostname not in ("127.0.0.1", "localhost", "::1"):
        raise UsageError("SEARCHCRAWL_SAML_IDP_METADATA must be an https:// URL or a file (http only for an IdP on this machine)")
    if not public_origins_of(settings):
        raise UsageError("SAML sign-in needs the application's public URL: set SEARCHCRAWL_WEB_PUBLIC_URL (https://...)")
    return SamlConfig(
        idp_metadata=metadata,
        entity_id=(settings.get("SEARCHCRAWL_SAML_ENTITY_ID") or "").strip(),
        user_attribute=settings.get("SEARCHCRAWL_SAML_USER_ATTRIBUTE") or "uid",
        groups_attribute=settings.get("SEARCHCRAWL_SAML_GROUPS_ATTRIBUTE") or "groups",
        principals=principals_mode(settings, "SEARCHCRAWL_SAML_PRINCIPALS"),
        name=settings.get("SEARCHCRAWL_SAML_NAME") or "single sign-on (SAML)",
    )


def kerberos_config(settings: BaseSettings) -> Any:
    """Kerberos single sign-on's configuration (web/sign_on/kerberos.py), or None when off."""
    from searchcrawl.web.sign_on.kerberos import KerberosConfig

    keytab = (settings.get("SEARCHCRAWL_KERBEROS_KEYTAB") or "").strip()
    if not keytab:
        return None
    realm = (settings.get("SEARCHCRAWL_KERBEROS_REALM") or "").strip()
    service = (settings.get("SEARCHCRAWL_KERBEROS_SERVICE") or "").strip()
    if not realm or not service:
        raise UsageError(
            "SEARCHCRAWL_KERBEROS_KEYTAB is set: set SEARCHCRAWL_KERBEROS_REALM (the realm whose users are believed) and"
            " SEARCHCRAWL_KERBEROS_SERVICE (this service's principal, HTTP/<host>)"
        )
    if not os.access(keytab, os.R_OK):
        raise UsageError(f"SEARCHCRAWL_KERBEROS_KEYTAB: {keytab} cannot be read")
    try:
        import gssapi  # noqa: F401 - present, or the sign-in could not accept a ticket
    except ImportError:
        raise UsageError(
            "Kerberos sign-in needs python-gssapi: bash deploy/bootstrap.sh kerberos (Debian's python3-gssapi)"
        ) from None
    return KerberosConfig(
        keytab=keytab,
        realm=realm,
        service=service,
        name=settings.get("SEARCHCRAWL_KERBEROS_NAME") or "Windows sign-in (Kerberos)",
    )


def trusted_proxies(proxies: list[str]) -> tuple[str, ...]:
    """SEARCHCRAWL_WEB_PROXIES: the addresses whose X-Forwarded-For, X-Forwarded-Proto and user
    header (SEARCHCRAWL_WEB_USER_HEADER) are believed; none when it is empty. The application
    reads those headers itself (web/app.py: it needs the connection's own peer to believe a user
    header), so uvicorn runs with its proxy headers off (it would otherwise fall back to its
    FORWARDED_ALLOW_IPS variable or 127.0.0.1 and ::1). "*" is refused: every client could then
    name the address it is counted under, and the user it is."""
    trusted = tuple(part.strip() for part in proxies if part.strip())
    if "*" in trusted:
        raise UsageError('SEARCHCRAWL_WEB_PROXIES: "*" would believe every client\'s X-Forwarded-For; name the proxies')
    return trusted


def user_header(name: str, proxies: tuple[str, ...]) -> str:
    """SEARCHCRAWL_WEB_USER_HEADER checked: a header name, and proxies to believe it from."""
    name = name.strip()
    if name and not re.fullmatch(r"[A-Za-z0-9-]+", name):
        raise UsageError(f"SEARCHCRAWL_WEB_USER_HEADER: {name!r} is not a header name")
    if name and not proxies:
        raise UsageError("SEARCHCRAWL_WEB_USER_HEADER needs SEARCHCRAWL_WEB_PROXIES: the proxies it is believed from")
    return name.lower()


def api_origins(values: list[str]) -> tuple[str, ...]:
    """SEARCHCRAWL_WEB_API_ORIGINS checked (web/api.py's normal_origins)."""
    from searchcrawl.web.api import normal_origins

    try:
        return normal_origins(values)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def public_origins_of(settings: Any) -> tuple[str, ...]:
    """The origin of SEARCHCRAWL_WEB_PUBLIC_URL (else SEARCHCRAWL_NOTIFY_BASE_URL's), checked
    (web/origins.py): the forms may be posted from its pages too."""
    from searchcrawl.web.origins import public_origins

    url = settings.get("SEARCHCRAWL_WEB_PUBLIC_URL") or settings.get("SEARCHCRAWL_NOTIFY_BASE_URL") or ""
    try:
        return public_origins([url])
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def api_rate(rate: float, burst: int) -> tuple[float, int]:
    """SEARCHCRAWL_WEB_API_RATE and SEARCHCRAWL_WEB_API_BURST checked (web/api.py's RateLimit)."""
    if not rate >= 0 or rate == float("inf"):  # NaN too
        raise UsageError(f"SEARCHCRAWL_WEB_API_RATE: requests a minute, 0 for no limit, got {rate!r}")
    if burst < 1:
        raise UsageError(f"SEARCHCRAWL_WEB_API_BURST: requests at once, 1 or more, got {burst!r}")
    return rate, burst


def normal_prefix(prefix: str) -> str:
    """``/search`` from "search/", "/search" or "/search/"; "" for none. Only plain path segments."""
    prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
    if not PREFIX.match(prefix):
        raise UsageError(f"a path prefix is made of plain path segments such as /search, got {prefix!r}")
    return prefix


def _click_key(path: str) -> bytes:
    """SEARCHCRAWL_WEB_CLICK_KEY_FILE's key (web/analytics.py), or a random one for this process."""
    from searchcrawl.web.analytics import click_key

    try:
        return click_key(path)
    except (OSError, ValueError) as exc:
        raise UsageError(f"SEARCHCRAWL_WEB_CLICK_KEY_FILE: {exc}") from None


def _extractive_config(settings: BaseSettings) -> AnswerConfig | None:
    """The passages' retrieval for extractive answers (search/extractive.py), None when
    SEARCHCRAWL_ANSWERS_EXTRACTIVE is off."""
    return retrieval_config(settings.get) if settings.getbool("SEARCHCRAWL_ANSWERS_EXTRACTIVE") else None


class Command(ScrapyCommand):
    requires_project = True

    def syntax(self) -> str:
        return "[--host H] [--port N] [--prefix /path]"

    def short_desc(self) -> str:
        return "Serve the search page and the administration pages (127.0.0.1:8080 by default)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--host", default=None, help="address to listen on (default: SEARCHCRAWL_WEB_HOST, 127.0.0.1)")
        parser.add_argument("--port", type=int, default=None, help="port (default: SEARCHCRAWL_WEB_PORT, 8080)")
        parser.add_argument("--prefix", default=None, help="path prefix behind a reverse proxy (default: SEARCHCRAWL_WEB_PREFIX)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from searchcrawl.web.app import create_app
        from searchcrawl.web.serving import serve

        assert self.settings is not None and self.crawler_process is not None
        settings = self.settings
        loader = self.crawler_process.spider_loader
        assert isinstance(loader, SourceSpiderLoader)  # SPIDER_LOADER_CLASS (searchcrawl/settings.py)
        try:
            find_source_files(paths.sources_dir(settings))  # a sources folder that is none: said here, not by a page
        except SourceError as exc:
            print(f"searchcrawl: {exc}", file=sys.stderr)
            self.exitcode = 1
            return
        host = opts.host or settings.get("SEARCHCRAWL_WEB_HOST")
        port = opts.port if opts.port is not None else settings.getint("SEARCHCRAWL_WEB_PORT")
        prefix = opts.prefix if opts.prefix is not None else settings.get("SEARCHCRAWL_WEB_PREFIX", "")
        config = web_config(settings, loader, host, port, prefix)
        _become(config.explain_environ or {})
        _say_what_is_off(config)
        logger.info("Serving searchcrawl's pages on http://%s:%d%s/", host, port, config.prefix)
        # forwarded headers are the application's to read (trusted_proxies); where it listens is
        # recorded in the data directory for every crawl, which refuses it (web/serving.py)
        serve(create_app(config), host, port, paths.data_dir(settings))


def web_config(settings: BaseSettings, loader: SourceSpiderLoader, host: str, port: int, prefix: str) -> WebConfig:
    """The application's configuration (web/app.py) for serving on ``host:port`` under ``prefix``,
    each setting checked (a wrong one is a usage error that names it), with the environment the
    crawls and explains it starts get (``explain_environ``: ``_environ_for_crawls``). It changes
    nothing, the process's environment included: `scrapy web` makes that the crawls' itself."""
    from searchcrawl.web.app import WebConfig

    credentials, metrics_token, crawls_environ = _environ_for_crawls(settings, host, port)
    project_cfg = closest_scrapy_cfg()
    proxies = trusted_proxies(settings.getlist("SEARCHCRAWL_WEB_PROXIES"))
    rate, burst = api_rate(settings.getfloat("SEARCHCRAWL_WEB_API_RATE"), settings.getint("SEARCHCRAWL_WEB_API_BURST"))
    return WebConfig(
        solr_url=paths.solr_url(settings),
        solr_auth=paths.solr_auth(settings),
        db_url=paths.db_url(settings),
        cache_root=paths.data_dir(settings) / "cache",
        project_dir=Path(project_cfg).parent if project_cfg else Path.cwd(),
        source_names=functools.partial(_source_names, loader),
        schedule_of=functools.partial(_schedule_of, loader),
        launcher=launcher_for(settings),
        credentials=credentials if credentials and credentials[1] else None,
        prefix=normal_prefix(prefix),
        rows=settings.getint("SEARCHCRAWL_WEB_ROWS"),
        suggestions=settings.getbool("SEARCHCRAWL_WEB_SUGGESTIONS", True),
        stale_after=settings.getfloat("SEARCHCRAWL_LEASE_SECONDS"),
        session_lifetime=settings.getfloat("SEARCHCRAWL_WEB_SESSION_HOURS") * 3600,
        explain_environ=crawls_environ,
        directory=directory_of(settings),
        user_header=user_header(settings.get("SEARCHCRAWL_WEB_USER_HEADER") or "", proxies),
        proxies=proxies,
        analytics_days=settings.getint("SEARCHCRAWL_WEB_ANALYTICS_DAYS"),
        judged_dir=paths.judged_dir(settings),
        log_users=settings.getbool("SEARCHCRAWL_WEB_LOG_USERS"),
        click_key=_click_key(settings.get("SEARCHCRAWL_WEB_CLICK_KEY_FILE") or ""),
        api_origins=api_origins(settings.getlist("SEARCHCRAWL_WEB_API_ORIGINS")),
        api_rate=rate,
        api_burst=burst,
        metrics=settings.getbool("SEARCHCRAWL_WEB_METRICS"),
        metrics_token=metrics_token,
        stall_after=settings.getfloat("SEARCHCRAWL_STALL_AFTER"),
        metrics_cache=settings.getfloat("SEARCHCRAWL_METRICS_CACHE_SECONDS"),
        health_cache=settings.getfloat("SEARCHCRAWL_HEALTH_CACHE_SECONDS"),
        tika_url=settings.get("SEARCHCRAWL_TIKA_URL") or "",
        public_origins=public_origins_of(settings),
        embeddings=settings.get("SEARCHCRAWL_EMBEDDINGS") or "",
        embeddings_previous=settings.get("SEARCHCRAWL_EMBEDDINGS_PREVIOUS") or "",
        embed_timeout=settings.getfloat("SEARCHCRAWL_EMBED_TIMEOUT"),
        coordination=Coordination.from_settings(settings.get),
        answers=answer_config(settings.get, secrets.secret(ANSWERS_API_KEY)),
        extractive=_extractive_config(settings),
        roles=_roles(settings),
        oidc=oidc_config(settings),
        saml=saml_config(settings),
        kerberos=kerberos_config(settings),
        sources_dir=paths.sources_dir(settings),
        local_seeds=settings.getbool("SEARCHCRAWL_WEB_LOCAL_SEEDS"),
        settings=settings.copy_to_dict(),
    )


def _environ_for_crawls(
    settings: BaseSettings, host: str, port: int
) -> tuple[tuple[str, str] | None, str | None, dict[str, str]]:
    """The administration's credentials and /metrics' bearer token (web/metrics_endpoint.py), and
    the environment the crawls and explains this server starts get: its own, without those
    secrets, and telling them where its services are, this server's own address included, so that
    they refuse them (crawl/own_services.py). Read, never changed."""
    credentials = secrets.credentials(secrets.WEB_USERNAME, secrets.WEB_PASSWORD)
    metrics_token = secrets.secret(METRICS_TOKEN)
    environ = {name: value for name, value in os.environ.items() if name not in (secrets.WEB_PASSWORD, METRICS_TOKEN)}
    return credentials, metrics_token, {**environ, **own_service_environ(settings.get, host, port)}


def _become(environ: dict[str, str]) -> None:
    """This process's environment made ``environ`` (the crawls'), for the crawls it starts as
    processes of its own (ops/launchers.py LocalLauncher), which inherit it: its secrets gone."""
    for name in set(os.environ) - set(environ):
        del os.environ[name]
    os.environ.update(environ)


def _source_names(loader: SourceSpiderLoader) -> list[str]:
    """The sources' names, read anew: new and edited source files show without a restart."""
    loader.reload()
    try:
        return sorted(loader.list())
    except SourceError as exc:  # the sources folder went away while serving: no source, said in the log
        logger.error("No sources: %s", exc)
        return []


def _schedule_of(loader: SourceSpiderLoader, name: str) -> Schedule | None:
    """The crawl schedule of the source ``name`` (ValueError: its file is broken)."""
    try:
        return loader.load(name).source.settings.crawl_schedule
    except SourceError as exc:
        raise ValueError(f"broken source file: {exc}") from None


def _roles(settings: BaseSettings) -> RoleMap:
    """The administration roles of the settings (web/roles.py ``RoleMap``); a usage error when one is wrong."""
    from searchcrawl.web.roles import ROLE_SETTINGS, RoleError, RoleMap, principal_list

    try:
        return RoleMap.parse({role: principal_list(settings.get(name)) for role, name in ROLE_SETTINGS.items()})
    except RoleError as exc:
        raise UsageError(str(exc)) from None


def _say_what_is_off(config: WebConfig) -> None:
    """At start-up, in the log: the administration pages off (no password, no roles with a
    directory), roles no one can sign in with, search sign-in off, and the header searchers are
    known by."""
    if config.roles.any and config.directory is None and config.oidc is None and config.saml is None and config.kerberos is None:
        logger.warning("Administration roles are set but no directory (SEARCHCRAWL_LDAP_URL): nobody can log in with them")
    if config.credentials is None and not (config.roles.any and config.directory is not None):
        logger.warning(
            "Administration pages are off: set SEARCHCRAWL_WEB_USERNAME and SEARCHCRAWL_WEB_PASSWORD(_FILE), or roles"
            " for directory users (SEARCHCRAWL_WEB_ADMINISTRATORS, ...), to enable them"
        )
    if config.directory is None:
        logger.info("Search sign-in is off (no SEARCHCRAWL_LDAP_URL): searchers see public documents only")
    if config.user_header:
        logger.info("Searchers known by the %s header from %s", config.user_header, ", ".join(config.proxies))
