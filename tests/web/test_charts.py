"""The administration pages' charts (searchcrawl/web/charts.py, pictures.py; issue 60): valid SVG
whatever the data, hostile labels as text, round scales, bounded points; and what a source's and
a run's pages plot, from the runs table and the run's samples (tests/store/test_samples.py)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest
from scrapy.utils.python import global_object_name

from searchcrawl.crawl.exceptions import RequestRefused, TransportFailed
from searchcrawl.crawl.run import EXCEPTION_TYPE_STAT, failure_counts, held_back_names
from searchcrawl.web import charts
from searchcrawl.web.charts import Series, downsample, line_chart, nice_ticks, stacked_bars, time_ticks
from searchcrawl.web.pictures import SOURCE_RUNS, pages_per_minute, run_chart, source_charts

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = "</svg><script>alert(1)</script>\x00\x1b&amp;\"'"
T0 = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)


def parsed(svg: str) -> ET.Element:
    """The chart as XML (it must parse), checked for what the pages' CSP would refuse."""
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    for element in root.iter():
        assert element.tag not in (f"{SVG}script", f"{SVG}style", f"{SVG}foreignObject")
        assert "style" not in element.attrib and not any(name.startswith("on") for name in element.attrib)
        assert not any("javascript:" in value for value in element.attrib.values())
    labelled = root.get("aria-labelledby", "").split()
    ids = {element.get("id") for element in root.iter()}
    assert labelled and all(key in ids for key in labelled)
    return root


def texts(root: ET.Element) -> list[str]:
    return [element.text or "" for element in root.iter() if element.tag in (f"{SVG}text", f"{SVG}title", f"{SVG}desc")]


def test_a_line_chart_is_valid_svg_with_a_title_a_legend_and_round_ticks() -> None:
    points = [((T0 + timedelta(minutes=n)).timestamp(), 37.0 * n) for n in range(60)]
    root = parsed(line_chart("Progress", [Series("pages", points), Series("done", points[:30])], y_label="count"))
    words = texts(root)
    assert words[0] == "Progress" and "pages" in words and "done" in words
    assert "2,000" in words and "1,000" in words  # y from 0 to 2,183: ticks of 500
    assert len(root.findall(f"{SVG}polyline")) == 2
    dashes = {line.get("stroke-dasharray") for line in root.findall(f"{SVG}polyline")}
    assert len(dashes) == 2  # told apart without colour
    assert "pages: 2,183 at the latest" in (root.find(f"{SVG}desc").text or "")


@pytest.mark.parametrize("chart", ["line", "bars"])
def test_hostile_labels_are_text(chart: str) -> None:
    """A label from data (a failure kind, a category) cannot close the SVG or open a script."""
    if chart == "line":
        svg = line_chart(HOSTILE, [Series(HOSTILE, [(1.0, 2.0), (3.0, 4.0)])], y_label=HOSTILE)
    else:
        svg = stacked_bars(HOSTILE, [HOSTILE, "b"], [Series(HOSTILE, [(0, 1), (1, 2)])], y_label=HOSTILE)
    assert "<script" not in svg and "</svg><" not in svg[:-6] and "\x00" not in svg
    root = parsed(svg)
    assert any(word.startswith("</svg><script>") for word in texts(root))  # shown, as text


@pytest.mark.parametrize("series", [[], [Series("pages", [])], [Series("pages", [(float("nan"), 1.0)])]])
def test_no_data_is_said(series: list[Series]) -> None:
    root = parsed(line_chart("Nothing", series))
    assert "No data yet" in texts(root)
    assert "No data yet" in texts(parsed(stacked_bars("Nothing", [], [])))


def test_one_point_is_drawn_as_a_dot() -> None:
    root = parsed(line_chart("One", [Series("documents", [(T0.timestamp(), 5.0)])]))
    assert len(root.findall(f"{SVG}circle")) == 1
    root = parsed(stacked_bars("One", ["run 1"], [Series("new", [(0, 0)])]))  # all zero: an axis of 0..1
    assert texts(root).count("run 1") == 1


