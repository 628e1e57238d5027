"""The example servers of `scrapy dev <kind>`: each source type tried in a minute (issue 92).

Each example starts the server the tests use (searchcrawl/dev/servers/), puts a few items into
it with permissions that differ, and says how to crawl it: a source file that works as written
(``Example.source``), the secret its crawl reads from the environment, and who may read which
item. Every item holds one marker word (``Example.readers``: word -> the users who may read it),
so that a search for it shows the permissions at work; tests/e2e/test_dev_examples.py crawls each
printed source file and searches as each user. The sign-in providers (oidc, saml) and the answers'
model (``SERVICES``) have no source: they give the web application's settings that use them.

The servers listen on 127.0.0.1 only, on free ports (never one a service of this machine holds),
in fresh folders under /tmp, with fixed example passwords: for trying a source type on one's own
machine, never for serving anyone. The ports and folders are each run's: the file printed is the
one that works.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path

# Marker words, one an item: rare enough that a search for one finds its item alone.
WORDS = ("albatross", "barnacle", "cormorant", "dolphin")


@dataclass(frozen=True)
class Example:
    """A running example server and how to crawl it."""

    kind: str
    server: str  # what runs, and where ("Dovecot 2.3 on 127.0.0.1:40123 (IMAPS)")
    source: str  # the source file's text ("": one of SERVICES, no source)
    secrets: Mapping[str, str]  # the environment variables its crawl reads: name -> value
    users: Mapping[str, tuple[str, ...]]  # each user's access tokens (as the searchers' directory gives them)
    readers: Mapping[str, frozenset[str]]  # an item's marker word -> the users who may read it
    logins: Mapping[str, str] = field(default_factory=dict)  # user -> password, to sign in to the server
    # the web application's settings (environment variables) that use the example: the searchers'
    # directory (`scrapy search --as`), a sign-in provider, the answers' model
    settings: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The source's name: ``dev-<kind>`` (its file ``dev-<kind>.toml``)."""
        return f"dev-{self.kind}"


def user_tokens(groups: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """Each user's tokens as sources give them by default: ``user:<id>``, ``group:<id>`` a group."""
    return {user: (f"user:{user}", *(f"group:{group}" for group in names)) for user, names in groups.items()}


def source_file(kind: str, options: Mapping[str, object]) -> str:
    """A source file of ``kind``: its ``[kind]`` table of ``options`` (a mapping value: a table of
    its own below it), each value written as TOML writes it (JSON's strings, lists and numbers are
    TOML's)."""
    lines, tables = [f'type = "{kind}"', f"[{kind}]"], []
    for key, value in options.items():
        if isinstance(value, Mapping):
            tables.append((key, value))
        else:
            lines.append(f"{toml_key(key)} = {json.dumps(value)}")
    for key, table in tables:
        lines.append(f"[{kind}.{key}]")
        lines += [f"{toml_key(name)} = {json.dumps(value)}" for name, value in table.items()]
    return "\n".join(lines) + "\n"


def toml_key(name: str) -> str:
    """A key as TOML writes it: bare where it may be, else quoted ("hr/pay")."""
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)


def mail(word: str, subject: str) -> bytes:
    message = EmailMessage()
    message["From"] = "Harbour Office <office@example.org>"
    message["To"] = "crew@example.org"
    message["Subject"] = subject
    message["Date"] = "Tue, 03 Mar 2026 09:00:00 +0000"
    message.set_content(f"{subject}: see the {word} note.\n")
    return message.as_bytes()


