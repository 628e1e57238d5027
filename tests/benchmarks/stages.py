"""CPU by stage of a crawl, from py-spy's raw stacks (issue 27): which part of the pipeline the
crawler's CPU goes to, in milliseconds per page fetched.

py-spy (``record --format raw --rate R --nonblocking``, without ``--idle``) writes one line per
distinct stack: ``process PID:"command";outer (file:line);...;inner (file:line) COUNT``. Idle
threads are not sampled, so COUNT / R is CPU-ish seconds spent in that stack.

Each stack goes to one stage: the first rule (in STAGE_RULES order) that matches any frame, when
``anywhere`` (an import is startup, whatever module it runs); otherwise its innermost frame that
some rule matches, with the first such rule. Frames no rule knows (the standard library: json, re,
logging, threading ...) are transparent: their cost goes to the nearest caller that is known. A
rule with ``within`` matches only if an outer frame matches that too (SQLAlchemy called by the
frontier is the frontier's, not the document table's).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STARTUP = "Python imports and startup"
OTHER = "other"


@dataclass(frozen=True)
class Rule:
    stage: str
    pattern: re.Pattern[str]
    within: re.Pattern[str] | None = None
    anywhere: bool = False


def rule(stage: str, pattern: str, within: str | None = None, anywhere: bool = False) -> Rule:
    return Rule(stage, re.compile(pattern), re.compile(within) if within else None, anywhere)


FRONTIER = r"searchcrawl/crawl/frontier_scheduler|searchcrawl/store/frontier|scrapy/core/scheduler|scrapy/[sp]queues|queuelib/|scrapy/dupefilters"
SOLR_PUSH = r"searchcrawl/index/push|searchcrawl/index/solr_client|searchcrawl/index/id_migration|searchcrawl/crawl/pipelines/solr_push|searchcrawl/index/solrcloud|pysolr"
CACHE = r"searchcrawl/index/cache|searchcrawl/crawl/pipelines/cache_writer"
STAGE_RULES: tuple[Rule, ...] = (
    # imports, and what a crawl does once however long it is: the language model's loading,
    # SQLAlchemy's mapper configuration
    rule(
        STARTUP,
        r"<frozen importlib|importlib/|py3langid/modelio|from_model_file|configure_mappers|_configure_registries",
        anywhere=True,
    ),
    rule("scheduler/frontier", FRONTIER),
    rule("scheduler/frontier", r"sqlalchemy/|sqlite3/", within=FRONTIER),
    rule("push into Solr", SOLR_PUSH + r"|requests/|urllib3/"),
    rule("cache", CACHE),
    rule("document table (SQLAlchemy/SQLite)", r"sqlalchemy/|sqlite3/|alembic/|searchcrawl/store/"),
    rule("HTML parsing", r"lxml/|parsel/|html5lib/|w3lib/encoding|^\w+\.(?!follow)\w+ \(.*scrapy/http/response/text"),
    rule("checksums", r"hashlib|searchcrawl/crawl/pipelines/checksum"),
    rule("link extraction", r"scrapy/linkextractors|w3lib/url|scrapy/utils/url|searchcrawl/rules/urls|searchcrawl/content/links"),
    rule("link extraction", r"^(\w+\.)?(links|link_request|request) \(.*searchcrawl/crawl/spider\.py"),
    rule("text/attribute extraction", r"searchcrawl/content/|searchcrawl/crawl/pipelines/attributes|trafilatura/|langdetect/"),
    rule("searchcrawl, other (spider, middlewares, rules)", r"searchcrawl/"),
    rule("download and Scrapy core (Twisted)", r"scrapy/|twisted/|OpenSSL/|zope/|h2/|hyperlink/"),
)
STAGES = tuple(dict.fromkeys([each.stage for each in STAGE_RULES] + [OTHER]))


def frames_of(stack: str) -> list[str]:
    """The stack's frames, outermost first, without py-spy's process frame."""
    return [frame for frame in stack.split(";") if frame and not frame.startswith("process ")]


def stage_of(frames: list[str], rules: Iterable[Rule] = STAGE_RULES) -> str:
    """The stage one stack (outermost frame first) belongs to."""
    rules = tuple(rules)
    for each in rules:
        if each.anywhere and any(each.pattern.search(frame) for frame in frames):
            return each.stage
    for depth in range(len(frames) - 1, -1, -1):
        for each in rules:
            if each.anywhere or not each.pattern.search(frames[depth]):
                continue
            if each.within is None or any(each.within.search(frame) for frame in frames[:depth]):
                return each.stage
    return OTHER


RECORD_END = re.compile(r"^(.*) (\d+)$", re.DOTALL)


def read_raw(text: str) -> Iterable[tuple[str, int]]:
    """(stack, samples) from py-spy's raw format. A process frame quotes the command line, which
    may hold newlines: a record ends at a line whose last frame is ``... (file:line) COUNT``."""
    pending = ""
    for line in text.splitlines():
        pending = f"{pending}\n{line}" if pending else line
        if re.search(r"\) \d+$", line):
            found = RECORD_END.match(pending)
            assert found is not None
            yield found.group(1), int(found.group(2))
            pending = ""


def samples_by_stage(text: str, rules: Iterable[Rule] = STAGE_RULES) -> dict[str, int]:
    counts: Counter[str] = Counter()
    rules = tuple(rules)
    for stack, samples in read_raw(text):
        counts[stage_of(frames_of(stack), rules)] += samples
    stages = dict.fromkeys([each.stage for each in rules] + [OTHER])
    return {stage: counts[stage] for stage in stages if counts[stage]}


def ms_per_page(samples: dict[str, int], rate: int, pages: int) -> dict[str, float]:
    """CPU milliseconds per page fetched, by stage (samples / rate / pages * 1000), and the total."""
    found = {stage: round(count / rate / max(pages, 1) * 1000, 3) for stage, count in samples.items()}
    found["total"] = round(sum(samples.values()) / rate / max(pages, 1) * 1000, 3)
    # startup is paid once a crawl: per page, it shrinks as the site grows
    found["total without startup"] = round((sum(samples.values()) - samples.get(STARTUP, 0)) / rate / max(pages, 1) * 1000, 3)
    return found


def scaled_to(samples: dict[str, int], cpu_ms_per_page: float) -> dict[str, float]:
    """A measured CPU cost per page (rusage of an unprofiled run) split in the samples' shares.

    Why: py-spy's "not idle" is a thread not blocked in a system call; on a loaded machine a
    thread waiting for a core (or for the GIL) is sampled too, so samples / rate overstates CPU
    time, unevenly. The shares are what the profile knows; the total comes from the kernel."""
    total = sum(samples.values()) or 1
    found = {stage: round(cpu_ms_per_page * count / total, 3) for stage, count in samples.items()}
    found["total"] = round(cpu_ms_per_page, 3)
    found["total without startup"] = round(cpu_ms_per_page * (total - samples.get(STARTUP, 0)) / total, 3)
    return found


def profile_file(path: Path, rate: int, pages: int) -> dict[str, Any]:
    samples = samples_by_stage(path.read_text(encoding="utf-8", errors="replace"))
    return {"rate": rate, "pages": pages, "samples": samples, "sampled_ms_per_page": ms_per_page(samples, rate, pages)}


# The per-page cost ledger's stages (issue 102, tests/benchmarks/page_costs.py): the features a
# page goes through, named so that a regression between two commits shows with its stage. Module
# paths of both layouts (the older commit's index/indexer.py, the newer index/push.py) are named.
FETCH = "fetch and middlewares"
PARSING = "parsing and link extraction"
SOFT = "soft errors and navigation pages"
CONVERSION = "conversion and regions"
ATTRIBUTES = "attributes and checksums"
LANGUAGE = "language detection"
ACCESS = "access tokens"
TABLE = "document table writes"
PUSH = "cache and Solr push"
PASSAGES = "passages"
# A thread parked in a wait with a timeout (the SQLite checkpointer's Event.wait, a pool's queue)
# is sampled by py-spy under load as if busy: no stage's CPU, left out of the shares
WAITING = "waiting (not CPU)"
LEDGER_RULES: tuple[Rule, ...] = (
    STAGE_RULES[0],  # imports and the crawl's one-time set-up
    rule(WAITING, r"^(Condition\.wait|Event\.wait|Queue\.get|Thread\.join) \(threading\.py|^Queue\.get \(queue\.py"),
    rule("scheduler/frontier", FRONTIER),
    rule("scheduler/frontier", r"sqlalchemy/|sqlite3/", within=FRONTIER),
    rule(PASSAGES, r"searchcrawl/semantic/|searchcrawl/crawl/extensions/passage_sync"),
    rule(ACCESS, r"searchcrawl/access/|searchcrawl/crawl/pipelines/access"),
    rule(PUSH, SOLR_PUSH + "|" + CACHE + r"|searchcrawl/index/indexer|requests/|urllib3/"),
    rule(TABLE, r"sqlalchemy/|sqlite3/|alembic/|searchcrawl/store/|searchcrawl/crawl/ledger_writer"),
    rule(SOFT, r"searchcrawl/content/soft_errors|searchcrawl/rules/navigation_pages|not_found_probe"),
    rule(SOFT, r"^(\w+\.)?(page_of|soft_error|kept_out_as_navigation) \(.*searchcrawl/crawl/spider\.py"),
    rule(CONVERSION, r"searchcrawl/content/convert|searchcrawl/content/regions|trafilatura/"),
    rule(CONVERSION, r"searchcrawl/content/extract", within=r"searchcrawl/content/regions"),  # its text joined
    rule(LANGUAGE, r"searchcrawl/content/language_detection|searchcrawl/crawl/pipelines/language|py3langid/|langdetect/"),
    # a page's links: found, then admitted (the rule chain: rewriter, boundary, scope filter)
    rule(
        PARSING,
        r"lxml/|parsel/|html5lib/|w3lib/|cssselect/|scrapy/linkextractors|scrapy/utils/url"
        r"|searchcrawl/rules/(urls|chain|boundary|filters|url_rewriter)|searchcrawl/content/(links|charsets|nesting)",
    ),
    rule(PARSING, r"^\w+\.(?!follow)\w+ \(.*scrapy/http/response/text"),
    rule(PARSING, r"searchcrawl/crawl/spider\.py|searchcrawl/crawl/requests\.py"),
    rule(
        ATTRIBUTES,
        r"hashlib|searchcrawl/crawl/pipelines/(checksum|attributes|changes)|searchcrawl/content/|searchcrawl/rules/display_urls",
    ),
    rule(FETCH, r"searchcrawl/|scrapy/|twisted/|OpenSSL/|zope/|h2/|hyperlink/"),
)
