"""The interface's message catalogues kept up to date with the code (issue 79): the messages are
extracted from searchcrawl's Python (``gettext``, ``ngettext``, ``N_``) and from the web templates
(``_()`` and ``{% trans %}``), and each language's ``.po`` file under searchcrawl/system/locales gains
the new ones (untranslated) and loses the ones no longer used; translations are kept.

    python -m searchcrawl.dev.message_catalogues          # update every catalogue
    python -m searchcrawl.dev.message_catalogues --check  # exit 1 when one is out of date or incomplete

tests/system/test_translations.py holds that every catalogue is up to date and complete, with the
same functions. No line numbers are written (a moved line changes no catalogue)."""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

from searchcrawl.system.translations import DOMAIN, ENGLISH, LANGUAGES, catalogue_path

PACKAGE = Path(__file__).resolve().parents[1]
LOCALES = PACKAGE / "system"
METHODS = [("web/templates/**.html", "jinja2"), ("**.py", "python")]
OPTIONS = {"web/templates/**.html": {"extensions": "jinja2.ext.i18n", "trimmed": "false"}}


def extracted() -> Catalog:
    """Every message of the code and the templates, with where it is used (files, no line numbers)."""
    template = Catalog(domain=DOMAIN, project="searchcrawl", charset="utf-8")
    for filename, _lineno, message, comments, context in extract_from_dir(
        str(PACKAGE), METHODS, OPTIONS, strip_comment_tags=True
    ):
        if filename.startswith("dev/"):
            continue  # the development tools' own text is not the interface's
        where = [(f"searchcrawl/{filename}", None)]  # no line number: Babel writes none
        template.add(message, None, where, auto_comments=comments, context=context)  # type: ignore[arg-type]
    return template


def read(code: str) -> Catalog:
    path = LOCALES / catalogue_path(code)
    if not path.exists():
        return Catalog(
            locale=code,
            domain=DOMAIN,
            project="searchcrawl",
            version="",
            copyright_holder="the searchcrawl authors",
            msgid_bugs_address="",
            language_team=f"{LANGUAGES[code]} <{code}>",
            last_translator="the searchcrawl authors",
            charset="utf-8",
            fuzzy=False,
        )
    with path.open("rb") as source:
        return read_po(source, locale=code, domain=DOMAIN)


def rendered(catalogue: Catalog) -> bytes:
    output = io.BytesIO()
    write_po(output, catalogue, width=100, include_lineno=False, omit_header=False, ignore_obsolete=True)
    return output.getvalue()


def updated(code: str, template: Catalog) -> Catalog:
    """The catalogue of ``code`` brought up to date with ``template``: no guessed (fuzzy) translations."""
    catalogue = read(code)
    created = catalogue.creation_date  # the header stays as it was: a run that adds nothing changes nothing
    catalogue.update(template, no_fuzzy_matching=True, update_header_comment=False)
    catalogue.creation_date = created
    catalogue.obsolete.clear()
    return catalogue


def missing(catalogue: Catalog) -> list[str]:
    """The messages of ``catalogue`` without a translation (or with a fuzzy one) or whose
    translation Babel's checks refuse (its placeholders differ from the message's)."""
    found = []
    for message in catalogue:
        if not message.id:
            continue
        strings = message.string if isinstance(message.string, (list, tuple)) else [message.string]
        if message.fuzzy or not all(strings):
            found.append(f"{message.id!r}: not translated")
            continue
        errors = message.check(catalogue)
        if errors:
            found.append(f"{message.id!r}: {'; '.join(str(error) for error in errors)}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a catalogue is out of date")
    arguments = parser.parse_args(argv)
    template = extracted()
    failed = False
    for code in LANGUAGES:
        if code == ENGLISH:
            continue
        path = LOCALES / catalogue_path(code)
        catalogue = updated(code, template)
        text = rendered(catalogue)
        if arguments.check:
            if not path.exists() or path.read_bytes() != text:
                print(f"{path}: out of date (run python -m searchcrawl.dev.message_catalogues)")
                failed = True
            for problem in missing(catalogue):
                print(f"{path}: {problem}")
                failed = True
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text)
            print(f"{path}: {len(catalogue)} messages, {len(missing(catalogue))} to translate")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
