"""The stage attribution of the crawl benchmark's profile (tests/benchmarks/stages.py), on
hand-written py-spy stacks."""

from __future__ import annotations

from tests.benchmarks.stages import OTHER, STARTUP, frames_of, ms_per_page, read_raw, samples_by_stage, scaled_to, stage_of

PROCESS = 'process 42:"python -m scrapy crawl bench"'
ENGINE = "_run_module_as_main (<frozen runpy>:198);run (twisted/internet/base.py:700);_next_request (scrapy/core/engine.py:180)"
SCRAPER = "_run_module_as_main (<frozen runpy>:198);_scrape (scrapy/core/scraper.py:250)"


def stage(stack: str) -> str:
    return stage_of(frames_of(f"{PROCESS};{stack}"))


def test_innermost_known_frame_decides() -> None:
    parse = f"{SCRAPER};SourceSpider.parse (searchcrawl/crawl/spider.py:190)"
    assert stage(
        f"{parse};TextResponse.selector (scrapy/http/response/text.py:160);create_root_node (parsel/selector.py:90)"
    ) == ("HTML parsing")
    assert stage(
        f"{parse};SourceSpider.links (searchcrawl/crawl/spider.py:294);_extract_links (scrapy/linkextractors/lxmlhtml.py:120)"
    ) == ("link extraction")
    assert stage(f"{parse};SourceSpider.link_request (searchcrawl/crawl/spider.py:275)") == "link extraction"
    links = f"{parse};SourceSpider.links (searchcrawl/crawl/spider.py:294);DocumentLinks.of (searchcrawl/content/links.py:130)"
    assert stage(f"{links};resolve (searchcrawl/content/links.py:50);urljoin (urllib/parse.py:539)") == "link extraction"
    assert stage(
        f"{parse};html_attributes (searchcrawl/content/extract.py:130);visible_text (searchcrawl/content/extract.py:105)"
    ) == ("text/attribute extraction")
    assert (
        stage(
            f"{SCRAPER};ChecksumPipeline.process_item (searchcrawl/crawl/pipelines/checksum.py:21);text_checksum (searchcrawl/crawl/pipelines/checksum.py:11)"
        )
        == "checksums"
    )
    assert stage(f"{parse}") == "searchcrawl, other (spider, middlewares, rules)"
    assert stage(ENGINE) == "download and Scrapy core (Twisted)"


def test_standard_library_frames_go_to_their_caller() -> None:
    cache = f"{SCRAPER};CachePipeline.process_item (searchcrawl/crawl/pipelines/cache_writer.py:40);DocumentCache.put (searchcrawl/index/cache.py:88)"
    assert stage(f"{cache};dumps (json/__init__.py:231);JSONEncoder.encode (json/encoder.py:200)") == "cache"
    push = f"{SCRAPER};push_pending (searchcrawl/index/push.py:300);Solr.add (pysolr.py:1000)"
    assert (
        stage(f"{push};Session.request (requests/sessions.py:589);HTTPConnection.send (http/client.py:1000)") == "push into Solr"
    )
    assert stage(f"{SCRAPER};Logger.debug (logging/__init__.py:1500)") == "download and Scrapy core (Twisted)"


def test_sqlalchemy_belongs_to_its_caller_frontier_or_document_table() -> None:
    execute = "Session.execute (sqlalchemy/orm/session.py:2300);Connection.execute (sqlite3/dbapi2.py:10)"
    table = f"{SCRAPER};Ledger.record (searchcrawl/store/ledger.py:200);{execute}"
    frontier = f"{ENGINE};FrontierScheduler.next_request (searchcrawl/crawl/frontier_scheduler.py:80);{execute}"
    assert stage(table) == "document table (SQLAlchemy/SQLite)"
    assert stage(frontier) == "scheduler/frontier"


def test_imports_are_startup_whatever_module_runs_and_unknown_is_other() -> None:
    assert stage(f"{ENGINE};_find_and_load (<frozen importlib._bootstrap>:1360);<module> (lxml/html/__init__.py:1)") == STARTUP
    assert stage("_run_module_as_main (<frozen runpy>:198);<module> (mystery.py:3)") == OTHER