@contextmanager
def imap() -> Iterator[Example]:
    """Dovecot with its ACL plugin: alice's inbox, her Projects folder shared with the group sales
    (bob, carol), bob's inbox, and a public folder alice writes and the group board (carol,
    dave) reads."""
    from searchcrawl.dev.servers.dovecot import CRAWLER, USERS, MailServer

    server = MailServer().start()
    try:
        with server.client("alice") as client:
            client.append("INBOX", mail(WORDS[0], "Budget for the new quay"))
            client.create_folder("Projects")
            client.setacl("Projects", "$sales", "lr")
            client.append("Projects", mail(WORDS[1], "Ferry project plan"))
            client.append("Public/Notices", mail(WORDS[3], "The harbour closes at noon on Friday"))
            client.setacl("Public/Notices", "$board", "lr")
        with server.client("bob") as client:
            client.append("INBOX", mail(WORDS[2], "Sales call with the pilots"))
        yield Example(
            kind="imap",
            server=f"Dovecot on 127.0.0.1:{server.imaps_port} (IMAPS; IMAP with StartTLS on {server.imap_port})",
            source=source_file(
                "imap",
                {
                    "server": "127.0.0.1",
                    "port": server.imaps_port,
                    "tls": "implicit",
                    "ca_file": server.ca_file,
                    "username": CRAWLER,
                    "password_secret": "DEV_IMAP_PASSWORD",
                    "users": ["alice", "bob"],
                    "public_folders": True,
                },
            ),
            secrets={"DEV_IMAP_PASSWORD": server.crawler_password},
            users=user_tokens({user: groups for user, (_password, groups) in USERS.items()}),
            readers={
                WORDS[0]: frozenset({"alice"}),
                WORDS[1]: frozenset({"alice", "bob", "carol"}),
                WORDS[2]: frozenset({"bob"}),
                WORDS[3]: frozenset({"alice", "carol", "dave"}),
            },
            logins={user: password for user, (password, _groups) in USERS.items()},
        )
    finally:
        server.stop()


@contextmanager
def git() -> Iterator[Example]:
    """gitolite's repositories over smart HTTP: handbook for the group staff (alice, bob) and
    carol, budget for alice alone."""
    from searchcrawl.dev.servers.gitolite import CRAWLER, GitServer

    cache = Path(tempfile.mkdtemp(prefix="sc-dev-git-cache-"))  # the crawl's copies of the repositories
    server = GitServer()
    try:
        server.start()
        server.set_rules("@staff = alice bob\nrepo handbook\n    R = @staff carol\nrepo budget\n    R = alice\n")
        server.commit("handbook", {"README.md": f"# Handbook\n\nThe {WORDS[0]} rules of the harbour.\n"})
        server.commit("handbook", {"berths.md": f"# Berths\n\nWho moors where: the {WORDS[1]} list.\n"})
        server.commit("budget", {"plan.md": f"# Budget\n\nThe {WORDS[2]} figures for next year.\n"})
        yield Example(
            kind="git",
            server=f"gitolite, served by Apache on 127.0.0.1:{server.port}",
            source=source_file(
                "git",
                {
                    "branch": "main",
                    "username": CRAWLER,
                    "password_secret": "DEV_GIT_PASSWORD",
                    "cache_dir": str(cache),
                    "gitolite_conf": str(server.conf),
                    "repositories": {name: server.url(name) for name in ("handbook", "budget")},
                },
            ),
            secrets={"DEV_GIT_PASSWORD": server.crawler_password},
            users=user_tokens({"alice": (), "bob": (), "carol": ()}),
            readers={
                WORDS[0]: frozenset({"alice", "bob", "carol"}),
                WORDS[1]: frozenset({"alice", "bob", "carol"}),
                WORDS[2]: frozenset({"alice"}),
            },
        )
    finally:
        server.stop()
        shutil.rmtree(cache, ignore_errors=True)


