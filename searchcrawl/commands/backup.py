"""`scrapy backup export [FILE]` and `scrapy backup import FILE [--apply] [--trust-sources]`: the
installation's configuration (source files, relevance rules, API tokens' hashes, notification
settings) in one file, and back into an empty installation (ops/configuration_backup.py; the
administration's backup page does the same). An import is a dry run unless ``--apply``: it prints
what would be restored, or every problem that stops it, and exits 1 when there is one. Each source
is checked as the source editor checks a new one; ``--trust-sources`` restores those it refuses
(the command line is the server's administrator, who may write source files anyway), named in the
plan."""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.commands import open_database
from searchcrawl.ops import configuration_backup as backup
from searchcrawl.ops.terminal import printable
from searchcrawl.system import paths
from searchcrawl.web.source_editor import refused_new_source


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "export [FILE] | import FILE [--apply] [--trust-sources]"

    def short_desc(self) -> str:
        return "Export the configuration (sources, relevance rules, API tokens, notifications) to a file, or import one"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--apply", action="store_true", help="import: restore (without it, a dry run)")
        parser.add_argument(
            "--trust-sources",
            action="store_true",
            help="import: restore the sources the source editor refuses (keys that load code, read or write this"
            " server's files, or send secrets), each named in the plan",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if not args or args[0] not in ("export", "import") or len(args) > 2 or (args[0] == "import" and len(args) != 2):
            raise UsageError("expected: export [FILE] | import FILE [--apply]")
        sources_dir = paths.sources_dir(self.settings)
        if args[0] == "export":
            with open_database(self.settings, migrate=True) as database:
                exported = backup.export_backup(
                    database,
                    sources_dir,
                    self.settings.copy_to_dict(),
                    os.environ,
                    self.settings.get("SEARCHCRAWL_NOTIFY_INSTALLATION") or "searchcrawl",
                )
            text = backup.dumps(exported)
            if len(args) == 1 or args[1] == "-":
                sys.stdout.write(text)
            else:
                paths.write_atomically(Path(args[1]), text)
                os.chmod(args[1], 0o600)  # the tokens' hashes and the sources' secret names
                print(f"Backup written to {args[1]}: {len(exported['sources'])} sources", file=sys.stderr)
            for item in exported["left_out"]:
                print(f"left out: {printable(item)}", file=sys.stderr)
            return
        try:
            data = Path(args[1]).read_bytes() if args[1] != "-" else sys.stdin.buffer.read(backup.MAX_BACKUP_BYTES + 1)
            read = backup.read_backup(data)
        except (OSError, backup.BackupError) as exc:
            print(f"Nothing was restored: {printable(str(exc))}", file=sys.stderr)
            self.exitcode = 1
            return
        with open_database(self.settings, migrate=True) as database:
            plan = backup.plan_restore(
                read,
                database,
                sources_dir,
                self.settings.copy_to_dict(),
                partial(refused_new_source, local_seeds=self.settings.getbool("SEARCHCRAWL_WEB_LOCAL_SEEDS")),
                trusted=opts.trust_sources,
            )
            if plan.ok and opts.apply:
                try:
                    backup.apply_restore(plan, database, sources_dir)
                except (backup.BackupError, OSError) as exc:  # the installation changed meanwhile: nothing kept
                    print(f"Nothing was restored: {printable(str(exc))}", file=sys.stderr)
                    self.exitcode = 1
                    return
        for line in backup.plan_text(plan, applied=opts.apply):
            print(printable(line))
        self.exitcode = 0 if plan.ok else 1
