"""Backup and restore of the configuration (issue 79 point 4: searchcrawl/ops/configuration_backup.py), on real
SQLite files: an installation exported and restored into an empty one is the same installation
(source files byte for byte, rules, tokens that still open the API); a dry run writes nothing; a
non-empty installation, a hostile or broken backup is refused with every problem named, and
nothing is written. tests/e2e/test_backup.py runs the command and the page, on PostgreSQL too."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trustme

from searchcrawl.ops import configuration_backup as backup
from searchcrawl.rules import ranking_rules
from searchcrawl.store import Database
from searchcrawl.store.api_tokens import ApiTokens
from searchcrawl.store.relevance_rules import RelevanceStore
from searchcrawl.web.source_editor import refused_new_source

INTRANET = """# The intranet, crawled nightly: its seeds beside it
seeds = ["https://intranet.example/"]
seed_files = ["lists/extra-seeds.txt"]
schedule = "0 2 * * *"   # cron: 02:00 every day

[notify]
events = ["run_failed", "deletions_held"]
mail_to = ["intranet-team@example.org"]
"""
PARTNER = """seeds = ["https://partner.example/"]
refresh_interval = "12h"

[tls]
ca_bundle = "certs/ca.pem"
client_cert = "certs/client.pem"
"""
SETTINGS = {"SEARCHCRAWL_NOTIFY_MAIL_TO": "ops@example.org", "SEARCHCRAWL_SMTP_HOST": "mail.example.org", "SOLR_URL": "x"}


def installation(root: Path) -> tuple[Database, Path]:
    (root / "sources").mkdir(parents=True)
    return Database(f"sqlite:///{root / 'documents.sqlite3'}"), root / "sources"


@pytest.fixture
def filled(tmp_path: Path) -> tuple[Database, Path, dict[str, Any]]:
    """An installation with two sources (a seed file, a CA and a client certificate holding its
    key), rules of every kind and two API tokens (one revoked); what it holds."""
    database, sources = installation(tmp_path / "a")
    (sources / "intranet.toml").write_text(INTRANET)
    (sources / "lists").mkdir()
    (sources / "lists" / "extra-seeds.txt").write_text("https://intranet.example/news/\n# and\nhttps://intranet.example/hr/\n")
    (sources / "partner.toml").write_text(PARTNER)
    ca = trustme.CA()
    (sources / "certs").mkdir()
    ca.cert_pem.write_to_path(str(sources / "certs" / "ca.pem"))
    ca.issue_cert("crawler@example.test").private_key_and_cert_chain_pem.write_to_path(str(sources / "certs" / "client.pem"))
    store = RelevanceStore(database)
    start = datetime(2026, 12, 1, tzinfo=UTC)
    store.add_bet(ranking_rules.parse_bet("holiday form\nleave", "https://intranet.example/hr/leave", "2026-12-01", ""))
    store.add_boost(ranking_rules.parse_boost("source", "intranet", "2.5"))
    store.add_boost(ranking_rules.parse_boost("age", "365", "0.5"))
    store.add_synonyms(ranking_rules.parse_synonyms("leave, holiday, vacation"))
    store.add_stopword(ranking_rules.parse_stopword("intranet"))
    tokens = ApiTokens(database)
    _id, portal = tokens.create("portal", on_behalf=True, expires_at=datetime.now(UTC) + timedelta(days=30))
    old_id, old = tokens.create("old")
    tokens.revoke(old_id)
    return database, sources, {"portal": portal, "old": old, "start": start, "client": sources / "certs" / "client.pem"}


def export(database: Database, sources: Path, environ: dict[str, str] | None = None) -> dict[str, Any]:
    return json.loads(backup.dumps(backup.export_backup(database, sources, SETTINGS, environ or {}, "test")))


def test_a_backup_restored_into_an_empty_installation_is_the_same_installation(filled, tmp_path: Path) -> None:
    database, sources, held = filled
    exported = export(database, sources, {"SEARCHCRAWL_SMTP_PASSWORD_FILE": "/run/smtp", "SEARCHCRAWL_SMTP_PASSWORD": ""})
    text = json.dumps(exported)
    assert held["portal"] not in text and held["old"] not in text and "PRIVATE KEY" not in text  # hashes only, no key
    assert exported["left_out"] == ["partner: certs/client.pem: holds a private key"]
    assert exported["secrets_set"] == ["SEARCHCRAWL_SMTP_PASSWORD"]
    assert exported["settings"] == {"SEARCHCRAWL_NOTIFY_MAIL_TO": "ops@example.org", "SEARCHCRAWL_SMTP_HOST": "mail.example.org"}

    target_db, target = installation(tmp_path / "b")
    # the server's administrator's restore (scrapy backup import --trust-sources): the source editor
    # refuses seed_files and [tls] in a new source
    refused = backup.plan_restore(exported, target_db, target, {"SEARCHCRAWL_SMTP_HOST": "mail.example.org"}, refused_new_source)
    assert [problem.split(":")[0] for problem in refused.problems] == ["source intranet", "source partner"]
    plan = backup.plan_restore(
        exported, target_db, target, {"SEARCHCRAWL_SMTP_HOST": "mail.example.org"}, refused_new_source, trusted=True
    )
    # the client certificate was left out: its source cannot be loaded until it is put in place
    assert plan.problems == ["partner.toml: [tls]: key 'client_cert': cannot read certs/client.pem: No such file or directory"]
    (target / "certs").mkdir()
    (target / "certs" / "client.pem").write_bytes(held["client"].read_bytes())
    plan = backup.plan_restore(
        exported, target_db, target, {"SEARCHCRAWL_SMTP_HOST": "mail.example.org"}, refused_new_source, trusted=True
    )
    assert plan.ok, plan.problems
    assert plan.sources == ["intranet (web; 0 2 * * *)", "partner (web; every 12h)"]
    assert plan.settings == ["SEARCHCRAWL_NOTIFY_MAIL_TO=ops@example.org"]  # the one the target lacks
    lines = list(backup.plan_text(plan, applied=False))
    assert lines[0].startswith("Dry run") and "  relevance: 1 best bets, 2 boosts, 1 synonym sets, 1 stopwords" in lines
    assert "  secret to set in the environment: SEARCHCRAWL_SMTP_PASSWORD" in lines
    assert sorted(path.name for path in target.rglob("*") if path.is_file()) == ["client.pem"]  # a dry run writes nothing
    assert RelevanceStore(target_db).count() == 0 == ApiTokens(target_db).count()

    backup.apply_restore(plan, target_db, target)
    for name in ("intranet.toml", "partner.toml", "lists/extra-seeds.txt", "certs/ca.pem"):
        assert (target / name).read_bytes() == (sources / name).read_bytes(), name  # comments and order kept
    assert not list(target.glob(".*.tmp")) and not list(target.rglob(".*.tmp"))
    restored, original = RelevanceStore(target_db), RelevanceStore(database)
    assert [(b.queries, b.urls, b.start, b.end) for b in restored.bets()] == [
        (b.queries, b.urls, b.start, b.end) for b in original.bets()
    ]
    assert [(b.kind, b.value, b.factor) for b in restored.boosts()] == [(b.kind, b.value, b.factor) for b in original.boosts()]
    assert [terms for _id, terms in restored.synonyms()] == [terms for _id, terms in original.synonyms()]
    assert restored.stopwords() == original.stopwords() == ["intranet"]
    tokens = ApiTokens(target_db)
    portal, old = tokens.check(held["portal"]), tokens.check(held["old"])
    assert (portal.valid, portal.name, portal.on_behalf) == (True, "portal", True)
    assert old.reason == "revoked"
    assert [(row["name"], row["expires_at"]) for row in tokens.exported()] == [
        (row["name"], row["expires_at"]) for row in ApiTokens(database).exported()
    ]
    # the restored installation exports the same backup (but the time it was made)
    again = export(target_db, target, {"SEARCHCRAWL_SMTP_PASSWORD_FILE": "/run/smtp"})

    def unused(made: dict[str, Any]) -> dict[str, Any]:  # the checks above noted the tokens' use
        return {**made, "created_at": None, "api_tokens": [{**row, "last_used": None} for row in made["api_tokens"]]}

    assert unused(again) == unused(exported)
    # and it is not empty any more: a second restore is refused
    refused = backup.plan_restore(exported, target_db, target, {}, refused_new_source, trusted=True)
    assert set(refused.problems) >= {
        f"the installation is not empty: {target} holds source files (a backup is restored into an empty one)",
        "the installation is not empty: it has relevance rules",
        "the installation is not empty: it has API tokens",
    }
    with pytest.raises(backup.BackupError, match="has problems"):
        backup.apply_restore(refused, target_db, target)


def hostile(exported: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**exported, **changes}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"sources": {"x": {"x.toml": 'seeds = ["https://x.example/"]', "../escape.txt": "a"}}}, "not a file name inside"),
        ({"sources": {"x": {"x.toml": 'seeds = ["https://x.example/"]', "/etc/cron.d/x": "a"}}}, "not a file name inside"),
        ({"sources": {"x": {"x.toml": 'seeds = ["https://x.example/"]', ".hidden": "a"}}}, "not a file name inside"),
        (
            {"sources": {"x": {"x.toml": 'seeds = ["https://x.example/"]', "y.toml": 'seeds = ["https://y/"]'}}},
            "would be a source",
        ),
        ({"sources": {"../x": {"../x.toml": "a"}}}, "not a source name"),
        ({"sources": {"x": {"x.toml": 'seeds = ["https://x.example/"]\nsurname = 1\n'}}}, "x.toml: key 'surname': unknown key"),
        ({"sources": {"x": {"x.toml": "seeds = [\n"}}}, "source x: refused, as the source editor refuses it: not valid TOML"),
        ({"sources": {"x": {"x.toml": 'seeds = ["javascript:alert(1)"]\n'}}}, "x.toml: key 'seeds'"),
        ({"sources": {"x": {"other.txt": "a"}}}, "its file x.toml is missing"),
        (
            {
                "sources": {
                    "a": {"a.toml": 'seeds = ["https://a/"]\nseed_files = ["s.txt"]', "s.txt": "1"},
                    "b": {"b.toml": 'seeds = ["https://b/"]\nseed_files = ["s.txt"]', "s.txt": "2"},
                }
            },
            "differs from the file of that name",
        ),
        ({"relevance": {"bets": [{"queries": "", "urls": "https://a/"}]}}, "best bet 1: Give from 1 to"),
        ({"relevance": {"boosts": [{"kind": "glob", "value": "*a*b*c*d*e*", "factor": "2"}]}}, "boost 1: A URL pattern"),
        ({"relevance": {"synonyms": ["<script>, x"]}}, "synonym set 1: "),
        ({"relevance": {"stopwords": ["two words"]}}, "stopword: A stopword is one word."),
        ({"relevance": {"bets": "all"}}, "relevance bets: expected a list of forms"),
        ({"api_tokens": [{"name": "x", "token_hash": "sct_plain-token"}]}, "API token 1: no SHA-256 hash"),
        ({"api_tokens": [{"name": "x", "token_hash": "a" * 64, "created_at": "yesterday"}]}, "API token 1: a date is not"),
        ({"settings": {"SEARCHCRAWL_DB_URL": "postgresql://evil/"}}, "only notification settings"),
    ],
)
def test_a_hostile_or_broken_backup_is_refused_whole_and_nothing_is_written(tmp_path: Path, change, problem: str) -> None:
    database, sources = installation(tmp_path / "a")
    exported = hostile(export(database, sources), **change)
    target_db, target = installation(tmp_path / "b")
    plan = backup.plan_restore(json.loads(json.dumps(exported)), target_db, target, {}, refused_new_source)
    assert any(problem in line for line in plan.problems), plan.problems
    assert list(backup.plan_text(plan, applied=False))[0] == "Nothing was restored: the backup cannot be restored here:"
    with pytest.raises(backup.BackupError):
        backup.apply_restore(plan, target_db, target)
    assert not any(target.rglob("*")) and not (tmp_path / "escape.txt").exists()
    assert RelevanceStore(target_db).count() == 0 == ApiTokens(target_db).count()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff\xfe", "not JSON"),
        (b"[]", "format is not searchcrawl-backup"),
        (b'{"format": "searchcrawl-backup", "version": 9}', "of version 9"),
        (b"[" * 100_000, "not JSON"),
        (b" " * (backup.MAX_BACKUP_BYTES + 1), "larger than a backup may be"),
    ],
)
def test_a_file_that_is_not_a_backup_is_refused_in_one_line(data: bytes, message: str) -> None:
    with pytest.raises(backup.BackupError, match=message):
        backup.read_backup(data)


def test_files_outside_the_sources_folder_and_keys_are_left_out(tmp_path: Path) -> None:
    database, sources = installation(tmp_path / "a")
    (tmp_path / "outside.txt").write_text("https://x.example/\n")
    (sources / "x.toml").write_text(
        'seeds = ["https://x.example/"]\nseed_files = ["../outside.txt", "/etc/hosts"]\n[tls]\nclient_key = "k.pem"\n'
    )
    exported = export(database, sources)
    assert exported["sources"] == {"x": {"x.toml": (sources / "x.toml").read_text()}}
    assert sorted(exported["left_out"]) == [
        "x: ../outside.txt: outside the sources folder",
        "x: /etc/hosts: a private key or a file outside the sources folder",
        "x: k.pem: a private key or a file outside the sources folder",
    ]


# --- the hostile review's findings (each failed on the first version) ----------------------------


def plan_of(
    tmp_path: Path, sources: dict[str, Any], trusted: bool = False, **changes: Any
) -> tuple[backup.RestorePlan, Database, Path]:
    database, folder = installation(tmp_path / "a")
    exported = {**export(database, folder), "sources": sources, **changes}
    target_db, target = installation(tmp_path / "b")
    plan = backup.plan_restore(json.loads(json.dumps(exported)), target_db, target, {}, refused_new_source, trusted)
    return plan, target_db, target


SEEDS = 'seeds = ["https://a.example/"]\n'


@pytest.mark.parametrize("name", ["./evil.toml", "evil.toml/", "lists//seeds.txt", "lists/./seeds.txt"])
def test_a_file_name_not_in_its_normal_form_is_refused(tmp_path: Path, name: str) -> None:
    """``./evil.toml`` passed as a relative name and was written as sources/evil.toml: a source
    nobody validated."""
    plan, _db, target = plan_of(tmp_path, {"a": {"a.toml": SEEDS, name: "not [toml"}})
    assert any("is not a file name inside the sources folder" in problem for problem in plan.problems), plan.problems
    assert not any(target.iterdir())


def test_a_file_and_a_folder_of_one_name_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    plan, _db, _target = plan_of(tmp_path, {"a": {"a.toml": SEEDS + 'seed_files = ["x", "x/y"]\n', "x": "1", "x/y": "2"}})
    assert "x is a file and a folder of files in the backup" in plan.problems


def test_a_file_the_sources_folder_holds_already_is_never_replaced(tmp_path: Path) -> None:
    """A key put in place by hand was overwritten by the backup's file of that name; a file where
    a folder was needed left the rules restored and the files not (half an installation)."""
    database, folder = installation(tmp_path / "a")
    exported = {**export(database, folder), "sources": {"a": {"a.toml": SEEDS, "client.key": "x", "certs/ca.pem": "y"}}}
    exported["api_tokens"] = [{"name": "t", "token_hash": "b" * 64}]
    target_db, target = installation(tmp_path / "b")
    (target / "client.key").write_text("the real key")
    (target / "certs").write_text("a file, not a folder")
    plan = backup.plan_restore(exported, target_db, target, {}, refused_new_source)
    assert "client.key is in the sources folder already (a restore replaces no file)" in plan.problems
    assert "certs/ca.pem is in the sources folder already (a restore replaces no file)" in plan.problems
    assert (target / "client.key").read_text() == "the real key"


def test_a_file_that_cannot_be_written_undoes_the_whole_restore(tmp_path: Path) -> None:
    database, folder = installation(tmp_path / "a")
    text = SEEDS + 'seed_files = ["lists/s.txt"]\n'
    exported = {**export(database, folder), "sources": {"a": {"a.toml": text, "lists/s.txt": "https://a.example/s\n"}}}
    exported["api_tokens"] = [{"name": "t", "token_hash": "c" * 64}]
    exported["relevance"] = {"stopwords": ["harbour"]}
    target_db, target = installation(tmp_path / "b")
    plan = backup.plan_restore(exported, target_db, target, {}, refused_new_source, trusted=True)
    assert plan.ok, plan.problems
    (target / "a.toml").mkdir()  # made after the plan: the source file cannot be written
    with pytest.raises(backup.BackupError, match="a.toml is in the sources folder already"):
        backup.apply_restore(plan, target_db, target)
    assert RelevanceStore(target_db).count() == 0 == ApiTokens(target_db).count()
    assert sorted(str(path.relative_to(target)) for path in target.rglob("*")) == ["a.toml", "lists"]  # its own, empty


def test_more_rules_than_are_kept_is_a_problem_of_the_plan(tmp_path: Path) -> None:
    boosts = [{"kind": "source", "value": f"s{number}", "factor": "2"} for number in range(60)]
    plan, _db, _target = plan_of(tmp_path, {}, relevance={"boosts": boosts})
    assert plan.problems == ["relevance: 60 boosts, at most 50 are kept"]


def test_notification_secrets_are_never_exported_nor_restored(tmp_path: Path) -> None:
    database, folder = installation(tmp_path / "a")
    given = {**SETTINGS, "SEARCHCRAWL_SMTP_PASSWORD": "hunter22", "SEARCHCRAWL_NOTIFY_WEBHOOK_URL": "https://hook.example/t0k3n"}
    exported = backup.export_backup(database, folder, given, {}, "test")
    assert "hunter22" not in backup.dumps(exported) and "t0k3n" not in backup.dumps(exported)
    for number, settings in enumerate(
        (
            {"SEARCHCRAWL_NOTIFY_WEBHOOK_URL": "https://attacker.example/hook"},
            {"SEARCHCRAWL_NOTIFY_MAIL_TO": "ops@example.org\nSEARCHCRAWL_DB_URL=postgresql://evil/"},
        )
    ):
        # a folder each: the string hash it was named by (randomised per process) gave both one name in 1,000 runs
        plan, _db, _target = plan_of(tmp_path / str(number), {}, settings=settings)
        assert any(problem.startswith("settings: only notification settings") for problem in plan.problems), plan.problems
        assert plan.settings == []


def test_a_plans_problems_are_bounded(tmp_path: Path) -> None:
    plan, _db, _target = plan_of(tmp_path, {}, relevance={"stopwords": ["two words"] * 5000})
    assert len(plan.problems) == backup.MAX_PROBLEMS + 1 and plan.problems[-1] == "and 4900 more problems"


@pytest.mark.parametrize("named", ["sub/../../../../../../etc/hostname", "/etc/hostname", "~/seeds.txt"])
def test_a_source_naming_a_file_outside_the_sources_folder_is_refused(tmp_path: Path, named: str) -> None:
    """The dry run's loader read /etc/hostname through the scratch folder, its problem line an
    oracle of the file's lines."""
    text = f'seeds = ["https://a.example/"]\nseed_files = ["{named}"]\n'
    plan, _db, _target = plan_of(tmp_path, {"a": {"a.toml": text, "sub/k": "x"}})
    assert f"source a: it names {named!r}, not a file inside the sources folder" in plan.problems
    assert not any("line 1" in problem for problem in plan.problems)


