"""Source files: `scrapy list`, and broken files stopping `scrapy crawl` with one clear message."""

import pytest

from searchcrawl.config.source import SourceError, SourceFile, load_source, seed_line

BROKEN = {
    "toml-syntax": ('seeds = ["{url}"\nmax_depth = 2\n', ["not valid TOML", "line"]),
    "unknown-key": ('seeds = ["{url}"]\nmax_dept = 2\n', ["key 'max_dept'", "unknown key", "max_depth"]),
    "wrong-type": ('seeds = ["{url}"]\nmax_depth = "two"\n', ["key 'max_depth'", "expected a valid integer", "'two'"]),
    "negative-depth": ('seeds = ["{url}"]\nmax_depth = -1\n', ["key 'max_depth'", "greater than or equal to 0"]),
    "no-seeds": ("max_depth = 2\n", ["key 'seeds'", "at least one seed"]),
    "bad-seed": ('seeds = ["ftp://127.0.0.1/x", "{url}"]\n', ["key 'seeds'", "http(s) or file URL", "ftp://"]),
    "seeds-not-list": ('seeds = "{url}"\n', ["key 'seeds'", "expected a valid list"]),
    "bad-seed-file": ('seed_files = ["seeds.txt"]\n', ["key 'seed_files'", "seeds.txt, line 2", "http(s) or file URL"]),
    "missing-seed-file": ('seed_files = ["absent.txt"]\n', ["key 'seed_files'", "absent.txt"]),
    "bad-spider-class": (
        'seeds = ["{url}"]\nspider_class = "os.path.join"\n',
        ["key 'spider_class'", "no spider is registered as 'os.path.join'", "example_site"],
    ),
}


def test_sources_dir_overrides_packaged_and_seed_files_merge(tmp_path) -> None:
    (tmp_path / "more.txt").write_text("http://a.test/1\n\n# comment\nhttp://a.test/2\nhttp://a.test/1\n")
    path = tmp_path / "s.toml"
    path.write_text('seeds = ["http://a.test/1"]\nseed_files = ["more.txt"]\nmax_depth = 0\npreserve_cache = true\n')
    source = load_source(SourceFile("s", str(path), path))
    assert source.seed_urls == ("http://a.test/1", "http://a.test/2")
    assert source.settings.max_depth == 0 and source.settings.preserve_cache
    with pytest.raises(SourceError, match="file name must be a source name"):
        load_source(SourceFile("bad name", str(path), path))


def test_a_comment_after_a_seed_files_url_is_not_part_of_it(tmp_path) -> None:
    """Issue 53: ``http://a.test/1  # home`` became the URL ``http://a.test/1%20%20#%20home``."""
    (tmp_path / "seeds.txt").write_text(
        "http://a.test/1  # the home page\nhttp://a.test/2\t# tabbed\n  # indented comment\n"
        "http://a.test/3#top # a fragment, then a comment\nhttp://a.test/4#top\n"
    )
    path = tmp_path / "s.toml"
    path.write_text('seed_files = ["seeds.txt"]\n')
    source = load_source(SourceFile("s", str(path), path))
    assert source.seed_urls == ("http://a.test/1", "http://a.test/2", "http://a.test/3#top", "http://a.test/4#top")
    assert seed_line("# http://a.test/") == "" and seed_line("   ") == ""


def test_tls_files_are_read_relative_to_the_source_file(tmp_path) -> None:
    import trustme

    ca = trustme.CA()
    client = ca.issue_cert("crawler@example.test")
    (tmp_path / "certs").mkdir()
    ca.cert_pem.write_to_path(str(tmp_path / "certs" / "ca.pem"))
    client.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "certs" / "client.pem"))
    path = tmp_path / "s.toml"
    path.write_text('seeds = ["https://a.test/"]\n[tls]\nca_bundle = "certs/ca.pem"\nclient_cert = "certs/client.pem"\n')
    source = load_source(SourceFile("s", str(path), path))
    assert len(source.tls_files.ca_certificates) == 1
    assert source.tls_files.client_key == source.tls_files.client_cert  # the key in the certificate's file
    assert not source.tls_files.key_encrypted
    assert "PRIVATE" not in repr(source)  # the key is never printed


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[tls]\nca_bundle = "absent.pem"\n', "[tls]: key 'ca_bundle': cannot read absent.pem"),
        ('[tls]\nverify = false\nca_bundle = "ca.pem"\n', "drop 'verify = false'"),
        ('[proxy]\nurl = "http://u:pw-Hk2-secret@proxy.test:3128"\n', "without user name and password"),
        ('[proxy]\nurl = "http://proxy.test:3128"\nsurname = "x"\n', "key 'proxy.surname': unknown key"),
        ('render_js = true\n[proxy]\nurl = "http://proxy.test:3128"\n', "cannot be combined with render_js"),
        ("render_js = true\n[tls]\nverify = false\n", "cannot be combined with render_js"),
    ],
)
def test_broken_proxy_and_tls_tables(tmp_path, text: str, words: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text('seeds = ["https://a.test/"]\n' + text)
    with pytest.raises(SourceError) as broken:
        load_source(SourceFile("s", str(path), path))
    assert words in str(broken.value) and "pw-Hk2-secret" not in str(broken.value)


def load_text(tmp_path, text: str):
    path = tmp_path / "s.toml"
    path.write_text(text)
    return load_source(SourceFile("s", str(path), path))


def test_an_agent_source_is_validated_by_its_agents_options(tmp_path) -> None:
    source = load_text(
        tmp_path,
        'type = "agent"\nagent = "json_repository"\n[agent_options]\npath = "/x"\n[access]\npublic = true\n',
    )
    assert source.seed_urls == () and source.agent_options.path == "/x"
    agent = source.make_agent()
    assert agent.key_of(agent.url_for("a/b c")) == "a/b c" and agent.url_for("k") == "repo://s/k"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('type = "agent"\n', "type = 'agent' needs 'agent'"),
        ('type = "agent"\nagent = "os.path.join"\n', "key 'agent': no agent is registered as 'os.path.join'"),
        ('type = "agent"\nagent = "files"\n', "key 'agent': 'files' is a built-in type: write type = 'files'"),
        ('type = "agent"\nagent = "json_repository"\n[agent_options]\n', "key 'agent_options.path'"),
        (
            'type = "agent"\nagent = "json_repository"\n[agent_options]\npath = "/x"\npaht = 1\n',
            "key 'agent_options.paht': unknown key (known keys: path, inline",
        ),
        (
            'type = "agent"\nagent = "json_repository"\nseeds = ["https://a.test/"]\n',
            "seeds: keys of web",
        ),
        ('type = "files"\n', "type = 'files' needs its [files] table"),
        ('type = "agent"\nagent = "json_repository"\n[mail]\n', "[mail] belongs to a source with type"),
        ('seeds = ["https://a.test/"]\nagent = "json_repository"\n', "'agent' belongs to a source"),
        ('type = "ftp"\n', "key 'type'"),
        (
            'seeds = ["https://a.test/"]\nfetch_origins = ["https://dms.test"]\n',
            "'fetch_origins' belongs to a source with an agent",
        ),
        (
            'type = "agent"\nagent = "json_repository"\nfetch_origins = ["https://dms.test/docs/"]\n'
            '[agent_options]\npath = "/x"\n',
            "expected an origin such as",
        ),
    ],
)
def test_broken_agent_sources(tmp_path, text: str, words: str) -> None:
    with pytest.raises(SourceError) as broken:
        load_text(tmp_path, text)
    assert words in str(broken.value), str(broken.value)