@contextmanager
def dokuwiki() -> Iterator[Example]:
    """DokuWiki with namespace rules: a start page everyone reads, finance for the group finance
    (alice), private for bob alone."""
    from searchcrawl.dev.servers.dokuwiki_php import CRAWLER, GROUPS, WikiServer

    server = WikiServer().start()
    try:
        server.set_rules(
            ["*  @ALL  1", "finance:*  @ALL  0", "finance:*  @finance  1", "private:*  @ALL  0", "private:*  bob  1"]
        )
        server.put("start", f"====== Harbour wiki ======\nWelcome: the {WORDS[0]} page.\n")
        server.put("finance:budget", f"====== Budget ======\nThe {WORDS[1]} figures.\n")
        server.put("private:notes", f"====== Bob's notes ======\nThe {WORDS[2]} list.\n")
        users = ("alice", "bob", "carol")
        yield Example(
            kind="dokuwiki",
            server=f"DokuWiki under PHP's web server on 127.0.0.1:{server.port}",
            source=source_file(
                "dokuwiki",
                {
                    "url": server.url,
                    "username": CRAWLER,
                    "password_secret": "DEV_DOKUWIKI_PASSWORD",
                    "acl_file": str(server.acl_file),
                    "superuser": ["@admin"],
                    "group_token": "group:{id}",
                },
            ),
            secrets={"DEV_DOKUWIKI_PASSWORD": server.password(CRAWLER)},
            users=user_tokens({user: GROUPS[user] for user in users}),
            readers={
                WORDS[0]: frozenset(users),
                WORDS[1]: frozenset({"alice"}),
                WORDS[2]: frozenset({"bob"}),
            },
            logins={user: server.password(user) for user in users},
        )
    finally:
        server.stop()