def test_the_plan_shows_the_keys_that_load_code_or_write_files(tmp_path: Path) -> None:
    text = SEEDS + 'url_rewriter = "strip_session"\nlog_file = "/var/log/a.log"\n'
    plan, _db, _target = plan_of(tmp_path, {"a": {"a.toml": text}}, trusted=True)
    assert plan.sources == ["a (web; by hand); url_rewriter = strip_session; log_file = /var/log/a.log"], plan.problems


# --- issue 91: restore checks each source as the source editor does, and names the secrets they need -------


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('type = "files"\n[files]\nroots = ["/etc/ssh"]\n[access]\npublic = true\n', "type, files"),
        ('seeds = ["file:///etc/ssh/"]\n', "seeds: 'file:///etc/ssh/' reads this server's files"),
        (SEEDS + 'spider_class = "raising"\n', "spider_class"),
        (SEEDS + 'log_file = "/etc/cron.d/crawl"\n', "log_file"),
    ],
)
def test_a_source_the_editor_refuses_is_refused_by_a_restore_and_named(tmp_path: Path, text: str, key: str) -> None:
    """A backup uploaded to the backup page restored all four (the editor refuses each); now each
    is a problem that names the source and the editor's reason, the others restored with it are
    not, and nothing is loaded (the loader imports what a source names)."""
    plan, target_db, target = plan_of(tmp_path, {"a": {"a.toml": text}, "b": {"b.toml": SEEDS}})
    assert plan.problems == [f"source a: refused, as the source editor refuses it: {refused_new_source(text)}"], plan.problems
    assert key in plan.problems[0]
    assert plan.sources == ["b (web; by hand)"]  # b is valid: loaded, and not refused
    lines = list(backup.plan_text(plan, applied=False))
    assert lines[0] == "Nothing was restored: the backup cannot be restored here:" and "--trust-sources" in lines[-1]
    with pytest.raises(backup.BackupError):
        backup.apply_restore(plan, target_db, target)
    assert not any(target.iterdir())


