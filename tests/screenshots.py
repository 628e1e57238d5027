"""The README's screenshots of the web application: `.venv/bin/python -m tests.screenshots`.

Everything is its own and temporary: a dev Solr on a free port, the harbour site of the web
tests (tests/web_site.py) crawled into it, a slowed intranet crawl started from the
administration pages, and `scrapy web`; Debian's Chromium takes the search page, the live run
page and its progress chart, the query analytics page (after a few searches and clicks) and a
source's charts of its runs (the harbour source crawled again as its site changes), written to
docs/images/ (small PNGs: a narrow window, a 64-colour palette when Pillow is
installed), then everything is stopped.
"""

from __future__ import annotations

import signal
import tempfile
import uuid
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from searchcrawl.dev.solr_runner import DevSolr
from tests.conftest import ROOT, Project, Site, free_port, wait_for
from tests.sites import build_intranet
from tests.web_site import PASSWORD, build_harbour, crawl_harbour, serve_web

IMAGES = ROOT / "docs" / "images"
CHROMIUM = "/usr/lib/chromium/chromium"
SIZE = {"width": 1000, "height": 720}


def shrink(path: Path) -> None:
    """A 64-colour palette PNG: a text page loses nothing visible, and most of its bytes."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as image:
        image.convert("RGB").quantize(colors=64).save(path, optimize=True)


def main() -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="searchcrawl-screenshots-") as folder:
        base = Path(folder)
        for name in ("sources", "site", "intranet", "data"):
            (base / name).mkdir()
        solr = DevSolr(base / "solr", free_port())
        solr.start(timeout=600)
        sites: list[Site] = []
        web = None
        try:
            project = Project(base / "data", base / "sources", solr.url)
            titles = build_harbour(base / "site")
            sites.append(Site(base / "site").start())
            corpus = crawl_harbour(project, sites[0], titles)
            recrawl_with_changes(project, base / "site", corpus.main)
            build_intranet(base / "intranet")
            sites.append(Site(base / "intranet").start())
            intranet = f"intranet-{uuid.uuid4().hex[:4]}"
            project.source(
                intranet, f'seeds = ["{sites[1].url}index.html"]\nmax_depth = 3\ndelay = 0.5\nconcurrent_requests = 1\n'
            )
            port = free_port()
            web = serve_web(project, port)
            url = f"http://127.0.0.1:{port}"
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
                page = browser.new_page(viewport=SIZE)
                page.goto(url + "/?q=harbour+lighthouse")
                page.screenshot(path=IMAGES / "search.png")
                # searches and clicks for the query analytics page (each hit opened through /click)
                searches = [
                    "harbour+lighthouse",
                    "harbour+master",
                    "tugboat",
                    "Harbour+Master",
                    "harbor+tariffs",
                    "pilot",
                    "ferry+timetable",
                ]
                for number, query in enumerate(searches[1:]):
                    page.goto(url + "/?q=" + query)
                    links = page.locator(".hit h2 a")
                    if links.count() > number % 3:
                        links.nth(number % 3).click()
                        page.wait_for_load_state()
                page.goto(url + "/admin/login")
                page.fill("input[name=username]", "admin")
                page.fill("input[name=password]", PASSWORD)
                page.click("button[type=submit] >> text=Log in")
                page.locator("tr", has=page.locator(f"a[href='/admin/sources/{intranet}']")).locator(
                    "button[value=start]"
                ).click()
                page.wait_for_selector(".flash")

                def running() -> bool:
                    page.goto(url + f"/admin/sources/{intranet}")
                    return page.locator("table.runs a").count() > 0

                wait_for(running, 60, "the crawl's run")
                page.locator("table.runs a").first.click()
                wait_for(lambda: int(page.inner_text(".counter-pages") or 0) >= 12, 60, "pages")
                page.screenshot(path=IMAGES / "run.png", full_page=False)
                wait_for(lambda: _points(page, "figure.progress-chart polyline") >= 5, 60, "the progress chart")
                page.locator("figure.progress-chart svg").screenshot(path=IMAGES / "run-chart.png")
                page.click("button[value=suspend]")
                page.wait_for_selector(".flash")

                def logged() -> bool:
                    page.goto(url + "/admin/analytics?days=1")
                    return page.inner_text("#total-searches") == str(len(searches))

                wait_for(logged, 30, "the searches on the analytics page")
                page.screenshot(path=IMAGES / "analytics.png", full_page=True)
                page.goto(url + f"/admin/sources/{corpus.main}")
                page.locator(".charts").screenshot(path=IMAGES / "source-charts.png")
                browser.close()
            wait_for(lambda: not _running(project, intranet), 60, "the crawl to suspend")
        finally:
            if web is not None:
                web.send_signal(signal.SIGTERM)
                web.wait(timeout=30)
            for site in sites:
                site.stop()
            solr.stop()
    for name in ("search.png", "run.png", "run-chart.png", "analytics.png", "source-charts.png"):
        shrink(IMAGES / name)
        print(f"{IMAGES / name}: {(IMAGES / name).stat().st_size // 1024} KiB")


def recrawl_with_changes(project: Project, root: Path, source: str, rounds: int = 4) -> None:
    """More runs of the harbour source, its site changing between them (pages rewritten, one
    gone): the source page's charts of its runs over time."""
    for number in range(rounds):
        for log in range(number * 4, number * 4 + 2 + number):
            path = root / f"log{log:02d}.html"
            if path.exists():
                path.write_text(path.read_text(encoding="utf-8").replace("wrote", f"wrote (revised {number})"), "utf-8")
        if number == 1:
            (root / "log23.html").unlink()  # gone: a 404, then a deletion
        result = project.scrapy("crawl", source)
        assert result.returncode == 0, result.stderr[-3000:]


def _points(page: Page, selector: str) -> int:
    locator = page.locator(selector)
    return len((locator.first.get_attribute("points") or "").split()) if locator.count() else 0


def _running(project: Project, source: str) -> bool:
    from searchcrawl.store.runs import Runs

    table = project.table()
    try:
        return (Runs(table.database).latest(source) or {}).get("state") == "running"
    finally:
        table.database.close()


if __name__ == "__main__":
    main()