def test_raw_file_to_milliseconds_per_page() -> None:
    raw = (
        'process 42:"python -c \nprint(1)\n";' + ENGINE + " 250\n"
        f"{PROCESS};{SCRAPER};SourceSpider.links (searchcrawl/crawl/spider.py:294) 125\n"
        f"{PROCESS};{SCRAPER};SourceSpider.links (searchcrawl/crawl/spider.py:294) 125\n"
    )
    assert [samples for _stack, samples in read_raw(raw)] == [250, 125, 125]
    samples = samples_by_stage(raw)
    assert samples == {"link extraction": 250, "download and Scrapy core (Twisted)": 250}
    # 250 samples at 250/s = 1 s of CPU; over 10 pages, 100 ms per page
    assert ms_per_page(samples, rate=250, pages=10) == {
        "link extraction": 100.0,
        "download and Scrapy core (Twisted)": 100.0,
        "total": 200.0,
        "total without startup": 200.0,
    }


def test_measured_cpu_split_in_the_samples_shares() -> None:
    samples = {STARTUP: 50, "HTML parsing": 150, "cache": 300}
    assert scaled_to(samples, cpu_ms_per_page=10.0) == {
        STARTUP: 1.0,
        "HTML parsing": 3.0,
        "cache": 6.0,
        "total": 10.0,
        "total without startup": 9.0,
    }


def test_ledger_stages_name_the_features_a_page_goes_through() -> None:
    """The per-page cost ledger's rules (issue 102): each feature's module is its stage, in the
    older layout (index/indexer.py) as in the newer."""
    from tests.benchmarks import stages as ledger

    def of(stack: str) -> str:
        return stage_of(frames_of(f"{PROCESS};{stack}"), ledger.LEDGER_RULES)

    parse = f"{SCRAPER};SourceSpider.parse (searchcrawl/crawl/spider.py:190)"
    attributes = f"{SCRAPER};AttributesPipeline.process_item (searchcrawl/crawl/pipelines/attributes.py:90)"
    assert of(f"{parse};SourceSpider.links (searchcrawl/crawl/spider.py:294)") == ledger.PARSING
    assert of(f"{parse};Admission.link (searchcrawl/crawl/requests.py:120);RuleChain.admit (searchcrawl/rules/chain.py:80)") == (
        ledger.PARSING
    )
    assert of(f"{parse};SourceSpider.page_of (searchcrawl/crawl/spider.py:475)") == ledger.SOFT
    assert of(f"{parse};SoftErrors.of_page (searchcrawl/content/soft_errors.py:300)") == ledger.SOFT
    assert of(f"{attributes};ContentRegions.text (searchcrawl/content/regions.py:200)") == ledger.CONVERSION
    assert of(f"{attributes};html_attributes (searchcrawl/content/extract.py:130)") == ledger.ATTRIBUTES
    regions = f"{attributes};ContentRegions.text (searchcrawl/content/regions.py:200)"
    assert of(f"{regions};joined_text (searchcrawl/content/extract.py:121)") == ledger.CONVERSION
    assert of(f"{parse};DocumentLinks.of (searchcrawl/content/links.py:130)") == ledger.PARSING
    assert of(f"{SCRAPER};text_digest (searchcrawl/semantic/passage_index.py:95)") == ledger.PASSAGES
    assert of(f"{parse};DocumentAccess.of (searchcrawl/access/decision.py:40)") == ledger.ACCESS
    assert of(f"{SCRAPER};Indexer.add (searchcrawl/index/indexer.py:60)") == ledger.PUSH
    assert of(f"{SCRAPER};LedgerWriter.flush (searchcrawl/crawl/ledger_writer.py:90)") == ledger.TABLE
    assert of(f"{SCRAPER};LanguagePipeline.process_item (searchcrawl/crawl/pipelines/language.py:20)") == ledger.LANGUAGE
    assert of(f"{ENGINE};AddressGuardMiddleware.process_request (searchcrawl/crawl/middlewares/address_guard.py:50)") == (
        ledger.FETCH
    )
    checkpoints = "Checkpointer._run (searchcrawl/store/checkpoints.py:75);Event.wait (threading.py:629)"
    assert of(f"{checkpoints};Condition.wait (threading.py:331)") == ledger.WAITING
    raw = f"{PROCESS};{parse};SourceSpider.links (searchcrawl/crawl/spider.py:294) 3\n"
    assert samples_by_stage(raw, ledger.LEDGER_RULES) == {ledger.PARSING: 3}  # a stage STAGE_RULES does not name