def test_a_restore_refuses_a_loopback_or_link_local_seed_unless_the_editor_allows_them(tmp_path: Path) -> None:
    """Restore is the editor's check with the editor's setting: a seed on Solr's own loopback
    address, or the cloud's metadata address, is refused as the editor refuses it, and taken where
    SEARCHCRAWL_WEB_LOCAL_SEEDS lets the editor take it."""
    for seed in ("http://127.0.0.1:8983/solr/searchcrawl/select?q=*:*&wt=csv", "http://169.254.169.254/latest/"):
        text = f'seeds = ["{seed}"]\n'
        plan, _db, _target = plan_of(tmp_path / "refused" / str(len(seed)), {"a": {"a.toml": text}})
        assert len(plan.problems) == 1 and "loopback or link-local" in plan.problems[0], plan.problems
        database, folder = installation(tmp_path / "allowed" / str(len(seed)) / "a")
        exported = {**export(database, folder), "sources": {"a": {"a.toml": text}}}
        target_db, target = installation(tmp_path / "allowed" / str(len(seed)) / "b")
        allowed = partial(refused_new_source, local_seeds=True)
        plan = backup.plan_restore(json.loads(json.dumps(exported)), target_db, target, {}, allowed, False)
        assert plan.ok, plan.problems


def test_the_servers_administrator_restores_a_source_the_editor_refuses_and_the_plan_says_so(tmp_path: Path) -> None:
    text = SEEDS + 'log_file = "crawl.log"\n'
    plan, target_db, target = plan_of(tmp_path, {"a": {"a.toml": text}}, trusted=True)
    assert plan.ok, plan.problems
    assert f"restored though the source editor refuses it: a: {refused_new_source(text)}" in plan.lines()
    backup.apply_restore(plan, target_db, target)
    assert (target / "a.toml").read_text() == text