def test_a_long_series_is_thinned_to_its_bound_and_keeps_its_peak() -> None:
    points = [(float(n), float(n % 1000 == 500) * 1e6) for n in range(100_000)]
    kept = downsample(points, 240)
    assert len(kept) <= 240 and kept[0] == points[0] and kept[-1] == points[-1]
    assert max(y for _x, y in kept) == 1e6  # a spike survives
    assert [x for x, _y in kept] == sorted(x for x, _y in kept)
    root = parsed(line_chart("Long", [Series("pages", points)]))
    assert len(root.find(f"{SVG}polyline").get("points", "").split()) <= charts.MAX_POINTS
    bars = parsed(stacked_bars("Many", [str(n) for n in range(500)], [Series("new", [(n, 1) for n in range(500)])]))
    assert len([rect for rect in bars.iter(f"{SVG}rect") if rect.get("stroke-width") == "1"]) == charts.MAX_BARS


def test_scales() -> None:
    assert nice_ticks(0, 2183) == [0, 500, 1000, 1500, 2000, 2500]
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0, 0) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0, 7) == [0, 2, 4, 6, 8]
    assert nice_ticks(0, 2, integer=True) == [0, 1, 2] and nice_ticks(0, 12, integer=True) == [0, 5, 10, 15]  # counts
    ticks, format_ = time_ticks(T0.timestamp(), (T0 + timedelta(minutes=50)).timestamp())
    assert ticks[1] - ticks[0] == 600 and format_ == "%H:%M"
    ticks, format_ = time_ticks(T0.timestamp(), (T0 + timedelta(days=20)).timestamp())
    assert format_ == "%Y-%m-%d" and all(datetime.fromtimestamp(t, UTC).hour == 0 for t in ticks)
    assert charts.number(1234) == "1,234" and charts.number(12_500) == "12.5K" and charts.number(3_400_000) == "3.4M"


def test_stacked_bars_stack_with_a_hatch_each() -> None:
    root = parsed(
        stacked_bars("Changes", ["run 1", "run 2"], [Series("new", [(0, 10), (1, 0)]), Series("changed", [(0, 5), (1, 3)])])
    )
    patterns = root.findall(f"{SVG}defs/{SVG}pattern")
    assert len(patterns) == 1  # the first series is solid, the second hatched
    bars = [rect for rect in root.iter(f"{SVG}rect") if rect.get("stroke-width") == "1"]
    assert len(bars) == 3  # run 1: new and changed; run 2: changed only
    assert "15" in texts(root) or "16" in texts(root)  # the y axis reaches the highest stack


# --- what the pages plot ---------------------------------------------------------------------------


def run(number: int, **counters: object) -> dict[str, object]:
    started = T0 + timedelta(hours=number)
    return {
        "id": number,
        "started_at": started,
        "updated_at": started + timedelta(minutes=10),
        "ended_at": started + timedelta(minutes=10),
        "counters": json.dumps(counters),
    }


def test_a_source_page_plots_its_runs() -> None:
    runs = [
        run(n, pages=600, documents=100 + n, delta={"new": n, "changed": 2, "deleted": 1}, failures={"4xx": n})
        for n in range(1, 41)
    ]
    runs.append(run(41, pages=10))  # a run ended before these counters existed: no points
    documents, changes, rates, failures = (parsed(chart) for chart in source_charts(runs))
    assert len(documents.find(f"{SVG}polyline").get("points", "").split()) == SOURCE_RUNS - 1
    assert "documents: 140 at the latest" in (documents.find(f"{SVG}desc").text or "")
    assert {"new", "changed", "deleted"} <= set(texts(changes))
    assert "run 41" in texts(changes) and "run 11" not in texts(changes)  # the latest 30
    assert "pages/min: 1 at the latest" in (rates.find(f"{SVG}desc").text or "")
    assert "4xx" in texts(failures)
    assert pages_per_minute(run(1, pages=600)) == 60.0 and pages_per_minute(run(1)) is None
    nothing = [parsed(chart) for chart in source_charts([run(1)])]
    assert all("No data yet" in texts(chart) for chart in nothing[:1] + nothing[3:])


