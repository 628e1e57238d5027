"""Source files edited in the browser, without HTTP (issue 79: searchcrawl/web/source_editor.py),
in a real folder: a text checked by the crawl's own loader (its seed files found beside it), saved
atomically with the previous version kept, refused when changed meanwhile; copy, disable, enable,
delete; hostile names; the scratch folder of an unsaved source."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from searchcrawl.web import source_editor
from searchcrawl.web.source_editor import (
    SourceFileError,
    SourceFolder,
    TestCrawlRefused,
    TestCrawls,
    changes,
    file_version,
    guarded_change,
    scratch_sources,
    unified_diff,
    valid_name,
)
from tests.conftest import wait_for

GOOD = '# the intranet\nseeds = ["https://intranet.example/"]\nseed_files = ["lists/more.txt"]\nmax_depth = 3\n'


@pytest.fixture
def folder(tmp_path: Path) -> SourceFolder:
    sources = tmp_path / "sources"
    (sources / "lists").mkdir(parents=True)
    (sources / "lists" / "more.txt").write_text("https://intranet.example/hr/\n")
    (sources / "intranet.toml").write_text(GOOD)
    return SourceFolder(sources)


def test_a_text_is_checked_by_the_crawls_loader_beside_the_saved_file(folder: SourceFolder) -> None:
    checked = folder.check("intranet", GOOD)
    assert checked.source is not None and checked.source.seed_urls[-1] == "https://intranet.example/hr/"
    broken = folder.check("intranet", GOOD + "max_dept = 4\n")
    assert broken.source is None and broken.error.startswith("intranet.toml: key 'max_dept': unknown key")
    assert folder.check("intranet", "seeds = [\n").error.startswith("intranet.toml: not valid TOML")
    assert "cannot read lists/none.txt" in folder.check("intranet", GOOD.replace("more.txt", "none.txt")).error
    assert sorted(path.name for path in folder.path.iterdir()) == ["intranet.toml", "lists"]  # no scratch left


def test_a_save_keeps_the_previous_version_and_refuses_a_file_changed_meanwhile(folder: SourceFolder) -> None:
    edited = GOOD.replace("max_depth = 3", "max_depth = 5  # deeper")
    moment = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    kept = folder.save("intranet", edited, file_version(GOOD), moment)
    assert kept is not None and kept.read_text() == GOOD and kept.parent.name == ".history"
    assert kept.name == "intranet.toml.20261127T120000000000Z.edited"
    assert folder.read("intranet") == edited
    with pytest.raises(SourceFileError, match="changed by someone else"):
        folder.save("intranet", GOOD, file_version(GOOD))  # the digest of the text read before the other save
    with pytest.raises(SourceFileError, match="exists already"):
        folder.save("intranet", GOOD, None)  # "new" over an existing one
    assert folder.save("wiki", GOOD, None) is None and folder.read("wiki") == GOOD
    assert not [path for path in folder.path.iterdir() if path.name.startswith(".") and path.name != ".history"]


def test_copy_disable_enable_and_delete(folder: SourceFolder) -> None:
    folder.copy("intranet", "intranet-copy")
    assert folder.listing() == [("intranet", True), ("intranet-copy", True)]
    folder.enable("intranet-copy", False)
    assert folder.listing() == [("intranet", True), ("intranet-copy", False)]
    assert (folder.path / "intranet-copy.toml.disabled").is_file() and not (folder.path / "intranet-copy.toml").exists()
    assert folder.read("intranet-copy") == GOOD  # a disabled source is still edited
    kept = folder.save("intranet-copy", GOOD + "\n", file_version(GOOD))
    assert kept is not None and (folder.path / "intranet-copy.toml.disabled").read_text() == GOOD + "\n"  # stays disabled
    with pytest.raises(SourceFileError, match="disabled already"):
        folder.enable("intranet-copy", False)
    with pytest.raises(SourceFileError, match="seed_files"):  # a key the browser does not add (issue 91 review)
        folder.enable("intranet-copy", True)
    (folder.path / "plain.toml.disabled").write_text('seeds = ["https://plain.example/"]\n')
    folder.enable("plain", True)
    assert ("plain", True) in folder.listing()
    with pytest.raises(SourceFileError, match="exists already"):
        folder.copy("intranet", "intranet-copy")
    folder.delete("plain")
    kept = folder.delete("intranet-copy")
    assert folder.listing() == [("intranet", True)] and kept.read_text() == GOOD + "\n" and kept.name.endswith(".deleted")


EVIL = 'type = "files"\n[files]\nroots = ["/etc/ssh"]\n[access]\npublic = true\n'


def test_a_disabled_source_the_editor_refuses_is_neither_enabled_nor_copied(folder: SourceFolder) -> None:
    """Issue 91 review: a restore planted evil.toml.disabled, and Enable (or Copy, which reads a
    disabled file) made it a live source that guarded_change never saw; now both say why not."""
    (folder.path / "evil.toml.disabled").write_text(EVIL)
    with pytest.raises(SourceFileError) as enabling:
        folder.enable("evil", True)
    assert str(enabling.value) == (
        "evil.toml.disabled is not made a live source in the browser, as the source editor refuses its text: "
        + guarded_change("", EVIL)
        + " (enable it on the server: rename it evil.toml)"
    )
    with pytest.raises(SourceFileError, match="type, files: changed in the browser"):
        folder.copy("evil", "evil-2")
    assert folder.listing() == [("evil", False), ("intranet", True)]
    assert (folder.path / "evil.toml.disabled").read_text() == EVIL
    folder.copy("intranet", "intranet-2")  # an enabled source is copied as it is: the copy is no more than it
    assert folder.read("intranet-2") == GOOD


def test_a_disabled_source_with_a_loopback_seed_is_enabled_only_where_the_editor_takes_such_seeds(tmp_path: Path) -> None:
    """Enable checks a disabled text with the editor's SEARCHCRAWL_WEB_LOCAL_SEEDS: refused without
    it (Solr's own address), enabled with it."""
    text = 'seeds = ["http://127.0.0.1:8983/solr/searchcrawl/select?q=*:*"]\n'
    for allowed in (False, True):
        path = tmp_path / str(allowed)
        path.mkdir()
        (path / "local.toml.disabled").write_text(text)
        folder = SourceFolder(path, local_seeds=allowed)
        if allowed:
            folder.enable("local", True)
            assert folder.listing() == [("local", True)]
        else:
            with pytest.raises(SourceFileError, match="loopback or link-local"):
                folder.enable("local", True)
            assert folder.listing() == [("local", False)]


@pytest.mark.parametrize("name", ["../evil", "a/b", ".hidden", "", "x" * 201, "evil.toml.disabled", "-x"])
def test_a_name_that_is_no_source_name_is_refused(folder: SourceFolder, name: str) -> None:
    with pytest.raises(SourceFileError, match="is not a source name"):
        folder.save(name, GOOD, None)
    with pytest.raises(SourceFileError):
        folder.copy("intranet", name)
    assert sorted(path.name for path in folder.path.parent.iterdir()) == [folder.path.name]


def test_the_scratch_folder_holds_the_unsaved_text_and_links_the_files_beside(folder: SourceFolder) -> None:
    (folder.path / "other.toml").write_text(GOOD)
    with scratch_sources(folder.path, "intranet", "seeds = []\n") as scratch:
        assert sorted(path.name for path in scratch.iterdir()) == ["intranet.toml", "lists"]
        assert (scratch / "intranet.toml").read_text() == "seeds = []\n" and (scratch / "lists" / "more.txt").is_file()
    assert not scratch.exists() and folder.read("intranet") == GOOD


def test_the_change_of_a_new_source_is_its_whole_text() -> None:
    diff = unified_diff("wiki", "", "a = 1\n")
    assert diff[-1] == "+a = 1" and diff[0] == "--- wiki.toml (saved)"


def test_changes_without_a_database_are_the_diff_alone(folder: SourceFolder) -> None:
    checked = folder.check("intranet", GOOD.replace("3", "4"))
    assert checked.source is not None
    found = changes(None, "intranet", GOOD, GOOD.replace("3", "4"), checked.source)
    assert "-max_depth = 3" in found.diff and "+max_depth = 4" in found.diff and found.warnings == []


# --- the hostile review's findings: what the browser may not change ----------------------------


@pytest.mark.parametrize(
    "added",
    [
        'url_rewriter = "os.system"',
        'spider_class = "topics_only"',
        'log_file = "/etc/cron.d/x"',
        'temp_dir = "/root"',
        "processes = 500",
        'type = "files"\n[files]\nroots = ["/etc"]',
        '[[auth]]\ntype = "basic"\norigins = ["https://attacker.example"]\nuser = "x"\nsecret = "SEARCHCRAWL_DB_PASSWORD"',
        '[tls]\nca_bundle = "/etc/ssl/private/key.pem"',
    ],
)
def test_a_key_that_runs_code_writes_files_or_sends_secrets_is_not_changed_in_the_browser(added: str) -> None:
    """A hostile review ran `url_rewriter = "os.system"` in the web server (review) and in a test
    crawl, before anything was saved; a directory group is not the server's administrator."""
    assert guarded_change(GOOD, GOOD + added + "\n") != ""
    assert guarded_change("", GOOD + added + "\n") != ""  # a new source neither
    assert (
        guarded_change(GOOD + added + "\n", GOOD.replace("max_depth = 3", "max_depth = 4") + added + "\n") == ""
    )  # kept as it is


def test_a_seed_of_this_servers_files_is_not_added_in_the_browser() -> None:
    local = GOOD.replace('seeds = ["https://intranet.example/"]', 'seeds = ["https://intranet.example/", "file:///etc/"]')
    assert "reads this server's files" in guarded_change(GOOD, local)
    assert guarded_change(local, local.replace("max_depth = 3", "max_depth = 2")) == ""


@pytest.mark.parametrize(
    "seed",
    [
        "http://127.0.0.1:8983/solr/searchcrawl/select?q=*:*&wt=csv&fl=url,content",
        "http://localhost:8080/admin/",
        "http://LOCALHOST./",
        "http://solr.localhost:8983/",
        "http://[::1]/",
        "http://0.0.0.0:8983/",
        "http://2130706433:8983/",  # 127.0.0.1, as getaddrinfo reads it
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/",
        "http://[::ffff:169.254.169.254]/",
        # metadata addresses that are not link-local, and IPv6 forms carrying 169.254.169.254
        # (issue 91 review: they passed)
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://100.100.100.200/latest/meta-data/",
        "http://[::169.254.169.254]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://[::127.0.0.1]:8983/",
    ],
)
def test_a_new_loopback_or_link_local_seed_is_not_added_in_the_browser(seed: str) -> None:
    """Issue 91: a seed of SOLR_URL's own /select published every document as one public page; a
    test crawl fetched 169.254.169.254. A seed the saved text does not have, on a loopback or
    link-local address, is refused unless SEARCHCRAWL_WEB_LOCAL_SEEDS allows it; one the saved
    file has stays (it was written on the server)."""
    edited = GOOD.replace('seeds = ["https://intranet.example/"]', f'seeds = ["https://intranet.example/", "{seed}"]')
    refused = guarded_change(GOOD, edited)
    assert "loopback or link-local address" in refused and "SEARCHCRAWL_WEB_LOCAL_SEEDS" in refused
    new_source = edited.replace('seed_files = ["lists/more.txt"]\n', "")
    assert "loopback or link-local address" in guarded_change("", new_source)  # a new source neither
    assert guarded_change(GOOD, edited, local_seeds=True) == ""
    assert guarded_change(edited, edited.replace("max_depth = 3", "max_depth = 2")) == ""  # kept as saved


@pytest.mark.parametrize(
    "added",
    [
        'sitemaps = ["http://localhost:2375/containers/json"]\n',
        'domains = { include = ["intranet.example", "localhost"] }\n',
        'domains = { include = ["intranet.example", "127.0.0.1"] }\n',
        'domains = { include = ["intranet.example", "169.254.169.254"] }\n',
        '[ports."localhost"]\ninclude = [2375]\n',
        '[ports."*"]\ninclude = [443, 9200]\n',
    ],
)
def test_no_key_that_admits_a_host_adds_a_loopback_or_link_local_one_in_the_browser(added: str) -> None:
    """Issue 91 review: the editor checked new seeds only; ``[domains] include = ["localhost"]``,
    a ``[ports."localhost"]`` rule and a sitemap on localhost:2375 opened the Docker API (and
    Elasticsearch, and a link from an attacker's page to them). A sitemap, a domain rule or a
    port rule newly naming a loopback or link-local host is refused as a seed is; ``*`` port
    rules stand for every host the file names."""
    saved = 'seeds = ["https://intranet.example/", "http://localhost:8080/wiki/"]\n'
    edited = saved + added
    refused = guarded_change(saved, edited)
    assert "loopback or link-local address" in refused and "SEARCHCRAWL_WEB_LOCAL_SEEDS" in refused, refused
    assert guarded_change(saved, edited, local_seeds=True) == ""
    assert guarded_change(edited, "max_depth = 2\n" + edited) == ""  # saved on the server: kept
    if added.startswith("[ports"):
        changed = edited.replace("include = [", "include = [8443, ")
        assert "loopback or link-local address" in guarded_change(edited, changed)  # a rule changed is a new one


def test_keys_that_admit_other_hosts_are_changed_in_the_browser() -> None:
    saved = 'seeds = ["https://intranet.example/"]\n'
    for added in [
        'sitemaps = ["https://intranet.example/sitemap.xml"]\n',
        'domains = { include = ["intranet.example", "10.0.0.5"], include_prefix = ["localhost"] }\n',
        '[ports."intranet.example"]\ninclude = [443, 8443]\n',
        '[ports."*"]\ninclude = [443]\n',
    ]:
        assert guarded_change(saved, saved + added) == "", added


def test_a_seed_on_another_address_is_added_in_the_browser() -> None:
    for seed in ["http://10.0.0.5/", "http://192.168.1.1:8983/", "https://h.test/", "http://127.0.0.1.example/"]:
        edited = GOOD.replace('seeds = ["https://intranet.example/"]', f'seeds = ["https://intranet.example/", "{seed}"]')
        assert guarded_change(GOOD, edited) == "", seed


def test_a_name_with_a_trailing_newline_is_no_source_name() -> None:
    assert not valid_name("intranet\n") and valid_name("intranet")


# --- issue 91: a test crawl runs in the background, its page saying what it does ------------------


class Held:
    """A test crawl's work that goes on only when the test says so: crawling, then reporting."""

    def __init__(self, result: tuple[bool, str] = (True, "new 5")) -> None:
        self.result = result
        self.crawled, self.reported = threading.Event(), threading.Event()

    def __call__(self, phase: Callable[[str], None]) -> tuple[bool, str]:
        assert self.crawled.wait(30)
        phase(source_editor.REPORTING)
        assert self.reported.wait(30)
        return self.result


def test_a_test_crawl_runs_in_the_background_and_says_what_it_does() -> None:
    """The editor's test crawl held the page for about 20 s with nothing shown: now the form is
    answered at once, and the crawl's page says what it does, then shows its report."""
    crawls = TestCrawls()
    work = Held()
    page = {"name": "intranet", "text": GOOD, "read": "", "url": ""}
    crawl = crawls.start("session-a", page, work)
    assert crawl is not None and crawls.of("session-a") is crawl and crawls.of("session-b") is None
    wait_for(lambda: crawl.phase == source_editor.CRAWLING, what="crawling")
    assert crawl.result is None and crawl.page == page and crawl.page is not page
    with pytest.raises(TestCrawlRefused, match="still running") as refused:  # one at a time for a session: its page shows it
        crawls.start("session-a", page, Held())
    assert refused.value.status == 409
    work.crawled.set()
    wait_for(lambda: crawl.phase == source_editor.REPORTING, what="reporting")
    work.reported.set()
    wait_for(lambda: crawl.result is not None, what="the result")
    assert crawl.result == (True, "new 5") and crawl.seconds() >= 0
    done = Held()  # let through at once: a held one's thread outlived the test, failing 30 s later in the log
    done.crawled.set()
    done.reported.set()
    again = crawls.start("session-a", page, done)  # done: a new one replaces it
    assert again is not None and again is not crawl and crawls.of("session-a") is again
    wait_for(lambda: again.result is not None, what="the second result")


def test_test_crawls_wait_for_a_free_slot_and_a_failure_is_said() -> None:
    crawls = TestCrawls(at_once=1, kept=-1)
    first, second = Held(), Held()
    running = crawls.start("a", {"name": "a"}, first)
    waiting = crawls.start("b", {"name": "b"}, second)
    assert running is not None and waiting is not None
    wait_for(lambda: running.phase == source_editor.CRAWLING, what="the first crawling")
    assert waiting.phase == source_editor.WAITING  # its page says it waits for another
    first.crawled.set()
    first.reported.set()
    wait_for(lambda: waiting.phase == source_editor.CRAWLING, what="the second crawling")

    def broken(phase: Callable[[str], None]) -> tuple[bool, str]:
        raise RuntimeError("no such thing")

    failed = crawls.start("c", {"name": "c"}, broken)
    second.crawled.set()
    second.reported.set()
    assert failed is not None
    wait_for(lambda: failed.result is not None, what="the failure")
    assert failed.result == (False, "the test crawl failed: RuntimeError")
    assert crawls.of("c") is None  # its result expired (kept=-1: at once)


def test_waiting_test_crawls_are_bounded() -> None:
    """Issue 91 review: each waiting test crawl is a thread, one per session, without bound; now
    past the running and waiting ones a new one is refused, and said so, until one finishes."""
    crawls = TestCrawls(at_once=1, waiting=1)
    held = [Held(), Held()]
    running = crawls.start("a", {"name": "a"}, held[0])
    crawls.start("b", {"name": "b"}, held[1])
    threads = threading.active_count()
    with pytest.raises(TestCrawlRefused) as refused:
        crawls.start("c", {"name": "c"}, Held())
    assert str(refused.value) == "2 test crawls are running or waiting already: start yours when one has finished."
    assert refused.value.status == 503 and crawls.of("c") is None and threading.active_count() == threads
    held[0].crawled.set()
    held[0].reported.set()
    wait_for(lambda: running.result is not None, what="the first finished")
    third = Held((True, "new 1"))
    started = crawls.start("c", {"name": "c"}, third)
    for work in (held[1], third):
        work.crawled.set()
        work.reported.set()
    wait_for(lambda: started.result == (True, "new 1"), what="the third finished")


@pytest.mark.parametrize(
    "seed",
    [
        "http://169.254.169.254./latest/meta-data/",
        "http://127.0.0.1.:8983/solr/",
        "http://2130706433.:8983/",
        "http://LOCALHOST../",
    ],
)
def test_a_trailing_dot_on_an_address_literal_does_not_pass_the_guard(seed: str) -> None:
    """Issue 99: ``169.254.169.254.`` was no address literal to the editor (a name that did not
    resolve), though the crawl drops one trailing dot and connects to the literal."""
    edited = GOOD.replace('seeds = ["https://intranet.example/"]', f'seeds = ["https://intranet.example/", "{seed}"]')
    assert "loopback or link-local address" in guarded_change(GOOD, edited)


def test_the_bytes_saved_are_the_bytes_checked(folder: SourceFolder) -> None:
    """The editor's check wrote its scratch file in text mode and the loader read it through universal
    newlines; a save writes exactly the text (CRLF stays CRLF) and the loader reads that."""
    crlf = GOOD.replace("\n", "\r\n")
    assert folder.check("intranet", crlf).source is not None
    folder.save("intranet", crlf, file_version(GOOD))
    assert (folder.path / "intranet.toml").read_bytes() == crlf.encode()
    assert "a lone carriage return" in folder.check("intranet", GOOD.replace("\n", "\r")).error