AUTHENTICATED = """seeds = ["https://intranet.example/"]
[access]
public = true
[[auth]]
origins = ["https://intranet.example"]
type = "basic"
user = "crawler"
secret = "INTRANET_PASSWORD"
[proxy]
url = "http://proxy.example:3128"
user = "crawler"
secret = "PROXY_PASSWORD"
"""


def test_the_plan_names_the_secrets_each_restored_source_names(tmp_path: Path) -> None:
    """The plan named the notification secrets to set, not the sources' (a restored crawl then
    stopped on its first request: the secret INTRANET_PASSWORD ... is not set)."""
    other = AUTHENTICATED.split("[proxy]")[0].replace("intranet.example", "wiki.example")  # one secret of a's
    plan, _db, _target = plan_of(
        tmp_path,
        {"a": {"a.toml": AUTHENTICATED}, "b": {"b.toml": other}},
        trusted=True,
        secrets_set=["SEARCHCRAWL_SMTP_PASSWORD"],
    )
    assert plan.ok, plan.problems
    secrets = [line for line in plan.lines() if line.startswith("secret to set")]
    assert secrets == [
        "secret to set in the environment: SEARCHCRAWL_SMTP_PASSWORD",
        "secret to set in the environment for a, b: INTRANET_PASSWORD",
        "secret to set in the environment for a: PROXY_PASSWORD",
    ]


