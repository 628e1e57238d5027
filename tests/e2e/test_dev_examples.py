"""`scrapy dev <kind>` (searchcrawl/commands/dev.py, issue 92 point 2): each example server starts
as the command starts it, and the source file it prints, copied verbatim into a project with the
secret it prints exported, crawls it into the test Solr; each user it names then finds exactly the
items it says they may read (a trimmed search for each item's word with the user's tokens as it
prints them). Ctrl-C stops the server and the command ends with 0.
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import pysolr
import pytest
import requests
from scrapy.settings import Settings
from starlette.testclient import TestClient

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.commands.dev import BEGIN, END, READY
from searchcrawl.commands.web import oidc_config, public_origins_of, saml_config
from searchcrawl.dev.examples import EXAMPLES, SERVICES
from searchcrawl.dev.servers.oidc_node import sign_in
from searchcrawl.dev.servers.simplesamlphp import sign_in as saml_sign_in
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.search.answers import answer, answer_config
from searchcrawl.search.hybrid import SemanticModel
from searchcrawl.search.query import search_params
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.semantic.embedders import WordLlamaEmbedder
from searchcrawl.system.secrets import OIDC_CLIENT_SECRET
from searchcrawl.web.app import create_app
from tests.conftest import Project
from tests.e2e.test_answers import corpus, wordllama  # noqa: F401 - fixtures
from tests.e2e.test_single_sign_on import corpus as sign_on_corpus
from tests.e2e.test_single_sign_on import sign_on, titles
from tests.e2e.test_web import web_config

STARTS = {"cmis": 600, "redmine": 600}  # seconds a start may take (a first CMIS start downloads its jars)


@contextlib.contextmanager
def running(project: Project, kind: str) -> Iterator[str]:
    """`scrapy dev <kind>`, running; its output up to READY (a failure shows all of it). Ctrl-C
    at the end, and the command must end with 0."""
    process = project.popen("dev", kind)
    assert process.stdout is not None
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if line.strip() == READY:
                ready.set()
        ready.set()  # it ended

    threading.Thread(target=read, daemon=True).start()
    try:
        ready.wait(STARTS.get(kind, 180))
        assert process.poll() is None and lines and lines[-1].strip() == READY, "".join(lines)
        yield "".join(lines)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(120)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    assert code == 0, "".join(lines)
    assert "Stopping the example server." in "".join(lines)


def section(output: str, title: str) -> dict[str, list[str]]:
    """The indented ``name: a, b`` lines below ``title``."""
    block = output.split(title, 1)[1].split("\n", 1)[1]
    found = {}
    for line in block.splitlines():
        if not line.startswith("  "):
            break
        name, _, values = line.strip().partition(": ")
        found[name] = values.split(", ") if values else []
    return found


@pytest.mark.parametrize("kind", [kind for kind in EXAMPLES if kind not in SERVICES])
def test_the_printed_source_file_crawls_the_example_and_each_user_finds_what_it_says(
    project: Project, solr_url: str, kind: str
) -> None:
    name = f"dev-{kind}"
    with running(project, kind) as output:
        source = output.split(BEGIN.format(name=name) + "\n", 1)[1].split(END.format(name=name), 1)[0]
        secrets = dict(re.findall(r"^export (\w+)='([^']*)'$", output, re.M))
        readers = section(output, "who may read it:")
        tokens = section(output, "Each user's access tokens")
        assert source and secrets and readers and tokens, output
        project.source(name, source)
        crawl = project.scrapy("crawl", name, **secrets)
        assert crawl.returncode == 0, crawl.stderr[-3000:]
        index = SolrIndex(solr_url, timeout=30)
        params = search_params(rows=100, source=name)
        params["fl"] = "id"
        for user, held in tokens.items():
            principals = Principals.of(user, [Principal(token, "example") for token in held])
            trimmed = TrimmedIndex(index, principals)
            found = {word for word in readers if trimmed.search(f"content:{word}", params).docs}
            assert found == {word for word, users in readers.items() if user in users}, (user, output)


def test_the_web_application_signs_on_with_the_printed_oidc_settings(
    project: Project, solr: pysolr.Solr, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings `scrapy dev oidc` prints, read as `scrapy web` reads them (commands/web.py's
    oidc_config): each account signs on at the provider and sees what its printed tokens may read."""
    with running(project, "oidc") as output:
        printed = dict(re.findall(r"^export (\w+)='([^']*)'$", output, re.M))
        tokens = section(output, "Each user's access tokens")
        for name, value in printed.items():
            monkeypatch.setenv(name, value)
        config = oidc_config(Settings({name: value for name, value in printed.items() if name != OIDC_CLIENT_SECRET}))
        readers = {user: [held[-1]] for user, held in tokens.items()}  # a document for each user's last token
        source, word = sign_on_corpus(solr, readers)
        app = create_app(web_config(project, oidc=config))
        provider = SimpleNamespace(sign_in=partial(sign_in, printed["SEARCHCRAWL_OIDC_ISSUER"]))
        for user, held in tokens.items():
            web = TestClient(app, base_url="http://127.0.0.1:8080")
            done = sign_on(web, provider, user)  # type: ignore[arg-type]
            assert done.status_code == 200, (user, getattr(done, "text", "")[:2000])
            page = web.get("/", params={"q": word, "source": source}).text
            assert f"Signed in as <strong>{user}</strong>" in page
            assert titles(page) == {other for other, [token] in readers.items() if token in held}, user


