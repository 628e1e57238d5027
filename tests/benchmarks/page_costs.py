"""The per-page cost ledger (issue 102): CPU per page by stage, this checkout against an older
commit, measured in one run, so that a feature that made every page dearer shows as a ratio with
its stage.

    .venv/bin/python -m tests.benchmarks.page_costs --old 4750b3c [--new HEAD] [--sites nutch,sphinx] [--rounds 2] [--out DIR]

The older commit's tree (and the newer one's, with --new; else this checkout as it is) is
exported (``git archive``) into the work folder and its crawler runs
with the same interpreter and packages as this checkout's; both crawl the same built site (the
shared corpora's, tests/benchmarks/real_sites.py) served by the same nginx into the same dev Solr,
each crawl a first crawl from an empty data folder of its own, one process. Each round crawls with
both codes, the older first in odd rounds and last in even ones (alternated: a machine whose load
changes during the run weighs on both), twice each: once measured (CPU seconds of the process and
its children, from rusage: the figure that counts) and once under py-spy, whose samples give the
stages' shares (``stages.LEDGER_RULES``). A stage's CPU ms per page is its share of the pooled
samples times the median measured CPU per page (py-spy's own figures count threads waiting for a
core too, which a loaded machine inflates unevenly: ``stages.scaled_to``).

Writes results.json and results.md to --out (the table goes in tests/benchmarks/README.md); the
load average before and after is in both. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.benchmarks.crawl import PROFILE_RATE, Bench, benchmark_solr
from tests.benchmarks.measure import forget_source, markdown_table, write_results
from tests.benchmarks.real_sites import RealSite
from tests.benchmarks.stages import LEDGER_RULES, WAITING, samples_by_stage, scaled_to
from tests.benchmarks.synthetic import nginx
from tests.conftest import ROOT

OLD = "4750b3c"  # issue 102's older commit: three turns before it, 6.9-7.8 s of CPU for the Nutch site


@dataclass(frozen=True)
class Code:
    name: str  # "old" or "new": a source name's suffix, a column's title
    commit: str
    root: Path


def export(commit: str, target: Path) -> Path:
    """The tree of ``commit`` of this repository, written under ``target`` (``git archive``)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True).stdout
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tree:
        if hasattr(tarfile, "data_filter"):
            tree.extractall(target, filter="data")
        else:  # Debian 12's Python 3.11.2: the archive is this repository's own
            tree.extractall(target)  # noqa: S202
    return target


def commit_of(reference: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", reference], check=True, capture_output=True, text=True
    ).stdout.strip()


def order(codes: list[Code], round_number: int) -> list[Code]:
    """The codes in round ``round_number``'s order: as given in even rounds, reversed in odd ones."""
    return codes if round_number % 2 == 0 else codes[::-1]


class Ledger:
    """One site's crawls with each code, alternated, and the table they make."""

    def __init__(
        self, site: RealSite, codes: list[Code], work: Path, solr_url: str, solr_pid: int | None, settings: tuple[str, ...]
    ):
        self.site, self.codes, self.work = site, codes, work
        self.solr_url, self.solr_pid, self.settings = solr_url, solr_pid, settings

    def run(self, rounds: int) -> dict[str, Any]:
        measured: dict[str, list[dict[str, Any]]] = {code.name: [] for code in self.codes}
        samples: dict[str, Counter[str]] = {code.name: Counter() for code in self.codes}
        with nginx(self.site.root, self.work / "nginx") as server:
            benches = {
                code.name: Bench(
                    f"{self.site.name.replace('-', '')}{code.name}",
                    self.work / code.name,
                    self.solr_url,
                    server,
                    self.site,
                    self.solr_pid,
                    self.settings,
                    root=code.root,
                )
                for code in self.codes
            }
            for number in range(rounds):
                for code in order(self.codes, number):
                    bench = benches[code.name]
                    measured[code.name].append(self.first_crawl(bench, number))
                    profiled = bench.profile(bench.work / f"profile-data-{number}", bench.work / f"stacks-{number}.txt")
                    text = Path(profiled["stacks"]).read_text(encoding="utf-8", errors="replace")
                    samples[code.name].update(samples_by_stage(text, LEDGER_RULES))
                    print(f"{self.site.name} round {number} {code.name}: {measured[code.name][-1]}", file=sys.stderr)
        return {
            "site": self.site.name,
            "codes": {code.name: code.commit for code in self.codes},
            "crawls": measured,
            "samples": {name: dict(counted) for name, counted in samples.items()},
            "cpu_ms_per_page": {name: stage_costs(measured[name], samples[name]) for name in measured},
        }

    def first_crawl(self, bench: Bench, number: int) -> dict[str, Any]:
        """A first crawl of the site (an empty data folder, nothing of the source in Solr), measured."""
        forget_source(self.solr_url, bench.source)
        env = dict(bench.env, SEARCHCRAWL_DATA_DIR=str(bench.work / f"data-{number}"))
        result = bench.measure("b", bench.crawl_command, bench.root, env)
        keep = ("requests", "urls", "seconds", "cpu_s", "cpu_s_per_1000_pages", "peak_rss_mb", "solr_updates", "cores_busy")
        return {key: result[key] for key in keep}