def test_a_sources_secrets_are_the_names_its_secret_keys_hold() -> None:
    text = (
        AUTHENTICATED
        + '[tls]\nclient_key_secret = "KEY_PASS"\n[imap]\npassword_secret = "MAIL_PASSWORD"\nsecret = "not a name"\n'
    )
    assert backup.source_secrets(text) == ["INTRANET_PASSWORD", "KEY_PASS", "MAIL_PASSWORD", "PROXY_PASSWORD"]
    assert backup.source_secrets("not [toml") == [] == backup.source_secrets("[" * 10_000)


# --- issue 91 review: a restore plants no file but a source's own and those it names ----------------

DISABLED_EVIL = 'type="files"\n[files]\nroots=["/etc/ssh"]\n[access]\npublic=true\n'


@pytest.mark.parametrize("trusted", [False, True])
@pytest.mark.parametrize(
    ("file_name", "problem"),
    [
        ("evil.toml.disabled", "source a: evil.toml.disabled would be a source file of its own"),
        (
            "notes.txt",
            "source a: notes.txt is not a file the source names (a source's own file and the files it names are"
            " restored, nothing else)",
        ),
    ],
)
def test_a_file_the_source_does_not_name_is_not_restored(tmp_path: Path, trusted: bool, file_name: str, problem: str) -> None:
    """A backup's source a with {"a.toml": harmless, "evil.toml.disabled": type = "files" over
    /etc/ssh} was planned ok, nothing refused, and wrote evil.toml.disabled: the editor's Enable
    then made it a live source no check had seen."""
    plan, target_db, target = plan_of(tmp_path, {"a": {"a.toml": SEEDS, file_name: DISABLED_EVIL}}, trusted=trusted)
    assert plan.problems == [problem] and not plan.refused
    with pytest.raises(backup.BackupError):
        backup.apply_restore(plan, target_db, target)
    assert not any(target.iterdir())


