"""A source's and a run's administration pages show their charts (issue 60) through Starlette's
TestClient, on a SQLite project database and no Solr: inline SVG that parses, with the pages'
security headers (no script, no inline style) as on every page."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from starlette.testclient import TestClient

from searchcrawl.store import Database
from searchcrawl.store.models import RunState
from searchcrawl.store.runs import Runs
from searchcrawl.store.samples import RunSamples
from searchcrawl.web.app import SECURITY_HEADERS, create_app
from tests.web.test_analytics import login
from tests.web.test_app import unit_config

SVG = "{http://www.w3.org/2000/svg}"


def charts_of(html: str) -> list[ET.Element]:
    """The page's inline charts, each parsed as XML."""
    return [ET.fromstring(svg) for svg in re.findall(r"<svg .*?</svg>", html, re.S)]


def test_the_source_and_run_pages_show_their_charts_with_the_security_headers(tmp_path: Path) -> None:
    config = unit_config(tmp_path, source_names=lambda: ["intranet"])
    database = Database(config.db_url)
    runs, samples = Runs(database), RunSamples(database)
    for number in range(3):
        info = runs.start("intranet")
        counters = {"pages": 100 * number, "documents": 50 + number, "delta": {"new": 5, "changed": number, "deleted": 1}}
        runs.end(info.id, RunState.FINISHED, {**counters, "failures": {"4xx": 2, "</svg><script>x": 1}}, "finished")
    live = runs.start("intranet")  # this process: alive, so the run is live
    for step in range(10):
        samples.add(live.id, {"pages": step * 7, "done": step * 6, "queued": 60 - step, "leased": 1, "pending": 2})
    runs.update(live.id, {"pages": 63})
    database.close()

    web = TestClient(create_app(config), base_url="http://127.0.0.1")
    login(web)
    source = web.get("/admin/sources/intranet")
    assert source.status_code == 200
    for name, value in SECURITY_HEADERS.items():
        assert source.headers[name] == value
    shown = charts_of(source.text)
    titles = [chart.find(f"{SVG}title").text for chart in shown]  # type: ignore[union-attr]
    assert titles == [
        "Documents in the index after each run",
        "New, changed and deleted documents per run",
        "Pages per minute of each run",
        "Failed fetches per run, by kind",
    ]
    assert "<script>x" not in source.text and "&lt;/svg&gt;&lt;script&gt;x" in source.text  # a hostile kind is text
    assert ' style="' not in source.text  # the CSP's style-src 'self' would refuse it

    page = web.get(f"/admin/runs/{live.id}")
    assert page.status_code == 200 and page.headers["content-security-policy"] == SECURITY_HEADERS["content-security-policy"]
    assert 'http-equiv="refresh"' in page.text  # live: it refreshes, and its chart with it
    (chart,) = charts_of(page.text)
    assert chart.find(f"{SVG}title").text == f"Progress of run {live.id}"  # type: ignore[union-attr]
    assert "pages: 63 at the latest" in (chart.find(f"{SVG}desc").text or "")  # type: ignore[union-attr]
    ended = web.get(f"/admin/runs/{live.id - 1}")  # ended before samples were kept: no chart
    assert ended.status_code == 200 and "<svg" not in ended.text
    # issue 79: the counters' names and the delta report's kinds in the page's language, their values
    # by its locale; the CSS classes, the anchors and the state's class keep the values
    german = web.get(f"/admin/runs/{live.id - 1}", headers={"accept-language": "de"}).text
    assert '<dt>Seiten</dt><dd class="counter-pages">200</dd>' in german and 'class="state state-finished"' in german
    assert '<dd class="counter-delta">neu 5, geändert 2, gelöscht 1</dd>' in german
    assert '<dd class="counter-failures">4xx 2, &lt;/svg&gt;&lt;script&gt;x 1</dd>' in german
