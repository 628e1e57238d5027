"""A Windows share crawled over SMB against the same tree read locally (issue 56).

One tree of files is written twice: into a local folder (a ``files`` source) and into a share of
a real Samba domain controller in a network namespace of its own (an ``smb`` source, through the
veth pair: the kernel's loopback-like path, no real network). Each is crawled into the same dev
Solr, initially and again unchanged (a maintenance crawl: the listing, with every file's NTFS
descriptor read over SMB, and nothing fetched). Files per second are measured in one run, the
two sources one after the other.

    .venv/bin/python -m tests.benchmarks.smb_shares [--documents 5000] [--kind text|corpus]

``text``: distinct small text files (the transport dominates); ``corpus``: the textract corpus's
office files, PDFs and texts replicated (the converters dominate, as on a real share).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

from searchcrawl.dev.solr_runner import DevSolr, free_port
from tests.benchmarks.repositories import build_files, crawl, words
from tests.samba_domain import SambaDomain

SECRET = "SMB_BENCH_PASSWORD"


def build_text(root: Path, count: int) -> None:
    rng = random.Random(56)
    for number in range(count):
        path = root / f"folder-{number % 100:02d}" / f"{number:05d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"Document {number}\n\n{words(rng, 300)}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=5000)
    parser.add_argument("--kind", choices=("text", "corpus"), default="text")
    parser.add_argument("--out", type=Path, default=Path("smb-bench.json"))
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="searchcrawl-smb-bench-") as folder:
        work = Path(folder)
        (work / "sources").mkdir()
        local = work / "share"
        if options.kind == "text":
            build_text(local, options.documents)
        else:
            build_files(work, options.documents)
        count = sum(1 for path in local.rglob("*") if path.is_file())
        domain = SambaDomain(work / "domain").start()
        solr = DevSolr(work / "solr", free_port())
        solr.start(timeout=600)
        try:
            # the same tree on the share, written beside Samba (an administrator's copy): each
            # file then gets the NTFS permissions Samba gives a file without its own
            shutil.copytree(local, domain.share_path("docs") / "bench")
            (work / "sources" / "bench-local.toml").write_text(
                f'type = "files"\nmax_delete_share = 1.0\n[files]\nroots = ["{local}"]\n', encoding="utf-8"
            )
            (work / "sources" / "bench-smb.toml").write_text(
                'type = "smb"\nmax_delete_share = 1.0\n[smb]\n'
                f'roots = ["smb://{domain.address}/docs/bench"]\n'
                f'username = "{domain.domain}\\\\Administrator"\npassword_secret = "{SECRET}"\n',
                encoding="utf-8",
            )
            results: dict[str, Any] = {"documents": count, "kind": options.kind}
            for name in ("bench-local", "bench-smb"):
                initial = crawl(name, work, solr.url, **{SECRET: domain.admin_password})
                unchanged = crawl(name, work, solr.url, **{SECRET: domain.admin_password})
                initial["files_per_second"] = round(count / initial["seconds"], 1)
                unchanged["files_per_second"] = round(count / unchanged["seconds"], 1)
                results[name] = {"initial": initial, "maintenance_unchanged": unchanged}
                print(name, json.dumps(results[name]), flush=True)
            for crawl_kind in ("initial", "maintenance_unchanged"):
                results[f"smb_vs_local_{crawl_kind}"] = round(
                    results["bench-smb"][crawl_kind]["files_per_second"] / results["bench-local"][crawl_kind]["files_per_second"],
                    3,
                )
            options.out.write_text(json.dumps(results, indent=2), encoding="utf-8")
            print(json.dumps(results, indent=2))
        finally:
            solr.stop()
            domain.close()


if __name__ == "__main__":
    main()