# --- issue 99: a source text is read one way, by the editor's check and the loader alike ----------


@pytest.mark.parametrize("trusted", [False, True])
def test_a_source_with_lone_cr_line_ends_is_refused_by_a_restore(tmp_path: Path, trusted: bool) -> None:
    """The editor's check read ``type = "files"\\r[files]\\rroots = ["/etc/ssh"]...`` as no TOML and
    passed it on; the loader read the same text through universal newlines as a files source over
    /etc/ssh, and the restore wrote it. Now neither the editor's check nor the loader reads it: a
    problem, trusted or not."""
    text = "\r".join(['type = "files"', "[files]", 'roots = ["/etc/ssh"]', "[access]", "public = true"]) + "\r"
    plan, target_db, target = plan_of(tmp_path, {"a": {"a.toml": text}, "b": {"b.toml": SEEDS}}, trusted=trusted)
    assert not plan.ok and len(plan.problems) == 1 and "line 1: a lone carriage return" in plan.problems[0], plan.problems
    assert plan.sources == ["b (web; by hand)"]
    with pytest.raises(backup.BackupError):
        backup.apply_restore(plan, target_db, target)
    assert not any(target.iterdir())


def test_a_source_file_is_exported_as_its_exact_text(tmp_path: Path) -> None:
    """The export read each file through universal newlines: a CRLF file came back LF, and a
    lone-CR file came back a different source than the one on disk."""
    database, folder = installation(tmp_path / "a")
    (folder / "crlf.toml").write_bytes(SEEDS.replace("\n", "\r\n").encode())
    (folder / "cr.toml").write_bytes(b'type = "files"\r[files]\rroots = ["/etc"]\r')
    (folder / "latin.toml").write_bytes('seeds = ["https://a.example/caf\xe9"]\n'.encode("latin-1"))
    exported = export(database, folder)
    assert exported["sources"]["crlf"] == {"crlf.toml": SEEDS.replace("\n", "\r\n")}
    assert exported["sources"]["cr"] == {"cr.toml": 'type = "files"\r[files]\rroots = ["/etc"]\r'}
    assert (
        "latin" not in exported["sources"] and "latin: cannot be read as UTF-8 text (UnicodeDecodeError)" in exported["left_out"]
    )


def test_a_trusted_restore_with_a_problem_does_not_ask_for_the_flag_it_was_given(tmp_path: Path) -> None:
    """``scrapy backup import FILE --trust-sources`` whose source names a file the backup lacks
    ended with "import with --trust-sources", the flag it was given."""
    text = SEEDS + '[tls]\nca_bundle = "ca.pem"\n'  # [tls]: refused by the editor; ca.pem in no backup and no folder
    plan, _db, _target = plan_of(tmp_path, {"a": {"a.toml": text}}, trusted=True)
    assert plan.refused and not plan.ok
    assert not any("--trust-sources" in line for line in backup.plan_text(plan, applied=False))
    untrusted, _db, _target = plan_of(tmp_path / "untrusted", {"a": {"a.toml": text}})
    assert "--trust-sources" in list(backup.plan_text(untrusted, applied=False))[-1]
