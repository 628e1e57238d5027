"""The GROUPLIST_PGM that docs/non-web-sources.md documents (git sources, "A GROUPLIST_PGM that
searches LDAP"), as the tests run it: the documented script itself, its server and bases swapped
for the tests' (unit: a stub ldapsearch; e2e: the tests' slapd), so the two never drift apart."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs" / "non-web-sources.md"
DOCUMENTED_SEARCH = "ldapsearch -x -LLL -o ldif-wrap=no -H ldap://ldap.example.org"
DOCUMENTED_BASES = {"ou=people,dc=example,dc=org": "user_base", "ou=groups,dc=example,dc=org": "group_base"}


def documented_grouplist(search: str, user_base: str, group_base: str) -> str:
    """The documented script, ``search`` (an ldapsearch command and its options) for its server,
    ``user_base`` and ``group_base`` for its bases."""
    text = DOCS.read_text(encoding="utf-8")
    block = re.search(r"\*\*A GROUPLIST_PGM that searches LDAP\*\*.*?^```sh\n(.*?)^```", text, re.M | re.S)
    assert block is not None, "the git section's GROUPLIST_PGM example is gone"
    script = block.group(1)
    assert DOCUMENTED_SEARCH in script and all(base in script for base in DOCUMENTED_BASES), script
    bases = {"user_base": user_base, "group_base": group_base}
    for documented, name in DOCUMENTED_BASES.items():
        script = script.replace(documented, bases[name])
    return script.replace(DOCUMENTED_SEARCH, search)