def test_the_web_application_signs_on_with_the_printed_saml_settings(
    project: Project, solr: pysolr.Solr, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings `scrapy dev saml` prints, read as `scrapy web` reads them (saml_config, its
    public URL): each user signs on at the IdP with the printed password and sees what the
    printed tokens may read."""
    with running(project, "saml") as output:
        printed = Settings(dict(re.findall(r"^export (\w+)='([^']*)'$", output, re.M)))
        tokens = section(output, "Each user's access tokens")
        passwords = dict(re.findall(r"^Sign in to it as (\w+) with the password (\S+)$", output, re.M))
        origin = printed["SEARCHCRAWL_WEB_PUBLIC_URL"]
        readers = {user: [held[-1]] for user, held in tokens.items()}  # a document for each user's last token
        source, word = sign_on_corpus(solr, readers)
        config = web_config(project, saml=saml_config(printed), public_origins=public_origins_of(printed))
        app = create_app(config)
        parts = urlsplit(printed["SEARCHCRAWL_SAML_IDP_METADATA"])
        idp_origin = f"{parts.scheme}://{parts.netloc}"
        for user, held in tokens.items():
            web = TestClient(app, base_url=origin)
            started = web.get("/login/saml", follow_redirects=False)
            assert started.status_code == 303, started.text[:1000]
            action, fields = saml_sign_in(requests.Session(), started.headers["location"], user, passwords[user])
            assert action == f"{origin}/login/saml/acs", action
            done = web.post("/login/saml/acs", data=fields, headers={"origin": idp_origin})
            assert done.status_code == 200, (user, done.text[-1500:])
            page = web.get("/", params={"q": word, "source": source}).text
            assert f"Signed in as <strong>{user}</strong>" in page
            assert titles(page) == {other for other, [token] in readers.items() if token in held}, user


def test_an_answer_comes_back_from_the_printed_model_server(
    project: Project, corpus: tuple[str, SolrIndex], wordllama: WordLlamaEmbedder
) -> None:
    """The settings `scrapy dev model` prints, read as the web application reads them
    (answer_config): a question about the answers' tests' corpus goes to SmolLM2 and its text
    comes back (checked for its citations as every answer is)."""
    with running(project, "model") as output:
        printed = Settings(dict(re.findall(r"^export (\w+)='([^']*)'$", output, re.M)))
        assert printed["SEARCHCRAWL_EMBEDDINGS"] == "wordllama"
        config = answer_config(printed.get, None)
        assert config is not None
        source, index = corpus
        result = answer(
            TrimmedIndex(index, Principals.anonymous()),
            SemanticModel(wordllama),
            "Where do I get a parking permit?",
            config,
            ["{!term f=source}" + source],
        )
        assert result.sources and result.raw.strip(), result


def test_an_imap_example_whose_start_fails_leaves_no_server_and_no_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dovecot up and greeting, then its start fails: the example raises, and neither the server
    (with its passwords) nor its folder under /tmp is left; while it ran, its password files and
    key were the server's alone."""
    from searchcrawl.dev import examples
    from searchcrawl.dev.servers import dovecot

    started: list[subprocess.Popen[bytes]] = []
    modes: dict[str, int] = {}
    real = dovecot.wait_listening

    def wait_then_fail(process: subprocess.Popen[bytes], port: int, log: Path, **kwargs: Any) -> None:
        started.append(process)
        real(process, port, log, **kwargs)
        modes.update({name: (log.parent / name).stat().st_mode & 0o777 for name in ("users", "masters", "server.key")})
        raise RuntimeError("the readiness wait failed")

    monkeypatch.setattr(dovecot, "wait_listening", wait_then_fail)
    before = set(Path(tempfile.gettempdir()).glob("sc-dovecot-*"))
    with pytest.raises(RuntimeError, match="readiness wait failed"), examples.imap():
        pass
    [process] = started
    assert process.poll() is not None
    assert set(Path(tempfile.gettempdir()).glob("sc-dovecot-*")) <= before
    assert modes == dict.fromkeys(("users", "masters", "server.key"), 0o600)


def test_a_redmine_example_whose_start_fails_leaves_no_server_no_folder_and_no_instance_link(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from searchcrawl.dev import examples
    from searchcrawl.dev.servers import redmine_thin

    started: list[subprocess.Popen[bytes]] = []
    folders: list[Path] = []

    def fail(process: subprocess.Popen[bytes], port: int, log: Path, **kwargs: Any) -> None:
        started.append(process)
        folders.append(log.parent)
        raise RuntimeError("the readiness wait failed")

    monkeypatch.setattr(redmine_thin, "wait_listening", fail)
    links = set((redmine_thin.PACKAGE / "instances").iterdir())
    with pytest.raises(RuntimeError, match="readiness wait failed"), examples.redmine():
        pass
    [process], [folder] = started, folders
    assert process.poll() is not None and not folder.exists()
    assert set((redmine_thin.PACKAGE / "instances").iterdir()) <= links


def test_the_oidc_provider_has_its_client_secret_in_no_command_line_and_leaves_no_log() -> None:
    """ps shows every local user a process's command line: the client's secret is not in it (and
    is random); stop() removes the provider's log with its folder."""
    from searchcrawl.dev.servers.oidc_node import OidcProvider

    provider = OidcProvider(["http://127.0.0.1/login/oidc/callback"]).start()
    try:
        assert provider.process is not None
        argv = Path(f"/proc/{provider.process.pid}/cmdline").read_bytes()
        assert provider.client_secret.encode() not in argv and b"provider.mjs" in argv
        assert provider.folder is not None and (provider.folder / "provider.log").is_file()
        folder = provider.folder
        assert requests.get(f"{provider.issuer}/.well-known/openid-configuration", timeout=30).ok
    finally:
        provider.stop()
    assert not folder.exists()
