"""Settings from the environment: one mechanism for every searchcrawl setting.

Every setting searchcrawl defines (``SEARCHCRAWL_*`` and ``SOLR_URL`` in searchcrawl/settings.py)
may be given as an environment variable of the same name, and the value is read exactly as
``-s NAME=value`` reads it: as text, which the setting's reader (``getint``, ``getbool``,
``getlist``, ...) converts. The settings module applies them at its end, so they replace the
module's defaults; ``-s`` on the command line still wins over them, and so does a source's own key
for the same setting (``processes``, ``concurrent_sites``, ...: the more particular says more).

Scrapy's own settings (``CONCURRENT_REQUESTS``, ``REDIRECT_MAX_TIMES``, ...) are not read from the
environment (Scrapy reads none of its settings there): set them with ``-s`` or in a settings
module. Secrets are not settings either: they stay in the environment or a file
(system/secrets.py), never among the settings, which Scrapy logs and scrapyd lists.

A ``SEARCHCRAWL_`` variable that is neither a setting nor a secret is a mistake (a misspelt name,
a setting since renamed): the settings module logs a WARNING naming it, with the setting it most
resembles, instead of ignoring it silently.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

from searchcrawl.system.secrets import SECRET_NAME, SECRET_NAMES

# The names of searchcrawl's settings: what the environment may set
SETTING_NAME = re.compile(r"SEARCHCRAWL_[A-Z0-9_]+|SOLR_URL")
# Variables of the project's that are not settings: the test suite's own (tests/conftest.py), the
# user names that go with a secret (SEARCHCRAWL_SOLR_USERNAME) and the dev Solr build's, set for
# its Maven child only
NOT_SETTINGS = re.compile(r"SEARCHCRAWL_TEST_\w*|SEARCHCRAWL_\w*_USERNAME|SEARCHCRAWL_SOLR_BUILD_DIR")


def setting_names(defaults: Mapping[str, object]) -> frozenset[str]:
    """The settings among a settings module's names (``vars(module)`` or its ``globals()``)."""
    return frozenset(name for name in defaults if SETTING_NAME.fullmatch(name))


def from_environment(defaults: Mapping[str, object], environ: Mapping[str, str]) -> dict[str, str]:
    """The settings of ``defaults`` that ``environ`` sets, with their text as ``-s`` would give it."""
    return {name: environ[name] for name in sorted(setting_names(defaults)) if name in environ}


def ignored_variables(defaults: Mapping[str, object], environ: Mapping[str, str]) -> list[str]:
    """``SEARCHCRAWL_`` variables of ``environ`` that are neither a setting of ``defaults`` nor a
    secret: a secret's name says so (``..._PASSWORD``, ``..._TOKEN``, ``..._KEY``, their ``_FILE``),
    and a source may name secrets of its own, so any such name is taken for one."""
    names = setting_names(defaults)
    return sorted(
        name
        for name in environ
        if name.startswith("SEARCHCRAWL_")
        and name not in names
        and not SECRET_NAME.search(name)
        and name.removesuffix("_FILE") not in SECRET_NAMES
        and not NOT_SETTINGS.fullmatch(name)
    )


def ignored_warning(name: str, defaults: Mapping[str, object]) -> str:
    """The start-up warning for an ignored variable ``name``, with the setting it most resembles."""
    prefix = "SEARCHCRAWL_"  # compared without it: every name shares it
    names = {setting.removeprefix(prefix): setting for setting in setting_names(defaults)}
    close = difflib.get_close_matches(name.removeprefix(prefix), sorted(names), n=1, cutoff=0.8)
    hint = f" (did you mean {names[close[0]]}?)" if close else ""
    return f"{name} is set in the environment but is not a searchcrawl setting nor a secret: it is ignored{hint}"