@contextmanager
def cmis() -> Iterator[Example]:
    """Apache Chemistry's OpenCMIS InMemory repository: a folder harbour with a welcome note
    anyone reads, a budget alice reads, minutes bob and carol read."""
    from searchcrawl.dev.cmis_runner import DevCmis
    from searchcrawl.dev.jvm_server import free_port
    from searchcrawl.dev.servers.cmis_repository import CRAWLER, CmisRepository

    folder = Path(tempfile.mkdtemp(prefix="sc-dev-cmis-"))
    runner = DevCmis(folder, free_port())
    try:
        repository = CmisRepository(runner.start(timeout=300))
        top = "/harbour"
        repository.folder(top)
        repository.document(top, "welcome.txt", f"Welcome to the harbour: the {WORDS[0]} note.\n")
        repository.restrict(repository.document(top, "budget.txt", f"The {WORDS[1]} figures.\n"), ["alice"])
        repository.restrict(repository.document(top, "minutes.txt", f"The {WORDS[2]} minutes.\n"), ["bob", "carol"])
        users = ("alice", "bob", "carol")
        yield Example(
            kind="cmis",
            server=f"OpenCMIS InMemory on 127.0.0.1:{runner.port} (any password)",
            source=source_file(
                "cmis",
                {
                    "url": repository.url,
                    "folder": top,
                    "username": CRAWLER,
                    "password_secret": "DEV_CMIS_PASSWORD",
                    "anyone_token": "public",
                },
            ),
            secrets={"DEV_CMIS_PASSWORD": "any-password"},
            users=user_tokens(dict.fromkeys(users, ())),
            readers={
                WORDS[0]: frozenset(users),
                WORDS[1]: frozenset({"alice"}),
                WORDS[2]: frozenset({"bob", "carol"}),
            },
        )
    finally:
        runner.stop()
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def webdav() -> Iterator[Example]:
    """Apache httpd with mod_dav, its users those of a slapd of its own: notes for all-staff
    (alice through finance, bob), finance/ for finance (alice), private/ for bob, board/ for
    all-staff and carol."""
    from searchcrawl.dev.servers.apache_webdav import CRAWLER, WebdavServer
    from searchcrawl.dev.servers.slapd import USERS, DirectoryServer

    folder = Path(tempfile.mkdtemp(prefix="sc-dev-slapd-"))
    directory = DirectoryServer(folder)
    server: WebdavServer | None = None
    try:
        directory.start()
        server = WebdavServer(directory).start()
        server.write("notes.txt", f"Harbour notes: the {WORDS[0]} list.\n")
        server.write("finance/budget.txt", f"Budget: the {WORDS[1]} figures.\n")
        server.write("private/todo.txt", f"Bob's list: the {WORDS[2]} chores.\n")
        server.write("board/minutes.txt", f"Board minutes: the {WORDS[3]} decision.\n")
        searchers = directory.searchers()
        tokens = {user: tuple(sorted(searchers.principals(user).tokens - {"public"})) for user in USERS}
        yield Example(
            kind="webdav",
            server=f"Apache httpd with mod_dav on 127.0.0.1:{server.port}, its users in slapd at {directory.url}",
            source=source_file(
                "webdav",
                {
                    "root": server.url,
                    "username": CRAWLER,
                    "password_secret": "DEV_WEBDAV_PASSWORD",
                    "apache_config": [str(server.config_file)],
                },
            ),
            secrets={"DEV_WEBDAV_PASSWORD": server.crawler_password},
            users=tokens,
            readers={
                WORDS[0]: frozenset({"alice", "bob"}),
                WORDS[1]: frozenset({"alice"}),
                WORDS[2]: frozenset({"bob"}),
                WORDS[3]: frozenset({"alice", "bob", "carol"}),
            },
            logins=dict(directory.passwords),
            settings=directory.settings(),
        )
    finally:
        if server is not None:
            server.stop()
        directory.stop()
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def redmine() -> Iterator[Example]:
    """Redmine on SQLite with roles: the public project harbour (alice a Developer, bob a
    Reporter, the group auditors, carol, Auditors of Support issues) and the private project
    finance (alice a Reporter, bob a Watcher of his own issues); who may read each issue is
    Redmine's own answer."""
    from searchcrawl.dev.servers.redmine_thin import CRAWLER, USERS, RedmineServer

    server = RedmineServer().start()
    try:
        support = 3  # Redmine's default trackers: Bug 1, Feature 2, Support 3
        issues = {
            WORDS[0]: server.issue("harbour", "Crane 4 is stuck", f"The {WORDS[0]} crane will not turn."),
            WORDS[1]: server.issue("harbour", "Night watch roster", f"The {WORDS[1]} roster.", is_private=True),
            WORDS[2]: server.issue("harbour", "Gate badge lost", f"A {WORDS[2]} badge.", tracker_id=support),
            WORDS[3]: server.issue("finance", "Harbour dues for 2027", f"The {WORDS[3]} dues."),
        }
        yield Example(
            kind="redmine",
            server=f"Redmine on SQLite, served by thin on 127.0.0.1:{server.port}",
            source=source_file(
                "redmine",
                {
                    "url": server.url,
                    "username": CRAWLER,
                    "password_secret": "DEV_REDMINE_PASSWORD",
                    "projects": ["harbour", "finance"],
                    "anonymous_token": "public",
                },
            ),
            secrets={"DEV_REDMINE_PASSWORD": server.password(CRAWLER)},
            users=user_tokens(dict.fromkeys(USERS, ())),
            readers={word: frozenset(user for user in USERS if server.can_read(user, issue)) for word, issue in issues.items()},
            logins={user: server.password(user) for user in USERS},
        )
    finally:
        server.stop()


# where `scrapy web` answers by default (SEARCHCRAWL_WEB_PORT): the sign-in providers send browsers back there
WEB_ORIGINS = ("http://127.0.0.1:8080", "http://localhost:8080")