def test_a_run_page_plots_its_samples_and_its_end() -> None:
    samples = [
        {"at": T0 + timedelta(seconds=30 * n), "pages": 10 * n, "done": 9 * n, "queued": 100 - n, "leased": 2, "pending": 3}
        for n in range(20)
    ]
    root = parsed(run_chart(run(7, pages=250, done=240, queued=0, leased=0), samples))
    assert {"pages", "done", "to fetch", "waiting for Solr"} <= set(texts(root))
    desc = root.find(f"{SVG}desc").text or ""
    assert "pages: 250 at the latest" in desc and "to fetch: 0 at the latest" in desc  # the end's counters
    assert "waiting for Solr: 3 at the latest" in desc


def test_failures_by_kind_from_the_crawl_stats() -> None:
    stats = {
        "downloader/response_status_count/200": 50,
        "downloader/response_status_count/404": 3,
        "downloader/response_status_count/410": 1,
        "downloader/response_status_count/503": 2,
        "downloader/exception_count": 4,
        "searchcrawl/auth_refused": 0,
        "searchcrawl/solr_refused": 1,
    }
    assert failure_counts(stats) == {"4xx": 4, "5xx": 2, "Solr refused": 1, "network": 4}
    assert failure_counts({"downloader/response_status_count/200": 5}) == {}


def test_requests_held_for_a_login_or_refused_by_a_rule_are_no_network_failures() -> None:
    """Issue 91: a crawl with no network error showed "network 77" (`scrapy status`, the source's
    chart): Scrapy's DownloaderStats counts every exception a downloader middleware raises, the
    form login's gate holding a request while the origin logs in, a rule's refusal and a request
    given back as the crawl closes among them. Only what is left are the network's failures."""
    held = "downloader/exception_type_count/searchcrawl.crawl.exceptions.SessionHeld"
    stats = {
        "downloader/exception_count": 77 + 5 + 3 + 2 + 2,
        held: 77,
        "downloader/exception_type_count/searchcrawl.crawl.exceptions.RequestRefused": 5,
        "downloader/exception_type_count/searchcrawl.crawl.exceptions.Unsent": 3,
        "downloader/exception_type_count/scrapy.exceptions.IgnoreRequest": 2,
        "downloader/exception_type_count/twisted.internet.error.TimeoutError": 2,
    }
    assert failure_counts(stats) == {"network": 2}
    assert failure_counts({"downloader/exception_count": 77, held: 77}) == {}


def test_requests_the_sources_tls_or_proxy_cannot_carry_are_network_failures() -> None:
    """Issue 91 review: every IgnoreRequest was held back from the network failures, the download
    handler's TLS refusal and the proxy's among them (TransportFailed, a RequestRefused): a crawl
    whose every request failed on TLS showed no failure at all."""
    failed = EXCEPTION_TYPE_STAT + global_object_name(TransportFailed)
    assert issubclass(TransportFailed, RequestRefused) and global_object_name(TransportFailed) not in held_back_names()
    assert global_object_name(RequestRefused) in held_back_names()
    assert failure_counts({"downloader/exception_count": 4, failed: 4}) == {"network": 4}


@pytest.mark.parametrize("value", [1e15, 1.7e20, -3.5e300, 1.7e308, float("inf"), float("nan")])
def test_a_number_past_the_short_forms_is_written_not_raised(value: float) -> None:
    """Babel's short form raised decimal.InvalidOperation on 1e300 (a chart of such counts, or a
    tick above them, failed the page): past trillions a label is in scientific notation."""
    label = charts.number(value)
    assert label == "–" if value != value or value in (float("inf"), float("-inf")) else "E" in label


def test_bars_of_huge_and_not_finite_values_are_drawn() -> None:
    huge = [Series("a", [(0.0, 1e300), (1.0, 5.0)]), Series("b", [(0.0, float("inf")), (1.0, 1.7e20)])]
    svg = stacked_bars("Pages", ["one", "two"], huge)
    ET.fromstring(str(svg))