def stage_costs(crawls: list[dict[str, Any]], samples: Counter[str]) -> dict[str, float]:
    """CPU ms per page by stage: the median measured CPU per page split in the samples' shares."""
    median = statistics.median(crawl["cpu_s_per_1000_pages"] for crawl in crawls)
    return scaled_to({stage: count for stage, count in samples.items() if stage != WAITING}, median)


def round_ratios(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[float]:
    """The newer code's CPU per page over the older's, round by round: crawls next to each other
    in time, where the medians of each code's crawls drift with the machine's load (the order
    alternates, so in a run whose load falls one code's median comes from a later round)."""
    return [each["cpu_s_per_1000_pages"] / other["cpu_s_per_1000_pages"] for other, each in zip(old, new, strict=True)]


def ratio(new: float, old: float) -> str:
    return f"{new / old:.2f}" if old else "n/a"


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Commits: {', '.join(f'{name} {commit}' for name, commit in report['codes'].items())}; "
        f"load average (1, 5, 15 min) before {report['load_before']}, after {report['load_after']}; "
        f"{report['rounds']} rounds alternated, one measured and one profiled crawl of each code a round.",
        "",
    ]
    old, new = report["names"]
    for site in report["sites"]:
        costs = site["cpu_ms_per_page"]
        stages = [stage for stage in dict.fromkeys([*costs[old], *costs[new]]) if not stage.startswith("total")]
        stages += ["total without startup", "total"]
        rows = [
            [
                stage,
                f"{costs[old].get(stage, 0.0):.2f}",
                f"{costs[new].get(stage, 0.0):.2f}",
                ratio(costs[new].get(stage, 0.0), costs[old].get(stage, 0.0)),
            ]
            for stage in stages
        ]
        lines.append(
            markdown_table(
                f"{site['site']}: CPU ms per page fetched, by stage",
                ["stage", f"{old} ({site['codes'][old]})", f"{new} ({site['codes'][new]})", f"{new}/{old}"],
                rows,
            )
        )
        pairs = round_ratios(site["crawls"][old], site["crawls"][new])
        lines.append(
            f"- {new}/{old} within each round (the two codes' crawls next to each other): "
            f"{', '.join(f'{each:.2f}' for each in pairs)} (median {statistics.median(pairs):.2f})"
        )
        for name in (old, new):
            crawls = site["crawls"][name]
            lines.append(
                f"- {name}: CPU s per crawl {', '.join(str(crawl['cpu_s']) for crawl in crawls)}; requests "
                f"{', '.join(str(crawl['requests']) for crawl in crawls)}; seconds "
                f"{', '.join(str(crawl['seconds']) for crawl in crawls)}; Solr updates "
                f"{', '.join(str(crawl['solr_updates']) for crawl in crawls)}"
            )
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", default=OLD, help=f"the older commit (default {OLD})")
    parser.add_argument(
        "--new",
        default="",
        help="the newer commit, exported as the older one (default: this checkout as it is, uncommitted changes too)",
    )
    parser.add_argument("--sites", default="nutch,sphinx", help="the real sites crawled (default nutch,sphinx)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, each a measured and a profiled crawl of both codes")
    parser.add_argument("--out", default="", help="folder for results.json and results.md")
    parser.add_argument("--solr-url", default="", help="a Solr core to use (default: a dev Solr of its own)")
    parser.add_argument("--solr-pid", type=int, default=0, help="with --solr-url: its JVM's pid")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a setting of every crawl")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-ledger-"))
    out = Path(args.out or work / "results")
    out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: the crawl, nginx and Solr stop too
    new = Code("new", commit_of(args.new), export(args.new, work / "new-tree")) if args.new else Code("new", "checkout", ROOT)
    codes = [Code("old", commit_of(args.old), export(args.old, work / "old-tree")), new]
    report: dict[str, Any] = {
        "codes": {code.name: code.commit for code in codes},
        "names": [code.name for code in codes],
        "rounds": args.rounds,
        "profile_rate": PROFILE_RATE,
        "load_before": [round(load, 2) for load in os.getloadavg()],
        "sites": [],
    }
    solr, solr_url, solr_pid = benchmark_solr(args.solr_url, args.solr_pid, work)
    try:
        for name in args.sites.split(","):
            site = RealSite.unpack(name, work / f"site-{name}")
            ledger = Ledger(site, codes, work / f"run-{name}", solr_url, solr_pid, tuple(args.set))
            report["sites"].append(ledger.run(args.rounds))
            report["load_after"] = [round(load, 2) for load in os.getloadavg()]
            write_results(out, report, markdown)
    finally:
        if solr is not None:
            solr.stop()
    print(markdown(report))
    print(f"results in {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
