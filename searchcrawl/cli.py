"""`searchcrawl <command>`: the package's own console command (pyproject.toml, [project.scripts]).

`scrapy solr start` only knows searchcrawl's commands inside a Scrapy project (a scrapy.cfg naming
searchcrawl.settings, whose COMMANDS_MODULE lists them); in any other folder Scrapy answers
"Unknown command". `searchcrawl` runs the same commands through Scrapy's own command line
(``scrapy.cmdline.execute``), with the same settings a project would give them: the folder's
project when there is one (a scrapy.cfg here or above, or SCRAPY_SETTINGS_MODULE), else
``searchcrawl.settings``. So `searchcrawl solr start`, `searchcrawl web`, `searchcrawl crawl
<source>` work in any folder, and in a project `searchcrawl X` is `scrapy X`.

It offers searchcrawl's commands (the modules of searchcrawl.commands, ``list`` among them: Scrapy's,
the usable sources); Scrapy's tools for Scrapy projects (startproject, genspider, shell, fetch, ...)
stay `scrapy`'s. The processes the commands start (crawls, explain) inherit the settings module
through the environment, so they too work in any folder.
"""

from __future__ import annotations

import os
import pkgutil
import sys
from collections.abc import Sequence

SETTINGS_MODULE = "searchcrawl.settings"
SCRAPY_COMMANDS: tuple[str, ...] = ()  # Scrapy's own commands offered as they are (``list`` is commands/list.py)


def command_names() -> list[str]:
    """searchcrawl's commands (one module each in searchcrawl.commands) and ``SCRAPY_COMMANDS``."""
    import searchcrawl.commands

    own = [module.name for module in pkgutil.iter_modules(searchcrawl.commands.__path__) if not module.name.startswith("_")]
    return sorted([*own, *SCRAPY_COMMANDS])


def use_settings(environ: dict[str, str] | os._Environ[str] = os.environ) -> None:
    """Outside a Scrapy project, the package's settings module (Scrapy reads SCRAPY_SETTINGS_MODULE;
    it is inherited by every process a command starts); a project's own settings win."""
    from scrapy.utils.conf import closest_scrapy_cfg

    if "SCRAPY_SETTINGS_MODULE" not in environ and not closest_scrapy_cfg():
        environ["SCRAPY_SETTINGS_MODULE"] = SETTINGS_MODULE


def usage(names: Sequence[str]) -> str:
    return (
        "Usage: searchcrawl <command> [options] [args]\n\n"
        f"Commands: {', '.join(names)}\n\n"
        'Use "searchcrawl <command> -h" for a command\'s options. The same commands as `scrapy <command>` '
        "in a searchcrawl project, in any folder."
    )


def main(argv: Sequence[str] | None = None) -> None:
    """The console command: ``argv`` without the program's name (default: sys.argv[1:])."""
    args = list(sys.argv[1:] if argv is None else argv)
    names = command_names()
    command = next((arg for arg in args if not arg.startswith("-")), None)
    if command is None:
        print(usage(names))
        sys.exit(0 if args in ([], ["-h"], ["--help"]) else 2)
    if command not in names:
        print(f"searchcrawl: unknown command {command!r}\n\n{usage(names)}", file=sys.stderr)
        sys.exit(2)
    use_settings()
    from scrapy.cmdline import execute

    execute(["searchcrawl", *args])  # exits with the command's exit code
