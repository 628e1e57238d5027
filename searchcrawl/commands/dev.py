"""`scrapy dev <kind>`: a small example server of a source type, on 127.0.0.1, until Ctrl-C.

It starts the server the tests use (searchcrawl/dev/examples.py: a few items, permissions that
differ), prints the source file that crawls it (and writes it with ``-o``), the secret to export
and who may read what (for a sign-in provider or the answers' model: the web application's
settings that use it), then serves until Ctrl-C (or SIGTERM), and stops the server and removes
its files. docs/non-web-sources.md (docs/web-application.md, docs/answers.md) shows each kind's
output and the one command that installs what it needs.
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path
from types import FrameType

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.commands import hint_program
from searchcrawl.dev.examples import EXAMPLES, SERVICES, Example

# The lines around the source file in the output: what a reader (or a test) copies lies between.
BEGIN, END = "# ----- begin {name}.toml -----", "# ----- end {name}.toml -----"
READY = "Serving until Ctrl-C."


def describe(example: Example, program: str) -> str:
    """What the command prints once the example runs."""
    lines = [f"The example {example.kind} server runs: {example.server}."]
    if example.source:
        lines += [
            f"Its source file (save it as {example.name}.toml in your sources folder):",
            BEGIN.format(name=example.name),
            example.source.rstrip("\n"),
            END.format(name=example.name),
            "Its crawl reads the password from the environment:",
            *(f"export {name}='{value}'" for name, value in example.secrets.items()),
            f"then: {program} crawl {example.name}",
            "Each item holds one word; who may read it:",
            *(f"  {word}: {', '.join(sorted(users))}" for word, users in example.readers.items()),
        ]
    if example.settings:
        lines += [
            f"Settings that use it (export them, then `{program} web`: http://127.0.0.1:8080/):",
            *(f"export {name}='{value}'" for name, value in example.settings.items()),
        ]
    if example.users:
        lines += [
            "Each user's access tokens (what their searches hold, docs/secure-search.md):",
            *(f"  {user}: {', '.join(held)}" for user, held in example.users.items()),
        ]
    lines += [
        *(f"Sign in to it as {user} with the password {password}" for user, password in example.logins.items()),
        READY,
    ]
    return "\n".join(lines)


class Command(ScrapyCommand):
    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return f"<{'|'.join(EXAMPLES)}> [-o FILE]"

    def short_desc(self) -> str:
        return "Start a small example server of a source type on 127.0.0.1 and print its source file"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-o", "--output", metavar="FILE", help="also write the source file there")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1 or args[0] not in EXAMPLES:
            raise UsageError(f"name one kind: {', '.join(EXAMPLES)}")
        if opts.output and args[0] in SERVICES:
            raise UsageError(f"{args[0]} serves the web application: it has no source file to write")
        stop = threading.Event()

        def stopping(signum: int, frame: FrameType | None) -> None:
            stop.set()

        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, stopping)
        print(f"Starting the example {args[0]} server...", flush=True)
        with EXAMPLES[args[0]]() as example:
            if opts.output:
                Path(opts.output).write_text(example.source, encoding="utf-8")
            print(describe(example, hint_program()), flush=True)
            stop.wait()
            print("Stopping the example server.", flush=True)