@contextmanager
def oidc() -> Iterator[Example]:
    """panva's oidc-provider under Node.js, its development login (any password): alice (groups
    finance, search-admins), bob (all-staff), carol (none); its client's redirect URIs those of
    `scrapy web` on this machine."""
    from searchcrawl.dev.servers.oidc_node import ACCOUNTS, OidcProvider

    provider = OidcProvider([f"{origin}/login/oidc/callback" for origin in WEB_ORIGINS]).start()
    try:
        yield Example(
            kind="oidc",
            server=f"an OpenID Connect provider (oidc-provider under Node.js) at {provider.issuer}, any password",
            source="",
            secrets={},
            users=user_tokens({user: tuple(account["groups"]) for user, account in ACCOUNTS.items()}),
            readers={},
            settings={
                "SEARCHCRAWL_OIDC_ISSUER": provider.issuer,
                "SEARCHCRAWL_OIDC_CLIENT_ID": provider.client_id,
                "SEARCHCRAWL_OIDC_CLIENT_SECRET": provider.client_secret,
                "SEARCHCRAWL_OIDC_SCOPES": "openid profile groups",
                "SEARCHCRAWL_OIDC_PRINCIPALS": "token",
                "SEARCHCRAWL_OIDC_NAME": "the example provider",
            },
        )
    finally:
        provider.stop()


@contextmanager
def saml() -> Iterator[Example]:
    """SimpleSAMLphp's identity provider under PHP's web server: alice (groups finance,
    search-admins), bob (all-staff), carol (none), each with a password; its service provider
    `scrapy web` on this machine (http://127.0.0.1:8080, its public URL)."""
    from searchcrawl.dev.servers.simplesamlphp import USERS, SamlIdp

    origin = WEB_ORIGINS[0]
    idp = SamlIdp(f"{origin}/login/saml/metadata", f"{origin}/login/saml/acs").start()
    try:
        yield Example(
            kind="saml",
            server=f"a SAML 2.0 identity provider (SimpleSAMLphp) at {idp.base}",
            source="",
            secrets={},
            users=user_tokens({user: tuple(groups) for user, (_password, groups) in USERS.items()}),
            readers={},
            logins={user: password for user, (password, _groups) in USERS.items()},
            settings={
                "SEARCHCRAWL_SAML_IDP_METADATA": idp.metadata_url,
                "SEARCHCRAWL_WEB_PUBLIC_URL": origin,
                "SEARCHCRAWL_SAML_PRINCIPALS": "token",
                "SEARCHCRAWL_SAML_NAME": "the example IdP",
            },
        )
    finally:
        idp.stop()


@contextmanager
def model() -> Iterator[Example]:
    """llama.cpp's OpenAI-compatible server with SmolLM2-135M-Instruct: the answers' model
    (docs/answers.md), with wordllama's embeddings for semantic search, which answers need."""
    from searchcrawl.dev.servers.llama_server import MODEL, ModelServer

    folder = Path(tempfile.mkdtemp(prefix="sc-dev-model-"))
    server = ModelServer(folder / "server.log")
    try:
        server.start()
        yield Example(
            kind="model",
            server=f"llama.cpp's OpenAI-compatible server with SmolLM2-135M-Instruct at {server.url}",
            source="",
            secrets={},
            users={},
            readers={},
            settings={
                "SEARCHCRAWL_EMBEDDINGS": "wordllama",
                "SEARCHCRAWL_ANSWERS_URL": server.url,
                "SEARCHCRAWL_ANSWERS_MODEL": MODEL,
                "SEARCHCRAWL_ANSWERS_PASSAGES": "3",  # a small model on a small machine: a short prompt
                "SEARCHCRAWL_ANSWERS_TIMEOUT": "300",
            },
        )
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


# kind -> the example's context manager, in the order the documentation lists them
EXAMPLES: dict[str, Callable[[], AbstractContextManager[Example]]] = {
    "imap": imap,
    "webdav": webdav,
    "git": git,
    "dokuwiki": dokuwiki,
    "redmine": redmine,
    "cmis": cmis,
    "oidc": oidc,
    "saml": saml,
    "model": model,
}
# the kinds that serve the web application (sign-in providers, the answers' model), not sources
SERVICES = frozenset({"oidc", "saml", "model"})
