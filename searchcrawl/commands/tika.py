"""`scrapy tika start|stop|status [--port N]`: the development Tika server (dev/tika_runner.py),
the document converter of crawls run with ``SEARCHCRAWL_TIKA_URL`` set to the URL it prints."""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.dev.tika_runner import DEFAULT_PORT, DevTika, DevTikaError
from searchcrawl.system import paths

ACTIONS = ("start", "stop", "status")


class Command(ScrapyCommand):
    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "start|stop|status [--port N]"

    def short_desc(self) -> str:
        return "Start, stop or inspect the development Tika server (the document converter)"

    def long_desc(self) -> str:
        return (
            "start/stop/status manage Apache Tika's tika-server-standard on 127.0.0.1 (fetched from "
            "Maven Central on first use into ~/.cache/searchcrawl/tika; log and pid in the data "
            "directory). Crawls convert PDF, office and other documents through it when "
            "SEARCHCRAWL_TIKA_URL is set to the URL start prints; status exits 3 when it is not running."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT})")
        parser.add_argument("--timeout", type=float, default=180, help="seconds to wait for Tika to answer")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1 or args[0] not in ACTIONS:
            raise UsageError(f"expected one of {', '.join(ACTIONS)}")
        assert self.settings is not None
        tika = DevTika(paths.data_dir(self.settings), opts.port)
        try:
            if args[0] == "start":
                url = tika.start(timeout=opts.timeout)
                print(f"Tika is up at {url} (started in {tika.start_seconds:.1f}s; log: {tika.log_path})")
                print(f"Crawl with it: export SEARCHCRAWL_TIKA_URL={url}")
            elif args[0] == "stop":
                print("Tika stopped" if tika.stop() else "Tika was not running")
            else:
                state = tika.status()
                if not state["running"]:
                    print(f"Tika is not running on port {opts.port}")
                    self.exitcode = 3
                else:
                    ready = "ready" if state["ready"] else "starting"
                    print(
                        f"Tika {state['version']} is running: {state['url']} ({ready}, pid {state['pid']}, log: {state['log']})"
                    )
        except DevTikaError as exc:
            print(f"searchcrawl: {exc}")
            self.exitcode = 1
